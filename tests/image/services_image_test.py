#!/usr/bin/python3
"""The services and CPU worker images, built and run as an operator and a researcher would.

  services_image_test.py SOURCE_DIR BUILD_DIR

1. A Debian 12 base made locally (mmdebstrap; no registry is reachable),
   imported into podman, cached in BUILD_DIR/image/base.tar.
2. docker/Dockerfile.services and docker/Dockerfile.worker-cpu built with
   CRL_INSTALL=prebuilt from the installation trees of the build under test
   (docker/install-tree.sh): the same runtime stages, packages and users as
   the compiled images.
3. `crl up --image --worker_image`: all six services in containers from
   those images (the chart's config files; the worker privileged, for its
   sandbox). The sampler answers from a fixed OpenAI-compatible endpoint
   served here (the embedded policy writes nothing that compiles before its
   SFT), so each candidate goes the whole way: prompt and parse, the
   worker's sandboxed compile and verification, crl-timing's measurement,
   the reward.
4. A run submitted from a folder that holds only its spec and task files
   (relative paths, files sent inline), watched, exported into that folder,
   and its export checked; `crl down` leaves no container behind.

Needs podman, runc and mmdebstrap (scripts/setup.sh installs them) and
Debian's archive (the image's packages). podman here runs with runc and
explicit rlimits (the default crun fails on this kind of machine's cgroups).
"""
import http.server
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import threading
import time

SRC, BUILD = (os.path.abspath(p) for p in sys.argv[1:3])
CRL = os.path.join(BUILD, "bin", "crl")
BASE = "localhost/crl-base:bookworm"
IMAGE = "localhost/crl/services:test"
WORKER_IMAGE = "localhost/crl/worker-cpu:test"
# Limits no higher than this process's own: runc may only lower them here
# (podman's defaults would raise them and fail).
def _limit(name, which, want):
    hard = resource.getrlimit(which)[1]
    value = want if hard == resource.RLIM_INFINITY else min(want, hard)
    return f"--ulimit={name}={value}:{value}"


RUN_ARGS = ["--runtime=runc", _limit("nofile", resource.RLIMIT_NOFILE, 4096),
            _limit("nproc", resource.RLIMIT_NPROC, 4096)]


def log(*args):
    print(*args, flush=True)


def run(cmd, **kw):
    log("+", " ".join(cmd))
    r = subprocess.run(cmd, text=True, capture_output=True, **kw)
    if r.returncode != 0:
        log(r.stdout[-6000:], r.stderr[-6000:])
        raise SystemExit(f"FAILED ({r.returncode}): {' '.join(cmd)}")
    return r.stdout


def require_tools():
    missing = [t for t in ("podman", "runc", "mmdebstrap") if shutil.which(t) is None]
    if missing:
        raise SystemExit(f"FAILED: {', '.join(missing)} not installed (scripts/setup.sh installs them)")


def base_image():
    if subprocess.run(["podman", "image", "exists", BASE]).returncode == 0:
        return
    tar = os.path.join(BUILD, "image", "base.tar")
    if not os.path.exists(tar):
        os.makedirs(os.path.dirname(tar), exist_ok=True)
        started = time.time()
        run(["mmdebstrap", "--variant=minbase", "--format=tar", "bookworm", tar + ".part"])
        os.rename(tar + ".part", tar)
        log(f"base made in {time.time() - started:.0f} s")
    run(["podman", "import", tar, BASE])


def build(work, role, dockerfile, tag):
    context = os.path.join(work, role)
    started = time.time()
    run([os.path.join(SRC, "docker", "install-tree.sh"), role, SRC, BUILD,
         os.path.join(context, ".crl-install"), os.path.join(work, role + "-debug")])
    log(f"{role} installation tree in {time.time() - started:.0f} s")
    started = time.time()
    run(["podman", "build", "--runtime", "runc", "--network", "host",
         "-f", os.path.join(SRC, "docker", dockerfile),
         "--build-arg", "CRL_INSTALL=prebuilt",
         "--build-arg", f"DEBIAN_BUILD_IMAGE={BASE}", "--build-arg", f"DEBIAN_RUNTIME_IMAGE={BASE}",
         "-t", tag, context])
    log(f"{role} image built in {time.time() - started:.0f} s")


def build_images(work):
    build(work, "services", "Dockerfile.services", IMAGE)
    # What the chart relies on: non-root, binaries on PATH, shipped files beside them.
    user = run(["podman", "image", "inspect", "--format", "{{.Config.User}}", IMAGE]).strip()
    assert user == "10001:10001", user
    out = run(["podman", "run", "--rm", *RUN_ARGS, IMAGE, "sh", "-c",
               "id -u && ls /opt/crl/bin && ls /opt/crl/prompts /opt/crl/tasks/native/row_sum"])
    for want in ("10001", "crl-orchestrator", "crl-timing", "crl-sampler", "crl-trainer", "crl-prompt",
                 "crl-policy", "native.tmpl", "task.yaml"):
        assert want in out, (want, out)
    assert "crl-worker" not in out, out
    build(work, "worker", "Dockerfile.worker-cpu", WORKER_IMAGE)
    out = run(["podman", "run", "--rm", *RUN_ARGS, "--entrypoint", "sh", WORKER_IMAGE, "-c",
               "id -u && ls /opt/crl/bin /opt/crl/include/crl /opt/crl/runner/python && g++ --version"
               " && python3 -c 'import torch; print(torch.__version__)'"])
    for want in ("0\n", "crl-worker", "crl-runner", "crl-worker-entrypoint", "kernel.h", "crl_kb_harness.py", "g++"):
        assert want in out, (want, out)


class FixedEndpoint(http.server.ThreadingHTTPServer):
    """An OpenAI-compatible chat endpoint whose every completion is `answer`."""

    def __init__(self, answer):
        self.answer = answer
        self.requests = 0
        super().__init__(("127.0.0.1", 0), FixedHandler)


class FixedHandler(http.server.BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def reply(self, body):
        data = json.dumps(body).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):
        self.reply({"object": "list", "data": [{"id": "fixed", "object": "model"}]})

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", "0"))))
        self.server.requests += 1
        n = body.get("n", 1)
        self.reply({
            "id": "fixed", "object": "chat.completion", "model": "fixed",
            "choices": [{"index": i, "finish_reason": "stop",
                         "message": {"role": "assistant", "content": self.server.answer}} for i in range(n)],
            "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
        })


def main():
    require_tools()
    work = tempfile.mkdtemp(prefix="crl-image-")
    cluster = os.path.join(work, "cluster")
    endpoint = None
    try:
        base_image()
        build_images(work)

        with open(os.path.join(SRC, "tasks", "native", "row_sum", "candidates", "fast_correct.cc")) as f:
            code = f.read()
        endpoint = FixedEndpoint("### Performance analysis\nOne pass.\n\n### Algorithm design\nUnrolled sums.\n\n"
                                 f"### Code\n```cpp\n{code}```\n")
        threading.Thread(target=endpoint.serve_forever, daemon=True).start()
        url = f"http://127.0.0.1:{endpoint.server_address[1]}/v1"

        started = time.time()
        run([CRL, "up", "--data_dir", cluster, "--image", IMAGE, "--worker_image", WORKER_IMAGE,
             "--container_args", ",".join(RUN_ARGS), "--worker_container_args=--privileged",
             "--set", f"sampler.policy=,sampler.serve_openai=false,sampler.endpoints={url},"
                      "sampler.endpoint_model=fixed"])
        log(f"cluster up in {time.time() - started:.0f} s")
        names = run(["podman", "ps", "--format", "{{.Names}}"]).split()
        for service in ("orchestrator", "prompt", "sampler", "trainer", "timing", "worker"):
            assert any(n.startswith(f"crl-{service}-") for n in names), (service, names)

        # The researcher's folder: a spec and its task, nothing else.
        folder = os.path.join(work, "researcher")
        os.makedirs(folder)
        shutil.copytree(os.path.join(SRC, "tasks", "native", "row_sum"), os.path.join(folder, "row_sum"))
        with open(os.path.join(folder, "spec.yaml"), "w") as f:
            f.write("name: from-outside\ntasks: [row_sum]\nbackend: host\n"
                    "stages: [{kind: sample-only, rounds: 1}]\ngroup_size: 2\n"
                    "sampling: {temperature: 1.0, max_tokens: 64}\nreward: cuda-l1\n"
                    "budget: {seconds: 600, candidates: 10}\ntiming_budget_seconds: 1\nseed: 1\n")
        out = run([CRL, "run", "submit", "spec.yaml", "--cluster", cluster, "--watch"], cwd=folder)
        log(out[-3000:])
        run_id = out.split()[0]
        assert "succeeded" in out, out
        run([CRL, "run", "export", run_id, "--cluster", cluster, "--format", "jsonl", "--out", "export"], cwd=folder)
        rows = []
        for root, _, files in os.walk(os.path.join(folder, "export")):
            for name in files:
                if name.endswith(".jsonl"):
                    with open(os.path.join(root, name)) as f:
                        rows += [json.loads(line) for line in f if line.strip()]
        log(json.dumps([{k: r.get(k) for k in ("key", "verdict", "speedup", "reward")} for r in rows], indent=1))
        assert endpoint.requests >= 1
        assert len(rows) == 2, len(rows)
        for row in rows:
            # Verified by the worker in its container, measured by crl-timing in its own, rewarded.
            assert row["verdict"] == "VERDICT_OK", row
            assert row["reward"]["status"] == "REWARD_STATUS_OK", row["reward"]
            assert row["speedup_ci_low"] <= row["speedup"] <= row["speedup_ci_high"], row
            assert row["speedup"] > 0, row
            assert row["candidate"]["source"] == code, row["candidate"]
            assert row["stage"] == "sample-only", row
    finally:
        if os.path.exists(os.path.join(cluster, "cluster.json")):
            subprocess.run([CRL, "down", "--data_dir", cluster])
        left = subprocess.run(["podman", "ps", "-a", "--format", "{{.Names}}"], text=True,
                              capture_output=True).stdout.split()
        if endpoint:
            endpoint.shutdown()
        subprocess.run(["podman", "image", "prune", "-f"], capture_output=True)  # the prebuilt stages' layers
        shutil.rmtree(work, ignore_errors=True)
    stray = [n for n in left if n.startswith("crl-")]
    assert not stray, f"containers left after crl down: {stray}"
    log("PASSED")


if __name__ == "__main__":
    main()

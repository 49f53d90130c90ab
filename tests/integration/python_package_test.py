"""crl-client as a researcher installs it: the shipped stubs match protoc's,
the client type-checks strictly, `pip install clients/python` works offline
into a fresh venv (Debian's grpcio and protobuf through
--system-site-packages), and the installed package, run from outside the
source tree with no crl binary on the PATH, talks to a real crl-orchestrator
over TLS with a bearer token: it lists runs, is refused with a wrong token or
without TLS, and has a spec from a researcher's folder parsed by the
orchestrator (ParseRunSpec), its tasks inline.

    python3 python_package_test.py SOURCE_DIR BUILD_DIR

Prints what it checked; exits non-zero on the first failure.
"""
import filecmp
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time

SOURCE, BUILD = (os.path.abspath(a) for a in sys.argv[1:3])
PKG = os.path.join(SOURCE, "clients", "python")


def run(cmd, **kwargs):
    out = subprocess.run(cmd, capture_output=True, text=True, **kwargs)
    if out.returncode != 0:
        sys.exit(f"FAIL: {' '.join(cmd)} exited {out.returncode}\n{out.stdout}\n{out.stderr}")
    return out.stdout


def check_stubs():
    built = os.path.join(BUILD, "python", "crl", "v1")
    shipped = os.path.join(PKG, "crl", "v1")
    names = sorted(n for n in os.listdir(built) if "_pb2" in n)
    have = sorted(n for n in os.listdir(shipped) if "_pb2" in n)
    if names != have:
        sys.exit(f"FAIL: stub files differ: built {names}, shipped {have}: run clients/python/update_stubs.sh")
    _, mismatch, errors = filecmp.cmpfiles(built, shipped, names, shallow=False)
    if mismatch or errors:
        sys.exit(f"FAIL: shipped stubs are stale: {mismatch + errors}: run clients/python/update_stubs.sh")
    print(f"OK: the {len(names)} shipped stub files are protoc's")


def check_types():
    if shutil.which("mypy") is None:
        sys.exit("FAIL: mypy is missing (apt-get install mypy; scripts/setup.sh installs it)")
    out = run(["mypy"], cwd=PKG)
    print(f"OK: mypy --strict: {out.strip().splitlines()[-1]}")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def install(tmp):
    src = os.path.join(tmp, "src")
    shutil.copytree(PKG, src, ignore=shutil.ignore_patterns("__pycache__", "*.egg-info", "build", ".mypy_cache"))
    venv = os.path.join(tmp, "venv")
    run([sys.executable, "-m", "venv", "--system-site-packages", venv])
    run([os.path.join(venv, "bin", "pip"), "install", "--quiet", "--no-index", "--no-build-isolation", src])
    print("OK: pip install --no-index --no-build-isolation clients/python into a fresh venv")
    return os.path.join(venv, "bin", "python")


CLIENT_CHECK = r'''
import os, sys
import grpc
import crl_client
from crl_client import CrlClient, CrlError
venv = sys.argv[1]
assert crl_client.__file__.startswith(venv), crl_client.__file__
assert os.path.exists(os.path.join(os.path.dirname(crl_client.__file__), "py.typed"))
assert not any(p.startswith(sys.argv[2]) for p in sys.path if p), sys.path

with CrlClient.from_environment() as c:
    assert c.list() == [], "a fresh orchestrator has no runs"
print("OK: installed client over TLS with the token from the environment: ListRuns")

for name, kwargs in (("wrong token", {"token": "nope"}), ):
    try:
        CrlClient.from_environment(retry_seconds=0, **kwargs).list()
        raise AssertionError(name + ": accepted")
    except CrlError as e:
        assert e.code == grpc.StatusCode.UNAUTHENTICATED, (name, e)
try:
    CrlClient(os.environ["CRL_ORCHESTRATOR"], token_file=os.environ["CRL_TOKEN_FILE"], timeout=5,
              retry_seconds=0).list()
    raise AssertionError("plaintext to a TLS server: accepted")
except CrlError as e:
    assert e.code == grpc.StatusCode.UNAVAILABLE, e
print("OK: refused with a wrong token (UNAUTHENTICATED) and without TLS (UNAVAILABLE)")

c = CrlClient.from_environment()
spec = c.load_spec(sys.argv[3])
assert [t.name for t in spec.tasks] == ["row_sum", "01_Tiny"], spec.tasks
assert all(t.files and not t.path for t in spec.tasks), spec.tasks
assert {f.path for f in spec.tasks[0].files} == {"task.yaml", "reference.cc", "reference.cu"}, \
    [f.path for f in spec.tasks[0].files]
assert spec.sft_examples and spec.sft_examples[0].origin.startswith("../tasks/row_sum/candidates/"), spec.sft_examples
try:
    c.load_spec(sys.argv[4])
    raise AssertionError("a spec naming a missing task: parsed")
except CrlError as e:
    assert e.code == grpc.StatusCode.INVALID_ARGUMENT and "../tasks/nowhere" in e.details, e
    missing = e.details
print(f"OK: load_spec without a crl binary: {len(spec.tasks)} tasks inline, "
      f"{len(spec.sft_examples)} shipped examples; a missing task named: {missing}")
'''


def researcher_folder(tmp):
    """study/spec.yaml naming ../tasks/row_sum (a copy) and kb/01_Tiny.py."""
    root = os.path.join(tmp, "researcher")
    shutil.copytree(os.path.join(SOURCE, "tasks", "native", "row_sum"), os.path.join(root, "tasks", "row_sum"))
    os.makedirs(os.path.join(root, "study", "kb"))
    with open(os.path.join(root, "study", "kb", "01_Tiny.py"), "w") as f:
        f.write("import torch\n\nclass Model(torch.nn.Module):\n    def forward(self, x):\n        return x + 1\n")
    spec = os.path.join(root, "study", "spec.yaml")
    with open(spec, "w") as f:
        f.write("name: study\ntasks: [../tasks/row_sum, kb/01_Tiny.py]\nsft_examples: shipped\n"
                "stages: [{kind: sft}]\n")
    bad = os.path.join(root, "study", "bad.yaml")
    with open(bad, "w") as f:
        f.write("tasks: [../tasks/nowhere]\n")
    return spec, bad


def main():
    check_stubs()
    check_types()
    with tempfile.TemporaryDirectory(prefix="crl-pypkg-") as tmp:
        python = install(tmp)
        cert, key, token = (os.path.join(tmp, n) for n in ("cert.pem", "key.pem", "token"))
        run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=localhost",
             "-addext", "subjectAltName=IP:127.0.0.1,DNS:localhost", "-keyout", key, "-out", cert])
        with open(token, "w") as f:
            f.write("s3cret\n")
        port = free_port()
        nowhere = "127.0.0.1:%d" % free_port()  # the other services: never called here
        orchestrator = subprocess.Popen(
            [os.path.join(BUILD, "bin", "crl-orchestrator"), f"--listen=127.0.0.1:{port}",
             "--metrics_listen=127.0.0.1:0", f"--tls_cert_file={cert}", f"--tls_key_file={key}",
             f"--auth_token_file={token}", f"--data_dir={os.path.join(tmp, 'data')}", f"--workers={nowhere}",
             f"--prompt={nowhere}", f"--sampler={nowhere}", f"--timing={nowhere}", f"--trainer={nowhere}"],
            stdout=subprocess.DEVNULL, stderr=open(os.path.join(tmp, "orchestrator.log"), "w"))
        try:
            deadline = time.monotonic() + 60
            while True:
                try:
                    socket.create_connection(("127.0.0.1", port), timeout=1).close()
                    break
                except OSError:
                    if orchestrator.poll() is not None or time.monotonic() > deadline:
                        sys.exit("FAIL: crl-orchestrator did not start:\n" +
                                 open(os.path.join(tmp, "orchestrator.log")).read())
                    time.sleep(0.2)
            spec, bad = researcher_folder(tmp)
            env = {"PATH": "/usr/bin:/bin", "HOME": tmp, "CRL_ORCHESTRATOR": f"localhost:{port}",
                   "CRL_TOKEN_FILE": token, "CRL_TLS": "1", "CRL_TLS_CA_FILE": cert}
            print(run([python, "-c", CLIENT_CHECK, os.path.dirname(os.path.dirname(python)), SOURCE, spec, bad],
                      cwd="/", env=env).strip())
        finally:
            orchestrator.terminate()
            orchestrator.wait(timeout=30)


if __name__ == "__main__":
    main()

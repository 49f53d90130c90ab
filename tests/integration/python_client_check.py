"""The Python client (clients/python/crl_client) against a running local
cluster (run by quickstart_test.cc after `crl quickstart --quick --keep_up`):
every run's watch stream reports each candidate once; a spec file and a dict
submit, the same key returns the same run, a small run goes to its end, and
exports land. Then the reward adapters for other RL engines on the same
cluster's real worker: veRL's compute_score, a TRL reward function and
OpenRLHF's endpoint (`crl reward serve`), each with a fast correct answer, a
wrong one, prose, and a task no worker can run (no reward, never a number).
Prints what it checked; exits non-zero on the first failure.

    PYTHONPATH=clients/python python3 python_client_check.py CLUSTER_DIR SPEC.yaml
"""
import json
import os
import subprocess
import sys
import tempfile
import urllib.error
import urllib.request

from crl_client import CrlClient, CrlError, pb
from crl_client import rewards as crl_rewards

HERE = os.path.dirname(os.path.abspath(__file__))
ROW_SUM = os.path.join(HERE, "..", "..", "tasks", "native", "row_sum", "candidates")


def answer(candidate):
    code = open(os.path.join(ROW_SUM, candidate)).read()
    return ("### Performance analysis\nOne pass per row.\n\n### Algorithm design\nAccumulate in registers.\n\n"
            "### Code\n```cpp\n" + code + "\n```\n")


def check_rewards(cluster_dir, spec_path):
    fast, wrong, prose = answer("fast_correct.cc"), answer("wrong_drop_tail.cc"), "I would unroll it."
    # veRL: module-level compute_score, configured by the environment.
    os.environ["CRL_CLUSTER"] = cluster_dir
    os.environ["CRL_REWARD_SPEC"] = spec_path
    good = crl_rewards.compute_score("crl", fast, "row_sum")
    assert good["verdict"] == "VERDICT_OK" and good["verified"], good
    assert isinstance(good["score"], float) and good["reward_status"] in ("REWARD_STATUS_OK", "REWARD_STATUS_WITHHELD")
    if good["reward_status"] == "REWARD_STATUS_OK":
        # The cuda-l1 preset: speedup - 1, clipped to [-3, 3] (lib/reward/rewards.h);
        # a NOISY measurement at its interval's end nearest 1: pulled toward 0.
        plain = max(-3.0, min(3.0, good["speedup"] - 1))
        if "FLAG_NOISY" in good["flags"]:
            assert abs(good["score"]) <= abs(plain) + 1e-9 and good["score"] * plain >= 0, good
        else:
            assert abs(good["score"] - plain) < 1e-9, good
    else:
        assert good["score"] == 0.0 and good["flags"], good
    bad = crl_rewards.compute_score("crl", wrong, "row_sum")
    assert bad["verdict"] == "VERDICT_WRONG_ANSWER" and bad["score"] == -1.0, bad
    print(f"veRL compute_score: fast {good['score']:+.3f} ({good['verdict']}, {good['speedup']:.2f}x, "
          f"{good['reward_status']} {good['flags']}), wrong {bad['score']:+.3f}")

    # TRL: conversational completions, the task from a dataset column; a
    # task no worker can run is None (no reward), not a number.
    trl = crl_rewards.TrlReward(spec_path, cluster=cluster_dir)
    conv = [[{"role": "assistant", "content": fast}], [{"role": "assistant", "content": prose}]]
    got = trl(["p1", "p2"], conv, task=["row_sum", "row_sum"])
    assert len(got) == 2 and isinstance(got[0], float) and got[1] == -1.0, got
    spec = CrlClient.for_local_cluster(cluster_dir).load_spec(spec_path)
    ghost = spec.tasks.add()
    ghost.CopyFrom(spec.tasks[0])
    ghost.ClearField("files")  # the spec's tasks came inline; this one is a path nobody can read
    ghost.name, ghost.path = "ghost", "/nonexistent/crl-task"
    broken = crl_rewards.TrlReward(spec, cluster=cluster_dir)
    got2 = broken(["p"], [fast], task=["ghost"])
    assert got2 == [None], got2
    print(f"TRL reward function: {got[0]:+.3f}, prose {got[1]:+.3f}, unrunnable task {got2[0]}")

    # OpenRLHF: crl reward serve, POST /get_reward.
    crl = os.environ.get("CRL_BIN", "crl")
    server = subprocess.Popen([crl, "reward", "serve", "--cluster", cluster_dir, "--spec", spec_path,
                               "--listen", "127.0.0.1:0"], stdout=subprocess.PIPE, text=True)
    try:
        line = server.stdout.readline()
        assert "listening http=" in line, line
        url = "http://" + line.split("http=")[1].split()[0] + "/get_reward"

        def post(body):
            req = urllib.request.Request(url, data=json.dumps(body).encode(),
                                         headers={"Content-Type": "application/json"})
            try:
                with urllib.request.urlopen(req, timeout=600) as r:
                    return r.status, json.loads(r.read())
            except urllib.error.HTTPError as e:
                return e.code, json.loads(e.read())

        prompt = "Make row_sum faster.\n"
        status, out = post({"query": [prompt + fast, prompt + wrong], "prompts": [prompt, prompt],
                            "labels": ["row_sum", "row_sum"]})
        assert status == 200, (status, out)
        assert len(out["rewards"]) == 2 and out["rewards"][1] == -1.0, out
        assert out["details"][0]["verdict"] == "VERDICT_OK", out
        assert out["extra_logs"]["verified"] == [1.0, 0.0], out
        served = out["rewards"]
        status, out = post({"query": ["x"], "labels": ["matmul"]})
        assert status == 400 and "labels[0]" in out["error"], (status, out)
        print(f"OpenRLHF /get_reward: rewards {served} (fast, wrong), a bad label 400")
    finally:
        server.terminate()
        server.wait(timeout=30)


def main(cluster_dir, spec_path):
    c = CrlClient.for_local_cluster(cluster_dir)
    runs = c.list()
    assert len(runs) >= 3, f"expected the quickstart's runs, got {len(runs)}"
    for r in runs:
        keys = [e.variant.key for e in c.watch(r.run_id) if e.kind == "variant"]
        assert len(keys) == len(set(keys)) == r.candidates, (r.run_id, len(keys), r.candidates)
    print(f"watch: {len(runs)} runs, each candidate reported once")

    # A spec file, parsed by the orchestrator from the files the client
    # sends (no crl binary here), and the same key twice.
    spec = c.load_spec(spec_path)
    assert spec.tasks and spec.tasks[0].name, spec
    # Relative paths resolve against the spec file, and the files travel inline.
    assert all(t.files and not t.path for t in spec.tasks), [(t.name, t.path) for t in spec.tasks]
    spec.ClearField("stages")
    spec.training = "none"
    spec.rounds = 1
    spec.group_size = 2
    del spec.tasks[1:]
    spec.max_tokens = 64
    first = c.submit(spec, key="python-client-check")
    again = c.submit(spec, key="python-client-check")
    assert first.run_id == again.run_id, (first.run_id, again.run_id)
    try:
        c.submit({"tasks": []}, key="python-client-empty")
        raise AssertionError("an empty spec was accepted")
    except CrlError as e:
        assert e.code.name == "INVALID_ARGUMENT", e
    end = c.wait(first.run_id)
    assert end.state == pb.RUN_STATE_SUCCEEDED, end
    assert end.candidates == 2, end
    print(f"submit: run {end.run_id} {pb.RunState.Name(end.state)}, {end.candidates} candidates")
    # RejudgeRun over gRPC: a run whose spec asked for no judge is refused, typed.
    try:
        c.rejudge(end.run_id)
        raise AssertionError("a run without a judge was re-judged")
    except CrlError as e:
        assert e.code.name == "FAILED_PRECONDITION" and "asks for no judge" in e.details, e
    print("rejudge: a run without a judge is refused (FAILED_PRECONDITION)")

    with tempfile.TemporaryDirectory() as out:
        # Written here from the files the orchestrator sends back...
        written = c.export(end.run_id, "jsonl", out + "/here")
        assert sorted(written) == [os.path.join(out, "here", n) for n in ("training.jsonl", "variants.jsonl")], written
        lines = open(os.path.join(out, "here", "variants.jsonl")).read().splitlines()
        assert len(lines) == 2 and all(json.loads(l)["scored"] for l in lines), lines
        # ... or by the orchestrator on its own disk.
        on_server = c.export(end.run_id, "jsonl", out + "/server", on_server=True)
        assert on_server.files_written == 2 and not on_server.files, on_server
        assert open(os.path.join(out, "server", "variants.jsonl")).read().splitlines() == lines
    print("export: variants.jsonl and training.jsonl, here and on the orchestrator")

    check_rewards(cluster_dir, spec_path)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])

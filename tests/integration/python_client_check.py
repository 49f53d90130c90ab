"""The Python client (clients/python/crl_client) against a running local
cluster (run by quickstart_test.cc after `crl quickstart --quick --keep_up`):
every run's watch stream reports each candidate once; a spec file and a dict
submit, the same key returns the same run, a small run goes to its end, and
exports land. Prints what it checked; exits non-zero on the first failure.

    PYTHONPATH=build/python:clients/python python3 python_client_check.py CLUSTER_DIR SPEC.yaml
"""
import json
import os
import sys
import tempfile

from crl_client import CrlClient, CrlError, pb


def main(cluster_dir, spec_path):
    c = CrlClient.for_local_cluster(cluster_dir)
    runs = c.list()
    assert len(runs) >= 3, f"expected the quickstart's runs, got {len(runs)}"
    for r in runs:
        keys = [e.variant.key for e in c.watch(r.run_id) if e.kind == "variant"]
        assert len(keys) == len(set(keys)) == r.candidates, (r.run_id, len(keys), r.candidates)
    print(f"watch: {len(runs)} runs, each candidate reported once")

    # A spec file, as `crl run submit` reads it, and the same key twice.
    spec = CrlClient.load_spec(spec_path)
    assert spec.tasks and spec.tasks[0].name, spec
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

    with tempfile.TemporaryDirectory() as out:
        written = c.export(end.run_id, "jsonl", out)
        lines = open(os.path.join(out, "variants.jsonl")).read().splitlines()
        assert written.files_written == 1 and len(lines) == 2, (written, len(lines))
        assert all(json.loads(l)["scored"] for l in lines)
    print("export: variants.jsonl")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])

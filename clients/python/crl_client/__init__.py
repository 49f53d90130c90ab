"""crl's Python client: submit runs to a crl-orchestrator, follow them, fetch
their results.

    from crl_client import CrlClient
    c = CrlClient.for_local_cluster("runs/cluster")          # or CrlClient("host:50050", token_file=...)
    run = c.submit("examples/quick-native.yaml", key="my-run")  # a spec file, a dict or a RunSpec
    for event in c.watch(run.run_id):                        # until the run ends; reconnects
        print(event.kind, event.message)
    print(c.get(run.run_id).best_speedup)
    c.export(run.run_id, "report", "/tmp/report")            # on the orchestrator's machine

The gRPC stubs are generated at build time from protos/crl/v1 (the build puts
them in build/python; add it and clients/python to PYTHONPATH), with
Debian's python3-grpcio and python3-protobuf. A spec file is resolved by the
crl CLI (`crl run spec FILE --json`), so relative task paths and `sft_examples:
shipped` mean what they mean to `crl run submit`.
"""

import json
import os
import shutil
import subprocess
import time

import grpc
from google.protobuf import json_format

from crl.v1 import orchestrator_pb2 as pb
from crl.v1 import orchestrator_pb2_grpc as pb_grpc

__all__ = ["CrlClient", "CrlError", "pb"]

_TRANSIENT = (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED)


class CrlError(Exception):
    """A call failed: `code` is the gRPC status code, `details` its message."""

    def __init__(self, code, details):
        super().__init__(f"{code.name}: {details}")
        self.code = code
        self.details = details


def _crl_binary():
    explicit = os.environ.get("CRL_BIN")
    if explicit:
        return explicit
    found = shutil.which("crl")
    if found:
        return found
    here = os.path.dirname(os.path.abspath(__file__))
    built = os.path.normpath(os.path.join(here, "..", "..", "..", "build", "bin", "crl"))
    return built if os.path.exists(built) else "crl"


class CrlClient:
    """One orchestrator. Calls carry the bearer token and a deadline."""

    def __init__(self, address, token=None, token_file=None, timeout=30.0, retry_seconds=120.0):
        if token is None and token_file:
            with open(token_file) as f:
                token = f.read().strip()
        self._metadata = [("authorization", f"Bearer {token}")] if token else []
        self._channel = grpc.insecure_channel(address)
        self._stub = pb_grpc.OrchestratorServiceStub(self._channel)
        self._timeout = timeout
        self._retry_seconds = retry_seconds

    @classmethod
    def for_local_cluster(cls, data_dir="runs/cluster", **kwargs):
        """The orchestrator of a cluster `crl up` started in `data_dir`."""
        with open(os.path.join(data_dir, "cluster.json")) as f:
            cluster = json.load(f)
        return cls(cluster["services"]["orchestrator"]["address"], token_file=cluster["token_file"], **kwargs)

    def close(self):
        self._channel.close()

    def _call(self, method, request):
        # Retried while the orchestrator is down or restarting (every call
        # here is idempotent; SubmitRun is, with a key).
        deadline = time.monotonic() + self._retry_seconds
        while True:
            try:
                return method(request, timeout=self._timeout, metadata=self._metadata)
            except grpc.RpcError as e:
                if e.code() in _TRANSIENT and time.monotonic() < deadline:
                    time.sleep(1.0)
                    continue
                raise CrlError(e.code(), e.details()) from None

    @staticmethod
    def load_spec(path):
        """A run spec file (YAML/JSON, as `crl run submit` reads it) as a RunSpec,
        its tasks' files inline as `crl run submit` sends them (relative task
        paths are relative to the spec file)."""
        out = subprocess.run([_crl_binary(), "run", "spec", path, "--json", "--inline_tasks"],
                             capture_output=True, text=True)
        if out.returncode != 0:
            raise ValueError(out.stderr.strip() or f"crl run spec {path} failed")
        return json_format.Parse(out.stdout, pb.RunSpec())

    def submit(self, spec, key=""):
        """Submits a run: `spec` is a RunSpec, a dict of its fields, or a spec
        file's path. The same `key` again returns the same run."""
        if isinstance(spec, str):
            spec = self.load_spec(spec)
        elif isinstance(spec, dict):
            spec = json_format.ParseDict(spec, pb.RunSpec())
        return self._call(self._stub.SubmitRun, pb.SubmitRunRequest(spec=spec, idempotency_key=key))

    def get(self, run_id):
        return self._call(self._stub.GetRun, pb.GetRunRequest(run_id=run_id))

    def list(self, state=None, page_size=100):
        """Every run (newest first), optionally in one state ("running", ...)."""
        req = pb.ListRunsRequest(page_size=page_size)
        if state:
            req.state = pb.RunState.Value("RUN_STATE_" + state.upper())
        runs = []
        while True:
            resp = self._call(self._stub.ListRuns, req)
            runs.extend(resp.runs)
            if not resp.next_page_token:
                return runs
            req.page_token = resp.next_page_token

    def watch(self, run_id, after=0):
        """The run's events after sequence `after`, until the run ends; a
        broken stream is resumed from the last event seen."""
        deadline = None
        while True:
            try:
                for event in self._stub.WatchRun(pb.WatchRunRequest(run_id=run_id, after_sequence=after),
                                                 metadata=self._metadata):
                    after = event.sequence
                    deadline = None
                    yield event
                return
            except grpc.RpcError as e:
                if e.code() not in _TRANSIENT:
                    raise CrlError(e.code(), e.details()) from None
                deadline = deadline or time.monotonic() + self._retry_seconds
                if time.monotonic() > deadline:
                    raise CrlError(e.code(), e.details()) from None
                time.sleep(1.0)

    def wait(self, run_id):
        """Follows the run to its end; returns the final Run."""
        for _ in self.watch(run_id):
            pass
        return self.get(run_id)

    def cancel(self, run_id):
        return self._call(self._stub.CancelRun, pb.CancelRunRequest(run_id=run_id))

    def best(self, run_id, limit=1):
        """The best verified, trusted variants per task."""
        return list(self._call(self._stub.GetBestVariants,
                               pb.GetBestVariantsRequest(run_id=run_id, limit=limit)).variants)

    def score(self, spec, items):
        """Scores completions outside any run (ScoreCompletions): `spec` a
        RunSpec (its tasks, backend, reward, timing budget), `items` (task
        name, completion text) pairs; one crl.v1.Variant per item, in order."""
        req = pb.ScoreCompletionsRequest(spec=spec)
        for task, completion in items:
            req.items.add(task_name=task, completion=completion)
        return list(self._call(self._stub.ScoreCompletions, req).results)

    def export(self, run_id, fmt, out_dir, baseline=None, on_server=False):
        """Writes the run as `fmt` ("jsonl", "kernelbench" or "report") into
        `out_dir` on this machine (the orchestrator sends the files), or with
        `on_server` on the orchestrator's machine. Returns the paths written
        (on_server: the orchestrator's response)."""
        req = pb.ExportRunRequest(run_id=run_id, format=fmt, baseline_run_id=baseline or "",
                                  out_dir=os.path.abspath(out_dir) if on_server else "")
        resp = self._call(self._stub.ExportRun, req)
        if on_server:
            return resp
        written = []
        root = os.path.abspath(out_dir)
        for f in resp.files:
            to = os.path.normpath(os.path.join(root, f.path))
            if os.path.isabs(f.path) or not to.startswith(root + os.sep):
                raise ValueError("export: the orchestrator sent a file named %r" % f.path)
            os.makedirs(os.path.dirname(to), exist_ok=True)
            with open(to, "wb") as out:
                out.write(f.content)
            written.append(to)
        return written

"""crl's Python client: submit runs to a crl-orchestrator, follow them, fetch
their results.

    from crl_client import CrlClient
    c = CrlClient.from_environment()                          # CRL_ORCHESTRATOR, CRL_TOKEN_FILE, CRL_TLS...
    # or CrlClient("crl.example.com:443", token_file="token", tls=True)
    # or CrlClient.for_local_cluster("runs/cluster")
    run = c.submit("my-study/spec.yaml", key="my-run")       # a spec file, a dict or a RunSpec
    for event in c.watch(run.run_id):                         # until the run ends; reconnects
        print(event.kind, event.message)
    print(c.get(run.run_id).best_speedup)
    c.export(run.run_id, "report", "my-study/report")        # written here, sent by the orchestrator

Install: `pip install clients/python` (it needs grpcio and protobuf: Debian's
python3-grpcio and python3-protobuf, in a venv made with
--system-site-packages; offline: add --no-index --no-build-isolation). The
gRPC stubs of protos/crl/v1 ship in the package (the `crl.v1` modules).

A spec file is parsed by the orchestrator (ParseRunSpec): the client sends
its text and the task files it names (relative paths are relative to the
spec file), so no crl binary is needed here and the tasks need not exist on
the orchestrator's machine.
"""

from __future__ import annotations

import json
import os
import time
from typing import Any, Dict, Iterator, List, Mapping, Optional, Sequence, Tuple, Union

import grpc
from google.protobuf import json_format

from crl.v1 import orchestrator_pb2 as pb
from crl.v1 import orchestrator_pb2_grpc as pb_grpc
from crl_client.spec_files import spec_files

__all__ = ["CrlClient", "CrlError", "pb", "__version__"]
__version__ = "0.1.0"

_TRANSIENT = (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED)

Spec = Union[str, Mapping[str, Any], pb.RunSpec]


class CrlError(Exception):
    """A call failed: `code` is the gRPC status code, `details` its message."""

    def __init__(self, code: grpc.StatusCode, details: str) -> None:
        super().__init__(f"{code.name}: {details}")
        self.code = code
        self.details = details


def _read(path: str) -> bytes:
    with open(path, "rb") as f:
        return f.read()


class CrlClient:
    """One orchestrator. Calls carry the bearer token and a deadline, and are
    retried while the orchestrator is unreachable (for `retry_seconds`)."""

    def __init__(self, address: str, token: Optional[str] = None, token_file: Optional[str] = None,
                 tls: bool = False, ca_file: Optional[str] = None, cert_file: Optional[str] = None,
                 key_file: Optional[str] = None, server_name: Optional[str] = None,
                 timeout: float = 30.0, retry_seconds: float = 120.0) -> None:
        """`tls`: a TLS channel, trusting `ca_file` (PEM) or the system's roots;
        `cert_file`/`key_file`: a client certificate for mutual TLS;
        `server_name`: the name the certificate must carry when it is not the
        address's host (an Ingress, a port-forward)."""
        if token is None and token_file:
            token = _read(token_file).decode().strip()
        self._metadata: List[Tuple[str, str]] = [("authorization", f"Bearer {token}")] if token else []
        if tls or ca_file or cert_file:
            if bool(cert_file) != bool(key_file):
                raise ValueError("mutual TLS needs both cert_file and key_file")
            creds = grpc.ssl_channel_credentials(
                root_certificates=_read(ca_file) if ca_file else None,
                private_key=_read(key_file) if key_file else None,
                certificate_chain=_read(cert_file) if cert_file else None)
            options = [("grpc.ssl_target_name_override", server_name)] if server_name else []
            self._channel = grpc.secure_channel(address, creds, options=options)
        else:
            self._channel = grpc.insecure_channel(address)
        self._stub = pb_grpc.OrchestratorServiceStub(self._channel)  # type: ignore[no-untyped-call]
        self._timeout = timeout
        self._retry_seconds = retry_seconds

    @classmethod
    def from_environment(cls, **kwargs: Any) -> "CrlClient":
        """The orchestrator the environment names, as the crl CLI reads it:
        CRL_ORCHESTRATOR (HOST:PORT), CRL_TOKEN_FILE (or CRL_AUTH_TOKEN_FILE),
        CRL_TLS (1 or true), CRL_TLS_CA_FILE, CRL_TLS_CERT_FILE and
        CRL_TLS_KEY_FILE (mutual TLS). Keyword arguments win."""
        env = os.environ
        address = env.get("CRL_ORCHESTRATOR")
        if not address:
            raise ValueError("CRL_ORCHESTRATOR is not set (HOST:PORT of a crl-orchestrator)")
        found: Dict[str, Any] = {
            "token_file": env.get("CRL_TOKEN_FILE") or env.get("CRL_AUTH_TOKEN_FILE") or None,
            "tls": env.get("CRL_TLS", "").lower() in ("1", "true"),
            "ca_file": env.get("CRL_TLS_CA_FILE") or None,
            "cert_file": env.get("CRL_TLS_CERT_FILE") or None,
            "key_file": env.get("CRL_TLS_KEY_FILE") or None,
        }
        found.update(kwargs)
        return cls(address, **found)

    @classmethod
    def for_local_cluster(cls, data_dir: str = "runs/cluster", **kwargs: Any) -> "CrlClient":
        """The orchestrator of a cluster `crl up` started in `data_dir`."""
        with open(os.path.join(data_dir, "cluster.json")) as f:
            cluster = json.load(f)
        return cls(cluster["services"]["orchestrator"]["address"], token_file=cluster["token_file"], **kwargs)

    def close(self) -> None:
        self._channel.close()

    def __enter__(self) -> "CrlClient":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _call(self, method: Any, request: Any) -> Any:
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

    def load_spec(self, path: str) -> pb.RunSpec:
        """A run spec file (YAML or JSON, as `crl run submit` reads it) as a
        RunSpec, its tasks' files inline. The orchestrator parses it; the
        client sends the files the spec names (spec_files)."""
        with open(path) as f:
            text = f.read()
        req = pb.ParseRunSpecRequest(text=text, file_name=os.path.basename(path))
        for rel, content in spec_files(path, text):
            req.files.add(path=rel, content=content)
        spec: pb.RunSpec = self._call(self._stub.ParseRunSpec, req)
        return spec

    def as_spec(self, spec: Spec) -> pb.RunSpec:
        """A RunSpec from a RunSpec, a dict of its fields, or a spec file's path."""
        if isinstance(spec, pb.RunSpec):
            return spec
        if isinstance(spec, str):
            return self.load_spec(spec)
        parsed = pb.RunSpec()
        json_format.ParseDict(dict(spec), parsed)
        return parsed

    def submit(self, spec: Spec, key: str = "") -> pb.Run:
        """Submits a run: `spec` is a RunSpec, a dict of its fields, or a spec
        file's path. The same `key` again returns the same run."""
        run: pb.Run = self._call(self._stub.SubmitRun, pb.SubmitRunRequest(spec=self.as_spec(spec), idempotency_key=key))
        return run

    def get(self, run_id: str) -> pb.Run:
        run: pb.Run = self._call(self._stub.GetRun, pb.GetRunRequest(run_id=run_id))
        return run

    def list(self, state: Optional[str] = None, page_size: int = 100) -> List[pb.Run]:
        """Every run (newest first), optionally in one state ("running", ...).

        Summaries: inline task files come without their contents (get() has them).
        """
        req = pb.ListRunsRequest(page_size=page_size)
        if state:
            req.state = pb.RunState.Value("RUN_STATE_" + state.upper())
        runs: List[pb.Run] = []
        while True:
            resp = self._call(self._stub.ListRuns, req)
            runs.extend(resp.runs)
            if not resp.next_page_token:
                return runs
            req.page_token = resp.next_page_token

    def watch(self, run_id: str, after: int = 0) -> Iterator[pb.RunEvent]:
        """The run's events after sequence `after`, until the run ends; a
        broken stream is resumed from the last event seen."""
        deadline: Optional[float] = None
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

    def wait(self, run_id: str) -> pb.Run:
        """Follows the run to its end; returns the final Run."""
        for _ in self.watch(run_id):
            pass
        return self.get(run_id)

    def cancel(self, run_id: str) -> pb.Run:
        run: pb.Run = self._call(self._stub.CancelRun, pb.CancelRunRequest(run_id=run_id))
        return run

    def rejudge(self, run_id: str) -> pb.RejudgeRunResponse:
        """An ended run's held rewards asked about again by the orchestrator's
        judge (docs/hacks.md): how many it decided now, how many stay held."""
        resp: pb.RejudgeRunResponse = self._call(self._stub.RejudgeRun, pb.RejudgeRunRequest(run_id=run_id))
        return resp

    def best(self, run_id: str, limit: int = 1) -> List[pb.Variant]:
        """The best verified, trusted variants per task."""
        resp = self._call(self._stub.GetBestVariants, pb.GetBestVariantsRequest(run_id=run_id, limit=limit))
        return list(resp.variants)

    def score(self, spec: pb.RunSpec, items: Sequence[Tuple[str, str]]) -> List[pb.Variant]:
        """Scores completions outside any run (ScoreCompletions): `spec` a
        RunSpec (its tasks, backend, reward, timing budget), `items` (task
        name, completion text) pairs; one crl.v1.Variant per item, in order."""
        req = pb.ScoreCompletionsRequest(spec=spec)
        for task, completion in items:
            req.items.add(task_name=task, completion=completion)
        return list(self._call(self._stub.ScoreCompletions, req).results)

    def export(self, run_id: str, fmt: str, out_dir: str, baseline: Optional[str] = None,
               on_server: bool = False) -> Union[List[str], pb.ExportRunResponse]:
        """Writes the run as `fmt` ("jsonl", "kernelbench" or "report") into
        `out_dir` on this machine (the orchestrator sends the files), or with
        `on_server` on the orchestrator's machine. Returns the paths written
        (on_server: the orchestrator's response)."""
        req = pb.ExportRunRequest(run_id=run_id, format=fmt, baseline_run_id=baseline or "",
                                  out_dir=os.path.abspath(out_dir) if on_server else "")
        resp: pb.ExportRunResponse = self._call(self._stub.ExportRun, req)
        if on_server:
            return resp
        written: List[str] = []
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

"""crl's hardened rewards for another RL engine's trainer.

Each completion is parsed, compiled, verified, timed and rewarded by a
crl-orchestrator exactly as a crl run scores its own candidates
(ScoreCompletions; nothing is stored). The reward is the spec's preset
(cuda-l1 by default: speedup - 1 clipped, -1 when wrong). A timing flag that
says the speedup may be gamed withholds the reward: 0.0 (neither reward nor
penalty) with ``reward_status`` "WITHHELD". An infrastructure failure (the
workers down after every retry) is never a number: ``None`` for TRL,
``CrlInfraError`` for veRL, HTTP 503 from ``crl reward serve`` (OpenRLHF).

The spec is a run spec (file path, dict or RunSpec): its tasks, backend,
reward preset and timing budget; a sample names its task by name.

veRL (custom reward function; the dataset's ``reward_model.ground_truth`` is
the task name)::

    CRL_CLUSTER=runs/cluster CRL_REWARD_SPEC=examples/embedded.yaml  (or CRL_ORCHESTRATOR=HOST:PORT
    [CRL_TOKEN_FILE=..., CRL_TLS=1, CRL_TLS_CA_FILE=...]), then in the veRL config:
      custom_reward_function.path=<this file>  custom_reward_function.name=compute_score
    or, one call per batch: reward_model.reward_manager=batch and
      custom_reward_function.name=compute_score_batch

TRL (GRPOTrainer(reward_funcs=[...]); the dataset has a "task" column)::

    from crl_client.rewards import TrlReward
    reward = TrlReward("examples/embedded.yaml", cluster="runs/cluster")

OpenRLHF: ``crl reward serve --spec SPEC --cluster DIR --listen 0.0.0.0:5000`` and
``--remote_rm_url http://HOST:5000/get_reward`` (labels: task names).
"""

from __future__ import annotations

import os
import threading
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple, Union

from crl.v1 import common_pb2, prompt_pb2, timing_pb2
from crl_client import CrlClient, Spec, pb

__all__ = ["CrlRewards", "CrlInfraError", "TrlReward", "compute_score", "compute_score_batch"]


class CrlInfraError(Exception):
    """The infrastructure failed for a sample: there is no reward for it
    (retry later; do not train on it as if it had scored 0)."""


Completion = Union[str, Sequence[Mapping[str, str]]]


def _text(completion: Completion) -> str:
    # TRL's conversational format: a list of messages; the answer is the
    # last one's content.
    if isinstance(completion, str):
        return completion
    return completion[-1]["content"] if completion else ""


class CrlRewards:
    """Scores (task, completion) pairs on one orchestrator."""

    def __init__(self, spec: Spec, address: Optional[str] = None, cluster: Optional[str] = None,
                 token_file: Optional[str] = None, timeout: float = 1800.0, **client_args: Any) -> None:
        """The orchestrator: a local cluster's folder (`cluster`), `address`
        (+ `token_file` and CrlClient's TLS arguments), or else the
        environment (CrlClient.from_environment)."""
        if cluster:
            self._client = CrlClient.for_local_cluster(cluster, timeout=timeout, **client_args)
        elif address:
            self._client = CrlClient(address, token_file=token_file, timeout=timeout, **client_args)
        else:
            self._client = CrlClient.from_environment(timeout=timeout, **client_args)
        self._spec = self._client.as_spec(spec)
        self.tasks = [t.name for t in self._spec.tasks]

    def score(self, items: Sequence[Tuple[str, Completion]]) -> List[pb.Variant]:
        """`items`: (task name, completion text) pairs. Returns one
        crl.v1.Variant per item, in order (verdict, speedup, reward, flags,
        evidence; infra_failure when there is no reward)."""
        return self._client.score(self._spec, [(task, _text(completion)) for task, completion in items])

    @staticmethod
    def reward_of(v: pb.Variant) -> Optional[float]:
        """The number a trainer gets: None for an infrastructure failure or a
        reward held for the judge, 0.0 for a withheld reward, else the
        preset's reward."""
        if v.infra_failure or v.reward.status in (timing_pb2.REWARD_STATUS_UNSPECIFIED, timing_pb2.REWARD_STATUS_INFRA_RETRY,
                                                  timing_pb2.REWARD_STATUS_HELD):
            return None
        if v.reward.status == timing_pb2.REWARD_STATUS_WITHHELD:
            return 0.0
        return float(v.reward.reward)

    @staticmethod
    def evidence(v: pb.Variant) -> Dict[str, Any]:
        """What a trainer may log beside the reward (scalars only)."""
        verdict = prompt_pb2.ParseError.Name(v.parse_error) if v.parse_error else common_pb2.Verdict.Name(v.verdict)
        return {
            "verdict": verdict,
            "verified": v.verdict == common_pb2.VERDICT_OK,
            "speedup": v.speedup if v.verdict == common_pb2.VERDICT_OK else 0.0,
            "reward_status": timing_pb2.RewardStatus.Name(v.reward.status),
            "flags": ",".join(common_pb2.Flag.Name(f) for f in v.flags),
        }


class TrlReward:
    """A TRL ``reward_funcs`` entry: ``(prompts, completions, **kwargs) ->
    list[float | None]``; each sample's task comes from the dataset column
    ``task_key`` (passed by TRL as a keyword argument)."""

    def __init__(self, spec: Spec, task_key: str = "task", **client_args: Any) -> None:
        self._rewards = CrlRewards(spec, **client_args)
        self._task_key = task_key
        self.__name__ = "crl_speedup"  # TRL logs reward functions by name

    def __call__(self, prompts: Sequence[Any], completions: Sequence[Completion],
                 **kwargs: Any) -> List[Optional[float]]:
        tasks = kwargs.get(self._task_key)
        if tasks is None or len(tasks) != len(completions):
            raise ValueError(f"{self._task_key}: one task name per completion (a dataset column), got {tasks!r}")
        return [CrlRewards.reward_of(v) for v in self._rewards.score(list(zip(tasks, completions)))]


_verl_rewards: Optional[CrlRewards] = None
_verl_lock = threading.Lock()


def _verl() -> CrlRewards:
    global _verl_rewards
    with _verl_lock:
        if _verl_rewards is None:
            spec = os.environ.get("CRL_REWARD_SPEC")
            if not spec:
                raise ValueError("CRL_REWARD_SPEC: the run spec file whose tasks the samples answer")
            _verl_rewards = CrlRewards(spec, cluster=os.environ.get("CRL_CLUSTER"))
        return _verl_rewards


def _verl_result(data_source: str, task: str, v: pb.Variant) -> Dict[str, Any]:
    reward = CrlRewards.reward_of(v)
    if reward is None:
        raise CrlInfraError(f"{data_source}/{task}: no reward (infrastructure): {v.infra_detail}")
    return {"score": reward, **CrlRewards.evidence(v)}


def compute_score(data_source: str, solution_str: str, ground_truth: str,
                  extra_info: Optional[Mapping[str, Any]] = None) -> Dict[str, Any]:
    """veRL's custom reward function (the naive reward manager: one sample a
    call). `ground_truth` (or extra_info["task"]) names the task; returns
    {"score": reward, ...evidence}. Configured by the environment:
    CRL_REWARD_SPEC, and CRL_CLUSTER or CrlClient.from_environment's
    variables (CRL_ORCHESTRATOR, CRL_TOKEN_FILE, CRL_TLS...)."""
    task = (extra_info or {}).get("task") or ground_truth
    (v,) = _verl().score([(task, solution_str)])
    return _verl_result(data_source, task, v)


def compute_score_batch(data_sources: Sequence[str], solution_strs: Sequence[str], ground_truths: Sequence[str],
                        extra_infos: Optional[Sequence[Optional[Mapping[str, Any]]]] = None,
                        **kwargs: Any) -> List[Dict[str, Any]]:
    """veRL's batch reward manager form (reward_model.reward_manager=batch):
    the whole batch in one ScoreCompletions call, scored in parallel by the
    cluster's workers; one {"score", ...evidence} per sample, in order."""
    infos = list(extra_infos) if extra_infos is not None else [None] * len(solution_strs)
    if not (len(data_sources) == len(solution_strs) == len(ground_truths) == len(infos)):
        raise ValueError("compute_score_batch: data_sources, solution_strs, ground_truths and extra_infos "
                         "must have one entry per sample")
    tasks = [(info or {}).get("task") or truth for truth, info in zip(ground_truths, infos)]
    variants = _verl().score(list(zip(tasks, solution_strs)))
    return [_verl_result(source, task, v) for source, task, v in zip(data_sources, tasks, variants)]

from crl.v1 import common_pb2 as _common_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from typing import ClassVar as _ClassVar, Iterable as _Iterable, Mapping as _Mapping, Optional as _Optional, Union as _Union

AGGREGATION_BUCKETED: Aggregation
AGGREGATION_MEDIAN: Aggregation
AGGREGATION_TRIMMED_MEAN: Aggregation
AGGREGATION_UNSPECIFIED: Aggregation
DESCRIPTOR: _descriptor.FileDescriptor
REWARD_PRESET_CUDA_L1: RewardPreset
REWARD_PRESET_SPEEDUP_BONUS: RewardPreset
REWARD_PRESET_TIERED: RewardPreset
REWARD_PRESET_UNSPECIFIED: RewardPreset
REWARD_STATUS_HELD: RewardStatus
REWARD_STATUS_INFRA_RETRY: RewardStatus
REWARD_STATUS_OK: RewardStatus
REWARD_STATUS_UNSPECIFIED: RewardStatus
REWARD_STATUS_WITHHELD: RewardStatus
STOP_REASON_BUDGET: StopReason
STOP_REASON_CONVERGED: StopReason
STOP_REASON_ERROR: StopReason
STOP_REASON_UNSPECIFIED: StopReason

class Baseline(_message.Message):
    __slots__ = ["device_name", "max_seconds", "mean_seconds", "measured_at", "min_seconds", "num_trials", "std_seconds", "toolchain"]
    DEVICE_NAME_FIELD_NUMBER: _ClassVar[int]
    MAX_SECONDS_FIELD_NUMBER: _ClassVar[int]
    MEAN_SECONDS_FIELD_NUMBER: _ClassVar[int]
    MEASURED_AT_FIELD_NUMBER: _ClassVar[int]
    MIN_SECONDS_FIELD_NUMBER: _ClassVar[int]
    NUM_TRIALS_FIELD_NUMBER: _ClassVar[int]
    STD_SECONDS_FIELD_NUMBER: _ClassVar[int]
    TOOLCHAIN_FIELD_NUMBER: _ClassVar[int]
    device_name: str
    max_seconds: float
    mean_seconds: float
    measured_at: int
    min_seconds: float
    num_trials: int
    std_seconds: float
    toolchain: str
    def __init__(self, mean_seconds: _Optional[float] = ..., std_seconds: _Optional[float] = ..., min_seconds: _Optional[float] = ..., max_seconds: _Optional[float] = ..., num_trials: _Optional[int] = ..., device_name: _Optional[str] = ..., toolchain: _Optional[str] = ..., measured_at: _Optional[int] = ...) -> None: ...

class ComputeRewardRequest(_message.Message):
    __slots__ = ["flags", "params", "preset", "speedup", "speedup_ci_high", "speedup_ci_low", "verdict"]
    FLAGS_FIELD_NUMBER: _ClassVar[int]
    PARAMS_FIELD_NUMBER: _ClassVar[int]
    PRESET_FIELD_NUMBER: _ClassVar[int]
    SPEEDUP_CI_HIGH_FIELD_NUMBER: _ClassVar[int]
    SPEEDUP_CI_LOW_FIELD_NUMBER: _ClassVar[int]
    SPEEDUP_FIELD_NUMBER: _ClassVar[int]
    VERDICT_FIELD_NUMBER: _ClassVar[int]
    flags: _containers.RepeatedScalarFieldContainer[_common_pb2.Flag]
    params: RewardParams
    preset: RewardPreset
    speedup: float
    speedup_ci_high: float
    speedup_ci_low: float
    verdict: _common_pb2.Verdict
    def __init__(self, verdict: _Optional[_Union[_common_pb2.Verdict, str]] = ..., speedup: _Optional[float] = ..., flags: _Optional[_Iterable[_Union[_common_pb2.Flag, str]]] = ..., preset: _Optional[_Union[RewardPreset, str]] = ..., params: _Optional[_Union[RewardParams, _Mapping]] = ..., speedup_ci_low: _Optional[float] = ..., speedup_ci_high: _Optional[float] = ...) -> None: ...

class GetBaselineRequest(_message.Message):
    __slots__ = ["backend", "task"]
    BACKEND_FIELD_NUMBER: _ClassVar[int]
    TASK_FIELD_NUMBER: _ClassVar[int]
    backend: _common_pb2.Backend
    task: _common_pb2.Task
    def __init__(self, task: _Optional[_Union[_common_pb2.Task, _Mapping]] = ..., backend: _Optional[_Union[_common_pb2.Backend, str]] = ...) -> None: ...

class ListWorkersRequest(_message.Message):
    __slots__ = []
    def __init__(self) -> None: ...

class RewardParams(_message.Message):
    __slots__ = ["clip", "correctness_bonus", "incorrect_reward", "speedup_cap"]
    CLIP_FIELD_NUMBER: _ClassVar[int]
    CORRECTNESS_BONUS_FIELD_NUMBER: _ClassVar[int]
    INCORRECT_REWARD_FIELD_NUMBER: _ClassVar[int]
    SPEEDUP_CAP_FIELD_NUMBER: _ClassVar[int]
    clip: float
    correctness_bonus: float
    incorrect_reward: float
    speedup_cap: float
    def __init__(self, clip: _Optional[float] = ..., incorrect_reward: _Optional[float] = ..., correctness_bonus: _Optional[float] = ..., speedup_cap: _Optional[float] = ...) -> None: ...

class RewardResult(_message.Message):
    __slots__ = ["explanation", "reward", "status"]
    EXPLANATION_FIELD_NUMBER: _ClassVar[int]
    REWARD_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    explanation: str
    reward: float
    status: RewardStatus
    def __init__(self, status: _Optional[_Union[RewardStatus, str]] = ..., reward: _Optional[float] = ..., explanation: _Optional[str] = ...) -> None: ...

class TimeRequest(_message.Message):
    __slots__ = ["aggregation", "artifact_id", "backend", "best_known_speedup", "budget_seconds", "candidate", "eager_timing", "kept_pair", "max_calls_per_sample", "min_sample_seconds", "target_rel_ci", "task", "worker"]
    AGGREGATION_FIELD_NUMBER: _ClassVar[int]
    ARTIFACT_ID_FIELD_NUMBER: _ClassVar[int]
    BACKEND_FIELD_NUMBER: _ClassVar[int]
    BEST_KNOWN_SPEEDUP_FIELD_NUMBER: _ClassVar[int]
    BUDGET_SECONDS_FIELD_NUMBER: _ClassVar[int]
    CANDIDATE_FIELD_NUMBER: _ClassVar[int]
    EAGER_TIMING_FIELD_NUMBER: _ClassVar[int]
    KEPT_PAIR_FIELD_NUMBER: _ClassVar[int]
    MAX_CALLS_PER_SAMPLE_FIELD_NUMBER: _ClassVar[int]
    MIN_SAMPLE_SECONDS_FIELD_NUMBER: _ClassVar[int]
    TARGET_REL_CI_FIELD_NUMBER: _ClassVar[int]
    TASK_FIELD_NUMBER: _ClassVar[int]
    WORKER_FIELD_NUMBER: _ClassVar[int]
    aggregation: Aggregation
    artifact_id: str
    backend: _common_pb2.Backend
    best_known_speedup: float
    budget_seconds: float
    candidate: _common_pb2.Candidate
    eager_timing: bool
    kept_pair: str
    max_calls_per_sample: int
    min_sample_seconds: float
    target_rel_ci: float
    task: _common_pb2.Task
    worker: str
    def __init__(self, task: _Optional[_Union[_common_pb2.Task, _Mapping]] = ..., candidate: _Optional[_Union[_common_pb2.Candidate, _Mapping]] = ..., artifact_id: _Optional[str] = ..., backend: _Optional[_Union[_common_pb2.Backend, str]] = ..., target_rel_ci: _Optional[float] = ..., budget_seconds: _Optional[float] = ..., aggregation: _Optional[_Union[Aggregation, str]] = ..., best_known_speedup: _Optional[float] = ..., worker: _Optional[str] = ..., min_sample_seconds: _Optional[float] = ..., max_calls_per_sample: _Optional[int] = ..., eager_timing: bool = ..., kept_pair: _Optional[str] = ...) -> None: ...

class TimeResponse(_message.Message):
    __slots__ = ["calls_per_sample", "candidate_samples", "candidate_seconds", "candidate_stream_seconds", "device_name", "flag_evidence", "flags", "graph_fallback", "kept_pair_used", "lane_wait_seconds", "measure_seconds", "measurements", "ref_samples", "ref_seconds", "ref_stream_seconds", "speedup", "speedup_ci_high", "speedup_ci_low", "start_seconds", "stop_reason", "timing_mode", "verdict"]
    CALLS_PER_SAMPLE_FIELD_NUMBER: _ClassVar[int]
    CANDIDATE_SAMPLES_FIELD_NUMBER: _ClassVar[int]
    CANDIDATE_SECONDS_FIELD_NUMBER: _ClassVar[int]
    CANDIDATE_STREAM_SECONDS_FIELD_NUMBER: _ClassVar[int]
    DEVICE_NAME_FIELD_NUMBER: _ClassVar[int]
    FLAGS_FIELD_NUMBER: _ClassVar[int]
    FLAG_EVIDENCE_FIELD_NUMBER: _ClassVar[int]
    GRAPH_FALLBACK_FIELD_NUMBER: _ClassVar[int]
    KEPT_PAIR_USED_FIELD_NUMBER: _ClassVar[int]
    LANE_WAIT_SECONDS_FIELD_NUMBER: _ClassVar[int]
    MEASUREMENTS_FIELD_NUMBER: _ClassVar[int]
    MEASURE_SECONDS_FIELD_NUMBER: _ClassVar[int]
    REF_SAMPLES_FIELD_NUMBER: _ClassVar[int]
    REF_SECONDS_FIELD_NUMBER: _ClassVar[int]
    REF_STREAM_SECONDS_FIELD_NUMBER: _ClassVar[int]
    SPEEDUP_CI_HIGH_FIELD_NUMBER: _ClassVar[int]
    SPEEDUP_CI_LOW_FIELD_NUMBER: _ClassVar[int]
    SPEEDUP_FIELD_NUMBER: _ClassVar[int]
    START_SECONDS_FIELD_NUMBER: _ClassVar[int]
    STOP_REASON_FIELD_NUMBER: _ClassVar[int]
    TIMING_MODE_FIELD_NUMBER: _ClassVar[int]
    VERDICT_FIELD_NUMBER: _ClassVar[int]
    calls_per_sample: int
    candidate_samples: _containers.RepeatedCompositeFieldContainer[_common_pb2.TimingSample]
    candidate_seconds: float
    candidate_stream_seconds: float
    device_name: str
    flag_evidence: _containers.RepeatedScalarFieldContainer[str]
    flags: _containers.RepeatedScalarFieldContainer[_common_pb2.Flag]
    graph_fallback: str
    kept_pair_used: bool
    lane_wait_seconds: float
    measure_seconds: float
    measurements: int
    ref_samples: _containers.RepeatedCompositeFieldContainer[_common_pb2.TimingSample]
    ref_seconds: float
    ref_stream_seconds: float
    speedup: float
    speedup_ci_high: float
    speedup_ci_low: float
    start_seconds: float
    stop_reason: StopReason
    timing_mode: str
    verdict: _common_pb2.Verdict
    def __init__(self, verdict: _Optional[_Union[_common_pb2.Verdict, str]] = ..., ref_seconds: _Optional[float] = ..., candidate_seconds: _Optional[float] = ..., speedup: _Optional[float] = ..., speedup_ci_low: _Optional[float] = ..., speedup_ci_high: _Optional[float] = ..., flags: _Optional[_Iterable[_Union[_common_pb2.Flag, str]]] = ..., flag_evidence: _Optional[_Iterable[str]] = ..., stop_reason: _Optional[_Union[StopReason, str]] = ..., ref_stream_seconds: _Optional[float] = ..., candidate_stream_seconds: _Optional[float] = ..., ref_samples: _Optional[_Iterable[_Union[_common_pb2.TimingSample, _Mapping]]] = ..., candidate_samples: _Optional[_Iterable[_Union[_common_pb2.TimingSample, _Mapping]]] = ..., device_name: _Optional[str] = ..., calls_per_sample: _Optional[int] = ..., measurements: _Optional[int] = ..., measure_seconds: _Optional[float] = ..., timing_mode: _Optional[str] = ..., graph_fallback: _Optional[str] = ..., start_seconds: _Optional[float] = ..., lane_wait_seconds: _Optional[float] = ..., kept_pair_used: bool = ...) -> None: ...

class WorkerAddresses(_message.Message):
    __slots__ = ["addresses"]
    ADDRESSES_FIELD_NUMBER: _ClassVar[int]
    addresses: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, addresses: _Optional[_Iterable[str]] = ...) -> None: ...

class Aggregation(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = []

class StopReason(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = []

class RewardPreset(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = []

class RewardStatus(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = []

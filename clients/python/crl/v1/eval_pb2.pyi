from crl.v1 import common_pb2 as _common_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from typing import ClassVar as _ClassVar, Iterable as _Iterable, Mapping as _Mapping, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class CompileLimits(_message.Message):
    __slots__ = ["max_log_bytes", "wall_seconds"]
    MAX_LOG_BYTES_FIELD_NUMBER: _ClassVar[int]
    WALL_SECONDS_FIELD_NUMBER: _ClassVar[int]
    max_log_bytes: int
    wall_seconds: float
    def __init__(self, wall_seconds: _Optional[float] = ..., max_log_bytes: _Optional[int] = ...) -> None: ...

class CompileRequest(_message.Message):
    __slots__ = ["candidate", "limits", "task"]
    CANDIDATE_FIELD_NUMBER: _ClassVar[int]
    LIMITS_FIELD_NUMBER: _ClassVar[int]
    TASK_FIELD_NUMBER: _ClassVar[int]
    candidate: _common_pb2.Candidate
    limits: CompileLimits
    task: _common_pb2.Task
    def __init__(self, task: _Optional[_Union[_common_pb2.Task, _Mapping]] = ..., candidate: _Optional[_Union[_common_pb2.Candidate, _Mapping]] = ..., limits: _Optional[_Union[CompileLimits, _Mapping]] = ...) -> None: ...

class CompileResponse(_message.Message):
    __slots__ = ["artifact_id", "cache_hit", "compile_seconds", "log", "verdict"]
    ARTIFACT_ID_FIELD_NUMBER: _ClassVar[int]
    CACHE_HIT_FIELD_NUMBER: _ClassVar[int]
    COMPILE_SECONDS_FIELD_NUMBER: _ClassVar[int]
    LOG_FIELD_NUMBER: _ClassVar[int]
    VERDICT_FIELD_NUMBER: _ClassVar[int]
    artifact_id: str
    cache_hit: bool
    compile_seconds: float
    log: str
    verdict: _common_pb2.Verdict
    def __init__(self, verdict: _Optional[_Union[_common_pb2.Verdict, str]] = ..., artifact_id: _Optional[str] = ..., cache_hit: bool = ..., compile_seconds: _Optional[float] = ..., log: _Optional[str] = ...) -> None: ...

class EvaluateRequest(_message.Message):
    __slots__ = ["candidate", "compile_limits", "keep_for_timing_seconds", "options", "task"]
    CANDIDATE_FIELD_NUMBER: _ClassVar[int]
    COMPILE_LIMITS_FIELD_NUMBER: _ClassVar[int]
    KEEP_FOR_TIMING_SECONDS_FIELD_NUMBER: _ClassVar[int]
    OPTIONS_FIELD_NUMBER: _ClassVar[int]
    TASK_FIELD_NUMBER: _ClassVar[int]
    candidate: _common_pb2.Candidate
    compile_limits: CompileLimits
    keep_for_timing_seconds: float
    options: VerifyOptions
    task: _common_pb2.Task
    def __init__(self, task: _Optional[_Union[_common_pb2.Task, _Mapping]] = ..., candidate: _Optional[_Union[_common_pb2.Candidate, _Mapping]] = ..., options: _Optional[_Union[VerifyOptions, _Mapping]] = ..., compile_limits: _Optional[_Union[CompileLimits, _Mapping]] = ..., keep_for_timing_seconds: _Optional[float] = ...) -> None: ...

class EvaluateResponse(_message.Message):
    __slots__ = ["artifact_id", "backend", "compile", "correctness", "custom_kernel", "flag_evidence", "flags", "kept_pair", "lane", "lane_wait_seconds", "messages", "prepare_seconds", "reference_cached", "start_seconds", "steps_aside", "trials_seconds", "verdict"]
    ARTIFACT_ID_FIELD_NUMBER: _ClassVar[int]
    BACKEND_FIELD_NUMBER: _ClassVar[int]
    COMPILE_FIELD_NUMBER: _ClassVar[int]
    CORRECTNESS_FIELD_NUMBER: _ClassVar[int]
    CUSTOM_KERNEL_FIELD_NUMBER: _ClassVar[int]
    FLAGS_FIELD_NUMBER: _ClassVar[int]
    FLAG_EVIDENCE_FIELD_NUMBER: _ClassVar[int]
    KEPT_PAIR_FIELD_NUMBER: _ClassVar[int]
    LANE_FIELD_NUMBER: _ClassVar[int]
    LANE_WAIT_SECONDS_FIELD_NUMBER: _ClassVar[int]
    MESSAGES_FIELD_NUMBER: _ClassVar[int]
    PREPARE_SECONDS_FIELD_NUMBER: _ClassVar[int]
    REFERENCE_CACHED_FIELD_NUMBER: _ClassVar[int]
    START_SECONDS_FIELD_NUMBER: _ClassVar[int]
    STEPS_ASIDE_FIELD_NUMBER: _ClassVar[int]
    TRIALS_SECONDS_FIELD_NUMBER: _ClassVar[int]
    VERDICT_FIELD_NUMBER: _ClassVar[int]
    artifact_id: str
    backend: _common_pb2.Backend
    compile: CompileResponse
    correctness: _common_pb2.CorrectnessReport
    custom_kernel: bool
    flag_evidence: _containers.RepeatedScalarFieldContainer[str]
    flags: _containers.RepeatedScalarFieldContainer[_common_pb2.Flag]
    kept_pair: str
    lane: str
    lane_wait_seconds: float
    messages: _containers.RepeatedScalarFieldContainer[str]
    prepare_seconds: float
    reference_cached: bool
    start_seconds: float
    steps_aside: int
    trials_seconds: float
    verdict: _common_pb2.Verdict
    def __init__(self, verdict: _Optional[_Union[_common_pb2.Verdict, str]] = ..., compile: _Optional[_Union[CompileResponse, _Mapping]] = ..., correctness: _Optional[_Union[_common_pb2.CorrectnessReport, _Mapping]] = ..., artifact_id: _Optional[str] = ..., messages: _Optional[_Iterable[str]] = ..., lane: _Optional[str] = ..., flags: _Optional[_Iterable[_Union[_common_pb2.Flag, str]]] = ..., flag_evidence: _Optional[_Iterable[str]] = ..., custom_kernel: bool = ..., backend: _Optional[_Union[_common_pb2.Backend, str]] = ..., lane_wait_seconds: _Optional[float] = ..., start_seconds: _Optional[float] = ..., trials_seconds: _Optional[float] = ..., kept_pair: _Optional[str] = ..., reference_cached: bool = ..., steps_aside: _Optional[int] = ..., prepare_seconds: _Optional[float] = ...) -> None: ...

class GetWorkerInfoRequest(_message.Message):
    __slots__ = []
    def __init__(self) -> None: ...

class MeasurePairRequest(_message.Message):
    __slots__ = ["backend", "block_size", "budget_seconds", "candidate_artifact_id", "check_outputs_every", "checked_elements", "eager_timing", "kept_pair", "max_calls_per_sample", "max_pairs", "min_pairs", "min_sample_seconds", "no_l2_flush", "reference_artifact_id", "seed", "target_rel_ci", "task", "warmup"]
    BACKEND_FIELD_NUMBER: _ClassVar[int]
    BLOCK_SIZE_FIELD_NUMBER: _ClassVar[int]
    BUDGET_SECONDS_FIELD_NUMBER: _ClassVar[int]
    CANDIDATE_ARTIFACT_ID_FIELD_NUMBER: _ClassVar[int]
    CHECKED_ELEMENTS_FIELD_NUMBER: _ClassVar[int]
    CHECK_OUTPUTS_EVERY_FIELD_NUMBER: _ClassVar[int]
    EAGER_TIMING_FIELD_NUMBER: _ClassVar[int]
    KEPT_PAIR_FIELD_NUMBER: _ClassVar[int]
    MAX_CALLS_PER_SAMPLE_FIELD_NUMBER: _ClassVar[int]
    MAX_PAIRS_FIELD_NUMBER: _ClassVar[int]
    MIN_PAIRS_FIELD_NUMBER: _ClassVar[int]
    MIN_SAMPLE_SECONDS_FIELD_NUMBER: _ClassVar[int]
    NO_L2_FLUSH_FIELD_NUMBER: _ClassVar[int]
    REFERENCE_ARTIFACT_ID_FIELD_NUMBER: _ClassVar[int]
    SEED_FIELD_NUMBER: _ClassVar[int]
    TARGET_REL_CI_FIELD_NUMBER: _ClassVar[int]
    TASK_FIELD_NUMBER: _ClassVar[int]
    WARMUP_FIELD_NUMBER: _ClassVar[int]
    backend: _common_pb2.Backend
    block_size: int
    budget_seconds: float
    candidate_artifact_id: str
    check_outputs_every: int
    checked_elements: int
    eager_timing: bool
    kept_pair: str
    max_calls_per_sample: int
    max_pairs: int
    min_pairs: int
    min_sample_seconds: float
    no_l2_flush: bool
    reference_artifact_id: str
    seed: int
    target_rel_ci: float
    task: _common_pb2.Task
    warmup: int
    def __init__(self, task: _Optional[_Union[_common_pb2.Task, _Mapping]] = ..., backend: _Optional[_Union[_common_pb2.Backend, str]] = ..., candidate_artifact_id: _Optional[str] = ..., reference_artifact_id: _Optional[str] = ..., warmup: _Optional[int] = ..., min_pairs: _Optional[int] = ..., max_pairs: _Optional[int] = ..., block_size: _Optional[int] = ..., target_rel_ci: _Optional[float] = ..., budget_seconds: _Optional[float] = ..., seed: _Optional[int] = ..., no_l2_flush: bool = ..., check_outputs_every: _Optional[int] = ..., min_sample_seconds: _Optional[float] = ..., max_calls_per_sample: _Optional[int] = ..., eager_timing: bool = ..., kept_pair: _Optional[str] = ..., checked_elements: _Optional[int] = ...) -> None: ...

class MeasurePairResponse(_message.Message):
    __slots__ = ["backend", "calls_per_sample", "candidate_outside_seconds", "candidate_samples", "converged", "device_name", "elapsed_seconds", "graph_fallback", "kept_pair_used", "lane", "lane_seconds", "lane_wait_seconds", "messages", "output_checks", "output_mismatch_detail", "output_mismatches", "reference_outside_seconds", "reference_samples", "start_seconds", "task_bytes", "task_flops", "timing_mode", "verdict"]
    BACKEND_FIELD_NUMBER: _ClassVar[int]
    CALLS_PER_SAMPLE_FIELD_NUMBER: _ClassVar[int]
    CANDIDATE_OUTSIDE_SECONDS_FIELD_NUMBER: _ClassVar[int]
    CANDIDATE_SAMPLES_FIELD_NUMBER: _ClassVar[int]
    CONVERGED_FIELD_NUMBER: _ClassVar[int]
    DEVICE_NAME_FIELD_NUMBER: _ClassVar[int]
    ELAPSED_SECONDS_FIELD_NUMBER: _ClassVar[int]
    GRAPH_FALLBACK_FIELD_NUMBER: _ClassVar[int]
    KEPT_PAIR_USED_FIELD_NUMBER: _ClassVar[int]
    LANE_FIELD_NUMBER: _ClassVar[int]
    LANE_SECONDS_FIELD_NUMBER: _ClassVar[int]
    LANE_WAIT_SECONDS_FIELD_NUMBER: _ClassVar[int]
    MESSAGES_FIELD_NUMBER: _ClassVar[int]
    OUTPUT_CHECKS_FIELD_NUMBER: _ClassVar[int]
    OUTPUT_MISMATCHES_FIELD_NUMBER: _ClassVar[int]
    OUTPUT_MISMATCH_DETAIL_FIELD_NUMBER: _ClassVar[int]
    REFERENCE_OUTSIDE_SECONDS_FIELD_NUMBER: _ClassVar[int]
    REFERENCE_SAMPLES_FIELD_NUMBER: _ClassVar[int]
    START_SECONDS_FIELD_NUMBER: _ClassVar[int]
    TASK_BYTES_FIELD_NUMBER: _ClassVar[int]
    TASK_FLOPS_FIELD_NUMBER: _ClassVar[int]
    TIMING_MODE_FIELD_NUMBER: _ClassVar[int]
    VERDICT_FIELD_NUMBER: _ClassVar[int]
    backend: _common_pb2.Backend
    calls_per_sample: int
    candidate_outside_seconds: _containers.RepeatedScalarFieldContainer[float]
    candidate_samples: _containers.RepeatedCompositeFieldContainer[_common_pb2.TimingSample]
    converged: bool
    device_name: str
    elapsed_seconds: float
    graph_fallback: str
    kept_pair_used: bool
    lane: str
    lane_seconds: float
    lane_wait_seconds: float
    messages: _containers.RepeatedScalarFieldContainer[str]
    output_checks: int
    output_mismatch_detail: str
    output_mismatches: int
    reference_outside_seconds: _containers.RepeatedScalarFieldContainer[float]
    reference_samples: _containers.RepeatedCompositeFieldContainer[_common_pb2.TimingSample]
    start_seconds: float
    task_bytes: float
    task_flops: float
    timing_mode: str
    verdict: _common_pb2.Verdict
    def __init__(self, verdict: _Optional[_Union[_common_pb2.Verdict, str]] = ..., reference_samples: _Optional[_Iterable[_Union[_common_pb2.TimingSample, _Mapping]]] = ..., candidate_samples: _Optional[_Iterable[_Union[_common_pb2.TimingSample, _Mapping]]] = ..., reference_outside_seconds: _Optional[_Iterable[float]] = ..., candidate_outside_seconds: _Optional[_Iterable[float]] = ..., output_checks: _Optional[int] = ..., output_mismatches: _Optional[int] = ..., output_mismatch_detail: _Optional[str] = ..., converged: bool = ..., lane: _Optional[str] = ..., device_name: _Optional[str] = ..., messages: _Optional[_Iterable[str]] = ..., elapsed_seconds: _Optional[float] = ..., task_bytes: _Optional[float] = ..., task_flops: _Optional[float] = ..., backend: _Optional[_Union[_common_pb2.Backend, str]] = ..., calls_per_sample: _Optional[int] = ..., lane_seconds: _Optional[float] = ..., timing_mode: _Optional[str] = ..., graph_fallback: _Optional[str] = ..., start_seconds: _Optional[float] = ..., lane_wait_seconds: _Optional[float] = ..., kept_pair_used: bool = ...) -> None: ...

class MeasureRequest(_message.Message):
    __slots__ = ["artifact_id", "backend", "iterations", "no_l2_flush", "seed", "task", "warmup"]
    ARTIFACT_ID_FIELD_NUMBER: _ClassVar[int]
    BACKEND_FIELD_NUMBER: _ClassVar[int]
    ITERATIONS_FIELD_NUMBER: _ClassVar[int]
    NO_L2_FLUSH_FIELD_NUMBER: _ClassVar[int]
    SEED_FIELD_NUMBER: _ClassVar[int]
    TASK_FIELD_NUMBER: _ClassVar[int]
    WARMUP_FIELD_NUMBER: _ClassVar[int]
    artifact_id: str
    backend: _common_pb2.Backend
    iterations: int
    no_l2_flush: bool
    seed: int
    task: _common_pb2.Task
    warmup: int
    def __init__(self, task: _Optional[_Union[_common_pb2.Task, _Mapping]] = ..., artifact_id: _Optional[str] = ..., backend: _Optional[_Union[_common_pb2.Backend, str]] = ..., iterations: _Optional[int] = ..., warmup: _Optional[int] = ..., seed: _Optional[int] = ..., no_l2_flush: bool = ...) -> None: ...

class MeasureResponse(_message.Message):
    __slots__ = ["backend", "device_name", "lane", "messages", "outside_seconds", "samples", "verdict"]
    BACKEND_FIELD_NUMBER: _ClassVar[int]
    DEVICE_NAME_FIELD_NUMBER: _ClassVar[int]
    LANE_FIELD_NUMBER: _ClassVar[int]
    MESSAGES_FIELD_NUMBER: _ClassVar[int]
    OUTSIDE_SECONDS_FIELD_NUMBER: _ClassVar[int]
    SAMPLES_FIELD_NUMBER: _ClassVar[int]
    VERDICT_FIELD_NUMBER: _ClassVar[int]
    backend: _common_pb2.Backend
    device_name: str
    lane: str
    messages: _containers.RepeatedScalarFieldContainer[str]
    outside_seconds: _containers.RepeatedScalarFieldContainer[float]
    samples: _containers.RepeatedCompositeFieldContainer[_common_pb2.TimingSample]
    verdict: _common_pb2.Verdict
    def __init__(self, verdict: _Optional[_Union[_common_pb2.Verdict, str]] = ..., samples: _Optional[_Iterable[_Union[_common_pb2.TimingSample, _Mapping]]] = ..., outside_seconds: _Optional[_Iterable[float]] = ..., lane: _Optional[str] = ..., device_name: _Optional[str] = ..., messages: _Optional[_Iterable[str]] = ..., backend: _Optional[_Union[_common_pb2.Backend, str]] = ...) -> None: ...

class VerifyOptions(_message.Message):
    __slots__ = ["atol", "call_timeout_seconds", "reused_output_as_flag", "rtol", "skip_determinism_check", "trials"]
    ATOL_FIELD_NUMBER: _ClassVar[int]
    CALL_TIMEOUT_SECONDS_FIELD_NUMBER: _ClassVar[int]
    REUSED_OUTPUT_AS_FLAG_FIELD_NUMBER: _ClassVar[int]
    RTOL_FIELD_NUMBER: _ClassVar[int]
    SKIP_DETERMINISM_CHECK_FIELD_NUMBER: _ClassVar[int]
    TRIALS_FIELD_NUMBER: _ClassVar[int]
    atol: float
    call_timeout_seconds: float
    reused_output_as_flag: bool
    rtol: float
    skip_determinism_check: bool
    trials: int
    def __init__(self, trials: _Optional[int] = ..., skip_determinism_check: bool = ..., call_timeout_seconds: _Optional[float] = ..., atol: _Optional[float] = ..., rtol: _Optional[float] = ..., reused_output_as_flag: bool = ...) -> None: ...

class WorkerInfo(_message.Message):
    __slots__ = ["backends", "device_names", "lanes", "toolchains", "version"]
    BACKENDS_FIELD_NUMBER: _ClassVar[int]
    DEVICE_NAMES_FIELD_NUMBER: _ClassVar[int]
    LANES_FIELD_NUMBER: _ClassVar[int]
    TOOLCHAINS_FIELD_NUMBER: _ClassVar[int]
    VERSION_FIELD_NUMBER: _ClassVar[int]
    backends: _containers.RepeatedScalarFieldContainer[_common_pb2.Backend]
    device_names: _containers.RepeatedScalarFieldContainer[str]
    lanes: _containers.RepeatedScalarFieldContainer[str]
    toolchains: _containers.RepeatedScalarFieldContainer[str]
    version: str
    def __init__(self, backends: _Optional[_Iterable[_Union[_common_pb2.Backend, str]]] = ..., lanes: _Optional[_Iterable[str]] = ..., device_names: _Optional[_Iterable[str]] = ..., toolchains: _Optional[_Iterable[str]] = ..., version: _Optional[str] = ...) -> None: ...

from crl.v1 import common_pb2 as _common_pb2
from crl.v1 import prompt_pb2 as _prompt_pb2
from crl.v1 import timing_pb2 as _timing_pb2
from crl.v1 import trainer_pb2 as _trainer_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from typing import ClassVar as _ClassVar, Iterable as _Iterable, Mapping as _Mapping, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor
RUN_STATE_CANCELLED: RunState
RUN_STATE_FAILED: RunState
RUN_STATE_QUEUED: RunState
RUN_STATE_RUNNING: RunState
RUN_STATE_SUCCEEDED: RunState
RUN_STATE_UNSPECIFIED: RunState

class CancelRunRequest(_message.Message):
    __slots__ = ["run_id"]
    RUN_ID_FIELD_NUMBER: _ClassVar[int]
    run_id: str
    def __init__(self, run_id: _Optional[str] = ...) -> None: ...

class ExportRunRequest(_message.Message):
    __slots__ = ["baseline_run_id", "format", "out_dir", "run_id"]
    BASELINE_RUN_ID_FIELD_NUMBER: _ClassVar[int]
    FORMAT_FIELD_NUMBER: _ClassVar[int]
    OUT_DIR_FIELD_NUMBER: _ClassVar[int]
    RUN_ID_FIELD_NUMBER: _ClassVar[int]
    baseline_run_id: str
    format: str
    out_dir: str
    run_id: str
    def __init__(self, run_id: _Optional[str] = ..., format: _Optional[str] = ..., out_dir: _Optional[str] = ..., baseline_run_id: _Optional[str] = ...) -> None: ...

class ExportRunResponse(_message.Message):
    __slots__ = ["files", "files_written", "out_dir"]
    FILES_FIELD_NUMBER: _ClassVar[int]
    FILES_WRITTEN_FIELD_NUMBER: _ClassVar[int]
    OUT_DIR_FIELD_NUMBER: _ClassVar[int]
    files: _containers.RepeatedCompositeFieldContainer[_common_pb2.File]
    files_written: int
    out_dir: str
    def __init__(self, files_written: _Optional[int] = ..., out_dir: _Optional[str] = ..., files: _Optional[_Iterable[_Union[_common_pb2.File, _Mapping]]] = ...) -> None: ...

class GetBestVariantsRequest(_message.Message):
    __slots__ = ["limit", "run_id"]
    LIMIT_FIELD_NUMBER: _ClassVar[int]
    RUN_ID_FIELD_NUMBER: _ClassVar[int]
    limit: int
    run_id: str
    def __init__(self, run_id: _Optional[str] = ..., limit: _Optional[int] = ...) -> None: ...

class GetBestVariantsResponse(_message.Message):
    __slots__ = ["variants"]
    VARIANTS_FIELD_NUMBER: _ClassVar[int]
    variants: _containers.RepeatedCompositeFieldContainer[Variant]
    def __init__(self, variants: _Optional[_Iterable[_Union[Variant, _Mapping]]] = ...) -> None: ...

class GetHackCaseRequest(_message.Message):
    __slots__ = ["case_id"]
    CASE_ID_FIELD_NUMBER: _ClassVar[int]
    case_id: str
    def __init__(self, case_id: _Optional[str] = ...) -> None: ...

class GetRunRequest(_message.Message):
    __slots__ = ["run_id"]
    RUN_ID_FIELD_NUMBER: _ClassVar[int]
    run_id: str
    def __init__(self, run_id: _Optional[str] = ...) -> None: ...

class HackCase(_message.Message):
    __slots__ = ["case_id", "evidence", "first_seen_at", "flags", "judgement", "kinds", "last_seen_at", "origin", "source", "speedup", "task_name", "times_seen", "verdict"]
    CASE_ID_FIELD_NUMBER: _ClassVar[int]
    EVIDENCE_FIELD_NUMBER: _ClassVar[int]
    FIRST_SEEN_AT_FIELD_NUMBER: _ClassVar[int]
    FLAGS_FIELD_NUMBER: _ClassVar[int]
    JUDGEMENT_FIELD_NUMBER: _ClassVar[int]
    KINDS_FIELD_NUMBER: _ClassVar[int]
    LAST_SEEN_AT_FIELD_NUMBER: _ClassVar[int]
    ORIGIN_FIELD_NUMBER: _ClassVar[int]
    SOURCE_FIELD_NUMBER: _ClassVar[int]
    SPEEDUP_FIELD_NUMBER: _ClassVar[int]
    TASK_NAME_FIELD_NUMBER: _ClassVar[int]
    TIMES_SEEN_FIELD_NUMBER: _ClassVar[int]
    VERDICT_FIELD_NUMBER: _ClassVar[int]
    case_id: str
    evidence: _containers.RepeatedScalarFieldContainer[str]
    first_seen_at: int
    flags: _containers.RepeatedScalarFieldContainer[_common_pb2.Flag]
    judgement: Judgement
    kinds: _containers.RepeatedScalarFieldContainer[str]
    last_seen_at: int
    origin: str
    source: str
    speedup: float
    task_name: str
    times_seen: int
    verdict: _common_pb2.Verdict
    def __init__(self, case_id: _Optional[str] = ..., task_name: _Optional[str] = ..., kinds: _Optional[_Iterable[str]] = ..., verdict: _Optional[_Union[_common_pb2.Verdict, str]] = ..., flags: _Optional[_Iterable[_Union[_common_pb2.Flag, str]]] = ..., evidence: _Optional[_Iterable[str]] = ..., source: _Optional[str] = ..., origin: _Optional[str] = ..., speedup: _Optional[float] = ..., first_seen_at: _Optional[int] = ..., last_seen_at: _Optional[int] = ..., times_seen: _Optional[int] = ..., judgement: _Optional[_Union[Judgement, _Mapping]] = ...) -> None: ...

class JudgeSpec(_message.Message):
    __slots__ = ["ceiling", "examples", "jump_factor"]
    CEILING_FIELD_NUMBER: _ClassVar[int]
    EXAMPLES_FIELD_NUMBER: _ClassVar[int]
    JUMP_FACTOR_FIELD_NUMBER: _ClassVar[int]
    ceiling: float
    examples: int
    jump_factor: float
    def __init__(self, jump_factor: _Optional[float] = ..., ceiling: _Optional[float] = ..., examples: _Optional[int] = ...) -> None: ...

class Judgement(_message.Message):
    __slots__ = ["asked", "decision", "error", "example_case_ids", "model", "reasoning", "trigger"]
    ASKED_FIELD_NUMBER: _ClassVar[int]
    DECISION_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    EXAMPLE_CASE_IDS_FIELD_NUMBER: _ClassVar[int]
    MODEL_FIELD_NUMBER: _ClassVar[int]
    REASONING_FIELD_NUMBER: _ClassVar[int]
    TRIGGER_FIELD_NUMBER: _ClassVar[int]
    asked: int
    decision: str
    error: str
    example_case_ids: _containers.RepeatedScalarFieldContainer[str]
    model: str
    reasoning: str
    trigger: str
    def __init__(self, trigger: _Optional[str] = ..., decision: _Optional[str] = ..., reasoning: _Optional[str] = ..., model: _Optional[str] = ..., example_case_ids: _Optional[_Iterable[str]] = ..., error: _Optional[str] = ..., asked: _Optional[int] = ...) -> None: ...

class ListHackCasesRequest(_message.Message):
    __slots__ = ["kind", "limit", "task_name", "with_source"]
    KIND_FIELD_NUMBER: _ClassVar[int]
    LIMIT_FIELD_NUMBER: _ClassVar[int]
    TASK_NAME_FIELD_NUMBER: _ClassVar[int]
    WITH_SOURCE_FIELD_NUMBER: _ClassVar[int]
    kind: str
    limit: int
    task_name: str
    with_source: bool
    def __init__(self, kind: _Optional[str] = ..., task_name: _Optional[str] = ..., limit: _Optional[int] = ..., with_source: bool = ...) -> None: ...

class ListHackCasesResponse(_message.Message):
    __slots__ = ["cases"]
    CASES_FIELD_NUMBER: _ClassVar[int]
    cases: _containers.RepeatedCompositeFieldContainer[HackCase]
    def __init__(self, cases: _Optional[_Iterable[_Union[HackCase, _Mapping]]] = ...) -> None: ...

class ListRunsRequest(_message.Message):
    __slots__ = ["page_size", "page_token", "state"]
    PAGE_SIZE_FIELD_NUMBER: _ClassVar[int]
    PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    page_size: int
    page_token: str
    state: RunState
    def __init__(self, page_size: _Optional[int] = ..., page_token: _Optional[str] = ..., state: _Optional[_Union[RunState, str]] = ...) -> None: ...

class ListRunsResponse(_message.Message):
    __slots__ = ["next_page_token", "runs"]
    NEXT_PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    RUNS_FIELD_NUMBER: _ClassVar[int]
    next_page_token: str
    runs: _containers.RepeatedCompositeFieldContainer[Run]
    def __init__(self, runs: _Optional[_Iterable[_Union[Run, _Mapping]]] = ..., next_page_token: _Optional[str] = ...) -> None: ...

class ParseRunSpecRequest(_message.Message):
    __slots__ = ["file_name", "files", "text"]
    FILES_FIELD_NUMBER: _ClassVar[int]
    FILE_NAME_FIELD_NUMBER: _ClassVar[int]
    TEXT_FIELD_NUMBER: _ClassVar[int]
    file_name: str
    files: _containers.RepeatedCompositeFieldContainer[_common_pb2.File]
    text: str
    def __init__(self, text: _Optional[str] = ..., file_name: _Optional[str] = ..., files: _Optional[_Iterable[_Union[_common_pb2.File, _Mapping]]] = ...) -> None: ...

class RejudgeRunRequest(_message.Message):
    __slots__ = ["run_id"]
    RUN_ID_FIELD_NUMBER: _ClassVar[int]
    run_id: str
    def __init__(self, run_id: _Optional[str] = ...) -> None: ...

class RejudgeRunResponse(_message.Message):
    __slots__ = ["decided", "held", "run"]
    DECIDED_FIELD_NUMBER: _ClassVar[int]
    HELD_FIELD_NUMBER: _ClassVar[int]
    RUN_FIELD_NUMBER: _ClassVar[int]
    decided: int
    held: int
    run: Run
    def __init__(self, run: _Optional[_Union[Run, _Mapping]] = ..., decided: _Optional[int] = ..., held: _Optional[int] = ...) -> None: ...

class Run(_message.Message):
    __slots__ = ["best_speedup", "candidates", "content", "created_at", "error", "faster", "held", "idempotency_key", "infra_failures", "policy_version", "rejected", "reward_sum", "rewarded", "rounds_done", "run_id", "spec", "stage_index", "stage_round", "state", "updated_at", "variants", "variants_correct"]
    class ContentEntry(_message.Message):
        __slots__ = ["key", "value"]
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    BEST_SPEEDUP_FIELD_NUMBER: _ClassVar[int]
    CANDIDATES_FIELD_NUMBER: _ClassVar[int]
    CONTENT_FIELD_NUMBER: _ClassVar[int]
    CREATED_AT_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    FASTER_FIELD_NUMBER: _ClassVar[int]
    HELD_FIELD_NUMBER: _ClassVar[int]
    IDEMPOTENCY_KEY_FIELD_NUMBER: _ClassVar[int]
    INFRA_FAILURES_FIELD_NUMBER: _ClassVar[int]
    POLICY_VERSION_FIELD_NUMBER: _ClassVar[int]
    REJECTED_FIELD_NUMBER: _ClassVar[int]
    REWARDED_FIELD_NUMBER: _ClassVar[int]
    REWARD_SUM_FIELD_NUMBER: _ClassVar[int]
    ROUNDS_DONE_FIELD_NUMBER: _ClassVar[int]
    RUN_ID_FIELD_NUMBER: _ClassVar[int]
    SPEC_FIELD_NUMBER: _ClassVar[int]
    STAGE_INDEX_FIELD_NUMBER: _ClassVar[int]
    STAGE_ROUND_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    UPDATED_AT_FIELD_NUMBER: _ClassVar[int]
    VARIANTS_CORRECT_FIELD_NUMBER: _ClassVar[int]
    VARIANTS_FIELD_NUMBER: _ClassVar[int]
    best_speedup: float
    candidates: int
    content: _containers.ScalarMap[str, str]
    created_at: int
    error: str
    faster: int
    held: int
    idempotency_key: str
    infra_failures: int
    policy_version: str
    rejected: int
    reward_sum: float
    rewarded: int
    rounds_done: int
    run_id: str
    spec: RunSpec
    stage_index: int
    stage_round: int
    state: RunState
    updated_at: int
    variants: int
    variants_correct: int
    def __init__(self, run_id: _Optional[str] = ..., spec: _Optional[_Union[RunSpec, _Mapping]] = ..., state: _Optional[_Union[RunState, str]] = ..., rounds_done: _Optional[int] = ..., variants: _Optional[int] = ..., variants_correct: _Optional[int] = ..., best_speedup: _Optional[float] = ..., created_at: _Optional[int] = ..., updated_at: _Optional[int] = ..., error: _Optional[str] = ..., idempotency_key: _Optional[str] = ..., stage_index: _Optional[int] = ..., stage_round: _Optional[int] = ..., candidates: _Optional[int] = ..., rejected: _Optional[int] = ..., infra_failures: _Optional[int] = ..., faster: _Optional[int] = ..., policy_version: _Optional[str] = ..., reward_sum: _Optional[float] = ..., rewarded: _Optional[int] = ..., content: _Optional[_Mapping[str, str]] = ..., held: _Optional[int] = ...) -> None: ...

class RunEvent(_message.Message):
    __slots__ = ["at", "kind", "message", "policy_step", "run", "run_id", "sequence", "state", "training", "variant"]
    AT_FIELD_NUMBER: _ClassVar[int]
    KIND_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    POLICY_STEP_FIELD_NUMBER: _ClassVar[int]
    RUN_FIELD_NUMBER: _ClassVar[int]
    RUN_ID_FIELD_NUMBER: _ClassVar[int]
    SEQUENCE_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    TRAINING_FIELD_NUMBER: _ClassVar[int]
    VARIANT_FIELD_NUMBER: _ClassVar[int]
    at: int
    kind: str
    message: str
    policy_step: int
    run: Run
    run_id: str
    sequence: int
    state: RunState
    training: _trainer_pb2.TrainStepStats
    variant: Variant
    def __init__(self, run_id: _Optional[str] = ..., state: _Optional[_Union[RunState, str]] = ..., variant: _Optional[_Union[Variant, _Mapping]] = ..., message: _Optional[str] = ..., at: _Optional[int] = ..., sequence: _Optional[int] = ..., kind: _Optional[str] = ..., run: _Optional[_Union[Run, _Mapping]] = ..., training: _Optional[_Union[_trainer_pb2.TrainStepStats, _Mapping]] = ..., policy_step: _Optional[int] = ...) -> None: ...

class RunSpec(_message.Message):
    __slots__ = ["backend", "budget_seconds", "control", "group_size", "judge", "max_candidates", "max_infra_attempts", "max_tokens", "name", "num_exemplars", "policy", "reward_params", "reward_preset", "rounds", "seed", "selection", "sft_examples", "stages", "tasks", "temperature", "template_name", "timing_budget_seconds", "training"]
    BACKEND_FIELD_NUMBER: _ClassVar[int]
    BUDGET_SECONDS_FIELD_NUMBER: _ClassVar[int]
    CONTROL_FIELD_NUMBER: _ClassVar[int]
    GROUP_SIZE_FIELD_NUMBER: _ClassVar[int]
    JUDGE_FIELD_NUMBER: _ClassVar[int]
    MAX_CANDIDATES_FIELD_NUMBER: _ClassVar[int]
    MAX_INFRA_ATTEMPTS_FIELD_NUMBER: _ClassVar[int]
    MAX_TOKENS_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    NUM_EXEMPLARS_FIELD_NUMBER: _ClassVar[int]
    POLICY_FIELD_NUMBER: _ClassVar[int]
    REWARD_PARAMS_FIELD_NUMBER: _ClassVar[int]
    REWARD_PRESET_FIELD_NUMBER: _ClassVar[int]
    ROUNDS_FIELD_NUMBER: _ClassVar[int]
    SEED_FIELD_NUMBER: _ClassVar[int]
    SELECTION_FIELD_NUMBER: _ClassVar[int]
    SFT_EXAMPLES_FIELD_NUMBER: _ClassVar[int]
    STAGES_FIELD_NUMBER: _ClassVar[int]
    TASKS_FIELD_NUMBER: _ClassVar[int]
    TEMPERATURE_FIELD_NUMBER: _ClassVar[int]
    TEMPLATE_NAME_FIELD_NUMBER: _ClassVar[int]
    TIMING_BUDGET_SECONDS_FIELD_NUMBER: _ClassVar[int]
    TRAINING_FIELD_NUMBER: _ClassVar[int]
    backend: _common_pb2.Backend
    budget_seconds: float
    control: str
    group_size: int
    judge: JudgeSpec
    max_candidates: int
    max_infra_attempts: int
    max_tokens: int
    name: str
    num_exemplars: int
    policy: str
    reward_params: _timing_pb2.RewardParams
    reward_preset: _timing_pb2.RewardPreset
    rounds: int
    seed: int
    selection: _prompt_pb2.ExemplarSelection
    sft_examples: _containers.RepeatedCompositeFieldContainer[SftExample]
    stages: _containers.RepeatedCompositeFieldContainer[Stage]
    tasks: _containers.RepeatedCompositeFieldContainer[_common_pb2.Task]
    temperature: float
    template_name: str
    timing_budget_seconds: float
    training: str
    def __init__(self, tasks: _Optional[_Iterable[_Union[_common_pb2.Task, _Mapping]]] = ..., backend: _Optional[_Union[_common_pb2.Backend, str]] = ..., policy: _Optional[str] = ..., rounds: _Optional[int] = ..., group_size: _Optional[int] = ..., num_exemplars: _Optional[int] = ..., reward_preset: _Optional[_Union[_timing_pb2.RewardPreset, str]] = ..., budget_seconds: _Optional[float] = ..., training: _Optional[str] = ..., seed: _Optional[int] = ..., stages: _Optional[_Iterable[_Union[Stage, _Mapping]]] = ..., selection: _Optional[_Union[_prompt_pb2.ExemplarSelection, _Mapping]] = ..., temperature: _Optional[float] = ..., max_tokens: _Optional[int] = ..., max_candidates: _Optional[int] = ..., max_infra_attempts: _Optional[int] = ..., name: _Optional[str] = ..., timing_budget_seconds: _Optional[float] = ..., template_name: _Optional[str] = ..., sft_examples: _Optional[_Iterable[_Union[SftExample, _Mapping]]] = ..., reward_params: _Optional[_Union[_timing_pb2.RewardParams, _Mapping]] = ..., control: _Optional[str] = ..., judge: _Optional[_Union[JudgeSpec, _Mapping]] = ...) -> None: ...

class ScoreCompletionsRequest(_message.Message):
    __slots__ = ["items", "record_hacks", "spec"]
    ITEMS_FIELD_NUMBER: _ClassVar[int]
    RECORD_HACKS_FIELD_NUMBER: _ClassVar[int]
    SPEC_FIELD_NUMBER: _ClassVar[int]
    items: _containers.RepeatedCompositeFieldContainer[ScoreItem]
    record_hacks: bool
    spec: RunSpec
    def __init__(self, spec: _Optional[_Union[RunSpec, _Mapping]] = ..., items: _Optional[_Iterable[_Union[ScoreItem, _Mapping]]] = ..., record_hacks: bool = ...) -> None: ...

class ScoreCompletionsResponse(_message.Message):
    __slots__ = ["results"]
    RESULTS_FIELD_NUMBER: _ClassVar[int]
    results: _containers.RepeatedCompositeFieldContainer[Variant]
    def __init__(self, results: _Optional[_Iterable[_Union[Variant, _Mapping]]] = ...) -> None: ...

class ScoreItem(_message.Message):
    __slots__ = ["completion", "known_hack", "note", "origin", "task_name"]
    COMPLETION_FIELD_NUMBER: _ClassVar[int]
    KNOWN_HACK_FIELD_NUMBER: _ClassVar[int]
    NOTE_FIELD_NUMBER: _ClassVar[int]
    ORIGIN_FIELD_NUMBER: _ClassVar[int]
    TASK_NAME_FIELD_NUMBER: _ClassVar[int]
    completion: str
    known_hack: bool
    note: str
    origin: str
    task_name: str
    def __init__(self, task_name: _Optional[str] = ..., completion: _Optional[str] = ..., origin: _Optional[str] = ..., known_hack: bool = ..., note: _Optional[str] = ...) -> None: ...

class SftExample(_message.Message):
    __slots__ = ["analysis", "origin", "source", "task_name"]
    ANALYSIS_FIELD_NUMBER: _ClassVar[int]
    ORIGIN_FIELD_NUMBER: _ClassVar[int]
    SOURCE_FIELD_NUMBER: _ClassVar[int]
    TASK_NAME_FIELD_NUMBER: _ClassVar[int]
    analysis: str
    origin: str
    source: str
    task_name: str
    def __init__(self, task_name: _Optional[str] = ..., source: _Optional[str] = ..., analysis: _Optional[str] = ..., origin: _Optional[str] = ...) -> None: ...

class Stage(_message.Message):
    __slots__ = ["kind", "optimizer", "rounds"]
    KIND_FIELD_NUMBER: _ClassVar[int]
    OPTIMIZER_FIELD_NUMBER: _ClassVar[int]
    ROUNDS_FIELD_NUMBER: _ClassVar[int]
    kind: str
    optimizer: _trainer_pb2.OptimizerSchedule
    rounds: int
    def __init__(self, kind: _Optional[str] = ..., rounds: _Optional[int] = ..., optimizer: _Optional[_Union[_trainer_pb2.OptimizerSchedule, _Mapping]] = ...) -> None: ...

class StoredGroup(_message.Message):
    __slots__ = ["content", "exemplar_ids", "group_id", "messages", "policy_version", "prompt", "prompt_token_ids", "round", "stage", "submitted", "task_name"]
    class ContentEntry(_message.Message):
        __slots__ = ["key", "value"]
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    CONTENT_FIELD_NUMBER: _ClassVar[int]
    EXEMPLAR_IDS_FIELD_NUMBER: _ClassVar[int]
    GROUP_ID_FIELD_NUMBER: _ClassVar[int]
    MESSAGES_FIELD_NUMBER: _ClassVar[int]
    POLICY_VERSION_FIELD_NUMBER: _ClassVar[int]
    PROMPT_FIELD_NUMBER: _ClassVar[int]
    PROMPT_TOKEN_IDS_FIELD_NUMBER: _ClassVar[int]
    ROUND_FIELD_NUMBER: _ClassVar[int]
    STAGE_FIELD_NUMBER: _ClassVar[int]
    SUBMITTED_FIELD_NUMBER: _ClassVar[int]
    TASK_NAME_FIELD_NUMBER: _ClassVar[int]
    content: _containers.ScalarMap[str, str]
    exemplar_ids: _containers.RepeatedScalarFieldContainer[str]
    group_id: str
    messages: _containers.RepeatedCompositeFieldContainer[_prompt_pb2.ChatMessage]
    policy_version: str
    prompt: str
    prompt_token_ids: _containers.RepeatedScalarFieldContainer[int]
    round: int
    stage: str
    submitted: bool
    task_name: str
    def __init__(self, group_id: _Optional[str] = ..., task_name: _Optional[str] = ..., stage: _Optional[str] = ..., round: _Optional[int] = ..., prompt: _Optional[str] = ..., prompt_token_ids: _Optional[_Iterable[int]] = ..., policy_version: _Optional[str] = ..., submitted: bool = ..., exemplar_ids: _Optional[_Iterable[str]] = ..., messages: _Optional[_Iterable[_Union[_prompt_pb2.ChatMessage, _Mapping]]] = ..., content: _Optional[_Mapping[str, str]] = ...) -> None: ...

class SubmitRunRequest(_message.Message):
    __slots__ = ["idempotency_key", "spec"]
    IDEMPOTENCY_KEY_FIELD_NUMBER: _ClassVar[int]
    SPEC_FIELD_NUMBER: _ClassVar[int]
    idempotency_key: str
    spec: RunSpec
    def __init__(self, spec: _Optional[_Union[RunSpec, _Mapping]] = ..., idempotency_key: _Optional[str] = ...) -> None: ...

class Variant(_message.Message):
    __slots__ = ["analysis", "candidate", "completion", "content", "design", "flag_evidence", "flags", "index", "infra_detail", "infra_failure", "judgement", "key", "log", "logprobs", "parse_detail", "parse_error", "policy_version", "reward", "round", "scored", "speedup", "speedup_ci_high", "speedup_ci_low", "stage", "task_name", "token_ids", "variant_id", "verdict"]
    class ContentEntry(_message.Message):
        __slots__ = ["key", "value"]
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    ANALYSIS_FIELD_NUMBER: _ClassVar[int]
    CANDIDATE_FIELD_NUMBER: _ClassVar[int]
    COMPLETION_FIELD_NUMBER: _ClassVar[int]
    CONTENT_FIELD_NUMBER: _ClassVar[int]
    DESIGN_FIELD_NUMBER: _ClassVar[int]
    FLAGS_FIELD_NUMBER: _ClassVar[int]
    FLAG_EVIDENCE_FIELD_NUMBER: _ClassVar[int]
    INDEX_FIELD_NUMBER: _ClassVar[int]
    INFRA_DETAIL_FIELD_NUMBER: _ClassVar[int]
    INFRA_FAILURE_FIELD_NUMBER: _ClassVar[int]
    JUDGEMENT_FIELD_NUMBER: _ClassVar[int]
    KEY_FIELD_NUMBER: _ClassVar[int]
    LOGPROBS_FIELD_NUMBER: _ClassVar[int]
    LOG_FIELD_NUMBER: _ClassVar[int]
    PARSE_DETAIL_FIELD_NUMBER: _ClassVar[int]
    PARSE_ERROR_FIELD_NUMBER: _ClassVar[int]
    POLICY_VERSION_FIELD_NUMBER: _ClassVar[int]
    REWARD_FIELD_NUMBER: _ClassVar[int]
    ROUND_FIELD_NUMBER: _ClassVar[int]
    SCORED_FIELD_NUMBER: _ClassVar[int]
    SPEEDUP_CI_HIGH_FIELD_NUMBER: _ClassVar[int]
    SPEEDUP_CI_LOW_FIELD_NUMBER: _ClassVar[int]
    SPEEDUP_FIELD_NUMBER: _ClassVar[int]
    STAGE_FIELD_NUMBER: _ClassVar[int]
    TASK_NAME_FIELD_NUMBER: _ClassVar[int]
    TOKEN_IDS_FIELD_NUMBER: _ClassVar[int]
    VARIANT_ID_FIELD_NUMBER: _ClassVar[int]
    VERDICT_FIELD_NUMBER: _ClassVar[int]
    analysis: str
    candidate: _common_pb2.Candidate
    completion: str
    content: _containers.ScalarMap[str, str]
    design: str
    flag_evidence: _containers.RepeatedScalarFieldContainer[str]
    flags: _containers.RepeatedScalarFieldContainer[_common_pb2.Flag]
    index: int
    infra_detail: str
    infra_failure: bool
    judgement: Judgement
    key: str
    log: str
    logprobs: _containers.RepeatedScalarFieldContainer[float]
    parse_detail: str
    parse_error: _prompt_pb2.ParseError
    policy_version: str
    reward: _timing_pb2.RewardResult
    round: int
    scored: bool
    speedup: float
    speedup_ci_high: float
    speedup_ci_low: float
    stage: str
    task_name: str
    token_ids: _containers.RepeatedScalarFieldContainer[int]
    variant_id: str
    verdict: _common_pb2.Verdict
    def __init__(self, variant_id: _Optional[str] = ..., task_name: _Optional[str] = ..., round: _Optional[int] = ..., candidate: _Optional[_Union[_common_pb2.Candidate, _Mapping]] = ..., verdict: _Optional[_Union[_common_pb2.Verdict, str]] = ..., speedup: _Optional[float] = ..., flags: _Optional[_Iterable[_Union[_common_pb2.Flag, str]]] = ..., reward: _Optional[_Union[_timing_pb2.RewardResult, _Mapping]] = ..., analysis: _Optional[str] = ..., policy_version: _Optional[str] = ..., parse_error: _Optional[_Union[_prompt_pb2.ParseError, str]] = ..., parse_detail: _Optional[str] = ..., key: _Optional[str] = ..., speedup_ci_low: _Optional[float] = ..., speedup_ci_high: _Optional[float] = ..., flag_evidence: _Optional[_Iterable[str]] = ..., stage: _Optional[str] = ..., completion: _Optional[str] = ..., token_ids: _Optional[_Iterable[int]] = ..., logprobs: _Optional[_Iterable[float]] = ..., scored: bool = ..., infra_failure: bool = ..., infra_detail: _Optional[str] = ..., design: _Optional[str] = ..., index: _Optional[int] = ..., log: _Optional[str] = ..., content: _Optional[_Mapping[str, str]] = ..., judgement: _Optional[_Union[Judgement, _Mapping]] = ...) -> None: ...

class WatchRunRequest(_message.Message):
    __slots__ = ["after_sequence", "run_id"]
    AFTER_SEQUENCE_FIELD_NUMBER: _ClassVar[int]
    RUN_ID_FIELD_NUMBER: _ClassVar[int]
    after_sequence: int
    run_id: str
    def __init__(self, run_id: _Optional[str] = ..., after_sequence: _Optional[int] = ...) -> None: ...

class RunState(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = []

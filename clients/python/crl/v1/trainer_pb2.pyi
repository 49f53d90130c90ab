from crl.v1 import prompt_pb2 as _prompt_pb2
from crl.v1 import timing_pb2 as _timing_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from typing import ClassVar as _ClassVar, Iterable as _Iterable, Mapping as _Mapping, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor
GROUP_OUTCOME_DROPPED_STALE: GroupOutcome
GROUP_OUTCOME_DUPLICATE: GroupOutcome
GROUP_OUTCOME_QUEUED: GroupOutcome
GROUP_OUTCOME_SKIPPED_EQUAL_REWARDS: GroupOutcome
GROUP_OUTCOME_SKIPPED_TOO_FEW: GroupOutcome
GROUP_OUTCOME_TRAINED: GroupOutcome
GROUP_OUTCOME_UNSPECIFIED: GroupOutcome

class BeginPhaseRequest(_message.Message):
    __slots__ = ["phase_id", "restore_snapshot", "save_snapshot", "schedule"]
    PHASE_ID_FIELD_NUMBER: _ClassVar[int]
    RESTORE_SNAPSHOT_FIELD_NUMBER: _ClassVar[int]
    SAVE_SNAPSHOT_FIELD_NUMBER: _ClassVar[int]
    SCHEDULE_FIELD_NUMBER: _ClassVar[int]
    phase_id: str
    restore_snapshot: str
    save_snapshot: str
    schedule: OptimizerSchedule
    def __init__(self, phase_id: _Optional[str] = ..., schedule: _Optional[_Union[OptimizerSchedule, _Mapping]] = ..., save_snapshot: _Optional[str] = ..., restore_snapshot: _Optional[str] = ...) -> None: ...

class CheckpointRequest(_message.Message):
    __slots__ = []
    def __init__(self) -> None: ...

class CheckpointResponse(_message.Message):
    __slots__ = ["checkpoint_uri", "step"]
    CHECKPOINT_URI_FIELD_NUMBER: _ClassVar[int]
    STEP_FIELD_NUMBER: _ClassVar[int]
    checkpoint_uri: str
    step: int
    def __init__(self, checkpoint_uri: _Optional[str] = ..., step: _Optional[int] = ...) -> None: ...

class Example(_message.Message):
    __slots__ = ["completion", "completion_token_ids", "example_id", "messages", "prompt", "prompt_token_ids"]
    COMPLETION_FIELD_NUMBER: _ClassVar[int]
    COMPLETION_TOKEN_IDS_FIELD_NUMBER: _ClassVar[int]
    EXAMPLE_ID_FIELD_NUMBER: _ClassVar[int]
    MESSAGES_FIELD_NUMBER: _ClassVar[int]
    PROMPT_FIELD_NUMBER: _ClassVar[int]
    PROMPT_TOKEN_IDS_FIELD_NUMBER: _ClassVar[int]
    completion: str
    completion_token_ids: _containers.RepeatedScalarFieldContainer[int]
    example_id: str
    messages: _containers.RepeatedCompositeFieldContainer[_prompt_pb2.ChatMessage]
    prompt: str
    prompt_token_ids: _containers.RepeatedScalarFieldContainer[int]
    def __init__(self, prompt: _Optional[str] = ..., completion: _Optional[str] = ..., example_id: _Optional[str] = ..., prompt_token_ids: _Optional[_Iterable[int]] = ..., completion_token_ids: _Optional[_Iterable[int]] = ..., messages: _Optional[_Iterable[_Union[_prompt_pb2.ChatMessage, _Mapping]]] = ...) -> None: ...

class FlushRequest(_message.Message):
    __slots__ = []
    def __init__(self) -> None: ...

class FlushResponse(_message.Message):
    __slots__ = ["examples", "groups", "version"]
    EXAMPLES_FIELD_NUMBER: _ClassVar[int]
    GROUPS_FIELD_NUMBER: _ClassVar[int]
    VERSION_FIELD_NUMBER: _ClassVar[int]
    examples: int
    groups: int
    version: PolicyVersion
    def __init__(self, version: _Optional[_Union[PolicyVersion, _Mapping]] = ..., groups: _Optional[int] = ..., examples: _Optional[int] = ...) -> None: ...

class GetPolicyVersionRequest(_message.Message):
    __slots__ = []
    def __init__(self) -> None: ...

class OptimizerSchedule(_message.Message):
    __slots__ = ["lr", "min_lr_ratio", "total_steps", "warmup_steps"]
    LR_FIELD_NUMBER: _ClassVar[int]
    MIN_LR_RATIO_FIELD_NUMBER: _ClassVar[int]
    TOTAL_STEPS_FIELD_NUMBER: _ClassVar[int]
    WARMUP_STEPS_FIELD_NUMBER: _ClassVar[int]
    lr: float
    min_lr_ratio: float
    total_steps: int
    warmup_steps: int
    def __init__(self, lr: _Optional[float] = ..., warmup_steps: _Optional[int] = ..., total_steps: _Optional[int] = ..., min_lr_ratio: _Optional[float] = ...) -> None: ...

class PolicyVersion(_message.Message):
    __slots__ = ["adapter", "base_model", "checkpoint_uri", "stats", "step", "trained_ids", "version"]
    ADAPTER_FIELD_NUMBER: _ClassVar[int]
    BASE_MODEL_FIELD_NUMBER: _ClassVar[int]
    CHECKPOINT_URI_FIELD_NUMBER: _ClassVar[int]
    STATS_FIELD_NUMBER: _ClassVar[int]
    STEP_FIELD_NUMBER: _ClassVar[int]
    TRAINED_IDS_FIELD_NUMBER: _ClassVar[int]
    VERSION_FIELD_NUMBER: _ClassVar[int]
    adapter: bool
    base_model: str
    checkpoint_uri: str
    stats: TrainStepStats
    step: int
    trained_ids: _containers.RepeatedScalarFieldContainer[str]
    version: str
    def __init__(self, version: _Optional[str] = ..., checkpoint_uri: _Optional[str] = ..., step: _Optional[int] = ..., adapter: bool = ..., base_model: _Optional[str] = ..., trained_ids: _Optional[_Iterable[str]] = ..., stats: _Optional[_Union[TrainStepStats, _Mapping]] = ...) -> None: ...

class ScoredCompletion(_message.Message):
    __slots__ = ["behaviour_logprobs", "completion", "completion_id", "reward", "token_ids"]
    BEHAVIOUR_LOGPROBS_FIELD_NUMBER: _ClassVar[int]
    COMPLETION_FIELD_NUMBER: _ClassVar[int]
    COMPLETION_ID_FIELD_NUMBER: _ClassVar[int]
    REWARD_FIELD_NUMBER: _ClassVar[int]
    TOKEN_IDS_FIELD_NUMBER: _ClassVar[int]
    behaviour_logprobs: _containers.RepeatedScalarFieldContainer[float]
    completion: str
    completion_id: str
    reward: _timing_pb2.RewardResult
    token_ids: _containers.RepeatedScalarFieldContainer[int]
    def __init__(self, completion: _Optional[str] = ..., token_ids: _Optional[_Iterable[int]] = ..., behaviour_logprobs: _Optional[_Iterable[float]] = ..., reward: _Optional[_Union[_timing_pb2.RewardResult, _Mapping]] = ..., completion_id: _Optional[str] = ...) -> None: ...

class SubmitExamplesRequest(_message.Message):
    __slots__ = ["examples", "run_id", "wait_for_update"]
    EXAMPLES_FIELD_NUMBER: _ClassVar[int]
    RUN_ID_FIELD_NUMBER: _ClassVar[int]
    WAIT_FOR_UPDATE_FIELD_NUMBER: _ClassVar[int]
    examples: _containers.RepeatedCompositeFieldContainer[Example]
    run_id: str
    wait_for_update: bool
    def __init__(self, run_id: _Optional[str] = ..., examples: _Optional[_Iterable[_Union[Example, _Mapping]]] = ..., wait_for_update: bool = ...) -> None: ...

class SubmitExamplesResponse(_message.Message):
    __slots__ = ["accepted", "duplicates", "policy_version", "queued_examples"]
    ACCEPTED_FIELD_NUMBER: _ClassVar[int]
    DUPLICATES_FIELD_NUMBER: _ClassVar[int]
    POLICY_VERSION_FIELD_NUMBER: _ClassVar[int]
    QUEUED_EXAMPLES_FIELD_NUMBER: _ClassVar[int]
    accepted: int
    duplicates: int
    policy_version: str
    queued_examples: int
    def __init__(self, accepted: _Optional[int] = ..., policy_version: _Optional[str] = ..., duplicates: _Optional[int] = ..., queued_examples: _Optional[int] = ...) -> None: ...

class SubmitGroupRequest(_message.Message):
    __slots__ = ["completions", "group_id", "policy_version", "prompt", "prompt_token_ids", "run_id", "wait_for_update"]
    COMPLETIONS_FIELD_NUMBER: _ClassVar[int]
    GROUP_ID_FIELD_NUMBER: _ClassVar[int]
    POLICY_VERSION_FIELD_NUMBER: _ClassVar[int]
    PROMPT_FIELD_NUMBER: _ClassVar[int]
    PROMPT_TOKEN_IDS_FIELD_NUMBER: _ClassVar[int]
    RUN_ID_FIELD_NUMBER: _ClassVar[int]
    WAIT_FOR_UPDATE_FIELD_NUMBER: _ClassVar[int]
    completions: _containers.RepeatedCompositeFieldContainer[ScoredCompletion]
    group_id: str
    policy_version: str
    prompt: str
    prompt_token_ids: _containers.RepeatedScalarFieldContainer[int]
    run_id: str
    wait_for_update: bool
    def __init__(self, run_id: _Optional[str] = ..., prompt: _Optional[str] = ..., completions: _Optional[_Iterable[_Union[ScoredCompletion, _Mapping]]] = ..., policy_version: _Optional[str] = ..., prompt_token_ids: _Optional[_Iterable[int]] = ..., group_id: _Optional[str] = ..., wait_for_update: bool = ...) -> None: ...

class SubmitGroupResponse(_message.Message):
    __slots__ = ["advantages", "loss", "outcome", "policy_version", "queued_groups", "used"]
    ADVANTAGES_FIELD_NUMBER: _ClassVar[int]
    LOSS_FIELD_NUMBER: _ClassVar[int]
    OUTCOME_FIELD_NUMBER: _ClassVar[int]
    POLICY_VERSION_FIELD_NUMBER: _ClassVar[int]
    QUEUED_GROUPS_FIELD_NUMBER: _ClassVar[int]
    USED_FIELD_NUMBER: _ClassVar[int]
    advantages: _containers.RepeatedScalarFieldContainer[float]
    loss: float
    outcome: GroupOutcome
    policy_version: str
    queued_groups: int
    used: int
    def __init__(self, used: _Optional[int] = ..., policy_version: _Optional[str] = ..., loss: _Optional[float] = ..., outcome: _Optional[_Union[GroupOutcome, str]] = ..., queued_groups: _Optional[int] = ..., advantages: _Optional[_Iterable[float]] = ...) -> None: ...

class TrainStepStats(_message.Message):
    __slots__ = ["clip_fraction", "entropy", "grad_norm", "kl", "learning_rate", "loss", "objective", "reward_mean", "reward_std", "seconds", "sequences", "trained_tokens"]
    CLIP_FRACTION_FIELD_NUMBER: _ClassVar[int]
    ENTROPY_FIELD_NUMBER: _ClassVar[int]
    GRAD_NORM_FIELD_NUMBER: _ClassVar[int]
    KL_FIELD_NUMBER: _ClassVar[int]
    LEARNING_RATE_FIELD_NUMBER: _ClassVar[int]
    LOSS_FIELD_NUMBER: _ClassVar[int]
    OBJECTIVE_FIELD_NUMBER: _ClassVar[int]
    REWARD_MEAN_FIELD_NUMBER: _ClassVar[int]
    REWARD_STD_FIELD_NUMBER: _ClassVar[int]
    SECONDS_FIELD_NUMBER: _ClassVar[int]
    SEQUENCES_FIELD_NUMBER: _ClassVar[int]
    TRAINED_TOKENS_FIELD_NUMBER: _ClassVar[int]
    clip_fraction: float
    entropy: float
    grad_norm: float
    kl: float
    learning_rate: float
    loss: float
    objective: str
    reward_mean: float
    reward_std: float
    seconds: float
    sequences: int
    trained_tokens: int
    def __init__(self, objective: _Optional[str] = ..., loss: _Optional[float] = ..., kl: _Optional[float] = ..., clip_fraction: _Optional[float] = ..., entropy: _Optional[float] = ..., grad_norm: _Optional[float] = ..., learning_rate: _Optional[float] = ..., reward_mean: _Optional[float] = ..., reward_std: _Optional[float] = ..., sequences: _Optional[int] = ..., trained_tokens: _Optional[int] = ..., seconds: _Optional[float] = ...) -> None: ...

class WatchPolicyVersionsRequest(_message.Message):
    __slots__ = []
    def __init__(self) -> None: ...

class GroupOutcome(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = []

from crl.v1 import prompt_pb2 as _prompt_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from typing import ClassVar as _ClassVar, Iterable as _Iterable, Mapping as _Mapping, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class Completion(_message.Message):
    __slots__ = ["finish_reason", "policy_version", "text", "token_ids", "token_logprobs", "token_source", "top_logprobs"]
    FINISH_REASON_FIELD_NUMBER: _ClassVar[int]
    POLICY_VERSION_FIELD_NUMBER: _ClassVar[int]
    TEXT_FIELD_NUMBER: _ClassVar[int]
    TOKEN_IDS_FIELD_NUMBER: _ClassVar[int]
    TOKEN_LOGPROBS_FIELD_NUMBER: _ClassVar[int]
    TOKEN_SOURCE_FIELD_NUMBER: _ClassVar[int]
    TOP_LOGPROBS_FIELD_NUMBER: _ClassVar[int]
    finish_reason: str
    policy_version: str
    text: str
    token_ids: _containers.RepeatedScalarFieldContainer[int]
    token_logprobs: _containers.RepeatedScalarFieldContainer[float]
    token_source: str
    top_logprobs: _containers.RepeatedCompositeFieldContainer[TopLogprobs]
    def __init__(self, text: _Optional[str] = ..., token_logprobs: _Optional[_Iterable[float]] = ..., token_ids: _Optional[_Iterable[int]] = ..., finish_reason: _Optional[str] = ..., policy_version: _Optional[str] = ..., token_source: _Optional[str] = ..., top_logprobs: _Optional[_Iterable[_Union[TopLogprobs, _Mapping]]] = ...) -> None: ...

class ListPoliciesRequest(_message.Message):
    __slots__ = []
    def __init__(self) -> None: ...

class ListPoliciesResponse(_message.Message):
    __slots__ = ["policies"]
    POLICIES_FIELD_NUMBER: _ClassVar[int]
    policies: _containers.RepeatedCompositeFieldContainer[Policy]
    def __init__(self, policies: _Optional[_Iterable[_Union[Policy, _Mapping]]] = ...) -> None: ...

class Policy(_message.Message):
    __slots__ = ["adapter", "base_model", "endpoints", "kind", "name", "version"]
    ADAPTER_FIELD_NUMBER: _ClassVar[int]
    BASE_MODEL_FIELD_NUMBER: _ClassVar[int]
    ENDPOINTS_FIELD_NUMBER: _ClassVar[int]
    KIND_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    VERSION_FIELD_NUMBER: _ClassVar[int]
    adapter: bool
    base_model: str
    endpoints: _containers.RepeatedScalarFieldContainer[str]
    kind: str
    name: str
    version: str
    def __init__(self, name: _Optional[str] = ..., kind: _Optional[str] = ..., version: _Optional[str] = ..., endpoints: _Optional[_Iterable[str]] = ..., adapter: bool = ..., base_model: _Optional[str] = ...) -> None: ...

class SampleRequest(_message.Message):
    __slots__ = ["messages", "min_policy_step", "num_completions", "params", "policy", "prompt", "request_id"]
    MESSAGES_FIELD_NUMBER: _ClassVar[int]
    MIN_POLICY_STEP_FIELD_NUMBER: _ClassVar[int]
    NUM_COMPLETIONS_FIELD_NUMBER: _ClassVar[int]
    PARAMS_FIELD_NUMBER: _ClassVar[int]
    POLICY_FIELD_NUMBER: _ClassVar[int]
    PROMPT_FIELD_NUMBER: _ClassVar[int]
    REQUEST_ID_FIELD_NUMBER: _ClassVar[int]
    messages: _containers.RepeatedCompositeFieldContainer[_prompt_pb2.ChatMessage]
    min_policy_step: int
    num_completions: int
    params: SamplingParams
    policy: str
    prompt: str
    request_id: str
    def __init__(self, prompt: _Optional[str] = ..., num_completions: _Optional[int] = ..., params: _Optional[_Union[SamplingParams, _Mapping]] = ..., policy: _Optional[str] = ..., messages: _Optional[_Iterable[_Union[_prompt_pb2.ChatMessage, _Mapping]]] = ..., request_id: _Optional[str] = ..., min_policy_step: _Optional[int] = ...) -> None: ...

class SampleResponse(_message.Message):
    __slots__ = ["attempts", "completion_tokens", "completions", "policy", "policy_version", "prompt_token_ids", "prompt_tokens", "timings"]
    ATTEMPTS_FIELD_NUMBER: _ClassVar[int]
    COMPLETIONS_FIELD_NUMBER: _ClassVar[int]
    COMPLETION_TOKENS_FIELD_NUMBER: _ClassVar[int]
    POLICY_FIELD_NUMBER: _ClassVar[int]
    POLICY_VERSION_FIELD_NUMBER: _ClassVar[int]
    PROMPT_TOKENS_FIELD_NUMBER: _ClassVar[int]
    PROMPT_TOKEN_IDS_FIELD_NUMBER: _ClassVar[int]
    TIMINGS_FIELD_NUMBER: _ClassVar[int]
    attempts: int
    completion_tokens: int
    completions: _containers.RepeatedCompositeFieldContainer[Completion]
    policy: str
    policy_version: str
    prompt_token_ids: _containers.RepeatedScalarFieldContainer[int]
    prompt_tokens: int
    timings: SampleTimings
    def __init__(self, completions: _Optional[_Iterable[_Union[Completion, _Mapping]]] = ..., policy_version: _Optional[str] = ..., prompt_token_ids: _Optional[_Iterable[int]] = ..., timings: _Optional[_Union[SampleTimings, _Mapping]] = ..., policy: _Optional[str] = ..., prompt_tokens: _Optional[int] = ..., completion_tokens: _Optional[int] = ..., attempts: _Optional[int] = ...) -> None: ...

class SampleTimings(_message.Message):
    __slots__ = ["first_token_seconds", "queue_seconds", "total_seconds"]
    FIRST_TOKEN_SECONDS_FIELD_NUMBER: _ClassVar[int]
    QUEUE_SECONDS_FIELD_NUMBER: _ClassVar[int]
    TOTAL_SECONDS_FIELD_NUMBER: _ClassVar[int]
    first_token_seconds: float
    queue_seconds: float
    total_seconds: float
    def __init__(self, queue_seconds: _Optional[float] = ..., first_token_seconds: _Optional[float] = ..., total_seconds: _Optional[float] = ...) -> None: ...

class SamplingParams(_message.Message):
    __slots__ = ["has_seed", "max_tokens", "seed", "stop", "stop_token_ids", "temperature", "top_k", "top_logprobs", "top_p"]
    HAS_SEED_FIELD_NUMBER: _ClassVar[int]
    MAX_TOKENS_FIELD_NUMBER: _ClassVar[int]
    SEED_FIELD_NUMBER: _ClassVar[int]
    STOP_FIELD_NUMBER: _ClassVar[int]
    STOP_TOKEN_IDS_FIELD_NUMBER: _ClassVar[int]
    TEMPERATURE_FIELD_NUMBER: _ClassVar[int]
    TOP_K_FIELD_NUMBER: _ClassVar[int]
    TOP_LOGPROBS_FIELD_NUMBER: _ClassVar[int]
    TOP_P_FIELD_NUMBER: _ClassVar[int]
    has_seed: bool
    max_tokens: int
    seed: int
    stop: _containers.RepeatedScalarFieldContainer[str]
    stop_token_ids: _containers.RepeatedScalarFieldContainer[int]
    temperature: float
    top_k: int
    top_logprobs: int
    top_p: float
    def __init__(self, temperature: _Optional[float] = ..., top_p: _Optional[float] = ..., max_tokens: _Optional[int] = ..., seed: _Optional[int] = ..., top_k: _Optional[int] = ..., stop: _Optional[_Iterable[str]] = ..., stop_token_ids: _Optional[_Iterable[int]] = ..., has_seed: bool = ..., top_logprobs: _Optional[int] = ...) -> None: ...

class TopLogprobs(_message.Message):
    __slots__ = ["logprobs", "token_ids"]
    LOGPROBS_FIELD_NUMBER: _ClassVar[int]
    TOKEN_IDS_FIELD_NUMBER: _ClassVar[int]
    logprobs: _containers.RepeatedScalarFieldContainer[float]
    token_ids: _containers.RepeatedScalarFieldContainer[int]
    def __init__(self, token_ids: _Optional[_Iterable[int]] = ..., logprobs: _Optional[_Iterable[float]] = ...) -> None: ...

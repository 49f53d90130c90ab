from crl.v1 import common_pb2 as _common_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from typing import ClassVar as _ClassVar, Iterable as _Iterable, Mapping as _Mapping, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor
EXEMPLAR_STRATEGY_BUCKETS: ExemplarStrategy
EXEMPLAR_STRATEGY_NONE: ExemplarStrategy
EXEMPLAR_STRATEGY_TOP_K: ExemplarStrategy
EXEMPLAR_STRATEGY_UNIFORM: ExemplarStrategy
EXEMPLAR_STRATEGY_UNSPECIFIED: ExemplarStrategy
PARSE_ERROR_MISSING_ANALYSIS: ParseError
PARSE_ERROR_MISSING_ENTRY_POINT: ParseError
PARSE_ERROR_MULTIPLE_CODE_BLOCKS: ParseError
PARSE_ERROR_NO_CODE_BLOCK: ParseError
PARSE_ERROR_TOO_LARGE: ParseError
PARSE_ERROR_TRUNCATED: ParseError
PARSE_ERROR_UNSPECIFIED: ParseError
PARSE_ERROR_WRONG_LANGUAGE: ParseError

class BuildPromptRequest(_message.Message):
    __slots__ = ["backend", "max_prompt_tokens", "num_exemplars", "pool", "reference_source", "seed", "selection", "task", "template_name"]
    BACKEND_FIELD_NUMBER: _ClassVar[int]
    MAX_PROMPT_TOKENS_FIELD_NUMBER: _ClassVar[int]
    NUM_EXEMPLARS_FIELD_NUMBER: _ClassVar[int]
    POOL_FIELD_NUMBER: _ClassVar[int]
    REFERENCE_SOURCE_FIELD_NUMBER: _ClassVar[int]
    SEED_FIELD_NUMBER: _ClassVar[int]
    SELECTION_FIELD_NUMBER: _ClassVar[int]
    TASK_FIELD_NUMBER: _ClassVar[int]
    TEMPLATE_NAME_FIELD_NUMBER: _ClassVar[int]
    backend: _common_pb2.Backend
    max_prompt_tokens: int
    num_exemplars: int
    pool: _containers.RepeatedCompositeFieldContainer[Exemplar]
    reference_source: str
    seed: int
    selection: ExemplarSelection
    task: _common_pb2.Task
    template_name: str
    def __init__(self, task: _Optional[_Union[_common_pb2.Task, _Mapping]] = ..., reference_source: _Optional[str] = ..., pool: _Optional[_Iterable[_Union[Exemplar, _Mapping]]] = ..., num_exemplars: _Optional[int] = ..., backend: _Optional[_Union[_common_pb2.Backend, str]] = ..., seed: _Optional[int] = ..., selection: _Optional[_Union[ExemplarSelection, _Mapping]] = ..., max_prompt_tokens: _Optional[int] = ..., template_name: _Optional[str] = ...) -> None: ...

class BuildPromptResponse(_message.Message):
    __slots__ = ["analyses_dropped", "estimated_tokens", "exemplar_ids", "exemplars_dropped", "messages", "notes", "prompt", "template_version"]
    ANALYSES_DROPPED_FIELD_NUMBER: _ClassVar[int]
    ESTIMATED_TOKENS_FIELD_NUMBER: _ClassVar[int]
    EXEMPLARS_DROPPED_FIELD_NUMBER: _ClassVar[int]
    EXEMPLAR_IDS_FIELD_NUMBER: _ClassVar[int]
    MESSAGES_FIELD_NUMBER: _ClassVar[int]
    NOTES_FIELD_NUMBER: _ClassVar[int]
    PROMPT_FIELD_NUMBER: _ClassVar[int]
    TEMPLATE_VERSION_FIELD_NUMBER: _ClassVar[int]
    analyses_dropped: int
    estimated_tokens: int
    exemplar_ids: _containers.RepeatedScalarFieldContainer[str]
    exemplars_dropped: int
    messages: _containers.RepeatedCompositeFieldContainer[ChatMessage]
    notes: _containers.RepeatedScalarFieldContainer[str]
    prompt: str
    template_version: str
    def __init__(self, prompt: _Optional[str] = ..., exemplar_ids: _Optional[_Iterable[str]] = ..., template_version: _Optional[str] = ..., messages: _Optional[_Iterable[_Union[ChatMessage, _Mapping]]] = ..., estimated_tokens: _Optional[int] = ..., exemplars_dropped: _Optional[int] = ..., analyses_dropped: _Optional[int] = ..., notes: _Optional[_Iterable[str]] = ...) -> None: ...

class ChatMessage(_message.Message):
    __slots__ = ["content", "role"]
    CONTENT_FIELD_NUMBER: _ClassVar[int]
    ROLE_FIELD_NUMBER: _ClassVar[int]
    content: str
    role: str
    def __init__(self, role: _Optional[str] = ..., content: _Optional[str] = ...) -> None: ...

class Exemplar(_message.Message):
    __slots__ = ["analysis", "flags", "policy_version", "source", "speedup", "variant_id", "verdict"]
    ANALYSIS_FIELD_NUMBER: _ClassVar[int]
    FLAGS_FIELD_NUMBER: _ClassVar[int]
    POLICY_VERSION_FIELD_NUMBER: _ClassVar[int]
    SOURCE_FIELD_NUMBER: _ClassVar[int]
    SPEEDUP_FIELD_NUMBER: _ClassVar[int]
    VARIANT_ID_FIELD_NUMBER: _ClassVar[int]
    VERDICT_FIELD_NUMBER: _ClassVar[int]
    analysis: str
    flags: _containers.RepeatedScalarFieldContainer[_common_pb2.Flag]
    policy_version: str
    source: str
    speedup: float
    variant_id: str
    verdict: _common_pb2.Verdict
    def __init__(self, variant_id: _Optional[str] = ..., source: _Optional[str] = ..., verdict: _Optional[_Union[_common_pb2.Verdict, str]] = ..., speedup: _Optional[float] = ..., flags: _Optional[_Iterable[_Union[_common_pb2.Flag, str]]] = ..., analysis: _Optional[str] = ..., policy_version: _Optional[str] = ...) -> None: ...

class ExemplarSelection(_message.Message):
    __slots__ = ["no_fast_guarantee", "num_buckets", "num_exemplars", "strategy", "temperature", "trusted_only"]
    NO_FAST_GUARANTEE_FIELD_NUMBER: _ClassVar[int]
    NUM_BUCKETS_FIELD_NUMBER: _ClassVar[int]
    NUM_EXEMPLARS_FIELD_NUMBER: _ClassVar[int]
    STRATEGY_FIELD_NUMBER: _ClassVar[int]
    TEMPERATURE_FIELD_NUMBER: _ClassVar[int]
    TRUSTED_ONLY_FIELD_NUMBER: _ClassVar[int]
    no_fast_guarantee: bool
    num_buckets: int
    num_exemplars: int
    strategy: ExemplarStrategy
    temperature: float
    trusted_only: bool
    def __init__(self, strategy: _Optional[_Union[ExemplarStrategy, str]] = ..., num_exemplars: _Optional[int] = ..., num_buckets: _Optional[int] = ..., temperature: _Optional[float] = ..., no_fast_guarantee: bool = ..., trusted_only: bool = ...) -> None: ...

class ParseCompletionRequest(_message.Message):
    __slots__ = ["backend", "completion", "finish_reason", "format", "require_analysis"]
    BACKEND_FIELD_NUMBER: _ClassVar[int]
    COMPLETION_FIELD_NUMBER: _ClassVar[int]
    FINISH_REASON_FIELD_NUMBER: _ClassVar[int]
    FORMAT_FIELD_NUMBER: _ClassVar[int]
    REQUIRE_ANALYSIS_FIELD_NUMBER: _ClassVar[int]
    backend: _common_pb2.Backend
    completion: str
    finish_reason: str
    format: _common_pb2.TaskFormat
    require_analysis: bool
    def __init__(self, completion: _Optional[str] = ..., backend: _Optional[_Union[_common_pb2.Backend, str]] = ..., finish_reason: _Optional[str] = ..., format: _Optional[_Union[_common_pb2.TaskFormat, str]] = ..., require_analysis: bool = ...) -> None: ...

class ParseCompletionResponse(_message.Message):
    __slots__ = ["analysis", "candidate", "design", "error", "error_detail", "language"]
    ANALYSIS_FIELD_NUMBER: _ClassVar[int]
    CANDIDATE_FIELD_NUMBER: _ClassVar[int]
    DESIGN_FIELD_NUMBER: _ClassVar[int]
    ERROR_DETAIL_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    LANGUAGE_FIELD_NUMBER: _ClassVar[int]
    analysis: str
    candidate: _common_pb2.Candidate
    design: str
    error: ParseError
    error_detail: str
    language: str
    def __init__(self, error: _Optional[_Union[ParseError, str]] = ..., analysis: _Optional[str] = ..., design: _Optional[str] = ..., candidate: _Optional[_Union[_common_pb2.Candidate, _Mapping]] = ..., error_detail: _Optional[str] = ..., language: _Optional[str] = ...) -> None: ...

class ExemplarStrategy(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = []

class ParseError(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = []

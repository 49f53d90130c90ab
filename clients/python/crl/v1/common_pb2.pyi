from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from typing import ClassVar as _ClassVar, Iterable as _Iterable, Mapping as _Mapping, Optional as _Optional, Union as _Union

BACKEND_CUDA: Backend
BACKEND_HOST: Backend
BACKEND_UNSPECIFIED: Backend
DESCRIPTOR: _descriptor.FileDescriptor
DTYPE_BFLOAT16: DType
DTYPE_BOOL: DType
DTYPE_FLOAT16: DType
DTYPE_FLOAT32: DType
DTYPE_FLOAT64: DType
DTYPE_INT32: DType
DTYPE_INT64: DType
DTYPE_INT8: DType
DTYPE_UINT8: DType
DTYPE_UNSPECIFIED: DType
FLAG_BELOW_PHYSICAL_FLOOR: Flag
FLAG_DEGENERATE_TASK: Flag
FLAG_GLOBAL_FLAGS: Flag
FLAG_IMPLAUSIBLE_JUMP: Flag
FLAG_JUDGED_CHEAT: Flag
FLAG_NOISY: Flag
FLAG_NO_CUSTOM_KERNEL: Flag
FLAG_SIDE_STREAM: Flag
FLAG_TIMER_MISMATCH: Flag
FLAG_UNSPECIFIED: Flag
FLAG_WRITE_AFTER_RETURN: Flag
TASK_FORMAT_KERNELBENCH: TaskFormat
TASK_FORMAT_NATIVE: TaskFormat
TASK_FORMAT_UNSPECIFIED: TaskFormat
VERDICT_COMPILE_ERROR: Verdict
VERDICT_INFRA_ERROR: Verdict
VERDICT_OK: Verdict
VERDICT_RESOURCE_LIMIT: Verdict
VERDICT_RUNTIME_ERROR: Verdict
VERDICT_SANDBOX_VIOLATION: Verdict
VERDICT_TIMEOUT: Verdict
VERDICT_UNSPECIFIED: Verdict
VERDICT_WRONG_ANSWER: Verdict

class Candidate(_message.Message):
    __slots__ = ["backend", "filename", "source"]
    BACKEND_FIELD_NUMBER: _ClassVar[int]
    FILENAME_FIELD_NUMBER: _ClassVar[int]
    SOURCE_FIELD_NUMBER: _ClassVar[int]
    backend: Backend
    filename: str
    source: str
    def __init__(self, source: _Optional[str] = ..., filename: _Optional[str] = ..., backend: _Optional[_Union[Backend, str]] = ...) -> None: ...

class CorrectnessReport(_message.Message):
    __slots__ = ["first_mismatch_index", "first_mismatch_output", "max_abs_error", "max_rel_error", "messages", "mismatch_count", "only_tolerance_mismatches", "trials", "trials_passed"]
    FIRST_MISMATCH_INDEX_FIELD_NUMBER: _ClassVar[int]
    FIRST_MISMATCH_OUTPUT_FIELD_NUMBER: _ClassVar[int]
    MAX_ABS_ERROR_FIELD_NUMBER: _ClassVar[int]
    MAX_REL_ERROR_FIELD_NUMBER: _ClassVar[int]
    MESSAGES_FIELD_NUMBER: _ClassVar[int]
    MISMATCH_COUNT_FIELD_NUMBER: _ClassVar[int]
    ONLY_TOLERANCE_MISMATCHES_FIELD_NUMBER: _ClassVar[int]
    TRIALS_FIELD_NUMBER: _ClassVar[int]
    TRIALS_PASSED_FIELD_NUMBER: _ClassVar[int]
    first_mismatch_index: int
    first_mismatch_output: str
    max_abs_error: float
    max_rel_error: float
    messages: _containers.RepeatedScalarFieldContainer[str]
    mismatch_count: int
    only_tolerance_mismatches: bool
    trials: int
    trials_passed: int
    def __init__(self, trials: _Optional[int] = ..., trials_passed: _Optional[int] = ..., max_abs_error: _Optional[float] = ..., max_rel_error: _Optional[float] = ..., mismatch_count: _Optional[int] = ..., first_mismatch_index: _Optional[int] = ..., first_mismatch_output: _Optional[str] = ..., messages: _Optional[_Iterable[str]] = ..., only_tolerance_mismatches: bool = ...) -> None: ...

class FieldViolation(_message.Message):
    __slots__ = ["description", "field"]
    DESCRIPTION_FIELD_NUMBER: _ClassVar[int]
    FIELD_FIELD_NUMBER: _ClassVar[int]
    description: str
    field: str
    def __init__(self, field: _Optional[str] = ..., description: _Optional[str] = ...) -> None: ...

class File(_message.Message):
    __slots__ = ["content", "path"]
    CONTENT_FIELD_NUMBER: _ClassVar[int]
    PATH_FIELD_NUMBER: _ClassVar[int]
    content: bytes
    path: str
    def __init__(self, path: _Optional[str] = ..., content: _Optional[bytes] = ...) -> None: ...

class Task(_message.Message):
    __slots__ = ["files", "format", "name", "path"]
    FILES_FIELD_NUMBER: _ClassVar[int]
    FORMAT_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    PATH_FIELD_NUMBER: _ClassVar[int]
    files: _containers.RepeatedCompositeFieldContainer[File]
    format: TaskFormat
    name: str
    path: str
    def __init__(self, format: _Optional[_Union[TaskFormat, str]] = ..., path: _Optional[str] = ..., files: _Optional[_Iterable[_Union[File, _Mapping]]] = ..., name: _Optional[str] = ...) -> None: ...

class Tensor(_message.Message):
    __slots__ = ["data", "dtype", "name", "shape"]
    DATA_FIELD_NUMBER: _ClassVar[int]
    DTYPE_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    SHAPE_FIELD_NUMBER: _ClassVar[int]
    data: bytes
    dtype: DType
    name: str
    shape: _containers.RepeatedScalarFieldContainer[int]
    def __init__(self, name: _Optional[str] = ..., dtype: _Optional[_Union[DType, str]] = ..., shape: _Optional[_Iterable[int]] = ..., data: _Optional[bytes] = ...) -> None: ...

class TimingSample(_message.Message):
    __slots__ = ["device_sync_seconds", "host_seconds", "stream_event_seconds"]
    DEVICE_SYNC_SECONDS_FIELD_NUMBER: _ClassVar[int]
    HOST_SECONDS_FIELD_NUMBER: _ClassVar[int]
    STREAM_EVENT_SECONDS_FIELD_NUMBER: _ClassVar[int]
    device_sync_seconds: float
    host_seconds: float
    stream_event_seconds: float
    def __init__(self, stream_event_seconds: _Optional[float] = ..., device_sync_seconds: _Optional[float] = ..., host_seconds: _Optional[float] = ...) -> None: ...

class DType(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = []

class Backend(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = []

class TaskFormat(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = []

class Verdict(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = []

class Flag(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = []

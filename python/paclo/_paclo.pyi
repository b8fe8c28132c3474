from os import PathLike

__all__ = [
    "ADDRESS_TEXT_MAX_ROWS",
    "ArrowStream",
    "Capture",
    "FanOut",
    "FanOutBranch",
    "FlowStream",
    "Packet",
    "PcapWriter",
    "Reader",
    "__version__",
    "address_text",
    "count_packets",
    "dataset_expected",
    "dataset_frame",
    "decode_bytes",
    "devices",
    "fingerprint_methods",
    "fingerprint_table",
    "flow_project",
    "flow_stream",
    "flow_table",
    "flow_topn",
    "generate_dataset",
    "immediate_plan",
    "libpcap_version",
    "native_alloc_counts",
    "open_capture",
    "protocol_names",
    "read",
    "read_batches",
    "reduce",
    "set_decode_hooks",
    "start_fan_out",
    "tcp_flag_strings",
    "udp_generate",
]
__version__: str

# --- foundation ---
from collections.abc import Callable, Iterable, Sequence
from types import GenericAlias
from typing import Any, Generic, Literal, Self, TypeVar, final, overload

from typing_extensions import disjoint_base

from paclo._options import LiveSource as _LiveSource
from paclo._progress import Display as _ProgressDisplay

@final
class Packet:
    def __new__(
        cls, data: bytes | bytearray | memoryview, ts_ns: int = 0, wirelen: int | None = None, linktype: int = 1
    ) -> Packet: ...
    def __reduce__(self) -> tuple[type[Packet], tuple[bytes, int, int, int]]: ...
    @property
    def ts_ns(self) -> int: ...
    @property
    def ts(self) -> float: ...
    @property
    def ts_sec(self) -> int: ...
    @property
    def ts_usec(self) -> int: ...
    @property
    def caplen(self) -> int: ...
    @property
    def wirelen(self) -> int: ...
    @property
    def linktype(self) -> int: ...
    @property
    def data(self) -> bytes: ...
    def __bytes__(self) -> bytes: ...
    def __len__(self) -> int: ...
    def decode(self) -> dict[str, Any]: ...
    def __eq__(self, other: object, /) -> bool: ...
    def __hash__(self) -> int: ...

# What an iterator of packets yields: Packet, or a dict with decode="full"/"flow".
_T_co = TypeVar("_T_co", covariant=True)
_T = TypeVar("_T")

@final
class Reader(Generic[_T_co]):
    def __class_getitem__(cls, item: object) -> GenericAlias: ...
    def __iter__(self) -> Self: ...
    def __next__(self) -> _T_co: ...
    def __enter__(self) -> Self: ...
    def __exit__(self, exc_type: object, exc: object, tb: object) -> Literal[False]: ...
    def stats(self) -> dict[str, Any]: ...
    def close(self) -> None: ...
    @property
    def closed(self) -> bool: ...
    @property
    def format(self) -> Literal["pcap", "pcapng"] | None: ...
    @property
    def linktype(self) -> int | None: ...
    @property
    def snaplen(self) -> int | None: ...

@disjoint_base
class PcapWriter:
    def __new__(
        cls, path: str | PathLike[str], *, linktype: int = 1, snaplen: int = 262144, nanosecond: bool = False
    ) -> Self: ...
    def write(self, packet: Packet | bytes | bytearray | memoryview | dict[str, Any], ts_ns: int | None = None) -> None: ...
    def write_all(self, packets: Iterable[Any]) -> int: ...
    @property
    def count(self) -> int: ...
    @property
    def closed(self) -> bool: ...
    def close(self) -> None: ...
    def __enter__(self) -> Self: ...
    def __exit__(self, exc_type: object, exc: object, tb: object) -> Literal[False]: ...

@overload
def read(
    path: str | PathLike[str],
    *,
    filter: str | None = None,
    decode: None = None,
    limit: int | None = None,
    progress: _ProgressDisplay | None = None,
    strict: bool = False,
) -> Reader[Packet]: ...
@overload
def read(
    path: str | PathLike[str],
    *,
    filter: str | None = None,
    decode: Literal["full", "flow"],
    limit: int | None = None,
    progress: _ProgressDisplay | None = None,
    strict: bool = False,
) -> Reader[dict[str, Any]]: ...
def reduce(
    func: Callable[[Any, Any], Any],
    init: Any,
    source: str | PathLike[str] | _LiveSource,
    *,
    reduced_type: type,
    filter: str | None = None,
    decode: Literal["full", "flow"] | None = None,
    limit: int | None = None,
    strict: bool = False,
    stop_when: Callable[[Any], Any] | None = None,
    on_stats: Callable[[dict[str, Any]], Any] | None = None,
    on_error: Callable[[BaseException], Any] | None = None,
    error_mode: str = "raise",
) -> tuple[Any, dict[str, Any]]: ...
def count_packets(path: str | PathLike[str], *, filter: str | None = None, limit: int | None = None) -> tuple[int, int]: ...
def native_alloc_counts() -> tuple[int, int]: ...
def generate_dataset(
    case: str, count: int, path: str | PathLike[str], *, progress: _ProgressDisplay | None = None
) -> tuple[int, int, int]: ...
def dataset_expected(case: str, count: int) -> tuple[int, int]: ...
def dataset_frame(case: str, index: int) -> bytes: ...
def udp_generate(
    host: str,
    port: int,
    rate: int,
    *,
    packets: int | None = None,
    duration_ms: int | None = None,
    frame_size: int = 64,
    senders: int = 1,
    batch: int = 64,
    start_delay_ms: int = 0,
    cpus: Sequence[int] | None = None,
) -> dict[str, Any]: ...

# --- decoder ---
def decode_bytes(data: bytes, linktype: int) -> dict[str, object]: ...
def set_decode_hooks(hooks: tuple[object, ...]) -> None: ...
# --- flows ---

@final
class ArrowStream:
    def __arrow_c_schema__(self) -> object: ...
    def __arrow_c_stream__(self, requested_schema: object | None = None) -> object: ...
    def __iter__(self) -> ArrowStream: ...
    def __next__(self) -> Any: ...

def flow_project(
    source: Sequence[str | PathLike[str]] | _LiveSource,
    *,
    filter: str | None = None,
    batch_size: int = 1048576,
    flow_id: bool = False,
    bidirectional: bool = False,
    idle_timeout: float | None = None,
    active_timeout: float | None = None,
    max_flows: int | None = None,
    progress: _ProgressDisplay | None = None,
    threads: int | None = None,
) -> ArrowStream: ...
def flow_table(
    source: Sequence[str | PathLike[str]] | _LiveSource,
    *,
    bidirectional: bool = False,
    idle_timeout: float | None = None,
    active_timeout: float | None = None,
    filter: str | None = None,
    features: Sequence[str] = ...,
    splt: int = 10,
    max_flows: int | None = None,
    flow_id: bool = False,
    progress: _ProgressDisplay | None = None,
    threads: int | None = None,
) -> ArrowStream: ...
@final
class FlowStream:
    def __arrow_c_schema__(self) -> object: ...
    def __iter__(self) -> FlowStream: ...
    def __next__(self) -> Any: ...
    def stats(self) -> dict[str, Any]: ...
    def stop(self) -> None: ...
    def close(self) -> None: ...
    def __enter__(self) -> FlowStream: ...
    def __exit__(self, *exc: object) -> Literal[False]: ...

def flow_stream(
    source: Sequence[str | PathLike[str]] | _LiveSource,
    *,
    bidirectional: bool = False,
    idle_timeout: float | None = None,
    active_timeout: float | None = None,
    filter: str | None = None,
    features: Sequence[str] = ...,
    splt: int = 10,
    max_flows: int | None = None,
    batch_rows: int = 65536,
) -> FlowStream: ...
def flow_topn(
    source: Sequence[str | PathLike[str]] | _LiveSource,
    n: int,
    *,
    by_bytes: bool,
    bidirectional: bool,
    filter: str | None,
    progress: _ProgressDisplay | None = None,
    threads: int | None = None,
) -> tuple[list[dict[str, Any]], int, int]: ...
def read_batches(
    source: str | PathLike[str] | _LiveSource, *, batch_size: int = 65536, filter: str | None = None
) -> ArrowStream: ...
def fingerprint_methods() -> list[str]: ...
def fingerprint_table(
    source: Sequence[str | PathLike[str]] | _LiveSource, *, methods: Sequence[str], filter: str | None = None
) -> ArrowStream: ...
# --- live ---

@final
class Capture(Generic[_T_co]):
    def __class_getitem__(cls, item: object) -> GenericAlias: ...
    def __iter__(self) -> Self: ...
    def __next__(self) -> _T_co: ...
    def __enter__(self) -> Self: ...
    def __exit__(self, *exc: object) -> Literal[False]: ...
    def stop(self) -> None: ...
    def close(self) -> None: ...
    @property
    def state(self) -> str: ...
    def stats(self) -> dict[str, Any]: ...

def open_capture(
    *,
    device: str | None,
    path: str | PathLike[str] | None,
    filter: str | None,
    snaplen: int,
    promisc: bool,
    timeout_ms: int,
    buffer_size: int | None,
    immediate: bool | None,
    decode: str | None,
    queue_cap: int,
    queue_mode: str,
    limit: int | None,
    duration: float | None,
    idle_timeout: float | None,
    stop_when: Callable[[Any], Any] | None,
    on_ready: Callable[[], Any] | None,
    on_stats: Callable[[dict[str, Any]], Any] | None,
    on_queue_stats: Callable[[dict[str, Any]], Any] | None,
    on_error: Callable[[BaseException], Any] | None,
    error_mode: str,
) -> Capture[Any]: ...
def devices() -> list[dict[str, Any]]: ...
def libpcap_version() -> str: ...
def immediate_plan(device: str, snaplen: int, buffer_size: int | None) -> tuple[int, int] | None: ...

@final
class FanOut(Generic[_T_co]):
    def __class_getitem__(cls, item: object) -> GenericAlias: ...
    def branch(self, name: str) -> FanOutBranch[_T_co]: ...
    def __getitem__(self, name: str, /) -> FanOutBranch[_T_co]: ...
    @property
    def names(self) -> list[str]: ...
    def stats(self) -> dict[str, Any]: ...
    def close(self) -> None: ...
    def __enter__(self) -> Self: ...
    def __exit__(self, *exc: object) -> Literal[False]: ...

@final
class FanOutBranch(Generic[_T_co]):
    def __class_getitem__(cls, item: object) -> GenericAlias: ...
    def __iter__(self) -> Self: ...
    def __next__(self) -> _T_co: ...
    def close(self) -> None: ...
    @property
    def name(self) -> str: ...

def start_fan_out(capture: Capture[_T], branches: list[tuple[str, str, int]]) -> FanOut[_T]: ...

# --- analysis view ---
ADDRESS_TEXT_MAX_ROWS: int

def address_text(
    rows: int, addrs: bytes, validity: bytes | None = None, bit_offset: int = 0, versions: bytes | None = None
) -> tuple[bytes, bytes, bytes | None, int]: ...
def protocol_names() -> list[str | None]: ...
def tcp_flag_strings() -> list[str]: ...

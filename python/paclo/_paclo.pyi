from os import PathLike

__version__: str

class Packet:
    @property
    def ts_ns(self) -> int: ...
    @property
    def caplen(self) -> int: ...
    @property
    def wirelen(self) -> int: ...
    @property
    def linktype(self) -> int: ...
    @property
    def data(self) -> bytes: ...
    def __bytes__(self) -> bytes: ...

class Reader:
    def __iter__(self) -> Reader: ...
    def __next__(self) -> object: ...
    def close(self) -> None: ...

def read(path: str | PathLike[str], *, decode: str | None = None) -> Reader: ...
def native_alloc_counts() -> tuple[int, int]: ...

# --- live ---
from collections.abc import Callable
from typing import Any

class Capture:
    def __iter__(self) -> Capture: ...
    def __next__(self) -> Any: ...
    def __enter__(self) -> Capture: ...
    def __exit__(self, *exc: object) -> bool: ...
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
) -> Capture: ...
def reduce_device(
    fn_: Callable[[Any, Any], Any],
    init: Any,
    *,
    device: str,
    decode: str | None,
    filter: str | None,
    limit: int | None,
    duration: float | None,
    idle_timeout: float | None,
    snaplen: int,
    promisc: bool,
    timeout_ms: int,
    buffer_size: int | None,
    immediate: bool | None,
    stop_when: Callable[[Any], Any] | None,
    on_ready: Callable[[], Any] | None,
    on_stats: Callable[[dict[str, Any]], Any] | None,
    on_error: Callable[[BaseException], Any] | None,
    error_mode: str,
    report: bool,
) -> Any: ...
def devices() -> list[dict[str, Any]]: ...
def libpcap_version() -> str: ...
def immediate_plan(device: str, snaplen: int, buffer_size: int | None) -> tuple[int, int]: ...

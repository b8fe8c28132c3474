"""The analysis view: flow and projection tables in types people read.

paclo's tables are lossless and numeric (16-byte addresses, protocol numbers, nanosecond
integers), which keeps them fast to build and exact to join. The analysis view turns one
into text addresses, ``timestamp[ns, UTC]`` times, ``duration[ns]`` durations, protocol
names and TCP flag letters, in Arrow, and hands it to pandas with nullable integers or to
polars. Address text is formatted natively into Arrow string buffers, with no Python
object per row.
"""

from __future__ import annotations

import ipaddress
from typing import TYPE_CHECKING, Any, Literal

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from . import _paclo

if TYPE_CHECKING:
    import pandas
    import polars

__all__ = ["analysis_view", "ip_range", "ip_to_bytes", "to_pandas", "to_polars"]

# Schema metadata key that marks a table as an analysis view.
VIEW_KEY = b"paclo.view"
ANALYSIS = b"analysis"

ADDRESS_COLUMNS = ("src_ip", "dst_ip")

_names: dict[str, pa.Array] = {}


def _string_array(values: list[str]) -> pa.Array:
    # From buffers: pa.array asks pandas whether the list is a Series, and so imports pandas
    # (a second or more) on the first view of a process.
    data = [v.encode() for v in values]
    offsets = np.zeros(len(data) + 1, dtype=np.int32)
    np.cumsum([len(d) for d in data], out=offsets[1:])
    return pa.StringArray.from_buffers(len(data), pa.py_buffer(offsets), pa.py_buffer(b"".join(data)))


def _name_table(kind: str) -> pa.Array:
    """The 256-entry string array that maps a protocol number or a TCP flags byte to text."""
    table = _names.get(kind)
    if table is None:
        if kind == "protocol":
            values = [name if name is not None else str(i) for i, name in enumerate(_paclo.protocol_names())]
        else:
            values = _paclo.tcp_flag_strings()
        table = _string_array(values)
        _names[kind] = table
    return table


# A zero taken from an array: pa.scalar(0) would import pandas (it checks for pandas.NA).
_UINT8_ZERO = pa.Array.from_buffers(pa.uint8(), 1, [None, pa.py_buffer(b"\0")])[0]


def _fixed16(arr: pa.Array) -> pa.Array:
    if pa.types.is_fixed_size_binary(arr.type) and arr.type.byte_width == 16:
        return arr
    if pa.types.is_binary(arr.type) or pa.types.is_large_binary(arr.type) or pa.types.is_null(arr.type):
        try:
            return arr.cast(pa.binary(16))
        except pa.ArrowInvalid as exc:
            raise ValueError(f"addresses must be 16 bytes each: {exc}") from None
    raise TypeError(f"addresses must be 16-byte binary (fixed_size_binary(16) or binary), not {arr.type}")


def _slice_bytes(buf: pa.Buffer | None, start: int, stop: int) -> bytes | None:
    return None if buf is None else bytes(memoryview(buf)[start:stop])


def _text_chunk(arr: pa.Array, versions: pa.Array | None) -> pa.Array:
    """One ``fixed_size_binary(16)`` array of at most ADDRESS_TEXT_MAX_ROWS rows as text."""
    n, off = len(arr), arr.offset
    validity, data = arr.buffers()[:2]
    addrs = _slice_bytes(data, off * 16, (off + n) * 16) if n else b""
    valid = _slice_bytes(validity, off // 8, (off + n + 7) // 8) if arr.null_count else None
    vers = None
    if versions is not None:
        v = versions.cast(pa.uint8()).fill_null(_UINT8_ZERO)
        vers = _slice_bytes(v.buffers()[1], v.offset, v.offset + n) if n else b""
    offsets, values, out_valid, nulls = _paclo.address_text(n, addrs or b"", valid, off % 8 if valid else 0, vers)
    bitmap = pa.py_buffer(out_valid) if out_valid is not None else None
    return pa.StringArray.from_buffers(n, pa.py_buffer(offsets), pa.py_buffer(values), bitmap, nulls)


def address_strings(column: pa.Array | pa.ChunkedArray, versions: pa.Array | pa.ChunkedArray | None = None) -> pa.ChunkedArray:
    """Text of a column of 16-byte addresses: a dotted quad for IPv4 (stored IPv4-mapped),
    RFC 5952 text for IPv6, ``::ffff:a.b.c.d`` for a mapped address in a row whose
    ``versions`` value is 6. Nulls stay null. Returns a ``string`` ChunkedArray."""
    chunks = column.chunks if isinstance(column, pa.ChunkedArray) else [column]
    if versions is not None:
        if len(versions) != len(column):
            raise ValueError(f"version has {len(versions)} rows, the addresses {len(column)}")
        flat = versions.combine_chunks() if isinstance(versions, pa.ChunkedArray) else versions
        if not pa.types.is_integer(flat.type) and not pa.types.is_null(flat.type):
            raise TypeError(f"version must be an integer column (4 or 6), not {flat.type}")
    step = _paclo.ADDRESS_TEXT_MAX_ROWS
    out: list[pa.Array] = []
    start = 0
    for chunk in chunks:
        chunk = _fixed16(chunk)
        for at in range(0, max(len(chunk), 1), step):
            part = chunk.slice(at, step)
            ver = None if versions is None else flat.slice(start + at, len(part))
            out.append(_text_chunk(part, ver))
        start += len(chunk)
    return pa.chunked_array(out, type=pa.string())


def _is_ts_name(name: str) -> bool:
    return name == "ts_ns" or name.endswith("_ts_ns")


def _new_name(name: str, names: set[str]) -> str:
    """``ts_ns`` -> ``ts``, ``first_ts_ns`` -> ``first_ts``, ``duration_ns`` -> ``duration``,
    unless the shorter name is taken."""
    short = name[: -len("_ns")]
    return name if short in names else short


def as_table(table: Any) -> pa.Table:
    """A pyarrow Table from a Table, a RecordBatch or anything with ``__arrow_c_stream__``."""
    if isinstance(table, pa.Table):
        return table
    if isinstance(table, pa.RecordBatch):
        return pa.Table.from_batches([table])
    if hasattr(table, "__arrow_c_stream__"):
        return pa.RecordBatchReader.from_stream(table).read_all()
    raise TypeError(f"table must be a pyarrow Table or RecordBatch (from paclo.flows or paclo.project), not {type(table).__name__}")


def is_analysis_view(table: pa.Table) -> bool:
    """Whether ``table`` is already an analysis view (its schema metadata says so)."""
    return (table.schema.metadata or {}).get(VIEW_KEY) == ANALYSIS


def analysis_view(table: Any) -> pa.Table:
    """``table`` (from ``paclo.flows``, ``paclo.project`` or a Parquet file of them) in types
    people read, as a new pyarrow Table:

    - ``src_ip``/``dst_ip``: text (dotted quad for IPv4, RFC 5952 for IPv6);
    - ``protocol``: a name (``"tcp"``, ``"udp"``, ``"icmp"``, ``"icmp6"``, ... or the number as text);
    - ``tcp_flags`` stays a number, and ``tcp_flags_str`` beside it has the letters (``"AS"``);
    - ``ts_ns``, ``first_ts_ns``, ``last_ts_ns`` (any ``*_ts_ns``): ``timestamp[ns, UTC]``
      named without ``_ns`` (``ts``, ``first_ts``, ``last_ts``);
    - other ``*_ns`` integers (``duration_ns``): ``duration[ns]`` named without ``_ns``;
    - every other column (ports, counts, VLAN ids) as it was, nulls kept as nulls.

    Columns keep their order; the schema metadata is kept and gains ``paclo.view:
    analysis``. A table that is already an analysis view is returned as it is.
    """
    table = as_table(table)
    if is_analysis_view(table):
        return table
    names = set(table.column_names)
    version = table.column("ip_version") if "ip_version" in names else None
    fields: list[pa.Field] = []
    columns: list[pa.ChunkedArray] = []

    def add(name: str, column: pa.ChunkedArray, nullable: bool) -> None:
        fields.append(pa.field(name, column.type, nullable=nullable))
        columns.append(column)

    for field in table.schema:
        name, column = field.name, table.column(field.name)
        if name in ADDRESS_COLUMNS and (pa.types.is_fixed_size_binary(field.type) or pa.types.is_binary(field.type)):
            add(name, address_strings(column, version), field.nullable)
        elif name == "protocol" and pa.types.is_integer(field.type):
            add(name, pc.take(_name_table("protocol"), column.cast(pa.uint8())), field.nullable)
        elif name == "tcp_flags" and pa.types.is_integer(field.type):
            add(name, column, field.nullable)
            if "tcp_flags_str" not in names:
                add("tcp_flags_str", pc.take(_name_table("tcp_flags"), column.cast(pa.uint8())), field.nullable)
        elif name.endswith("_ns") and pa.types.is_integer(field.type):
            unit_type = pa.timestamp("ns", tz="UTC") if _is_ts_name(name) else pa.duration("ns")
            add(_new_name(name, names), column.cast(pa.int64()).cast(unit_type), field.nullable)
        else:
            add(name, column, field.nullable)
    metadata = dict(table.schema.metadata or {})
    metadata[VIEW_KEY] = ANALYSIS
    return pa.Table.from_arrays(columns, schema=pa.schema(fields, metadata=metadata))


def _nullable_dtypes() -> dict[pa.DataType, Any]:
    import pandas as pd

    return {
        pa.int8(): pd.Int8Dtype(),
        pa.int16(): pd.Int16Dtype(),
        pa.int32(): pd.Int32Dtype(),
        pa.int64(): pd.Int64Dtype(),
        pa.uint8(): pd.UInt8Dtype(),
        pa.uint16(): pd.UInt16Dtype(),
        pa.uint32(): pd.UInt32Dtype(),
        pa.uint64(): pd.UInt64Dtype(),
        pa.bool_(): pd.BooleanDtype(),
        pa.string(): pd.StringDtype("pyarrow"),
        pa.large_string(): pd.StringDtype("pyarrow"),
    }


def to_pandas(table: Any, *, dtype_backend: Literal["numpy_nullable", "pyarrow"] = "numpy_nullable") -> pandas.DataFrame:
    """The analysis view of ``table`` as a pandas DataFrame.

    ``dtype_backend`` is pandas' own vocabulary: ``"numpy_nullable"`` (the default) gives
    nullable integers (``UInt16`` ports, ``UInt8`` flags, ``UInt64`` counters; missing
    values are ``<NA>``, never float NaN), ``string`` addresses and protocol names,
    ``datetime64[ns, UTC]`` times and ``timedelta64[ns]`` durations; ``"pyarrow"`` keeps every
    column Arrow-backed (``pd.ArrowDtype``).
    """
    import pandas as pd

    view = analysis_view(table)
    if dtype_backend == "numpy_nullable":
        mapping = _nullable_dtypes()
        return view.to_pandas(types_mapper=mapping.get)
    if dtype_backend == "pyarrow":
        return view.to_pandas(types_mapper=pd.ArrowDtype)
    raise ValueError(f"dtype_backend must be 'numpy_nullable' or 'pyarrow', not {dtype_backend!r}")


def to_polars(table: Any) -> polars.DataFrame:
    """The analysis view of ``table`` as a polars DataFrame (``String`` addresses and protocol
    names, ``Datetime("ns", "UTC")`` times, ``Duration("ns")`` durations, integers with nulls)."""
    import polars as pl

    frame = pl.from_arrow(analysis_view(table))
    if not isinstance(frame, pl.DataFrame):  # pragma: no cover - a Table always gives a DataFrame
        raise TypeError("polars did not return a DataFrame")
    return frame


def _address(value: Any) -> ipaddress.IPv4Address | ipaddress.IPv6Address:
    if isinstance(value, (ipaddress.IPv4Address, ipaddress.IPv6Address)):
        return value
    if not isinstance(value, str):
        raise TypeError(f"address must be a str or an ipaddress address, not {type(value).__name__}")
    try:
        return ipaddress.ip_address(value)
    except ValueError:
        raise ValueError(f"not an IPv4 or IPv6 address: {value!r}") from None


def _stored(addr: ipaddress.IPv4Address | ipaddress.IPv6Address) -> bytes:
    if isinstance(addr, ipaddress.IPv4Address):
        return b"\x00" * 10 + b"\xff\xff" + addr.packed
    return addr.packed


def ip_to_bytes(address: Any) -> bytes:
    """The 16 bytes a lossless table stores for ``address`` (``"10.1.1.2"``, ``"2001:db8::1"``
    or an ``ipaddress`` object): IPv4 as IPv4-mapped IPv6, network byte order.

    Use it to filter the lossless tables, e.g. in duckdb
    ``duckdb.sql("select * from flows where src_ip = $ip", params={"ip": paclo.ip_to_bytes("10.1.1.2")})``.
    """
    return _stored(_address(address))


def ip_range(network: Any) -> tuple[bytes, bytes]:
    """The first and last stored address (16 bytes each, inclusive) of ``network``
    (``"10.0.0.0/8"``, ``"2001:db8::/32"``, or an ``ipaddress`` network). Stored addresses
    sort as 128-bit numbers, so ``src_ip between $lo and $hi`` selects the network.

    Host bits are allowed (``"10.1.2.3/8"`` is ``10.0.0.0/8``)."""
    if isinstance(network, (ipaddress.IPv4Network, ipaddress.IPv6Network)):
        net = network
    elif isinstance(network, str):
        try:
            net = ipaddress.ip_network(network, strict=False)
        except ValueError:
            raise ValueError(f"not an IPv4 or IPv6 network: {network!r}") from None
    else:
        raise TypeError(f"network must be a str or an ipaddress network, not {type(network).__name__}")
    return _stored(net.network_address), _stored(net.broadcast_address)

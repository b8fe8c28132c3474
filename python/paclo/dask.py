"""Captures as Dask dataframes: one partition per capture file.

::

    import paclo.dask
    from distributed import Client

    client = Client("tcp://scheduler:8786")          # or a LocalCluster, or no client at all
    flows = paclo.dask.read_flows("captures/", bidirectional=True)
    merged = paclo.dask.merge_flows(flows)           # flows that span files, merged
    merged.nlargest(10, "bytes").compute()

Each partition is built where it runs: the worker reads its capture with paclo (so the
captures must be at the same path on every worker: shared storage) and turns the
table into pandas with pyarrow-backed dtypes (``pd.ArrowDtype``), so integers stay
unsigned and nullable and addresses stay 16-byte values. The dataframe's ``meta`` is
paclo's own schema, computed without reading any capture, so building the graph reads
nothing. A ``capture`` column (the capture's name, as in :func:`paclo.to_parquet`)
comes first.

This module needs ``pip install "paclo[dask]"`` (dask[dataframe] and distributed);
nothing else in paclo imports it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

try:
    import dask.dataframe as dd
    import pandas as pd
except ImportError as e:  # pragma: no cover - exercised without the extra installed
    raise ImportError(f'paclo.dask needs dask[dataframe]: pip install "paclo[dask]" ({e})') from e

from ._scale import CAPTURE_COLUMN, Options, Source, captures

__all__ = ["FLOW_KEY", "merge_flows", "read_flows", "read_projection"]

#: The columns that identify a flow; ``merge_flows`` groups on them.
FLOW_KEY = ("ip_version", "protocol", "src_ip", "dst_ip", "src_port", "dst_port", "vlan_id")
# Counters that add up across files: packets, bytes and their per-direction forms.
_SUMMED_SUFFIXES = ("packets", "bytes")
_MERGED = ("first_ts_ns", "last_ts_ns", "duration_ns", "tcp_flags")
_TCP_FLAG_BITS = 8


def _pandas(table: pa.Table) -> Any:
    return table.to_pandas(types_mapper=pd.ArrowDtype)


@dataclass(frozen=True)
class _Partition:
    """Builds the partition of one capture (pickled to the workers)."""

    options: Options

    def __call__(self, source: Source) -> Any:
        table = self.options.table(source.path)
        batches = [self.options.with_capture(b, source.name) for b in table.to_batches()]
        schema = self.options.schema_with_capture()
        return _pandas(pa.Table.from_batches(batches, schema=schema) if batches else schema.empty_table())


def _read(paths: Any, options: Options, label: str) -> Any:
    sources = captures(paths)
    if not sources:
        raise FileNotFoundError(2, f"no capture files in {paths!r}")
    meta = _pandas(options.schema_with_capture().empty_table())
    return dd.from_map(_Partition(options), sources, meta=meta, label=label, enforce_metadata=False)


def read_flows(
    paths: Any,
    *,
    bidirectional: bool = False,
    idle_timeout: float | None = None,
    active_timeout: float | None = None,
    filter: str | None = None,
) -> Any:
    """A ``dask.dataframe.DataFrame`` of the flows of each capture, one partition per
    capture (``paclo.flows`` of that file, with these options).

    ``paths`` is a capture file, a directory (its capture files, recursively) or a list
    of them. A flow that spans files has a row per file; :func:`merge_flows` merges them.
    """
    options = Options.make(
        "flows", filter=filter, bidirectional=bidirectional, idle_timeout=idle_timeout, active_timeout=active_timeout
    )
    return _read(paths, options, "paclo-flows")


def read_projection(paths: Any, *, filter: str | None = None) -> Any:
    """A ``dask.dataframe.DataFrame`` with one row per packet (``paclo.project``), one
    partition per capture."""
    return _read(paths, Options.make("projection", filter=filter), "paclo-projection")


def merge_flows(flows: Any, *, split_out: int = 1, split_every: int | None = None) -> Any:
    """Merge the rows of flows that span files: one row per flow key.

    ``flows`` is a Dask (or pandas) dataframe of flow rows, from :func:`read_flows` or
    from the Parquet outputs of ``to_parquet(kind="flows")``. Rows are grouped on
    ``FLOW_KEY`` (nulls are values: port-less flows and untagged frames group
    together); ``packets``, ``bytes`` and every other ``*_packets`` or ``*_bytes``
    counter (the per-direction ones) are summed,
    ``first_ts_ns`` is the minimum, ``last_ts_ns`` the maximum, ``duration_ns`` their
    difference, ``tcp_flags`` the union (OR) of the non-null values. The result equals
    ``paclo.flows`` over the same files as one capture, in another row order; the
    ``capture`` column is dropped. Any other column raises ``ValueError`` (it has no
    known merge).

    The merge is a tree reduction (each partition merged, then groups of
    ``split_every`` results, up to one partition), with pyarrow's hash aggregation in
    every step. ``split_out=N`` instead shuffles the partially merged rows by flow key
    into N partitions, for more flows than one partition should hold.

    Tables split by ``idle_timeout``/``active_timeout`` cannot be merged this way (a
    split depends on the packets of the neighbouring file): they raise ``ValueError``.
    """
    columns = list(flows.columns)
    if "expiration_reason" in columns:
        raise ValueError(
            "flows split by idle_timeout or active_timeout cannot be merged across files; "
            "read the files as one capture with paclo.flows([...], idle_timeout=...) instead"
        )
    missing = [c for c in (*FLOW_KEY, "packets", "bytes", *_MERGED) if c not in columns]
    if missing:
        raise ValueError(f"merge_flows needs flow rows; missing columns: {', '.join(missing)}")
    unknown = [c for c in columns if c not in (*FLOW_KEY, *_MERGED, CAPTURE_COLUMN) and not _summed(c)]
    if unknown:
        raise ValueError(f"merge_flows does not know how to merge the columns {', '.join(unknown)}; drop them first")
    if isinstance(split_out, bool) or not isinstance(split_out, int) or split_out < 1:
        raise ValueError(f"split_out must be a positive integer, not {split_out!r}")
    if not hasattr(flows, "map_partitions"):
        return _merge_frame(flows)
    meta = flows._meta.drop(columns=[CAPTURE_COLUMN]) if CAPTURE_COLUMN in columns else flows._meta
    if split_out == 1:
        return flows.reduction(
            chunk=_merge_frame, combine=_merge_frame, aggregate=_merge_frame, meta=meta, split_every=split_every
        )
    # The peer-to-peer shuffle of distributed cannot rebuild fixed_size_binary dtypes.
    partial = flows.map_partitions(_merge_frame, meta=meta)
    shuffled = partial.shuffle(on=list(FLOW_KEY), npartitions=split_out, shuffle_method="tasks")
    return shuffled.map_partitions(_merge_frame, meta=meta)


def _summed(column: str) -> bool:
    return column.rsplit("_", 1)[-1] in _SUMMED_SUFFIXES


def _merge_frame(frame: Any) -> Any:
    """One row per flow key of a pandas frame of flow rows (the step of every stage:
    its output merges again with the same function)."""
    table = pa.Table.from_pandas(frame.drop(columns=[CAPTURE_COLUMN], errors="ignore"), preserve_index=False)
    schema = table.schema
    summed = [c for c in schema.names if _summed(c)]
    flags = table.column("tcp_flags")
    # OR is not a hash aggregation: take "any" of each bit (null when every value is).
    bits = [f"_tcp_flag_{i}" for i in range(_TCP_FLAG_BITS)]
    for i, b in enumerate(bits):
        table = table.append_column(b, pc.not_equal(pc.bit_wise_and(flags, pa.scalar(1 << i, flags.type)), 0))
    aggs = [(c, "sum") for c in summed] + [("first_ts_ns", "min"), ("last_ts_ns", "max")] + [(b, "any") for b in bits]
    grouped = table.group_by(list(FLOW_KEY), use_threads=False).aggregate(aggs)
    union = None
    for i, b in enumerate(bits):
        term = pc.multiply(pc.cast(grouped.column(f"{b}_any"), pa.uint8()), pa.scalar(1 << i, pa.uint8()))
        union = term if union is None else pc.add(union, term)
    first, last = grouped.column("first_ts_ns_min"), grouped.column("last_ts_ns_max")
    values = {c: grouped.column(c) for c in FLOW_KEY}
    values.update({c: grouped.column(f"{c}_sum") for c in summed})
    values.update(first_ts_ns=first, last_ts_ns=last, duration_ns=pc.subtract(last, first), tcp_flags=union)
    out = pa.table([values[f.name].cast(f.type) for f in schema], schema=schema)
    return _pandas(out)

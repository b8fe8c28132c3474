"""paclo: packet capture, decode and flow analysis for Python, on a Rust core.

Read a capture::

    import paclo
    for pkt in paclo.read("trace.pcap", filter="udp port 53"):
        print(pkt.ts_ns, pkt.caplen)

Flows as an Arrow table::

    table = paclo.flows("trace.pcap", bidirectional=True)
    df = table.to_pandas()
"""

from __future__ import annotations

from . import decode_ext, demo, plot
from ._analysis import analysis_view, ip_range, ip_to_bytes, to_pandas, to_polars
from ._capture import Capture, FanOut, capture, devices, fan_out, libpcap_version
from ._decode import decode
from ._flows import flow_topn, flows, ip_to_str, project, read_batches
from ._io import PcapWriter, Reduced, read, reduce, write_pcap
from ._paclo import Packet, Reader, __version__
from .bpf import bpf
from .exceptions import (
    CaptureError,
    OversizedRecordWarning,
    PacloError,
    PcapFormatError,
    TruncatedCaptureWarning,
)
from .parquet import to_parquet

__all__ = [
    "Capture",
    "CaptureError",
    "FanOut",
    "OversizedRecordWarning",
    "Packet",
    "PacloError",
    "PcapFormatError",
    "PcapWriter",
    "Reader",
    "Reduced",
    "TruncatedCaptureWarning",
    "__version__",
    "analysis_view",
    "bpf",
    "capture",
    "decode",
    "decode_ext",
    "demo",
    "devices",
    "fan_out",
    "flow_topn",
    "flows",
    "ip_range",
    "ip_to_bytes",
    "ip_to_str",
    "libpcap_version",
    "plot",
    "project",
    "read",
    "read_batches",
    "reduce",
    "to_pandas",
    "to_parquet",
    "to_polars",
    "write_pcap",
]

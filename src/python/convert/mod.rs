//! Conversion between the core's values and Python objects: packets (as `Packet`
//! objects, packet maps or flow dicts), statistics, and the arguments that name a source.

pub mod flow_dict;
pub mod options;
pub mod packet;
pub mod packet_map;
pub mod stats;

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyType;

use crate::source::RawPacket;
use packet::{MappedPackets, Packet};

/// What a source yields for each packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DecodeMode {
    /// `Packet` objects.
    Raw,
    /// The full packet map (a dict).
    Full,
    /// The flat flow dict.
    Flow,
}

impl DecodeMode {
    /// Parse the `decode=` option.
    pub fn parse(value: Option<&str>) -> PyResult<Self> {
        match value {
            None => Ok(DecodeMode::Raw),
            Some("full") => Ok(DecodeMode::Full),
            Some("flow") => Ok(DecodeMode::Flow),
            Some(other) => Err(PyValueError::new_err(format!(
                "decode must be None, 'full' or 'flow', not {other:?}"
            ))),
        }
    }
}

/// The Python object for one packet in `mode`, and whether it carries a `decode_error`.
pub fn to_python<'py>(
    py: Python<'py>,
    mode: DecodeMode,
    pkt: &RawPacket<'_>,
) -> PyResult<(Bound<'py, PyAny>, bool)> {
    match mode {
        DecodeMode::Raw => Ok((Bound::new(py, Packet::from_raw(py, pkt))?.into_any(), false)),
        DecodeMode::Full => packet_map::full_map(py, pkt).map(|(d, e)| (d.into_any(), e)),
        DecodeMode::Flow => flow_dict::flow_dict(py, pkt).map(|(d, e)| (d.into_any(), e)),
    }
}

/// As [`to_python`], for a packet of the mapped file of `packets`: in raw mode the
/// `Packet` keeps the map and copies its bytes only when they are first read (and may be
/// an earlier packet nothing holds any more, see [`MappedPackets`]).
#[inline]
pub fn to_python_mapped<'py>(
    py: Python<'py>,
    mode: DecodeMode,
    pkt: &RawPacket<'_>,
    packets: &mut MappedPackets,
) -> PyResult<(Bound<'py, PyAny>, bool)> {
    match mode {
        DecodeMode::Raw => Ok((packets.packet(py, pkt)?, false)),
        _ => to_python(py, mode, pkt),
    }
}

/// `cls[item]` for the iterators typed by what they yield (`Reader[Packet]`): a
/// `types.GenericAlias`, so annotations evaluate at run time too.
pub fn generic_alias<'py>(
    cls: &Bound<'py, PyType>,
    item: &Bound<'py, PyAny>,
) -> PyResult<Bound<'py, PyAny>> {
    cls.py()
        .import("types")?
        .getattr("GenericAlias")?
        .call1((cls, item))
}

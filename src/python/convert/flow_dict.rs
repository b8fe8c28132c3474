//! The flat flow dict of `decode="flow"`: the fast path's fields, interned keys.

use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyBytes, PyDict, PyString};

use crate::decode::fastpath::{self, FlowFields};
use crate::source::RawPacket;

/// Interned dict keys of the flow dict, in their fixed order.
static KEYS: PyOnceLock<[Py<PyString>; 10]> = PyOnceLock::new();
const KEY_NAMES: [&str; 10] = [
    "ts_sec",
    "ts_usec",
    "caplen",
    "len",
    "ip_version",
    "protocol",
    "src_ip",
    "dst_ip",
    "src_port",
    "dst_port",
];
static DECODE_ERROR: PyOnceLock<Py<PyString>> = PyOnceLock::new();

/// The flat flow dict for `pkt`, and whether it carries a `decode_error`.
///
/// Keys in this order: `ts_sec, ts_usec, caplen, len, ip_version, protocol, src_ip, dst_ip,
/// src_port, dst_port`, then `decode_error` (a message) when the walk stopped on a cut or
/// invalid header. Addresses are 16-byte `bytes` (IPv4-mapped for IPv4), as in the tables;
/// fields that do not apply are `None`.
pub fn flow_dict<'py>(
    py: Python<'py>,
    pkt: &RawPacket<'_>,
) -> PyResult<(Bound<'py, PyDict>, bool)> {
    let keys = KEYS.get_or_init(py, || KEY_NAMES.map(|k| PyString::intern(py, k).unbind()));
    let mut f = FlowFields::default();
    fastpath::parse(pkt.linktype, pkt.data, &mut f);
    let d = PyDict::new(py);
    let k = |i: usize| keys[i].bind(py);
    d.set_item(k(0), pkt.ts_sec())?;
    d.set_item(k(1), pkt.ts_usec())?;
    d.set_item(k(2), pkt.caplen)?;
    d.set_item(k(3), pkt.wirelen)?;
    let l3 = f.ip_version != 0;
    d.set_item(k(4), l3.then_some(f.ip_version))?;
    d.set_item(k(5), f.has_protocol.then_some(f.protocol))?;
    d.set_item(k(6), l3.then(|| PyBytes::new(py, &f.src)))?;
    d.set_item(k(7), l3.then(|| PyBytes::new(py, &f.dst)))?;
    d.set_item(k(8), f.has_ports.then_some(f.src_port))?;
    d.set_item(k(9), f.has_ports.then_some(f.dst_port))?;
    if let Some(e) = f.error {
        let key = DECODE_ERROR.get_or_init(py, || PyString::intern(py, "decode_error").unbind());
        d.set_item(key.bind(py), e.to_string())?;
    }
    Ok((d, f.error.is_some()))
}

//! Devices: the list libpcap can capture on, libpcap's version, immediate-mode ring plans.

use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};

use crate::capture::handle::immediate_ring_plan;

/// The devices libpcap can capture on.
#[pyfunction]
pub fn devices(py: Python<'_>) -> PyResult<Bound<'_, PyList>> {
    let list = py.detach(crate::capture::devices)?;
    let out = PyList::empty(py);
    for dev in list {
        let d = PyDict::new(py);
        d.set_item("name", &dev.name)?;
        d.set_item("description", &dev.description)?;
        let addrs = PyList::empty(py);
        for a in &dev.addresses {
            let ad = PyDict::new(py);
            ad.set_item("addr", &a.addr)?;
            ad.set_item("netmask", &a.netmask)?;
            ad.set_item("broadcast", &a.broadcast)?;
            ad.set_item("destination", &a.destination)?;
            addrs.append(ad)?;
        }
        d.set_item("addresses", addrs)?;
        d.set_item("flags", PyList::new(py, &dev.flags)?)?;
        out.append(d)?;
    }
    Ok(out)
}

/// libpcap's version string.
#[pyfunction]
pub fn libpcap_version() -> String {
    crate::capture::libpcap_version()
}

/// `(buffer_size, estimated_slots)` for an immediate-mode capture on `device`, or `None`
/// where immediate mode has no fixed-slot ring (every OS but Linux).
#[pyfunction]
#[pyo3(signature = (device, snaplen, buffer_size))]
pub fn immediate_plan(device: &str, snaplen: u32, buffer_size: Option<u32>) -> Option<(u32, u64)> {
    immediate_ring_plan(device, snaplen, buffer_size)
}

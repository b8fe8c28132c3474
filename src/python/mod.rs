//! Python bindings: the only module that imports pyo3.
//!
//! Bindings are thin: convert arguments, release the GIL around native loops, check for
//! signals, call the core. By role:
//!
//! - [`convert`]: core values to and from Python objects (packets, packet maps, flow
//!   dicts, statistics, source arguments);
//! - [`interop`]: the Arrow stream (PyCapsule interface);
//! - [`error`]: crate errors to Python exceptions, the one mapping;
//! - [`gil`] and [`hooks`]: the interpreter around native loops, user callbacks;
//! - one file of `#[pyfunction]`s and classes per area: [`read`], [`write`], [`capture`],
//!   [`fanout`], [`flows`], [`analysis`], [`decode`], [`devices`], [`perf`], [`generator`].
//!
//! The `#[pymodule]` below is the one list of what the module exports.

mod analysis;
mod capture;
mod convert;
mod decode;
mod devices;
mod error;
mod fanout;
mod flows;
mod generator;
mod gil;
mod hooks;
mod interop;
mod perf;
mod read;
mod write;

use pyo3::prelude::*;

#[pymodule]
fn _paclo(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    // Files: reading, reducing, writing.
    m.add_class::<convert::packet::Packet>()?;
    m.add_class::<read::Reader>()?;
    m.add_class::<write::PyPcapWriter>()?;
    m.add_function(wrap_pyfunction!(read::read, m)?)?;
    m.add_function(wrap_pyfunction!(read::reduce, m)?)?;
    m.add_function(wrap_pyfunction!(read::count_packets, m)?)?;
    // The decoder.
    m.add_function(wrap_pyfunction!(decode::decode_bytes, m)?)?;
    m.add_function(wrap_pyfunction!(decode::set_decode_hooks, m)?)?;
    // Flows and Arrow.
    m.add_class::<interop::ArrowStream>()?;
    m.add_function(wrap_pyfunction!(flows::flow_project, m)?)?;
    m.add_function(wrap_pyfunction!(flows::flow_table, m)?)?;
    m.add_function(wrap_pyfunction!(flows::flow_topn, m)?)?;
    m.add_function(wrap_pyfunction!(flows::read_batches, m)?)?;
    // The analysis view: address text as Arrow buffers, protocol and TCP flag names.
    m.add_function(wrap_pyfunction!(analysis::address_text, m)?)?;
    m.add_function(wrap_pyfunction!(analysis::protocol_names, m)?)?;
    m.add_function(wrap_pyfunction!(analysis::tcp_flag_strings, m)?)?;
    m.add("ADDRESS_TEXT_MAX_ROWS", crate::flow::text::MAX_ROWS)?;
    // Live capture.
    m.add_class::<capture::Capture>()?;
    m.add_function(wrap_pyfunction!(capture::open_capture, m)?)?;
    m.add_class::<fanout::FanOut>()?;
    m.add_class::<fanout::FanOutBranch>()?;
    m.add_function(wrap_pyfunction!(fanout::start_fan_out, m)?)?;
    m.add_function(wrap_pyfunction!(devices::devices, m)?)?;
    m.add_function(wrap_pyfunction!(devices::libpcap_version, m)?)?;
    m.add_function(wrap_pyfunction!(devices::immediate_plan, m)?)?;
    // The perf runner's helpers.
    m.add_function(wrap_pyfunction!(perf::native_alloc_counts, m)?)?;
    m.add_function(wrap_pyfunction!(perf::generate_dataset, m)?)?;
    m.add_function(wrap_pyfunction!(perf::dataset_expected, m)?)?;
    m.add_function(wrap_pyfunction!(perf::dataset_frame, m)?)?;
    m.add_function(wrap_pyfunction!(generator::udp_generate, m)?)?;
    Ok(())
}

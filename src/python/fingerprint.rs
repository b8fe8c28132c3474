//! JA4-family fingerprints of capture files as an Arrow table.

use std::path::PathBuf;

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

use super::flow::{interruptible, make_filter, nonempty, ArrowStream};
use crate::fingerprint::columns::{self, FingerprintColumns};
use crate::fingerprint::{Config, Fingerprinter, Method, Methods};
use crate::flow::CHUNK_RECORDS;
use crate::pcap::FileReader;
use crate::source::PacketSource;

/// The method set for the names given; a `ValueError` naming the allowed names otherwise.
fn parse_methods(names: &[String]) -> PyResult<Methods> {
    let mut m = Methods::NONE;
    for n in names {
        match Method::from_name(n) {
            Some(x) => m = m.with(x),
            None => {
                let allowed: Vec<&str> = Method::ALL.iter().map(|m| m.name()).collect();
                return Err(PyValueError::new_err(format!(
                    "methods: unknown method {n:?}; allowed: {}",
                    allowed.join(", ")
                )));
            }
        }
    }
    Ok(m)
}

/// The names of every method, in table order.
#[pyfunction]
fn fingerprint_methods() -> Vec<&'static str> {
    Method::ALL.iter().map(|m| m.name()).collect()
}

/// Fingerprint the packets of `paths` (read in order, one state machine across them):
/// an Arrow stream of one batch, one row per fingerprint.
#[pyfunction]
#[pyo3(signature = (paths, *, methods, filter = None))]
fn fingerprint_table(
    py: Python<'_>,
    paths: Vec<PathBuf>,
    methods: Vec<String>,
    filter: Option<String>,
) -> PyResult<ArrowStream> {
    let methods = parse_methods(&methods)?;
    let paths = nonempty(paths)?;
    let batch = interruptible(py, false, |stop| {
        let mut fp = Fingerprinter::new(Config {
            methods,
            ..Config::default()
        });
        let mut cols = FingerprintColumns::default();
        for path in &paths {
            let mut r = FileReader::open(path)?;
            let mut keep = make_filter(filter.as_deref(), &r)?;
            let mut n = 0u32;
            while let Some(pkt) = r.next_packet()? {
                if keep.keep(&pkt)? {
                    fp.process(&pkt, &mut |e| cols.push(e));
                }
                n = n.wrapping_add(1);
                if n % CHUNK_RECORDS == 0 && stop() {
                    return Ok(None);
                }
            }
        }
        fp.finish(&mut |e| cols.push(e));
        Ok(Some(cols.finish()))
    })?;
    Ok(ArrowStream::from_batches(columns::schema(), vec![batch]))
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(fingerprint_table, m)?)?;
    m.add_function(wrap_pyfunction!(fingerprint_methods, m)?)?;
    Ok(())
}

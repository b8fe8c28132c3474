//! JA4-family fingerprints of capture files or a live device as an Arrow table.

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

use super::convert::options::SourceArg;
use super::error::warn_truncated;
use super::gil::interruptible;
use super::interop::ArrowStream;
use crate::fingerprint::columns::{
    self, fingerprint_files, fingerprint_source, FingerprintColumns,
};
use crate::fingerprint::{Config, Fingerprinter, Method, Methods};

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
pub fn fingerprint_methods() -> Vec<&'static str> {
    Method::ALL.iter().map(|m| m.name()).collect()
}

/// Fingerprint the packets of `source` (paths read in order through one state machine, or
/// a live device): an Arrow stream of one batch, one row per fingerprint.
#[pyfunction]
#[pyo3(signature = (source, *, methods, filter = None))]
pub fn fingerprint_table(
    py: Python<'_>,
    source: SourceArg,
    methods: Vec<String>,
    filter: Option<String>,
) -> PyResult<ArrowStream> {
    let config = Config {
        methods: parse_methods(&methods)?,
        ..Config::default()
    };
    let filter = filter.as_deref();
    let (batch, truncation) = match source {
        SourceArg::Files(paths) => {
            if paths.is_empty() {
                return Err(PyValueError::new_err(
                    "source must name at least one capture file",
                ));
            }
            interruptible(py, false, |stop| {
                fingerprint_files(&paths, filter, config, stop)
            })?
        }
        SourceArg::Device(live) => {
            let mut lp = live.open(py, filter)?;
            interruptible(py, false, |stop| {
                let mut fp = Fingerprinter::new(config);
                let mut cols = FingerprintColumns::default();
                Ok(fingerprint_source(&mut lp, stop, &mut fp, &mut cols)?
                    .then(|| (cols.finish(), None)))
            })?
        }
    };
    if let Some(e) = truncation {
        warn_truncated(py, &e, "every complete packet before it was used", 2)?;
    }
    Ok(ArrowStream::from_batches(columns::schema(), vec![batch]))
}

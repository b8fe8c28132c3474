//! `FanOut`: one managed capture to several bounded branch iterators.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use pyo3::exceptions::PyRuntimeError;
use pyo3::gc::PyVisit;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyTuple, PyType};
use pyo3::PyTraverseError;

use super::capture::{Capture, CLOSE_TIMEOUT, POP_SLICE};
use super::convert::stats::fan_out_dict;
use super::convert::{generic_alias, to_python, DecodeMode};
use super::error::CaptureError;
use super::gil::QUEUE_SIGNAL_CHECK_EVERY;
use crate::capture::fanout::{BranchConfig, FanOut as FanOutCore, SourceItem};
use crate::capture::queue::{Pop, QueueMode};
use crate::capture::OwnedPacket;
use crate::stats::{Failure, StopReason};

/// Bounded fan-out of one managed capture to several branch iterators.
#[pyclass(module = "paclo", name = "FanOut", frozen)]
pub struct FanOut {
    core: FanOutCore<Arc<OwnedPacket>>,
    capture: Py<Capture>,
    mode: DecodeMode,
    acquired: Vec<AtomicBool>,
}

impl FanOut {
    fn close_all(&self, py: Python<'_>) -> PyResult<()> {
        let fan = py.detach(|| self.core.close(CLOSE_TIMEOUT));
        let cap = self.capture.get().close_blocking(py);
        fan?;
        cap
    }
}

#[pymethods]
impl FanOut {
    #[classmethod]
    fn __class_getitem__<'py>(
        cls: &Bound<'py, PyType>,
        item: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyAny>> {
        generic_alias(cls, item)
    }

    fn __traverse__(&self, visit: PyVisit<'_>) -> Result<(), PyTraverseError> {
        visit.call(&self.capture)
    }

    /// The iterator of branch `name` (each branch may be acquired once).
    fn branch(slf: &Bound<'_, Self>, name: &str) -> PyResult<FanOutBranch> {
        let this = slf.get();
        let Some(idx) = this.core.branch_index(name) else {
            return Err(pyo3::exceptions::PyKeyError::new_err(format!(
                "unknown fan_out branch {name:?}; branches: {}",
                this.core.branch_names().join(", ")
            )));
        };
        if this.acquired[idx].swap(true, Ordering::AcqRel) {
            return Err(PyRuntimeError::new_err(format!(
                "fan_out branch {name:?} may only be acquired once"
            )));
        }
        Ok(FanOutBranch {
            fanout: slf.clone().unbind(),
            idx,
            consumer: Mutex::new((false, 0)),
        })
    }

    fn __getitem__(slf: &Bound<'_, Self>, name: &str) -> PyResult<FanOutBranch> {
        Self::branch(slf, name)
    }

    /// Branch names in the order given.
    #[getter]
    fn names(&self) -> Vec<String> {
        self.core.branch_names()
    }

    /// Fan-out statistics (see docs/stats.md).
    fn stats<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        fan_out_dict(py, &self.core.stats())
    }

    /// Stop the dispatcher, abandon every branch queue, close the capture.
    fn close(&self, py: Python<'_>) -> PyResult<()> {
        self.close_all(py)
    }

    fn __enter__(slf: PyRef<'_, Self>) -> PyRef<'_, Self> {
        slf
    }

    #[pyo3(signature = (*_exc))]
    fn __exit__(&self, py: Python<'_>, _exc: &Bound<'_, PyTuple>) -> PyResult<bool> {
        self.close_all(py)?;
        Ok(false)
    }
}

/// One branch of a fan-out: an iterator for one consumer.
#[pyclass(module = "paclo", name = "FanOutBranch", frozen)]
pub struct FanOutBranch {
    fanout: Py<FanOut>,
    idx: usize,
    /// (finished, calls of `__next__`).
    consumer: Mutex<(bool, u64)>,
}

#[pymethods]
impl FanOutBranch {
    #[classmethod]
    fn __class_getitem__<'py>(
        cls: &Bound<'py, PyType>,
        item: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyAny>> {
        generic_alias(cls, item)
    }

    fn __traverse__(&self, visit: PyVisit<'_>) -> Result<(), PyTraverseError> {
        visit.call(&self.fanout)
    }

    fn __iter__(slf: PyRef<'_, Self>) -> PyRef<'_, Self> {
        slf
    }

    fn __next__<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyAny>>> {
        let fan = self.fanout.get();
        let mut guard = self.consumer.try_lock().map_err(|_| {
            PyRuntimeError::new_err(
                "a fan_out branch has a single consumer; it is being iterated elsewhere",
            )
        })?;
        let (finished, calls) = &mut *guard;
        if *finished {
            return Ok(None);
        }
        *calls += 1;
        if *calls % QUEUE_SIGNAL_CHECK_EVERY == 0 {
            if let Err(e) = py.check_signals() {
                *finished = true;
                let _ = fan.close_all(py);
                return Err(e);
            }
        }
        loop {
            let popped = match fan.core.pop(self.idx, Duration::ZERO) {
                Pop::Empty => py.detach(|| fan.core.pop(self.idx, POP_SLICE)),
                other => other,
            };
            match popped {
                Pop::Item(pkt) => return Ok(Some(to_python(py, fan.mode, &pkt.as_raw())?.0)),
                Pop::Empty => {
                    if let Err(e) = py.check_signals() {
                        *finished = true;
                        let _ = fan.close_all(py);
                        return Err(e);
                    }
                }
                Pop::Finished => {
                    *finished = true;
                    if let Some(e) = fan.core.branch_error(self.idx) {
                        return Err(CaptureError::new_err(format!(
                            "stream source failed: {}",
                            e.message()
                        )));
                    }
                    return Ok(None);
                }
            }
        }
    }

    /// Close this branch (the others continue); its queued packets are abandoned.
    fn close(&self) {
        self.fanout.get().core.close_branch(self.idx);
    }

    /// The branch name.
    #[getter]
    fn name(&self) -> String {
        self.fanout.get().core.branch_names()[self.idx].clone()
    }
}

/// Start a fan-out over a fresh managed capture. Branches are validated by the wrapper.
#[pyfunction]
pub fn start_fan_out(
    capture: Bound<'_, Capture>,
    branches: Vec<(String, String, usize)>,
) -> PyResult<FanOut> {
    let cap = capture.get();
    let configs = branches
        .into_iter()
        .map(|(name, mode, capacity)| {
            Ok(BranchConfig {
                name,
                mode: QueueMode::parse("mode", &mode)?,
                capacity,
            })
        })
        .collect::<crate::Result<Vec<_>>>()?;
    if configs.len() < 2 {
        return Err(pyo3::exceptions::PyValueError::new_err(
            "fan_out requires at least two branches",
        ));
    }
    cap.take_for_fanout()?;
    let reader = cap.core().reader();
    let stopper = reader.clone();
    let source = Box::new(move |timeout: Duration| match reader.pop(timeout) {
        Pop::Item(p) => SourceItem::Item(Arc::new(p)),
        Pop::Empty => SourceItem::Empty,
        Pop::Finished => match reader.error() {
            Some(f @ Failure::Source(_)) => SourceItem::Failed(f),
            _ => SourceItem::End,
        },
    });
    let cancel = Box::new(move || stopper.request_stop(StopReason::Consumer));
    let n = configs.len();
    let core = FanOutCore::start(source, cancel, configs)?;
    Ok(FanOut {
        core,
        mode: cap.mode(),
        capture: capture.unbind(),
        acquired: (0..n).map(|_| AtomicBool::new(false)).collect(),
    })
}

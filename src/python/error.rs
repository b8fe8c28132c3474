//! Crate errors to Python exceptions: one place, one mapping.
//!
//! The core says what went wrong ([`Error`], [`Failure`]); this file alone names the Python
//! exception of each kind, raises it, names it in statistics, and emits the truncation
//! warning.

use std::ffi::CString;

use pyo3::exceptions::{PyFileNotFoundError, PyOSError, PyPermissionError, PyValueError};
use pyo3::prelude::*;
use pyo3::PyErr;

use crate::error::Error;
use crate::stats::Failure;

pyo3::import_exception!(paclo.exceptions, PcapFormatError);
pyo3::import_exception!(paclo.exceptions, CaptureError);
pyo3::import_exception!(paclo.exceptions, TruncatedCaptureWarning);
pyo3::import_exception!(paclo.exceptions, OversizedRecordWarning);

impl From<Error> for PyErr {
    fn from(err: Error) -> PyErr {
        let message = err.to_string();
        match err {
            Error::NotFound { path } => PyFileNotFoundError::new_err((
                libc::ENOENT,
                "No such file or directory",
                path.display().to_string(),
            )),
            Error::PermissionDenied { .. } => PyPermissionError::new_err(message),
            // OSError picks its subclass from the errno (EISDIR: IsADirectoryError).
            Error::Io { path, source } => PyOSError::new_err((
                source.raw_os_error().unwrap_or(match source.kind() {
                    std::io::ErrorKind::IsADirectory => libc::EISDIR,
                    std::io::ErrorKind::NotADirectory => libc::ENOTDIR,
                    _ => libc::EIO,
                }),
                source.to_string(),
                path.display().to_string(),
            )),
            Error::Format {
                path,
                index,
                offset,
                ..
            }
            | Error::Truncated {
                path,
                index,
                offset,
                ..
            } => PcapFormatError::new_err((message, path.display().to_string(), index, offset)),
            Error::Filter { .. } | Error::InvalidArgument(_) => PyValueError::new_err(message),
            Error::Capture(_) => CaptureError::new_err(message),
        }
    }
}

/// The name of the Python exception `err` raises (as statistics report it).
pub fn exception_name(err: &Error) -> &'static str {
    match err {
        Error::NotFound { .. } => "FileNotFoundError",
        Error::PermissionDenied { .. } => "PermissionError",
        Error::Io { source, .. } if source.kind() == std::io::ErrorKind::IsADirectory => {
            "IsADirectoryError"
        }
        Error::Io { .. } => "OSError",
        Error::Format { .. } | Error::Truncated { .. } => "PcapFormatError",
        Error::Filter { .. } | Error::InvalidArgument(_) => "ValueError",
        Error::Capture(_) => "CaptureError",
    }
}

/// A failure's exception class name and message, as statistics report them.
pub fn failure_parts(f: &Failure) -> (String, String) {
    match f {
        Failure::Source(e) => (exception_name(e).to_string(), e.to_string()),
        Failure::Consumer { class, message } => (class.clone(), message.clone()),
    }
}

/// A failure of the consumer's own code: a Python exception, by its type name.
pub fn consumer_failure(py: Python<'_>, err: &PyErr, message: String) -> Failure {
    let class = err
        .get_type(py)
        .name()
        .map(|n| n.to_string())
        .unwrap_or_else(|_| "Exception".into());
    Failure::Consumer { class, message }
}

/// The exception a managed capture raises at its consumer when its source failed: a
/// device error as `CaptureError("capture failed: ...")`, a file's as it does for `read`.
pub fn capture_failed(err: Error) -> PyErr {
    match err {
        Error::Capture(m) => CaptureError::new_err(format!("capture failed: {m}")),
        other => other.into(),
    }
}

/// Warn that records longer than their snaplen were read whole: `OversizedRecordWarning`
/// with `message` (naming the first); `stacklevel` as for [`warn_truncated`].
pub fn warn_oversized(py: Python<'_>, message: &str, stacklevel: i32) -> PyResult<()> {
    let message = CString::new(message).unwrap_or_default();
    PyErr::warn(
        py,
        &py.get_type::<OversizedRecordWarning>(),
        &message,
        stacklevel,
    )
}

/// Warn that a capture file ended inside a record: `TruncatedCaptureWarning` with the
/// error and `after` (what was done with the packets before it). `stacklevel` 1 names the
/// Python line that called into the extension, 2 the line above it.
pub fn warn_truncated(py: Python<'_>, err: &Error, after: &str, stacklevel: i32) -> PyResult<()> {
    let message = CString::new(format!("{err}; {after}")).unwrap_or_default();
    PyErr::warn(
        py,
        &py.get_type::<TruncatedCaptureWarning>(),
        &message,
        stacklevel,
    )
}

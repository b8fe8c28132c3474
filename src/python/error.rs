//! Crate errors to Python exceptions: one place, one mapping.

use pyo3::exceptions::{PyFileNotFoundError, PyOSError, PyPermissionError, PyValueError};
use pyo3::PyErr;

use crate::error::Error;

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
            Error::Io { path, source } => PyOSError::new_err((
                source.raw_os_error().unwrap_or(libc::EIO),
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

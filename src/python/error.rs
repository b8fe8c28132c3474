//! Crate errors to Python exceptions: one place, one mapping.

use pyo3::exceptions::{PyFileNotFoundError, PyOSError, PyPermissionError, PyValueError};
use pyo3::PyErr;

use crate::error::Error;

pyo3::import_exception!(paclo.exceptions, PcapFormatError);
pyo3::import_exception!(paclo.exceptions, CaptureError);
pyo3::import_exception!(paclo.exceptions, TruncatedCaptureWarning);

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

//! The crate's error type. `src/python/error.rs` maps each variant to one Python exception.
//!
//! Malformed packet bytes are not errors: decoders report truncation as data
//! (see `decode`). These are errors of sources, files, filters and options.

use std::path::PathBuf;
use std::sync::Arc;

/// Result with the crate [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Everything that can fail outside packet decoding. Cheap to clone: a failure is kept in
/// statistics and raised as well.
#[derive(Clone, Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The file does not exist (Python `FileNotFoundError`).
    #[error("no such file: {}", path.display())]
    NotFound {
        /// The path that was opened.
        path: PathBuf,
    },

    /// The file or device may not be opened (Python `PermissionError`).
    #[error("permission denied: {what}{}", hint.map(|h| format!(" ({h})")).unwrap_or_default())]
    PermissionDenied {
        /// The path or device refused.
        what: String,
        /// What would grant access (e.g. CAP_NET_RAW), if known.
        hint: Option<&'static str>,
    },

    /// Any other I/O failure on a path (Python `OSError`).
    #[error("{}: {source}", path.display())]
    Io {
        /// The path of the failed operation.
        path: PathBuf,
        /// The underlying error (shared, so the error can be cloned).
        #[source]
        source: Arc<std::io::Error>,
    },

    /// The bytes are not a valid capture file (Python `paclo.PcapFormatError`).
    #[error("{}: {message} (record {index}, byte offset {offset})", path.display())]
    Format {
        /// The capture file.
        path: PathBuf,
        /// Index of the record being read (0-based; 0 for file-header problems).
        index: u64,
        /// Byte offset in the file where the problem starts.
        offset: u64,
        /// What is wrong.
        message: String,
    },

    /// The file ends inside a record: a capture cut off mid-write. Every complete packet
    /// before it was delivered (Python: a `TruncatedCaptureWarning`, or with `strict=True`
    /// a `PcapFormatError`).
    #[error("{}: truncated record {index} at byte offset {offset}: need {need} bytes, have {have}", path.display())]
    Truncated {
        /// The capture file.
        path: PathBuf,
        /// Index of the cut record (0-based).
        index: u64,
        /// Byte offset where the cut record starts.
        offset: u64,
        /// Bytes the record needs from `offset`.
        need: u64,
        /// Bytes present from `offset`.
        have: u64,
    },

    /// A BPF expression libpcap could not compile (Python `ValueError`).
    #[error("invalid filter {expr:?}: {message}")]
    Filter {
        /// The expression as given.
        expr: String,
        /// libpcap's message.
        message: String,
    },

    /// An option value out of its domain (Python `ValueError`).
    #[error("{0}")]
    InvalidArgument(String),

    /// A live capture failure: unknown device, activation or read error (Python `paclo.CaptureError`).
    #[error("{0}")]
    Capture(String),
}

impl Error {
    /// Classify an `io::Error` from opening `path`.
    pub fn from_io(path: impl Into<PathBuf>, err: std::io::Error) -> Self {
        let path = path.into();
        match err.kind() {
            std::io::ErrorKind::NotFound => Error::NotFound { path },
            std::io::ErrorKind::PermissionDenied => Error::PermissionDenied {
                what: path.display().to_string(),
                hint: None,
            },
            _ => Error::Io {
                path,
                source: Arc::new(err),
            },
        }
    }
}

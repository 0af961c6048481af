//! The error codes of the specification, each spelled once, and the typed
//! error a tool returns. `tool_main` turns a `ToolError` into the JSON answer
//! of the tool's family; the host spells its own codes in its envelope (host/envelope.rs).

use std::fmt;
use std::io;

/// Every machine-readable error code the spec names. `as_str` is the only
/// place their spelling lives.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ErrorCode {
    // Any tool: bad arguments (decision 3).
    InvalidArg,
    // Local tools.
    FileNotFound,
    PermissionDenied,
    OpenFailed,
    ReadFailed,
    WriteFailed,
    SeekFailed,
    SizeFailed,
    NoSpace,
    InvalidPattern,
    OutOfMemory,
    ReadError,
    NotFound,
    NotUnique,
    // file_write, file_edit: another program changed the file while it was
    // being written (decision 33).
    FileChanged,
    // Web tools.
    AuthMissing,
    AuthInvalid,
    RateLimit,
    NetworkError,
    ApiError,
    HttpError,
    ParseError,
    InvalidUrl,
    UnsupportedContent,
    // web_fetch: a host that is not on the public internet.
    AddressBlocked,
}

impl ErrorCode {
    pub fn as_str(self) -> &'static str {
        use ErrorCode::*;
        match self {
            InvalidArg => "INVALID_ARG",
            FileNotFound => "FILE_NOT_FOUND",
            PermissionDenied => "PERMISSION_DENIED",
            OpenFailed => "OPEN_FAILED",
            ReadFailed => "READ_FAILED",
            WriteFailed => "WRITE_FAILED",
            SeekFailed => "SEEK_FAILED",
            SizeFailed => "SIZE_FAILED",
            NoSpace => "NO_SPACE",
            InvalidPattern => "INVALID_PATTERN",
            OutOfMemory => "OUT_OF_MEMORY",
            ReadError => "READ_ERROR",
            NotFound => "NOT_FOUND",
            NotUnique => "NOT_UNIQUE",
            FileChanged => "FILE_CHANGED",
            AuthMissing => "AUTH_MISSING",
            AuthInvalid => "AUTH_INVALID",
            RateLimit => "RATE_LIMIT",
            NetworkError => "NETWORK_ERROR",
            ApiError => "API_ERROR",
            HttpError => "HTTP_ERROR",
            ParseError => "PARSE_ERROR",
            InvalidUrl => "INVALID_URL",
            UnsupportedContent => "UNSUPPORTED_CONTENT",
            AddressBlocked => "ADDRESS_BLOCKED",
        }
    }
}

impl fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A tool's failure: the code, the message the model reads, and optionally
/// one event line for the person (a `config_required` object) that goes to
/// stderr, never to the model.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolError {
    pub code: ErrorCode,
    pub message: String,
    pub event: Option<serde_json::Value>,
}

impl ToolError {
    pub fn new(code: ErrorCode, message: impl Into<String>) -> Self {
        ToolError {
            code,
            message: message.into(),
            event: None,
        }
    }

    pub fn invalid_arg(message: impl Into<String>) -> Self {
        Self::new(ErrorCode::InvalidArg, message)
    }

    pub fn with_event(mut self, event: serde_json::Value) -> Self {
        self.event = Some(event);
        self
    }

    /// The spec's file-system errors, chosen from the errno in one place:
    /// `what` is the message prefix for anything not more specific
    /// (`"Cannot open file"`, `"Failed to read file"`, ...), paired with
    /// `fallback`, the code for that case.
    pub fn from_io(err: &io::Error, path: &str, what: &str, fallback: ErrorCode) -> Self {
        match err.raw_os_error() {
            Some(libc::ENOENT) => {
                Self::new(ErrorCode::FileNotFound, format!("File not found: {path}"))
            }
            Some(libc::EACCES) | Some(libc::EPERM) | Some(libc::EROFS) => Self::new(
                ErrorCode::PermissionDenied,
                format!("Permission denied: {path}"),
            ),
            Some(libc::ENOSPC) | Some(libc::EDQUOT) => Self::new(
                ErrorCode::NoSpace,
                format!("No space left on device: {path}"),
            ),
            Some(libc::ENOMEM) => {
                Self::new(ErrorCode::OutOfMemory, format!("Out of memory: {path}"))
            }
            _ => Self::new(fallback, format!("{what}: {path}")),
        }
    }
}

impl fmt::Display for ToolError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} ({})", self.message, self.code)
    }
}

impl std::error::Error for ToolError {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn io_errors_map_to_spec_codes() {
        let e = io::Error::from_raw_os_error(libc::ENOENT);
        let t = ToolError::from_io(&e, "/x", "Cannot open file", ErrorCode::OpenFailed);
        assert_eq!(t.code, ErrorCode::FileNotFound);
        assert_eq!(t.message, "File not found: /x");
        let e = io::Error::from_raw_os_error(libc::EACCES);
        let t = ToolError::from_io(&e, "/x", "Cannot open file", ErrorCode::OpenFailed);
        assert_eq!(t.message, "Permission denied: /x");
        let e = io::Error::from_raw_os_error(libc::EISDIR);
        let t = ToolError::from_io(&e, "/x", "Cannot open file", ErrorCode::OpenFailed);
        assert_eq!(
            (t.code, t.message.as_str()),
            (ErrorCode::OpenFailed, "Cannot open file: /x")
        );
    }
}

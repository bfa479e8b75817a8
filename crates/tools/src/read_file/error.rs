//! Why a `read_file` call failed: one error for the tool, its excerpt and
//! its images.

use std::io;

use crate::Interrupted;
use crate::sandbox::SandboxError;

/// The tool's name, as the model calls it.
pub(super) const NAME: &str = "read_file";

/// Why a `read_file` call failed. `Display` is one line for the model.
#[derive(Debug, thiserror::Error)]
pub enum ReadFileError {
    /// The path was refused or could not be opened.
    #[error(transparent)]
    Sandbox(#[from] SandboxError),
    /// The path names a directory.
    #[error("'{path}' is a directory; use list_dir")]
    Directory {
        /// The path as the model gave it (shortened).
        path: String,
    },
    /// A NUL byte in the file's start.
    #[error("'{path}' is a binary file (it contains NUL bytes); read_file only reads UTF-8 text")]
    Binary {
        /// The path as the model gave it (shortened).
        path: String,
    },
    /// Bytes that are not UTF-8 in the part to show.
    #[error(
        "'{path}' is not UTF-8 text (invalid bytes in line {line}); read_file only reads UTF-8 text"
    )]
    NotUtf8 {
        /// The path as the model gave it (shortened).
        path: String,
        /// The 1-based line holding the first invalid byte.
        line: u64,
    },
    /// An image past the caps read_file shows images within.
    #[error("'{path}' is an image leash cannot show: {problem}")]
    Image {
        /// The path as the model gave it (shortened).
        path: String,
        /// Which cap it breaks.
        problem: String,
    },
    /// `offset` lies after the last line.
    #[error("offset {offset} is past the end of '{path}', which has {lines} line{s}", s = plural(*lines))]
    PastEnd {
        /// The path as the model gave it (shortened).
        path: String,
        /// The offset asked for.
        offset: u64,
        /// How many lines the file has.
        lines: u64,
    },
    /// `byte_offset` lies at or after the end of its line.
    #[error(
        "byte_offset {byte_offset} is past the end of line {line} of '{path}', which is {len} bytes long"
    )]
    PastLineEnd {
        /// The path as the model gave it (shortened).
        path: String,
        /// The line (`offset`).
        line: u64,
        /// The byte offset asked for.
        byte_offset: u64,
        /// The line's length in bytes (with its line end).
        len: u64,
    },
    /// Reading failed after the file was opened.
    #[error("reading '{path}' failed: {source}")]
    Io {
        /// The path as the model gave it (shortened).
        path: String,
        /// The operating system's error.
        #[source]
        source: io::Error,
    },
    /// The run was aborted while the file was read, or the blocking work
    /// died (a bug, not the model's doing).
    #[error(transparent)]
    Interrupted(#[from] Interrupted),
}

impl ReadFileError {
    /// The run was aborted while the file was read.
    pub(super) fn cancelled() -> Self {
        Interrupted::Cancelled { tool: NAME }.into()
    }
}

fn plural(n: u64) -> &'static str {
    if n == 1 { "" } else { "s" }
}

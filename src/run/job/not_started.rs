//! Why a run the plan allowed never started: a usage error found while
//! preparing it (exit 2), a stop while it was prepared, or an MCP server
//! that did not start (exit 8).

use std::io;

use leash_mcp::McpStartError;

use crate::run::ending::AbortCause;
use crate::run::input::InputError;

/// A run the plan allowed that still could not start: a usage error
/// (exit 2) found while preparing it.
#[derive(Debug, thiserror::Error)]
pub enum UsageError {
    /// An output file (`--output-last-message`, `--transcript`) could not
    /// be created.
    #[error("cannot write {flag} {path}: {source}")]
    Create {
        /// The flag that named it.
        flag: &'static str,
        /// The file.
        path: String,
        /// Why.
        source: io::Error,
    },
    /// No usable prompt (empty, unreadable stdin, ...).
    #[error(transparent)]
    Prompt(InputError),
}

/// Why a run never started.
pub(super) enum NotStarted {
    /// A usage error.
    Usage(UsageError),
    /// The timer or a signal stopped it while stdin was read or the MCP
    /// servers started.
    Stopped(Option<AbortCause>),
    /// An MCP server did not start (exit 8).
    Mcp(McpStartError),
}

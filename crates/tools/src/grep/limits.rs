//! The caps of one `grep` call: how many matches, how much context, how
//! long a line and how many bytes it shows. Below both the tool and the
//! collector that applies them.

/// Matches shown when the call names no `limit`.
pub(crate) const DEFAULT_LIMIT: u32 = 100;

/// The most matches one call shows, whatever `limit` asks for.
pub(crate) const MAX_LIMIT: u32 = 1000;

/// The most context lines around a match.
pub(crate) const MAX_CONTEXT: u32 = 10;

/// The most characters of one line shown; the rest is cut with a note.
pub(crate) const MAX_LINE_CHARS: usize = 500;

/// The most bytes of results one call shows (as `read_file`).
pub(crate) const MAX_BYTES: usize = crate::read_file::MAX_BYTES;

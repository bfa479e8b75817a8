//! The caps of one `read_file` call: lines and bytes shown, and how much
//! of a file is searched for a NUL. Below both the tool and its excerpt.

/// The most lines one call shows, whatever `limit` asks for.
pub const MAX_LINES: u64 = 2000;

/// The most bytes of file text one call shows.
pub const MAX_BYTES: usize = 50 * 1024;

/// How much of the start of a file is searched for a NUL byte.
pub const BINARY_SNIFF_BYTES: u64 = 8 * 1024;

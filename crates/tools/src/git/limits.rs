//! The bounds of one `git` call: its time and its arguments. Below the
//! tool, the whitelist and the error that names them.

use std::time::Duration;

/// How long one git call may run before it is killed.
pub(crate) const TIME_LIMIT: Duration = Duration::from_secs(30);

/// The most arguments one call may give.
pub(super) const MAX_ARGS: usize = 64;

/// The longest single argument, in bytes.
pub(super) const MAX_ARG_BYTES: usize = 1024;

//! The one stop at leash's exit: every registered process group, then
//! every process tree a shell command left (`group.rs` and `tree.rs`),
//! in that order, so no child outlives leash whatever the exit.

use super::group::{kill_registered_groups, stop_registered_groups};
use super::tree::stop_every_tree;

/// Stops every group still registered and reaps the leaders, then refuses
/// any new child: the politely stopped ones get `SIGTERM` and up to
/// [`GRACE`](super::group::GRACE) to exit, then every group gets `SIGKILL`. Called once at the
/// single exit point; blocking, and bounded.
pub fn stop_every_group() {
    stop_registered_groups();
    stop_every_tree();
}

/// [`stop_every_group`] without the grace: every group gets `SIGKILL` at
/// once (a second signal, where the operator wants out now).
pub fn kill_every_group() {
    kill_registered_groups();
    stop_every_tree();
}

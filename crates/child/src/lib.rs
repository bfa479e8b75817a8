//! Every process leash starts — a hook, a stdio MCP server, `git` — goes
//! through this module (ARCHITECTURE.md, "`crates/child/` — every process
//! leash starts"). It guarantees, for all three alike:
//!
//! - `group`: each child leads a process group of its own, held in one
//!   process-wide registry from the instant it is spawned; its owner kills
//!   the group when done with it, and [`stop_every_group`], called once at
//!   leash's single exit point, kills and reaps whatever is left, so no
//!   child outlives leash whatever ended the run. Nothing depends on the
//!   destructor of a task the async runtime may never run again.
//! - `env`: one written environment policy per kind of child, side by side.
//! - `capped` and `lines`: output read up to a cap fixed by the caller,
//!   checked before anything past it is buffered.
//!
//! - `reach`: what a confined command may read beyond the root and the
//!   system (the operator's toolchains), never a secret of the home.
//! - `confine`, `shell`, `tail` and `tree`: the `bash` tool's command,
//!   started through leash itself as a launcher that confines it with
//!   Landlock and seccomp, its output's tail, its process cap, and the
//!   sweep of its whole tree; `stranger`: the uid a command of root's
//!   runs as where no cgroup can cap it.
//!
//! It must never start a child outside the registry, or hand a child an
//! environment other than its kind's policy.

#![warn(missing_docs)]

pub mod capped;
pub mod confine;
pub mod env;
pub mod group;
pub mod lines;
pub mod reach;
pub mod shell;
pub mod stranger;
pub mod tail;
pub mod tree;
pub mod watchdog;

pub use group::{Group, Stop, spawn, spawn_async};

/// Stops every group still registered and reaps the leaders, then refuses
/// any new child: the politely stopped ones get `SIGTERM` and up to
/// [`group::GRACE`] to exit, then every group gets `SIGKILL`; then every
/// process tree a shell command left (`tree.rs`). Called once at the
/// single exit point, so no child outlives leash whatever the exit;
/// blocking, and bounded.
pub fn stop_every_group() {
    group::stop_registered_groups();
    tree::stop_every_tree();
}

/// [`stop_every_group`] without the grace: every group gets `SIGKILL` at
/// once (a second signal, where the operator wants out now).
pub fn kill_every_group() {
    group::kill_registered_groups();
    tree::stop_every_tree();
}

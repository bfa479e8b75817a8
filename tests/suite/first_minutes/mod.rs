//! The first five minutes of a new user, each surprise found by trying
//! it: `-h` on an 80×24 terminal, empty piped stdin, bare `leash`,
//! argument errors before the key check, messages that name their knob,
//! the API chosen by model family. The real binary, no key set.

#![allow(clippy::unwrap_used, clippy::expect_used)] // tests may panic on a broken fixture

mod api;
mod help;
mod messages;
mod stdin;

use crate::support::run::last_line;
use crate::support::shell::Workspace;

/// A workspace that is no git work tree (the temp directory's).
fn workspace() -> Workspace {
    Workspace::new()
}

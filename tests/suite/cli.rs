//! The command line a person meets (docs/src/install.md "Install", docs/src/usage.md "Usage",
//! docs/src/shells.md "Shells, terminals, pipelines", docs/src/recipes.md "Recipes"): `-h` on an 80×24 terminal, empty piped stdin, bare `leash`,
//! argument errors before the key check, messages that name their knob,
//! the API chosen by model family, shell completions and the man page, the
//! published schemas, terminal manners, the install script and the GitHub
//! Action, the README's and the manual's recipes run as written, and the
//! manual's links.

#![allow(clippy::unwrap_used, clippy::expect_used)] // tests may panic on a broken fixture

mod api_choice;
mod citations;
mod demo;
mod docs;
mod fuzz_workflow;
mod help;
mod install;
mod last_message;
mod messages;
mod newcomer_hints;
pub(crate) mod recipes;
mod reference;
mod root_files;
mod schemas;
mod shells;
mod stdin;
mod terminal;

use crate::support::run::last_line;
use crate::support::shell::Workspace;

/// A workspace that is no git work tree (the temp directory's).
fn workspace() -> Workspace {
    Workspace::new()
}

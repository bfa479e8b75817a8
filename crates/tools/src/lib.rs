//! The tools leash gives the model: files (`read_file`, `write_file`,
//! `edit_file`, `list_dir`), search (`grep`, `find`), `git`, and the
//! confined shell (`bash`), each over one path sandbox (`sandbox`), each a
//! `Tool` of `leash-protocol`'s seam (re-exported here with `TypedTool`).
//!
//! A tool must never panic, must report failure as an error (it becomes an
//! `isError` result the model can read), and must stop promptly when its
//! cancellation token fires.

#![warn(missing_docs)]

pub mod bash;
pub mod blocking;
pub mod changes;
pub mod edit_file;
pub mod find;
pub mod git;
pub mod grep;
pub mod list_dir;
pub mod read_file;
pub mod redact;
pub mod sandbox;
#[cfg(test)]
mod testing;
mod walk;
pub mod write_file;

pub use blocking::Interrupted;
pub use blocking::run_blocking_call;
pub use leash_protocol::tool::{
    InvalidArguments, Tool, ToolError, ToolUpdates, TypedTool, parameters_of,
};

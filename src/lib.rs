//! leash: a one-shot agent runner for shells and CI.
//!
//! The output contract: **stdout holds the final result and nothing else**
//! (the reply text, or one JSON object with `--output json`); **stderr holds
//! the run's events** (lines for people, or JSON lines) and, on every
//! non-zero exit, a last line that says why. The library never prints on
//! its own: every write goes through a writer a renderer owns, so tests can
//! capture output in memory.
//!
//! Modules are the architecture: `agent` is the loop (pure loop, tool
//! pipeline, stateful wrapper, types); `provider` the models (one file per
//! wire format, plus SSE, HTTP and the scripted `faux`); `tools` the file
//! tools and their sandbox; `render` the event writers and the result;
//! `cli`, `config`, `input`, `guards`, `outcome` and `runner` the one-shot
//! command around them.

#![deny(clippy::print_stdout, clippy::print_stderr)]

pub mod agent;
pub mod cli;
pub mod config;
pub mod json_schema;
pub mod provider;
pub mod render;
pub mod run;
pub mod tools;

// A path of before the layout (issue 13) that another area still uses,
// kept until the merge.
pub use run::output_schema;

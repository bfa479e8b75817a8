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
//! wire format, plus SSE, HTTP, the scripted `faux` and the provider
//! table, `catalog`); `tools` the file tools and their sandbox. Around
//! them, the one-shot command, in the order a run goes through it: `cli`
//! (the clap definition, the commands, `schema`, `man`), `config` (layers,
//! precedence, the config file, `.env`, `leash config`'s listing →
//! one [`config::RunPlan`]), `run` (the job: prepare → run → report; the
//! signals, stdin, the limits, `--output-schema`, and the outcome with the
//! one exit table) and `render` (the event writers, the result, the
//! transcript, the spinner).

#![deny(clippy::print_stdout, clippy::print_stderr)]

pub mod agent;
pub mod cli;
pub mod config;
pub mod json_schema;
pub mod protocol;
pub mod provider;
pub mod render;
pub mod run;
pub mod tools;

// A path of before the layout (issue 13) that another area still uses,
// kept until the merge.
pub use run::output_schema;

//! leash: a one-shot agent runner for shells and CI.
//!
//! The output contract: **stdout holds the final result and nothing else**
//! (the reply text, or one JSON object with `--output json`); **stderr holds
//! the run's events** (lines for people, or JSON lines) and, on every
//! non-zero exit, a last line that says why. The library never prints on
//! its own: every write goes through a writer a renderer owns, so tests can
//! capture output in memory.
//!
//! This crate is the `leash` command: the library crates under `crates/`
//! hold what a host embeds (`leash-protocol`, the vocabulary and the two
//! seams; `leash-agent`, Pi's loop; `leash-provider`, `leash-faux`,
//! `leash-tools`, `leash-mcp`, `leash-child`, `leash-media`), and these
//! modules the one-shot command around them, reached through
//! [`run_process`], on floors that only look down (ARCHITECTURE.md
//! "Floors"): `exit` (the one exit table) at the bottom; `policy` (the
//! run's rules as loop hooks); `render` (the output formats and their
//! writers); `cli` (the clap definition) and `telemetry` (the
//! OpenTelemetry traces); `config` (the layers → one validated run plan);
//! `run` (prepare → run → decide the ending → report); `batch` (many runs
//! in one process); `dispatch` (argv → what runs).

#![deny(clippy::print_stdout, clippy::print_stderr)]
#![warn(missing_docs)]

use std::ffi::OsString;
use std::io::IsTerminal;
use std::process::ExitCode;

// The one-shot command around the library crates; reached through
// [`run_process`].
mod batch;
mod cli;
mod config;
mod dispatch;
mod exit;
mod policy;
mod render;
mod run;
mod telemetry;

/// The `leash` command as the binary runs it: the `.env` read as data
/// first (never exported), then the command line, the run and its report;
/// the exit code comes from the one exit table.
pub fn run_process(args: Vec<OsString>) -> ExitCode {
    #[cfg(panic = "abort")]
    std::panic::set_hook(Box::new(|info| exit::report_panic(info)));
    // leash started again as the shell tool's launcher: it confines
    // itself and becomes `bash -c`, before anything else is read.
    if let Some(code) = leash_child::confine::launch_if_asked(&args) {
        return code;
    }
    // argv, read once: everything after reads this one result.
    let invocation = cli::argv::read(args, &|name| std::env::var(name).ok());
    let env = config::layers::Environment::process(config::dotenv::load_dotenv(
        &config::dotenv::env_file_choice(&invocation),
    ));
    let stderr_is_terminal = std::io::stderr().is_terminal();
    let streams = run::job::Streams::process();
    let outcome = match dispatch::main(invocation, env, stderr_is_terminal, streams) {
        Ok(outcome) => outcome,
        // `--help` and `--version`: clap prints them.
        Err(shown) => {
            let _ = shown.print();
            dispatch::shown(&shown)
        }
    };
    // The one exit point: no hook, MCP server or git outlives leash,
    // whatever ended the run (ARCHITECTURE.md "No child outlives leash").
    leash_child::stop_every_group();
    // Nor a write's temporary file (a tool thread cut off mid-write).
    leash_tools::sandbox::write::remove_every_temp_file();
    ExitCode::from(outcome)
}

/// What the fuzz targets and the tests reach of the binary's own modules,
/// in one place (what lives in a library crate they take from that crate).
/// Not part of any API: it changes whenever the inside does.
#[doc(hidden)]
pub mod internals {
    pub use crate::policy::limits::{LimitSettings, RunLimits};

    /// The `.env` reader: its syntax and what leash takes from it.
    pub mod dotenv {
        pub use crate::config::dotenv::{
            DotEnvError, DotEnvValues, allowed_variables, parse_entries, read_dotenv,
        };
    }

    /// The `--deny-tool`/`--allow-tool` matcher, and the normalised form of
    /// a file tool's path argument it judges.
    pub mod tool_policy {
        pub use crate::policy::command_hooks::{Policy, ToolPattern};
        pub use crate::policy::tool_patterns::normalised;
    }

    /// One line of a batch's input, and the events file name of its id.
    pub mod batch {
        pub use crate::batch::events::file_name;
        pub use crate::batch::input::{Item, parse_line};
    }

    /// A transcript as `--resume` reads it.
    pub mod resume {
        pub use crate::render::resume::{Restored, Tail, Wire, restore};
    }

    /// The OpenTelemetry settings read from the environment.
    pub mod otlp {
        pub use crate::telemetry::settings::TraceSettings;
    }
}

//! leash: a one-shot agent runner for shells and CI.
//!
//! The output contract: **stdout holds the final result and nothing else**
//! (the reply text, or one JSON object with `--output json`); **stderr holds
//! the run's events** (lines for people, or JSON lines) and, on every
//! non-zero exit, a last line that says why. The library never prints on
//! its own: every write goes through a writer a renderer owns, so tests can
//! capture output in memory.
//!
//! Modules are the architecture (ARCHITECTURE.md has the map and the
//! invariants). What a host embeds is public: [`protocol`] (the messages,
//! tool calls, usage and stop reasons everything shares), [`agent`] (the
//! two-level loop, its hooks and the stateful [`Agent`]), [`provider`]
//! (the [`Provider`] seam, the OpenAI and Anthropic wire formats over one
//! HTTP driver, the scripted `faux` model) and [`tools`] (the [`Tool`] the
//! loop calls, [`TypedTool`] for Rust tools, the file tools and their
//! sandbox). The one-shot command around them is private and reached
//! through [`run_process`], on floors that only look down (ARCHITECTURE.md
//! "Floors"): `protocol`, `secret` (the key and its redaction) and `exit`
//! (the one exit table) at the bottom; `provider` and `child` (every
//! process leash starts); `tools`; `agent` and `mcp`; `policy` (the run's
//! rules as loop hooks); `render` (the output formats and their writers);
//! `cli` (the clap definition) and `telemetry` (the OpenTelemetry traces);
//! `config` (the layers → one validated run
//! plan); `run` (prepare → run → decide the ending → report); `batch`
//! (many runs in one process); `dispatch` (argv → what runs).

#![deny(clippy::print_stdout, clippy::print_stderr)]
#![warn(missing_docs)]

use std::ffi::OsString;
use std::io::IsTerminal;
use std::process::ExitCode;

// What a host embeds: the loop, the vocabulary, the models, the tools.
pub mod agent;
pub mod protocol;
pub mod provider;
pub mod tools;

// The one-shot command around them; reached through [`run_process`].
mod batch;
mod child;
mod cli;
mod config;
mod dispatch;
mod exit;
mod mcp;
mod media;
mod policy;
mod render;
mod run;
mod secret;
mod telemetry;

pub use agent::{Agent, AgentHooks};
pub use provider::Provider;
pub use tools::{Tool, TypedTool};

/// The `leash` command as the binary runs it: the `.env` read as data
/// first (never exported), then the command line, the run and its report;
/// the exit code comes from the one exit table.
pub fn run_process(args: Vec<OsString>) -> ExitCode {
    #[cfg(panic = "abort")]
    std::panic::set_hook(Box::new(|info| exit::report_panic(info)));
    // leash started again as the shell tool's launcher: it confines
    // itself and becomes `bash -c`, before anything else is read.
    if let Some(code) = child::confine::launch_if_asked(&args) {
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
    child::stop_every_group();
    // Nor a write's temporary file (a tool thread cut off mid-write).
    tools::sandbox::write::remove_every_temp_file();
    ExitCode::from(outcome)
}

/// What the fuzz targets and the benches reach below the public API, in
/// one place. Not part of the API: it changes whenever the inside does.
#[doc(hidden)]
pub mod internals {
    pub use crate::agent::assistant_stream::stream_assistant_response;
    pub use crate::policy::limits::{LimitSettings, RunLimits};
    pub use crate::tools::blocking::join_finished_tool_threads;

    /// The `.env` reader: its syntax and what leash takes from it.
    pub mod dotenv {
        pub use crate::config::dotenv::{
            DotEnvError, DotEnvValues, allowed_variables, parse_entries, read_dotenv,
        };
    }

    /// The caps on one MCP message: a stdio server's line, an HTTP
    /// server's SSE event.
    pub mod mcp {
        pub use crate::child::lines::{CappedLines, Overflow};
        pub use crate::mcp::http::{EventSizer, TooLarge};
    }

    /// The git tool's argument whitelist.
    pub mod git {
        pub use crate::tools::git::whitelist::{SortedArgs, sort_args};
        pub use crate::tools::git::{GitCommand, GitError};
    }

    /// The `--deny-tool`/`--allow-tool` matcher, and the normalised form of
    /// a file tool's path argument it judges.
    pub mod tool_policy {
        pub use crate::policy::command_hooks::{Policy, ToolPattern};
        pub use crate::policy::tool_patterns::normalised;
    }

    /// Files of each kind leash attaches, header only, for the tests.
    #[cfg(feature = "testing")]
    pub mod media {
        pub use crate::media::testing::*;
    }

    /// The SSE decoder the wire formats share.
    pub mod sse {
        pub use crate::provider::sse::{MAX_EVENT_BYTES, SseError, SseEvent, from_bytes};
    }

    /// The retry and rate-limit headers: the server's wait, the capped
    /// wait the retry rule and the shared gate both use, and the gate.
    pub mod rate {
        pub use crate::provider::driver::retry::{
            BACKOFF_CAP, RETRY_AFTER_CAP, capped_wait, retry_after,
        };
        pub use crate::provider::driver::{RateGate, RateHint};
        pub use reqwest::header::{HeaderMap, HeaderName, HeaderValue};
    }

    /// The shell tool's arguments and what it keeps of a command's
    /// output, without running anything.
    pub mod shell {
        pub use crate::child::reach::refusal_note;
        pub use crate::child::tail::{Cut, Tail};
        pub use crate::tools::bash::{
            BashArgs, HEAD_BYTES, HEAD_LINES, MAX_BYTES, MAX_LINES, MAX_TIMEOUT, time_limit,
        };
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

    /// Each wire format's stream decoder: SSE events in, `StreamEvent`s
    /// out, as the HTTP driver runs it (fuzzed, and timed per delta).
    pub mod decode {
        pub use crate::provider::anthropic::decode as anthropic;
        pub use crate::provider::openai::decode as openai;
        pub use crate::provider::openai_responses::decode as openai_responses;
    }
}

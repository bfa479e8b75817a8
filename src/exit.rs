//! The exit table: every way a run can end, its exit code, its name in
//! JSON and the sentence `--help` gives it (ARCHITECTURE.md §2.1).
//!
//! Shared vocabulary at the bottom of the house: help, the man page, the
//! renderers, the JSON Schemas and the run all read it; nothing else in
//! leash picks an exit code. *Never* decides which status a run gets
//! (that is `run::ending`).

mod panic;

// Installed only where a panic aborts (the release profile).
#[cfg_attr(not(panic = "abort"), allow(unused_imports))]
pub use panic::report_panic;

use schemars::generate::SchemaGenerator;
use schemars::{Schema, json_schema};

/// The ways a run can end, each with its own exit code.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Status {
    /// The final assistant message ended with `stop`.
    Ok,
    /// A provider or model error.
    Error,
    /// Bad flags or configuration.
    Usage,
    /// `--max-turns` reached while the model still asked for tools.
    TurnLimit,
    /// The run ended after a terminated tool batch without an answer.
    Terminated,
    /// The final answer was cut off by the output token limit.
    Length,
    /// With `--output-schema`: the reply was not valid after one corrective turn.
    InvalidOutput,
    /// With `--max-tokens-total`: the run used up its token budget.
    Budget,
    /// An MCP server did not start or list its tools within `--mcp-timeout`.
    Mcp,
    /// `leash batch`: at least one item did not end `ok`.
    BatchFailed,
    /// The abort timer fired.
    Timeout,
    /// A signal stopped the run.
    Interrupted(Signal),
}

/// A signal that stops a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Signal {
    /// Ctrl-C.
    Interrupt,
    /// `kill`.
    Terminate,
    /// The terminal went away (`kill -HUP`).
    Hangup,
}

/// One line of the exit table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Exit {
    /// The status.
    pub status: Status,
    /// The process exit code: 128 + the signal's number for a signal.
    pub code: u8,
    /// The status's name in JSON (`ok`, `turn_limit`, ...).
    pub name: &'static str,
    /// What it means, for `--help` and the man page.
    pub meaning: &'static str,
}

const fn exit(status: Status, code: u8, name: &'static str, meaning: &'static str) -> Exit {
    Exit {
        status,
        code,
        name,
        meaning,
    }
}

/// The exit table (ARCHITECTURE.md §2.1), in exit-code order: every status once, a
/// signal's status once per signal. `--help`, the man page, the JSON
/// Schemas, the `status`/`exitCode` fields and the process's exit code all
/// read it; nothing else in leash picks an exit code.
pub const EXITS: [Exit; 14] = [
    exit(Status::Ok, 0, "ok", "the final answer ended normally"),
    exit(
        Status::Error,
        1,
        "error",
        "provider or model error (HTTP error after retries, broken stream)",
    ),
    exit(
        Status::Usage,
        2,
        "usage",
        "bad flags or configuration: missing key, unreadable file, unknown provider",
    ),
    exit(
        Status::TurnLimit,
        3,
        "turn_limit",
        "--max-turns reached while the model still asked for tools",
    ),
    exit(
        Status::Terminated,
        4,
        "terminated",
        "the run ended after a terminated tool batch without an answer",
    ),
    exit(
        Status::Length,
        5,
        "length",
        "the final answer was cut off by the output token limit",
    ),
    exit(
        Status::InvalidOutput,
        6,
        "invalid_output",
        "--output-schema: the reply is not valid after one corrective turn",
    ),
    exit(
        Status::Budget,
        7,
        "budget",
        "--max-tokens-total or --max-cost: the run used up its token or cost budget",
    ),
    exit(
        Status::Mcp,
        8,
        "mcp",
        "an MCP server did not start or list its tools within --mcp-timeout",
    ),
    exit(
        Status::BatchFailed,
        9,
        "batch_failed",
        "leash batch: at least one item did not end ok (the summary counts them by status)",
    ),
    exit(
        Status::Timeout,
        124,
        "timeout",
        "the --timeout abort timer fired",
    ),
    exit(
        Status::Interrupted(Signal::Interrupt),
        130,
        "interrupted",
        "SIGINT",
    ),
    exit(
        Status::Interrupted(Signal::Terminate),
        143,
        "interrupted",
        "SIGTERM",
    ),
    exit(
        Status::Interrupted(Signal::Hangup),
        129,
        "interrupted",
        "SIGHUP",
    ),
];

impl Status {
    /// This status's line of [`EXITS`].
    pub fn exit(self) -> Exit {
        EXITS
            .into_iter()
            .find(|exit| exit.status == self)
            // Unreachable: a test checks that every status has its line.
            .unwrap_or(exit(self, 1, "error", ""))
    }

    /// The process exit code (SIGHUP 129, SIGINT 130, SIGTERM 143).
    pub fn code(self) -> u8 {
        self.exit().code
    }

    /// The status's name in JSON (`ok`, `turn_limit`, ...).
    pub fn as_str(self) -> &'static str {
        self.exit().name
    }
}

/// The distinct status names, in exit-code order (the `status` enum of
/// the JSON Schemas).
pub fn status_names() -> Vec<&'static str> {
    let mut names: Vec<&'static str> = Vec::new();
    for exit in EXITS {
        if !names.contains(&exit.name) {
            names.push(exit.name);
        }
    }
    names
}

/// The exit table for `--help`: one line per status name; a name with
/// several codes (a signal's) lists the others after the first.
pub fn exit_lines() -> Vec<(String, &'static str, String)> {
    let mut lines: Vec<(String, &'static str, String)> = Vec::new();
    for exit in EXITS {
        match lines.iter_mut().find(|(_, name, _)| *name == exit.name) {
            Some((_, _, meaning)) => {
                let more = format!("{} for {}", exit.code, exit.meaning);
                *meaning = match meaning.split_once(" (") {
                    Some(_) => format!("{}, {more})", meaning.trim_end_matches(')')),
                    None => format!("{meaning} ({more})"),
                };
            }
            None => lines.push((exit.code.to_string(), exit.name, exit.meaning.to_owned())),
        }
    }
    lines
}

/// How the process ends: the code of a status, as `main` returns it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Outcome(pub Status);

impl From<Outcome> for std::process::ExitCode {
    fn from(outcome: Outcome) -> Self {
        std::process::ExitCode::from(outcome.0.code())
    }
}

/// The schema of a `status` field: one of the status names. (`Status` is
/// written as a string by the renderers, so its schema is given here.)
pub fn status_schema(_: &mut SchemaGenerator) -> Schema {
    let names = status_names();
    json_schema!({
        "type": "string",
        "enum": names,
        "description": "How the run ended; each status has its own exit code."
    })
}

#[cfg(test)]
mod tests;

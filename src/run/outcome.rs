//! How a run ended, decided in one place: the status, its exit code
//! (ARCHITECTURE.md §2.1) and the sentence a person reads on the last stderr line.
//!
//! Nothing else in leash picks an exit code.

use crate::protocol::{AssistantMessage, Message, StopReason};
use crate::run::cost::Cost;

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

/// Why a run was aborted from outside the loop.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AbortCause {
    /// `--timeout` fired.
    Timeout,
    /// A signal arrived.
    Signal(Signal),
}

impl AbortCause {
    /// The status of a run this stopped.
    pub fn status(self) -> Status {
        match self {
            AbortCause::Timeout => Status::Timeout,
            AbortCause::Signal(signal) => Status::Interrupted(signal),
        }
    }
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
pub const EXITS: [Exit; 13] = [
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

/// The status of a run whose result could not be written (stdout, the
/// `--output-last-message` file, the transcript): a run that had succeeded
/// fails with `error` (exit 1); a failed run keeps its own status, since
/// its code already says it failed and the more precise reason.
pub fn after_write_failure(status: Status) -> Status {
    match status {
        Status::Ok => Status::Error,
        other => other,
    }
}

/// `1 turn`, `4 turns`.
pub fn turns(count: u32) -> String {
    match count {
        1 => "1 turn".to_owned(),
        n => format!("{n} turns"),
    }
}

/// What the run's limits saw, for the decision.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct LimitReport {
    /// The turn limit ended the run.
    pub turn_limit_reached: bool,
    /// The last tool batch asked to terminate (every result did).
    pub batch_terminated: bool,
    /// The token budget stopped the run before a request it wanted.
    pub budget_exhausted: bool,
    /// Tokens the run used, as the budget counts them.
    pub tokens_used: u64,
    /// The budget that stopped the run was `--max-cost`, not `--max-tokens-total`.
    pub cost_exhausted: bool,
    /// What the run cost so far, at `--price` (zero without one).
    pub cost_used: Cost,
    /// The `--output-schema` corrective turn was asked for.
    pub corrected: bool,
    /// The repeat guard (`--max-same-call`) blocked a call in the last turn.
    pub repeat_blocked: bool,
}

/// Decides how the run ended from its messages and what stopped it.
pub fn decide_status(
    messages: &[Message],
    abort: Option<AbortCause>,
    limits: LimitReport,
) -> Status {
    let last_assistant = final_assistant(messages);
    // An abort that lands after the final answer was complete does not
    // take the answer away.
    let answered = matches!(messages.last(), Some(Message::Assistant(m))
        if !m.has_tool_calls() && matches!(m.stop_reason, StopReason::Stop | StopReason::Length));
    let aborted = last_assistant.is_some_and(|m| m.stop_reason == StopReason::Aborted)
        || (abort.is_some() && !answered);
    if aborted {
        return status_of_abort(abort);
    }
    let Some(last) = last_assistant else {
        return Status::Error;
    };
    if last.stop_reason == StopReason::Error {
        return Status::Error;
    }
    if limits.budget_exhausted {
        return Status::Budget;
    }
    if last.has_tool_calls() {
        // The run stopped right after a tool batch: either the batch
        // terminated (the repeat guard among others) or the limit ended it.
        // When both hold, the batch's own verdict is the more precise one.
        return if limits.turn_limit_reached && !limits.batch_terminated {
            Status::TurnLimit
        } else {
            Status::Terminated
        };
    }
    match last.stop_reason {
        StopReason::Length => Status::Length,
        _ => Status::Ok,
    }
}

/// The status of a run stopped from outside; a run stopped for no known
/// reason counts as interrupted by SIGINT.
pub fn status_of_abort(cause: Option<AbortCause>) -> Status {
    cause.map_or(Status::Interrupted(Signal::Interrupt), AbortCause::status)
}

/// How to raise each limit, at the end of the line of the limit that ended
/// a run: a person who hits a limit learns its knob at once.
const RAISE_TURNS: &str = "raise it with --max-turns N";
const RAISE_TIMEOUT: &str = "raise it with -t/--timeout DURATION";
const RAISE_TOKENS: &str = "raise it with --max-tokens-total N";
const RAISE_COST: &str = "raise it with --max-cost USD";
const RAISE_SAME_CALL: &str = "raise the limit with --max-same-call N";

/// The sentence for the last stderr line (and `run_end.message`).
pub fn describe(status: Status, detail: &Detail<'_>) -> String {
    match status {
        Status::Ok => "the run ended with an answer".to_owned(),
        Status::Error => format!(
            "provider error: {}",
            detail
                .error_message
                .unwrap_or("the model gave no usable response")
        ),
        Status::Usage => detail.error_message.unwrap_or("usage error").to_owned(),
        Status::Mcp => detail
            .error_message
            .unwrap_or("an MCP server did not start")
            .to_owned(),
        Status::TurnLimit => format!(
            "turn limit reached after {}; task not confirmed complete; {RAISE_TURNS}",
            turns(detail.turns)
        ),
        Status::Terminated => {
            let mut line =
                "the run ended after a terminated tool batch without an answer".to_owned();
            if let Some(reason) = detail.terminate_reason {
                line.push_str(&format!(": {reason}"));
            }
            if detail.repeat_blocked {
                line.push_str(&format!("; {RAISE_SAME_CALL}"));
            }
            line
        }
        Status::Length => "the answer was cut off by the output token limit".to_owned(),
        Status::InvalidOutput => format!(
            "the reply is not valid against --output-schema{}: {}",
            match detail.corrected {
                true => " after one corrective turn",
                false => " (no turn was left for a correction)",
            },
            detail.error_message.unwrap_or("no reply")
        ),
        Status::Budget => match (detail.cost_budget, detail.budget) {
            (Some((used, limit)), _) => format!(
                "cost budget used up: {used} of {limit} after {}; {RAISE_COST}",
                turns(detail.turns)
            ),
            (None, Some((used, limit))) => format!(
                "token budget used up: {used} of {limit} tokens after {}; {RAISE_TOKENS}",
                turns(detail.turns)
            ),
            (None, None) => "token budget used up".to_owned(),
        },
        Status::Timeout => match detail.timeout {
            Some(limit) => format!(
                "timed out after {}; {RAISE_TIMEOUT}",
                humantime::format_duration(limit)
            ),
            None => "timed out".to_owned(),
        },
        Status::Interrupted(Signal::Terminate) => "terminated by SIGTERM".to_owned(),
        Status::Interrupted(Signal::Hangup) => "terminated by SIGHUP".to_owned(),
        Status::Interrupted(Signal::Interrupt) => "interrupted by SIGINT".to_owned(),
    }
}

/// The facts `describe` may need.
#[derive(Debug, Clone, Copy, Default)]
pub struct Detail<'a> {
    /// The final error message, if any.
    pub error_message: Option<&'a str>,
    /// Turns the run took.
    pub turns: u32,
    /// Why the last batch terminated (its first result's text).
    pub terminate_reason: Option<&'a str>,
    /// The abort timer's length.
    pub timeout: Option<std::time::Duration>,
    /// Tokens used and the `--max-tokens-total` budget.
    pub budget: Option<(u64, u64)>,
    /// When `--max-cost` stopped the run: the cost and the budget.
    pub cost_budget: Option<(Cost, Cost)>,
    /// The `--output-schema` corrective turn ran.
    pub corrected: bool,
    /// The repeat guard (`--max-same-call`) ended the last batch.
    pub repeat_blocked: bool,
}

/// The last assistant message of the run.
pub fn final_assistant(messages: &[Message]) -> Option<&AssistantMessage> {
    messages.iter().rev().find_map(|message| match message {
        Message::Assistant(assistant) => Some(assistant),
        _ => None,
    })
}

#[cfg(test)]
mod tests;

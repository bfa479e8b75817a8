//! How this run ended, decided in one place: the status from every fact
//! the run gathered, and the sentence a person reads on the last stderr
//! line. The codes are the exit table's ([`crate::exit`]).

use crate::exit::{Signal, Status};
use crate::policy::command_hooks::HookVerdict;
use crate::policy::cost::Cost;
use crate::policy::limits::LimitReport;
use leash_protocol::{AssistantMessage, Message, StopReason};

/// Why a run was aborted from outside the loop.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AbortCause {
    /// `--timeout` fired.
    Timeout,
    /// A signal arrived.
    Signal(Signal),
    /// Stdin's input arrived after the grace, when the run had gone on
    /// without it (docs/src/usage.md "Stdin"): a usage error, whatever the run did.
    LateStdin,
}

impl AbortCause {
    /// The status of a run this stopped.
    pub fn status(self) -> Status {
        match self {
            AbortCause::Timeout => Status::Timeout,
            AbortCause::Signal(signal) => Status::Interrupted(signal),
            AbortCause::LateStdin => Status::Usage,
        }
    }
}

/// `1 turn`, `4 turns`.
pub fn turns(count: u32) -> String {
    match count {
        1 => "1 turn".to_owned(),
        n => format!("{n} turns"),
    }
}

/// Every fact the ending depends on, gathered by the run and its report;
/// [`decide_status`] reads nothing else.
#[derive(Debug, Clone, Default)]
pub struct Facts {
    /// A run that never reached the loop (a usage error, an MCP server
    /// that did not start, a signal while stdin was read): its status.
    pub never_ran: Option<Status>,
    /// The final assistant message, as far as the ending cares.
    pub last_reply: Option<LastReply>,
    /// What stopped the run from outside, if anything did.
    pub abort: Option<AbortCause>,
    /// What the built-in limits saw.
    pub limits: LimitReport,
    /// What the `finish-turn` hooks said at the end, if they ended it.
    pub hook: Option<HookVerdict>,
    /// `--output-schema`'s check of the final reply.
    pub schema: SchemaVerdict,
    /// An output (stdout, `--output-last-message`, the transcript) could
    /// not be written.
    pub write_failed: bool,
}

/// The final assistant message, as far as the ending cares.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LastReply {
    /// Why it stopped.
    pub stop_reason: StopReason,
    /// It asked for tools.
    pub asked_for_tools: bool,
    /// It is the transcript's last message (no tool results after it).
    pub is_last_message: bool,
}

/// `--output-schema`'s check of the final reply.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum SchemaVerdict {
    /// No `--output-schema`.
    #[default]
    NotAsked,
    /// The reply is valid.
    Valid,
    /// The reply is not valid (after the one corrective turn, if any).
    Invalid,
}

impl LastReply {
    /// The final assistant message of `messages`, if there is one.
    pub fn of(messages: &[Message]) -> Option<Self> {
        let last = final_assistant(messages)?;
        Some(LastReply {
            stop_reason: last.stop_reason,
            asked_for_tools: last.has_tool_calls(),
            is_last_message: matches!(messages.last(), Some(Message::Assistant(_))),
        })
    }
}

/// How the run ended: the one place a status is decided, from every fact.
pub fn decide_status(facts: &Facts) -> Status {
    let status = facts.never_ran.unwrap_or_else(|| status_of_the_run(facts));
    // A result that could not be written fails a run that had succeeded
    // (exit 1); a failed run keeps its own, more precise, status.
    match (facts.write_failed, status) {
        (true, Status::Ok) => Status::Error,
        _ => status,
    }
}

/// The status of a run the loop ran: the transcript and what stopped it,
/// then the `finish-turn` hooks' verdict, then `--output-schema`.
fn status_of_the_run(facts: &Facts) -> Status {
    let status = status_of_the_loop(facts);
    // A `finish-turn` hook that failed ended the run: it fails closed, so
    // even an answer is not reported as a success. One that asked for
    // more when no turn or token was left: the answer is not confirmed
    // complete.
    let status = match &facts.hook {
        Some(HookVerdict::Failed(_))
            if matches!(
                status,
                Status::Ok | Status::Terminated | Status::TurnLimit | Status::Length
            ) =>
        {
            Status::Terminated
        }
        Some(HookVerdict::ContinueRefused { budget: true }) if status == Status::Ok => {
            Status::Budget
        }
        Some(HookVerdict::ContinueRefused { budget: false }) if status == Status::Ok => {
            Status::TurnLimit
        }
        _ => status,
    };
    // The final check of `--output-schema`; the limits already gave the
    // model its one corrective turn.
    match (status, facts.schema) {
        (Status::Ok, SchemaVerdict::Invalid) => Status::InvalidOutput,
        _ => status,
    }
}

/// The status the transcript and the abort give, before hooks and schema.
fn status_of_the_loop(facts: &Facts) -> Status {
    let (abort, limits) = (facts.abort, facts.limits);
    // Input that came late makes any answer one given without it: never
    // reported as a success, even when the answer was already complete.
    if abort == Some(AbortCause::LateStdin) {
        return Status::Usage;
    }
    // An abort that lands after the final answer was complete does not
    // take the answer away.
    let answered = facts.last_reply.is_some_and(|last| {
        last.is_last_message
            && !last.asked_for_tools
            && matches!(last.stop_reason, StopReason::Stop | StopReason::Length)
    });
    let aborted = facts
        .last_reply
        .is_some_and(|last| last.stop_reason == StopReason::Aborted)
        || (abort.is_some() && !answered);
    if aborted {
        return status_of_abort(abort);
    }
    let Some(last) = facts.last_reply else {
        return Status::Error;
    };
    if last.stop_reason == StopReason::Error {
        return Status::Error;
    }
    if limits.budget_exhausted {
        return Status::Budget;
    }
    if last.asked_for_tools {
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
        Status::BatchFailed => detail
            .error_message
            .unwrap_or("some items of the batch did not end ok")
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
#[path = "ending_tests.rs"]
mod tests;

//! What `--events text` says about each event, for a person watching a
//! run: one line per tool call (the tool, its main argument, how it went,
//! how long it took), the model's interim text and a reasoning summary,
//! each turn's tokens. The bookkeeping (starts, message ends, call ids)
//! stays in `--events jsonl`.
//!
//! Everything a model or a server wrote passes through [`inert`] here,
//! once, so no line can break, forge a `leash:` line or drive the terminal.

use std::collections::HashMap;

use owo_colors::OwoColorize;
use serde_json::Value;

use crate::policy::cost::{Cost, Price};
use crate::render::{MAX_LINE_CHARS, inert};
use leash_agent::types::AgentEvent;
use leash_protocol::{AssistantContent, AssistantMessage, Message, StopReason, Usage};

/// The most characters of the model's interim text on its line.
const MODEL_TEXT_CHARS: usize = 300;
/// The most characters of a reasoning summary.
const THINKING_CHARS: usize = 160;
/// The most characters of a failed tool's first line.
const ERROR_CHARS: usize = 300;
/// The most characters of a tool's main argument.
const ARGUMENT_CHARS: usize = 80;

/// The flag that offers `tool`, when `result` says the model called it
/// without that flag (docs/src/tools.md "The shell: --allow-exec"): the
/// person reading the events learns which flag the run lacked; the model
/// got the plain `Tool NAME not found` (SPEC "A tool batch").
fn withheld_by(tool: &str, result: &str) -> Option<&'static str> {
    let flag = match tool {
        "bash" => "--allow-exec",
        "write_file" | "edit_file" => "--allow-write",
        _ => return None,
    };
    (result == format!("Tool {tool} not found")).then_some(flag)
}

/// How a line is coloured when colour is on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Tone {
    Plain,
    Good,
    Bad,
    Warning,
    Quiet,
}

/// One event's line: `[tag] text`.
pub(super) struct EventLine {
    tag: String,
    text: String,
    tone: Tone,
}

impl EventLine {
    /// `text` may hold what a server or a model wrote (tool names,
    /// arguments, error text, reasons): it is made inert here, once for all.
    pub(super) fn new(tag: impl Into<String>, text: impl AsRef<str>, tone: Tone) -> Self {
        EventLine {
            tag: tag.into(),
            text: inert(text.as_ref(), MAX_LINE_CHARS),
            tone,
        }
    }

    pub(super) fn render(&self, color: bool) -> String {
        let tag = format!("[{}]", self.tag);
        if !color {
            return match self.text.is_empty() {
                true => tag,
                false => format!("{tag} {}", self.text),
            };
        }
        let text = match self.tone {
            Tone::Plain => self.text.clone(),
            Tone::Good => self.text.green().to_string(),
            Tone::Bad => self.text.red().to_string(),
            Tone::Warning => self.text.yellow().to_string(),
            Tone::Quiet => self.text.dimmed().to_string(),
        };
        match self.text.is_empty() {
            true => tag.dimmed().to_string(),
            false => format!("{} {text}", tag.dimmed()),
        }
    }
}

/// Token counts and, with a price, the cost: the tail of the turn and
/// `run_end` lines.
pub fn usage_words(usage: &Usage, cost: Option<Cost>) -> String {
    let mut words = format!(
        "tokens: {} input, {} output, {} cache read, {} cache write",
        usage.input, usage.output, usage.cache_read, usage.cache_write
    );
    if let Some(cost) = cost {
        words.push_str(&format!(" · cost {cost}"));
    }
    words
}

/// Turns events into lines. It remembers what a line needs from earlier
/// events: the turn's number and each running call's arguments (the end
/// of a call does not carry them).
#[derive(Debug, Default)]
pub(super) struct Narrator {
    turn: u32,
    args: HashMap<String, Value>,
    /// `--stream` shows the model's text live: no `[model]` line repeats it.
    pub(super) text_shown_live: bool,
}

impl Narrator {
    /// The lines for `event`, none for bookkeeping.
    pub(super) fn lines(&mut self, event: &AgentEvent, price: Option<&Price>) -> Vec<EventLine> {
        match event {
            AgentEvent::TurnStart => {
                self.turn += 1;
                Vec::new()
            }
            AgentEvent::MessageEnd {
                message: Message::Assistant(assistant),
            } => assistant_lines(assistant, self.text_shown_live),
            AgentEvent::ToolExecutionStart {
                tool_call_id, args, ..
            } => {
                self.args.insert(tool_call_id.clone(), args.clone());
                Vec::new()
            }
            AgentEvent::ToolExecutionEnd {
                tool_call_id,
                tool_name,
                is_error,
                duration_ms,
                result,
            } => {
                let args = self.args.remove(tool_call_id).unwrap_or(Value::Null);
                let mut text = tool_name.clone();
                if let Some(argument) = main_argument(tool_name, &args) {
                    text.push(' ');
                    text.push_str(&argument);
                }
                let shell = (!*is_error && tool_name == "bash")
                    .then(|| shell_status(&result.details))
                    .flatten();
                match (*is_error, duration_ms) {
                    (false, _) if shell.is_some() => {
                        text.push_str(&shell.unwrap_or_default());
                    }
                    (false, Some(ms)) => text.push_str(&format!(" ok {ms} ms")),
                    (false, None) => text.push_str(" ok"),
                    (true, ran) => {
                        let result = result.text();
                        let first = result.lines().find(|line| !line.trim().is_empty());
                        let first = inert(first.unwrap_or("(no text)"), ERROR_CHARS);
                        text.push_str(&format!(" error: {first}"));
                        if let Some(ms) = ran {
                            text.push_str(&format!(" ({ms} ms)"));
                        } else if let Some(flag) = withheld_by(tool_name, &result) {
                            text.push_str(&format!(" (leash offers {tool_name} only with {flag})"));
                        }
                    }
                }
                let tone = if *is_error { Tone::Bad } else { Tone::Good };
                vec![EventLine::new("tool", text, tone)]
            }
            AgentEvent::TurnEnd {
                tool_results,
                message,
            } => {
                let calls = match tool_results.len() {
                    0 => match message.stop_reason {
                        StopReason::Stop => "answer".to_owned(),
                        StopReason::Length => "answer cut off".to_owned(),
                        StopReason::Error => "failed".to_owned(),
                        StopReason::Aborted => "aborted".to_owned(),
                        StopReason::ToolUse => "no tool calls".to_owned(),
                    },
                    1 => "1 tool call".to_owned(),
                    n => format!("{n} tool calls"),
                };
                let cost = price.map(|price| price.cost(&message.usage));
                let text = format!("{calls} · {}", usage_words(&message.usage, cost));
                vec![EventLine::new(
                    format!("turn {}", self.turn.max(1)),
                    text,
                    Tone::Quiet,
                )]
            }
            AgentEvent::Retry {
                attempt,
                delay_ms,
                reason,
            } => vec![EventLine::new(
                "retry",
                format!("attempt {attempt} in {delay_ms}ms: {reason}"),
                Tone::Warning,
            )],
            AgentEvent::AgentStart
            | AgentEvent::MessageStart { .. }
            | AgentEvent::MessageEnd { .. }
            | AgentEvent::MessageUpdate { .. }
            | AgentEvent::ToolExecutionUpdate { .. }
            | AgentEvent::AgentEnd { .. } => Vec::new(),
        }
    }
}

/// What a person wants of a finished reply: its reasoning in short, the
/// interim text of a turn that goes on to call tools (a final answer is
/// the reply on stdout, not an event), or why it failed.
fn assistant_lines(assistant: &AssistantMessage, text_shown_live: bool) -> Vec<EventLine> {
    let mut lines = Vec::new();
    let thinking: Vec<&str> = assistant
        .content
        .iter()
        .filter_map(|block| match block {
            AssistantContent::Thinking {
                thinking,
                redacted: false,
                ..
            } => Some(thinking.as_str()),
            _ => None,
        })
        .collect();
    let thinking = thinking.join(" ");
    if !thinking.trim().is_empty() {
        let text = inert(&thinking, THINKING_CHARS);
        lines.push(EventLine::new("thinking", text, Tone::Quiet));
    }
    match (assistant.stop_reason, &assistant.error_message) {
        (StopReason::Aborted, _) => lines.push(EventLine::new("model", "aborted", Tone::Bad)),
        (_, Some(error)) => {
            lines.push(EventLine::new(
                "model",
                format!("error: {error}"),
                Tone::Bad,
            ));
        }
        _ if assistant.has_tool_calls() && !text_shown_live => {
            let text = assistant.text();
            if !text.trim().is_empty() {
                let text = inert(&text, MODEL_TEXT_CHARS);
                lines.push(EventLine::new("model", text, Tone::Plain));
            }
        }
        _ => {}
    }
    lines
}

/// How a `bash` command ended, from its result's `details`:
/// ` exit 101 · 12.3 s`, ` signal SIGKILL · 1.0 s`, ` timed out (exit 124)
/// · 30.0 s`; `None` for any other tool's result.
fn shell_status(details: &Value) -> Option<String> {
    let ms = details.get("durationMs")?.as_u64()?;
    let seconds = format!("{:.1} s", ms as f64 / 1000.0);
    let code = details.get("exitCode").and_then(Value::as_i64);
    let timed_out = details.get("timedOut").and_then(Value::as_bool)?;
    let signal = details.get("signal").and_then(Value::as_str);
    Some(match (timed_out, code, signal) {
        (true, code, _) => format!(" timed out (exit {}) · {seconds}", code.unwrap_or(124)),
        (false, _, Some(signal)) => format!(" signal {} · {seconds}", inert(signal, 20)),
        (false, code, None) => format!(" exit {} · {seconds}", code.unwrap_or(-1)),
    })
}

/// What a call is about, in a few words: the path it reads or writes, the
/// pattern it searches (quoted, with its directory), the git view; for
/// any other tool (an MCP server's) its first short string argument.
fn main_argument(tool: &str, args: &Value) -> Option<String> {
    let text = |key: &str| args.get(key).and_then(Value::as_str);
    let shown = match tool {
        "grep" | "find" => {
            let mut shown = Value::String(text("pattern")?.to_owned()).to_string();
            if let Some(path) = text("path").filter(|path| !path.is_empty() && *path != ".") {
                shown.push_str(&format!(" in {path}"));
            }
            shown
        }
        "git" => {
            let mut shown = text("command")?.to_owned();
            for arg in args
                .get("args")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                shown.push(' ');
                shown.push_str(arg.as_str().unwrap_or("?"));
            }
            shown
        }
        "list_dir" => text("path").unwrap_or(".").to_owned(),
        _ => match text("path") {
            Some(path) => path.to_owned(),
            None => args
                .as_object()?
                .values()
                .find_map(Value::as_str)
                .map(|value| Value::String(value.to_owned()).to_string())?,
        },
    };
    Some(inert(&shown, ARGUMENT_CHARS))
}

//! Showing a run: the event writers for stderr (`text` for people, `jsonl`
//! for programs) behind one trait, and the final result for stdout.
//!
//! Renderers own their writers and never print anywhere else; a write that
//! fails (a closed pipe) is dropped quietly, it never ends the run.

pub mod format;
pub mod jsonl;
pub mod lane;
mod pick;
pub mod result;
pub mod resume;
pub mod schema;
pub mod spinner;
pub mod text;
pub mod transcript;

pub use pick::renderer;

use std::io::{self, Write};

use serde::Serialize;

use crate::exit::Status;
use crate::policy::cost::{Cost, Price};
use leash_agent::types::AgentEvent;
use leash_protocol::Usage;
use leash_provider::ThinkingLevel;

/// The summary of a finished run, shared by `run_end`, the JSON result and
/// the last stderr line.
#[derive(Debug, Clone, PartialEq)]
pub struct RunReport {
    /// How the run ended.
    pub status: Status,
    /// Why, in words.
    pub message: String,
    /// The final reply text (may be empty).
    pub reply: String,
    /// With `--output-schema`: the validated reply, as the model wrote it.
    pub output: Option<crate::policy::output_schema::ValidJson>,
    /// The final assistant message's stop reason, if there was one.
    pub stop_reason: Option<leash_protocol::StopReason>,
    /// The final error message, if any.
    pub error_message: Option<String>,
    /// Turns (assistant messages) the run took.
    pub turns: u32,
    /// Token usage summed over the run.
    pub usage: leash_protocol::Usage,
    /// Each turn's usage (one per assistant message), with its cost.
    pub turn_usage: Vec<TurnUsage>,
    /// What the run cost, with a price (`--price`).
    pub cost: Option<Cost>,
    /// Wall time of the whole run.
    pub duration_ms: u64,
    /// The provider's name.
    pub provider: String,
    /// The model's name.
    pub model: String,
    /// `--reasoning-effort`, when a level was asked for (`None` for `off`).
    pub reasoning_effort: Option<ThinkingLevel>,
    /// The files the run changed (`write_file`, `edit_file`), relative to
    /// the root, sorted, each once.
    pub changed_files: Vec<String>,
    /// The files attached to the prompt (`--attach`), as records: name,
    /// type, size, SHA-256 (never the bytes).
    pub attachments: Vec<leash_protocol::Attachment>,
    /// With `--resume`: the earlier turns (assistant messages) restored;
    /// `turns` counts this run's only.
    pub restored_turns: Option<u32>,
}

/// One turn's usage as the result and `run_end` list it: the token counts,
/// and the cost at `--price` when there is one.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TurnUsage {
    /// The turn's token counts.
    #[serde(flatten)]
    pub usage: Usage,
    /// What the turn cost in USD, with a price.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cost: Option<Cost>,
}

impl TurnUsage {
    /// The usage of one turn, priced when there is a price.
    pub fn new(usage: Usage, price: Option<&Price>) -> Self {
        TurnUsage {
            usage,
            cost: price.map(|price| price.cost(&usage)),
        }
    }
}

/// The JSON Schema of a recorded `reasoningEffort`: a level's name; `off`
/// is never written (the field is left out instead).
pub fn reasoning_effort_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    let names: Vec<&str> = RECORDED_LEVELS.iter().map(|level| level.as_str()).collect();
    schemars::json_schema!({
        "type": "string",
        "enum": names,
        "description": "The --reasoning-effort the run asked for; absent when none."
    })
}

/// The levels `reasoningEffort` may hold: every one but `off`.
pub const RECORDED_LEVELS: [ThinkingLevel; 5] = [
    ThinkingLevel::Minimal,
    ThinkingLevel::Low,
    ThinkingLevel::Medium,
    ThinkingLevel::High,
    ThinkingLevel::XHigh,
];

/// Writes a run's events as they happen, then its end.
pub trait EventRenderer: Send {
    /// One event of the run.
    fn event(&mut self, event: &AgentEvent);
    /// A line of notice outside the run's events (e.g. stdin was skipped).
    fn notice(&mut self, text: &str);
    /// `--resume` restored `turns` earlier turns from `path`, before the
    /// run's own events: people see what the model already knows. By
    /// default nothing (a program reads `restoredTurns` in the result).
    fn resumed(&mut self, _turns: u32, _path: &std::path::Path) {}
    /// A `--hook` failed (it fails closed): by default a notice line.
    fn hook_failed(&mut self, failure: &crate::policy::command_hooks::HookFailure) {
        self.notice(&failure.reason);
    }
    /// The end of the run. On a non-zero exit this writes the last line,
    /// which says why.
    fn run_end(&mut self, report: &RunReport);
    /// Clears what is live on the terminal (the indicator, a streamed line)
    /// before the result is printed.
    fn settle(&mut self) {}
    /// The events [`event`](Self::event) can act on, fixed once built: the
    /// run hands the others to no one. A renderer lives on a thread of its
    /// own, so every event handed over wakes that thread; under a busy CPU
    /// each wake-up waits for a time slice.
    fn interest(&self) -> Interest {
        Interest::Every
    }
}

/// Which events change what an [`EventRenderer`] shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Interest {
    /// All of them.
    Every,
    /// All but the streamed updates (text, thinking and call deltas).
    NoUpdates,
    /// None: only notices and the end are written.
    Nothing,
}

impl Interest {
    /// Whether `event` is worth handing over.
    pub fn wants(self, event: &AgentEvent) -> bool {
        match self {
            Interest::Every => true,
            Interest::NoUpdates => !matches!(event, AgentEvent::MessageUpdate { .. }),
            Interest::Nothing => false,
        }
    }
}

/// The one `leash:` line of a command that is not a run (a print
/// command that could not write, `leash config`'s verdict), made inert
/// like a run's last line: a message may quote a config file or a path.
pub fn write_reason(stderr: &mut dyn Write, message: &str) -> io::Result<()> {
    writeln!(stderr, "leash: {}", inert(message, MAX_LINE_CHARS))?;
    stderr.flush()
}

/// clap's usage lines above bare `leash`'s reason (leash's own text, not
/// made inert), then an empty line.
pub fn write_usage(stderr: &mut dyn Write, usage: &str) -> io::Result<()> {
    writeln!(stderr, "{usage}\n")
}

/// The most characters of one line of `--events text` or the last
/// `leash:` line; the rest is cut with `…`.
pub const MAX_LINE_CHARS: usize = 1000;

/// `text` made inert for a terminal line: every run of whitespace (line
/// breaks, `\r`, tabs) becomes one space, every other control character
/// (ESC, BEL, NUL, …) and every bidirectional override becomes `�`, and the
/// result is cut at `max_chars`. Server error text, tool names, call ids
/// and reasons pass through here, so none of them can break a line, forge
/// a `leash:` line or drive the terminal. JSON lines need none of it:
/// serde escapes control characters.
pub fn inert(text: &str, max_chars: usize) -> String {
    let mut out = String::with_capacity(text.len().min(max_chars * 4));
    let mut chars = 0;
    let mut space = false;
    for c in text.trim().chars() {
        let c = if c.is_whitespace() {
            space = true;
            continue;
        } else if c.is_control() || is_bidi_control(c) {
            '\u{fffd}'
        } else {
            c
        };
        let needed = if space { 2 } else { 1 };
        if chars + needed > max_chars {
            out.push('…');
            return out;
        }
        if std::mem::take(&mut space) {
            out.push(' ');
            chars += 1;
        }
        out.push(c);
        chars += 1;
    }
    out
}

/// Characters that reorder what a terminal shows (Trojan Source).
fn is_bidi_control(c: char) -> bool {
    matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}' | '\u{200e}' | '\u{200f}' | '\u{061c}')
}

/// A writer tests can read back.
#[cfg(test)]
#[derive(Clone, Default)]
pub(crate) struct SharedBuffer(pub std::sync::Arc<std::sync::Mutex<Vec<u8>>>);

#[cfg(test)]
impl Write for SharedBuffer {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn inert_text_is_one_line_without_control_characters() {
        assert_eq!(
            inert("boom\r\n\nleash: forged\tline ", 100),
            "boom leash: forged line"
        );
        assert_eq!(
            inert("a\u{1b}[2Jb\u{7}c\u{0}", 100),
            "a\u{fffd}[2Jb\u{fffd}c\u{fffd}"
        );
        assert_eq!(inert("evil\u{202e}txt", 100), "evil\u{fffd}txt");
        assert_eq!(inert("x\u{85}y\u{2028}z", 100), "x y z");
        assert_eq!(inert("abcdef", 4), "abcd…");
        assert_eq!(inert("ab cdef", 3), "ab…");
        assert_eq!(
            inert(&"é".repeat(2000), MAX_LINE_CHARS).chars().count(),
            MAX_LINE_CHARS + 1
        );
        assert_eq!(inert("plain", 5), "plain");
    }
}

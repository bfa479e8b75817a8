//! Showing a run: the event writers for stderr (`text` for people, `jsonl`
//! for programs) behind one trait, and the final result for stdout.
//!
//! Renderers own their writers and never print anywhere else; a write that
//! fails (a closed pipe) is dropped quietly, it never ends the run.

pub mod jsonl;
pub mod result;
pub mod text;

use std::io::Write;

use crate::agent::types::AgentEvent;
use crate::cli::EventsFormat;
use crate::outcome::Status;

/// The summary of a finished run, shared by `run_end`, the JSON result and
/// the last stderr line.
#[derive(Debug, Clone, PartialEq)]
pub struct RunReport {
    /// How the run ended.
    pub status: Status,
    /// The process exit code.
    pub exit_code: u8,
    /// Why, in words.
    pub message: String,
    /// The final reply text (may be empty).
    pub reply: String,
    /// With `--output-schema`: the validated reply, as the model wrote it.
    pub output: Option<crate::output_schema::ValidJson>,
    /// The final assistant message's stop reason, if there was one.
    pub stop_reason: Option<crate::agent::types::StopReason>,
    /// The final error message, if any.
    pub error_message: Option<String>,
    /// Turns (assistant messages) the run took.
    pub turns: u32,
    /// Token usage summed over the run.
    pub usage: crate::agent::types::Usage,
    /// Wall time of the whole run.
    pub duration_ms: u64,
    /// The provider's name.
    pub provider: String,
    /// The model's name.
    pub model: String,
}

/// Writes a run's events as they happen, then its end.
pub trait EventRenderer: Send {
    /// One event of the run.
    fn event(&mut self, event: &AgentEvent);
    /// A line of notice outside the run's events (e.g. stdin was skipped).
    fn notice(&mut self, text: &str);
    /// The end of the run. On a non-zero exit this writes the last line,
    /// which says why.
    fn run_end(&mut self, report: &RunReport);
}

/// The renderer for `--events`.
pub fn renderer(format: EventsFormat, out: Box<dyn Write + Send>) -> Box<dyn EventRenderer> {
    match format {
        EventsFormat::Text => Box::new(text::TextRenderer::new(out, true)),
        EventsFormat::None => Box::new(text::TextRenderer::new(out, false)),
        EventsFormat::Jsonl => Box::new(jsonl::JsonlRenderer::new(out)),
    }
}

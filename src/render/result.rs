//! What stdout holds (ARCHITECTURE.md §2.3): the final reply text and nothing else, or
//! one JSON result object.
//!
//! Nothing but the result is ever written to stdout.

use std::io::Write;

use serde::Serialize;

use super::{RunReport, TurnUsage};
use crate::exit::Status;
use crate::policy::cost::Cost;
use crate::render::format::OutputFormat;
use leash_protocol::{StopReason, Usage};
use leash_provider::ThinkingLevel;

/// The `--output json` object.
#[derive(Debug, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct JsonResult<'a> {
    /// `ok`, `error`, `turn_limit`, ...
    #[schemars(schema_with = "crate::exit::status_schema")]
    pub status: &'a str,
    /// The process exit code.
    pub exit_code: u8,
    /// Why the run failed, in the words of the last `leash:` line on
    /// stderr (and of `run_end`'s `message`); only on a non-zero exit.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub message: Option<&'a str>,
    /// Exactly what `--output text` prints (without the one newline text
    /// mode ends it with): the answer after `ok` or `length` (the validated
    /// JSON with `--output-schema`), empty after every other ending, so
    /// `jq -r .reply` never takes a failed run's half-way text for an answer.
    pub reply: &'a str,
    /// The text of the run's last assistant message, whatever the ending:
    /// after a turn limit, a timeout or an error, what the model was
    /// saying when the run stopped ("Looking around."). Not an answer.
    pub last_assistant_text: &'a str,
    /// With `--output-schema`: the validated reply as JSON, token for
    /// token as the model wrote it.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(with = "Option<serde_json::Value>")]
    pub output: Option<&'a crate::policy::output_schema::ValidJson>,
    /// The final assistant message's stop reason.
    pub stop_reason: Option<StopReason>,
    /// The error, when there is one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error_message: Option<&'a str>,
    /// Turns the run took.
    pub turns: u32,
    /// Token usage over the run.
    pub usage: &'a Usage,
    /// Each turn's usage (one per assistant message), with its cost when
    /// there is a price.
    pub turn_usage: &'a [TurnUsage],
    /// With `--price`: what the run cost in USD.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cost: Option<Cost>,
    /// Wall time of the run.
    pub duration_ms: u64,
    /// The provider.
    pub provider: &'a str,
    /// The model.
    pub model: &'a str,
    /// `--reasoning-effort`, when a level was asked for; absent for `off`.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "crate::render::reasoning_effort_schema")]
    pub reasoning_effort: Option<&'static str>,
    /// The files the run changed (`write_file`, `edit_file`), relative to
    /// `--root`, sorted, each once; empty when none.
    pub changed_files: &'a [String],
    /// The files attached to the prompt (`--attach`), each by name,
    /// `mediaType`, `size` and `sha256` (never the bytes); empty when none.
    pub attachments: &'a [leash_protocol::Attachment],
    /// With `--resume`: the earlier turns restored (`turns` counts this
    /// run's only); absent without `--resume`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub restored_turns: Option<u32>,
}

impl<'a> JsonResult<'a> {
    /// The result object of a report.
    pub fn new(report: &'a RunReport) -> Self {
        JsonResult {
            status: report.status.as_str(),
            exit_code: report.status.code(),
            message: (report.status != Status::Ok).then_some(report.message.as_str()),
            reply: printed_reply(report),
            last_assistant_text: &report.reply,
            output: report.output.as_ref(),
            stop_reason: report.stop_reason,
            error_message: report.error_message.as_deref(),
            turns: report.turns,
            usage: &report.usage,
            turn_usage: &report.turn_usage,
            cost: report.cost,
            duration_ms: report.duration_ms,
            provider: &report.provider,
            model: &report.model,
            reasoning_effort: report.reasoning_effort.map(ThinkingLevel::as_str),
            changed_files: &report.changed_files,
            attachments: &report.attachments,
            restored_turns: report.restored_turns,
        }
    }
}

/// What `--output text` prints for `report`, without its final newline:
/// the answer — complete (`ok`) or cut off (`length`) —, or the validated
/// JSON as the model wrote it; after any other ending nothing. The JSON
/// result's `reply` is this same text (docs/src/events.md "The JSON result").
pub fn printed_reply(report: &RunReport) -> &str {
    if !matches!(report.status, Status::Ok | Status::Length) {
        return "";
    }
    match &report.output {
        Some(value) => value.as_str(),
        None => &report.reply,
    }
}

/// Writes the run's result to stdout in the chosen format. The text form
/// holds the answer — complete (`ok`) or cut off (`length`) — ending with
/// exactly one newline, or the validated JSON as the model wrote it; after any
/// other ending it stays empty, so a pipeline never takes a failed run's
/// partial text for an answer. The JSON form always holds the whole report.
pub fn write_result(
    format: OutputFormat,
    report: &RunReport,
    out: &mut dyn Write,
) -> std::io::Result<()> {
    match format {
        OutputFormat::Text => {
            if !matches!(report.status, Status::Ok | Status::Length) {
                return out.flush();
            }
            let reply = printed_reply(report);
            if report.output.is_some() {
                out.write_all(reply.as_bytes())?;
                out.write_all(b"\n")?;
            } else if !reply.is_empty() {
                out.write_all(reply.as_bytes())?;
                if !reply.ends_with('\n') {
                    out.write_all(b"\n")?;
                }
            }
        }
        OutputFormat::Json => {
            serde_json::to_writer(&mut *out, &JsonResult::new(report))?;
            out.write_all(b"\n")?;
        }
    }
    out.flush()
}

//! `--events text`: one short line per event, for people watching a run
//! (SPEC 2.2). Streaming deltas are not printed; the reply goes to stdout.
//! With `--events none` only the final "why" line of a failed run is kept.

use std::io::Write;

use super::{EventRenderer, RunReport};
use crate::agent::types::{AgentEvent, Message};

/// Writes the human-readable event lines.
pub struct TextRenderer {
    out: Box<dyn Write + Send>,
    events: bool,
}

impl TextRenderer {
    /// `events: false` prints only notices and the failure line.
    pub fn new(out: Box<dyn Write + Send>, events: bool) -> Self {
        TextRenderer { out, events }
    }

    fn line(&mut self, text: &str) {
        // A closed stderr must not end the run.
        let _ = writeln!(self.out, "{text}");
        let _ = self.out.flush();
    }
}

/// The line for one event, if it has one.
pub fn event_line(event: &AgentEvent) -> Option<String> {
    Some(match event {
        AgentEvent::TurnStart => "[turn_start]".to_owned(),
        AgentEvent::MessageEnd { message } => match message {
            Message::Assistant(assistant) => match &assistant.error_message {
                Some(error) => format!(
                    "[message_end] assistant {}: {error}",
                    assistant.stop_reason.as_str()
                ),
                None => "[message_end] assistant".to_owned(),
            },
            other => format!("[message_end] {}", other.role()),
        },
        AgentEvent::ToolExecutionStart {
            tool_call_id,
            tool_name,
            ..
        } => format!("[tool_start] {tool_name} {tool_call_id}"),
        AgentEvent::ToolExecutionEnd {
            tool_call_id,
            tool_name,
            is_error,
            duration_ms,
            result,
        } => {
            let mut line = format!(
                "[tool_end] {tool_name} {tool_call_id} {}",
                if *is_error { "error" } else { "ok" }
            );
            if let Some(ms) = duration_ms {
                line.push_str(&format!(" {ms}ms"));
            }
            if *is_error {
                let text = result.text();
                let first = text.lines().next().unwrap_or_default();
                line.push_str(&format!(": {first}"));
            }
            line
        }
        AgentEvent::TurnEnd { tool_results, .. } => format!("[turn_end] {}", tool_results.len()),
        AgentEvent::Retry {
            attempt,
            delay_ms,
            reason,
        } => format!("[retry] attempt {attempt} in {delay_ms}ms: {reason}"),
        AgentEvent::AgentStart
        | AgentEvent::MessageStart { .. }
        | AgentEvent::MessageUpdate { .. }
        | AgentEvent::ToolExecutionUpdate { .. }
        | AgentEvent::AgentEnd { .. } => return None,
    })
}

impl EventRenderer for TextRenderer {
    fn event(&mut self, event: &AgentEvent) {
        if !self.events {
            return;
        }
        if let Some(line) = event_line(event) {
            self.line(&line);
        }
    }

    fn notice(&mut self, text: &str) {
        self.line(&format!("leash: {text}"));
    }

    fn run_end(&mut self, report: &RunReport) {
        if report.exit_code != 0 {
            self.line(&format!("leash: {}", report.message));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::agent::types::{Content, ToolResultMessage};

    #[test]
    fn tool_end_lines_show_status_duration_and_the_error() {
        let result = ToolResultMessage {
            tool_call_id: "call_1".into(),
            tool_name: "read_file".into(),
            content: vec![Content::text("Tool execution was blocked\nmore")],
            details: serde_json::Value::Null,
            is_error: true,
            duration_ms: None,
            timestamp: 0,
        };
        let line = event_line(&AgentEvent::ToolExecutionEnd {
            tool_call_id: "call_1".into(),
            tool_name: "read_file".into(),
            result,
            is_error: true,
            duration_ms: None,
        });
        assert_eq!(
            line.as_deref(),
            Some("[tool_end] read_file call_1 error: Tool execution was blocked")
        );
    }
}

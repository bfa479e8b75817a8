//! `--events jsonl`: one JSON object per line (ARCHITECTURE.md §2.2), the first
//! carrying `schemaVersion`, the last being `run_end`. The wire shapes are
//! declared here, apart from the internal event types, so the public format
//! changes only when this file does.
//!
//! Every line must be a complete JSON object: nothing else is ever written
//! to this stream.

use std::io::Write;

use serde::Serialize;
use serde_json::Value;

use super::{EventRenderer, RunReport, TurnUsage};
use crate::policy::cost::{Cost, Price};
use leash_agent::types::{AgentEvent, AssistantMessageEvent};
use leash_protocol::{AssistantMessage, Message, ToolResultMessage, Usage};
use leash_provider::ThinkingLevel;
use leash_tools::changes::FileChange;

/// The file a successful tool call changed, as its result's `details`
/// record it.
pub(crate) fn file_change(result: &ToolResultMessage) -> Option<FileChange> {
    match result.is_error {
        true => None,
        false => FileChange::from_details(&result.details),
    }
}

/// The version of the event format; raised by a change that breaks readers.
pub const SCHEMA_VERSION: u32 = 1;

/// One line of the event stream, as readers see it.
#[derive(Debug, Serialize, schemars::JsonSchema)]
#[serde(
    tag = "type",
    rename_all = "snake_case",
    rename_all_fields = "camelCase"
)]
pub enum JsonlEvent<'a> {
    /// The run began.
    AgentStart {
        /// [`SCHEMA_VERSION`].
        schema_version: u32,
    },
    /// A turn began.
    TurnStart,
    /// A message began.
    MessageStart {
        /// The message so far.
        message: &'a Message,
    },
    /// A streamed delta of the assistant message.
    MessageUpdate {
        /// The delta.
        assistant_message_event: &'a AssistantMessageEvent,
    },
    /// A message is final.
    MessageEnd {
        /// The final message.
        message: &'a Message,
    },
    /// A tool call entered its batch.
    ToolExecutionStart {
        /// The call's id.
        tool_call_id: &'a str,
        /// The tool.
        tool_name: &'a str,
        /// The arguments as the model sent them.
        args: &'a Value,
    },
    /// A running tool reported progress.
    ToolExecutionUpdate {
        /// The call's id.
        tool_call_id: &'a str,
        /// The tool.
        tool_name: &'a str,
        /// What it reported.
        partial_result: &'a Value,
    },
    /// A tool call is final.
    ToolExecutionEnd {
        /// The call's id.
        tool_call_id: &'a str,
        /// The tool.
        tool_name: &'a str,
        /// The result message.
        result: &'a ToolResultMessage,
        /// Whether it failed.
        is_error: bool,
        /// Present only when the tool ran.
        #[serde(skip_serializing_if = "Option::is_none")]
        duration_ms: Option<u64>,
        /// The file the call changed (`write_file`, `edit_file`); present
        /// only when it changed one.
        #[serde(skip_serializing_if = "Option::is_none")]
        changed: Option<FileChange>,
    },
    /// A turn is over.
    TurnEnd {
        /// The turn's assistant message, with its `role` as in `message_end`.
        message: Assistant<'a>,
        /// The turn's tool results.
        tool_results: &'a [ToolResultMessage],
        /// With `--price`: what the turn cost in USD (its usage is the
        /// message's).
        #[serde(skip_serializing_if = "Option::is_none")]
        cost: Option<Cost>,
    },
    /// A provider request is retried.
    Retry {
        /// 1 for the first retry.
        attempt: u32,
        /// The wait before it.
        delay_ms: u64,
        /// Why.
        reason: &'a str,
    },
    /// The agent run is over.
    AgentEnd {
        /// Every message the run added.
        messages: &'a [Message],
    },
    /// A notice from leash itself (e.g. stdin was skipped).
    Notice {
        /// The notice.
        message: &'a str,
    },
    /// A `--hook` failed (crashed, timed out, answered with something
    /// other than its JSON); it failed closed as `reason` says.
    HookFailed {
        /// `hook #2 (before-tool-call=./policy.sh)`.
        hook: &'a str,
        /// `before-tool-call`, `after-tool-call` or `finish-turn`.
        #[schemars(schema_with = "hook_event_schema")]
        event: &'a str,
        /// The call it ran for (tool-call events only).
        #[serde(skip_serializing_if = "Option::is_none")]
        tool_call_id: Option<&'a str>,
        /// What happened and what leash did: the call was blocked, its
        /// result withheld, or the run ended.
        reason: &'a str,
    },
    /// The last line: how the process ends.
    RunEnd {
        /// `ok`, `error`, `turn_limit`, ...
        #[schemars(schema_with = "crate::exit::status_schema")]
        status: &'a str,
        /// The process exit code.
        exit_code: u8,
        /// Why, in words.
        message: &'a str,
        /// Turns the run took.
        turns: u32,
        /// Token usage over the run.
        usage: &'a Usage,
        /// Each turn's usage, with its cost when there is a price.
        turn_usage: &'a [TurnUsage],
        /// With `--price`: what the run cost in USD.
        #[serde(skip_serializing_if = "Option::is_none")]
        cost: Option<Cost>,
        /// Wall time of the run.
        duration_ms: u64,
        /// With `--resume`: the earlier turns restored.
        #[serde(skip_serializing_if = "Option::is_none")]
        restored_turns: Option<u32>,
        /// `--reasoning-effort`, when a level was asked for; absent for `off`.
        #[serde(skip_serializing_if = "Option::is_none")]
        #[schemars(schema_with = "crate::render::reasoning_effort_schema")]
        reasoning_effort: Option<&'static str>,
    },
}

/// An assistant message as `message_end` shows it: `role` first.
#[derive(Debug, Serialize, schemars::JsonSchema)]
pub struct Assistant<'a> {
    /// Always `assistant`.
    #[schemars(schema_with = "assistant_role")]
    role: &'static str,
    #[serde(flatten)]
    message: &'a AssistantMessage,
}

fn hook_event_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    schemars::json_schema!({
        "type": "string",
        "enum": crate::policy::command_hooks::HookEvent::ALL.map(crate::policy::command_hooks::HookEvent::as_str)
    })
}

fn assistant_role(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    schemars::json_schema!({"const": "assistant"})
}

impl<'a> JsonlEvent<'a> {
    /// The wire shape of an internal event, its cost at `price` where
    /// it has one.
    pub fn from_event(event: &'a AgentEvent, price: Option<&Price>) -> Self {
        match event {
            AgentEvent::AgentStart => JsonlEvent::AgentStart {
                schema_version: SCHEMA_VERSION,
            },
            AgentEvent::TurnStart => JsonlEvent::TurnStart,
            AgentEvent::MessageStart { message } => JsonlEvent::MessageStart { message },
            AgentEvent::MessageUpdate { event } => JsonlEvent::MessageUpdate {
                assistant_message_event: event,
            },
            AgentEvent::MessageEnd { message } => JsonlEvent::MessageEnd { message },
            AgentEvent::ToolExecutionStart {
                tool_call_id,
                tool_name,
                args,
            } => JsonlEvent::ToolExecutionStart {
                tool_call_id,
                tool_name,
                args,
            },
            AgentEvent::ToolExecutionUpdate {
                tool_call_id,
                tool_name,
                partial,
            } => JsonlEvent::ToolExecutionUpdate {
                tool_call_id,
                tool_name,
                partial_result: partial,
            },
            AgentEvent::ToolExecutionEnd {
                tool_call_id,
                tool_name,
                result,
                is_error,
                duration_ms,
            } => JsonlEvent::ToolExecutionEnd {
                tool_call_id,
                tool_name,
                result,
                is_error: *is_error,
                duration_ms: *duration_ms,
                changed: file_change(result),
            },
            AgentEvent::TurnEnd {
                message,
                tool_results,
            } => JsonlEvent::TurnEnd {
                message: Assistant {
                    role: "assistant",
                    message,
                },
                tool_results,
                cost: price.map(|price| price.cost(&message.usage)),
            },
            AgentEvent::Retry {
                attempt,
                delay_ms,
                reason,
            } => JsonlEvent::Retry {
                attempt: *attempt,
                delay_ms: *delay_ms,
                reason,
            },
            AgentEvent::AgentEnd { messages } => JsonlEvent::AgentEnd { messages },
        }
    }
}

/// Writes events as JSON lines.
pub struct JsonlRenderer {
    out: Box<dyn Write + Send>,
    buffer: Vec<u8>,
    /// `agent_start` was written: it is the first line, whatever comes
    /// before the run itself starts (a notice about stdin, a run that never
    /// started), so a reader can check `schemaVersion` on line one.
    started: bool,
    /// `--price`, for the cost of each `turn_end`.
    price: Option<Price>,
}

impl JsonlRenderer {
    /// A renderer writing to `out`.
    pub fn new(out: Box<dyn Write + Send>) -> Self {
        JsonlRenderer {
            out,
            buffer: Vec::with_capacity(4096),
            started: false,
            price: None,
        }
    }

    /// Prices each `turn_end` at `price`.
    pub fn with_price(mut self, price: Option<Price>) -> Self {
        self.price = price;
        self
    }

    fn write(&mut self, event: &JsonlEvent<'_>) {
        let is_start = matches!(event, JsonlEvent::AgentStart { .. });
        if self.started && is_start {
            return;
        }
        if !self.started && !is_start {
            self.write(&JsonlEvent::AgentStart {
                schema_version: SCHEMA_VERSION,
            });
        }
        self.started = true;
        self.buffer.clear();
        if serde_json::to_writer(&mut self.buffer, event).is_ok() {
            self.buffer.push(b'\n');
            // One write per line keeps lines whole; a closed pipe is ignored.
            let _ = self.out.write_all(&self.buffer);
            let _ = self.out.flush();
        }
    }
}

impl EventRenderer for JsonlRenderer {
    fn event(&mut self, event: &AgentEvent) {
        let price = self.price;
        self.write(&JsonlEvent::from_event(event, price.as_ref()));
    }

    fn notice(&mut self, text: &str) {
        self.write(&JsonlEvent::Notice { message: text });
    }

    fn hook_failed(&mut self, failure: &crate::policy::command_hooks::HookFailure) {
        self.write(&JsonlEvent::HookFailed {
            hook: &failure.hook,
            event: failure.event.as_str(),
            tool_call_id: failure.tool_call_id.as_deref(),
            reason: &failure.reason,
        });
    }

    fn run_end(&mut self, report: &RunReport) {
        self.write(&JsonlEvent::RunEnd {
            status: report.status.as_str(),
            exit_code: report.status.code(),
            message: &report.message,
            turns: report.turns,
            usage: &report.usage,
            turn_usage: &report.turn_usage,
            cost: report.cost,
            duration_ms: report.duration_ms,
            restored_turns: report.restored_turns,
            reasoning_effort: report.reasoning_effort.map(ThinkingLevel::as_str),
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn wire(event: &AgentEvent) -> Value {
        serde_json::to_value(JsonlEvent::from_event(event, None)).unwrap()
    }

    #[test]
    fn agent_start_carries_the_schema_version() {
        assert_eq!(
            wire(&AgentEvent::AgentStart),
            json!({"type": "agent_start", "schemaVersion": 1})
        );
    }

    #[test]
    fn turn_end_carries_the_role_like_message_end() {
        let message = AssistantMessage::default();
        let event = AgentEvent::TurnEnd {
            message: message.clone(),
            tool_results: vec![],
        };
        let turn_end = wire(&event);
        let message_end = wire(&AgentEvent::MessageEnd {
            message: Message::Assistant(message),
        });
        assert_eq!(turn_end["message"]["role"], "assistant");
        assert_eq!(turn_end["message"], message_end["message"]);
    }

    use crate::render::SharedBuffer as Shared;

    fn types(out: &Shared) -> Vec<String> {
        String::from_utf8(out.0.lock().unwrap().clone())
            .unwrap()
            .lines()
            .map(|line| {
                serde_json::from_str::<Value>(line).unwrap()["type"]
                    .as_str()
                    .unwrap()
                    .to_owned()
            })
            .collect()
    }

    #[test]
    fn agent_start_is_always_the_first_line_and_only_once() {
        let out = Shared::default();
        let mut renderer = JsonlRenderer::new(Box::new(out.clone()));
        renderer.notice("stdin was skipped");
        renderer.event(&AgentEvent::AgentStart);
        renderer.event(&AgentEvent::TurnStart);
        assert_eq!(types(&out), ["agent_start", "notice", "turn_start"]);
        let out = Shared::default();
        let mut renderer = JsonlRenderer::new(Box::new(out.clone()));
        renderer.event(&AgentEvent::AgentStart);
        renderer.event(&AgentEvent::TurnStart);
        assert_eq!(types(&out), ["agent_start", "turn_start"]);
    }

    #[test]
    fn a_failed_hook_is_one_hook_failed_line() {
        let out = Shared::default();
        let mut renderer = JsonlRenderer::new(Box::new(out.clone()));
        renderer.hook_failed(&crate::policy::command_hooks::HookFailure {
            hook: "hook #1 (finish-turn=./gate)".into(),
            event: crate::policy::command_hooks::HookEvent::FinishTurn,
            tool_call_id: None,
            reason: "hook #1 (finish-turn=./gate) failed: exited with status 1; the run was ended"
                .into(),
        });
        let text = String::from_utf8(out.0.lock().unwrap().clone()).unwrap();
        let line: Value = serde_json::from_str(text.lines().nth(1).unwrap()).unwrap();
        assert_eq!(
            line,
            json!({
                "type": "hook_failed", "hook": "hook #1 (finish-turn=./gate)",
                "event": "finish-turn",
                "reason": "hook #1 (finish-turn=./gate) failed: exited with status 1; the run was ended"
            })
        );
        let schema = crate::render::schema::schema(crate::render::schema::SchemaKind::Events);
        assert!(jsonschema::validator_for(&schema).unwrap().is_valid(&line));
        let mut wrong = line.clone();
        wrong["event"] = "before_tool_call".into();
        assert!(!jsonschema::validator_for(&schema).unwrap().is_valid(&wrong));
    }

    #[test]
    fn updates_carry_only_the_delta() {
        let event = AgentEvent::MessageUpdate {
            event: AssistantMessageEvent::TextDelta {
                content_index: 0,
                delta: "Hi".into(),
            },
        };
        assert_eq!(
            wire(&event),
            json!({"type": "message_update", "assistantMessageEvent": {"type": "text_delta", "contentIndex": 0, "delta": "Hi"}})
        );
    }

    #[test]
    fn a_refused_tool_end_has_no_duration() {
        let result = ToolResultMessage {
            tool_call_id: "c1".into(),
            tool_name: "read_file".into(),
            content: vec![],
            details: Value::Null,
            is_error: true,
            duration_ms: None,
            usage: None,
            timestamp: 5,
        };
        let event = AgentEvent::ToolExecutionEnd {
            tool_call_id: "c1".into(),
            tool_name: "read_file".into(),
            result,
            is_error: true,
            duration_ms: None,
        };
        assert_eq!(
            wire(&event),
            json!({
                "type": "tool_execution_end", "toolCallId": "c1", "toolName": "read_file",
                "result": {"toolCallId": "c1", "toolName": "read_file", "content": [], "isError": true, "timestamp": 5},
                "isError": true
            })
        );
    }
}

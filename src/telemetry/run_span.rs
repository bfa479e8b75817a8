//! One run's spans, after the GenAI semantic conventions, built from the
//! events the run already emits: `invoke_agent leash` for the run, a
//! `chat {model}` per model request (a turn's request, up to its reply's
//! end), an `execute_tool {name}` per tool call (an MCP tool's with the
//! conventions' MCP attributes), and a `hook {event}` per hook run. Only
//! names, ids, counts, times and outcomes are recorded — and the messages
//! only when content capture is on ([`super::content`]).

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use opentelemetry::trace::{SpanKind, Status, TraceContextExt};
use opentelemetry::{Context, KeyValue};

use super::semconv::{
    OTHER, TIMEOUT, TOOL_ERROR, clamp, finish_reason, finish_reasons, request_error,
    server_attributes, usage_attributes,
};
use super::{MetricSettings, Telemetry, TraceSettings, Tracing, content};
use crate::render::RunReport;
use leash_agent::types::AgentEvent;
use leash_protocol::secret::ApiKey;
use leash_protocol::{AssistantMessage, Message, ToolSpec};

/// The most of a tool's description recorded.
const DESCRIPTION_CAP: usize = 1024;

/// What a run's spans say about its requests, known when it starts.
#[derive(Debug, Clone, Default)]
pub struct RunFacts {
    /// `gen_ai.provider.name`.
    pub provider: String,
    /// `gen_ai.request.model`.
    pub model: String,
    /// The provider's host and port (none for the scripted model).
    pub server: Option<(String, u16)>,
    /// Whether requests stream (every HTTP provider's do).
    pub stream: bool,
    /// `--max-tokens`, when set.
    pub max_tokens: Option<u32>,
    /// `--temperature`, when set.
    pub temperature: Option<f32>,
    /// `--output-schema`: the reply is JSON.
    pub json_output: bool,
    /// When the run's timer fires: a request or call cut after it was cut
    /// by the timer (`error.type` `timeout`).
    pub deadline: Option<tokio::time::Instant>,
    /// The system message (recorded only with content capture on).
    pub system: String,
}

/// A run's trace, fed from its event listener and its provider observer;
/// cheap to clone (one shared state).
#[derive(Clone)]
pub struct RunTrace {
    pub(super) telemetry: Arc<Telemetry>,
    /// Whether this run exports (a batch's item leaves it to the batch).
    exports: bool,
    pub(super) state: Arc<Mutex<State>>,
}

/// The model request under way.
pub(super) struct Chat {
    pub(super) context: Context,
    /// When the request began (its operation's duration starts here).
    pub(super) began: std::time::Instant,
    /// When the request (or its last retry) was sent.
    pub(super) issued: std::time::Instant,
    /// Seconds from the request (or its last retry) to its first chunk.
    pub(super) first_chunk: Option<f64>,
    /// The HTTP status of a request that failed for good.
    pub(super) failed_status: Option<i64>,
}

/// A tool call under way.
pub(super) struct ToolCall {
    pub(super) context: Context,
    /// The `error.type` its MCP call found, if it failed.
    pub(super) error_type: Option<String>,
}

pub(super) struct State {
    /// The context holding the run's root span.
    pub(super) root: Context,
    pub(super) facts: RunFacts,
    /// `gen_ai.conversation.id`: the run's own id.
    conversation: String,
    pub(super) chat: Option<Chat>,
    /// The tool calls under way, by call id.
    pub(super) tools: HashMap<String, ToolCall>,
    /// Each offered tool's description, by name.
    descriptions: HashMap<String, String>,
    /// The `error.type` of the last request that failed.
    last_error: Option<String>,
    /// With content capture on: the conversation so far, in the
    /// conventions' shape.
    history: Option<Vec<serde_json::Value>>,
}

impl State {
    /// `timeout` when the run's timer has fired, `_OTHER` otherwise.
    pub(super) fn cut_type(&self) -> &'static str {
        match self.facts.deadline {
            Some(deadline) if tokio::time::Instant::now() >= deadline => TIMEOUT,
            _ => OTHER,
        }
    }
}

impl RunTrace {
    /// The run's trace, its root span begun now — or `None` when traces
    /// are off (nothing is built) — with the lines to say first.
    pub fn begin(
        (settings, metric_settings): (&TraceSettings, &MetricSettings),
        tracing: &Tracing,
        keys: Arc<[ApiKey]>,
        facts: RunFacts,
    ) -> (Option<RunTrace>, Vec<String>) {
        let (telemetry, parent, item, exports, notices) = match tracing {
            Tracing::Off => return (None, Vec::new()),
            Tracing::Under(parent) => (
                Arc::clone(&parent.telemetry),
                parent.context.clone(),
                parent.item.clone(),
                false,
                Vec::new(),
            ),
            Tracing::FromPlan => match Telemetry::start(settings, metric_settings, keys) {
                (Some(telemetry), notices) => {
                    let caller = telemetry.caller.clone();
                    (telemetry, caller, None, true, notices)
                }
                (None, notices) => return (None, notices),
            },
        };
        let mut attributes = vec![
            KeyValue::new("gen_ai.operation.name", "invoke_agent"),
            KeyValue::new("gen_ai.agent.name", "leash"),
            KeyValue::new("gen_ai.agent.version", env!("CARGO_PKG_VERSION")),
            KeyValue::new("gen_ai.provider.name", facts.provider.clone()),
            KeyValue::new("gen_ai.request.model", facts.model.clone()),
        ];
        attributes.extend(server_attributes(&facts.server));
        if let Some(item) = item {
            attributes.push(KeyValue::new("leash.batch.item.id", telemetry.clean(&item)));
        }
        let span = telemetry.begin(
            "invoke_agent leash".to_owned(),
            SpanKind::Internal,
            attributes,
            &parent,
        );
        let root = parent.with_span(span);
        let conversation = format!(
            "{}-{}",
            root.span().span_context().trace_id(),
            root.span().span_context().span_id()
        );
        root.span().set_attribute(KeyValue::new(
            "gen_ai.conversation.id",
            conversation.clone(),
        ));
        let state = State {
            root,
            facts,
            conversation,
            chat: None,
            tools: HashMap::new(),
            descriptions: HashMap::new(),
            last_error: None,
            history: telemetry.exporting.capture_content.then(Vec::new),
        };
        let trace = RunTrace {
            telemetry,
            exports,
            state: Arc::new(Mutex::new(state)),
        };
        (Some(trace), notices)
    }

    pub(super) fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The tools offered to the model: their descriptions, for
    /// `gen_ai.tool.description` (keys redacted, at most 1 KiB).
    pub fn offered(&self, tools: &[ToolSpec]) {
        let mut state = self.lock();
        for tool in tools {
            let mut description = self.telemetry.clean(&tool.description);
            if description.len() > DESCRIPTION_CAP {
                let mut end = DESCRIPTION_CAP;
                while !description.is_char_boundary(end) {
                    end -= 1;
                }
                description.truncate(end);
            }
            state.descriptions.insert(tool.name.clone(), description);
        }
    }

    /// One of the run's events.
    pub fn event(&self, event: &AgentEvent) {
        let mut state = self.lock();
        match event {
            AgentEvent::TurnStart => {
                if let Some(open) = state.chat.take() {
                    open.context.span().end();
                }
                let facts = &state.facts;
                let mut attributes = vec![
                    KeyValue::new("gen_ai.operation.name", "chat"),
                    KeyValue::new("gen_ai.provider.name", facts.provider.clone()),
                    KeyValue::new("gen_ai.request.model", facts.model.clone()),
                    KeyValue::new("gen_ai.conversation.id", state.conversation.clone()),
                ];
                attributes.extend(server_attributes(&facts.server));
                if facts.stream {
                    attributes.push(KeyValue::new("gen_ai.request.stream", true));
                }
                if let Some(max) = facts.max_tokens {
                    attributes.push(KeyValue::new("gen_ai.request.max_tokens", i64::from(max)));
                }
                if let Some(temperature) = facts.temperature {
                    attributes.push(KeyValue::new(
                        "gen_ai.request.temperature",
                        f64::from(temperature),
                    ));
                }
                if facts.json_output {
                    attributes.push(KeyValue::new("gen_ai.output.type", "json"));
                }
                let name = format!("chat {}", facts.model);
                let span = self
                    .telemetry
                    .begin(name, SpanKind::Client, attributes, &state.root);
                state.chat = Some(Chat {
                    context: state.root.with_span(span),
                    began: std::time::Instant::now(),
                    issued: std::time::Instant::now(),
                    first_chunk: None,
                    failed_status: None,
                });
            }
            AgentEvent::Retry {
                attempt,
                delay_ms,
                reason,
            } => {
                let reason = self.telemetry.clean(reason);
                if let Some(chat) = state.chat.as_mut() {
                    chat.context.span().add_event(
                        "retry",
                        vec![
                            KeyValue::new("leash.retry.attempt", i64::from(*attempt)),
                            KeyValue::new("leash.retry.delay_ms", clamp(*delay_ms)),
                            KeyValue::new("leash.retry.reason", reason),
                        ],
                    );
                    chat.issued = std::time::Instant::now() + Duration::from_millis(*delay_ms);
                }
            }
            AgentEvent::MessageUpdate { .. } => {
                if let Some(chat) = state.chat.as_mut()
                    && chat.first_chunk.is_none()
                {
                    let seconds = chat.issued.elapsed().as_secs_f64();
                    chat.first_chunk = Some(seconds);
                    chat.context.span().set_attribute(KeyValue::new(
                        "gen_ai.response.time_to_first_chunk",
                        seconds,
                    ));
                }
            }
            AgentEvent::MessageEnd {
                message: Message::Assistant(reply),
            } => {
                if let Some(chat) = state.chat.take() {
                    self.captured(&chat, Some(reply), &state);
                    let failed = self.replied(&chat, reply, &state);
                    self.measured(&chat, &state, Some(reply), failed.as_deref());
                    if failed.is_some() {
                        state.last_error = failed;
                    }
                    chat.context.span().end();
                }
                self.remember(&mut state, &Message::Assistant(reply.clone()));
            }
            AgentEvent::MessageEnd { message } => self.remember(&mut state, message),
            AgentEvent::ToolExecutionStart {
                tool_call_id,
                tool_name,
                args,
            } => {
                let mut attributes = vec![
                    KeyValue::new("gen_ai.operation.name", "execute_tool"),
                    KeyValue::new("gen_ai.tool.name", tool_name.clone()),
                    KeyValue::new("gen_ai.tool.call.id", self.telemetry.clean(tool_call_id)),
                ];
                match mcp_tool(tool_name) {
                    Some((server, _)) => attributes.extend([
                        KeyValue::new("gen_ai.tool.type", "extension"),
                        KeyValue::new("mcp.method.name", "tools/call"),
                        KeyValue::new("leash.mcp.server", server.to_owned()),
                    ]),
                    None => attributes.push(KeyValue::new("gen_ai.tool.type", "function")),
                }
                if let Some(description) = state.descriptions.get(tool_name) {
                    attributes.push(KeyValue::new(
                        "gen_ai.tool.description",
                        description.clone(),
                    ));
                }
                if state.history.is_some() {
                    let args = self.telemetry.clean(&args.to_string());
                    attributes.push(KeyValue::new("gen_ai.tool.call.arguments", args));
                }
                let name = format!("execute_tool {tool_name}");
                let span = self
                    .telemetry
                    .begin(name, SpanKind::Internal, attributes, &state.root);
                let context = state.root.with_span(span);
                state.tools.insert(
                    tool_call_id.clone(),
                    ToolCall {
                        context,
                        error_type: None,
                    },
                );
            }
            AgentEvent::ToolExecutionEnd {
                tool_call_id,
                is_error,
                duration_ms,
                result,
                ..
            } => {
                if let Some(call) = state.tools.remove(tool_call_id) {
                    let span = call.context.span();
                    if state.history.is_some() {
                        let text = self.telemetry.clean(&content::tool_result(&result.content));
                        span.set_attribute(KeyValue::new("gen_ai.tool.call.result", text));
                    }
                    let outcome = match (duration_ms, is_error) {
                        (None, _) => "not_run",
                        (Some(_), true) => "error",
                        (Some(_), false) => "ok",
                    };
                    span.set_attribute(KeyValue::new("leash.tool.outcome", outcome));
                    if let Some(ms) = duration_ms {
                        span.set_attribute(KeyValue::new("leash.tool.duration_ms", clamp(*ms)));
                    }
                    if *is_error {
                        let kind = match (outcome, call.error_type) {
                            (_, Some(kind)) => kind,
                            ("not_run", None) => OTHER.to_owned(),
                            (_, None) => TOOL_ERROR.to_owned(),
                        };
                        span.set_attribute(KeyValue::new("error.type", kind));
                        span.set_status(Status::error(match outcome {
                            "not_run" => "the call did not run",
                            _ => "the call failed",
                        }));
                    }
                    span.end();
                }
            }
            _ => {}
        }
    }

    /// With content capture on: `message` joins the conversation.
    fn remember(&self, state: &mut State, message: &Message) {
        if let Some(history) = state.history.as_mut()
            && let Some(message) = content::chat_message(message)
        {
            history.push(message);
        }
    }

    /// With content capture on: a request's messages (the conversation
    /// so far), the system message and its reply, keys redacted.
    fn captured(&self, chat: &Chat, reply: Option<&AssistantMessage>, state: &State) {
        let Some(history) = &state.history else {
            return;
        };
        let span = chat.context.span();
        let clean = |value: serde_json::Value| self.telemetry.clean(&value.to_string());
        span.set_attribute(KeyValue::new(
            "gen_ai.input.messages",
            clean(serde_json::Value::from(history.clone())),
        ));
        if !state.facts.system.is_empty() {
            let system = content::system_instructions(&state.facts.system);
            span.set_attribute(KeyValue::new("gen_ai.system_instructions", clean(system)));
        }
        if let Some(reply) = reply
            && let Some(reason) = finish_reason(reply.stop_reason)
        {
            let output = content::output_messages(reply, reason);
            span.set_attribute(KeyValue::new("gen_ai.output.messages", clean(output)));
        }
    }

    /// The attributes of a finished model request; the `error.type` of a
    /// failed one.
    fn replied(&self, chat: &Chat, reply: &AssistantMessage, state: &State) -> Option<String> {
        let span = chat.context.span();
        span.set_attribute(KeyValue::new("gen_ai.response.model", reply.model.clone()));
        span.set_attributes(usage_attributes(&reply.usage));
        if let Some(reason) = finish_reason(reply.stop_reason) {
            span.set_attribute(finish_reasons(reason));
        }
        let kind = match reply.stop_reason {
            leash_protocol::StopReason::Error => request_error(chat.failed_status),
            leash_protocol::StopReason::Aborted => state.cut_type().to_owned(),
            _ => return None,
        };
        let why = reply
            .error_message
            .as_deref()
            .unwrap_or("the request failed");
        span.set_attribute(KeyValue::new("error.type", kind.clone()));
        span.set_status(Status::error(self.telemetry.clean(why)));
        Some(kind)
    }

    /// Ends the run's spans with how it ended (status ERROR on every
    /// non-zero exit, with the reason) and, for a run of its own, exports
    /// what is left of the trace within `left` of the run's timer; the line
    /// that says why the export failed.
    pub async fn finish(&self, report: &RunReport, left: Option<Duration>) -> Vec<String> {
        {
            let mut state = self.lock();
            let cut = state.cut_type();
            if let Some(chat) = state.chat.take() {
                self.captured(&chat, None, &state);
                self.measured(&chat, &state, None, Some(cut));
                let span = chat.context.span();
                span.set_attribute(KeyValue::new("error.type", cut));
                span.set_status(Status::error("the run ended during the request"));
                span.end();
            }
            for (_, call) in state.tools.drain() {
                let span = call.context.span();
                span.set_attribute(KeyValue::new("leash.tool.outcome", "cut_off"));
                span.set_attribute(KeyValue::new("error.type", cut));
                span.set_status(Status::error("the run ended during the call"));
                span.end();
            }
            let root = state.root.span();
            let code = report.status.code();
            root.set_attribute(KeyValue::new("leash.exit_code", i64::from(code)));
            root.set_attribute(KeyValue::new("leash.status", report.status.as_str()));
            root.set_attribute(KeyValue::new("leash.turns", i64::from(report.turns)));
            for attribute in usage_attributes(&report.usage) {
                root.set_attribute(attribute);
            }
            if let Some(cost) = report.cost {
                root.set_attribute(KeyValue::new("leash.cost_usd", cost.usd()));
            }
            if code != 0 {
                let kind = match report.status.as_str() {
                    "timeout" => TIMEOUT.to_owned(),
                    _ => state.last_error.clone().unwrap_or_else(|| OTHER.to_owned()),
                };
                root.set_attribute(KeyValue::new("error.type", kind));
                root.set_status(Status::error(self.telemetry.clean(&report.message)));
            }
            root.end();
        }
        match self.exports {
            true => self.telemetry.flush(left).await,
            false => Vec::new(),
        }
    }
}

/// `mcp__SERVER__TOOL` → (server, tool).
fn mcp_tool(name: &str) -> Option<(&str, &str)> {
    name.strip_prefix("mcp__")?.split_once("__")
}

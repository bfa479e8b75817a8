//! One run's spans, after the GenAI semantic conventions, built from the
//! events the run already emits: `invoke_agent leash` for the run, a
//! `chat {model}` per model request (a turn's request, up to its reply's
//! end), an `execute_tool {name}` per tool call, and under an MCP tool's
//! call its `tools/call {tool}`. Only names, ids, counts, times and
//! outcomes are recorded — never a message, argument or result.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use opentelemetry::trace::{Span as _, SpanKind, Status, TraceContextExt};
use opentelemetry::{Array, Context, KeyValue, StringValue, Value};
use opentelemetry_sdk::trace::Span;

use super::{Telemetry, TraceSettings, Tracing};
use crate::agent::types::AgentEvent;
use crate::policy::chain::HookRun;
use crate::protocol::{AssistantMessage, Message, StopReason, StreamEvent, Usage};
use crate::render::RunReport;
use crate::secret::ApiKey;

/// A run's trace, fed from its event listener and its provider observer;
/// cheap to clone (one shared state).
#[derive(Clone)]
pub struct RunTrace {
    telemetry: Arc<Telemetry>,
    /// Whether this run exports (a batch's item leaves it to the batch).
    exports: bool,
    state: Arc<Mutex<State>>,
}

struct State {
    /// The context holding the run's root span.
    root: Context,
    provider: String,
    model: String,
    /// The model request under way.
    chat: Option<Span>,
    /// The tool calls under way, by call id, each with its MCP call.
    tools: HashMap<String, (Span, Option<Span>)>,
}

impl RunTrace {
    /// The run's trace, its root span begun now — or `None` when traces
    /// are off (nothing is built) — with the lines to say first.
    pub fn begin(
        settings: &TraceSettings,
        tracing: &Tracing,
        keys: Arc<[ApiKey]>,
        provider: &str,
        model: &str,
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
            Tracing::FromPlan => match Telemetry::start(settings, keys) {
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
            KeyValue::new("gen_ai.provider.name", provider.to_owned()),
            KeyValue::new("gen_ai.request.model", model.to_owned()),
        ];
        if let Some(item) = item {
            attributes.push(KeyValue::new("leash.batch.item.id", item));
        }
        let span = telemetry.begin(
            "invoke_agent leash".to_owned(),
            SpanKind::Internal,
            attributes,
            &parent,
        );
        let state = State {
            root: parent.with_span(span),
            provider: provider.to_owned(),
            model: model.to_owned(),
            chat: None,
            tools: HashMap::new(),
        };
        let trace = RunTrace {
            telemetry,
            exports,
            state: Arc::new(Mutex::new(state)),
        };
        (Some(trace), notices)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// One of the run's events.
    pub fn event(&self, event: &AgentEvent) {
        let mut state = self.lock();
        match event {
            AgentEvent::TurnStart => {
                if let Some(mut open) = state.chat.take() {
                    open.end();
                }
                let attributes = vec![
                    KeyValue::new("gen_ai.operation.name", "chat"),
                    KeyValue::new("gen_ai.provider.name", state.provider.clone()),
                    KeyValue::new("gen_ai.request.model", state.model.clone()),
                ];
                let name = format!("chat {}", state.model);
                let span = self
                    .telemetry
                    .begin(name, SpanKind::Client, attributes, &state.root);
                state.chat = Some(span);
            }
            AgentEvent::Retry {
                attempt,
                delay_ms,
                reason,
            } => {
                if let Some(chat) = state.chat.as_mut() {
                    chat.add_event(
                        "retry",
                        vec![
                            KeyValue::new("leash.retry.attempt", i64::from(*attempt)),
                            KeyValue::new("leash.retry.delay_ms", clamp(*delay_ms)),
                            KeyValue::new("leash.retry.reason", self.telemetry.clean(reason)),
                        ],
                    );
                }
            }
            AgentEvent::MessageEnd {
                message: Message::Assistant(reply),
            } => {
                if let Some(mut chat) = state.chat.take() {
                    self.replied(&mut chat, reply);
                    chat.end();
                }
            }
            AgentEvent::ToolExecutionStart {
                tool_call_id,
                tool_name,
                ..
            } => {
                let attributes = vec![
                    KeyValue::new("gen_ai.operation.name", "execute_tool"),
                    KeyValue::new("gen_ai.tool.name", tool_name.clone()),
                    KeyValue::new("gen_ai.tool.call.id", tool_call_id.clone()),
                    KeyValue::new("gen_ai.tool.type", "function"),
                ];
                let name = format!("execute_tool {tool_name}");
                let span = self
                    .telemetry
                    .begin(name, SpanKind::Internal, attributes, &state.root);
                let mcp = mcp_tool(tool_name).map(|(server, tool)| {
                    let parent = state
                        .root
                        .with_remote_span_context(span.span_context().clone());
                    let attributes = vec![
                        KeyValue::new("mcp.method.name", "tools/call"),
                        KeyValue::new("mcp.server.name", server.to_owned()),
                        KeyValue::new("gen_ai.tool.name", tool.to_owned()),
                        KeyValue::new("gen_ai.tool.call.id", tool_call_id.clone()),
                    ];
                    let name = format!("tools/call {tool}");
                    self.telemetry
                        .begin(name, SpanKind::Client, attributes, &parent)
                });
                state.tools.insert(tool_call_id.clone(), (span, mcp));
            }
            AgentEvent::ToolExecutionEnd {
                tool_call_id,
                is_error,
                duration_ms,
                ..
            } => {
                if let Some((mut span, mcp)) = state.tools.remove(tool_call_id) {
                    let outcome = match (duration_ms, is_error) {
                        (None, _) => "not_run",
                        (Some(_), true) => "error",
                        (Some(_), false) => "ok",
                    };
                    if let Some(mut mcp) = mcp {
                        if *is_error {
                            mcp.set_status(Status::error("the call failed"));
                        }
                        mcp.end();
                    }
                    span.set_attribute(KeyValue::new("leash.tool.outcome", outcome));
                    if let Some(ms) = duration_ms {
                        span.set_attribute(KeyValue::new("leash.tool.duration_ms", clamp(*ms)));
                    }
                    if *is_error {
                        span.set_attribute(KeyValue::new("error.type", "tool_error"));
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

    /// The attributes of a finished model request.
    fn replied(&self, chat: &mut Span, reply: &AssistantMessage) {
        chat.set_attribute(KeyValue::new("gen_ai.response.model", reply.model.clone()));
        chat.set_attributes(usage_attributes(&reply.usage));
        let reason = finish_reason(reply.stop_reason);
        chat.set_attribute(KeyValue::new(
            "gen_ai.response.finish_reasons",
            Value::Array(Array::String(vec![StringValue::from(reason)])),
        ));
        if matches!(reply.stop_reason, StopReason::Error | StopReason::Aborted) {
            let why = reply.error_message.as_deref().unwrap_or(reason);
            chat.set_attribute(KeyValue::new("error.type", reason));
            chat.set_status(Status::error(self.telemetry.clean(why)));
        }
    }

    /// A `--hook` that ran: a span `hook {event}` over its run, under the
    /// tool call it judged (or the run's span). No command, input or answer.
    pub fn hook_ran(&self, run: &HookRun<'_>) {
        let state = self.lock();
        let tool = run
            .tool_call_id
            .and_then(|id| state.tools.get(id))
            .map(|(span, _)| {
                state
                    .root
                    .with_remote_span_context(span.span_context().clone())
            });
        let parent = tool.as_ref().unwrap_or(&state.root);
        let mut attributes = vec![
            KeyValue::new("leash.hook.number", clamp(run.number as u64)),
            KeyValue::new("leash.hook.event", run.event),
            KeyValue::new("leash.hook.outcome", run.outcome),
        ];
        if let Some(id) = run.tool_call_id {
            attributes.push(KeyValue::new("gen_ai.tool.call.id", id.to_owned()));
        }
        let name = format!("hook {}", run.event);
        let mut span = self
            .telemetry
            .begin_at(name, attributes, parent, run.started);
        if run.outcome == "failed" {
            span.set_status(Status::error("the hook failed"));
        }
        span.end();
    }

    /// What the provider's driver hands its observer: the response's
    /// status and request id, and a wait at the shared rate gate.
    pub fn provider_event(&self, event: &StreamEvent) {
        let StreamEvent::Provider(data) = event else {
            return;
        };
        let mut state = self.lock();
        let Some(chat) = state.chat.as_mut() else {
            return;
        };
        match data.get("type").and_then(|kind| kind.as_str()) {
            Some("response") => {
                if let Some(status) = data.get("status").and_then(|status| status.as_i64()) {
                    chat.set_attribute(KeyValue::new("http.response.status_code", status));
                }
                let headers = data.get("headers");
                let id = ["x-request-id", "request-id"]
                    .iter()
                    .find_map(|name| headers?.get(name)?.as_str());
                if let Some(id) = id {
                    let id = self.telemetry.clean(id);
                    chat.set_attribute(KeyValue::new("leash.provider.request_id", id));
                }
            }
            Some("rate_gate") => {
                let waited = data
                    .get("waited_ms")
                    .and_then(|ms| ms.as_u64())
                    .unwrap_or(0);
                chat.add_event(
                    "rate_gate.wait",
                    vec![KeyValue::new("leash.rate_gate.waited_ms", clamp(waited))],
                );
            }
            _ => {}
        }
    }

    /// Ends the run's spans with how it ended (status ERROR on every
    /// non-zero exit, with the reason) and, for a run of its own, exports
    /// the trace within `left` of the run's timer; the line that says why
    /// the export failed.
    pub async fn finish(&self, report: &RunReport, left: Option<Duration>) -> Option<String> {
        {
            let mut state = self.lock();
            if let Some(mut chat) = state.chat.take() {
                chat.set_status(Status::error("the run ended during the request"));
                chat.end();
            }
            for (_, (mut span, mcp)) in state.tools.drain() {
                if let Some(mut mcp) = mcp {
                    mcp.end();
                }
                span.set_attribute(KeyValue::new("leash.tool.outcome", "cut_off"));
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
                root.set_attribute(KeyValue::new("error.type", report.status.as_str()));
                root.set_status(Status::error(self.telemetry.clean(&report.message)));
            }
            root.end();
        }
        match self.exports {
            true => self.telemetry.flush(left).await,
            false => None,
        }
    }
}

/// `mcp__SERVER__TOOL` → (server, tool).
fn mcp_tool(name: &str) -> Option<(&str, &str)> {
    name.strip_prefix("mcp__")?.split_once("__")
}

/// A count as an attribute (OTLP integers are signed).
fn clamp(value: u64) -> i64 {
    i64::try_from(value).unwrap_or(i64::MAX)
}

/// The token counts, under the conventions' names.
fn usage_attributes(usage: &Usage) -> Vec<KeyValue> {
    vec![
        KeyValue::new("gen_ai.usage.input_tokens", clamp(usage.input)),
        KeyValue::new("gen_ai.usage.output_tokens", clamp(usage.output)),
        KeyValue::new(
            "gen_ai.usage.cache_read.input_tokens",
            clamp(usage.cache_read),
        ),
        KeyValue::new(
            "gen_ai.usage.cache_creation.input_tokens",
            clamp(usage.cache_write),
        ),
    ]
}

/// A stop reason as the conventions' finish reason.
fn finish_reason(reason: StopReason) -> &'static str {
    match reason {
        StopReason::Stop => "stop",
        StopReason::Length => "length",
        StopReason::ToolUse => "tool_calls",
        StopReason::Error => "error",
        StopReason::Aborted => "aborted",
    }
}

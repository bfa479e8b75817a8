//! The run's (or the batch's) trace as the code below it asks it
//! ([`leash_protocol::trace_context`]): the `traceparent` of the model
//! request under way and of a tool call, a span id reserved for a child
//! process, what an MCP call learned for its `execute_tool` span, and the
//! `initialize` span of an MCP server's start.

use std::sync::Arc;
use std::time::SystemTime;

use opentelemetry::trace::{SpanKind, Status, TraceContextExt};
use opentelemetry::{Context, KeyValue};

use super::BatchTrace;
use super::run_span::RunTrace;
use super::semconv::{ID_CAP, cut, server_attributes};
use super::{Telemetry, traceparent_of};
use leash_protocol::trace_context::{Ambient, McpNote, Reserved, Scope};

/// The conventions' MCP attributes of `note` (no `error.type`).
fn mcp_attributes(telemetry: &Telemetry, note: &McpNote) -> Vec<KeyValue> {
    // What a server chose: redacted, and cut (a hostile server's
    // megabyte-long session id is not repeated on every span).
    let chosen = |text: &str| cut(telemetry.clean(text), ID_CAP);
    let mut attributes = vec![KeyValue::new("network.transport", note.transport)];
    if let Some(id) = &note.request_id {
        attributes.push(KeyValue::new("jsonrpc.request.id", chosen(id)));
    }
    if let Some(version) = &note.protocol_version {
        attributes.push(KeyValue::new("mcp.protocol.version", chosen(version)));
    }
    if let Some(session) = &note.session_id {
        attributes.push(KeyValue::new("mcp.session.id", chosen(session)));
    }
    attributes.extend(server_attributes(&note.address));
    attributes
}

/// The span of an MCP server's start (`initialize`, under `parent`), under
/// the id its `TRACEPARENT` named.
fn server_started(
    telemetry: &Telemetry,
    parent: &Context,
    reserved: &Reserved,
    started: SystemTime,
    note: &McpNote,
    failed: bool,
) {
    let mut attributes = vec![
        KeyValue::new("mcp.method.name", "initialize"),
        KeyValue::new("leash.mcp.server", telemetry.clean(&note.server)),
    ];
    attributes.extend(mcp_attributes(telemetry, note));
    let mut span = telemetry.begin_reserved(
        "initialize".to_owned(),
        SpanKind::Client,
        attributes,
        parent,
        started,
        Some(reserved.span_id),
    );
    use opentelemetry::trace::Span as _;
    if failed {
        span.set_attribute(KeyValue::new("error.type", super::semconv::OTHER));
        span.set_status(Status::error("the server did not start"));
    }
    span.end();
}

impl Ambient for RunTrace {
    fn traceparent(&self, scope: Scope<'_>) -> Option<String> {
        // Metrics alone: no span is recorded, so none is handed on.
        if !self.telemetry.traces {
            return None;
        }
        let state = self.lock();
        let context = match scope {
            Scope::Model => &state.chat.as_ref()?.context,
            Scope::Tool(id) => &state.tools.get(id)?.context,
        };
        traceparent_of(context.span().span_context())
    }

    fn reserve(&self, scope: Option<Scope<'_>>) -> Option<Reserved> {
        let state = self.lock();
        let parent = match scope {
            Some(Scope::Model) => state.chat.as_ref().map(|chat| &chat.context),
            Some(Scope::Tool(id)) => state.tools.get(id).map(|call| &call.context),
            None => None,
        };
        self.telemetry.reserve(parent.unwrap_or(&state.root))
    }

    fn mcp_call(&self, call_id: &str, note: McpNote) {
        let mut state = self.lock();
        let Some(call) = state.tools.get_mut(call_id) else {
            return;
        };
        call.context
            .span()
            .set_attributes(mcp_attributes(&self.telemetry, &note));
        if let Some(kind) = note.error_type {
            call.error_type = Some(kind);
        }
    }

    fn mcp_started(&self, reserved: &Reserved, started: SystemTime, note: McpNote, failed: bool) {
        let root = self.lock().root.clone();
        server_started(&self.telemetry, &root, reserved, started, &note, failed);
    }
}

impl BatchTrace {
    /// The trace context the batch's MCP servers start under.
    pub fn ambient(&self) -> Arc<dyn Ambient> {
        Arc::new(BatchAmbient {
            telemetry: Arc::clone(&self.telemetry),
            root: self.root.clone(),
        })
    }
}

/// A batch's trace, for its MCP servers' start: their spans go under the
/// batch's span.
pub struct BatchAmbient {
    telemetry: Arc<Telemetry>,
    root: Context,
}

impl Ambient for BatchAmbient {
    fn traceparent(&self, _scope: Scope<'_>) -> Option<String> {
        None
    }

    fn reserve(&self, _scope: Option<Scope<'_>>) -> Option<Reserved> {
        self.telemetry.reserve(&self.root)
    }

    fn mcp_call(&self, _call_id: &str, _note: McpNote) {}

    fn mcp_started(&self, reserved: &Reserved, started: SystemTime, note: McpNote, failed: bool) {
        server_started(
            &self.telemetry,
            &self.root,
            reserved,
            started,
            &note,
            failed,
        );
    }
}

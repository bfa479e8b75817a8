//! What a run's trace hears besides the agent's events: each hook's run
//! (a span `hook {event}` under the span id its `TRACEPARENT` named) and
//! the provider's own events (the response's status, request id and id, a
//! request that failed for good, a wait at the shared rate gate).

use opentelemetry::KeyValue;
use opentelemetry::trace::{SpanKind, Status, TraceContextExt};

use super::run_span::RunTrace;
use super::semconv::{ID_CAP, OTHER, clamp, cut};
use crate::policy::chain::HookRun;
use leash_protocol::StreamEvent;

impl RunTrace {
    /// A `--hook` that ran: a span `hook {event}` over its run, under the
    /// tool call it judged (or the run's span), under the span id its
    /// `TRACEPARENT` named. No command, input or answer.
    pub fn hook_ran(&self, run: &HookRun<'_>) {
        let state = self.lock();
        let parent = run
            .tool_call_id
            .and_then(|id| state.tools.get(id))
            .map_or(&state.root, |call| &call.context);
        let mut attributes = vec![
            KeyValue::new("leash.hook.number", clamp(run.number as u64)),
            KeyValue::new("leash.hook.event", run.event),
            KeyValue::new("leash.hook.outcome", run.outcome),
        ];
        if let Some(id) = run.tool_call_id {
            attributes.push(KeyValue::new(
                "gen_ai.tool.call.id",
                self.telemetry.clean(id),
            ));
        }
        let name = format!("hook {}", run.event);
        let mut span = self.telemetry.begin_reserved(
            name,
            SpanKind::Internal,
            attributes,
            parent,
            run.started,
            run.span_id,
        );
        let failed = match run.outcome {
            "failed" => Some(OTHER),
            "aborted" => Some(state.cut_type()),
            _ => None,
        };
        if let Some(kind) = failed {
            use opentelemetry::trace::Span as _;
            span.set_attribute(KeyValue::new("error.type", kind));
            span.set_status(Status::error(format!("the hook {}", run.outcome)));
        }
        opentelemetry::trace::Span::end(&mut span);
    }

    /// What the provider's driver hands its observer: the response's
    /// status, request id and response id, a request that failed for
    /// good, and a wait at the shared rate gate.
    pub fn provider_event(&self, event: &StreamEvent) {
        let StreamEvent::Provider(data) = event else {
            return;
        };
        let mut state = self.lock();
        let Some(chat) = state.chat.as_mut() else {
            return;
        };
        let span = chat.context.span();
        match data.get("type").and_then(|kind| kind.as_str()) {
            Some("response") => {
                if let Some(status) = data.get("status").and_then(|status| status.as_i64()) {
                    span.set_attribute(KeyValue::new("http.response.status_code", status));
                }
                let headers = data.get("headers");
                let id = ["x-request-id", "request-id"]
                    .iter()
                    .find_map(|name| headers?.get(name)?.as_str());
                if let Some(id) = id {
                    let id = cut(self.telemetry.clean(id), ID_CAP);
                    span.set_attribute(KeyValue::new("leash.provider.request_id", id));
                }
            }
            Some("response_id") => {
                if let Some(id) = data.get("id").and_then(|id| id.as_str()) {
                    let id = cut(self.telemetry.clean(id), ID_CAP);
                    span.set_attribute(KeyValue::new("gen_ai.response.id", id));
                }
            }
            Some("failed") => {
                let status = data.get("status").and_then(|status| status.as_i64());
                if let Some(status) = status {
                    span.set_attribute(KeyValue::new("http.response.status_code", status));
                }
                chat.failed_status = status;
            }
            Some("rate_gate") => {
                let waited = data
                    .get("waited_ms")
                    .and_then(|ms| ms.as_u64())
                    .unwrap_or(0);
                span.add_event(
                    "rate_gate.wait",
                    vec![KeyValue::new("leash.rate_gate.waited_ms", clamp(waited))],
                );
                chat.issued = std::time::Instant::now();
            }
            _ => {}
        }
    }
}

//! The event and request builders the Responses unit tests share: events
//! in the documented shape (`event:` line, `data:` with `type` and
//! `sequence_number`), numbered in order.

use serde_json::{Value, json};
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

pub(crate) use crate::provider::openai::testing::{read_file_tool, request, settings};
pub(crate) use crate::provider::testing::{bodies, user};

/// A stream being written: each event gets the next `sequence_number`.
#[derive(Debug, Default)]
pub(crate) struct Events(pub(crate) Vec<Value>);

impl Events {
    pub(crate) fn push(mut self, kind: &str, mut fields: Value) -> Self {
        fields["type"] = json!(kind);
        fields["sequence_number"] = json!(self.0.len());
        self.0.push(fields);
        self
    }

    pub(crate) fn created(self) -> Self {
        self.push(
            "response.created",
            json!({"response": response("in_progress", json!([]), Value::Null)}),
        )
    }

    pub(crate) fn message_added(self, index: usize) -> Self {
        self.push(
            "response.output_item.added",
            json!({"output_index": index, "item": {"id": format!("msg_{index}"), "type": "message",
                   "status": "in_progress", "content": [], "role": "assistant"}}),
        )
    }

    pub(crate) fn text(self, index: usize, delta: &str) -> Self {
        self.push(
            "response.output_text.delta",
            json!({"item_id": format!("msg_{index}"), "output_index": index, "content_index": 0,
                   "delta": delta, "logprobs": []}),
        )
    }

    pub(crate) fn call_added(self, index: usize, call_id: &str, name: &str) -> Self {
        self.push(
            "response.output_item.added",
            json!({"output_index": index, "item": {"id": format!("fc_{index}"), "type": "function_call",
                   "status": "in_progress", "arguments": "", "call_id": call_id, "name": name}}),
        )
    }

    pub(crate) fn call_args(self, index: usize, delta: &str) -> Self {
        self.push(
            "response.function_call_arguments.delta",
            json!({"item_id": format!("fc_{index}"), "output_index": index, "delta": delta}),
        )
    }

    pub(crate) fn call_done(self, index: usize, call_id: &str, name: &str, args: &str) -> Self {
        self.push(
            "response.function_call_arguments.done",
            json!({"item_id": format!("fc_{index}"), "output_index": index, "arguments": args}),
        )
        .push(
            "response.output_item.done",
            json!({"output_index": index, "item": {"id": format!("fc_{index}"), "type": "function_call",
                   "status": "completed", "arguments": args, "call_id": call_id, "name": name}}),
        )
    }

    pub(crate) fn reasoning_added(self, index: usize) -> Self {
        self.push(
            "response.output_item.added",
            json!({"output_index": index, "item": {"id": format!("rs_{index}"), "type": "reasoning", "summary": []}}),
        )
    }

    pub(crate) fn summary(self, index: usize, part: usize, delta: &str) -> Self {
        self.push(
            "response.reasoning_summary_text.delta",
            json!({"item_id": format!("rs_{index}"), "output_index": index, "summary_index": part, "delta": delta}),
        )
    }

    pub(crate) fn item_done(self, index: usize, item: Value) -> Self {
        self.push(
            "response.output_item.done",
            json!({"output_index": index, "item": item}),
        )
    }

    pub(crate) fn completed(self, usage: Value) -> Self {
        self.push(
            "response.completed",
            json!({"response": response("completed", json!([]), usage)}),
        )
    }

    pub(crate) fn incomplete(self, reason: &str) -> Self {
        let mut response = response("incomplete", json!([]), wire_usage(20, 5, 0, 0));
        response["incomplete_details"] = json!({"reason": reason});
        self.push("response.incomplete", json!({"response": response}))
    }

    pub(crate) fn failed(self, message: &str) -> Self {
        let mut response = response("failed", json!([]), Value::Null);
        response["error"] = json!({"code": "server_error", "message": message});
        self.push("response.failed", json!({"response": response}))
    }

    /// The `data` payloads, as the decoder is fed them.
    pub(crate) fn payloads(&self) -> Vec<(String, String)> {
        self.0
            .iter()
            .map(|event| {
                let kind = event["type"].as_str().unwrap_or_default().to_owned();
                (kind, event.to_string())
            })
            .collect()
    }

    /// The SSE body: `event:` and `data:` lines per event.
    pub(crate) fn body(&self) -> String {
        self.payloads()
            .iter()
            .map(|(kind, data)| format!("event: {kind}\ndata: {data}\n\n"))
            .collect()
    }
}

/// A response object of `status`.
pub(crate) fn response(status: &str, output: Value, usage: Value) -> Value {
    json!({"id": "resp_test", "object": "response", "created_at": 1, "status": status,
           "error": null, "incomplete_details": null, "model": "gpt-test", "output": output,
           "store": false, "usage": usage})
}

/// `usage` as `response.completed` reports it.
pub(crate) fn wire_usage(input: u64, output: u64, cached: u64, reasoning: u64) -> Value {
    json!({"input_tokens": input, "input_tokens_details": {"cached_tokens": cached},
           "output_tokens": output, "output_tokens_details": {"reasoning_tokens": reasoning},
           "total_tokens": input + output})
}

/// A reasoning item as `output_item.done` carries it.
pub(crate) fn reasoning_item(index: usize, summary: &[&str], encrypted: Option<&str>) -> Value {
    let summary: Vec<Value> = summary
        .iter()
        .map(|text| json!({"type": "summary_text", "text": text}))
        .collect();
    let mut item = json!({"id": format!("rs_{index}"), "type": "reasoning", "summary": summary});
    if let Some(encrypted) = encrypted {
        item["encrypted_content"] = json!(encrypted);
    }
    item
}

pub(crate) async fn server_replying(template: ResponseTemplate) -> MockServer {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/v1/responses"))
        .respond_with(template)
        .mount(&server)
        .await;
    server
}

pub(crate) fn sse_reply(events: &Events) -> ResponseTemplate {
    ResponseTemplate::new(200).set_body_raw(events.body().into_bytes(), "text/event-stream")
}

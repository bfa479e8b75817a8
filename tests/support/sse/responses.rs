//! Test helpers for the OpenAI Responses API: a builder for a streamed
//! reply in the documented wire format — `event: <type>` and
//! `data: {"type": ..., "sequence_number": n, ...}` per event, the output
//! items announced, streamed and finished, and one terminal event
//! (`response.completed`, `.incomplete` or `.failed`) — plus canned
//! replies. No `[DONE]`: this API has none.
//!
//! Test code only; it must never talk to the real API.

#![allow(dead_code)]

use serde_json::{Value, json};

#[allow(unused_imports)] // not every test binary uses both
pub use super::openai::http_error;
#[allow(unused_imports)]
pub use super::{request_bodies, sse};

/// A reply being written: every event gets the next `sequence_number`;
/// `response.created` and `response.in_progress` open it.
#[derive(Debug, Clone)]
pub struct Reply {
    events: Vec<Value>,
    /// The finished output items, for the terminal event's `output`.
    output: Vec<Value>,
}

impl Default for Reply {
    fn default() -> Self {
        Reply::new()
    }
}

impl Reply {
    /// `response.created`, then `response.in_progress`.
    pub fn new() -> Self {
        let reply = Reply {
            events: Vec::new(),
            output: Vec::new(),
        };
        reply
            .event(
                "response.created",
                json!({"response": response("in_progress", json!([]), Value::Null)}),
            )
            .event(
                "response.in_progress",
                json!({"response": response("in_progress", json!([]), Value::Null)}),
            )
    }

    /// Any event: `fields` with `type` and `sequence_number` added.
    pub fn event(mut self, kind: &str, mut fields: Value) -> Self {
        fields["type"] = json!(kind);
        fields["sequence_number"] = json!(self.events.len());
        self.events.push(fields);
        self
    }

    fn next_index(&self) -> usize {
        self.output.len()
    }

    /// A whole assistant message item streamed in `deltas`.
    pub fn message(mut self, deltas: &[&str]) -> Self {
        let index = self.next_index();
        let id = format!("msg_{index:03}");
        let text: String = deltas.concat();
        self = self
            .event(
                "response.output_item.added",
                json!({"output_index": index, "item": {"id": id, "type": "message",
                       "status": "in_progress", "content": [], "role": "assistant"}}),
            )
            .event(
                "response.content_part.added",
                json!({"item_id": id, "output_index": index, "content_index": 0,
                       "part": {"type": "output_text", "annotations": [], "logprobs": [], "text": ""}}),
            );
        for delta in deltas {
            self = self.event(
                "response.output_text.delta",
                json!({"item_id": id, "output_index": index, "content_index": 0,
                       "delta": delta, "logprobs": []}),
            );
        }
        let part = json!({"type": "output_text", "annotations": [], "logprobs": [], "text": text});
        let item = json!({"id": id, "type": "message", "status": "completed",
                          "content": [part.clone()], "role": "assistant"});
        self = self
            .event(
                "response.output_text.done",
                json!({"item_id": id, "output_index": index, "content_index": 0,
                       "text": text, "logprobs": []}),
            )
            .event(
                "response.content_part.done",
                json!({"item_id": id, "output_index": index, "content_index": 0, "part": part}),
            )
            .event(
                "response.output_item.done",
                json!({"output_index": index, "item": item.clone()}),
            );
        self.output.push(item);
        self
    }

    /// A reasoning item: its summary streamed in `summary` (one part),
    /// finished with `encrypted` as its `encrypted_content`.
    pub fn reasoning(mut self, summary: &str, encrypted: &str) -> Self {
        let index = self.next_index();
        let id = format!("rs_{index:03}");
        self = self.event(
            "response.output_item.added",
            json!({"output_index": index, "item": {"id": id, "type": "reasoning", "summary": []}}),
        );
        if !summary.is_empty() {
            self = self
                .event(
                    "response.reasoning_summary_part.added",
                    json!({"item_id": id, "output_index": index, "summary_index": 0,
                           "part": {"type": "summary_text", "text": ""}}),
                )
                .event(
                    "response.reasoning_summary_text.delta",
                    json!({"item_id": id, "output_index": index, "summary_index": 0, "delta": summary}),
                )
                .event(
                    "response.reasoning_summary_text.done",
                    json!({"item_id": id, "output_index": index, "summary_index": 0, "text": summary}),
                )
                .event(
                    "response.reasoning_summary_part.done",
                    json!({"item_id": id, "output_index": index, "summary_index": 0,
                           "part": {"type": "summary_text", "text": summary}}),
                );
        }
        let item = reasoning_item(index, summary, encrypted);
        self = self.event(
            "response.output_item.done",
            json!({"output_index": index, "item": item.clone()}),
        );
        self.output.push(item);
        self
    }

    /// Function calls `(call_id, name, arguments)` announced together
    /// and streamed interleaved, each argument string in two fragments.
    pub fn calls(mut self, calls: &[(&str, &str, &str)]) -> Self {
        let first = self.next_index();
        for (offset, (call_id, name, _)) in calls.iter().enumerate() {
            let index = first + offset;
            self = self.event(
                "response.output_item.added",
                json!({"output_index": index, "item": {"id": format!("fc_{index:03}"),
                       "type": "function_call", "status": "in_progress", "arguments": "",
                       "call_id": call_id, "name": name}}),
            );
        }
        for half in 0..2 {
            for (offset, (_, _, arguments)) in calls.iter().enumerate() {
                let index = first + offset;
                let cut = arguments.len() / 2;
                let fragment = if half == 0 {
                    &arguments[..cut]
                } else {
                    &arguments[cut..]
                };
                self = self.event(
                    "response.function_call_arguments.delta",
                    json!({"item_id": format!("fc_{index:03}"), "output_index": index, "delta": fragment}),
                );
            }
        }
        for (offset, (call_id, name, arguments)) in calls.iter().enumerate() {
            let index = first + offset;
            let item = json!({"id": format!("fc_{index:03}"), "type": "function_call",
                              "status": "completed", "arguments": arguments,
                              "call_id": call_id, "name": name});
            self = self
                .event(
                    "response.function_call_arguments.done",
                    json!({"item_id": format!("fc_{index:03}"), "output_index": index, "arguments": arguments}),
                )
                .event(
                    "response.output_item.done",
                    json!({"output_index": index, "item": item.clone()}),
                );
            self.output.push(item);
        }
        self
    }

    /// `response.completed` with `usage`; the SSE body.
    pub fn completed(self, input: u64, cached: u64, output: u64) -> String {
        let usage = usage(input, cached, output, 0);
        let output_items = json!(self.output.clone());
        self.event(
            "response.completed",
            json!({"response": response("completed", output_items, usage)}),
        )
        .body()
    }

    /// `response.incomplete` for `reason`; the SSE body.
    pub fn incomplete(self, reason: &str) -> String {
        let mut response = response("incomplete", json!(self.output.clone()), usage(40, 0, 3, 0));
        response["incomplete_details"] = json!({"reason": reason});
        self.event("response.incomplete", json!({"response": response}))
            .body()
    }

    /// `response.failed` with the server's `message`; the SSE body.
    pub fn failed(self, message: &str) -> String {
        let mut response = response("failed", json!(self.output.clone()), Value::Null);
        response["error"] = json!({"code": "server_error", "message": message});
        self.event("response.failed", json!({"response": response}))
            .body()
    }

    /// The events so far with no terminal event: a cut stream.
    pub fn body(&self) -> String {
        self.events
            .iter()
            .map(|event| {
                let kind = event["type"].as_str().unwrap_or_default();
                format!("event: {kind}\ndata: {event}\n\n")
            })
            .collect()
    }
}

/// A reasoning item as `response.output_item.done` carries it (with
/// `include: ["reasoning.encrypted_content"]`).
pub fn reasoning_item(index: usize, summary: &str, encrypted: &str) -> Value {
    let summary = match summary.is_empty() {
        true => json!([]),
        false => json!([{"type": "summary_text", "text": summary}]),
    };
    json!({"id": format!("rs_{index:03}"), "type": "reasoning", "summary": summary,
           "encrypted_content": encrypted})
}

/// A response object of `status`.
pub fn response(status: &str, output: Value, usage: Value) -> Value {
    json!({
        "id": "resp_test", "object": "response", "created_at": 1_741_476_542,
        "status": status, "error": null, "incomplete_details": null,
        "instructions": null, "max_output_tokens": null, "model": "gpt-test",
        "output": output, "parallel_tool_calls": true, "previous_response_id": null,
        "reasoning": {"effort": null, "summary": null}, "store": false,
        "temperature": 1.0, "text": {"format": {"type": "text"}}, "tool_choice": "auto",
        "tools": [], "top_p": 1.0, "truncation": "disabled", "usage": usage,
        "user": null, "metadata": {}
    })
}

/// `usage` as the terminal events report it.
pub fn usage(input: u64, cached: u64, output: u64, reasoning: u64) -> Value {
    json!({"input_tokens": input, "input_tokens_details": {"cached_tokens": cached},
           "output_tokens": output, "output_tokens_details": {"reasoning_tokens": reasoning},
           "total_tokens": input + output})
}

/// A complete text reply in `deltas`, with usage.
pub fn text_reply(deltas: &[&str]) -> String {
    Reply::new().message(deltas).completed(50, 0, 10)
}

/// An `error` event (the stream's own error, no response object).
pub fn error_event(code: &str, message: &str) -> String {
    Reply::new()
        .event(
            "error",
            json!({"code": code, "message": message, "param": null}),
        )
        .body()
}

//! Builders for a streamed Responses API reply in the documented wire
//! format — `event: <type>` and `data: {"type": ..., "sequence_number":
//! n, ...}` per event, the output items announced, streamed and finished,
//! and one terminal event (`response.completed`, `.incomplete` or
//! `.failed`). No `[DONE]`: this API has none.
//!
//! Two levels on one set of event shapes: [`Events`] writes one event at
//! a time at the output index a test names (for the decoder's odd
//! sequences), [`Reply`] writes whole items at the next index (for a
//! realistic reply).

use serde_json::{Value, json};

/// A stream being written one event at a time: each event gets the next
/// `sequence_number`.
#[derive(Debug, Default, Clone)]
pub struct Events(pub Vec<Value>);

impl Events {
    /// Any event: `fields` with `type` and `sequence_number` added.
    pub fn push(mut self, kind: &str, mut fields: Value) -> Self {
        fields["type"] = json!(kind);
        fields["sequence_number"] = json!(self.0.len());
        self.0.push(fields);
        self
    }

    /// `response.created`.
    pub fn created(self) -> Self {
        self.push(
            "response.created",
            json!({"response": response("in_progress", json!([]), Value::Null)}),
        )
    }

    /// `response.in_progress`.
    pub fn in_progress(self) -> Self {
        self.push(
            "response.in_progress",
            json!({"response": response("in_progress", json!([]), Value::Null)}),
        )
    }

    /// A message item announced at `index`.
    pub fn message_added(self, index: usize) -> Self {
        self.push(
            "response.output_item.added",
            json!({"output_index": index, "item": {"id": message_id(index), "type": "message",
                   "status": "in_progress", "content": [], "role": "assistant"}}),
        )
    }

    /// A text delta of the message at `index`.
    pub fn text(self, index: usize, delta: &str) -> Self {
        self.push(
            "response.output_text.delta",
            json!({"item_id": message_id(index), "output_index": index, "content_index": 0,
                   "delta": delta, "logprobs": []}),
        )
    }

    /// A function call announced at `index`, no arguments yet.
    pub fn call_added(self, index: usize, call_id: &str, name: &str) -> Self {
        self.push(
            "response.output_item.added",
            json!({"output_index": index, "item": {"id": call_item_id(index), "type": "function_call",
                   "status": "in_progress", "arguments": "", "call_id": call_id, "name": name}}),
        )
    }

    /// A fragment of the arguments of the call at `index`.
    pub fn call_args(self, index: usize, delta: &str) -> Self {
        self.push(
            "response.function_call_arguments.delta",
            json!({"item_id": call_item_id(index), "output_index": index, "delta": delta}),
        )
    }

    /// The call at `index` finished: its whole arguments, then the item.
    pub fn call_done(self, index: usize, call_id: &str, name: &str, args: &str) -> Self {
        self.push(
            "response.function_call_arguments.done",
            json!({"item_id": call_item_id(index), "output_index": index, "arguments": args}),
        )
        .item_done(index, call_item(index, call_id, name, args))
    }

    /// A reasoning item announced at `index`.
    pub fn reasoning_added(self, index: usize) -> Self {
        self.push(
            "response.output_item.added",
            json!({"output_index": index, "item": {"id": reasoning_id(index), "type": "reasoning", "summary": []}}),
        )
    }

    /// A delta of summary part `part` of the reasoning item at `index`.
    pub fn summary(self, index: usize, part: usize, delta: &str) -> Self {
        self.push(
            "response.reasoning_summary_text.delta",
            json!({"item_id": reasoning_id(index), "output_index": index, "summary_index": part, "delta": delta}),
        )
    }

    /// The item at `index` finished, as given.
    pub fn item_done(self, index: usize, item: Value) -> Self {
        self.push(
            "response.output_item.done",
            json!({"output_index": index, "item": item}),
        )
    }

    /// `response.completed` with `usage` and no output items.
    pub fn completed(self, usage: Value) -> Self {
        self.push(
            "response.completed",
            json!({"response": response("completed", json!([]), usage)}),
        )
    }

    /// `response.incomplete` for `reason` (20 tokens in, 5 out).
    pub fn incomplete(self, reason: &str) -> Self {
        self.push(
            "response.incomplete",
            json!({"response": incomplete_response(json!([]), usage(20, 0, 5, 0), reason)}),
        )
    }

    /// `response.failed` with the server's `message`.
    pub fn failed(self, message: &str) -> Self {
        self.push(
            "response.failed",
            json!({"response": failed_response(json!([]), message)}),
        )
    }

    /// The `(type, data)` of each event, as the decoder is fed them.
    pub fn payloads(&self) -> Vec<(String, String)> {
        self.0
            .iter()
            .map(|event| {
                let kind = event["type"].as_str().unwrap_or_default().to_owned();
                (kind, event.to_string())
            })
            .collect()
    }

    /// The SSE body: `event:` and `data:` lines per event.
    pub fn body(&self) -> String {
        self.payloads()
            .iter()
            .map(|(kind, data)| format!("event: {kind}\ndata: {data}\n\n"))
            .collect()
    }
}

/// A reply being written item by item: `response.created` and
/// `response.in_progress` open it, each item takes the next output index,
/// and the terminal event lists the finished items.
#[derive(Debug, Clone)]
pub struct Reply {
    events: Events,
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
        Reply {
            events: Events::default().created().in_progress(),
            output: Vec::new(),
        }
    }

    /// Any event: `fields` with `type` and `sequence_number` added.
    pub fn event(mut self, kind: &str, fields: Value) -> Self {
        self.events = self.events.push(kind, fields);
        self
    }

    fn next_index(&self) -> usize {
        self.output.len()
    }

    /// A whole assistant message item streamed in `deltas`.
    pub fn message(mut self, deltas: &[&str]) -> Self {
        let index = self.next_index();
        let id = message_id(index);
        let text: String = deltas.concat();
        self.events = self.events.message_added(index);
        self = self.event(
            "response.content_part.added",
            json!({"item_id": id, "output_index": index, "content_index": 0,
                   "part": {"type": "output_text", "annotations": [], "logprobs": [], "text": ""}}),
        );
        for delta in deltas {
            self.events = self.events.text(index, delta);
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
            );
        self.events = self.events.item_done(index, item.clone());
        self.output.push(item);
        self
    }

    /// A reasoning item: its summary streamed in `summary` (one part),
    /// finished with `encrypted` as its `encrypted_content`.
    pub fn reasoning(mut self, summary: &str, encrypted: &str) -> Self {
        let index = self.next_index();
        let id = reasoning_id(index);
        self.events = self.events.reasoning_added(index);
        if !summary.is_empty() {
            self = self.event(
                "response.reasoning_summary_part.added",
                json!({"item_id": id, "output_index": index, "summary_index": 0,
                       "part": {"type": "summary_text", "text": ""}}),
            );
            self.events = self.events.summary(index, 0, summary);
            self = self
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
        self.events = self.events.item_done(index, item.clone());
        self.output.push(item);
        self
    }

    /// Function calls `(call_id, name, arguments)` announced together
    /// and streamed interleaved, each argument string in two fragments.
    pub fn calls(mut self, calls: &[(&str, &str, &str)]) -> Self {
        let first = self.next_index();
        for (offset, (call_id, name, _)) in calls.iter().enumerate() {
            self.events = self.events.call_added(first + offset, call_id, name);
        }
        for half in 0..2 {
            for (offset, (_, _, arguments)) in calls.iter().enumerate() {
                let cut = arguments.len() / 2;
                let fragment = if half == 0 {
                    &arguments[..cut]
                } else {
                    &arguments[cut..]
                };
                self.events = self.events.call_args(first + offset, fragment);
            }
        }
        for (offset, (call_id, name, arguments)) in calls.iter().enumerate() {
            let index = first + offset;
            self.events = self.events.call_done(index, call_id, name, arguments);
            self.output.push(call_item(index, call_id, name, arguments));
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
        let response = incomplete_response(json!(self.output.clone()), usage(40, 0, 3, 0), reason);
        self.event("response.incomplete", json!({"response": response}))
            .body()
    }

    /// `response.failed` with the server's `message`; the SSE body.
    pub fn failed(self, message: &str) -> String {
        let response = failed_response(json!(self.output.clone()), message);
        self.event("response.failed", json!({"response": response}))
            .body()
    }

    /// The events so far with no terminal event: a cut stream.
    pub fn body(&self) -> String {
        self.events.body()
    }
}

fn message_id(index: usize) -> String {
    format!("msg_{index:03}")
}

fn call_item_id(index: usize) -> String {
    format!("fc_{index:03}")
}

fn reasoning_id(index: usize) -> String {
    format!("rs_{index:03}")
}

/// A finished function call item.
fn call_item(index: usize, call_id: &str, name: &str, arguments: &str) -> Value {
    json!({"id": call_item_id(index), "type": "function_call", "status": "completed",
           "arguments": arguments, "call_id": call_id, "name": name})
}

/// A reasoning item as `response.output_item.done` carries it (with
/// `include: ["reasoning.encrypted_content"]`), its summary in one part.
pub fn reasoning_item(index: usize, summary: &str, encrypted: &str) -> Value {
    let parts: &[&str] = match summary.is_empty() {
        true => &[],
        false => &[summary],
    };
    reasoning_parts(index, parts, Some(encrypted))
}

/// A reasoning item of any shape: its summary in `summary` parts, its
/// `encrypted_content` only when given (a server that ignored `include`).
pub fn reasoning_parts(index: usize, summary: &[&str], encrypted: Option<&str>) -> Value {
    let summary: Vec<Value> = summary
        .iter()
        .map(|text| json!({"type": "summary_text", "text": text}))
        .collect();
    let mut item = json!({"id": reasoning_id(index), "type": "reasoning", "summary": summary});
    if let Some(encrypted) = encrypted {
        item["encrypted_content"] = json!(encrypted);
    }
    item
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

/// The response of `response.incomplete` for `reason`.
fn incomplete_response(output: Value, usage: Value, reason: &str) -> Value {
    let mut response = response("incomplete", output, usage);
    response["incomplete_details"] = json!({"reason": reason});
    response
}

/// The response of `response.failed` with the server's `message`.
fn failed_response(output: Value, message: &str) -> Value {
    let mut response = response("failed", output, Value::Null);
    response["error"] = json!({"code": "server_error", "message": message});
    response
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

//! The Anthropic Messages API (`POST {base}/v1/messages`, streamed): the
//! request body built from leash's messages, and a decoder that turns the
//! named SSE events of a reply into [`StreamEvent`]s.
//!
//! Three separate pieces: [`request_body`] (messages → typed wire structs),
//! [`Decoder`] (one SSE event in, zero or more `StreamEvent`s out, no I/O) and
//! the provider's stream, which only sends, retries and feeds the decoder.
//!
//! It must never panic on what a server sends (unknown event, block and delta
//! types are skipped), never put the API key into an event, and never retry
//! once a byte of a response body was used.

use std::borrow::Cow;
use std::collections::HashMap;

use futures::stream::BoxStream;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::driver::{SseStream, WireDecoder, decode_with, stream_response};
use super::{
    HttpSettings, INCOMPLETE, NO_STOP_REASON, Provider, Request, StreamEvent, ToolSpec, http, sse,
};
use crate::agent::types::{AssistantContent, Content, Message, StopReason, Usage};

/// The `anthropic-version` header leash speaks.
const API_VERSION: &str = "2023-06-01";
/// `max_tokens` when `--max-tokens` is not given: the API requires the field,
/// and a real answer with tool calls must fit.
const DEFAULT_MAX_TOKENS: u32 = 8192;

/// The Anthropic Messages API as a [`Provider`].
#[derive(Debug, Clone)]
pub struct AnthropicProvider {
    settings: HttpSettings,
    /// The HTTP client, or why it could not be set up (reported by the
    /// first request).
    client: Result<reqwest::Client, String>,
}

impl AnthropicProvider {
    /// A provider talking to `settings.base_url` (normally `https://api.anthropic.com`).
    pub fn new(settings: HttpSettings) -> Self {
        AnthropicProvider {
            settings,
            client: http::client(),
        }
    }

    /// The HTTP request for `request`, built once and cloned per attempt.
    fn http_request(
        &self,
        request: &Request<'_>,
    ) -> Result<(reqwest::Client, reqwest::Request), String> {
        let client = self.client.clone()?;
        let body = serde_json::to_vec(&request_body(request, &self.settings))
            .map_err(|err| format!("could not encode the request: {err}"))?;
        let url = messages_url(&self.settings.base_url);
        let mut builder = client
            .post(&url)
            .header("anthropic-version", API_VERSION)
            .header("content-type", "application/json")
            .header("accept", "text/event-stream")
            .body(body);
        if let Some(key) = &self.settings.api_key {
            builder = builder.header("x-api-key", key.expose());
        }
        let request = builder
            .build()
            .map_err(|err| format!("could not build the request to {url}: {err}"))?;
        Ok((client, request))
    }
}

impl Provider for AnthropicProvider {
    fn name(&self) -> &str {
        "anthropic"
    }

    fn stream(&self, request: Request<'_>) -> BoxStream<'static, StreamEvent> {
        stream_response(
            self.http_request(&request),
            self.settings.clone(),
            decode::<SseStream>,
        )
    }
}

/// The stream of one response body, decoded by this format's [`Decoder`];
/// public so the fuzz targets can feed it any event sequence.
pub fn decode<S>(events: S) -> BoxStream<'static, StreamEvent>
where
    S: futures::Stream<Item = Result<sse::SseEvent, sse::SseError>> + Send + 'static,
{
    decode_with::<Decoder, S>(events)
}

impl WireDecoder for Decoder {
    fn decode_event(&mut self, event: &str, data: &str, out: &mut Vec<StreamEvent>) -> bool {
        self.feed(event, data, out) == Flow::Finished
    }
    fn body_failed(&mut self, error: &sse::SseError, out: &mut Vec<StreamEvent>) {
        self.finished = true;
        out.push(StreamEvent::Error(format!("{error}; {INCOMPLETE}")));
    }
    fn body_ended(&mut self, out: &mut Vec<StreamEvent>) {
        out.push(self.end_of_stream());
    }
}

/// `{base}/v1/messages`, with or without a trailing slash on the base.
fn messages_url(base: &str) -> String {
    format!("{}/v1/messages", base.trim_end_matches('/'))
}

// ---------------------------------------------------------------------------
// Request body
// ---------------------------------------------------------------------------

/// The body of one `POST /v1/messages`, borrowing from the request.
#[derive(Debug, Serialize, PartialEq)]
pub struct WireRequest<'a> {
    model: &'a str,
    max_tokens: u32,
    #[serde(skip_serializing_if = "str::is_empty")]
    system: &'a str,
    messages: Vec<WireMessage<'a>>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    tools: Vec<WireTool<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    temperature: Option<f32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    output_config: Option<OutputConfig<'a>>,
    stream: bool,
}

/// `output_config.format` for `--output-schema` (structured outputs).
#[derive(Debug, Serialize, PartialEq)]
struct OutputConfig<'a> {
    format: OutputFormat<'a>,
}

#[derive(Debug, Serialize, PartialEq)]
struct OutputFormat<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    schema: &'a Value,
}

#[derive(Debug, Serialize, PartialEq)]
struct WireMessage<'a> {
    role: WireRole,
    content: Vec<WireBlock<'a>>,
}

#[derive(Debug, Serialize, PartialEq, Clone, Copy)]
#[serde(rename_all = "lowercase")]
enum WireRole {
    User,
    Assistant,
}

#[derive(Debug, Serialize, PartialEq)]
#[serde(tag = "type", rename_all = "snake_case")]
enum WireBlock<'a> {
    Text {
        text: &'a str,
    },
    Thinking {
        thinking: &'a str,
        signature: &'a str,
    },
    RedactedThinking {
        data: &'a str,
    },
    ToolUse {
        id: &'a str,
        name: &'a str,
        input: Cow<'a, Value>,
    },
    ToolResult {
        tool_use_id: &'a str,
        content: String,
        is_error: bool,
    },
}

#[derive(Debug, Serialize, PartialEq)]
struct WireTool<'a> {
    name: &'a str,
    description: &'a str,
    input_schema: &'a Value,
}

/// Builds the Messages API body for one request (SPEC 2.4): system at the
/// top level, every message mapped to content blocks, `stream: true` and a
/// `max_tokens` always present.
pub fn request_body<'a>(request: &Request<'a>, settings: &'a HttpSettings) -> WireRequest<'a> {
    WireRequest {
        model: request.model,
        max_tokens: settings.max_tokens.unwrap_or(DEFAULT_MAX_TOKENS),
        system: request.system,
        messages: wire_messages(request.messages),
        tools: request.tools.iter().map(wire_tool).collect(),
        temperature: settings.temperature,
        output_config: settings.output_schema.as_ref().map(|schema| OutputConfig {
            format: OutputFormat {
                kind: "json_schema",
                schema,
            },
        }),
        stream: true,
    }
}

/// Maps the conversation. The tool results of one batch go into one `user`
/// message, as the API wants every answer to an assistant's `tool_use`
/// blocks in the message right after it.
fn wire_messages(messages: &[Message]) -> Vec<WireMessage<'_>> {
    let mut out: Vec<WireMessage<'_>> = Vec::with_capacity(messages.len());
    let mut last_was_tool_result = false;
    for message in messages {
        match message {
            Message::User(user) => {
                let content = user
                    .content
                    .iter()
                    .map(|Content::Text { text }| WireBlock::Text { text })
                    .collect();
                out.push(WireMessage {
                    role: WireRole::User,
                    content,
                });
                last_was_tool_result = false;
            }
            Message::Assistant(assistant) => {
                let content: Vec<_> = assistant
                    .content
                    .iter()
                    .filter_map(assistant_block)
                    .collect();
                // The API refuses empty assistant turns (an aborted reply
                // may have produced nothing).
                if !content.is_empty() {
                    out.push(WireMessage {
                        role: WireRole::Assistant,
                        content,
                    });
                }
                last_was_tool_result = false;
            }
            Message::ToolResult(result) => {
                let block = WireBlock::ToolResult {
                    tool_use_id: &result.tool_call_id,
                    content: result.text(),
                    is_error: result.is_error,
                };
                match out.last_mut() {
                    Some(previous) if last_was_tool_result => previous.content.push(block),
                    _ => out.push(WireMessage {
                        role: WireRole::User,
                        content: vec![block],
                    }),
                }
                last_was_tool_result = true;
            }
        }
    }
    out
}

/// One assistant block on the wire, or `None` for what the API must not
/// get back: empty text and thinking without a signature (from another
/// provider, or cut off before its signature arrived). A redacted block
/// goes back as it came: its `data`, unchanged.
fn assistant_block(block: &AssistantContent) -> Option<WireBlock<'_>> {
    match block {
        AssistantContent::Text { text } if text.is_empty() => None,
        AssistantContent::Text { text } => Some(WireBlock::Text { text }),
        AssistantContent::Thinking {
            signature: Some(data),
            redacted: true,
            ..
        } => Some(WireBlock::RedactedThinking { data }),
        AssistantContent::Thinking {
            thinking,
            signature: Some(signature),
            redacted: false,
        } => Some(WireBlock::Thinking {
            thinking,
            signature,
        }),
        AssistantContent::Thinking {
            signature: None, ..
        } => None,
        AssistantContent::ToolCall(call) => Some(WireBlock::ToolUse {
            id: &call.id,
            name: &call.name,
            input: tool_input(&call.arguments),
        }),
    }
}

/// `input` must be an object: arguments kept as raw text (they did not
/// parse) are sent as `{}`; the failed call's error result tells the model.
fn tool_input(arguments: &Value) -> Cow<'_, Value> {
    if arguments.is_object() {
        Cow::Borrowed(arguments)
    } else {
        Cow::Owned(Value::Object(serde_json::Map::new()))
    }
}

fn wire_tool(tool: &ToolSpec) -> WireTool<'_> {
    WireTool {
        name: &tool.name,
        description: &tool.description,
        input_schema: &tool.parameters,
    }
}

// ---------------------------------------------------------------------------
// Stream decoder
// ---------------------------------------------------------------------------

/// One SSE event's `data`, by its `type`. Unknown types deserialize to
/// `Unknown` and are skipped, as the API's versioning policy asks.
#[derive(Debug, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum WireEvent {
    MessageStart {
        message: WireMessageStart,
    },
    ContentBlockStart {
        index: usize,
        content_block: WireBlockStart,
    },
    ContentBlockDelta {
        index: usize,
        delta: WireDelta,
    },
    ContentBlockStop {
        index: usize,
    },
    MessageDelta {
        #[serde(default)]
        delta: WireMessageDelta,
        #[serde(default)]
        usage: Option<WireUsage>,
    },
    MessageStop,
    Ping,
    Error {
        error: WireError,
    },
    #[serde(other)]
    Unknown,
}

#[derive(Debug, Deserialize)]
struct WireMessageStart {
    #[serde(default)]
    usage: Option<WireUsage>,
}

/// Token counts; every field is optional because `message_delta` carries
/// only some of them.
#[derive(Debug, Default, Deserialize)]
struct WireUsage {
    input_tokens: Option<u64>,
    output_tokens: Option<u64>,
    cache_read_input_tokens: Option<u64>,
    cache_creation_input_tokens: Option<u64>,
}

#[derive(Debug, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum WireBlockStart {
    Text {
        #[serde(default)]
        text: String,
    },
    Thinking {
        #[serde(default)]
        thinking: String,
    },
    RedactedThinking {
        #[serde(default)]
        data: String,
    },
    ToolUse {
        id: String,
        name: String,
        #[serde(default)]
        input: Value,
    },
    #[serde(other)]
    Unknown,
}

#[derive(Debug, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum WireDelta {
    TextDelta {
        text: String,
    },
    ThinkingDelta {
        thinking: String,
    },
    SignatureDelta {
        signature: String,
    },
    InputJsonDelta {
        partial_json: String,
    },
    #[serde(other)]
    Unknown,
}

#[derive(Debug, Default, Deserialize)]
struct WireMessageDelta {
    #[serde(default)]
    stop_reason: Option<String>,
}

#[derive(Debug, Deserialize)]
struct WireError {
    #[serde(rename = "type", default)]
    kind: String,
    #[serde(default)]
    message: String,
}

/// Whether the decoder wants more events.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Flow {
    /// Keep feeding.
    Continue,
    /// A final `Done` or `Error` was produced; stop reading.
    Finished,
}

/// An open `tool_use` block.
#[derive(Debug, Default)]
struct OpenToolCall {
    /// Whether any non-empty `partial_json` arrived for it.
    has_fragments: bool,
    /// A non-empty `input` sent whole in `content_block_start` (some
    /// compatible servers do), used when no fragment follows.
    start_input: Option<String>,
}

/// Turns Anthropic's SSE events into [`StreamEvent`]s, one event at a time.
/// Pure: no I/O, no clock, so every wire sequence can be tested directly.
#[derive(Debug, Default)]
pub struct Decoder {
    open_tool_calls: HashMap<usize, OpenToolCall>,
    saw_tool_call: bool,
    usage: Usage,
    stop_reason: Option<String>,
    finished: bool,
}

impl Decoder {
    /// Feeds one SSE event (`event:` name and `data:` text), appending what
    /// it means to `out`. After `Finished` further events are ignored.
    pub fn feed(&mut self, name: &str, data: &str, out: &mut Vec<StreamEvent>) -> Flow {
        if self.finished {
            return Flow::Finished;
        }
        if !is_decoded_event_name(name) {
            return Flow::Continue;
        }
        let event: WireEvent = match serde_json::from_str(data) {
            Ok(event) => event,
            Err(err) => {
                let what = if name.is_empty() { "an" } else { name };
                return self.fail(
                    format!("invalid JSON in {what} event of the Anthropic stream: {err}"),
                    out,
                );
            }
        };
        match event {
            WireEvent::MessageStart { message } => {
                if let Some(usage) = message.usage {
                    self.update_usage(&usage, out);
                }
            }
            WireEvent::ContentBlockStart {
                index,
                content_block,
            } => self.block_start(index, content_block, out),
            WireEvent::ContentBlockDelta { index, delta } => self.block_delta(index, delta, out),
            WireEvent::ContentBlockStop { index } => self.block_stop(index, out),
            WireEvent::MessageDelta { delta, usage } => {
                if delta.stop_reason.is_some() {
                    self.stop_reason = delta.stop_reason;
                }
                if let Some(usage) = usage {
                    self.update_usage(&usage, out);
                }
            }
            WireEvent::MessageStop => return self.message_stop(out),
            WireEvent::Error { error } => return self.fail(stream_error_message(&error), out),
            WireEvent::Ping | WireEvent::Unknown => {}
        }
        Flow::Continue
    }

    /// What a stream that ended here means: an error unless it was finished.
    pub fn end_of_stream(&mut self) -> StreamEvent {
        self.finished = true;
        StreamEvent::Error(format!(
            "the stream was cut off (no message_stop); {INCOMPLETE}"
        ))
    }

    fn block_start(&mut self, index: usize, block: WireBlockStart, out: &mut Vec<StreamEvent>) {
        match block {
            WireBlockStart::Text { text } if !text.is_empty() => out.push(StreamEvent::Text(text)),
            WireBlockStart::Thinking { thinking } if !thinking.is_empty() => {
                out.push(StreamEvent::Thinking(thinking));
            }
            WireBlockStart::ToolUse { id, name, input } => {
                let start_input = match &input {
                    Value::Object(map) if !map.is_empty() => Some(input.to_string()),
                    _ => None,
                };
                self.saw_tool_call = true;
                self.open_tool_calls.insert(
                    index,
                    OpenToolCall {
                        has_fragments: false,
                        start_input,
                    },
                );
                out.push(StreamEvent::ToolCallStart {
                    key: index,
                    id,
                    name,
                });
            }
            // Encrypted reasoning: nothing to show, but the API wants it
            // back unchanged in the next request of a tool loop.
            WireBlockStart::RedactedThinking { data } if !data.is_empty() => {
                out.push(StreamEvent::RedactedThinking(data));
            }
            // Server tools and whatever comes later: not something leash
            // can show or send back.
            WireBlockStart::Text { .. }
            | WireBlockStart::Thinking { .. }
            | WireBlockStart::RedactedThinking { .. }
            | WireBlockStart::Unknown => {}
        }
    }

    fn block_delta(&mut self, index: usize, delta: WireDelta, out: &mut Vec<StreamEvent>) {
        match delta {
            WireDelta::TextDelta { text } if !text.is_empty() => out.push(StreamEvent::Text(text)),
            WireDelta::ThinkingDelta { thinking } if !thinking.is_empty() => {
                out.push(StreamEvent::Thinking(thinking));
            }
            WireDelta::SignatureDelta { signature } if !signature.is_empty() => {
                out.push(StreamEvent::ThinkingSignature(signature));
            }
            WireDelta::InputJsonDelta { partial_json } if !partial_json.is_empty() => {
                // A fragment for a block that never opened as tool_use has
                // no call to belong to.
                if let Some(call) = self.open_tool_calls.get_mut(&index) {
                    call.has_fragments = true;
                    out.push(StreamEvent::ToolCallArgs {
                        key: index,
                        fragment: partial_json,
                    });
                }
            }
            _ => {}
        }
    }

    fn block_stop(&mut self, index: usize, out: &mut Vec<StreamEvent>) {
        if let Some(call) = self.open_tool_calls.remove(&index) {
            close_tool_call(index, call, out);
        }
    }

    fn message_stop(&mut self, out: &mut Vec<StreamEvent>) -> Flow {
        // `message_stop` without a `message_delta` that said how the reply
        // ended: the server (or a proxy) cut the message short.
        if self.stop_reason.is_none() {
            return self.fail(NO_STOP_REASON.to_string(), out);
        }
        // A block left open still gets its arguments, in block order.
        let mut open: Vec<_> = self.open_tool_calls.drain().collect();
        open.sort_by_key(|(index, _)| *index);
        for (index, call) in open {
            close_tool_call(index, call, out);
        }
        self.finished = true;
        out.push(stop_event(self.stop_reason.as_deref(), self.saw_tool_call));
        Flow::Finished
    }

    fn update_usage(&mut self, usage: &WireUsage, out: &mut Vec<StreamEvent>) {
        let fields = [
            (usage.input_tokens, &mut self.usage.input),
            (usage.output_tokens, &mut self.usage.output),
            (usage.cache_read_input_tokens, &mut self.usage.cache_read),
            (
                usage.cache_creation_input_tokens,
                &mut self.usage.cache_write,
            ),
        ];
        for (value, field) in fields {
            if let Some(value) = value {
                *field = value;
            }
        }
        self.usage = self.usage.with_total();
        out.push(StreamEvent::Usage(self.usage));
    }

    fn fail(&mut self, message: String, out: &mut Vec<StreamEvent>) -> Flow {
        self.finished = true;
        out.push(StreamEvent::Error(message));
        Flow::Finished
    }
}

/// The SSE event names the decoder reads. `ping` and names the API may add
/// later are skipped without looking at their data; an unnamed event is
/// judged by the `type` inside it.
fn is_decoded_event_name(name: &str) -> bool {
    matches!(
        name,
        "" | "message"
            | "message_start"
            | "content_block_start"
            | "content_block_delta"
            | "content_block_stop"
            | "message_delta"
            | "message_stop"
            | "error"
    )
}

/// A `tool_use` block is complete: a call whose input never came in
/// fragments has the arguments of its start, or `{}`.
fn close_tool_call(index: usize, call: OpenToolCall, out: &mut Vec<StreamEvent>) {
    if !call.has_fragments {
        out.push(StreamEvent::ToolCallArgs {
            key: index,
            fragment: call.start_input.unwrap_or_else(|| "{}".to_string()),
        });
    }
}

/// The API's `stop_reason` in SPEC 1.1 terms, as the stream's last event.
fn stop_event(stop_reason: Option<&str>, saw_tool_call: bool) -> StreamEvent {
    match stop_reason {
        Some("end_turn" | "stop_sequence") => StreamEvent::Done(StopReason::Stop),
        Some("tool_use") => StreamEvent::Done(StopReason::ToolUse),
        Some("max_tokens" | "model_context_window_exceeded") => {
            StreamEvent::Done(StopReason::Length)
        }
        Some("refusal") => {
            StreamEvent::Error("the model refused to answer (stop_reason: refusal)".to_string())
        }
        // Newer than leash: what the content says is the best guess. (A
        // missing one never gets here: that reply is incomplete.)
        _ if saw_tool_call => StreamEvent::Done(StopReason::ToolUse),
        _ => StreamEvent::Done(StopReason::Stop),
    }
}

/// `{type: "error", error: {type, message}}` in words, as OpenAI's decoder
/// words a mid-stream error, so a script reads one message on both.
fn stream_error_message(error: &WireError) -> String {
    let message = if error.message.is_empty() {
        "no message"
    } else {
        error.message.as_str()
    };
    if error.kind.is_empty() {
        format!("the provider reported an error mid-stream: {message}")
    } else {
        format!(
            "the provider reported an error mid-stream: {message} ({})",
            error.kind
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::agent::types::{AssistantMessage, ToolCall, ToolResultMessage, UserMessage};
    use futures::StreamExt;
    use pretty_assertions::assert_eq;
    use serde_json::json;
    use std::time::Duration;

    fn settings() -> HttpSettings {
        HttpSettings {
            base_url: "http://localhost".to_string(),
            api_key: None,
            retries: 0,
            max_tokens: None,
            temperature: None,
            deadline: None,
            output_schema: None,
        }
    }

    fn user(text: &str) -> Message {
        Message::User(UserMessage {
            content: vec![Content::text(text)],
            timestamp: 0,
        })
    }

    fn assistant(content: Vec<AssistantContent>) -> Message {
        Message::Assistant(AssistantMessage {
            content,
            stop_reason: StopReason::ToolUse,
            ..AssistantMessage::default()
        })
    }

    fn call(id: &str, name: &str, arguments: Value) -> AssistantContent {
        AssistantContent::ToolCall(ToolCall {
            id: id.to_string(),
            name: name.to_string(),
            arguments,
        })
    }

    fn result(id: &str, text: &str, is_error: bool) -> Message {
        Message::ToolResult(ToolResultMessage {
            tool_call_id: id.to_string(),
            tool_name: "read_file".to_string(),
            content: vec![Content::text(text)],
            details: json!({"private": true}),
            is_error,
            duration_ms: Some(1),
            timestamp: 0,
        })
    }

    fn body(request: &Request<'_>, settings: &HttpSettings) -> Value {
        serde_json::to_value(request_body(request, settings)).unwrap()
    }

    #[test]
    fn tool_round_trip_maps_to_tool_use_and_one_user_message_of_results() {
        let messages = vec![
            user("Summarize sample.ts"),
            assistant(vec![
                AssistantContent::Text {
                    text: "Reading both.".to_string(),
                },
                call("toolu_1", "read_file", json!({"path": "sample.ts"})),
                call("toolu_2", "read_file", json!({"path": "missing.ts"})),
            ]),
            result("toolu_1", "export const x = 1;\n", false),
            result("toolu_2", "no such file: missing.ts", true),
        ];
        let tools = vec![ToolSpec {
            name: "read_file".to_string(),
            description: "Read a file".to_string(),
            parameters: json!({"type": "object", "properties": {"path": {"type": "string"}}}),
        }];
        let request = Request {
            model: "claude-test",
            system: "Be brief.",
            messages: &messages,
            tools: &tools,
        };
        assert_eq!(
            body(&request, &settings()),
            json!({
                "model": "claude-test",
                "max_tokens": 8192,
                "system": "Be brief.",
                "messages": [
                    {"role": "user", "content": [{"type": "text", "text": "Summarize sample.ts"}]},
                    {"role": "assistant", "content": [
                        {"type": "text", "text": "Reading both."},
                        {"type": "tool_use", "id": "toolu_1", "name": "read_file", "input": {"path": "sample.ts"}},
                        {"type": "tool_use", "id": "toolu_2", "name": "read_file", "input": {"path": "missing.ts"}}
                    ]},
                    {"role": "user", "content": [
                        {"type": "tool_result", "tool_use_id": "toolu_1", "content": "export const x = 1;\n", "is_error": false},
                        {"type": "tool_result", "tool_use_id": "toolu_2", "content": "no such file: missing.ts", "is_error": true}
                    ]}
                ],
                "tools": [{
                    "name": "read_file",
                    "description": "Read a file",
                    "input_schema": {"type": "object", "properties": {"path": {"type": "string"}}}
                }],
                "stream": true
            })
        );
    }

    #[test]
    fn empty_system_and_no_tools_are_omitted_and_settings_are_sent() {
        let messages = vec![user("hi")];
        let request = Request {
            model: "m",
            system: "",
            messages: &messages,
            tools: &[],
        };
        let settings = HttpSettings {
            max_tokens: Some(100),
            temperature: Some(0.5),
            ..settings()
        };
        assert_eq!(
            body(&request, &settings),
            json!({
                "model": "m",
                "max_tokens": 100,
                "messages": [{"role": "user", "content": [{"type": "text", "text": "hi"}]}],
                "temperature": 0.5,
                "stream": true
            })
        );
    }

    #[test]
    fn signed_thinking_is_sent_back_unsigned_thinking_and_empty_text_are_dropped() {
        let messages = vec![
            user("q"),
            assistant(vec![
                AssistantContent::Thinking {
                    thinking: "let me see".to_string(),
                    signature: Some("sig==".to_string()),
                    redacted: false,
                },
                AssistantContent::Thinking {
                    thinking: "from elsewhere".to_string(),
                    signature: None,
                    redacted: false,
                },
                AssistantContent::Text {
                    text: String::new(),
                },
                call("toolu_1", "list_dir", json!({})),
            ]),
            result("toolu_1", "a\nb\n", false),
            user("and now?"),
        ];
        let request = Request {
            model: "m",
            system: "",
            messages: &messages,
            tools: &[],
        };
        let value = body(&request, &settings());
        assert_eq!(
            value["messages"],
            json!([
                {"role": "user", "content": [{"type": "text", "text": "q"}]},
                {"role": "assistant", "content": [
                    {"type": "thinking", "thinking": "let me see", "signature": "sig=="},
                    {"type": "tool_use", "id": "toolu_1", "name": "list_dir", "input": {}}
                ]},
                {"role": "user", "content": [
                    {"type": "tool_result", "tool_use_id": "toolu_1", "content": "a\nb\n", "is_error": false}
                ]},
                {"role": "user", "content": [{"type": "text", "text": "and now?"}]}
            ])
        );
    }

    #[test]
    fn a_redacted_thinking_block_goes_back_with_its_data_unchanged() {
        let data = "EmwKAhgBEgy3va3pzix/LafPsn4aDFIT2Xlxh0L5L8rLVyIwxtE3rAFBa8cr3qpP";
        let messages = vec![
            user("q"),
            assistant(vec![
                AssistantContent::Thinking {
                    thinking: "[Reasoning redacted]".to_string(),
                    signature: Some(data.to_string()),
                    redacted: true,
                },
                call("toolu_1", "list_dir", json!({})),
            ]),
            result("toolu_1", "a\n", false),
        ];
        let request = Request {
            model: "m",
            system: "",
            messages: &messages,
            tools: &[],
        };
        assert_eq!(
            body(&request, &settings())["messages"][1]["content"],
            json!([
                {"type": "redacted_thinking", "data": data},
                {"type": "tool_use", "id": "toolu_1", "name": "list_dir", "input": {}}
            ])
        );
    }

    #[test]
    fn unparsable_arguments_are_sent_as_an_empty_object() {
        let messages = vec![
            user("q"),
            assistant(vec![call(
                "toolu_1",
                "read_file",
                json!("{\"path\": \"sam"),
            )]),
            result("toolu_1", "invalid arguments", true),
        ];
        let request = Request {
            model: "m",
            system: "",
            messages: &messages,
            tools: &[],
        };
        let value = body(&request, &settings());
        assert_eq!(value["messages"][1]["content"][0]["input"], json!({}));
    }

    #[test]
    fn an_assistant_message_with_nothing_to_send_is_skipped() {
        let messages = vec![
            user("q"),
            assistant(vec![AssistantContent::Text {
                text: String::new(),
            }]),
            user("again"),
        ];
        let request = Request {
            model: "m",
            system: "",
            messages: &messages,
            tools: &[],
        };
        let value = body(&request, &settings());
        assert_eq!(value["messages"].as_array().map(Vec::len), Some(2));
    }

    #[test]
    fn url_takes_base_with_or_without_trailing_slash() {
        assert_eq!(
            messages_url("https://api.anthropic.com/"),
            "https://api.anthropic.com/v1/messages"
        );
        assert_eq!(
            messages_url("http://127.0.0.1:9"),
            "http://127.0.0.1:9/v1/messages"
        );
    }

    /// Feeds `(event name, data)` pairs and collects everything produced,
    /// plus the end-of-stream verdict when the decoder was not finished.
    fn decode(events: &[(&str, &str)]) -> Vec<StreamEvent> {
        let mut decoder = Decoder::default();
        let mut out = Vec::new();
        for (name, data) in events {
            if decoder.feed(name, data, &mut out) == Flow::Finished {
                return out;
            }
        }
        out.push(decoder.end_of_stream());
        out
    }

    const MESSAGE_START: (&str, &str) = (
        "message_start",
        r#"{"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","content":[],"model":"claude-test","stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":25,"cache_creation_input_tokens":3,"cache_read_input_tokens":7,"output_tokens":1}}}"#,
    );
    const MESSAGE_STOP: (&str, &str) = ("message_stop", r#"{"type":"message_stop"}"#);

    fn usage(input: u64, output: u64, cache_read: u64, cache_write: u64) -> StreamEvent {
        StreamEvent::Usage(
            Usage {
                input,
                output,
                cache_read,
                cache_write,
                total_tokens: 0,
            }
            .with_total(),
        )
    }

    #[test]
    fn text_reply_with_ping_and_usage() {
        let events = decode(&[
            MESSAGE_START,
            (
                "content_block_start",
                r#"{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}"#,
            ),
            ("ping", r#"{"type": "ping"}"#),
            (
                "content_block_delta",
                r#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hello"}}"#,
            ),
            (
                "content_block_delta",
                r#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":" world"}}"#,
            ),
            (
                "content_block_stop",
                r#"{"type":"content_block_stop","index":0}"#,
            ),
            (
                "message_delta",
                r#"{"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"output_tokens":15}}"#,
            ),
            MESSAGE_STOP,
        ]);
        assert_eq!(
            events,
            vec![
                usage(25, 1, 7, 3),
                StreamEvent::Text("Hello".to_string()),
                StreamEvent::Text(" world".to_string()),
                usage(25, 15, 7, 3),
                StreamEvent::Done(StopReason::Stop),
            ]
        );
    }

    #[test]
    fn interleaved_text_and_tool_use_with_fragmented_arguments() {
        let events = decode(&[
            MESSAGE_START,
            (
                "content_block_start",
                r#"{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}"#,
            ),
            (
                "content_block_delta",
                r#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Let me look."}}"#,
            ),
            (
                "content_block_stop",
                r#"{"type":"content_block_stop","index":0}"#,
            ),
            (
                "content_block_start",
                r#"{"type":"content_block_start","index":1,"content_block":{"type":"tool_use","id":"toolu_a","name":"read_file","input":{}}}"#,
            ),
            (
                "content_block_delta",
                r#"{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":""}}"#,
            ),
            (
                "content_block_delta",
                r#"{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"{\"pa"}}"#,
            ),
            (
                "content_block_delta",
                r#"{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"th\": \"sam"}}"#,
            ),
            (
                "content_block_delta",
                r#"{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"ple.ts\"}"}}"#,
            ),
            (
                "content_block_stop",
                r#"{"type":"content_block_stop","index":1}"#,
            ),
            (
                "content_block_start",
                r#"{"type":"content_block_start","index":2,"content_block":{"type":"text","text":""}}"#,
            ),
            (
                "content_block_delta",
                r#"{"type":"content_block_delta","index":2,"delta":{"type":"text_delta","text":"And the dir."}}"#,
            ),
            (
                "content_block_stop",
                r#"{"type":"content_block_stop","index":2}"#,
            ),
            (
                "content_block_start",
                r#"{"type":"content_block_start","index":3,"content_block":{"type":"tool_use","id":"toolu_b","name":"list_dir","input":{}}}"#,
            ),
            (
                "content_block_stop",
                r#"{"type":"content_block_stop","index":3}"#,
            ),
            (
                "message_delta",
                r#"{"type":"message_delta","delta":{"stop_reason":"tool_use","stop_sequence":null},"usage":{"output_tokens":40}}"#,
            ),
            MESSAGE_STOP,
        ]);
        assert_eq!(
            events,
            vec![
                usage(25, 1, 7, 3),
                StreamEvent::Text("Let me look.".to_string()),
                StreamEvent::ToolCallStart {
                    key: 1,
                    id: "toolu_a".to_string(),
                    name: "read_file".to_string()
                },
                StreamEvent::ToolCallArgs {
                    key: 1,
                    fragment: "{\"pa".to_string()
                },
                StreamEvent::ToolCallArgs {
                    key: 1,
                    fragment: "th\": \"sam".to_string()
                },
                StreamEvent::ToolCallArgs {
                    key: 1,
                    fragment: "ple.ts\"}".to_string()
                },
                StreamEvent::Text("And the dir.".to_string()),
                StreamEvent::ToolCallStart {
                    key: 3,
                    id: "toolu_b".to_string(),
                    name: "list_dir".to_string()
                },
                StreamEvent::ToolCallArgs {
                    key: 3,
                    fragment: "{}".to_string()
                },
                usage(25, 40, 7, 3),
                StreamEvent::Done(StopReason::ToolUse),
            ]
        );
    }

    #[test]
    fn thinking_and_signature_are_kept() {
        let events = decode(&[
            MESSAGE_START,
            (
                "content_block_start",
                r#"{"type":"content_block_start","index":0,"content_block":{"type":"thinking","thinking":""}}"#,
            ),
            (
                "content_block_delta",
                r#"{"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"Two plus two"}}"#,
            ),
            (
                "content_block_delta",
                r#"{"type":"content_block_delta","index":0,"delta":{"type":"signature_delta","signature":"EqQBCgIYAhIM"}}"#,
            ),
            (
                "content_block_stop",
                r#"{"type":"content_block_stop","index":0}"#,
            ),
            (
                "content_block_start",
                r#"{"type":"content_block_start","index":1,"content_block":{"type":"redacted_thinking","data":"xyz"}}"#,
            ),
            (
                "content_block_stop",
                r#"{"type":"content_block_stop","index":1}"#,
            ),
            (
                "content_block_start",
                r#"{"type":"content_block_start","index":2,"content_block":{"type":"text","text":""}}"#,
            ),
            (
                "content_block_delta",
                r#"{"type":"content_block_delta","index":2,"delta":{"type":"text_delta","text":"4"}}"#,
            ),
            (
                "content_block_stop",
                r#"{"type":"content_block_stop","index":2}"#,
            ),
            (
                "message_delta",
                r#"{"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":9}}"#,
            ),
            MESSAGE_STOP,
        ]);
        assert_eq!(
            events,
            vec![
                usage(25, 1, 7, 3),
                StreamEvent::Thinking("Two plus two".to_string()),
                StreamEvent::ThinkingSignature("EqQBCgIYAhIM".to_string()),
                StreamEvent::RedactedThinking("xyz".to_string()),
                StreamEvent::Text("4".to_string()),
                usage(25, 9, 7, 3),
                StreamEvent::Done(StopReason::Stop),
            ]
        );
    }

    #[test]
    fn mid_stream_error_event_ends_with_its_message() {
        let events = decode(&[
            MESSAGE_START,
            (
                "content_block_start",
                r#"{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}"#,
            ),
            (
                "content_block_delta",
                r#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hel"}}"#,
            ),
            (
                "error",
                r#"{"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}"#,
            ),
            MESSAGE_STOP,
        ]);
        assert_eq!(
            events,
            vec![
                usage(25, 1, 7, 3),
                StreamEvent::Text("Hel".to_string()),
                StreamEvent::Error(
                    "the provider reported an error mid-stream: Overloaded (overloaded_error)"
                        .to_string()
                ),
            ]
        );
    }

    #[test]
    fn stop_reasons_map_to_spec_terms() {
        let run = |reason: &str| {
            let delta = format!(
                r#"{{"type":"message_delta","delta":{{"stop_reason":"{reason}"}},"usage":{{"output_tokens":2}}}}"#
            );
            decode(&[("message_delta", &delta), MESSAGE_STOP])
                .pop()
                .unwrap()
        };
        assert_eq!(run("end_turn"), StreamEvent::Done(StopReason::Stop));
        assert_eq!(run("stop_sequence"), StreamEvent::Done(StopReason::Stop));
        assert_eq!(run("tool_use"), StreamEvent::Done(StopReason::ToolUse));
        assert_eq!(run("max_tokens"), StreamEvent::Done(StopReason::Length));
        assert_eq!(
            run("refusal"),
            StreamEvent::Error("the model refused to answer (stop_reason: refusal)".to_string())
        );
        assert_eq!(run("something_new"), StreamEvent::Done(StopReason::Stop));
    }

    #[test]
    fn a_stream_without_message_stop_is_an_error() {
        let events = decode(&[
            MESSAGE_START,
            (
                "message_delta",
                r#"{"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":2}}"#,
            ),
        ]);
        assert_eq!(
            events.last(),
            Some(&StreamEvent::Error(
                "the stream was cut off (no message_stop); the reply is incomplete".to_string()
            ))
        );
    }

    #[test]
    fn message_stop_without_a_stop_reason_is_an_incomplete_reply() {
        let text = (
            "content_block_delta",
            r#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Par"}}"#,
        );
        let block = (
            "content_block_start",
            r#"{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}"#,
        );
        let null_reason = (
            "message_delta",
            r#"{"type":"message_delta","delta":{"stop_reason":null},"usage":{"output_tokens":2}}"#,
        );
        for events in [
            decode(&[MESSAGE_START, block, text, MESSAGE_STOP]),
            decode(&[MESSAGE_START, MESSAGE_STOP]),
            decode(&[MESSAGE_START, block, text, null_reason, MESSAGE_STOP]),
        ] {
            assert_eq!(
                events.last(),
                Some(&StreamEvent::Error(
                    crate::provider::NO_STOP_REASON.to_string()
                )),
                "{events:?}"
            );
            assert!(!events.iter().any(|e| matches!(e, StreamEvent::Done(_))));
        }
    }

    #[test]
    fn unknown_events_blocks_and_deltas_are_skipped_invalid_json_is_an_error() {
        let events = decode(&[
            ("some_future_event", "not even json"),
            (
                "content_block_start",
                r#"{"type":"content_block_start","index":0,"content_block":{"type":"server_tool_use","id":"x","name":"web_search","input":{}}}"#,
            ),
            (
                "content_block_delta",
                r#"{"type":"content_block_delta","index":0,"delta":{"type":"citations_delta","citation":{}}}"#,
            ),
            (
                "content_block_delta",
                r#"{"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":"{}"}}"#,
            ),
            ("", r#"{"type":"brand_new"}"#),
            (
                "content_block_delta",
                r#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"ok"}}"#,
            ),
            (
                "content_block_delta",
                "{\"type\":\"content_block_delta\",\"ind",
            ),
        ]);
        assert_eq!(events.len(), 2);
        assert_eq!(events[0], StreamEvent::Text("ok".to_string()));
        assert!(matches!(
            &events[1],
            StreamEvent::Error(message) if message.contains("invalid JSON in content_block_delta")
        ));
    }

    #[test]
    fn tool_input_sent_whole_in_the_start_event_is_used() {
        let events = decode(&[
            (
                "content_block_start",
                r#"{"type":"content_block_start","index":0,"content_block":{"type":"tool_use","id":"t","name":"read_file","input":{"path":"a"}}}"#,
            ),
            (
                "message_delta",
                r#"{"type":"message_delta","delta":{"stop_reason":"tool_use"}}"#,
            ),
            MESSAGE_STOP,
        ]);
        assert_eq!(
            events,
            vec![
                StreamEvent::ToolCallStart {
                    key: 0,
                    id: "t".to_string(),
                    name: "read_file".to_string()
                },
                StreamEvent::ToolCallArgs {
                    key: 0,
                    fragment: r#"{"path":"a"}"#.to_string()
                },
                StreamEvent::Done(StopReason::ToolUse),
            ]
        );
    }

    #[test]
    fn garbage_never_panics() {
        let names = [
            "",
            "message_start",
            "content_block_delta",
            "error",
            "message_delta",
        ];
        let datas = [
            "",
            "null",
            "[]",
            "{}",
            r#"{"type":"content_block_delta"}"#,
            r#"{"type":"content_block_delta","index":-1,"delta":{"type":"text_delta","text":"x"}}"#,
            r#"{"type":"message_delta","delta":null,"usage":{"output_tokens":"many"}}"#,
            r#"{"type":"error","error":{}}"#,
            "\u{0}\u{fffd}",
        ];
        for name in names {
            for data in datas {
                let mut decoder = Decoder::default();
                let mut out = Vec::new();
                decoder.feed(name, data, &mut out);
            }
        }
    }

    // ---- The whole provider against a loopback server -------------------

    use wiremock::matchers::{header, method, path};
    use wiremock::{Mock, MockServer, ResponseTemplate};

    const KEY: &str = "sk-ant-test-SECRET-0123456789";

    /// A text reply, byte for byte as the API documents it.
    const TEXT_REPLY: &str = "event: message_start\n\
data: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\",\"type\":\"message\",\"role\":\"assistant\",\"content\":[],\"model\":\"claude-test\",\"stop_reason\":null,\"stop_sequence\":null,\"usage\":{\"input_tokens\":25,\"output_tokens\":1}}}\n\n\
event: content_block_start\n\
data: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n\
event: ping\n\
data: {\"type\": \"ping\"}\n\n\
event: content_block_delta\n\
data: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"Hello\"}}\n\n\
event: content_block_stop\n\
data: {\"type\":\"content_block_stop\",\"index\":0}\n\n\
event: message_delta\n\
data: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\",\"stop_sequence\":null},\"usage\":{\"output_tokens\":15}}\n\n\
event: message_stop\n\
data: {\"type\":\"message_stop\"}\n\n";

    fn sse(body: &str) -> ResponseTemplate {
        ResponseTemplate::new(200).set_body_raw(body.as_bytes().to_vec(), "text/event-stream")
    }

    fn error_body(kind: &str, message: &str) -> String {
        json!({"type": "error", "error": {"type": kind, "message": message}}).to_string()
    }

    fn provider(server: &MockServer, retries: u32) -> AnthropicProvider {
        AnthropicProvider::new(HttpSettings {
            base_url: format!("{}/", server.uri()),
            api_key: Some(super::super::ApiKey::new(KEY)),
            retries,
            ..settings()
        })
    }

    async fn run(provider: &AnthropicProvider, messages: &[Message]) -> Vec<StreamEvent> {
        let tools = vec![ToolSpec {
            name: "read_file".to_string(),
            description: "Read a UTF-8 file under the root".to_string(),
            parameters: json!({"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}),
        }];
        let request = Request {
            model: "claude-test",
            system: "You are terse.",
            messages,
            tools: &tools,
        };
        provider.stream(request).collect().await
    }

    fn assert_key_absent(events: &[StreamEvent]) {
        let text = format!("{events:?}");
        assert!(!text.contains(KEY), "key leaked: {text}");
    }

    async fn bodies(server: &MockServer) -> Vec<Value> {
        server
            .received_requests()
            .await
            .unwrap_or_default()
            .iter()
            .map(|request| serde_json::from_slice(&request.body).unwrap())
            .collect()
    }

    #[tokio::test]
    async fn seed_round_trip_sends_tool_use_and_tool_result_with_headers() {
        let server = MockServer::start().await;
        Mock::given(method("POST"))
            .and(path("/v1/messages"))
            .and(header("x-api-key", KEY))
            .and(header("anthropic-version", "2023-06-01"))
            .and(header("content-type", "application/json"))
            .respond_with(sse(TEXT_REPLY))
            .expect(1)
            .mount(&server)
            .await;
        let messages = vec![
            user("What does sample.ts export?"),
            assistant(vec![call(
                "toolu_01A",
                "read_file",
                json!({"path": "sample.ts"}),
            )]),
            result("toolu_01A", "export const answer = 42;\n", false),
        ];
        let events = run(&provider(&server, 0), &messages).await;
        assert_eq!(
            events,
            vec![
                usage(25, 1, 0, 0),
                StreamEvent::Text("Hello".to_string()),
                usage(25, 15, 0, 0),
                StreamEvent::Done(StopReason::Stop),
            ]
        );
        let sent = bodies(&server).await;
        assert_eq!(
            sent[0],
            json!({
                "model": "claude-test",
                "max_tokens": 8192,
                "system": "You are terse.",
                "messages": [
                    {"role": "user", "content": [{"type": "text", "text": "What does sample.ts export?"}]},
                    {"role": "assistant", "content": [
                        {"type": "tool_use", "id": "toolu_01A", "name": "read_file", "input": {"path": "sample.ts"}}
                    ]},
                    {"role": "user", "content": [
                        {"type": "tool_result", "tool_use_id": "toolu_01A", "content": "export const answer = 42;\n", "is_error": false}
                    ]}
                ],
                "tools": [{
                    "name": "read_file",
                    "description": "Read a UTF-8 file under the root",
                    "input_schema": {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}
                }],
                "stream": true
            })
        );
    }

    #[tokio::test]
    async fn tool_use_reply_in_many_fragments_over_http() {
        let body = "event: message_start\n\
data: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_2\",\"type\":\"message\",\"role\":\"assistant\",\"content\":[],\"model\":\"claude-test\",\"stop_reason\":null,\"stop_sequence\":null,\"usage\":{\"input_tokens\":40,\"cache_read_input_tokens\":100,\"cache_creation_input_tokens\":0,\"output_tokens\":1}}}\n\n\
event: content_block_start\n\
data: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n\
event: content_block_delta\n\
data: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"Reading.\"}}\n\n\
event: content_block_stop\n\
data: {\"type\":\"content_block_stop\",\"index\":0}\n\n\
event: content_block_start\n\
data: {\"type\":\"content_block_start\",\"index\":1,\"content_block\":{\"type\":\"tool_use\",\"id\":\"toolu_01B\",\"name\":\"read_file\",\"input\":{}}}\n\n\
event: content_block_delta\n\
data: {\"type\":\"content_block_delta\",\"index\":1,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"\"}}\n\n\
event: content_block_delta\n\
data: {\"type\":\"content_block_delta\",\"index\":1,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"{\\\"path\\\"\"}}\n\n\
event: content_block_delta\n\
data: {\"type\":\"content_block_delta\",\"index\":1,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\": \\\"sample\"}}\n\n\
event: content_block_delta\n\
data: {\"type\":\"content_block_delta\",\"index\":1,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\".ts\\\"}\"}}\n\n\
event: content_block_stop\n\
data: {\"type\":\"content_block_stop\",\"index\":1}\n\n\
event: message_delta\n\
data: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"tool_use\",\"stop_sequence\":null},\"usage\":{\"output_tokens\":30}}\n\n\
event: message_stop\n\
data: {\"type\":\"message_stop\"}\n\n";
        let server = MockServer::start().await;
        Mock::given(method("POST"))
            .respond_with(sse(body))
            .mount(&server)
            .await;
        let events = run(&provider(&server, 0), &[user("q")]).await;
        let fragments: String = events
            .iter()
            .filter_map(|event| match event {
                StreamEvent::ToolCallArgs { key: 1, fragment } => Some(fragment.as_str()),
                _ => None,
            })
            .collect();
        assert_eq!(fragments, r#"{"path": "sample.ts"}"#);
        assert_eq!(events[0], usage(40, 1, 100, 0));
        assert_eq!(events[1], StreamEvent::Text("Reading.".to_string()));
        assert_eq!(
            events[2],
            StreamEvent::ToolCallStart {
                key: 1,
                id: "toolu_01B".to_string(),
                name: "read_file".to_string()
            }
        );
        assert_eq!(events.last(), Some(&StreamEvent::Done(StopReason::ToolUse)));
    }

    #[tokio::test]
    async fn thinking_is_received_with_its_signature_and_sent_back() {
        let body = "event: message_start\n\
data: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_3\",\"type\":\"message\",\"role\":\"assistant\",\"content\":[],\"model\":\"claude-test\",\"stop_reason\":null,\"stop_sequence\":null,\"usage\":{\"input_tokens\":5,\"output_tokens\":1}}}\n\n\
event: content_block_start\n\
data: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"thinking\",\"thinking\":\"\"}}\n\n\
event: content_block_delta\n\
data: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"thinking_delta\",\"thinking\":\"Check the file.\"}}\n\n\
event: content_block_delta\n\
data: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"signature_delta\",\"signature\":\"EqQBCgIYAhIM1gbcDa9GJwZA\"}}\n\n\
event: content_block_stop\n\
data: {\"type\":\"content_block_stop\",\"index\":0}\n\n\
event: message_delta\n\
data: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\",\"stop_sequence\":null},\"usage\":{\"output_tokens\":7}}\n\n\
event: message_stop\n\
data: {\"type\":\"message_stop\"}\n\n";
        let server = MockServer::start().await;
        Mock::given(method("POST"))
            .respond_with(sse(body))
            .mount(&server)
            .await;
        let messages = vec![
            user("q"),
            assistant(vec![
                AssistantContent::Thinking {
                    thinking: "Earlier thought.".to_string(),
                    signature: Some("c2lnMQ==".to_string()),
                    redacted: false,
                },
                call("toolu_1", "read_file", json!({"path": "a"})),
            ]),
            result("toolu_1", "A", false),
        ];
        let events = run(&provider(&server, 0), &messages).await;
        assert_eq!(
            events[1..3],
            [
                StreamEvent::Thinking("Check the file.".to_string()),
                StreamEvent::ThinkingSignature("EqQBCgIYAhIM1gbcDa9GJwZA".to_string()),
            ]
        );
        let sent = bodies(&server).await;
        assert_eq!(
            sent[0]["messages"][1]["content"][0],
            json!({"type": "thinking", "thinking": "Earlier thought.", "signature": "c2lnMQ=="})
        );
    }

    #[tokio::test]
    async fn mid_stream_overloaded_error_ends_the_reply_with_its_message() {
        let body = "event: message_start\n\
data: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_4\",\"type\":\"message\",\"role\":\"assistant\",\"content\":[],\"model\":\"claude-test\",\"stop_reason\":null,\"stop_sequence\":null,\"usage\":{\"input_tokens\":5,\"output_tokens\":1}}}\n\n\
event: content_block_start\n\
data: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n\
event: content_block_delta\n\
data: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"Par\"}}\n\n\
event: error\n\
data: {\"type\": \"error\", \"error\": {\"type\": \"overloaded_error\", \"message\": \"Overloaded\"}}\n\n";
        let server = MockServer::start().await;
        Mock::given(method("POST"))
            .respond_with(sse(body))
            .mount(&server)
            .await;
        let events = run(&provider(&server, 2), &[user("q")]).await;
        assert_eq!(
            events.last(),
            Some(&StreamEvent::Error(
                "the provider reported an error mid-stream: Overloaded (overloaded_error)"
                    .to_string()
            ))
        );
        // The body was used: never retried.
        assert_eq!(bodies(&server).await.len(), 1);
        assert!(
            !events
                .iter()
                .any(|e| matches!(e, StreamEvent::Retry { .. }))
        );
    }

    #[tokio::test]
    async fn status_529_is_retried_once_then_succeeds() {
        let server = MockServer::start().await;
        Mock::given(method("POST"))
            .respond_with(
                ResponseTemplate::new(529)
                    .insert_header("retry-after", "0")
                    .set_body_raw(
                        error_body("overloaded_error", "Overloaded"),
                        "application/json",
                    ),
            )
            .up_to_n_times(1)
            .mount(&server)
            .await;
        Mock::given(method("POST"))
            .respond_with(sse(TEXT_REPLY))
            .mount(&server)
            .await;
        let events = run(&provider(&server, 2), &[user("q")]).await;
        assert_eq!(bodies(&server).await.len(), 2);
        let retries: Vec<_> = events
            .iter()
            .filter_map(|event| match event {
                StreamEvent::Retry {
                    attempt, reason, ..
                } => Some((*attempt, reason.clone())),
                _ => None,
            })
            .collect();
        assert_eq!(retries.len(), 1, "{events:?}");
        assert_eq!(retries[0].0, 1);
        assert!(retries[0].1.contains("529"), "{}", retries[0].1);
        assert!(retries[0].1.contains("Overloaded"), "{}", retries[0].1);
        assert_eq!(
            events
                .first()
                .map(|e| matches!(e, StreamEvent::Retry { .. })),
            Some(true)
        );
        assert_eq!(events.last(), Some(&StreamEvent::Done(StopReason::Stop)));
    }

    #[tokio::test]
    async fn status_401_is_not_retried_and_the_key_stays_out() {
        let server = MockServer::start().await;
        Mock::given(method("POST"))
            .respond_with(ResponseTemplate::new(401).set_body_raw(
                error_body("authentication_error", &format!("invalid x-api-key {KEY}")),
                "application/json",
            ))
            .mount(&server)
            .await;
        let events = run(&provider(&server, 3), &[user("q")]).await;
        assert_eq!(bodies(&server).await.len(), 1);
        assert_eq!(events.len(), 1, "{events:?}");
        match &events[0] {
            StreamEvent::Error(message) => {
                assert!(message.contains("401"), "{message}");
                assert!(message.contains("invalid x-api-key"), "{message}");
            }
            other => panic!("expected an error, got {other:?}"),
        }
        assert_key_absent(&events);
    }

    #[tokio::test]
    async fn a_stream_cut_before_message_stop_is_an_error() {
        let cut = TEXT_REPLY
            .split("event: message_stop")
            .next()
            .unwrap_or_default();
        let server = MockServer::start().await;
        Mock::given(method("POST"))
            .respond_with(sse(cut))
            .mount(&server)
            .await;
        let events = run(&provider(&server, 2), &[user("q")]).await;
        assert_eq!(events[1], StreamEvent::Text("Hello".to_string()));
        assert!(matches!(
            events.last(),
            Some(StreamEvent::Error(message)) if message.contains("(no message_stop)")
        ));
        assert_eq!(bodies(&server).await.len(), 1);
    }

    #[tokio::test]
    async fn refusal_and_max_tokens_over_http() {
        for (reason, want) in [
            (
                "refusal",
                StreamEvent::Error(
                    "the model refused to answer (stop_reason: refusal)".to_string(),
                ),
            ),
            ("max_tokens", StreamEvent::Done(StopReason::Length)),
        ] {
            let body = TEXT_REPLY.replace("end_turn", reason);
            let server = MockServer::start().await;
            Mock::given(method("POST"))
                .respond_with(sse(&body))
                .mount(&server)
                .await;
            let events = run(&provider(&server, 0), &[user("q")]).await;
            assert_eq!(events.last(), Some(&want), "{reason}");
        }
    }

    #[tokio::test]
    async fn the_key_never_reaches_an_event_even_when_echoed() {
        let body = format!(
            "event: error\ndata: {}\n\n",
            error_body("api_error", &format!("bad key {KEY}"))
        );
        let server = MockServer::start().await;
        Mock::given(method("POST"))
            .respond_with(
                ResponseTemplate::new(500)
                    .insert_header("retry-after", "0")
                    .set_body_raw(
                        error_body("api_error", &format!("echo {KEY}")),
                        "application/json",
                    ),
            )
            .up_to_n_times(1)
            .mount(&server)
            .await;
        Mock::given(method("POST"))
            .respond_with(sse(&body))
            .mount(&server)
            .await;
        let events = run(&provider(&server, 1), &[user("q")]).await;
        assert_eq!(events.len(), 2, "{events:?}");
        assert!(matches!(&events[0], StreamEvent::Retry { .. }));
        assert!(matches!(&events[1], StreamEvent::Error(m) if m.contains("bad key ***")));
        assert_key_absent(&events);
    }

    #[tokio::test]
    async fn retries_run_out_with_the_last_failure() {
        let server = MockServer::start().await;
        Mock::given(method("POST"))
            .respond_with(
                ResponseTemplate::new(429)
                    .insert_header("retry-after", "0")
                    .set_body_raw(
                        error_body("rate_limit_error", "slow down"),
                        "application/json",
                    ),
            )
            .mount(&server)
            .await;
        let events = run(&provider(&server, 2), &[user("q")]).await;
        assert_eq!(bodies(&server).await.len(), 3);
        assert_eq!(events.len(), 3, "{events:?}");
        assert!(matches!(
            events.last(),
            Some(StreamEvent::Error(m)) if m.contains("429") && m.contains("slow down")
        ));
    }

    /// A one-connection server that sends a 200 and `body_start`, then
    /// either closes the connection (`then_close`) or stalls and reports
    /// whether the client closed it.
    async fn raw_server(
        body_start: &'static str,
        then_close: bool,
    ) -> (String, tokio::sync::oneshot::Receiver<bool>) {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base = format!("http://{}", listener.local_addr().unwrap());
        let (closed_tx, closed_rx) = tokio::sync::oneshot::channel();
        tokio::spawn(async move {
            let (mut socket, _) = listener.accept().await.unwrap();
            let mut request = Vec::new();
            let mut buffer = [0u8; 4096];
            // Read headers and the (small) body: up to a pause in the input.
            while let Ok(Ok(n)) =
                tokio::time::timeout(Duration::from_millis(100), socket.read(&mut buffer)).await
            {
                if n == 0 {
                    break;
                }
                request.extend_from_slice(&buffer[..n]);
            }
            let head = "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n";
            let chunk = format!("{:x}\r\n{body_start}\r\n", body_start.len());
            socket.write_all(head.as_bytes()).await.unwrap();
            socket.write_all(chunk.as_bytes()).await.unwrap();
            socket.flush().await.unwrap();
            if then_close {
                drop(socket);
                return;
            }
            // Stall; the client dropping its stream must close the socket.
            let closed = matches!(
                tokio::time::timeout(Duration::from_secs(2), socket.read(&mut buffer)).await,
                Ok(Ok(0) | Err(_))
            );
            let _ = closed_tx.send(closed);
        });
        (base, closed_rx)
    }

    const FIRST_DELTA: &str = "event: message_start\n\
data: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_5\",\"type\":\"message\",\"role\":\"assistant\",\"content\":[],\"model\":\"claude-test\",\"stop_reason\":null,\"stop_sequence\":null,\"usage\":{\"input_tokens\":5,\"output_tokens\":1}}}\n\n\
event: content_block_start\n\
data: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n\
event: content_block_delta\n\
data: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"Hi\"}}\n\n";

    fn raw_provider(base: String) -> AnthropicProvider {
        AnthropicProvider::new(HttpSettings {
            base_url: base,
            api_key: Some(super::super::ApiKey::new(KEY)),
            retries: 2,
            ..settings()
        })
    }

    #[tokio::test]
    async fn events_arrive_as_they_come_and_dropping_the_stream_closes_the_connection() {
        let (base, closed) = raw_server(FIRST_DELTA, false).await;
        let provider = raw_provider(base);
        let messages = [user("q")];
        let mut stream = provider.stream(Request {
            model: "m",
            system: "",
            messages: &messages,
            tools: &[],
        });
        // The server stalls after the first delta; it must arrive anyway.
        let mut seen = Vec::new();
        while seen.len() < 2 {
            match tokio::time::timeout(Duration::from_secs(2), stream.next()).await {
                Ok(Some(event)) => seen.push(event),
                other => panic!("stream stalled or ended: {other:?} after {seen:?}"),
            }
        }
        assert_eq!(seen[1], StreamEvent::Text("Hi".to_string()));
        drop(stream);
        assert_eq!(closed.await.ok(), Some(true), "connection left open");
    }

    #[tokio::test]
    async fn a_connection_cut_mid_body_is_an_error_and_not_retried() {
        let (base, _closed) = raw_server(FIRST_DELTA, true).await;
        let events = run(&raw_provider(base), &[user("q")]).await;
        assert_eq!(events[1], StreamEvent::Text("Hi".to_string()));
        assert!(
            !events
                .iter()
                .any(|e| matches!(e, StreamEvent::Retry { .. }))
        );
        assert!(
            matches!(events.last(), Some(StreamEvent::Error(m)) if m.contains("connection")),
            "{events:?}"
        );
        assert_eq!(events.len(), 3, "{events:?}");
    }
}

//! The OpenAI Chat Completions provider (SPEC 2.4), which also serves every
//! compatible server (Ollama, llama.cpp, vLLM, LM Studio, OpenRouter…).
//! Three separate pieces: `request_body` maps a request onto the wire,
//! `Decoder` turns one SSE `data` payload at a time into
//! [`StreamEvent`]s, and [`OpenAiProvider::stream`] hands both to the shared
//! driver in `driver` (send with retries, decode, yield as it arrives).
//!
//! It must never retry once a response body started to be used, never end
//! a stream without exactly one `Done` or `Error`, never panic on what a
//! server sends, and never let the key into an event.

use std::borrow::Cow;

use futures::stream::BoxStream;
use reqwest::header::{ACCEPT, CONTENT_TYPE};
use serde::de::IgnoredAny;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::driver::{SseStream, WireDecoder, decode_with, stream_response};
use super::{
    HttpSettings, INCOMPLETE, NO_STOP_REASON, Provider, Request, StreamEvent, ToolSpec, http, sse,
};
use crate::agent::types::{
    AssistantContent, AssistantMessage, Content, Message, StopReason, Usage,
};

/// The API base used when the configuration gives none.
pub const DEFAULT_BASE_URL: &str = "https://api.openai.com/v1";

/// A model behind the Chat Completions API.
pub struct OpenAiProvider {
    settings: HttpSettings,
    /// The HTTP client, or why it could not be set up (reported by the
    /// first request).
    client: Result<reqwest::Client, String>,
}

impl OpenAiProvider {
    /// A provider for `settings.base_url` (or [`DEFAULT_BASE_URL`] when empty).
    pub fn new(settings: HttpSettings) -> Self {
        OpenAiProvider {
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
        let url = endpoint(&self.settings.base_url);
        let mut builder = client
            .post(&url)
            .header(CONTENT_TYPE, "application/json")
            .header(ACCEPT, "text/event-stream")
            .body(body);
        if let Some(key) = self
            .settings
            .api_key
            .as_ref()
            .filter(|key| !key.expose().is_empty())
        {
            builder = builder.bearer_auth(key.expose());
        }
        let request = builder
            .build()
            .map_err(|err| format!("invalid base URL {url}: {}", http::root_cause(&err)))?;
        Ok((client, request))
    }
}

impl Provider for OpenAiProvider {
    fn name(&self) -> &str {
        "openai"
    }

    fn stream(&self, request: Request<'_>) -> BoxStream<'static, StreamEvent> {
        stream_response(
            self.http_request(&request),
            self.settings.clone(),
            decode::<SseStream>,
        )
    }
}

/// The stream of one response body, decoded by this format's `Decoder`;
/// public so the fuzz targets can feed it any event sequence.
pub fn decode<S>(events: S) -> BoxStream<'static, StreamEvent>
where
    S: futures::Stream<Item = Result<sse::SseEvent, sse::SseError>> + Send + 'static,
{
    decode_with::<Decoder, S>(events)
}

impl WireDecoder for Decoder {
    fn decode_event(&mut self, event: &str, data: &str, out: &mut Vec<StreamEvent>) -> bool {
        self.feed(event, data, out) == Flow::End
    }
    fn body_failed(&mut self, error: &sse::SseError, out: &mut Vec<StreamEvent>) {
        self.broken(error, out);
    }
    fn body_ended(&mut self, out: &mut Vec<StreamEvent>) {
        self.finish(out);
    }
}

/// `POST {base}/chat/completions`; a trailing slash on the base is fine.
fn endpoint(base_url: &str) -> String {
    let base = base_url.trim();
    let base = if base.is_empty() {
        DEFAULT_BASE_URL
    } else {
        base
    };
    format!("{}/chat/completions", base.trim_end_matches('/'))
}

// ---------------------------------------------------------------------------
// The request body.

/// A Chat Completions request, borrowing from the transcript.
#[derive(Debug, Serialize)]
pub(crate) struct ChatRequest<'a> {
    model: &'a str,
    messages: Vec<ChatMessage<'a>>,
    /// Omitted when empty: several compatible servers reject `tools: []`.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    tools: Vec<ChatTool<'a>>,
    stream: bool,
    stream_options: StreamOptions,
    /// `--max-tokens`, under the name the API has used since the o-series
    /// (which refuses `max_tokens`); vLLM, LiteLLM, OpenRouter and
    /// llama.cpp's server read it too.
    #[serde(skip_serializing_if = "Option::is_none")]
    max_completion_tokens: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    temperature: Option<f32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    response_format: Option<ResponseFormat<'a>>,
}

/// `response_format` for `--output-schema` (Structured Outputs).
#[derive(Debug, Serialize)]
struct ResponseFormat<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    json_schema: JsonSchemaFormat<'a>,
}

#[derive(Debug, Serialize)]
struct JsonSchemaFormat<'a> {
    name: &'static str,
    schema: &'a Value,
    /// `true` only for schemas the API accepts in strict mode; leash
    /// validates the reply itself either way.
    strict: bool,
}

#[derive(Debug, Serialize)]
struct StreamOptions {
    include_usage: bool,
}

#[derive(Debug, Serialize)]
#[serde(tag = "role", rename_all = "lowercase")]
enum ChatMessage<'a> {
    System {
        content: &'a str,
    },
    User {
        content: String,
    },
    Assistant {
        /// `null` when the message holds only tool calls.
        content: Option<String>,
        #[serde(skip_serializing_if = "Vec::is_empty")]
        tool_calls: Vec<ChatToolCall<'a>>,
    },
    Tool {
        tool_call_id: &'a str,
        content: String,
    },
}

#[derive(Debug, Serialize)]
struct ChatToolCall<'a> {
    id: &'a str,
    #[serde(rename = "type")]
    kind: &'static str,
    function: ChatFunctionCall<'a>,
}

#[derive(Debug, Serialize)]
struct ChatFunctionCall<'a> {
    name: &'a str,
    /// The argument JSON as a string, as the API wants it.
    arguments: Cow<'a, str>,
}

#[derive(Debug, Serialize)]
struct ChatTool<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    function: ChatFunction<'a>,
}

#[derive(Debug, Serialize)]
struct ChatFunction<'a> {
    name: &'a str,
    description: &'a str,
    parameters: &'a Value,
}

/// The body of one request: the system message first (when there is one),
/// the transcript mapped message by message, the tools, streaming with
/// usage on.
pub(crate) fn request_body<'a>(
    request: &Request<'a>,
    settings: &'a HttpSettings,
) -> ChatRequest<'a> {
    let mut messages = Vec::with_capacity(request.messages.len() + 1);
    if !request.system.is_empty() {
        messages.push(ChatMessage::System {
            content: request.system,
        });
    }
    messages.extend(request.messages.iter().map(chat_message));
    ChatRequest {
        model: request.model,
        messages,
        tools: request.tools.iter().map(chat_tool).collect(),
        stream: true,
        stream_options: StreamOptions {
            include_usage: true,
        },
        max_completion_tokens: settings.max_tokens,
        temperature: settings.temperature,
        response_format: settings
            .output_schema
            .as_ref()
            .map(|schema| ResponseFormat {
                kind: "json_schema",
                json_schema: JsonSchemaFormat {
                    name: "leash_output",
                    schema,
                    strict: crate::output_schema::strict_compatible(schema),
                },
            }),
    }
}

/// One transcript message on the wire. Thinking blocks are not sent back:
/// the API has no place for them, and DeepSeek rejects them.
fn chat_message(message: &Message) -> ChatMessage<'_> {
    match message {
        Message::User(user) => ChatMessage::User {
            content: content_text(&user.content),
        },
        Message::Assistant(assistant) => assistant_message(assistant),
        Message::ToolResult(result) => ChatMessage::Tool {
            tool_call_id: &result.tool_call_id,
            content: result.text(),
        },
    }
}

fn assistant_message(message: &AssistantMessage) -> ChatMessage<'_> {
    let text = message.text();
    let tool_calls: Vec<_> = message
        .content
        .iter()
        .filter_map(|block| match block {
            AssistantContent::ToolCall(call) => Some(ChatToolCall {
                id: &call.id,
                kind: "function",
                function: ChatFunctionCall {
                    name: &call.name,
                    arguments: arguments_json(&call.arguments),
                },
            }),
            _ => None,
        })
        .collect();
    // `null` content is only allowed next to tool calls; a message with
    // neither (an empty reply) keeps an empty string.
    let content = if text.is_empty() && !tool_calls.is_empty() {
        None
    } else {
        Some(text)
    };
    ChatMessage::Assistant {
        content,
        tool_calls,
    }
}

/// Arguments as the JSON string the API wants. A string value is raw text
/// the model sent that did not parse; it goes back exactly as it came.
fn arguments_json(arguments: &Value) -> Cow<'_, str> {
    match arguments {
        Value::String(raw) => Cow::Borrowed(raw),
        other => Cow::Owned(other.to_string()),
    }
}

fn content_text(content: &[Content]) -> String {
    let mut text = String::new();
    for Content::Text { text: block } in content {
        text.push_str(block);
    }
    text
}

fn chat_tool(tool: &ToolSpec) -> ChatTool<'_> {
    ChatTool {
        kind: "function",
        function: ChatFunction {
            name: &tool.name,
            description: &tool.description,
            parameters: &tool.parameters,
        },
    }
}

// ---------------------------------------------------------------------------
// The stream decoder.

/// Whether the stream goes on after a payload.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Flow {
    /// More events may come.
    Continue,
    /// The final `Done` or `Error` was produced.
    End,
}

/// One streamed chunk (`chat.completion.chunk`), read leniently: compatible
/// servers leave out or null most fields.
#[derive(Debug, Deserialize)]
struct Chunk {
    #[serde(default)]
    choices: Option<Vec<Choice>>,
    #[serde(default)]
    usage: Option<WireUsage>,
    /// Any non-null `error` ends the stream; its text is read by
    /// [`http::provider_error_message`], which knows the variants.
    #[serde(default)]
    error: Option<IgnoredAny>,
}

#[derive(Debug, Deserialize)]
struct Choice {
    #[serde(default)]
    delta: Option<Delta>,
    #[serde(default)]
    finish_reason: Option<String>,
}

#[derive(Debug, Deserialize)]
struct Delta {
    #[serde(default)]
    content: Option<String>,
    #[serde(default)]
    refusal: Option<String>,
    /// DeepSeek, llama.cpp.
    #[serde(default)]
    reasoning_content: Option<LenientText>,
    /// OpenRouter, Ollama, newer vLLM.
    #[serde(default)]
    reasoning: Option<LenientText>,
    #[serde(default)]
    tool_calls: Option<Vec<ToolCallDelta>>,
}

#[derive(Debug, Deserialize)]
struct ToolCallDelta {
    #[serde(default)]
    index: Option<usize>,
    #[serde(default)]
    id: Option<String>,
    #[serde(default)]
    function: Option<FunctionDelta>,
}

#[derive(Debug, Deserialize)]
struct FunctionDelta {
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    arguments: Option<String>,
}

#[derive(Debug, Deserialize)]
struct WireUsage {
    #[serde(default)]
    prompt_tokens: Option<u64>,
    #[serde(default)]
    completion_tokens: Option<u64>,
    #[serde(default)]
    prompt_tokens_details: Option<PromptTokensDetails>,
}

#[derive(Debug, Deserialize)]
struct PromptTokensDetails {
    #[serde(default)]
    cached_tokens: Option<u64>,
}

/// A field that counts only when it is a string (some servers put objects
/// where others put text).
#[derive(Debug, Deserialize)]
#[serde(untagged)]
enum LenientText {
    Text(String),
    Other(IgnoredAny),
}

impl LenientText {
    fn text(&self) -> Option<&str> {
        match self {
            LenientText::Text(text) if !text.is_empty() => Some(text),
            _ => None,
        }
    }
}

/// A tool call being assembled from its deltas.
#[derive(Debug)]
struct CallState {
    /// The wire `index`, used as the event key.
    index: usize,
    id: Option<String>,
    name: Option<String>,
    /// `ToolCallStart` was emitted.
    started: bool,
    /// Argument fragments that came before the name (emitted after the start).
    early_args: String,
}

/// The decoder state machine: fed one SSE payload at a time, it produces
/// the events of that payload and says when the stream is over.
#[derive(Debug, Default)]
pub(crate) struct Decoder {
    calls: Vec<CallState>,
    /// The last `finish_reason` (mapped); the reply is complete once set.
    finish: Option<StopReason>,
}

impl Decoder {
    /// Decodes one SSE event: `event` is its name, `data` its payload.
    pub(crate) fn feed(&mut self, event: &str, data: &str, out: &mut Vec<StreamEvent>) -> Flow {
        let data = data.trim();
        if event == "error" {
            let message = http::provider_error_message(data).unwrap_or_else(|| http::snippet(data));
            out.push(StreamEvent::Error(format!(
                "the provider reported an error mid-stream: {message}"
            )));
            return Flow::End;
        }
        if data.is_empty() {
            return Flow::Continue;
        }
        if data == "[DONE]" {
            return self.done_marker(out);
        }
        let chunk: Chunk = match serde_json::from_str(data) {
            Ok(chunk) => chunk,
            Err(err) => {
                let what = if err.is_data() {
                    "a chunk of an unexpected shape"
                } else {
                    "a chunk that is not JSON"
                };
                out.push(StreamEvent::Error(format!(
                    "the provider sent {what} ({err}): {}",
                    http::snippet(data)
                )));
                return Flow::End;
            }
        };
        if chunk.error.is_some() {
            let message = http::provider_error_message(data).unwrap_or_else(|| http::snippet(data));
            out.push(StreamEvent::Error(format!(
                "the provider reported an error mid-stream: {message}"
            )));
            return Flow::End;
        }
        for choice in chunk.choices.into_iter().flatten() {
            if let Some(delta) = choice.delta {
                self.delta(delta, out);
            }
            if let Some(reason) = choice.finish_reason.as_deref() {
                match finish_reason(reason) {
                    Some(stop) => self.finish = Some(stop),
                    None => {
                        out.push(StreamEvent::Error(format!(
                            "the provider's content filter stopped the reply (finish_reason: {reason})"
                        )));
                        return Flow::End;
                    }
                }
            }
        }
        if let Some(usage) = chunk.usage.and_then(usage) {
            out.push(StreamEvent::Usage(usage));
        }
        Flow::Continue
    }

    /// `[DONE]`: the reply is complete only when a finish reason came
    /// before it; a server that says "done" without saying how the reply
    /// ended (cut off upstream, a proxy that gave up) sent an incomplete one.
    fn done_marker(&mut self, out: &mut Vec<StreamEvent>) -> Flow {
        if self.finish.is_some() {
            return self.finish(out);
        }
        out.push(StreamEvent::Error(NO_STOP_REASON.to_string()));
        Flow::End
    }

    /// The body ended. Complete when a finish reason came (`[DONE]` may be
    /// missing); otherwise the reply was cut off.
    pub(crate) fn finish(&mut self, out: &mut Vec<StreamEvent>) -> Flow {
        if self.finish.is_some() {
            self.start_unnamed_calls(out);
            out.push(StreamEvent::Done(self.stop_reason()));
        } else {
            out.push(StreamEvent::Error(format!(
                "the stream was cut off (no finish_reason, no [DONE]); {INCOMPLETE}"
            )));
        }
        Flow::End
    }

    /// The body could not be read further. After a finish reason the reply
    /// is whole and only the usage may be missing, so that still counts.
    pub(crate) fn broken(&mut self, err: &sse::SseError, out: &mut Vec<StreamEvent>) -> Flow {
        if self.finish.is_some() {
            return self.finish(out);
        }
        out.push(StreamEvent::Error(format!("{err}; {INCOMPLETE}")));
        Flow::End
    }

    /// `toolUse` whenever the message holds tool calls (some servers say
    /// `stop` then), unless the output limit cut it.
    fn stop_reason(&self) -> StopReason {
        match self.finish {
            Some(StopReason::Length) => StopReason::Length,
            _ if !self.calls.is_empty() => StopReason::ToolUse,
            _ => StopReason::Stop,
        }
    }

    fn delta(&mut self, delta: Delta, out: &mut Vec<StreamEvent>) {
        let reasoning = delta.reasoning_content.as_ref().and_then(LenientText::text);
        if let Some(thinking) =
            reasoning.or_else(|| delta.reasoning.as_ref().and_then(LenientText::text))
        {
            out.push(StreamEvent::Thinking(thinking.to_string()));
        }
        for text in [delta.content, delta.refusal].into_iter().flatten() {
            if !text.is_empty() {
                out.push(StreamEvent::Text(text));
            }
        }
        for call in delta.tool_calls.into_iter().flatten() {
            self.tool_call(call, out);
        }
    }

    /// A tool-call delta: the id and name come first, argument fragments
    /// after; several calls interleave, told apart by `index`.
    fn tool_call(&mut self, delta: ToolCallDelta, out: &mut Vec<StreamEvent>) {
        let id = delta.id.filter(|id| !id.is_empty());
        let index = delta
            .index
            .unwrap_or_else(|| self.guess_index(id.as_deref()));
        let (name, fragment) = match delta.function {
            Some(function) => (
                function.name.filter(|name| !name.is_empty()),
                function.arguments,
            ),
            None => (None, None),
        };
        let position = match self.calls.iter().position(|call| call.index == index) {
            Some(position) => position,
            None => {
                self.calls.push(CallState {
                    index,
                    id: None,
                    name: None,
                    started: false,
                    early_args: String::new(),
                });
                self.calls.len() - 1
            }
        };
        let Some(call) = self.calls.get_mut(position) else {
            return;
        };
        let fragment = fragment.filter(|fragment| !fragment.is_empty());
        if call.started {
            // Servers that repeat the id or name on every delta: ignored.
            if let Some(fragment) = fragment {
                out.push(StreamEvent::ToolCallArgs {
                    key: index,
                    fragment,
                });
            }
            return;
        }
        if id.is_some() {
            call.id = id;
        }
        if name.is_some() {
            call.name = name;
        }
        if let Some(fragment) = fragment {
            call.early_args.push_str(&fragment);
        }
        if call.name.is_some() {
            start_call(call, out);
        }
    }

    /// Servers that leave out `index` send one call after the other: a new
    /// id opens a new call, anything else continues the last one.
    fn guess_index(&self, id: Option<&str>) -> usize {
        let last = self.calls.last();
        let is_new = match id {
            Some(id) => !self.calls.iter().any(|call| call.id.as_deref() == Some(id)),
            None => last.is_none(),
        };
        match last {
            Some(last) if !is_new => last.index,
            _ => self.unused_index(),
        }
    }

    /// The index after the highest in use, or — when a server sent the
    /// largest index there is — the lowest free one.
    fn unused_index(&self) -> usize {
        let used = |index: usize| self.calls.iter().any(|call| call.index == index);
        let after_highest = self
            .calls
            .iter()
            .map(|call| call.index.saturating_add(1))
            .max()
            .unwrap_or(0);
        if !used(after_highest) {
            return after_highest;
        }
        (0..=self.calls.len())
            .find(|&index| !used(index))
            .unwrap_or(0)
    }

    /// Calls that never got a name are still reported, so the loop answers
    /// them with an error instead of losing them.
    fn start_unnamed_calls(&mut self, out: &mut Vec<StreamEvent>) {
        for call in self.calls.iter_mut().filter(|call| !call.started) {
            start_call(call, out);
        }
    }
}

/// Emits the start of a call and the fragments that came before it. A call
/// without an id gets one from its index.
fn start_call(call: &mut CallState, out: &mut Vec<StreamEvent>) {
    call.started = true;
    out.push(StreamEvent::ToolCallStart {
        key: call.index,
        id: call
            .id
            .clone()
            .unwrap_or_else(|| format!("call_{}", call.index)),
        name: call.name.clone().unwrap_or_default(),
    });
    if !call.early_args.is_empty() {
        out.push(StreamEvent::ToolCallArgs {
            key: call.index,
            fragment: std::mem::take(&mut call.early_args),
        });
    }
}

/// A wire `finish_reason` as a stop reason; `None` for `content_filter`,
/// which ends the reply as an error. Unknown reasons count as `stop`.
fn finish_reason(reason: &str) -> Option<StopReason> {
    match reason {
        "content_filter" => None,
        "length" | "max_tokens" => Some(StopReason::Length),
        "tool_calls" | "function_call" => Some(StopReason::ToolUse),
        _ => Some(StopReason::Stop),
    }
}

/// The usage chunk: cached prompt tokens are reported apart from the rest
/// of the prompt. `None` for an all-zero report (some servers send one per
/// chunk).
fn usage(wire: WireUsage) -> Option<Usage> {
    let prompt = wire.prompt_tokens.unwrap_or(0);
    let output = wire.completion_tokens.unwrap_or(0);
    let cached = wire
        .prompt_tokens_details
        .and_then(|details| details.cached_tokens)
        .unwrap_or(0);
    if prompt == 0 && output == 0 {
        return None;
    }
    Some(
        Usage {
            input: prompt.saturating_sub(cached),
            output,
            cache_read: cached.min(prompt),
            cache_write: 0,
            total_tokens: 0,
        }
        .with_total(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::agent::types::{ToolCall, ToolResultMessage, UserMessage};
    use crate::provider::ApiKey;
    use futures::StreamExt;
    use pretty_assertions::assert_eq;
    use serde_json::json;
    use std::time::Duration;
    use wiremock::matchers::{method, path};
    use wiremock::{Mock, MockServer, ResponseTemplate};

    // -- helpers -----------------------------------------------------------

    fn settings(base_url: &str, key: Option<&str>) -> HttpSettings {
        HttpSettings {
            base_url: base_url.to_string(),
            api_key: key.map(ApiKey::new),
            retries: 2,
            max_tokens: None,
            temperature: None,
            deadline: None,
            output_schema: None,
        }
    }

    fn text_delta(text: &str) -> String {
        json!({"choices":[{"index":0,"delta":{"content":text},"finish_reason":null}]}).to_string()
    }

    fn finish(reason: &str) -> String {
        json!({"choices":[{"index":0,"delta":{},"finish_reason":reason}]}).to_string()
    }

    fn call_delta(index: usize, id: Option<&str>, name: Option<&str>, args: &str) -> String {
        let mut function = json!({"arguments": args});
        if let Some(name) = name {
            function["name"] = json!(name);
        }
        let mut call = json!({"index": index, "function": function});
        if let Some(id) = id {
            call["id"] = json!(id);
            call["type"] = json!("function");
        }
        json!({"choices":[{"index":0,"delta":{"tool_calls":[call]}}]}).to_string()
    }

    /// Feeds payloads until the decoder ends the stream, then the end of
    /// the body when it did not.
    fn decode(payloads: &[String]) -> Vec<StreamEvent> {
        let mut decoder = Decoder::default();
        let mut out = Vec::new();
        for payload in payloads {
            if decoder.feed("message", payload, &mut out) == Flow::End {
                return out;
            }
        }
        decoder.finish(&mut out);
        out
    }

    fn done() -> String {
        "[DONE]".to_string()
    }

    fn sse_body(payloads: &[String]) -> String {
        payloads
            .iter()
            .map(|payload| format!("data: {payload}\n\n"))
            .collect()
    }

    fn user(text: &str) -> Message {
        Message::User(UserMessage {
            content: vec![Content::text(text)],
            timestamp: 1,
        })
    }

    fn read_file_tool() -> ToolSpec {
        ToolSpec {
            name: "read_file".to_string(),
            description: "Read a file".to_string(),
            parameters: json!({"type":"object","properties":{"path":{"type":"string"}},"required":["path"]}),
        }
    }

    fn request<'a>(messages: &'a [Message], tools: &'a [ToolSpec]) -> Request<'a> {
        Request {
            model: "gpt-test",
            system: "Be brief.",
            messages,
            tools,
        }
    }

    async fn server_replying(template: ResponseTemplate) -> MockServer {
        let server = MockServer::start().await;
        Mock::given(method("POST"))
            .and(path("/v1/chat/completions"))
            .respond_with(template)
            .mount(&server)
            .await;
        server
    }

    fn sse_reply(payloads: &[String]) -> ResponseTemplate {
        ResponseTemplate::new(200)
            .set_body_raw(sse_body(payloads).into_bytes(), "text/event-stream")
    }

    async fn run(settings: HttpSettings, messages: &[Message]) -> Vec<StreamEvent> {
        let provider = OpenAiProvider::new(settings);
        provider
            .stream(request(messages, &[read_file_tool()]))
            .collect()
            .await
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

    fn body_json(request: &Request<'_>, settings: &HttpSettings) -> Value {
        // Through the text, as on the wire (f32 temperatures stay 0.2).
        serde_json::from_str(&serde_json::to_string(&request_body(request, settings)).unwrap())
            .unwrap()
    }

    // -- request body ------------------------------------------------------

    #[test]
    fn the_transcript_is_mapped_message_by_message() {
        let messages = vec![
            user("Summarise sample.ts"),
            Message::Assistant(AssistantMessage {
                content: vec![
                    AssistantContent::Thinking {
                        thinking: "I should read it".to_string(),
                        signature: None,
                        redacted: false,
                    },
                    AssistantContent::Text {
                        text: "Reading.".to_string(),
                    },
                    AssistantContent::ToolCall(ToolCall {
                        id: "call_1".to_string(),
                        name: "read_file".to_string(),
                        arguments: json!({"path":"sample.ts"}),
                    }),
                    AssistantContent::ToolCall(ToolCall {
                        id: "call_2".to_string(),
                        name: "read_file".to_string(),
                        arguments: json!("{\"path\": \"b.ts\""),
                    }),
                ],
                stop_reason: StopReason::ToolUse,
                ..AssistantMessage::default()
            }),
            Message::ToolResult(ToolResultMessage {
                tool_call_id: "call_1".to_string(),
                tool_name: "read_file".to_string(),
                content: vec![Content::text("export const x = 1;\n")],
                details: json!({"bytes": 20}),
                is_error: false,
                duration_ms: Some(2),
                timestamp: 3,
            }),
            Message::ToolResult(ToolResultMessage {
                tool_call_id: "call_2".to_string(),
                tool_name: "read_file".to_string(),
                content: vec![],
                details: Value::Null,
                is_error: true,
                duration_ms: None,
                timestamp: 3,
            }),
        ];
        let tools = [read_file_tool()];
        let mut settings = settings("http://x/v1", None);
        settings.max_tokens = Some(256);
        settings.temperature = Some(0.2);
        assert_eq!(
            body_json(&request(&messages, &tools), &settings),
            json!({
                "model": "gpt-test",
                "messages": [
                    {"role": "system", "content": "Be brief."},
                    {"role": "user", "content": "Summarise sample.ts"},
                    {"role": "assistant", "content": "Reading.", "tool_calls": [
                        {"id": "call_1", "type": "function",
                         "function": {"name": "read_file", "arguments": "{\"path\":\"sample.ts\"}"}},
                        {"id": "call_2", "type": "function",
                         "function": {"name": "read_file", "arguments": "{\"path\": \"b.ts\""}},
                    ]},
                    {"role": "tool", "tool_call_id": "call_1", "content": "export const x = 1;\n"},
                    {"role": "tool", "tool_call_id": "call_2", "content": ""},
                ],
                "tools": [{"type": "function", "function": {
                    "name": "read_file",
                    "description": "Read a file",
                    "parameters": {"type":"object","properties":{"path":{"type":"string"}},"required":["path"]},
                }}],
                "stream": true,
                "stream_options": {"include_usage": true},
                "max_completion_tokens": 256,
                "temperature": 0.2,
            })
        );
    }

    #[test]
    fn optional_parts_are_left_out() {
        let messages = vec![
            user("hi"),
            Message::Assistant(AssistantMessage {
                content: vec![AssistantContent::ToolCall(ToolCall {
                    id: "c".to_string(),
                    name: "list_dir".to_string(),
                    arguments: json!({}),
                })],
                ..AssistantMessage::default()
            }),
            Message::Assistant(AssistantMessage::default()),
        ];
        let request = Request {
            model: "m",
            system: "",
            messages: &messages,
            tools: &[],
        };
        assert_eq!(
            body_json(&request, &settings("http://x", None)),
            json!({
                "model": "m",
                "messages": [
                    {"role": "user", "content": "hi"},
                    {"role": "assistant", "content": null, "tool_calls": [
                        {"id": "c", "type": "function", "function": {"name": "list_dir", "arguments": "{}"}}
                    ]},
                    {"role": "assistant", "content": ""},
                ],
                "stream": true,
                "stream_options": {"include_usage": true},
            })
        );
    }

    #[test]
    fn the_endpoint_joins_the_base_with_or_without_a_slash() {
        assert_eq!(endpoint("http://h:1/v1"), "http://h:1/v1/chat/completions");
        assert_eq!(endpoint("http://h:1/v1/"), "http://h:1/v1/chat/completions");
        assert_eq!(endpoint(""), "https://api.openai.com/v1/chat/completions");
    }

    // -- decoder -----------------------------------------------------------

    #[test]
    fn text_arrives_delta_by_delta() {
        let role =
            json!({"choices":[{"index":0,"delta":{"role":"assistant","content":""}}]}).to_string();
        let events = decode(&[
            role,
            text_delta("Hel"),
            text_delta("lo, "),
            text_delta("wörld"),
            finish("stop"),
            done(),
        ]);
        assert_eq!(
            events,
            vec![
                StreamEvent::Text("Hel".to_string()),
                StreamEvent::Text("lo, ".to_string()),
                StreamEvent::Text("wörld".to_string()),
                StreamEvent::Done(StopReason::Stop),
            ]
        );
    }

    #[test]
    fn tool_call_arguments_arrive_in_fragments() {
        let events = decode(&[
            call_delta(0, Some("call_9"), Some("read_file"), ""),
            call_delta(0, None, None, "{\"pa"),
            call_delta(0, None, None, "th\": \"sam"),
            call_delta(0, None, None, "ple.ts\"}"),
            finish("tool_calls"),
            done(),
        ]);
        assert_eq!(
            events,
            vec![
                StreamEvent::ToolCallStart {
                    key: 0,
                    id: "call_9".to_string(),
                    name: "read_file".to_string()
                },
                StreamEvent::ToolCallArgs {
                    key: 0,
                    fragment: "{\"pa".to_string()
                },
                StreamEvent::ToolCallArgs {
                    key: 0,
                    fragment: "th\": \"sam".to_string()
                },
                StreamEvent::ToolCallArgs {
                    key: 0,
                    fragment: "ple.ts\"}".to_string()
                },
                StreamEvent::Done(StopReason::ToolUse),
            ]
        );
    }

    #[test]
    fn parallel_calls_interleave_by_index() {
        let events = decode(&[
            call_delta(0, Some("call_a"), Some("read_file"), ""),
            call_delta(1, Some("call_b"), Some("list_dir"), "{\"pa"),
            call_delta(0, None, None, "{}"),
            call_delta(1, None, None, "th\":\".\"}"),
            finish("tool_calls"),
            done(),
        ]);
        let start = |key, id: &str, name: &str| StreamEvent::ToolCallStart {
            key,
            id: id.to_string(),
            name: name.to_string(),
        };
        let args = |key, fragment: &str| StreamEvent::ToolCallArgs {
            key,
            fragment: fragment.to_string(),
        };
        assert_eq!(
            events,
            vec![
                start(0, "call_a", "read_file"),
                start(1, "call_b", "list_dir"),
                args(1, "{\"pa"),
                args(0, "{}"),
                args(1, "th\":\".\"}"),
                StreamEvent::Done(StopReason::ToolUse),
            ]
        );
    }

    #[test]
    fn odd_tool_call_deltas_from_compatible_servers() {
        // Arguments before the name, no id, no index, the id repeated.
        let no_index = |id: &str, name: &str, args: &str| {
            json!({"choices":[{"delta":{"tool_calls":[{"id":id,"function":{"name":name,"arguments":args}}]}}]})
                .to_string()
        };
        let events = decode(&[
            call_delta(3, None, None, "{\"a\":"),
            call_delta(3, None, Some("f"), "1}"),
            call_delta(3, None, Some("f"), ""),
            no_index("x1", "g", "{}"),
            no_index("x2", "h", "{}"),
            call_delta(7, Some("nameless"), None, "{}"),
            finish("stop"),
        ]);
        let start = |key, id: &str, name: &str| StreamEvent::ToolCallStart {
            key,
            id: id.to_string(),
            name: name.to_string(),
        };
        let args = |key, fragment: &str| StreamEvent::ToolCallArgs {
            key,
            fragment: fragment.to_string(),
        };
        assert_eq!(
            events,
            vec![
                start(3, "call_3", "f"),
                args(3, "{\"a\":1}"),
                start(4, "x1", "g"),
                args(4, "{}"),
                start(5, "x2", "h"),
                args(5, "{}"),
                start(7, "nameless", ""),
                args(7, "{}"),
                StreamEvent::Done(StopReason::ToolUse),
            ]
        );
    }

    #[test]
    fn a_call_at_the_largest_index_and_one_without_an_index_do_not_overflow() {
        // Found with the openai_stream fuzz target: `index + 1` overflowed.
        let max = usize::MAX;
        let events = decode(&[
            json!({"choices":[{"delta":{"tool_calls":[{"index": max, "id": "a", "function": {"name": "x", "arguments": "{}"}}]}}]}).to_string(),
            json!({"choices":[{"delta":{"tool_calls":[{"id": "b", "function": {"name": "y", "arguments": "{}"}}]}}]}).to_string(),
            finish("tool_calls"),
        ]);
        let starts: Vec<_> = events
            .iter()
            .filter_map(|event| match event {
                StreamEvent::ToolCallStart { key, id, .. } => Some((*key, id.as_str())),
                _ => None,
            })
            .collect();
        assert_eq!(starts, vec![(max, "a"), (0, "b")]);
        assert_eq!(events.last(), Some(&StreamEvent::Done(StopReason::ToolUse)));
    }

    #[test]
    fn the_usage_chunk_separates_cached_tokens() {
        let usage = json!({"choices":[],"usage":{"prompt_tokens":100,"completion_tokens":20,"total_tokens":120,
            "prompt_tokens_details":{"cached_tokens":60}}})
        .to_string();
        let events = decode(&[text_delta("ok"), finish("stop"), usage, done()]);
        assert_eq!(
            events,
            vec![
                StreamEvent::Text("ok".to_string()),
                StreamEvent::Usage(Usage {
                    input: 40,
                    output: 20,
                    cache_read: 60,
                    cache_write: 0,
                    total_tokens: 120
                }),
                StreamEvent::Done(StopReason::Stop),
            ]
        );
    }

    #[test]
    fn reasoning_in_either_field() {
        let reasoning_content =
            json!({"choices":[{"delta":{"reasoning_content":"think "}}]}).to_string();
        let reasoning =
            json!({"choices":[{"delta":{"reasoning":"more","content":null}}]}).to_string();
        let both = json!({"choices":[{"delta":{"reasoning_content":"once","reasoning":"once"}}]})
            .to_string();
        let object = json!({"choices":[{"delta":{"reasoning":{"effort":"high"}}}]}).to_string();
        let events = decode(&[
            reasoning_content,
            reasoning,
            both,
            object,
            text_delta("A"),
            finish("stop"),
            done(),
        ]);
        assert_eq!(
            events,
            vec![
                StreamEvent::Thinking("think ".to_string()),
                StreamEvent::Thinking("more".to_string()),
                StreamEvent::Thinking("once".to_string()),
                StreamEvent::Text("A".to_string()),
                StreamEvent::Done(StopReason::Stop),
            ]
        );
    }

    #[test]
    fn finish_reasons() {
        assert_eq!(
            decode(&[text_delta("a"), finish("length"), done()]).last(),
            Some(&StreamEvent::Done(StopReason::Length))
        );
        assert_eq!(
            decode(&[text_delta("a"), finish("stop")]).last(),
            Some(&StreamEvent::Done(StopReason::Stop))
        );
        assert_eq!(
            decode(&[text_delta("a"), finish("stop")]).last(),
            Some(&StreamEvent::Done(StopReason::Stop))
        );
        assert_eq!(
            decode(&[text_delta("a"), finish("eos"), done()]).last(),
            Some(&StreamEvent::Done(StopReason::Stop))
        );
        assert_eq!(
            decode(&[text_delta("a"), finish("content_filter"), done()]),
            vec![
                StreamEvent::Text("a".to_string()),
                StreamEvent::Error(
                    "the provider's content filter stopped the reply (finish_reason: content_filter)".to_string()
                ),
            ]
        );
    }

    #[test]
    fn done_without_a_finish_reason_is_an_incomplete_reply() {
        let incomplete = StreamEvent::Error(crate::provider::NO_STOP_REASON.to_string());
        assert_eq!(
            decode(&[text_delta("a"), done()]),
            vec![StreamEvent::Text("a".to_string()), incomplete.clone()]
        );
        assert_eq!(decode(&[done()]), vec![incomplete.clone()]);
        // A call without a finish reason is not run either.
        let call = call_delta(0, Some("c"), Some("read_file"), "{}");
        assert_eq!(decode(&[call, done()]).last(), Some(&incomplete));
        assert!(crate::provider::NO_STOP_REASON.ends_with(crate::provider::INCOMPLETE));
    }

    #[test]
    fn broken_streams_end_with_an_error() {
        assert_eq!(
            decode(&[text_delta("a")]).last(),
            Some(&StreamEvent::Error(
                "the stream was cut off (no finish_reason, no [DONE]); the reply is incomplete"
                    .to_string()
            ))
        );
        let Some(StreamEvent::Error(not_json)) =
            decode(&[text_delta("a"), "{\"choices\": [".to_string()]).pop()
        else {
            panic!("no error");
        };
        assert!(
            not_json.starts_with("the provider sent a chunk that is not JSON ("),
            "{not_json}"
        );
        assert!(not_json.ends_with("): {\"choices\": ["), "{not_json}");
        let Some(StreamEvent::Error(shape)) = decode(&["{\"choices\": 3}".to_string()]).pop()
        else {
            panic!("no error");
        };
        assert!(
            shape.starts_with("the provider sent a chunk of an unexpected shape"),
            "{shape}"
        );
        let error = json!({"error":{"message":"The server had an error","type":"server_error"}})
            .to_string();
        assert_eq!(
            decode(&[text_delta("a"), error, done()]).last(),
            Some(&StreamEvent::Error(
                "the provider reported an error mid-stream: The server had an error".to_string()
            ))
        );
        let mut decoder = Decoder::default();
        let mut out = Vec::new();
        assert_eq!(
            decoder.feed("error", "{\"error\":\"overloaded\"}", &mut out),
            Flow::End
        );
        assert_eq!(
            out,
            vec![StreamEvent::Error(
                "the provider reported an error mid-stream: overloaded".to_string()
            )]
        );
    }

    #[test]
    fn a_transport_failure_after_the_finish_reason_still_completes() {
        let mut decoder = Decoder::default();
        let mut out = Vec::new();
        decoder.feed("message", &finish("stop"), &mut out);
        decoder.broken(&sse::SseError::Transport("reset".to_string()), &mut out);
        assert_eq!(out, vec![StreamEvent::Done(StopReason::Stop)]);
        let mut decoder = Decoder::default();
        let mut out = Vec::new();
        decoder.broken(&sse::SseError::InvalidUtf8, &mut out);
        assert_eq!(
            out,
            vec![StreamEvent::Error(
                "the response stream is not valid UTF-8; the reply is incomplete".to_string()
            )]
        );
    }

    #[test]
    fn keep_alives_and_null_fields_are_ignored() {
        let nulls = json!({"choices":null,"usage":null,"error":null}).to_string();
        let null_delta = json!({"choices":[{"delta":null,"finish_reason":null}]}).to_string();
        let events = decode(&[
            String::new(),
            nulls,
            null_delta,
            text_delta("x"),
            finish("stop"),
            done(),
        ]);
        assert_eq!(
            events,
            vec![
                StreamEvent::Text("x".to_string()),
                StreamEvent::Done(StopReason::Stop)
            ]
        );
    }

    // -- against a server --------------------------------------------------

    #[tokio::test]
    async fn a_streamed_reply_and_the_request_that_asked_for_it() {
        let server = server_replying(sse_reply(&[
            text_delta("Hi"),
            text_delta(" there"),
            finish("stop"),
            done(),
        ]))
        .await;
        let events = run(
            settings(&format!("{}/v1/", server.uri()), Some("sk-test")),
            &[user("hello")],
        )
        .await;
        assert_eq!(
            events,
            vec![
                StreamEvent::Text("Hi".to_string()),
                StreamEvent::Text(" there".to_string()),
                StreamEvent::Done(StopReason::Stop),
            ]
        );
        let requests = server.received_requests().await.unwrap_or_default();
        assert_eq!(requests.len(), 1);
        let headers = &requests[0].headers;
        assert_eq!(headers.get("authorization").unwrap(), "Bearer sk-test");
        assert_eq!(headers.get("content-type").unwrap(), "application/json");
        assert_eq!(headers.get("accept").unwrap(), "text/event-stream");
        let body = &bodies(&server).await[0];
        assert_eq!(body["stream"], json!(true));
        assert_eq!(
            body["messages"],
            json!([{"role":"system","content":"Be brief."},{"role":"user","content":"hello"}])
        );
    }

    #[tokio::test]
    async fn no_key_no_authorization_header() {
        let server = server_replying(sse_reply(&[text_delta("x"), finish("stop"), done()])).await;
        let events = run(
            settings(&format!("{}/v1", server.uri()), None),
            &[user("hello")],
        )
        .await;
        assert_eq!(events.last(), Some(&StreamEvent::Done(StopReason::Stop)));
        let requests = server.received_requests().await.unwrap_or_default();
        assert!(requests[0].headers.get("authorization").is_none());
    }

    #[tokio::test]
    async fn tool_calls_usage_and_reasoning_from_a_server() {
        let usage = json!({"choices":[],"usage":{"prompt_tokens":10,"completion_tokens":5,"total_tokens":15}}).to_string();
        let server = server_replying(sse_reply(&[
            json!({"choices":[{"delta":{"reasoning_content":"need the file"}}]}).to_string(),
            call_delta(0, Some("call_1"), Some("read_file"), ""),
            call_delta(0, None, None, "{\"path\":"),
            call_delta(0, None, None, "\"sample.ts\"}"),
            finish("tool_calls"),
            usage,
            done(),
        ]))
        .await;
        let events = run(
            settings(&format!("{}/v1", server.uri()), Some("sk-test")),
            &[user("read")],
        )
        .await;
        assert_eq!(
            events,
            vec![
                StreamEvent::Thinking("need the file".to_string()),
                StreamEvent::ToolCallStart {
                    key: 0,
                    id: "call_1".to_string(),
                    name: "read_file".to_string()
                },
                StreamEvent::ToolCallArgs {
                    key: 0,
                    fragment: "{\"path\":".to_string()
                },
                StreamEvent::ToolCallArgs {
                    key: 0,
                    fragment: "\"sample.ts\"}".to_string()
                },
                StreamEvent::Usage(Usage {
                    input: 10,
                    output: 5,
                    cache_read: 0,
                    cache_write: 0,
                    total_tokens: 15
                }),
                StreamEvent::Done(StopReason::ToolUse),
            ]
        );
    }

    #[tokio::test]
    async fn failures_of_the_stream_end_it_with_an_error() {
        let cases: Vec<(Vec<String>, &str)> = vec![
            (
                vec![text_delta("a")],
                "the stream was cut off (no finish_reason, no [DONE])",
            ),
            (
                vec![text_delta("a"), done()],
                crate::provider::NO_STOP_REASON,
            ),
            (
                vec![text_delta("a"), "not json".to_string()],
                "the provider sent a chunk that is not JSON",
            ),
            (
                vec![json!({"error":{"message":"boom"}}).to_string()],
                "the provider reported an error mid-stream: boom",
            ),
            (
                vec![finish("content_filter"), done()],
                "the provider's content filter stopped the reply",
            ),
        ];
        for (payloads, want) in cases {
            let server = server_replying(sse_reply(&payloads)).await;
            let events = run(
                settings(&format!("{}/v1", server.uri()), Some("sk-test")),
                &[user("x")],
            )
            .await;
            match events.last() {
                Some(StreamEvent::Error(message)) => {
                    assert!(message.starts_with(want), "{message}")
                }
                other => panic!("{want}: {other:?}"),
            }
            assert_eq!(
                events
                    .iter()
                    .filter(|event| matches!(event, StreamEvent::Error(_)))
                    .count(),
                1
            );
        }
    }

    #[tokio::test]
    async fn an_error_status_with_the_providers_message_and_never_the_key() {
        let server = server_replying(ResponseTemplate::new(401).set_body_raw(
            r#"{"error":{"message":"Incorrect API key provided: sk-secret-777.","type":"invalid_request_error"}}"#,
            "application/json",
        ))
        .await;
        let events = run(
            settings(&format!("{}/v1", server.uri()), Some("sk-secret-777")),
            &[user("x")],
        )
        .await;
        assert_eq!(
            events,
            vec![StreamEvent::Error(
                "HTTP 401 Unauthorized: Incorrect API key provided: ***.".to_string()
            )]
        );
        assert_eq!(
            server.received_requests().await.unwrap_or_default().len(),
            1,
            "401 is not retried"
        );
        assert!(!format!("{events:?}").contains("sk-secret-777"));
    }

    #[tokio::test]
    async fn a_bad_request_is_not_retried() {
        let server = server_replying(ResponseTemplate::new(400).set_body_raw(
            r#"{"error":{"message":"Unknown model gpt-test"}}"#,
            "application/json",
        ))
        .await;
        let events = run(
            settings(&format!("{}/v1", server.uri()), Some("sk-test")),
            &[user("x")],
        )
        .await;
        assert_eq!(
            events,
            vec![StreamEvent::Error(
                "HTTP 400 Bad Request: Unknown model gpt-test".to_string()
            )]
        );
        assert_eq!(
            server.received_requests().await.unwrap_or_default().len(),
            1
        );
    }

    #[tokio::test]
    async fn rate_limited_then_served() {
        let server = MockServer::start().await;
        Mock::given(method("POST"))
            .respond_with(
                ResponseTemplate::new(429)
                    .insert_header("retry-after", "1")
                    .set_body_raw(
                        r#"{"error":{"message":"Rate limit reached"}}"#,
                        "application/json",
                    ),
            )
            .up_to_n_times(1)
            .mount(&server)
            .await;
        Mock::given(method("POST"))
            .respond_with(sse_reply(&[text_delta("ok"), finish("stop"), done()]))
            .mount(&server)
            .await;
        let started = std::time::Instant::now();
        let events = run(
            settings(&format!("{}/v1", server.uri()), Some("sk-test")),
            &[user("x")],
        )
        .await;
        assert!(started.elapsed() >= Duration::from_secs(1));
        assert_eq!(
            events,
            vec![
                StreamEvent::Retry {
                    attempt: 1,
                    delay_ms: 1000,
                    reason: "HTTP 429 Too Many Requests: Rate limit reached".to_string()
                },
                StreamEvent::Text("ok".to_string()),
                StreamEvent::Done(StopReason::Stop),
            ]
        );
        let bodies = bodies(&server).await;
        assert_eq!(bodies.len(), 2);
        assert_eq!(bodies[0], bodies[1], "the retry sends the same body");
    }

    #[tokio::test]
    async fn server_errors_are_retried_until_the_retries_are_used_up() {
        let server =
            server_replying(ResponseTemplate::new(500).set_body_raw("oops", "text/plain")).await;
        let mut settings = settings(&format!("{}/v1", server.uri()), Some("sk-test"));
        settings.retries = 2;
        let events = run(settings, &[user("x")]).await;
        assert_eq!(events.len(), 3);
        assert!(matches!(events[0], StreamEvent::Retry { attempt: 1, .. }));
        assert!(matches!(events[1], StreamEvent::Retry { attempt: 2, .. }));
        assert_eq!(
            events[2],
            StreamEvent::Error(
                "HTTP 500 Internal Server Error: oops (after 2 retries)".to_string()
            )
        );
        assert_eq!(
            server.received_requests().await.unwrap_or_default().len(),
            3
        );
    }

    #[tokio::test]
    async fn no_retry_that_would_wait_past_the_deadline() {
        let server =
            server_replying(ResponseTemplate::new(503).insert_header("retry-after", "5")).await;
        let mut settings = settings(&format!("{}/v1", server.uri()), Some("sk-test"));
        settings.deadline = Some(tokio::time::Instant::now() + Duration::from_secs(2));
        let events = run(settings, &[user("x")]).await;
        assert_eq!(
            events,
            vec![StreamEvent::Error(
                "HTTP 503 Service Unavailable; not retried: waiting 5.0s would pass the run's timeout"
                    .to_string()
            )]
        );
    }

    #[tokio::test]
    async fn connection_refused() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let base = format!(
            "http://127.0.0.1:{}/v1",
            listener.local_addr().unwrap().port()
        );
        drop(listener);
        let mut settings = settings(&base, Some("sk-test"));
        settings.retries = 1;
        let events = run(settings, &[user("x")]).await;
        assert_eq!(events.len(), 2, "{events:?}");
        assert!(
            matches!(&events[0], StreamEvent::Retry { attempt: 1, reason, .. } if reason.starts_with("could not connect to"))
        );
        let StreamEvent::Error(message) = &events[1] else {
            panic!("{events:?}");
        };
        assert!(
            message.starts_with(&format!("could not connect to {base}/chat/completions: ")),
            "{message}"
        );
        assert!(message.ends_with("(after 1 retry)"), "{message}");
    }

    #[tokio::test]
    async fn an_invalid_base_url_is_an_error_not_a_panic() {
        let events = run(settings("not a url", Some("sk-test")), &[user("x")]).await;
        let [StreamEvent::Error(message)] = events.as_slice() else {
            panic!("{events:?}");
        };
        assert!(
            message.starts_with("invalid base URL not a url/chat/completions"),
            "{message}"
        );
    }

    #[tokio::test]
    async fn dropping_the_stream_closes_the_connection() {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base = format!("http://{}/v1", listener.local_addr().unwrap());
        let server = tokio::spawn(async move {
            let (mut socket, _) = listener.accept().await.unwrap();
            let mut request = vec![0u8; 64 * 1024];
            let _ = socket.read(&mut request).await.unwrap();
            let first = format!("data: {}\n\n", text_delta("first"));
            let head = "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n";
            let chunk = format!("{:x}\r\n{first}\r\n", first.len());
            socket
                .write_all(format!("{head}{chunk}").as_bytes())
                .await
                .unwrap();
            // The stream never ends; the client must hang up.
            let mut rest = Vec::new();
            tokio::time::timeout(Duration::from_secs(5), socket.read_to_end(&mut rest)).await
        });
        let provider = OpenAiProvider::new(settings(&base, Some("sk-test")));
        let messages = [user("x")];
        let mut stream = provider.stream(request(&messages, &[]));
        assert_eq!(
            stream.next().await,
            Some(StreamEvent::Text("first".to_string()))
        );
        drop(stream);
        let closed = server.await.unwrap();
        assert!(
            matches!(closed, Ok(Ok(_))),
            "the connection stayed open: {closed:?}"
        );
    }
}

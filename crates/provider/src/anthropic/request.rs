//! The Messages API request body: typed wire structs that borrow from
//! the transcript.

use std::borrow::Cow;

use serde::Serialize;
use serde_json::Value;

use crate::content::{base64, file_text};
use crate::{HttpSettings, Request};
use leash_protocol::ToolSpec;
use leash_protocol::{AssistantContent, Attachment, Content, MediaType, Message};

/// `max_tokens` when `--max-tokens` is not given: the API requires the field,
/// and a real answer with tool calls must fit.
const DEFAULT_MAX_TOKENS: u32 = 8192;

/// The body of one `POST /v1/messages`, borrowing from the request.
///
/// The fields are in the order the API reads a prompt for its cache
/// (tools, system, messages), with everything that is the same on every
/// turn first and `messages` last: so turn N's body, up to the end of its
/// last message and without that message's breakpoint, is a byte prefix
/// of turn N+1's body (`tests/suite/run/cost/caching.rs` holds leash to it).
#[derive(Debug, Serialize, PartialEq)]
pub struct WireRequest<'a> {
    model: &'a str,
    max_tokens: u32,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    tools: Vec<WireTool<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    system: Option<WireSystem<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    temperature: Option<f32>,
    /// The request's thinking level as a budget; omitted for `Off`.
    #[serde(skip_serializing_if = "Option::is_none")]
    thinking: Option<ThinkingConfig>,
    #[serde(skip_serializing_if = "Option::is_none")]
    output_config: Option<OutputConfig<'a>>,
    stream: bool,
    messages: Vec<WireMessage<'a>>,
}

/// `system`: a plain string, or with caching on one text block carrying
/// a breakpoint (only a block can carry one).
#[derive(Debug, Serialize, PartialEq)]
#[serde(untagged)]
enum WireSystem<'a> {
    Text(&'a str),
    Blocks([SystemBlock<'a>; 1]),
}

#[derive(Debug, Serialize, PartialEq)]
struct SystemBlock<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    text: &'a str,
    cache_control: CacheControl,
}

/// A prompt-cache breakpoint: the server caches the prompt up to and
/// including the block that carries it.
#[derive(Debug, Serialize, PartialEq, Clone, Copy)]
struct CacheControl {
    #[serde(rename = "type")]
    kind: &'static str,
}

/// The only kind of breakpoint the API has without a beta header (a
/// five-minute cache, refreshed by every hit).
const EPHEMERAL: CacheControl = CacheControl { kind: "ephemeral" };

/// `thinking`: extended thinking with a token budget.
#[derive(Debug, Serialize, PartialEq)]
struct ThinkingConfig {
    #[serde(rename = "type")]
    kind: &'static str,
    budget_tokens: u32,
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
        text: Cow<'a, str>,
        #[serde(skip_serializing_if = "Option::is_none")]
        cache_control: Option<CacheControl>,
    },
    /// An attached image: `{"type": "image", "source": {"type": "base64", ...}}`.
    Image {
        source: Base64Source,
        #[serde(skip_serializing_if = "Option::is_none")]
        cache_control: Option<CacheControl>,
    },
    /// An attached PDF: `{"type": "document", "source": {"type": "base64", ...}}`.
    Document {
        source: Base64Source,
        #[serde(skip_serializing_if = "Option::is_none")]
        cache_control: Option<CacheControl>,
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
        #[serde(skip_serializing_if = "Option::is_none")]
        cache_control: Option<CacheControl>,
    },
    ToolResult {
        tool_use_id: &'a str,
        content: ToolResultContent<'a>,
        is_error: bool,
        #[serde(skip_serializing_if = "Option::is_none")]
        cache_control: Option<CacheControl>,
    },
}

/// A file's bytes inline: `{"type": "base64", "media_type", "data"}`.
#[derive(Debug, Serialize, PartialEq)]
struct Base64Source {
    #[serde(rename = "type")]
    kind: &'static str,
    media_type: &'static str,
    data: String,
}

/// A tool result's `content`: a string when it is text alone (as before
/// attachments, so a text-only body is byte for byte what it was), else
/// the blocks, an image among them.
#[derive(Debug, Serialize, PartialEq)]
#[serde(untagged)]
enum ToolResultContent<'a> {
    Text(String),
    Blocks(Vec<WireBlock<'a>>),
}

#[derive(Debug, Serialize, PartialEq)]
struct WireTool<'a> {
    name: &'a str,
    description: &'a str,
    input_schema: &'a Value,
    #[serde(skip_serializing_if = "Option::is_none")]
    cache_control: Option<CacheControl>,
}

/// Builds the Messages API body for one request (ARCHITECTURE.md §2.4): system at the
/// top level, every message mapped to content blocks, `stream: true` and a
/// `max_tokens` always present, and with caching on the breakpoints of
/// [`place_breakpoints`].
pub fn request_body<'a>(request: &Request<'a>, settings: &'a HttpSettings) -> WireRequest<'a> {
    let answer_tokens = settings.max_tokens.unwrap_or(DEFAULT_MAX_TOKENS);
    // With thinking on, the budget comes on top of the answer's room, and
    // the API refuses any temperature but its own.
    let budget = request.options.thinking.anthropic_budget();
    let mut body = WireRequest {
        model: request.model,
        max_tokens: answer_tokens.saturating_add(budget.unwrap_or(0)),
        tools: request.tools.iter().map(wire_tool).collect(),
        system: (!request.system.is_empty()).then_some(WireSystem::Text(request.system)),
        temperature: settings.temperature.filter(|_| budget.is_none()),
        thinking: budget.map(|budget_tokens| ThinkingConfig {
            kind: "enabled",
            budget_tokens,
        }),
        output_config: settings.output_schema.as_ref().map(|schema| OutputConfig {
            format: OutputFormat {
                kind: "json_schema",
                schema,
            },
        }),
        stream: true,
        messages: wire_messages(request.messages),
    };
    if settings.cache {
        place_breakpoints(&mut body);
    }
    body
}

/// The prompt-cache rule: three breakpoints (the API allows four) — on
/// the last tool, on the system message and on the last block of the last
/// message — so each turn reads the tools, the system message and the whole
/// previous turn from the cache and writes the new turn for the next one.
/// Whether a prefix is long enough to be cached is the server's business. A
/// block that cannot carry a breakpoint (thinking, empty text) gets none.
fn place_breakpoints(body: &mut WireRequest<'_>) {
    if let Some(tool) = body.tools.last_mut() {
        tool.cache_control = Some(EPHEMERAL);
    }
    if let Some(WireSystem::Text(text)) = body.system {
        body.system = Some(WireSystem::Blocks([SystemBlock {
            kind: "text",
            text,
            cache_control: EPHEMERAL,
        }]));
    }
    let last = body
        .messages
        .last_mut()
        .and_then(|message| message.content.last_mut());
    match last {
        Some(WireBlock::Text {
            text,
            cache_control,
        }) if !text.is_empty() => *cache_control = Some(EPHEMERAL),
        Some(
            WireBlock::ToolUse { cache_control, .. }
            | WireBlock::ToolResult { cache_control, .. }
            | WireBlock::Image { cache_control, .. }
            | WireBlock::Document { cache_control, .. },
        ) => *cache_control = Some(EPHEMERAL),
        _ => {}
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
                let content = user.content.iter().map(content_block).collect();
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
                let content = if result.content.iter().all(|c| c.as_text().is_some()) {
                    ToolResultContent::Text(result.text())
                } else {
                    ToolResultContent::Blocks(result.content.iter().map(content_block).collect())
                };
                let block = WireBlock::ToolResult {
                    tool_use_id: &result.tool_call_id,
                    content,
                    is_error: result.is_error,
                    cache_control: None,
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
            // Folded into `system` by the loop, or never sent (see `Request`).
            Message::System(_) | Message::Custom(_) => {}
        }
    }
    out
}

/// One block of a user message or a tool result: text as it is, an
/// image or a PDF as its base64 block, a text file as a text block that
/// names it.
fn content_block(content: &Content) -> WireBlock<'_> {
    match content {
        Content::Text { text } => WireBlock::Text {
            text: Cow::Borrowed(text),
            cache_control: None,
        },
        Content::Attachment(attachment) => attachment_block(attachment),
    }
}

fn attachment_block(attachment: &Attachment) -> WireBlock<'_> {
    let source = || Base64Source {
        kind: "base64",
        media_type: attachment.media_type.mime(),
        data: base64(attachment),
    };
    match attachment.media_type {
        MediaType::Text => WireBlock::Text {
            text: Cow::Owned(file_text(attachment)),
            cache_control: None,
        },
        MediaType::Pdf => WireBlock::Document {
            source: source(),
            cache_control: None,
        },
        MediaType::Png | MediaType::Jpeg | MediaType::Gif | MediaType::Webp => WireBlock::Image {
            source: source(),
            cache_control: None,
        },
    }
}

/// One assistant block on the wire, or `None` for what the API must not
/// get back: empty text and thinking without a signature (from another
/// provider, or cut off before its signature arrived). A redacted block
/// goes back as it came: its `data`, unchanged.
fn assistant_block(block: &AssistantContent) -> Option<WireBlock<'_>> {
    match block {
        AssistantContent::Text { text } if text.is_empty() => None,
        AssistantContent::Text { text } => Some(WireBlock::Text {
            text: Cow::Borrowed(text),
            cache_control: None,
        }),
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
            cache_control: None,
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
        cache_control: None,
    }
}

#[cfg(test)]
#[path = "request_tests.rs"]
mod tests;

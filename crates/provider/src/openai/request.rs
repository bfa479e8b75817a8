//! The Chat Completions request body: a request mapped onto typed wire
//! structs that borrow from the transcript.

use std::borrow::Cow;

use serde::Serialize;
use serde_json::Value;

use crate::content::{data_url, file_text, not_shown_note};
use crate::{HttpSettings, Request};
use leash_protocol::ToolSpec;
use leash_protocol::{AssistantContent, AssistantMessage, Attachment, Content, MediaType, Message};

/// A Chat Completions request, borrowing from the transcript.
///
/// OpenAI caches a prompt by its prefix, on its own: everything that is the
/// same on every turn comes first and `messages` last, nothing in the body
/// changes from turn to turn (no ids, no timestamps; tools in `--tools`
/// order, schemas as given), so turn N's body up to the end of its last
/// message is a byte prefix of turn N+1's (`tests/suite/run/cost/caching.rs`).
#[derive(Debug, Serialize)]
pub(crate) struct ChatRequest<'a> {
    model: &'a str,
    /// `--prompt-cache-key`, else the request's session id: requests with
    /// the same key and prefix go to the same cache.
    #[serde(skip_serializing_if = "Option::is_none")]
    prompt_cache_key: Option<&'a str>,
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
    /// The request's thinking level; omitted for `Off`.
    #[serde(skip_serializing_if = "Option::is_none")]
    reasoning_effort: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    response_format: Option<ResponseFormat<'a>>,
    messages: Vec<ChatMessage<'a>>,
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
        content: UserContent<'a>,
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

/// A user message's `content`: a string when it is text alone (as before
/// attachments, so a text-only body is unchanged), else content parts.
#[derive(Debug, Serialize)]
#[serde(untagged)]
enum UserContent<'a> {
    Text(String),
    Parts(Vec<ContentPart<'a>>),
}

/// One content part of a user message.
#[derive(Debug, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum ContentPart<'a> {
    Text { text: Cow<'a, str> },
    ImageUrl { image_url: ImageUrl },
    File { file: FilePart<'a> },
}

#[derive(Debug, Serialize)]
struct ImageUrl {
    url: String,
}

/// A PDF inline: `{"filename", "file_data": "data:application/pdf;base64,..."}`.
#[derive(Debug, Serialize)]
struct FilePart<'a> {
    filename: &'a str,
    file_data: String,
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
    messages.extend(request.messages.iter().filter_map(chat_message));
    ChatRequest {
        model: request.model,
        prompt_cache_key: settings
            .prompt_cache_key
            .as_deref()
            .or(request.options.session_id),
        tools: request.tools.iter().map(chat_tool).collect(),
        stream: true,
        stream_options: StreamOptions {
            include_usage: true,
        },
        max_completion_tokens: settings.max_tokens,
        temperature: settings.temperature,
        reasoning_effort: request.options.thinking.openai_effort(),
        response_format: settings
            .output_schema
            .as_ref()
            .map(|schema| ResponseFormat {
                kind: "json_schema",
                json_schema: JsonSchemaFormat {
                    name: "leash_output",
                    schema,
                    strict: strict_compatible(schema),
                },
            }),
        messages,
    }
}

/// One transcript message on the wire. Thinking blocks are not sent back:
/// the API has no place for them, and DeepSeek rejects them. System and
/// custom messages are not sent from here (see `Request`).
fn chat_message(message: &Message) -> Option<ChatMessage<'_>> {
    Some(match message {
        Message::User(user) => ChatMessage::User {
            content: user_content(&user.content),
        },
        Message::Assistant(assistant) => assistant_message(assistant),
        Message::ToolResult(result) => ChatMessage::Tool {
            tool_call_id: &result.tool_call_id,
            content: tool_text(&result.content),
        },
        Message::System(_) | Message::Custom(_) => return None,
    })
}

/// A user message: its text as one string, or with attachments its parts
/// — an image as an `image_url` data URL, a PDF as a `file` part, a text
/// file as a text part that names it.
fn user_content(content: &[Content]) -> UserContent<'_> {
    if content.iter().all(|block| block.as_text().is_some()) {
        return UserContent::Text(content_text(content));
    }
    let parts = content
        .iter()
        .map(|block| match block {
            Content::Text { text } => ContentPart::Text {
                text: Cow::Borrowed(text),
            },
            Content::Attachment(attachment) => attachment_part(attachment),
        })
        .collect();
    UserContent::Parts(parts)
}

fn attachment_part(attachment: &Attachment) -> ContentPart<'_> {
    match attachment.media_type {
        MediaType::Text => ContentPart::Text {
            text: Cow::Owned(file_text(attachment)),
        },
        MediaType::Pdf => ContentPart::File {
            file: FilePart {
                filename: file_name(attachment),
                file_data: data_url(attachment),
            },
        },
        MediaType::Png | MediaType::Jpeg | MediaType::Gif | MediaType::Webp => {
            ContentPart::ImageUrl {
                image_url: ImageUrl {
                    url: data_url(attachment),
                },
            }
        }
    }
}

/// The name a file part carries: the last part of the path it was given by.
pub(crate) fn file_name(attachment: &Attachment) -> &str {
    attachment
        .name
        .rsplit('/')
        .find(|part| !part.is_empty())
        .unwrap_or(&attachment.name)
}

/// A tool message's text: this API's tool messages hold text only, so a
/// text file goes in as text and an image or a PDF as a note that says it
/// was not shown (as Pi does for a model that takes no image).
fn tool_text(content: &[Content]) -> String {
    let mut text = String::new();
    for block in content {
        match block {
            Content::Text { text: block } => text.push_str(block),
            Content::Attachment(attachment) if attachment.media_type == MediaType::Text => {
                text.push_str(&file_text(attachment));
            }
            Content::Attachment(attachment) => text.push_str(&not_shown_note(attachment)),
        }
    }
    text
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
pub(crate) fn arguments_json(arguments: &Value) -> Cow<'_, str> {
    match arguments {
        Value::String(raw) => Cow::Borrowed(raw),
        other => Cow::Owned(other.to_string()),
    }
}

/// The text of a message's text blocks, joined (both OpenAI APIs take
/// one string for text alone).
pub(crate) fn content_text(content: &[Content]) -> String {
    content.iter().filter_map(Content::as_text).collect()
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

/// Whether OpenAI's `strict: true` can be used: every object schema lists
/// all its properties as required and forbids others. A schema that does
/// not is sent with `strict: false` (the server would refuse it otherwise);
/// leash validates the reply either way.
pub(crate) fn strict_compatible(schema: &Value) -> bool {
    match schema {
        Value::Object(map) => {
            let is_object = map.get("type") == Some(&Value::String("object".into()));
            if is_object {
                let closed = map.get("additionalProperties") == Some(&Value::Bool(false));
                let properties = map.get("properties").and_then(Value::as_object);
                let required: Vec<&str> = map
                    .get("required")
                    .and_then(Value::as_array)
                    .map(|r| r.iter().filter_map(Value::as_str).collect())
                    .unwrap_or_default();
                let all_required = properties
                    .is_none_or(|props| props.keys().all(|k| required.contains(&k.as_str())));
                if !closed || !all_required {
                    return false;
                }
            }
            map.values().all(strict_compatible)
        }
        Value::Array(items) => items.iter().all(strict_compatible),
        _ => true,
    }
}

#[cfg(test)]
#[path = "request_tests.rs"]
mod tests;

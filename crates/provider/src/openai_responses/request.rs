//! The Responses API request body: a request mapped onto typed wire
//! structs that borrow from the transcript. Stateless: `store: false`, the
//! whole context every turn, reasoning items back exactly as they came.

use std::borrow::Cow;

use serde::Serialize;
use serde_json::Value;
use serde_json::value::RawValue;

use crate::content::{data_url, file_text};
use crate::openai::request::{arguments_json, content_text, file_name};
use crate::{HttpSettings, Request};
use leash_protocol::{
    AssistantContent, AssistantMessage, Attachment, Content, MediaType, Message, ToolSpec,
};

/// What every request asks to get back: the encrypted reasoning, the only
/// way a reasoning model keeps its chain across turns without `store`.
const INCLUDE: [&str; 1] = ["reasoning.encrypted_content"];

/// A Responses request, borrowing from the transcript. Like Chat
/// Completions, OpenAI caches it by prefix on its own: everything that is
/// the same every turn comes first and `input` last, so turn N's body up to
/// the end of its last item is a byte prefix of turn N+1's
/// (`tests/suite/run/cost/caching.rs`).
#[derive(Debug, Serialize)]
pub(crate) struct ResponsesRequest<'a> {
    model: &'a str,
    /// `--prompt-cache-key`, else the request's session id: requests with
    /// the same key and prefix go to the same cache.
    #[serde(skip_serializing_if = "Option::is_none")]
    prompt_cache_key: Option<&'a str>,
    /// The system message; omitted when empty.
    #[serde(skip_serializing_if = "str::is_empty")]
    instructions: &'a str,
    /// Omitted when empty, as for Chat Completions.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    tools: Vec<FunctionTool<'a>>,
    stream: bool,
    /// Nothing is kept on the server: every turn sends the whole context.
    store: bool,
    include: [&'static str; 1],
    /// `--max-tokens` (reasoning tokens count against it).
    #[serde(skip_serializing_if = "Option::is_none")]
    max_output_tokens: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    temperature: Option<f32>,
    /// The request's thinking level as `{effort}`; omitted for `Off`.
    #[serde(skip_serializing_if = "Option::is_none")]
    reasoning: Option<ReasoningConfig>,
    /// `--output-schema`.
    #[serde(skip_serializing_if = "Option::is_none")]
    text: Option<TextConfig<'a>>,
    /// The whole context, last: it is the only part that grows.
    input: Vec<InputItem<'a>>,
}

/// `reasoning`: how much the model should reason.
#[derive(Debug, Serialize)]
struct ReasoningConfig {
    effort: &'static str,
}

/// `text` for `--output-schema`: `{format: {type: "json_schema", ...}}`.
#[derive(Debug, Serialize)]
struct TextConfig<'a> {
    format: JsonSchemaFormat<'a>,
}

#[derive(Debug, Serialize)]
struct JsonSchemaFormat<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    name: &'static str,
    schema: &'a Value,
    /// `true` only for schemas the API accepts in strict mode; leash
    /// validates the reply itself either way.
    strict: bool,
}

/// One item of `input`.
#[derive(Debug, Serialize)]
#[serde(untagged)]
enum InputItem<'a> {
    /// A user or assistant message with plain text content.
    Message {
        #[serde(rename = "type")]
        kind: &'static str,
        role: &'static str,
        content: Cow<'a, str>,
    },
    /// A user message with attachments: its content as input parts.
    MessageParts {
        #[serde(rename = "type")]
        kind: &'static str,
        role: &'static str,
        content: Vec<InputPart<'a>>,
    },
    /// A tool call the model made.
    FunctionCall {
        #[serde(rename = "type")]
        kind: &'static str,
        call_id: &'a str,
        name: &'a str,
        /// The argument JSON as a string, as the API wants it.
        arguments: Cow<'a, str>,
    },
    /// A tool's result.
    FunctionCallOutput {
        #[serde(rename = "type")]
        kind: &'static str,
        call_id: &'a str,
        output: ToolOutput<'a>,
    },
    /// A reasoning item exactly as the server sent it.
    Reasoning(&'a RawValue),
}

/// One input part: `input_text`, `input_image` (a data URL) or
/// `input_file` (a file name and a data URL).
#[derive(Debug, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
#[allow(clippy::enum_variant_names)] // the wire's own names
enum InputPart<'a> {
    InputText {
        text: Cow<'a, str>,
    },
    InputImage {
        image_url: String,
        /// The SDKs' types require it; `auto` is the API's default.
        detail: &'static str,
    },
    InputFile {
        filename: &'a str,
        file_data: String,
    },
}

/// A `function_call_output`'s `output`: a string when the result is text
/// alone (unchanged from before attachments), else input parts — the API
/// takes an image in a tool's output.
#[derive(Debug, Serialize)]
#[serde(untagged)]
enum ToolOutput<'a> {
    Text(String),
    Parts(Vec<InputPart<'a>>),
}

/// A tool: `{type: "function", name, description, parameters}`. `strict`
/// is sent as `false`: strict mode requires every property to be required
/// and `additionalProperties: false`, which leash's tool schemas (optional
/// arguments) are not; leash validates every call's arguments itself.
#[derive(Debug, Serialize)]
struct FunctionTool<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    name: &'a str,
    description: &'a str,
    parameters: &'a Value,
    strict: bool,
}

/// The body of one request: the system message as `instructions`, the
/// transcript as input items, the tools, streaming, stateless.
pub(crate) fn request_body<'a>(
    request: &Request<'a>,
    settings: &'a HttpSettings,
) -> ResponsesRequest<'a> {
    let mut input = Vec::with_capacity(request.messages.len() + 1);
    for message in request.messages {
        push_message(message, &mut input);
    }
    ResponsesRequest {
        model: request.model,
        prompt_cache_key: settings
            .prompt_cache_key
            .as_deref()
            .or(request.options.session_id),
        instructions: request.system,
        tools: request.tools.iter().map(function_tool).collect(),
        stream: true,
        store: false,
        include: INCLUDE,
        max_output_tokens: settings.max_tokens,
        temperature: settings.temperature,
        reasoning: request
            .options
            .thinking
            .openai_effort()
            .map(|effort| ReasoningConfig { effort }),
        text: settings.output_schema.as_ref().map(|schema| TextConfig {
            format: JsonSchemaFormat {
                kind: "json_schema",
                name: "leash_output",
                schema,
                strict: crate::openai::request::strict_compatible(schema),
            },
        }),
        input,
    }
}

/// One transcript message as input items: a user message is one item; a
/// tool result is a `function_call_output`; an assistant message is its
/// blocks in order — reasoning items, text, `function_call`s.
fn push_message<'a>(message: &'a Message, input: &mut Vec<InputItem<'a>>) {
    match message {
        Message::User(user) if all_text(&user.content) => input.push(InputItem::Message {
            kind: "message",
            role: "user",
            content: Cow::Owned(content_text(&user.content)),
        }),
        Message::User(user) => input.push(InputItem::MessageParts {
            kind: "message",
            role: "user",
            content: input_parts(&user.content),
        }),
        Message::Assistant(assistant) => push_assistant(assistant, input),
        Message::ToolResult(result) => input.push(InputItem::FunctionCallOutput {
            kind: "function_call_output",
            call_id: &result.tool_call_id,
            output: if all_text(&result.content) {
                ToolOutput::Text(result.text())
            } else {
                ToolOutput::Parts(input_parts(&result.content))
            },
        }),
        // Folded into `instructions` by the loop, or never sent (see `Request`).
        Message::System(_) | Message::Custom(_) => {}
    }
}

fn all_text(content: &[Content]) -> bool {
    content.iter().all(|block| block.as_text().is_some())
}

/// Content blocks as input parts: text as it is, an image as
/// `input_image`, a PDF as `input_file`, a text file as text naming it.
fn input_parts(content: &[Content]) -> Vec<InputPart<'_>> {
    content
        .iter()
        .map(|block| match block {
            Content::Text { text } => InputPart::InputText {
                text: Cow::Borrowed(text),
            },
            Content::Attachment(attachment) => attachment_part(attachment),
        })
        .collect()
}

fn attachment_part(attachment: &Attachment) -> InputPart<'_> {
    match attachment.media_type {
        MediaType::Text => InputPart::InputText {
            text: Cow::Owned(file_text(attachment)),
        },
        MediaType::Pdf => InputPart::InputFile {
            filename: file_name(attachment),
            file_data: data_url(attachment),
        },
        MediaType::Png | MediaType::Jpeg | MediaType::Gif | MediaType::Webp => {
            InputPart::InputImage {
                image_url: data_url(attachment),
                detail: "auto",
            }
        }
    }
}

fn push_assistant<'a>(message: &'a AssistantMessage, input: &mut Vec<InputItem<'a>>) {
    for block in &message.content {
        match block {
            AssistantContent::Text { text } if !text.is_empty() => {
                input.push(InputItem::Message {
                    kind: "message",
                    role: "assistant",
                    content: Cow::Borrowed(text),
                });
            }
            AssistantContent::Text { .. } => {}
            AssistantContent::Thinking { signature, .. } => {
                if let Some(item) = signature.as_deref().and_then(reasoning_item) {
                    input.push(InputItem::Reasoning(item));
                }
            }
            AssistantContent::ToolCall(call) => input.push(InputItem::FunctionCall {
                kind: "function_call",
                call_id: &call.id,
                name: &call.name,
                arguments: arguments_json(&call.arguments),
            }),
        }
    }
}

/// The reasoning item a thinking block keeps as its signature (see the
/// decoder): a JSON object of `type: "reasoning"`. A thinking block of any
/// other kind (summary text whose item had no encrypted content, another
/// provider's signature) has no place in this API and is left out.
fn reasoning_item(signature: &str) -> Option<&RawValue> {
    #[derive(serde::Deserialize)]
    struct Kind<'a> {
        #[serde(rename = "type", borrow)]
        kind: Cow<'a, str>,
    }
    let raw: &RawValue = serde_json::from_str(signature).ok()?;
    let kind: Kind<'_> = serde_json::from_str(raw.get()).ok()?;
    (kind.kind == "reasoning").then_some(raw)
}

fn function_tool(tool: &ToolSpec) -> FunctionTool<'_> {
    FunctionTool {
        kind: "function",
        name: &tool.name,
        description: &tool.description,
        parameters: &tool.parameters,
        strict: false,
    }
}

#[cfg(test)]
#[path = "request_tests.rs"]
mod tests;

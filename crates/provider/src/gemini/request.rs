//! The Gemini `generateContent` request body: the conversation as
//! `contents` (`user` and `model` turns of parts), the system message as
//! `systemInstruction`, tools as one `functionDeclarations` list and the
//! options in `generationConfig`. Typed structs that borrow from the
//! transcript; nothing in the body changes from turn to turn but the new
//! messages, so Gemini's implicit cache sees one growing prefix.

use std::borrow::Cow;

use serde::Serialize;
use serde_json::Value;

use super::decode::MADE_UP;
use crate::content::{base64, file_text};
use crate::{HttpSettings, Request, ThinkingLevel};
use leash_protocol::{AssistantContent, Attachment, Content, MediaType, Message, ToolSpec};

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct GenerateRequest<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    system_instruction: Option<SystemInstruction<'a>>,
    /// Omitted when empty: the API refuses an empty declaration list.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    tools: Vec<Tools<'a>>,
    #[serde(skip_serializing_if = "GenerationConfig::is_empty")]
    generation_config: GenerationConfig<'a>,
    contents: Vec<Turn<'a>>,
}

#[derive(Debug, Serialize)]
struct SystemInstruction<'a> {
    parts: [TextPart<'a>; 1],
}

#[derive(Debug, Serialize)]
struct TextPart<'a> {
    text: &'a str,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct Tools<'a> {
    function_declarations: Vec<FunctionDeclaration<'a>>,
}

/// A tool, its parameters as the JSON Schema the tool declares
/// (`parametersJsonSchema` takes JSON Schema as it is; `parameters`
/// would want Google's OpenAPI subset).
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct FunctionDeclaration<'a> {
    name: &'a str,
    description: &'a str,
    parameters_json_schema: &'a Value,
}

#[derive(Debug, Default, Serialize)]
#[serde(rename_all = "camelCase")]
struct GenerationConfig<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    max_output_tokens: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    temperature: Option<f32>,
    /// `application/json` with `--output-schema`.
    #[serde(skip_serializing_if = "Option::is_none")]
    response_mime_type: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    response_json_schema: Option<&'a Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    thinking_config: Option<ThinkingConfig>,
}

impl GenerationConfig<'_> {
    fn is_empty(&self) -> bool {
        self.max_output_tokens.is_none()
            && self.temperature.is_none()
            && self.response_mime_type.is_none()
            && self.thinking_config.is_none()
    }
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct ThinkingConfig {
    thinking_budget: u32,
    include_thoughts: bool,
}

/// One turn: `user` (the prompt, tool results) or `model`.
#[derive(Debug, Serialize)]
struct Turn<'a> {
    role: &'static str,
    parts: Vec<Part<'a>>,
}

/// One part of a turn; a model part may carry the `thoughtSignature` it
/// came with.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct Part<'a> {
    #[serde(flatten)]
    data: PartData<'a>,
    #[serde(skip_serializing_if = "Option::is_none")]
    thought_signature: Option<&'a str>,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
enum PartData<'a> {
    Text(Cow<'a, str>),
    InlineData(InlineData),
    FunctionCall(FunctionCall<'a>),
    FunctionResponse(FunctionResponse<'a>),
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct InlineData {
    mime_type: &'static str,
    data: String,
}

#[derive(Debug, Serialize)]
struct FunctionCall<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    id: Option<&'a str>,
    name: &'a str,
    args: &'a Value,
}

/// A tool's result: `{"output": text}`, or `{"error": text}` for a failed
/// call, as Google's function-calling guide shapes it.
#[derive(Debug, Serialize)]
struct FunctionResponse<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    id: Option<&'a str>,
    name: &'a str,
    response: Value,
}

/// The body of one request.
pub(super) fn request_body<'a>(
    request: &Request<'a>,
    settings: &'a HttpSettings,
) -> GenerateRequest<'a> {
    let declarations: Vec<_> = request.tools.iter().map(declaration).collect();
    let thinking = budget(request.options.thinking).map(|thinking_budget| ThinkingConfig {
        thinking_budget,
        include_thoughts: true,
    });
    GenerateRequest {
        system_instruction: (!request.system.is_empty()).then_some(SystemInstruction {
            parts: [TextPart {
                text: request.system,
            }],
        }),
        tools: match declarations.is_empty() {
            true => Vec::new(),
            false => vec![Tools {
                function_declarations: declarations,
            }],
        },
        generation_config: GenerationConfig {
            max_output_tokens: settings.max_tokens,
            temperature: settings.temperature,
            response_mime_type: settings.output_schema.as_ref().map(|_| "application/json"),
            response_json_schema: settings.output_schema.as_ref(),
            thinking_config: thinking,
        },
        contents: turns(request.messages),
    }
}

/// `--reasoning-effort` as `thinkingBudget` tokens: from 512 for
/// `minimal` to 24576 (the most Gemini 2.5 Flash takes) for `xhigh`.
pub(super) fn budget(level: ThinkingLevel) -> Option<u32> {
    match level {
        ThinkingLevel::Off => None,
        ThinkingLevel::Minimal => Some(512),
        ThinkingLevel::Low => Some(2048),
        ThinkingLevel::Medium => Some(8192),
        ThinkingLevel::High => Some(16384),
        ThinkingLevel::XHigh => Some(24576),
    }
}

fn declaration(tool: &ToolSpec) -> FunctionDeclaration<'_> {
    FunctionDeclaration {
        name: &tool.name,
        description: &tool.description,
        parameters_json_schema: &tool.parameters,
    }
}

/// The conversation as turns; parts of the same role in a row go into one
/// turn (the results of one batch of calls answer it together).
fn turns(messages: &[Message]) -> Vec<Turn<'_>> {
    let mut out: Vec<Turn<'_>> = Vec::with_capacity(messages.len());
    for message in messages {
        let (role, parts) = match message {
            Message::User(user) => ("user", user.content.iter().map(user_part).collect()),
            Message::Assistant(assistant) => ("model", model_parts(&assistant.content)),
            Message::ToolResult(result) => ("user", result_parts(result)),
            _ => continue,
        };
        if parts.is_empty() {
            continue;
        }
        match out.last_mut() {
            Some(last) if last.role == role => last.parts.extend(parts),
            _ => out.push(Turn { role, parts }),
        }
    }
    out
}

fn plain(data: PartData<'_>) -> Part<'_> {
    Part {
        data,
        thought_signature: None,
    }
}

fn user_part(content: &Content) -> Part<'_> {
    match content {
        Content::Text { text } => plain(PartData::Text(Cow::Borrowed(text))),
        Content::Attachment(attachment) => plain(attachment_part(attachment)),
    }
}

fn attachment_part(attachment: &Attachment) -> PartData<'_> {
    match attachment.media_type {
        MediaType::Text => PartData::Text(Cow::Owned(file_text(attachment))),
        kind => PartData::InlineData(InlineData {
            mime_type: kind.mime(),
            data: base64(attachment),
        }),
    }
}

/// The model's turn: text and calls in order, each with the signature the
/// thinking block before it holds; thought summaries themselves are not
/// sent back (the signature carries the model's reasoning).
fn model_parts(content: &[AssistantContent]) -> Vec<Part<'_>> {
    let mut parts = Vec::new();
    let mut signature: Option<&str> = None;
    for block in content {
        let data = match block {
            AssistantContent::Thinking {
                signature: Some(sig),
                ..
            } => {
                signature = Some(sig);
                continue;
            }
            AssistantContent::Thinking { .. } => continue,
            AssistantContent::Text { text } if text.is_empty() => continue,
            AssistantContent::Text { text } => PartData::Text(Cow::Borrowed(text)),
            AssistantContent::ToolCall(call) => PartData::FunctionCall(FunctionCall {
                id: (!call.id.starts_with(MADE_UP)).then_some(call.id.as_str()),
                name: &call.name,
                args: &call.arguments,
            }),
        };
        parts.push(Part {
            data,
            thought_signature: signature.take(),
        });
    }
    parts
}

/// A tool's result: its text as the `functionResponse`, then each file
/// it returned (an image `read_file` read) as a part of its own right
/// after it, in the same turn: `functionResponse` holds JSON only.
fn result_parts(result: &leash_protocol::ToolResultMessage) -> Vec<Part<'_>> {
    let text = result.text();
    let response = match result.is_error {
        true => serde_json::json!({ "error": text }),
        false => serde_json::json!({ "output": text }),
    };
    let answer = plain(PartData::FunctionResponse(FunctionResponse {
        id: (!result.tool_call_id.starts_with(MADE_UP)).then_some(result.tool_call_id.as_str()),
        name: &result.tool_name,
        response,
    }));
    let files = result.content.iter().filter_map(|content| match content {
        Content::Attachment(attachment) => Some(plain(attachment_part(attachment))),
        Content::Text { .. } => None,
    });
    std::iter::once(answer).chain(files).collect()
}

#[cfg(test)]
#[path = "request_tests.rs"]
mod tests;

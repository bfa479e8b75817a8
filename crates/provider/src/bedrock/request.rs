//! The ConverseStream request body: the conversation as `messages` of
//! content blocks (`text`, `image`, `document`, `toolUse`, `toolResult`,
//! `reasoningContent`), the system message as `system`, tools as
//! `toolConfig`, the limits in `inferenceConfig`, and cache points where
//! the model takes them. The model is in the URL, not the body.

use std::borrow::Cow;

use serde::Serialize;
use serde_json::{Value, json};

use crate::content::{base64, file_text};
use crate::{HttpSettings, Request};
use leash_protocol::{AssistantContent, Attachment, Content, MediaType, Message, ToolSpec};

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct ConverseRequest<'a> {
    #[serde(skip_serializing_if = "Vec::is_empty")]
    system: Vec<Block<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    tool_config: Option<ToolConfig<'a>>,
    #[serde(skip_serializing_if = "InferenceConfig::is_empty")]
    inference_config: InferenceConfig,
    #[serde(skip_serializing_if = "Option::is_none")]
    additional_model_request_fields: Option<Value>,
    messages: Vec<Turn<'a>>,
}

#[derive(Debug, Default, Serialize)]
#[serde(rename_all = "camelCase")]
struct InferenceConfig {
    #[serde(skip_serializing_if = "Option::is_none")]
    max_tokens: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    temperature: Option<f32>,
}

impl InferenceConfig {
    fn is_empty(&self) -> bool {
        self.max_tokens.is_none() && self.temperature.is_none()
    }
}

#[derive(Debug, Serialize)]
struct ToolConfig<'a> {
    tools: Vec<Block<'a>>,
}

#[derive(Debug, Serialize)]
struct Turn<'a> {
    role: &'static str,
    content: Vec<Block<'a>>,
}

/// One content block (a system block, a tool, a message's block): each
/// is an object with one key naming its kind.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
enum Block<'a> {
    Text(Cow<'a, str>),
    Image(Value),
    Document(Value),
    ToolUse(Value),
    ToolResult(Value),
    ReasoningContent(Value),
    ToolSpec(Value),
    CachePoint(Value),
}

fn cache_point<'a>() -> Block<'a> {
    Block::CachePoint(json!({"type": "default"}))
}

/// Whether the model takes Converse's cache points (Bedrock's "Prompt
/// caching" lists the Claude models from 3.5 Haiku and 3.7 Sonnet on, and
/// Amazon Nova); another model refuses a request that holds one.
pub(super) fn caches(model: &str) -> bool {
    let model = model.to_ascii_lowercase();
    let old_claude = [
        "claude-v2",
        "claude-instant",
        "claude-3-haiku",
        "claude-3-sonnet",
        "claude-3-opus",
        "claude-3-5-sonnet",
    ];
    (model.contains("anthropic.claude") && !old_claude.iter().any(|old| model.contains(old)))
        || model.contains("amazon.nova")
}

/// The body of one request for `model`.
pub(super) fn request_body<'a>(
    request: &Request<'a>,
    settings: &'a HttpSettings,
) -> ConverseRequest<'a> {
    let cache = settings.cache && caches(request.model);
    let mut system = Vec::new();
    if !request.system.is_empty() {
        system.push(Block::Text(Cow::Borrowed(request.system)));
    }
    if let Some(schema) = &settings.output_schema {
        // Converse has no structured output of its own: the schema is
        // asked for in words, and leash checks the reply against it.
        system.push(Block::Text(Cow::Owned(format!(
            "Answer with one JSON value only, no prose and no code fence, valid against this JSON Schema:\n{schema}"
        ))));
    }
    if cache && !system.is_empty() {
        system.push(cache_point());
    }
    let mut tools: Vec<Block<'a>> = request.tools.iter().map(tool_spec).collect();
    if cache && !tools.is_empty() {
        tools.push(cache_point());
    }
    let thinking = request.options.thinking.anthropic_budget().filter(|_| {
        request
            .model
            .to_ascii_lowercase()
            .contains("anthropic.claude")
    });
    let max_tokens = match thinking {
        // The budget is part of maxTokens, which must exceed it.
        Some(budget) => Some(settings.max_tokens.unwrap_or(8192).saturating_add(budget)),
        None => settings.max_tokens,
    };
    let mut messages = turns(request.messages);
    if cache
        && let Some(last) = messages.last_mut()
        && !last.content.is_empty()
    {
        last.content.push(cache_point());
    }
    ConverseRequest {
        system,
        tool_config: (!tools.is_empty()).then_some(ToolConfig { tools }),
        inference_config: InferenceConfig {
            max_tokens,
            // Claude takes no temperature with thinking on.
            temperature: settings.temperature.filter(|_| thinking.is_none()),
        },
        additional_model_request_fields: thinking
            .map(|budget| json!({"thinking": {"type": "enabled", "budget_tokens": budget}})),
        messages,
    }
}

fn tool_spec(tool: &ToolSpec) -> Block<'_> {
    Block::ToolSpec(json!({
        "name": tool.name,
        "description": tool.description,
        "inputSchema": {"json": tool.parameters},
    }))
}

/// The conversation as turns; blocks of one role in a row share a turn
/// (Converse wants the results of a batch in the message after its calls).
fn turns(messages: &[Message]) -> Vec<Turn<'_>> {
    let mut out: Vec<Turn<'_>> = Vec::with_capacity(messages.len());
    for message in messages {
        let (role, content): (&'static str, Vec<Block<'_>>) = match message {
            Message::User(user) => ("user", user.content.iter().map(user_block).collect()),
            Message::Assistant(assistant) => (
                "assistant",
                assistant
                    .content
                    .iter()
                    .filter_map(assistant_block)
                    .collect(),
            ),
            Message::ToolResult(result) => {
                let mut content: Vec<Value> = Vec::new();
                for part in &result.content {
                    match part {
                        Content::Text { text } => content.push(json!({"text": text})),
                        Content::Attachment(attachment) => {
                            content.push(attachment_json(attachment));
                        }
                    }
                }
                if content.is_empty() {
                    content.push(json!({"text": ""}));
                }
                let status = if result.is_error { "error" } else { "success" };
                (
                    "user",
                    vec![Block::ToolResult(json!({
                        "toolUseId": result.tool_call_id,
                        "content": content,
                        "status": status,
                    }))],
                )
            }
            _ => continue,
        };
        if content.is_empty() {
            continue;
        }
        match out.last_mut() {
            Some(last) if last.role == role => last.content.extend(content),
            _ => out.push(Turn { role, content }),
        }
    }
    out
}

fn user_block(content: &Content) -> Block<'_> {
    match content {
        Content::Text { text } => Block::Text(Cow::Borrowed(text)),
        Content::Attachment(attachment) => match attachment.media_type {
            MediaType::Text => Block::Text(Cow::Owned(file_text(attachment))),
            MediaType::Pdf => Block::Document(document(attachment)),
            _ => Block::Image(image(attachment)),
        },
    }
}

/// An attachment inside a tool result: `{"image": …}`, `{"document": …}`
/// or `{"text": …}`.
fn attachment_json(attachment: &Attachment) -> Value {
    match attachment.media_type {
        MediaType::Text => json!({"text": file_text(attachment)}),
        MediaType::Pdf => json!({"document": document(attachment)}),
        _ => json!({"image": image(attachment)}),
    }
}

fn image(attachment: &Attachment) -> Value {
    let format = match attachment.media_type {
        MediaType::Jpeg => "jpeg",
        MediaType::Gif => "gif",
        MediaType::Webp => "webp",
        _ => "png",
    };
    json!({"format": format, "source": {"bytes": base64(attachment)}})
}

/// A PDF: Converse wants a name of letters, digits, spaces, `-`, `()` and
/// `[]` only, so the file's own name is not it.
fn document(attachment: &Attachment) -> Value {
    json!({"format": "pdf", "name": "attachment", "source": {"bytes": base64(attachment)}})
}

/// One assistant block, or `None` for what Converse must not get back:
/// empty text, thinking without a signature.
fn assistant_block(block: &AssistantContent) -> Option<Block<'_>> {
    match block {
        AssistantContent::Text { text } if text.is_empty() => None,
        AssistantContent::Text { text } => Some(Block::Text(Cow::Borrowed(text))),
        AssistantContent::Thinking {
            signature: Some(signature),
            redacted: true,
            ..
        } => Some(Block::ReasoningContent(
            json!({"redactedContent": signature}),
        )),
        AssistantContent::Thinking {
            thinking,
            signature: Some(signature),
            ..
        } => Some(Block::ReasoningContent(json!({
            "reasoningText": {"text": thinking, "signature": signature}
        }))),
        AssistantContent::Thinking { .. } => None,
        AssistantContent::ToolCall(call) => Some(Block::ToolUse(json!({
            "toolUseId": call.id,
            "name": call.name,
            "input": call.arguments,
        }))),
    }
}

#[cfg(test)]
#[path = "request_tests.rs"]
mod tests;

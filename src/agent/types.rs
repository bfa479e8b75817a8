//! The shapes the loop works with: messages (SPEC 1.1), the events a run
//! emits, and the hook decisions. Everything that leaves the process as JSON
//! is serialized from these types in camelCase, the field names of Pi's
//! agent runtime, so readers written for Pi's events read leash's too.
//!
//! Nothing here does I/O or keeps state between runs.

use std::time::{SystemTime, UNIX_EPOCH};

use futures::future::BoxFuture;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Milliseconds since the Unix epoch: the `timestamp` of every message.
pub fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}

/// One block of user-visible content: what users send and tools return.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(tag = "type", rename_all = "camelCase")]
pub enum Content {
    /// Plain text.
    Text {
        /// The text itself.
        text: String,
    },
}

impl Content {
    /// A text block.
    pub fn text(text: impl Into<String>) -> Self {
        Content::Text { text: text.into() }
    }
}

/// A tool call the model asked for, as one block of an assistant message.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ToolCall {
    /// The provider's id for this call; the tool result answers it by id.
    pub id: String,
    /// Which tool the model wants.
    pub name: String,
    /// The arguments as the model sent them. Normally an object; when the
    /// model's JSON did not parse this holds the raw text as a string so the
    /// call fails validation instead of vanishing.
    pub arguments: Value,
}

/// One block of an assistant message.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(tag = "type", rename_all = "camelCase")]
pub enum AssistantContent {
    /// Reply text.
    Text {
        /// The text itself.
        text: String,
    },
    /// The model's reasoning, kept so providers that require it get it back.
    Thinking {
        /// The reasoning text.
        thinking: String,
        /// An opaque signature some providers attach and require verbatim.
        /// For a redacted block: the encrypted reasoning itself.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        signature: Option<String>,
        /// The provider encrypted this reasoning (Anthropic
        /// `redacted_thinking`): `thinking` is a placeholder and `signature`
        /// holds the data to send back (Pi's `redacted`).
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        redacted: bool,
    },
    /// A request to run a tool.
    ToolCall(ToolCall),
}

/// Why an assistant message ended (SPEC 1.1).
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default, schemars::JsonSchema,
)]
#[serde(rename_all = "camelCase")]
pub enum StopReason {
    /// A complete answer.
    #[default]
    Stop,
    /// Cut off by the output token limit.
    Length,
    /// The model wants tools to run.
    ToolUse,
    /// The provider or the stream failed; see `errorMessage`.
    Error,
    /// The run was aborted while this message streamed.
    Aborted,
}

impl StopReason {
    /// The spelling used on the wire and in messages to people.
    pub fn as_str(self) -> &'static str {
        match self {
            StopReason::Stop => "stop",
            StopReason::Length => "length",
            StopReason::ToolUse => "toolUse",
            StopReason::Error => "error",
            StopReason::Aborted => "aborted",
        }
    }
}

/// Token counts as the provider reported them.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "camelCase")]
pub struct Usage {
    /// Prompt tokens not served from a cache.
    pub input: u64,
    /// Generated tokens.
    pub output: u64,
    /// Prompt tokens read from the provider's cache.
    pub cache_read: u64,
    /// Prompt tokens written to the provider's cache.
    pub cache_write: u64,
    /// The sum of the four above.
    pub total_tokens: u64,
}

impl Usage {
    /// Adds another message's usage to this one (for run totals).
    pub fn add(&mut self, other: &Usage) {
        // Saturating: the counts come from a server, which may send any number.
        self.input = self.input.saturating_add(other.input);
        self.output = self.output.saturating_add(other.output);
        self.cache_read = self.cache_read.saturating_add(other.cache_read);
        self.cache_write = self.cache_write.saturating_add(other.cache_write);
        self.total_tokens = self.total_tokens.saturating_add(other.total_tokens);
    }

    /// Recomputes `total_tokens` from the parts.
    pub fn with_total(mut self) -> Self {
        self.total_tokens = self
            .input
            .saturating_add(self.output)
            .saturating_add(self.cache_read)
            .saturating_add(self.cache_write);
        self
    }
}

/// A message from the user (the prompt, steering, follow-ups).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct UserMessage {
    /// What the user said.
    pub content: Vec<Content>,
    /// When the message was made.
    pub timestamp: u64,
}

/// A message from the model.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AssistantMessage {
    /// Text, thinking and tool-call blocks in the order the model produced them.
    pub content: Vec<AssistantContent>,
    /// Which provider produced it (`openai`, `anthropic`, `faux`).
    pub provider: String,
    /// Which model produced it.
    pub model: String,
    /// Tokens this request used.
    pub usage: Usage,
    /// Why the message ended.
    pub stop_reason: StopReason,
    /// What went wrong, for `error` and `aborted`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error_message: Option<String>,
    /// When the message was made.
    pub timestamp: u64,
}

impl AssistantMessage {
    /// The tool calls of this message, in the model's order.
    pub fn tool_calls(&self) -> impl Iterator<Item = &ToolCall> {
        self.content.iter().filter_map(|block| match block {
            AssistantContent::ToolCall(call) => Some(call),
            _ => None,
        })
    }

    /// Whether the model asked for any tool.
    pub fn has_tool_calls(&self) -> bool {
        self.tool_calls().next().is_some()
    }

    /// The reply text: every text block, joined.
    pub fn text(&self) -> String {
        let mut out = String::new();
        for block in &self.content {
            if let AssistantContent::Text { text } = block {
                out.push_str(text);
            }
        }
        out
    }
}

/// The answer to one tool call, as the model will see it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ToolResultMessage {
    /// Which call this answers (a batch may call one tool several times).
    pub tool_call_id: String,
    /// The tool's name, for people reading logs.
    pub tool_name: String,
    /// What the model sees; never null, an empty list when the tool gave none.
    pub content: Vec<Content>,
    /// Program-side data, never sent to the model.
    #[serde(default, skip_serializing_if = "Value::is_null")]
    pub details: Value,
    /// Whether the call failed (blocked, unknown, invalid, or the tool erred).
    pub is_error: bool,
    /// How long `execute` ran; absent when it never ran.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub duration_ms: Option<u64>,
    /// When the message was made.
    pub timestamp: u64,
}

impl ToolResultMessage {
    /// The text of the result's content, joined.
    pub fn text(&self) -> String {
        let mut out = String::new();
        for Content::Text { text } in &self.content {
            out.push_str(text);
        }
        out
    }
}

/// Any message of a run's transcript.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(tag = "role", rename_all = "camelCase")]
pub enum Message {
    /// From the user.
    User(UserMessage),
    /// From the model.
    Assistant(AssistantMessage),
    /// From a tool.
    ToolResult(ToolResultMessage),
}

impl Message {
    /// A user message holding one text block.
    pub fn user_text(text: impl Into<String>) -> Self {
        Message::User(UserMessage {
            content: vec![Content::text(text)],
            timestamp: now_ms(),
        })
    }

    /// The role's name as it appears on the wire.
    pub fn role(&self) -> &'static str {
        match self {
            Message::User(_) => "user",
            Message::Assistant(_) => "assistant",
            Message::ToolResult(_) => "toolResult",
        }
    }
}

/// What a tool returns when it runs (SPEC 1.3).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ToolOutput {
    /// What the model sees.
    pub content: Vec<Content>,
    /// Program-side data, never sent to the model.
    pub details: Value,
    /// Ask for no automatic request after this batch; honoured only when
    /// every result of the batch asks.
    pub terminate: bool,
}

impl ToolOutput {
    /// An output holding one text block.
    pub fn text(text: impl Into<String>) -> Self {
        ToolOutput {
            content: vec![Content::text(text)],
            ..ToolOutput::default()
        }
    }
}

/// One streamed change to the assistant message being built, carried by
/// `message_update`. Only the delta travels: the partial message is not
/// repeated on every event.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum AssistantMessageEvent {
    /// A text block opened at `content_index`.
    TextStart {
        /// Index of the block in the message's content.
        #[serde(rename = "contentIndex")]
        content_index: usize,
    },
    /// Text appended to the block at `content_index`.
    TextDelta {
        /// Index of the block in the message's content.
        #[serde(rename = "contentIndex")]
        content_index: usize,
        /// The new text.
        delta: String,
    },
    /// The text block at `content_index` is complete.
    TextEnd {
        /// Index of the block in the message's content.
        #[serde(rename = "contentIndex")]
        content_index: usize,
    },
    /// A thinking block opened.
    ThinkingStart {
        /// Index of the block in the message's content.
        #[serde(rename = "contentIndex")]
        content_index: usize,
    },
    /// Reasoning text appended.
    ThinkingDelta {
        /// Index of the block in the message's content.
        #[serde(rename = "contentIndex")]
        content_index: usize,
        /// The new text.
        delta: String,
    },
    /// The thinking block is complete.
    ThinkingEnd {
        /// Index of the block in the message's content.
        #[serde(rename = "contentIndex")]
        content_index: usize,
    },
    /// A tool call opened.
    #[serde(rename = "toolcall_start")]
    ToolCallStart {
        /// Index of the block in the message's content.
        #[serde(rename = "contentIndex")]
        content_index: usize,
        /// The call's id.
        id: String,
        /// The tool's name.
        #[serde(rename = "toolName")]
        tool_name: String,
    },
    /// A fragment of the call's argument JSON.
    #[serde(rename = "toolcall_delta")]
    ToolCallDelta {
        /// Index of the block in the message's content.
        #[serde(rename = "contentIndex")]
        content_index: usize,
        /// The fragment.
        delta: String,
    },
    /// The call's arguments are complete.
    #[serde(rename = "toolcall_end")]
    ToolCallEnd {
        /// Index of the block in the message's content.
        #[serde(rename = "contentIndex")]
        content_index: usize,
    },
}

/// Everything a run reports, in order (SPEC 1.2, 2.2).
#[derive(Debug, Clone, PartialEq)]
pub enum AgentEvent {
    /// The run began.
    AgentStart,
    /// A turn began.
    TurnStart,
    /// A message began (prompt and queued messages, or a streaming reply).
    MessageStart {
        /// The message as it is now (empty for a reply that starts streaming).
        message: Message,
    },
    /// A streamed reply changed.
    MessageUpdate {
        /// The change.
        event: AssistantMessageEvent,
    },
    /// A message is final and part of the context.
    MessageEnd {
        /// The final message.
        message: Message,
    },
    /// A tool call entered the batch (also the ones that will never run).
    ToolExecutionStart {
        /// The call's id.
        tool_call_id: String,
        /// The tool's name.
        tool_name: String,
        /// The arguments as the model sent them.
        args: Value,
    },
    /// A running tool reported progress.
    ToolExecutionUpdate {
        /// The call's id.
        tool_call_id: String,
        /// The tool's name.
        tool_name: String,
        /// Whatever the tool reported.
        partial: Value,
    },
    /// A tool call is final.
    ToolExecutionEnd {
        /// The call's id.
        tool_call_id: String,
        /// The tool's name.
        tool_name: String,
        /// The result as the model will see it.
        result: ToolResultMessage,
        /// Whether it failed.
        is_error: bool,
        /// How long `execute` ran; absent when it never ran.
        duration_ms: Option<u64>,
    },
    /// A turn is over.
    TurnEnd {
        /// The turn's assistant message.
        message: AssistantMessage,
        /// The turn's tool results, in the model's order.
        tool_results: Vec<ToolResultMessage>,
    },
    /// The provider is about to retry a failed request.
    Retry {
        /// 1 for the first retry.
        attempt: u32,
        /// How long leash waits before it.
        delay_ms: u64,
        /// Why the previous attempt failed.
        reason: String,
    },
    /// The run is over.
    AgentEnd {
        /// Every message this run added.
        messages: Vec<Message>,
    },
}

/// A `before_tool_call` verdict that stops a call from running.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Block {
    /// What the model is told; `None` uses "Tool execution was blocked".
    pub reason: Option<String>,
    /// Mark the error result as wanting the batch to terminate.
    pub terminate: bool,
}

/// Field-by-field replacements `after_tool_call` may make to a result.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ResultOverride {
    /// Replaces the content.
    pub content: Option<Vec<Content>>,
    /// Replaces the details.
    pub details: Option<Value>,
    /// Replaces the error flag.
    pub is_error: Option<bool>,
    /// Replaces the terminate hint.
    pub terminate: Option<bool>,
}

/// What `finish_turn` decides about the schedule (SPEC 1.2).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TurnDecision {
    /// Stop the run right after `turn_end`: no queue polling, no request.
    End,
    /// Guarantee one more provider request.
    Continue,
}

/// Where the loop sends its events. Called from one task at a time, in
/// event order; the loop awaits each event before it goes on, as Pi awaits
/// its `emit` (so a sink may run async listeners). Every plain
/// `Fn(AgentEvent)` closure is a sink.
pub trait EventSink: Send + Sync {
    /// Delivers one event; the loop continues once the future is done.
    fn emit(&self, event: AgentEvent) -> BoxFuture<'_, ()>;
}

impl<F> EventSink for F
where
    F: Fn(AgentEvent) + Send + Sync,
{
    fn emit(&self, event: AgentEvent) -> BoxFuture<'_, ()> {
        self(event);
        Box::pin(std::future::ready(()))
    }
}

/// The event sink as the loop borrows it.
pub type EmitFn<'a> = dyn EventSink + 'a;

//! The shared vocabulary (ARCHITECTURE.md §1.1, §1.3): the messages of a transcript and
//! their content blocks, tool calls and what a tool returns, token usage,
//! stop reasons, a tool as the model is told about it, and the decoded
//! steps of a streamed reply; the two seams the loop calls through
//! ([`provider::Provider`], [`tool::Tool`]); and the API key with its
//! redaction ([`secret`]). Every other crate of leash speaks it; it depends
//! on none of them.
//!
//! Everything that leaves the process as JSON is serialized from these types
//! in camelCase, the field names of Pi's agent runtime, so readers written
//! for Pi's events read leash's too. Nothing here does I/O or keeps state.

#![warn(missing_docs)]

use std::time::{SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};
use serde_json::Value;

mod attachment;
pub mod provider;
pub mod secret;
mod sections;
pub mod tool;
pub mod trace_context;
mod transcript_roles;
mod usage;

pub use attachment::{Attachment, MediaType};
pub use sections::Sections;
pub use transcript_roles::{
    CustomMessage, RESERVED_ROLES, ReservedRole, SystemMessage, ToolReference, ToolSpec,
};
pub use usage::{Usage, UsageCost};

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
    /// A file given to the model whole (`--attach`, or an image
    /// `read_file` read): an image, a PDF or a text file, each wire in its
    /// own form. Written out (transcript, events) by its record only.
    Attachment(Attachment),
}

impl Content {
    /// A text block.
    pub fn text(text: impl Into<String>) -> Self {
        Content::Text { text: text.into() }
    }

    /// The text of a text block; `None` for an attachment.
    pub fn as_text(&self) -> Option<&str> {
        match self {
            Content::Text { text } => Some(text),
            Content::Attachment(_) => None,
        }
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

/// Why an assistant message ended (ARCHITECTURE.md §1.1).
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

/// A message from the user (the prompt with its attachments, steering,
/// follow-ups).
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
    /// The tokens (and cost) the tool itself spent — a sub-agent, a model
    /// call of its own — as the tool reported it in [`ToolOutput::usage`]
    /// or `after_tool_call` replaced it; never sent to the model. Absent,
    /// and not written, when neither gave one:
    ///
    /// ```
    /// use leash_protocol::{Content, ToolResultMessage, Usage};
    ///
    /// let mut result = ToolResultMessage {
    ///     tool_call_id: "call_1".into(),
    ///     tool_name: "delegate".into(),
    ///     content: vec![Content::text("done")],
    ///     details: serde_json::Value::Null,
    ///     is_error: false,
    ///     duration_ms: Some(12),
    ///     usage: None,
    ///     timestamp: 0,
    /// };
    /// assert!(!serde_json::to_string(&result)?.contains("usage"));
    /// result.usage = Some(Usage { input: 10, output: 5, ..Usage::default() }.with_total());
    /// assert!(serde_json::to_string(&result)?.contains(r#""usage":{"input":10"#));
    /// # Ok::<(), serde_json::Error>(())
    /// ```
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<Usage>,
    /// When the message was made.
    pub timestamp: u64,
}

impl ToolResultMessage {
    /// The text of the result's content, joined.
    pub fn text(&self) -> String {
        let mut out = String::new();
        for text in self.content.iter().filter_map(Content::as_text) {
            out.push_str(text);
        }
        out
    }
}

/// Any message of a run's transcript. Read back by its `role`: a role
/// leash does not know is a custom one ([`CustomMessage`]).
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
#[serde(tag = "role", rename_all = "camelCase")]
pub enum Message {
    /// From the user.
    User(UserMessage),
    /// From the model.
    Assistant(AssistantMessage),
    /// From a tool.
    ToolResult(ToolResultMessage),
    /// A change to the system prompt or the declared tools (never sent as
    /// a message: the loop folds it into the request's system prompt).
    System(SystemMessage),
    /// A message of the host's own role (never sent unless
    /// `convert_to_llm` turns it into one the model reads).
    #[serde(untagged)]
    Custom(CustomMessage),
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
    pub fn role(&self) -> &str {
        match self {
            Message::User(_) => "user",
            Message::Assistant(_) => "assistant",
            Message::ToolResult(_) => "toolResult",
            Message::System(_) => "system",
            Message::Custom(custom) => custom.role(),
        }
    }

    /// Whether a wire carries it as a message of the conversation (user,
    /// assistant, tool result); system and custom messages it does not.
    pub fn is_conversation(&self) -> bool {
        matches!(
            self,
            Message::User(_) | Message::Assistant(_) | Message::ToolResult(_)
        )
    }
}

/// What a tool returns when it runs (ARCHITECTURE.md §1.3).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ToolOutput {
    /// What the model sees.
    pub content: Vec<Content>,
    /// Program-side data, never sent to the model.
    pub details: Value,
    /// Ask for no automatic request after this batch; honoured only when
    /// every result of the batch asks.
    pub terminate: bool,
    /// Tokens the tool itself spent (a sub-agent, a model call of its
    /// own), shown to `after_tool_call`; never sent to the model.
    pub usage: Option<Usage>,
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

/// One decoded step of a streamed reply. Every wire format maps onto these;
/// the loop turns them into the assistant message and `message_update`s.
#[derive(Debug, Clone, PartialEq)]
pub enum StreamEvent {
    /// Reply text, appended to the current text block (a new block opens
    /// when the previous block is not text).
    Text(String),
    /// Reasoning text, appended to the current thinking block.
    Thinking(String),
    /// The signature of the current thinking block (Anthropic).
    ThinkingSignature(String),
    /// A whole reasoning block the provider encrypted (Anthropic
    /// `redacted_thinking`): its opaque `data`, kept to be sent back
    /// unchanged.
    RedactedThinking(String),
    /// A tool call opened. `key` is the provider's handle for it (OpenAI's
    /// `index`, Anthropic's content block index); fragments name it again.
    ToolCallStart {
        /// The provider's handle for this call within the message.
        key: usize,
        /// The call's id.
        id: String,
        /// The tool's name.
        name: String,
    },
    /// A fragment of a tool call's argument JSON.
    ToolCallArgs {
        /// The handle given in `ToolCallStart`.
        key: usize,
        /// The fragment, to be appended.
        fragment: String,
    },
    /// Token usage (may arrive more than once; later values replace
    /// earlier non-zero ones field by field).
    Usage(Usage),
    /// A failed attempt is retried after a delay (no byte of it was used).
    Retry {
        /// 1 for the first retry.
        attempt: u32,
        /// The wait before the retry.
        delay_ms: u64,
        /// Why the attempt failed, in words.
        reason: String,
    },
    /// Data of the provider's own, handed as it is to the run's
    /// `on_provider_event` observer and to nothing else: the message is
    /// built without it (Pi's `onProviderStreamEvent(data)`). The built-in
    /// HTTP providers send one when the response's headers arrive:
    /// `{"type": "response", "status": 200, "headers": {…}}`, the headers
    /// being the request id, the rate-limit counters and the server's
    /// timing the server sent, never anything else. A provider of one's
    /// own may send anything, e.g. `{"request_cost": 0.01}`:
    ///
    /// ```
    /// use std::sync::Mutex;
    ///
    /// use leash_agent::AgentHooks;
    /// use leash_protocol::StreamEvent;
    /// use serde_json::json;
    ///
    /// /// Adds up what the provider says each request cost.
    /// #[derive(Default)]
    /// struct Spend(Mutex<f64>);
    ///
    /// impl AgentHooks for Spend {
    ///     fn on_provider_event(&self, event: &StreamEvent) {
    ///         if let StreamEvent::Provider(data) = event {
    ///             *self.0.lock().unwrap() += data["request_cost"].as_f64().unwrap_or(0.0);
    ///         }
    ///     }
    /// }
    ///
    /// let spend = Spend::default();
    /// spend.on_provider_event(&StreamEvent::Provider(json!({"request_cost": 0.01})));
    /// spend.on_provider_event(&StreamEvent::Text("not data".into()));
    /// assert_eq!(*spend.0.lock().unwrap(), 0.01);
    /// ```
    Provider(Value),
    /// The reply is complete. The last event of a successful stream.
    Done(StopReason),
    /// The reply failed; the message ends with `stopReason: error`. The
    /// last event of a failed stream. Never holds the API key.
    Error(String),
}

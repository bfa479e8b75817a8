//! ConverseStream's events, as serde structs: only the fields leash
//! reads, unknown ones ignored.

use serde::Deserialize;

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct BlockStart {
    #[serde(default)]
    pub content_block_index: usize,
    #[serde(default)]
    pub start: Option<Start>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct Start {
    #[serde(default)]
    pub tool_use: Option<ToolUseStart>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct ToolUseStart {
    pub tool_use_id: String,
    pub name: String,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct BlockDelta {
    #[serde(default)]
    pub content_block_index: usize,
    #[serde(default)]
    pub delta: Delta,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct Delta {
    #[serde(default)]
    pub text: Option<String>,
    #[serde(default)]
    pub tool_use: Option<ToolUseDelta>,
    #[serde(default)]
    pub reasoning_content: Option<ReasoningDelta>,
}

#[derive(Debug, Default, Deserialize)]
pub(super) struct ToolUseDelta {
    #[serde(default)]
    pub input: String,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct ReasoningDelta {
    #[serde(default)]
    pub text: Option<String>,
    #[serde(default)]
    pub signature: Option<String>,
    #[serde(default)]
    pub redacted_content: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct MessageStop {
    #[serde(default)]
    pub stop_reason: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
pub(super) struct Metadata {
    #[serde(default)]
    pub usage: Option<WireUsage>,
}

/// Token counts: `inputTokens` excludes what was read from or written to
/// the cache, which come apart.
#[derive(Debug, Default, Clone, Copy, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct WireUsage {
    #[serde(default)]
    pub input_tokens: u64,
    #[serde(default)]
    pub output_tokens: u64,
    #[serde(default)]
    pub cache_read_input_tokens: u64,
    #[serde(default)]
    pub cache_write_input_tokens: u64,
}

/// An exception's payload.
#[derive(Debug, Default, Deserialize)]
pub(super) struct Exception {
    #[serde(default)]
    pub message: Option<String>,
}

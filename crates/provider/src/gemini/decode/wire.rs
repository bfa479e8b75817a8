//! The Gemini API's streamed `GenerateContentResponse`, as serde structs:
//! only the fields leash reads, every one optional (a chunk carries some
//! of them), unknown fields ignored as Google's versioning allows.

use serde::Deserialize;
use serde_json::Value;

/// One SSE `data:` payload: a `GenerateContentResponse`, or the API's
/// error object when the stream fails midway.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct Chunk {
    #[serde(default)]
    pub candidates: Vec<Candidate>,
    #[serde(default)]
    pub usage_metadata: Option<UsageMetadata>,
    #[serde(default)]
    pub prompt_feedback: Option<PromptFeedback>,
    #[serde(default)]
    pub error: Option<WireError>,
}

/// One candidate (leash asks for one).
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct Candidate {
    #[serde(default)]
    pub content: Option<CandidateContent>,
    #[serde(default)]
    pub finish_reason: Option<String>,
    #[serde(default)]
    pub finish_message: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
pub(super) struct CandidateContent {
    #[serde(default)]
    pub parts: Vec<Part>,
}

/// One part of the model's content: text (a thought summary when
/// `thought` is true), or a function call; either may carry the opaque
/// `thoughtSignature` to send back on the same part.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct Part {
    #[serde(default)]
    pub text: Option<String>,
    #[serde(default)]
    pub thought: bool,
    #[serde(default)]
    pub thought_signature: Option<String>,
    #[serde(default)]
    pub function_call: Option<FunctionCall>,
}

#[derive(Debug, Default, Deserialize)]
pub(super) struct FunctionCall {
    #[serde(default)]
    pub id: Option<String>,
    pub name: String,
    #[serde(default)]
    pub args: Option<Value>,
}

/// Token counts: `promptTokenCount` includes the cached ones;
/// `candidatesTokenCount` excludes the thoughts, billed as output too.
#[derive(Debug, Default, Clone, Copy, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct UsageMetadata {
    #[serde(default)]
    pub prompt_token_count: u64,
    #[serde(default)]
    pub candidates_token_count: u64,
    #[serde(default)]
    pub cached_content_token_count: u64,
    #[serde(default)]
    pub thoughts_token_count: u64,
    #[serde(default)]
    pub tool_use_prompt_token_count: u64,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct PromptFeedback {
    #[serde(default)]
    pub block_reason: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
pub(super) struct WireError {
    #[serde(default)]
    pub message: Option<String>,
    #[serde(default)]
    pub status: Option<String>,
}

//! An MCP server's tool as a leash [`Tool`]: offered as `mcp__NAME__TOOL`
//! with the server's own description and input schema (the loop validates
//! the arguments against it like any tool's), run in the same batches,
//! behind the same hooks and redaction, and stopped by the run's token.
//!
//! The result is the text content joined by newlines (other content
//! described in one line), at most [`MAX_RESULT_BYTES`]; `isError` makes it
//! an error result. A server that died or broke the protocol gives an
//! error result too: the run goes on. So does a server that sent a message
//! past [`MAX_MESSAGE_BYTES`](super::witness::MAX_MESSAGE_BYTES): it is
//! stopped, and this call and its later ones say why.

use std::sync::Arc;

use futures::future::BoxFuture;
use rmcp::model::{
    CallToolRequest, CallToolRequestParams, CallToolResult, CancelledNotificationParam,
    ClientRequest, Meta, RawContent, ResourceContents, ServerResult,
};
use rmcp::service::{Peer, PeerRequestOptions, RoleClient};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use super::witness::{Witness, short};
use leash_protocol::trace_context::{self, McpNote};
use leash_protocol::{ToolOutput, ToolSpec};
use leash_tools::{Tool, ToolError, ToolUpdates};

/// The most of a result the model reads (like `read_file`'s limit).
pub const MAX_RESULT_BYTES: usize = leash_tools::read_file::MAX_BYTES;

/// The providers' limit on a tool's name.
pub const MAX_TOOL_NAME_CHARS: usize = 64;

/// `mcp__NAME__TOOL`, or why the server's tool name cannot be offered
/// (characters the providers refuse, or too long).
pub fn offered_name(server: &str, tool: &str) -> Result<String, String> {
    if tool.is_empty() {
        return Err("the server lists a tool with an empty name".to_owned());
    }
    if let Some(bad) = tool
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || *c == '-' || *c == '_'))
    {
        return Err(format!(
            "its tool '{}' holds {bad:?}, which tool names cannot carry (letters, digits, - and _)",
            tool.escape_debug()
        ));
    }
    let name = format!("mcp__{server}__{tool}");
    if name.len() > MAX_TOOL_NAME_CHARS {
        return Err(format!(
            "its tool '{tool}' would be offered as '{name}', longer than the providers' \
             {MAX_TOOL_NAME_CHARS} characters; use a shorter server name"
        ));
    }
    Ok(name)
}

/// One tool of one running server.
pub struct McpTool {
    spec: ToolSpec,
    server: Arc<str>,
    tool: String,
    peer: Peer<RoleClient>,
    witness: Arc<Witness>,
    /// The server's transport and address, for the call's span.
    note: McpNote,
}

impl McpTool {
    /// The tool `tool` (the server's name for it) of `server`, offered
    /// under `spec`; `witness` explains a server that went away or past
    /// the cap on one message.
    pub fn new(
        spec: ToolSpec,
        server: Arc<str>,
        tool: String,
        peer: Peer<RoleClient>,
        witness: Arc<Witness>,
    ) -> Self {
        McpTool {
            spec,
            server,
            tool,
            peer,
            witness,
            note: McpNote::default(),
        }
    }

    /// The same tool, its calls' spans told the server's transport and
    /// address.
    pub fn with_note(mut self, note: McpNote) -> Self {
        self.note = note;
        self
    }

    /// Tells the run's trace what the call `call_id` learned.
    fn note(&self, call_id: &str, request_id: Option<String>, error_type: Option<String>) {
        trace_context::mcp_call(call_id, || McpNote {
            request_id,
            protocol_version: self
                .peer
                .peer_info()
                .map(|info| info.protocol_version.to_string()),
            session_id: self
                .witness
                .session
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .clone(),
            error_type,
            ..self.note.clone()
        });
    }

    /// The error of a call the session failed: the message over the cap
    /// that ended the session (the server is stopped), or how the process
    /// exited, when it did.
    async fn failed(&self, error: rmcp::ServiceError) -> ToolError {
        if let Some(overflowed) = self.witness.overflowed().await {
            return format!("MCP server '{}' {overflowed}", self.server).into();
        }
        if let Some(exited) = self
            .witness
            .exited("during the call", std::time::Duration::from_millis(200))
            .await
        {
            return format!("MCP server '{}' {exited}", self.server).into();
        }
        format!(
            "MCP server '{}' failed: {}",
            self.server,
            short(&error.to_string())
        )
        .into()
    }

    async fn call(
        &self,
        call_id: &str,
        args: Value,
        cancel: CancellationToken,
    ) -> Result<ToolOutput, ToolError> {
        let arguments = match args {
            Value::Object(map) => Some(map),
            Value::Null => None,
            _ => return Err("the arguments must be a JSON object".into()),
        };
        // Traced: the call's span goes with the request, as the MCP
        // conventions say (`params._meta.traceparent`).
        let meta = trace_context::traceparent(trace_context::Scope::Tool(call_id)).map(|parent| {
            let mut meta = Meta::new();
            meta.0
                .insert("traceparent".to_owned(), Value::String(parent));
            meta
        });
        let request = ClientRequest::CallToolRequest(CallToolRequest::new(CallToolRequestParams {
            meta,
            name: self.tool.clone().into(),
            arguments,
            task: None,
        }));
        if cancel.is_cancelled() {
            return Err(format!("{} was cancelled", self.spec.name).into());
        }
        let handle = match self
            .peer
            .send_request_with_option(request, PeerRequestOptions::no_options())
            .await
        {
            Ok(handle) => handle,
            Err(error) => {
                self.note(call_id, None, Some(error_type(&error)));
                return Err(self.failed(error).await);
            }
        };
        let request_id = Some(handle.id.to_string());
        let answer = tokio::select! {
            answer = handle.rx => answer,
            // A reply past the cap never arrives: give up at once.
            () = self.witness.overflow() => return Err(self.failed(rmcp::ServiceError::TransportClosed).await),
            () = cancel.cancelled() => {
                // Tell the server, but never wait long for a pipe.
                let notice = self.peer.notify_cancelled(CancelledNotificationParam {
                    request_id: handle.id,
                    reason: Some("the run was stopped".to_owned()),
                });
                let _ = tokio::time::timeout(std::time::Duration::from_millis(200), notice).await;
                return Err(format!("{} was cancelled", self.spec.name).into());
            }
        };
        match answer
            .map_err(|_| rmcp::ServiceError::TransportClosed)
            .and_then(|answer| answer)
        {
            Ok(ServerResult::CallToolResult(result)) => {
                let failed = result.is_error == Some(true);
                self.note(call_id, request_id, failed.then(|| "tool_error".to_owned()));
                result_output(result)
            }
            Ok(_) => {
                self.note(call_id, request_id, Some("_OTHER".to_owned()));
                Err(self.failed(rmcp::ServiceError::UnexpectedResponse).await)
            }
            Err(error) => {
                self.note(call_id, request_id, Some(error_type(&error)));
                Err(self.failed(error).await)
            }
        }
    }
}

impl Tool for McpTool {
    fn spec(&self) -> ToolSpec {
        self.spec.clone()
    }

    fn execute<'a>(
        &'a self,
        call_id: &'a str,
        args: Value,
        cancel: CancellationToken,
        _updates: ToolUpdates,
    ) -> BoxFuture<'a, Result<ToolOutput, ToolError>> {
        Box::pin(self.call(call_id, args, cancel))
    }
}

/// The conventions' `error.type` of a failed call: the JSON-RPC error
/// code, or `_OTHER`.
fn error_type(error: &rmcp::ServiceError) -> String {
    match error {
        rmcp::ServiceError::McpError(data) => data.code.0.to_string(),
        _ => "_OTHER".to_owned(),
    }
}

/// The result the model reads: `isError` is an error result with the
/// same text.
fn result_output(result: CallToolResult) -> Result<ToolOutput, ToolError> {
    let mut parts: Vec<String> = result
        .content
        .iter()
        .map(|content| match &content.raw {
            RawContent::Text(text) => text.text.clone(),
            RawContent::Image(image) => format!(
                "[image: {}, {} bytes of base64 not shown]",
                image.mime_type,
                image.data.len()
            ),
            RawContent::Audio(audio) => format!(
                "[audio: {}, {} bytes of base64 not shown]",
                audio.mime_type,
                audio.data.len()
            ),
            RawContent::Resource(embedded) => match &embedded.resource {
                ResourceContents::TextResourceContents { uri, text, .. } => {
                    format!("[resource {uri}]\n{text}")
                }
                ResourceContents::BlobResourceContents { uri, blob, .. } => {
                    format!("[resource {uri}: {} bytes of base64 not shown]", blob.len())
                }
            },
            RawContent::ResourceLink(link) => {
                format!("[resource link: {} {}]", link.name, link.uri)
            }
        })
        .collect();
    if parts.is_empty()
        && let Some(structured) = &result.structured_content
    {
        parts.push(structured.to_string());
    }
    let text = cap(parts.join("\n"));
    match result.is_error {
        Some(true) => Err(match text.is_empty() {
            true => "the tool reported an error without a message".into(),
            false => text.into(),
        }),
        _ => Ok(ToolOutput::text(text)),
    }
}

/// At most [`MAX_RESULT_BYTES`], cut on a character boundary, with a note.
fn cap(text: String) -> String {
    if text.len() <= MAX_RESULT_BYTES {
        return text;
    }
    let mut end = MAX_RESULT_BYTES;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!(
        "{}\n[cut: the result was {} bytes; the first {end} are shown]",
        &text[..end],
        text.len()
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use rmcp::model::{Content, RawImageContent};

    #[test]
    fn names_are_checked_for_the_providers() {
        assert_eq!(
            offered_name("fs", "read-file_2").unwrap(),
            "mcp__fs__read-file_2"
        );
        assert!(
            offered_name("fs", "get.weather")
                .unwrap_err()
                .contains("'.'")
        );
        assert!(
            offered_name("fs", &"x".repeat(60))
                .unwrap_err()
                .contains("64")
        );
        assert!(offered_name("fs", "").is_err());
    }

    #[test]
    fn text_is_joined_other_content_described_and_is_error_kept() {
        let mut image = Content::text("");
        image.raw = RawContent::Image(RawImageContent {
            data: "AAAA".into(),
            mime_type: "image/png".into(),
            meta: None,
        });
        let result = CallToolResult::success(vec![Content::text("a"), image, Content::text("b")]);
        let output = result_output(result).unwrap();
        assert_eq!(
            output.content,
            ToolOutput::text("a\n[image: image/png, 4 bytes of base64 not shown]\nb").content
        );
        let error =
            result_output(CallToolResult::error(vec![Content::text("no such city")])).unwrap_err();
        assert_eq!(error.to_string(), "no such city");
    }

    #[test]
    fn a_long_result_is_cut_on_a_character_boundary() {
        let text = cap("é".repeat(MAX_RESULT_BYTES));
        assert!(text.contains("[cut: the result was"));
        assert!(text.len() < MAX_RESULT_BYTES + 100);
    }
}

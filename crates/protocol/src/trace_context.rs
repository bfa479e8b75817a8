//! The run's trace as the code below it sees it (docs/src/tracing.md "Trace
//! context of requests and children"): the W3C `traceparent` of the span
//! a model request, a hook or an MCP server belongs to, and a place to note
//! what an MCP call learned for its tool call's span. The run's trace sets
//! it for the run's task ([`within`]); with traces off nothing is set and
//! every function here answers `None` at once.
//!
//! It is a task-local, not an argument: a provider, an MCP tool shared by a
//! batch's items and the hook chain all run inside the run's own task, and
//! none of them should know the telemetry layer above.

use std::future::Future;
use std::sync::Arc;

/// Which span a `traceparent` is asked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope<'a> {
    /// The model request under way (the `chat` span).
    Model,
    /// The tool call with this id (its `execute_tool` span).
    Tool(&'a str),
}

/// A span reserved for a child process before it starts: the value of its
/// `TRACEPARENT`, and the span id the trace records the child's span
/// under once it is over.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reserved {
    /// `00-{trace id}-{span id}-{flags}`.
    pub traceparent: String,
    /// The reserved span id.
    pub span_id: u64,
}

/// What an MCP call (or a server's start) learned, for its span: the
/// conventions' `mcp.*`, `jsonrpc.*`, `network.*` and `server.*` values.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct McpNote {
    /// The server's name in leash's settings.
    pub server: String,
    /// The JSON-RPC id of the request, as text.
    pub request_id: Option<String>,
    /// The MCP protocol version the server agreed to.
    pub protocol_version: Option<String>,
    /// The HTTP transport's `Mcp-Session-Id`.
    pub session_id: Option<String>,
    /// `pipe` (stdio) or `tcp` (HTTP).
    pub transport: &'static str,
    /// An HTTP server's host and port.
    pub address: Option<(String, u16)>,
    /// The JSON-RPC error code, or `tool_error` (a result with `isError`),
    /// or `_OTHER`, when the call failed.
    pub error_type: Option<String>,
}

/// What the run's trace answers the code below it.
pub trait Ambient: Send + Sync {
    /// The `traceparent` of the span for `scope`, if it is open.
    fn traceparent(&self, scope: Scope<'_>) -> Option<String>;
    /// A span id reserved under `scope` (the run's span when the scope
    /// is no open span), for a child process about to start.
    fn reserve(&self, scope: Option<Scope<'_>>) -> Option<Reserved>;
    /// What the MCP call of tool call `call_id` learned.
    fn mcp_call(&self, call_id: &str, note: McpNote);
    /// A server's start is over: the span `reserved` (begun at `started`)
    /// with what it learned; `failed` when it did not start.
    fn mcp_started(
        &self,
        reserved: &Reserved,
        started: std::time::SystemTime,
        note: McpNote,
        failed: bool,
    );
}

tokio::task_local! {
    static AMBIENT: Arc<dyn Ambient>;
}

/// Runs `future` with `ambient` as the run's trace (none: as is).
pub async fn within<F: Future>(ambient: Option<Arc<dyn Ambient>>, future: F) -> F::Output {
    match ambient {
        Some(ambient) => AMBIENT.scope(ambient, future).await,
        None => future.await,
    }
}

/// Asks the run's trace, when there is one.
fn ask<R>(question: impl FnOnce(&dyn Ambient) -> Option<R>) -> Option<R> {
    AMBIENT
        .try_with(|ambient| question(ambient.as_ref()))
        .ok()
        .flatten()
}

/// The `traceparent` of the span for `scope`, when traced.
pub fn traceparent(scope: Scope<'_>) -> Option<String> {
    ask(|ambient| ambient.traceparent(scope))
}

/// A span reserved for a child process under `scope`, when traced.
pub fn reserve(scope: Option<Scope<'_>>) -> Option<Reserved> {
    ask(|ambient| ambient.reserve(scope))
}

/// Notes what an MCP call learned, when traced (`note` is only made
/// then).
pub fn mcp_call(call_id: &str, note: impl FnOnce() -> McpNote) {
    ask(|ambient| {
        ambient.mcp_call(call_id, note());
        None::<()>
    });
}

/// Notes how a server's start went, when traced.
pub fn mcp_started(
    reserved: &Reserved,
    started: std::time::SystemTime,
    note: McpNote,
    failed: bool,
) {
    ask(|ambient| {
        ambient.mcp_started(reserved, started, note, failed);
        None::<()>
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn outside_a_traced_run_nothing_is_answered() {
        assert_eq!(traceparent(Scope::Model), None);
        assert_eq!(reserve(None), None);
        mcp_call("c", McpNote::default);
        let answer = within(None, async { traceparent(Scope::Model) }).await;
        assert_eq!(answer, None);
    }
}

//! The loop's extension points (SPEC 1.2, 1.3): one trait whose methods all
//! default to "do nothing", so a caller overrides only the hooks it needs.
//! Hooks are async because a real one may have to ask someone.
//!
//! A hook must never be able to lose a tool call: whatever it returns, every
//! call still gets exactly one result.

use std::sync::Arc;

use futures::future::BoxFuture;
use serde_json::Value;

use super::types::{
    AssistantMessage, Block, Message, ResultOverride, ToolCall, ToolResultMessage, TurnDecision,
};

/// What `finish_turn` sees: the turn's final assistant message and results.
#[derive(Debug, Clone, Copy)]
pub struct FinishedTurn<'a> {
    /// The turn's assistant message.
    pub message: &'a AssistantMessage,
    /// The turn's tool results, in the model's order.
    pub tool_results: &'a [ToolResultMessage],
    /// The whole context after this turn.
    pub context: &'a [Message],
    /// Whether this turn's tool batch asked for no further request (every
    /// result carried `terminate`).
    pub batch_terminated: bool,
}

/// What a request-preparing hook may replace. `None` keeps the current value.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RequestChanges {
    /// A new context; it replaces the loop's context from here on.
    pub context: Option<Vec<Message>>,
    /// A new model for this and later requests.
    pub model: Option<String>,
}

/// The hooks of one run. Each has a default that keeps the loop's own
/// behaviour.
pub trait AgentHooks: Send + Sync {
    /// Runs after argument validation and before execution. `Ok(Some(block))`
    /// stops the call; `Err(text)` becomes an error result with that text.
    fn before_tool_call<'a>(
        &'a self,
        _call: &'a ToolCall,
        _args: &'a Value,
        _context: &'a [Message],
    ) -> BoxFuture<'a, Result<Option<Block>, String>> {
        Box::pin(async { Ok(None) })
    }

    /// Runs after a call finished (ran, or was refused); may replace the
    /// result field by field.
    fn after_tool_call<'a>(
        &'a self,
        _call: &'a ToolCall,
        _args: &'a Value,
        _result: &'a ToolResultMessage,
        _is_error: bool,
    ) -> BoxFuture<'a, Option<ResultOverride>> {
        Box::pin(async { None })
    }

    /// Runs when the turn's assistant message and tool results are final,
    /// before `turn_end`. `None` keeps the default schedule.
    fn finish_turn<'a>(&'a self, _turn: FinishedTurn<'a>) -> BoxFuture<'a, Option<TurnDecision>> {
        Box::pin(async { None })
    }

    /// Runs before each provider request; may replace the context or model.
    fn prepare_request<'a>(
        &'a self,
        _context: &'a [Message],
        _model: &'a str,
    ) -> BoxFuture<'a, RequestChanges> {
        Box::pin(async { RequestChanges::default() })
    }

    /// Runs before every turn but the first, with the turn that just
    /// completed; may replace the context or model.
    fn prepare_next_turn<'a>(
        &'a self,
        _last: FinishedTurn<'a>,
        _model: &'a str,
    ) -> BoxFuture<'a, RequestChanges> {
        Box::pin(async { RequestChanges::default() })
    }
}

/// Hooks that do nothing: the loop's default schedule.
#[derive(Debug, Clone, Copy, Default)]
pub struct NoHooks;

impl AgentHooks for NoHooks {}

/// Shared hooks, as the loop holds them.
pub type SharedHooks = Arc<dyn AgentHooks>;

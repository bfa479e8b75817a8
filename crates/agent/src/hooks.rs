//! The loop's extension points (ARCHITECTURE.md §1.2, §1.3; the hooks of Pi's
//! `AgentLoopConfig`): one trait whose methods all default to "do nothing",
//! so a caller overrides only the hooks it needs. Hooks are async because a
//! real one may have to ask someone, and each one is handed the run's
//! cancellation token (Pi passes its abort signal), which it is responsible
//! for honouring.
//!
//! A hook must never be able to lose a tool call: whatever it returns, every
//! call still gets exactly one result.

use std::sync::Arc;

use futures::future::BoxFuture;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use super::types::{Block, ResultOverride, TurnDecision};
use leash_protocol::provider::ThinkingLevel;
use leash_protocol::{AssistantMessage, Message, StreamEvent, ToolCall, ToolResultMessage, Usage};

/// What the tool-call hooks see of one call (Pi's `BeforeToolCallContext`).
#[derive(Debug, Clone, Copy)]
pub struct ToolCallContext<'a> {
    /// The assistant message the call came from.
    pub assistant_message: &'a AssistantMessage,
    /// The call as the model sent it.
    pub call: &'a ToolCall,
    /// The arguments: validated ones for `before_tool_call`, the ones that
    /// ran (a replacement included) for `after_tool_call`.
    pub args: &'a Value,
    /// The run's context when the batch started.
    pub context: &'a [Message],
    /// Fires when the run is aborted.
    pub cancel: &'a CancellationToken,
}

/// What `after_tool_call` sees (Pi's `AfterToolCallContext`).
#[derive(Debug, Clone, Copy)]
pub struct ExecutedToolCall<'a> {
    /// The call, its arguments and the run's context.
    pub call: ToolCallContext<'a>,
    /// The result before any override.
    pub result: &'a ToolResultMessage,
    /// Whether the result is currently an error.
    pub is_error: bool,
    /// The tokens the tool reported spending, if it did.
    pub usage: Option<&'a Usage>,
}

/// What `before_tool_call` decides about one call.
#[derive(Debug, Clone, PartialEq, Default)]
pub enum BeforeToolCall {
    /// Run the call with its validated arguments.
    #[default]
    Run,
    /// Run the call with these arguments instead. They are **not**
    /// validated again: Pi's hook mutates the validated arguments in place
    /// and the tool runs with whatever it left there.
    RunWith(Value),
    /// Do not run the call; answer it with an error result.
    Block(Block),
}

/// What `finish_turn` and `prepare_next_turn` see (Pi's `AgentTurnContext`):
/// the turn's final assistant message and results.
#[derive(Debug, Clone, Copy)]
pub struct FinishedTurn<'a> {
    /// The turn's assistant message.
    pub message: &'a AssistantMessage,
    /// The turn's tool results, in the model's order.
    pub tool_results: &'a [ToolResultMessage],
    /// The whole context after this turn.
    pub context: &'a [Message],
    /// Every message the run would return if it ended here.
    pub new_messages: &'a [Message],
    /// Whether this turn's tool batch asked for no further request (every
    /// result carried `terminate`).
    pub batch_terminated: bool,
    /// Fires when the run is aborted.
    pub cancel: &'a CancellationToken,
}

/// What `prepare_request` sees (Pi's `PrepareRequestContext`).
#[derive(Debug, Clone, Copy)]
pub struct RequestContext<'a> {
    /// The context the request would send (pending messages included).
    pub context: &'a [Message],
    /// The model it would ask.
    pub model: &'a str,
    /// The thinking level it would ask for.
    pub thinking: ThinkingLevel,
    /// Fires when the run is aborted.
    pub cancel: &'a CancellationToken,
}

/// What a request-preparing hook may replace. `None` keeps the current value.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RequestChanges {
    /// A new context; it replaces the loop's context from here on.
    pub context: Option<Vec<Message>>,
    /// A new model for this and later requests.
    pub model: Option<String>,
    /// A new thinking level for this and later requests.
    pub thinking: Option<ThinkingLevel>,
}

/// What `prepare_next_turn` may change (Pi's `AgentLoopTurnUpdate`).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct NextTurnChanges {
    /// A new context and/or model, as for `prepare_request`.
    pub request: RequestChanges,
    /// Messages appended before the next request, ahead of any pending
    /// steering or follow-up messages, with the usual
    /// `message_start`/`message_end` events.
    pub messages: Vec<Message>,
}

/// The hooks of one run. Each has a default that keeps the loop's own
/// behaviour.
pub trait AgentHooks: Send + Sync {
    /// Runs after argument validation and before execution; may let the
    /// call run, run it with other arguments, or block it. `Err(text)`
    /// becomes an error result with that text.
    fn before_tool_call<'a>(
        &'a self,
        _call: ToolCallContext<'a>,
    ) -> BoxFuture<'a, Result<BeforeToolCall, String>> {
        Box::pin(async { Ok(BeforeToolCall::Run) })
    }

    /// Runs after a call's `execute` finished (not for calls that never
    /// ran); may replace the result field by field. `Err(text)` replaces
    /// the result with an error result holding that text.
    fn after_tool_call<'a>(
        &'a self,
        _executed: ExecutedToolCall<'a>,
    ) -> BoxFuture<'a, Result<Option<ResultOverride>, String>> {
        Box::pin(async { Ok(None) })
    }

    /// Runs when the turn's assistant message and tool results are final,
    /// before `turn_end`; also for `error` and `aborted` replies, whose
    /// decision is ignored. `None` keeps the default schedule.
    fn finish_turn<'a>(&'a self, _turn: FinishedTurn<'a>) -> BoxFuture<'a, Option<TurnDecision>> {
        Box::pin(async { None })
    }

    /// Runs before each provider request; may replace the context or model.
    fn prepare_request<'a>(
        &'a self,
        _request: RequestContext<'a>,
    ) -> BoxFuture<'a, RequestChanges> {
        Box::pin(async { RequestChanges::default() })
    }

    /// Makes the messages one request sends from the context, after
    /// `prepare_request` (Pi's `convertToLlm` / `transformContext`): it may
    /// drop, reorder or rewrite them for this request only, while the
    /// context and the transcript keep every message. `None` sends the
    /// context as it is.
    fn convert_to_llm<'a>(
        &'a self,
        _context: &'a [Message],
    ) -> BoxFuture<'a, Option<Vec<Message>>> {
        Box::pin(async { None })
    }

    /// Sees every event the provider streams, in order, before the loop
    /// builds the message from it (Pi's `onProviderStreamEvent`), the
    /// provider's own data (`StreamEvent::Provider`) among them, exactly
    /// as the provider gave it. Called inline: it must return at once.
    fn on_provider_event(&self, _event: &StreamEvent) {}

    /// Runs before every turn but the first, with the turn that just
    /// completed; may replace the context or model and inject messages.
    fn prepare_next_turn<'a>(
        &'a self,
        _last: FinishedTurn<'a>,
        _model: &'a str,
    ) -> BoxFuture<'a, NextTurnChanges> {
        Box::pin(async { NextTurnChanges::default() })
    }
}

/// Hooks that do nothing: the loop's default schedule.
#[derive(Debug, Clone, Copy, Default)]
pub struct NoHooks;

impl AgentHooks for NoHooks {}

/// Shared hooks, as the loop holds them.
pub type SharedHooks = Arc<dyn AgentHooks>;

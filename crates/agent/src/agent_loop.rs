//! The pure two-level agent loop (ARCHITECTURE.md §1.2; `runLoop` in Pi's
//! `agent-loop.ts`). The inner loop runs turns while tool calls or steering
//! messages keep it going; the outer loop picks up follow-ups when the agent
//! would stop. No state survives a run: everything comes in as arguments.
//!
//! This file must never know about HTTP, the terminal or the process: it
//! talks to a [`Provider`], tools, hooks and an event sink.

use std::sync::Arc;

use tokio_util::sync::CancellationToken;

use super::assistant_stream::stream_observed;
use super::hooks::{FinishedTurn, RequestChanges, RequestContext, SharedHooks};
use super::tool_batch::{BatchOutcome, ToolExecution, execute_tool_calls, fail_truncated_calls};
use super::tool_call::{BatchContext, ToolSet};
use super::transcript::{Declarations, declare_tool_changes, resolve_request};
use super::types::{AgentEvent, EmitFn, TurnDecision};
use leash_protocol::provider::{Provider, Request, RequestOptions, ThinkingLevel};
use leash_protocol::tool::Tool;
use leash_protocol::{AssistantMessage, Message, StopReason, ToolCall, ToolResultMessage};

/// Everything that shapes a run but is not the conversation.
#[derive(Clone)]
pub struct LoopConfig {
    /// The model to ask (a hook may change it).
    pub model: String,
    /// The system message; empty for none. With system messages in the
    /// transcript, the text they add follows it.
    pub system: String,
    /// The tools that can run.
    pub tools: Vec<Arc<dyn Tool>>,
    /// Who tells the model of `tools`: every request, or the transcript's
    /// system messages, kept in step by the loop.
    pub declarations: Declarations,
    /// Parallel or sequential batches.
    pub tool_execution: ToolExecution,
    /// The run's hooks.
    pub hooks: SharedHooks,
}

/// Where the loop polls for queued messages.
pub trait MessageQueues: Send + Sync {
    /// Messages to deliver before the next request.
    fn steering(&self) -> Vec<Message>;
    /// Messages to deliver when the agent would stop.
    fn follow_ups(&self) -> Vec<Message>;
}

/// Queues that are always empty.
#[derive(Debug, Clone, Copy, Default)]
pub struct NoQueues;

impl MessageQueues for NoQueues {
    fn steering(&self) -> Vec<Message> {
        Vec::new()
    }
    fn follow_ups(&self) -> Vec<Message> {
        Vec::new()
    }
}

/// What the loop borrows for one run.
pub struct RunInputs<'a> {
    /// The model.
    pub provider: &'a dyn Provider,
    /// Model, system message, tools, hooks.
    pub config: &'a LoopConfig,
    /// Steering and follow-up queues.
    pub queues: &'a dyn MessageQueues,
    /// Fires on abort.
    pub cancel: &'a CancellationToken,
    /// Receives every event.
    pub emit: &'a EmitFn<'a>,
    /// The first request's thinking level (`prepare_request` may change it
    /// for this and later requests) and the session id of every request.
    pub options: RequestOptions<'a>,
}

/// The state of one run as the loop advances it.
struct RunState {
    context: Vec<Message>,
    new_messages: Vec<Message>,
    model: String,
    thinking: ThinkingLevel,
}

impl RunState {
    fn append(&mut self, message: Message) {
        self.context.push(message.clone());
        self.new_messages.push(message);
    }

    fn apply(&mut self, changes: RequestChanges) {
        if let Some(context) = changes.context {
            self.context = context;
        }
        if let Some(model) = changes.model {
            self.model = model;
        }
        if let Some(thinking) = changes.thinking {
            self.thinking = thinking;
        }
    }
}

/// Runs one prompt to its end and returns every message the run added
/// (Pi's `runAgentLoop`). `context` is the conversation before the prompt.
pub async fn run_agent_loop(
    prompts: Vec<Message>,
    context: Vec<Message>,
    inputs: RunInputs<'_>,
) -> Vec<Message> {
    let emit = inputs.emit;
    let mut state = RunState {
        context,
        new_messages: Vec::new(),
        model: inputs.config.model.clone(),
        thinking: inputs.options.thinking,
    };
    let tool_set = ToolSet::new(&inputs.config.tools);
    let prompts = declared(&state.context, &tool_set, inputs.config, prompts);
    emit.emit(AgentEvent::AgentStart).await;
    emit.emit(AgentEvent::TurnStart).await;
    for prompt in prompts {
        emit_message(&prompt, emit).await;
        state.append(prompt);
    }
    run_turns(&mut state, &tool_set, &inputs).await;
    emit.emit(AgentEvent::AgentEnd {
        messages: state.new_messages.clone(),
    })
    .await;
    state.new_messages
}

/// Runs from `context` as it is, without a new prompt (Pi's
/// `runAgentLoopContinue`), and returns every message the run added.
/// Refused, before any event, when `context` is empty or ends in an
/// assistant message: the provider would have nothing to answer.
pub async fn run_agent_loop_continue(
    context: Vec<Message>,
    inputs: RunInputs<'_>,
) -> Result<Vec<Message>, ContinueError> {
    match context.last() {
        None => return Err(ContinueError::NoMessages),
        Some(Message::Assistant(_)) => return Err(ContinueError::EndsWithAssistant),
        Some(_) => {}
    }
    Ok(run_agent_loop(Vec::new(), context, inputs).await)
}

/// Why a run cannot continue from a transcript.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum ContinueError {
    /// The transcript is empty (Pi's `agentLoopContinue` words; the
    /// `Agent` says "No messages to continue from", as Pi's does).
    #[error("Cannot continue: no messages in context")]
    NoMessages,
    /// The transcript ends in an assistant message and nothing is queued.
    #[error("Cannot continue from message role: assistant")]
    EndsWithAssistant,
}

/// The last completed turn, for `prepare_next_turn`.
struct LastTurn {
    message: AssistantMessage,
    tool_results: Vec<ToolResultMessage>,
    batch_terminated: bool,
}

/// With [`Declarations::InTranscript`], the messages about to be appended
/// with a system message declaring whatever tools changed; else as given.
fn declared(
    context: &[Message],
    tools: &ToolSet<'_>,
    config: &LoopConfig,
    pending: Vec<Message>,
) -> Vec<Message> {
    match config.declarations {
        Declarations::Beside => pending,
        Declarations::InTranscript => declare_tool_changes(context, tools.specs(), pending),
    }
}

/// The two loops. Returns when the run is over; `agent_end` is the caller's.
async fn run_turns(state: &mut RunState, tool_set: &ToolSet<'_>, inputs: &RunInputs<'_>) {
    let RunInputs {
        provider,
        config,
        queues,
        cancel,
        emit,
        options,
    } = *inputs;
    let hooks = config.hooks.as_ref();
    let mut pending = queues.steering();
    // Set by a `Continue` decision, cleared by the next request.
    let mut continuation_owed = false;
    let mut last_turn: Option<LastTurn> = None;

    loop {
        let mut has_more_tool_calls = true;
        while has_more_tool_calls || !pending.is_empty() {
            let mut injected = Vec::new();
            if let Some(last) = &last_turn {
                let turn = FinishedTurn {
                    message: &last.message,
                    tool_results: &last.tool_results,
                    context: &state.context,
                    new_messages: &state.new_messages,
                    batch_terminated: last.batch_terminated,
                    cancel,
                };
                let changes = hooks.prepare_next_turn(turn, &state.model).await;
                state.apply(changes.request);
                injected = changes.messages;
                // Steering queued while the hook ran; polled again only if
                // the earlier poll found nothing (one-at-a-time mode must not
                // deliver two messages in one turn).
                if pending.is_empty() {
                    pending = queues.steering();
                }
                emit.emit(AgentEvent::TurnStart).await;
            }

            injected.append(&mut pending);
            for message in declared(&state.context, tool_set, config, injected) {
                emit_message(&message, emit).await;
                state.append(message);
            }

            let request = RequestContext {
                context: &state.context,
                model: &state.model,
                thinking: state.thinking,
                cancel,
            };
            let changes = hooks.prepare_request(request).await;
            state.apply(changes);
            continuation_owed = false;
            let converted = hooks.convert_to_llm(&state.context).await;
            let transcript = converted.as_deref().unwrap_or(&state.context);
            let resolved = resolve_request(
                &config.system,
                transcript,
                config.declarations,
                tool_set.specs(),
            );
            let request = Request {
                transcript,
                model: &state.model,
                system: &resolved.system,
                messages: &resolved.messages,
                tools: &resolved.tools,
                options: RequestOptions {
                    thinking: state.thinking,
                    session_id: options.session_id,
                },
            };
            let observe = |event: &_| hooks.on_provider_event(event);
            let message = stream_observed(provider, request, cancel, emit, &observe).await;
            state.append(Message::Assistant(message.clone()));

            if is_hard_exit(&message) {
                // `finish_turn` sees error and aborted replies too (as in
                // Pi); its decision cannot change a hard exit (ARCHITECTURE.md §1.2).
                let turn = FinishedTurn {
                    message: &message,
                    tool_results: &[],
                    context: &state.context,
                    new_messages: &state.new_messages,
                    batch_terminated: false,
                    cancel,
                };
                let _ = hooks.finish_turn(turn).await;
                emit.emit(AgentEvent::TurnEnd {
                    message,
                    tool_results: Vec::new(),
                })
                .await;
                return;
            }

            let calls: Vec<ToolCall> = message.tool_calls().cloned().collect();
            has_more_tool_calls = !calls.is_empty();
            let mut tool_results = Vec::new();
            let mut batch_terminated = false;
            if has_more_tool_calls {
                let batch = run_tool_batch(&message, &calls, tool_set, state, inputs).await;
                batch_terminated = batch.terminate;
                has_more_tool_calls = !batch.terminate;
                for result in &batch.results {
                    state.append(Message::ToolResult(result.clone()));
                }
                tool_results = batch.results;
            }

            if cancel.is_cancelled() {
                emit.emit(AgentEvent::TurnEnd {
                    message,
                    tool_results,
                })
                .await;
                return;
            }

            let turn = FinishedTurn {
                message: &message,
                tool_results: &tool_results,
                context: &state.context,
                new_messages: &state.new_messages,
                batch_terminated,
                cancel,
            };
            let decision = hooks.finish_turn(turn).await;
            emit.emit(AgentEvent::TurnEnd {
                message: message.clone(),
                tool_results: tool_results.clone(),
            })
            .await;
            match decision {
                Some(TurnDecision::End) => return,
                Some(TurnDecision::Continue) => continuation_owed = true,
                None => {}
            }
            last_turn = Some(LastTurn {
                message,
                tool_results,
                batch_terminated,
            });
            pending = queues.steering();
        }

        // The agent would stop here.
        let follow_ups = queues.follow_ups();
        if !follow_ups.is_empty() {
            pending = follow_ups;
            continue;
        }
        if continuation_owed {
            // One context-only turn: the outer loop starts the inner loop
            // again with no tool calls and nothing pending.
            continue;
        }
        return;
    }
}

/// Error and aborted replies end the run at once (ARCHITECTURE.md §1.2).
fn is_hard_exit(message: &AssistantMessage) -> bool {
    matches!(message.stop_reason, StopReason::Error | StopReason::Aborted)
}

/// Executes the batch, or fails it whole when the reply was cut off.
async fn run_tool_batch(
    message: &AssistantMessage,
    calls: &[ToolCall],
    tools: &ToolSet<'_>,
    state: &RunState,
    inputs: &RunInputs<'_>,
) -> BatchOutcome {
    if message.stop_reason == StopReason::Length {
        return fail_truncated_calls(calls, inputs.emit).await;
    }
    let batch = BatchContext {
        message,
        tools,
        hooks: inputs.config.hooks.as_ref(),
        context: &state.context,
        cancel: inputs.cancel,
        emit: inputs.emit,
    };
    execute_tool_calls(calls, inputs.config.tool_execution, &batch).await
}

async fn emit_message(message: &Message, emit: &EmitFn<'_>) {
    emit.emit(AgentEvent::MessageStart {
        message: message.clone(),
    })
    .await;
    emit.emit(AgentEvent::MessageEnd {
        message: message.clone(),
    })
    .await;
}

//! A tool batch: all tool calls of one assistant message (ARCHITECTURE.md §1.3), run in
//! parallel or in sequence, and the every-result termination rule.
//!
//! A batch never loses a call: each call gets `tool_execution_start`, one
//! `tool_execution_end` and one tool-result message, whether it ran or not.

use futures::StreamExt;
use futures::stream::FuturesUnordered;
use serde_json::Value;
use tokio::sync::mpsc;

use super::assistant_stream::ABORTED;
use super::tool_call::{
    BatchContext, Finalized, Prepared, TRUNCATED_CALL, execute_prepared_tool_call,
    finalize_executed_tool_call, prepare_tool_call, tool_result_message,
};
use super::types::{AgentEvent, EmitFn};
use leash_protocol::tool::{Tool, ToolUpdates};
use leash_protocol::{Message, ToolCall, ToolResultMessage};

/// How the calls of a batch run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ToolExecution {
    /// Prepared calls run concurrently (the default).
    #[default]
    Parallel,
    /// Each call is prepared, run and finished before the next.
    Sequential,
}

/// What a batch produced.
#[derive(Debug, Clone, Default)]
pub struct BatchOutcome {
    /// One result per call, in the model's order.
    pub results: Vec<ToolResultMessage>,
    /// Whether the batch asked for no automatic follow-up request.
    pub terminate: bool,
}

/// The termination rule: a non-empty batch in which **every** result asks
/// to terminate. A mixed batch goes on.
pub(crate) fn batch_terminates(results: &[Finalized]) -> bool {
    !results.is_empty() && results.iter().all(|result| result.output.terminate)
}

/// Runs a batch in the configured mode; any tool declared sequential makes
/// the whole batch sequential.
pub(crate) async fn execute_tool_calls(
    calls: &[ToolCall],
    mode: ToolExecution,
    batch: &BatchContext<'_>,
) -> BatchOutcome {
    let any_sequential = calls
        .iter()
        .any(|call| batch.tools.is_sequential(&call.name));
    if mode == ToolExecution::Sequential || any_sequential {
        execute_sequentially(calls, batch).await
    } else {
        execute_in_parallel(calls, batch).await
    }
}

/// Fails every call of a `length`-truncated message without running it,
/// each call's start, end and result message in turn (Pi's
/// `failToolCallsFromTruncatedMessage`). Such a batch never terminates: the
/// model must get a chance to retry.
pub(crate) async fn fail_truncated_calls(calls: &[ToolCall], emit: &EmitFn<'_>) -> BatchOutcome {
    let mut results = Vec::with_capacity(calls.len());
    for call in calls {
        emit_start(call, emit).await;
        let finalized = Finalized::refused(TRUNCATED_CALL);
        let message = emit_end(call, &finalized, emit).await;
        emit_result_messages(std::slice::from_ref(&message), emit).await;
        results.push(message);
    }
    BatchOutcome {
        results,
        terminate: false,
    }
}

async fn execute_sequentially(calls: &[ToolCall], batch: &BatchContext<'_>) -> BatchOutcome {
    let mut finalized_all = Vec::with_capacity(calls.len());
    let mut results = Vec::with_capacity(calls.len());
    for (index, call) in calls.iter().enumerate() {
        emit_start(call, batch.emit).await;
        // After an abort, preparation answers the remaining calls with
        // "Operation aborted" without running them.
        let finalized = match prepare_tool_call(call, index, batch).await {
            Prepared::Immediate(finalized) => finalized,
            Prepared::Run { tool, args } => {
                let (sink, mut updates) = mpsc::unbounded_channel();
                let run =
                    execute_and_forward(tool.as_ref(), call, args.clone(), index, batch, sink);
                tokio::pin!(run);
                let executed = loop {
                    tokio::select! {
                        biased;
                        Some((_, partial)) = updates.recv() => {
                            emit_update(call, partial, batch.emit).await;
                        }
                        executed = &mut run => break executed,
                    }
                };
                drain_updates(&mut updates, calls, batch.emit).await;
                finalize_executed_tool_call(call, &args, executed, batch).await
            }
        };
        let message = emit_end(call, &finalized, batch.emit).await;
        emit_result_messages(std::slice::from_ref(&message), batch.emit).await;
        results.push(message);
        finalized_all.push(finalized);
    }
    BatchOutcome {
        results,
        terminate: batch_terminates(&finalized_all),
    }
}

async fn execute_in_parallel(calls: &[ToolCall], batch: &BatchContext<'_>) -> BatchOutcome {
    let mut finalized: Vec<Option<Finalized>> = vec![None; calls.len()];
    let mut messages: Vec<Option<ToolResultMessage>> = vec![None; calls.len()];
    let mut runnable = Vec::new();
    for (index, call) in calls.iter().enumerate() {
        emit_start(call, batch.emit).await;
        match prepare_tool_call(call, index, batch).await {
            Prepared::Immediate(outcome) => {
                messages[index] = Some(emit_end(call, &outcome, batch.emit).await);
                finalized[index] = Some(outcome);
            }
            Prepared::Run { tool, args } => runnable.push((index, tool, args)),
        }
    }

    let (sink, mut updates) = mpsc::unbounded_channel::<(usize, Value)>();
    let mut running: FuturesUnordered<_> = runnable
        .into_iter()
        .map(|(index, tool, args)| {
            let sink = sink.clone();
            let call = &calls[index];
            async move {
                // Aborted after preparation: answered without running and
                // without `after_tool_call`, as in Pi.
                if batch.cancel.is_cancelled() {
                    return (index, args, None);
                }
                let executed =
                    execute_and_forward(tool.as_ref(), call, args.clone(), index, batch, sink)
                        .await;
                (index, args, Some(executed))
            }
        })
        .collect();
    drop(sink);

    // Ends go out in completion order; updates as they come.
    while !running.is_empty() {
        tokio::select! {
            biased;
            Some((index, partial)) = updates.recv() => {
                if let Some(call) = calls.get(index) {
                    emit_update(call, partial, batch.emit).await;
                }
            }
            Some((index, args, executed)) = running.next() => {
                // Every update the call sent before it settled goes first.
                drain_updates(&mut updates, calls, batch.emit).await;
                let call = &calls[index];
                let outcome = match executed {
                    Some(executed) => finalize_executed_tool_call(call, &args, executed, batch).await,
                    None => Finalized::refused(ABORTED),
                };
                messages[index] = Some(emit_end(call, &outcome, batch.emit).await);
                finalized[index] = Some(outcome);
            }
        }
    }

    // Result messages go out in the model's order.
    let results: Vec<ToolResultMessage> = messages.into_iter().flatten().collect();
    emit_result_messages(&results, batch.emit).await;
    let finalized: Vec<Finalized> = finalized.into_iter().flatten().collect();
    BatchOutcome {
        results,
        terminate: batch_terminates(&finalized),
    }
}

/// Runs one call with an update channel of its own, forwarding its updates
/// to `sink` while it runs. Once `execute` settles the channel is closed, so
/// an update the tool sends later (from a task it left behind) is dropped:
/// no `tool_execution_update` may follow the call's `tool_execution_end`
/// (ARCHITECTURE.md §1.3; Pi stops accepting a call's updates when its execute settles).
async fn execute_and_forward(
    tool: &dyn Tool,
    call: &ToolCall,
    args: Value,
    index: usize,
    batch: &BatchContext<'_>,
    sink: mpsc::UnboundedSender<(usize, Value)>,
) -> Finalized {
    let (own_sink, mut own) = mpsc::unbounded_channel();
    let run = execute_prepared_tool_call(
        tool,
        call,
        args,
        batch.cancel,
        ToolUpdates::new(index, own_sink),
    );
    tokio::pin!(run);
    let executed = loop {
        tokio::select! {
            biased;
            Some(update) = own.recv() => {
                let _ = sink.send(update);
            }
            executed = &mut run => break executed,
        }
    };
    own.close();
    while let Ok(update) = own.try_recv() {
        let _ = sink.send(update);
    }
    executed
}

async fn drain_updates(
    updates: &mut mpsc::UnboundedReceiver<(usize, Value)>,
    calls: &[ToolCall],
    emit: &EmitFn<'_>,
) {
    while let Ok((index, partial)) = updates.try_recv() {
        if let Some(call) = calls.get(index) {
            emit_update(call, partial, emit).await;
        }
    }
}

async fn emit_start(call: &ToolCall, emit: &EmitFn<'_>) {
    emit.emit(AgentEvent::ToolExecutionStart {
        tool_call_id: call.id.clone(),
        tool_name: call.name.clone(),
        args: call.arguments.clone(),
    })
    .await;
}

async fn emit_update(call: &ToolCall, partial: Value, emit: &EmitFn<'_>) {
    emit.emit(AgentEvent::ToolExecutionUpdate {
        tool_call_id: call.id.clone(),
        tool_name: call.name.clone(),
        partial,
    })
    .await;
}

/// Emits `tool_execution_end` and returns the call's result message.
async fn emit_end(call: &ToolCall, finalized: &Finalized, emit: &EmitFn<'_>) -> ToolResultMessage {
    let message = tool_result_message(call, finalized);
    emit.emit(AgentEvent::ToolExecutionEnd {
        tool_call_id: call.id.clone(),
        tool_name: call.name.clone(),
        result: message.clone(),
        is_error: finalized.is_error,
        duration_ms: finalized.duration_ms,
    })
    .await;
    message
}

async fn emit_result_messages(results: &[ToolResultMessage], emit: &EmitFn<'_>) {
    for result in results {
        let message = Message::ToolResult(result.clone());
        emit.emit(AgentEvent::MessageStart {
            message: message.clone(),
        })
        .await;
        emit.emit(AgentEvent::MessageEnd { message }).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use leash_protocol::ToolOutput;

    fn outcome(terminate: bool) -> Finalized {
        Finalized {
            output: ToolOutput {
                terminate,
                ..ToolOutput::default()
            },
            is_error: true,
            duration_ms: None,
        }
    }

    #[test]
    fn an_empty_batch_never_terminates() {
        assert!(!batch_terminates(&[]));
    }

    #[test]
    fn every_result_must_ask_to_terminate() {
        assert!(batch_terminates(&[outcome(true), outcome(true)]));
        assert!(!batch_terminates(&[outcome(true), outcome(false)]));
        assert!(!batch_terminates(&[outcome(false)]));
    }
}

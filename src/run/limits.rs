//! The command line's guards, as loop hooks: the turn limit and the token
//! budget (`finish_turn`, `--max-turns`, `--max-tokens-total`), the one
//! corrective turn of `--output-schema` (`finish_turn`, through the steering
//! queue), and the repeat guard (`before_tool_call`, `--max-same-call`).
//! They also record what they saw, so the exit code can say which one ended
//! the run.
//!
//! A guard never ends a run silently: every block carries a reason the model
//! and the user can read.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock, PoisonError};

use futures::future::BoxFuture;
use serde_json::Value;

use crate::agent::QueueHandle;
use crate::agent::hooks::{AgentHooks, BeforeToolCall, FinishedTurn, ToolCallContext};
use crate::agent::types::{AssistantMessage, Block, Message, StopReason, ToolCall, TurnDecision};
use crate::outcome::GuardReport;
use crate::output_schema::{OutputSchema, correction_message};

/// The guards of one run.
#[derive(Debug)]
pub struct RunGuards {
    max_turns: u32,
    max_same_call: u32,
    budget: Option<u64>,
    output: Option<Arc<OutputSchema>>,
    /// Where the corrective message goes; set once the agent exists.
    queues: OnceLock<QueueHandle>,
    state: Mutex<GuardState>,
}

#[derive(Debug, Default)]
struct GuardState {
    turns: u32,
    report: GuardReport,
    calls: HashMap<String, u32>,
    corrections: u32,
}

impl std::fmt::Debug for QueueHandle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("QueueHandle")
    }
}

impl RunGuards {
    /// Guards for `--max-turns` and `--max-same-call`.
    pub fn new(max_turns: u32, max_same_call: u32) -> Self {
        RunGuards {
            max_turns,
            max_same_call,
            budget: None,
            output: None,
            queues: OnceLock::new(),
            state: Mutex::new(GuardState::default()),
        }
    }

    /// Adds the `--max-tokens-total` budget.
    pub fn with_budget(mut self, budget: Option<u64>) -> Self {
        self.budget = budget;
        self
    }

    /// Adds the `--output-schema` check and its corrective turn.
    pub fn with_output_schema(mut self, schema: Option<Arc<OutputSchema>>) -> Self {
        self.output = schema;
        self
    }

    /// Connects the guards to the agent's queues (for the corrective turn
    /// and to see pending follow-ups).
    pub fn attach(&self, queues: QueueHandle) {
        let _ = self.queues.set(queues);
    }

    /// What the guards saw so far.
    pub fn report(&self) -> GuardReport {
        self.state
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .report
    }

    /// Turns counted so far (error and aborted turns do not count).
    pub fn turns(&self) -> u32 {
        self.state
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .turns
    }
}

/// The limit rule: the N-th counted turn still asked for tools. A text
/// answer in turn N is a normal success.
pub fn turn_limit_reached(turns: u32, max_turns: u32, message: &AssistantMessage) -> bool {
    turns >= max_turns && message.has_tool_calls()
}

/// The budget rule: the run has used more tokens than it may.
pub fn budget_exceeded(used: u64, budget: Option<u64>) -> bool {
    budget.is_some_and(|budget| used > budget)
}

/// The repeat guard's key: the tool's name and its arguments as canonical
/// JSON (object keys sorted at every level), so key order cannot dodge it.
pub fn repeat_key(call: &ToolCall, args: &Value) -> String {
    let mut key = call.name.clone();
    key.push(':');
    write_canonical(args, &mut key);
    key
}

fn write_canonical(value: &Value, out: &mut String) {
    match value {
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            out.push('{');
            for (i, key) in keys.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push_str(&Value::String(key.clone()).to_string());
                out.push(':');
                write_canonical(&map[key], out);
            }
            out.push('}');
        }
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_canonical(item, out);
            }
            out.push(']');
        }
        scalar => out.push_str(&scalar.to_string()),
    }
}

impl RunGuards {
    /// The corrective turn: a final text answer that does not comply gets
    /// one steering message with the problems, if a turn is left for it.
    fn needs_correction(&self, state: &mut GuardState, message: &AssistantMessage) -> bool {
        let (Some(schema), Some(queues)) = (&self.output, self.queues.get()) else {
            return false;
        };
        if message.has_tool_calls()
            || message.stop_reason != StopReason::Stop
            || state.corrections > 0
            || state.turns >= self.max_turns
        {
            return false;
        }
        let Err(problem) = schema.check(&message.text()) else {
            return false;
        };
        state.corrections += 1;
        queues.steer(Message::user_text(correction_message(&problem)));
        true
    }
}

impl AgentHooks for RunGuards {
    fn before_tool_call<'a>(
        &'a self,
        hook: ToolCallContext<'a>,
    ) -> BoxFuture<'a, Result<BeforeToolCall, String>> {
        let (call, args) = (hook.call, hook.args);
        let key = repeat_key(call, args);
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        let count = state.calls.entry(key).or_insert(0);
        *count += 1;
        let verdict = (*count > self.max_same_call).then(|| Block {
            reason: Some(format!(
                "blocked: {} was already called {} time{} with these exact arguments; use the results you have",
                call.name,
                self.max_same_call,
                if self.max_same_call == 1 { "" } else { "s" }
            )),
            terminate: true,
        });
        Box::pin(async move { Ok(verdict.map_or(BeforeToolCall::Run, BeforeToolCall::Block)) })
    }

    fn finish_turn<'a>(&'a self, turn: FinishedTurn<'a>) -> BoxFuture<'a, Option<TurnDecision>> {
        let decision = if matches!(
            turn.message.stop_reason,
            StopReason::Error | StopReason::Aborted
        ) {
            // Hard exits: they never count toward the limit.
            None
        } else {
            let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
            state.turns += 1;
            // A turn after the corrective message: the correction ran (it
            // may still be ended early by the budget or the turn limit).
            state.report.corrected = state.corrections > 0;
            state.report.batch_terminated = turn.batch_terminated;
            state.report.tokens_used = state
                .report
                .tokens_used
                .saturating_add(turn.message.usage.total_tokens);
            let mut wants_more = (turn.message.has_tool_calls() && !turn.batch_terminated)
                || self.queues.get().is_some_and(QueueHandle::has_follow_ups);
            if self.needs_correction(&mut state, turn.message) {
                wants_more = true;
            }
            if wants_more && budget_exceeded(state.report.tokens_used, self.budget) {
                state.report.budget_exhausted = true;
                Some(TurnDecision::End)
            } else if turn_limit_reached(state.turns, self.max_turns, turn.message) {
                state.report.turn_limit_reached = true;
                Some(TurnDecision::End)
            } else {
                None
            }
        };
        Box::pin(async move { decision })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::agent::types::AssistantContent;
    use serde_json::json;
    use tokio_util::sync::CancellationToken;

    /// Asks `before_tool_call` about one call; `None` lets it run.
    async fn before(
        guards: &RunGuards,
        call: &ToolCall,
        args: &Value,
    ) -> Result<Option<Block>, String> {
        let (message, cancel) = (AssistantMessage::default(), CancellationToken::new());
        let hook = ToolCallContext {
            assistant_message: &message,
            call,
            args,
            context: &[],
            cancel: &cancel,
        };
        guards
            .before_tool_call(hook)
            .await
            .map(|decision| match decision {
                BeforeToolCall::Block(block) => Some(block),
                BeforeToolCall::Run | BeforeToolCall::RunWith(_) => None,
            })
    }

    fn call(name: &str) -> ToolCall {
        ToolCall {
            id: "c".into(),
            name: name.into(),
            arguments: json!({}),
        }
    }

    fn with_tool_call() -> AssistantMessage {
        AssistantMessage {
            content: vec![AssistantContent::ToolCall(call("read_file"))],
            stop_reason: StopReason::ToolUse,
            ..AssistantMessage::default()
        }
    }

    #[test]
    fn key_order_does_not_change_the_repeat_key() {
        let a = repeat_key(
            &call("t"),
            &json!({"b": 1, "a": {"y": 2, "x": [1, {"q": 0, "p": 1}]}}),
        );
        let b = repeat_key(
            &call("t"),
            &json!({"a": {"x": [1, {"p": 1, "q": 0}], "y": 2}, "b": 1}),
        );
        assert_eq!(a, b);
        assert_eq!(a, r#"t:{"a":{"x":[1,{"p":1,"q":0}],"y":2},"b":1}"#);
    }

    #[tokio::test]
    async fn the_third_identical_call_is_blocked_with_terminate() {
        let guards = RunGuards::new(4, 2);
        let args = json!({"path": "a"});
        let mut verdicts = Vec::new();
        for _ in 0..3 {
            verdicts.push(before(&guards, &call("read_file"), &args).await);
        }
        assert_eq!(verdicts[0], Ok(None));
        assert_eq!(verdicts[1], Ok(None));
        let Ok(Some(block)) = &verdicts[2] else {
            panic!("not blocked: {verdicts:?}");
        };
        assert!(block.terminate);
        assert_eq!(
            block.reason.as_deref(),
            Some(
                "blocked: read_file was already called 2 times with these exact arguments; use the results you have"
            )
        );
        // Other arguments are another key.
        let other = before(&guards, &call("read_file"), &json!({"path": "b"})).await;
        assert_eq!(other, Ok(None));
    }

    #[tokio::test]
    async fn the_limit_ends_the_nth_turn_only_when_it_still_asks_for_tools() {
        let guards = RunGuards::new(2, 2);
        let text = AssistantMessage::default();
        let tools = with_tool_call();
        let cancel = CancellationToken::new();
        let turn = |message| FinishedTurn {
            message,
            tool_results: &[],
            context: &[],
            new_messages: &[],
            batch_terminated: false,
            cancel: &cancel,
        };
        assert_eq!(guards.finish_turn(turn(&tools)).await, None);
        assert_eq!(guards.finish_turn(turn(&text)).await, None);
        assert!(!guards.report().turn_limit_reached);
        assert_eq!(
            guards.finish_turn(turn(&tools)).await,
            Some(TurnDecision::End)
        );
        assert!(guards.report().turn_limit_reached);
        assert_eq!(guards.turns(), 3);
    }

    #[tokio::test]
    async fn error_turns_do_not_count() {
        let guards = RunGuards::new(1, 2);
        let failed = AssistantMessage {
            stop_reason: StopReason::Error,
            ..with_tool_call()
        };
        let turn = FinishedTurn {
            message: &failed,
            tool_results: &[],
            context: &[],
            new_messages: &[],
            batch_terminated: false,
            cancel: &CancellationToken::new(),
        };
        assert_eq!(guards.finish_turn(turn).await, None);
        assert_eq!(guards.turns(), 0);
    }
}

//! The command line's limits, as loop hooks: the turn limit and the token
//! and cost budgets (`finish_turn`, `--max-turns`, `--max-tokens-total`,
//! `--max-cost`), the one
//! corrective turn of `--output-schema` (`finish_turn`, through the steering
//! queue), and the repeat guard (`before_tool_call`, `--max-same-call`).
//! They also record what they saw, so the exit code can say which one ended
//! the run.
//!
//! The repeat guard counts identical calls since the last file a writing
//! tool of this run changed: a call repeated after a change may see other
//! results, so it is a new question, never blocked as a repeat.
//!
//! A limit never ends a run silently: every block carries a reason the model
//! and the user can read.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use futures::future::BoxFuture;
use serde_json::Value;

use crate::policy::cost::{Cost, Price, cost_exceeded};
use crate::policy::output_schema::{OutputSchema, correction_message};
use leash_agent::QueueHandle;
use leash_agent::types::{Block, TurnDecision};
use leash_agent::{AgentHooks, BeforeToolCall, FinishedTurn, ToolCallContext};
use leash_protocol::{AssistantMessage, Message, StopReason, ToolCall};
use leash_tools::changes::FileChange;

/// What the run's limits saw, for the decision.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct LimitReport {
    /// The turn limit ended the run.
    pub turn_limit_reached: bool,
    /// The last tool batch asked to terminate (every result did).
    pub batch_terminated: bool,
    /// The token budget stopped the run before a request it wanted.
    pub budget_exhausted: bool,
    /// Tokens the run used, as the budget counts them.
    pub tokens_used: u64,
    /// The budget that stopped the run was `--max-cost`, not `--max-tokens-total`.
    pub cost_exhausted: bool,
    /// What the run cost so far, at `--price` (zero without one).
    pub cost_used: Cost,
    /// The `--output-schema` corrective turn was asked for.
    pub corrected: bool,
    /// The repeat guard (`--max-same-call`) blocked a call in the last turn.
    pub repeat_blocked: bool,
}

/// The limits of one run, as the flags give them.
#[derive(Debug, Clone)]
pub struct LimitSettings {
    /// `--max-turns`.
    pub max_turns: u32,
    /// `--max-same-call`.
    pub max_same_call: u32,
    /// `--max-tokens-total`.
    pub max_tokens_total: Option<u64>,
    /// `--price` (or the config file's price for the model): what a turn costs.
    pub price: Option<Price>,
    /// `--max-cost` (config ensures a price comes with it).
    pub max_cost: Option<Cost>,
    /// `--output-schema`, compiled.
    pub output_schema: Option<Arc<OutputSchema>>,
}

impl LimitSettings {
    /// `--max-turns` and `--max-same-call`, with no budget and no schema.
    pub fn new(max_turns: u32, max_same_call: u32) -> Self {
        LimitSettings {
            max_turns,
            max_same_call,
            max_tokens_total: None,
            price: None,
            max_cost: None,
            output_schema: None,
        }
    }
}

/// The limits of one run at work, as loop hooks.
#[derive(Debug)]
pub struct RunLimits {
    limits: LimitSettings,
    /// Where the corrective message goes: the queues of the run's agent.
    queues: QueueHandle,
    state: Mutex<LimitState>,
}

#[derive(Debug, Default)]
struct LimitState {
    turns: u32,
    report: LimitReport,
    /// The repeat guard blocked a call in the current turn.
    repeat_blocked: bool,
    calls: HashMap<String, Repeats>,
    corrections: u32,
}

/// How often one call was made since the run last changed a file.
#[derive(Debug, Default, Clone, Copy)]
struct Repeats {
    /// Identical calls counted.
    count: u32,
    /// The run's changes ([`changes_in`]) when they were counted.
    changes: usize,
}

impl RunLimits {
    /// `limits` at work on the run of the agent that holds `queues`
    /// (see [`leash_agent::Agent::with_queues`]).
    pub fn new(limits: LimitSettings, queues: QueueHandle) -> Self {
        RunLimits {
            limits,
            queues,
            state: Mutex::new(LimitState::default()),
        }
    }

    /// What the limits saw so far.
    pub fn report(&self) -> LimitReport {
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

/// The files this run changed so far, as a count: every tool result in
/// `context` whose details record a [`FileChange`]. A write that changed
/// nothing (the same content again, an edit that failed) records none.
pub fn changes_in(context: &[Message]) -> usize {
    context
        .iter()
        .filter(|message| match message {
            Message::ToolResult(result) => {
                !result.is_error && FileChange::from_details(&result.details).is_some()
            }
            _ => false,
        })
        .count()
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

/// Why the repeat guard blocked a call. No file changed since the earlier
/// identical calls, so their results are still current.
fn repeat_reason(tool: &str, max_same_call: u32) -> String {
    format!(
        "blocked: {tool} was already called {max_same_call} time{} with these exact arguments \
         and no file changed since, so those results still hold; use them",
        if max_same_call == 1 { "" } else { "s" }
    )
}

impl RunLimits {
    /// The corrective turn: a final text answer that does not comply gets
    /// one steering message with the problems, if a turn is left for it.
    fn needs_correction(&self, state: &mut LimitState, message: &AssistantMessage) -> bool {
        let Some(schema) = &self.limits.output_schema else {
            return false;
        };
        if message.has_tool_calls()
            || message.stop_reason != StopReason::Stop
            || state.corrections > 0
            || state.turns >= self.limits.max_turns
        {
            return false;
        }
        let Err(problem) = schema.check(&message.text()) else {
            return false;
        };
        state.corrections += 1;
        self.queues
            .steer(Message::user_text(correction_message(&problem)));
        true
    }
}

impl AgentHooks for RunLimits {
    fn before_tool_call<'a>(
        &'a self,
        hook: ToolCallContext<'a>,
    ) -> BoxFuture<'a, Result<BeforeToolCall, String>> {
        let (call, args) = (hook.call, hook.args);
        let key = repeat_key(call, args);
        let changes = changes_in(hook.context);
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        let repeats = state.calls.entry(key).or_default();
        // A file changed since these were counted: the call may answer
        // differently now.
        if repeats.changes != changes {
            *repeats = Repeats { count: 0, changes };
        }
        repeats.count += 1;
        let max_same_call = self.limits.max_same_call;
        let verdict = (repeats.count > max_same_call).then(|| Block {
            reason: Some(repeat_reason(&call.name, max_same_call)),
            terminate: true,
        });
        state.repeat_blocked |= verdict.is_some();
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
            state.report.repeat_blocked = std::mem::take(&mut state.repeat_blocked);
            state.report.tokens_used = state
                .report
                .tokens_used
                .saturating_add(turn.message.usage.total_tokens);
            if let Some(price) = &self.limits.price {
                state.report.cost_used =
                    state.report.cost_used.plus(price.cost(&turn.message.usage));
            }
            let mut wants_more = (turn.message.has_tool_calls() && !turn.batch_terminated)
                || self.queues.has_follow_ups();
            if self.needs_correction(&mut state, turn.message) {
                wants_more = true;
            }
            if wants_more && budget_exceeded(state.report.tokens_used, self.limits.max_tokens_total)
            {
                state.report.budget_exhausted = true;
                Some(TurnDecision::End)
            } else if wants_more && cost_exceeded(state.report.cost_used, self.limits.max_cost) {
                state.report.budget_exhausted = true;
                state.report.cost_exhausted = true;
                Some(TurnDecision::End)
            } else if turn_limit_reached(state.turns, self.limits.max_turns, turn.message) {
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
#[path = "limits_tests.rs"]
mod tests;

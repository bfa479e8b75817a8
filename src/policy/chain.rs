//! The chain: one [`AgentHooks`] that asks, in order, the built-in limits
//! (`--max-same-call`, the turn limit, the budget), then `--deny-tool` /
//! `--allow-tool`, then every `--hook` of the event in the order given.
//! The first block wins and ends the chain; an argument replacement is
//! handed on to the next hook, and the patterns judge the arguments the
//! tool will really run with.
//!
//! The built-ins come first because they judge what the *model* asked
//! for: the repeat guard counts every identical call the model makes,
//! whatever a later hook does with it, and a call it blocks never starts a
//! hook process.
//!
//! Every failure of a hook fails closed (docs/src/hooks.md "Hooks"): the call is
//! blocked, the result becomes an error, or the run ends — each with a
//! reason that names the hook, reported to the event stream.

use std::path::PathBuf;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use futures::future::BoxFuture;
use serde_json::Value;

use super::command_hooks::answer::{self, Answer, Numbered, Problem};
use super::command_hooks::spec::HookEvent;
use super::command_hooks::wire::{
    Action, AfterReply, Assistant, BeforeReply, CallInput, FinishReply, HookInput, ResultInput,
    parse,
};
use super::command_hooks::{HookFailure, HookSettings, HookVerdict};
use super::tool_patterns::Policy;
use crate::policy::limits::{LimitSettings, RunLimits, budget_exceeded};
use leash_agent::types::{Block, ResultOverride, TurnDecision};
use leash_agent::{
    AgentHooks, BeforeToolCall, ExecutedToolCall, FinishedTurn, QueueHandle, ToolCallContext,
};
use leash_protocol::secret::ApiKey;
use leash_protocol::trace_context;
use leash_protocol::{Content, Message, StopReason, Usage};
use leash_tools::sandbox::Sandbox;

/// Where the chain reports a hook that failed (the event stream).
pub type FailureSink = Arc<dyn Fn(HookFailure) + Send + Sync>;

/// What the chain keeps between calls.
#[derive(Debug, Default)]
struct ChainState {
    /// Turns finished so far.
    turns: u32,
    /// Usage of the finished turns.
    usage: Usage,
    /// How a `finish-turn` hook decided the end of the run.
    verdict: Option<HookVerdict>,
}

/// The hook chain of one run.
pub struct HookChain {
    builtins: Arc<RunLimits>,
    limits: LimitSettings,
    policy: Policy,
    hooks: Vec<Numbered>,
    timeout: Duration,
    cwd: PathBuf,
    failures: FailureSink,
    /// Where a `finish-turn` hook's message to the model goes.
    queues: QueueHandle,
    /// The keys leash knows: never in a hook's environment, and `***` in
    /// whatever a hook answers (a reason or a result goes to the model and
    /// the events).
    keys: Arc<[ApiKey]>,
    /// The file tools' root, against which the patterns normalise a path
    /// argument (`None` when no file tool is offered).
    sandbox: Option<Arc<Sandbox>>,
    /// Who else sees the provider's stream events and each hook's run
    /// (the run's trace).
    observers: Observers,
    state: Mutex<ChainState>,
}

/// A watcher of the provider's stream events, called inline: it must
/// return at once.
pub type ProviderObserver = Arc<dyn Fn(&leash_protocol::StreamEvent) + Send + Sync>;

/// A watcher of each hook's run once it is over, called inline.
pub type HookObserver = Arc<dyn Fn(&HookRun<'_>) + Send + Sync>;

/// Who watches the chain besides the loop (the run's trace); no one by
/// default.
#[derive(Clone, Default)]
pub struct Observers {
    /// The provider's stream events.
    pub provider: Option<ProviderObserver>,
    /// Each hook's run.
    pub hooks: Option<HookObserver>,
}

/// One hook's run, as a watcher sees it: no command, input or answer.
pub struct HookRun<'a> {
    /// Its place among the `--hook` flags (1 for the first).
    pub number: usize,
    /// The event it ran for (`before_tool_call`, ...).
    pub event: &'static str,
    /// The tool call it judged, if any.
    pub tool_call_id: Option<&'a str>,
    /// When it started.
    pub started: std::time::SystemTime,
    /// `answered`, `blocked`, `failed` or `aborted`.
    pub outcome: &'static str,
    /// The span id its `TRACEPARENT` named, when traced.
    pub span_id: Option<u64>,
}

impl HookChain {
    /// The chain of a run: `builtins` first (with the `limits` they
    /// enforce), then `settings`; failures go to `failures`, a
    /// `finish-turn` hook's message to the model to `queues` (the run's
    /// agent's).
    pub fn new(
        builtins: Arc<RunLimits>,
        limits: LimitSettings,
        settings: &HookSettings,
        failures: FailureSink,
        queues: QueueHandle,
    ) -> Self {
        HookChain {
            builtins,
            limits,
            policy: settings.policy.clone(),
            hooks: settings
                .hooks
                .iter()
                .enumerate()
                .map(|(index, spec)| Numbered {
                    number: index + 1,
                    spec: spec.clone(),
                })
                .collect(),
            timeout: settings.timeout,
            cwd: std::env::current_dir().unwrap_or_default(),
            failures,
            queues,
            keys: Arc::from([]),
            sandbox: None,
            observers: Observers::default(),
            state: Mutex::new(ChainState::default()),
        }
    }

    /// The chain with the run's known keys (see the field).
    pub fn with_keys(mut self, keys: Arc<[ApiKey]>) -> Self {
        self.keys = keys;
        self
    }

    /// The chain with its watchers (see the field).
    pub fn with_observers(mut self, observers: Observers) -> Self {
        self.observers = observers;
        self
    }

    /// Runs one hook; its watcher, if any, hears how it went.
    async fn ask(
        &self,
        hook: &Numbered,
        input: &HookInput<'_>,
        cancel: &tokio_util::sync::CancellationToken,
        tool_call_id: Option<&str>,
    ) -> Result<Answer, Problem> {
        let started = std::time::SystemTime::now();
        // Traced: the hook's own span, named first: its `TRACEPARENT`.
        let reserved = trace_context::reserve(tool_call_id.map(trace_context::Scope::Tool));
        let traceparent = reserved.as_ref().map(|span| span.traceparent.as_str());
        let asked = answer::ask(hook, input, self.timeout, cancel, &self.keys, traceparent).await;
        if let Some(observer) = &self.observers.hooks {
            let outcome = match &asked {
                Ok(Answer::Stdout(_)) => "answered",
                Ok(Answer::Block(_)) => "blocked",
                Err(Problem::Failed(_)) => "failed",
                Err(Problem::Aborted) => "aborted",
            };
            observer(&HookRun {
                number: hook.number,
                event: input.event,
                tool_call_id,
                started,
                outcome,
                span_id: reserved.map(|span| span.span_id),
            });
        }
        asked
    }

    /// The chain with the file tools' root (see the field).
    pub fn with_sandbox(mut self, sandbox: Option<Arc<Sandbox>>) -> Self {
        self.sandbox = sandbox;
        self
    }

    /// How a `finish-turn` hook decided the end of the run, if one did.
    pub fn verdict(&self) -> Option<HookVerdict> {
        self.lock().verdict.clone()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, ChainState> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn of(&self, event: HookEvent) -> impl Iterator<Item = &Numbered> {
        self.hooks
            .iter()
            .filter(move |hook| hook.spec.event == event)
    }

    /// The turn in progress and the usage so far, this turn's reply's
    /// `current` usage included.
    fn progress(&self, current: &Usage) -> (u32, Usage) {
        let state = self.lock();
        let mut usage = state.usage;
        usage.add(current);
        (state.turns.saturating_add(1), usage)
    }

    /// Reports a failure and returns the reason that names the hook.
    fn fail(
        &self,
        hook: &Numbered,
        tool_call_id: Option<&str>,
        problem: &str,
        consequence: &str,
    ) -> String {
        let reason = format!("{} failed: {problem}; {consequence}", hook.name());
        (self.failures)(HookFailure {
            hook: hook.name(),
            event: hook.spec.event,
            tool_call_id: tool_call_id.map(str::to_owned),
            reason: reason.clone(),
        });
        reason
    }
}

fn block(reason: String, terminate: bool) -> BeforeToolCall {
    BeforeToolCall::Block(Block {
        reason: Some(reason),
        terminate,
    })
}

impl AgentHooks for HookChain {
    fn on_provider_event(&self, event: &leash_protocol::StreamEvent) {
        if let Some(observer) = &self.observers.provider {
            observer(event);
        }
    }

    fn before_tool_call<'a>(
        &'a self,
        context: ToolCallContext<'a>,
    ) -> BoxFuture<'a, Result<BeforeToolCall, String>> {
        Box::pin(async move {
            let builtin = self.builtins.before_tool_call(context).await?;
            if matches!(builtin, BeforeToolCall::Block(_)) {
                return Ok(builtin);
            }
            let call = context.call;
            if let Some(reason) =
                self.policy
                    .check(&call.name, context.args, self.sandbox.as_deref())
            {
                return Ok(block(reason, false));
            }
            let (turn, usage) = self.progress(&context.assistant_message.usage);
            let mut args = context.args.clone();
            let mut replaced = false;
            for hook in self.of(HookEvent::BeforeToolCall) {
                let input = HookInput {
                    event: HookEvent::BeforeToolCall.as_str(),
                    turn,
                    usage,
                    cwd: &self.cwd,
                    tool_call: Some(CallInput::new(call, &args)),
                    result: None,
                    message: None,
                    tool_results: None,
                };
                let consequence = "the call was blocked";
                let fail = |problem: &str| self.fail(hook, Some(&call.id), problem, consequence);
                let reply = match self.ask(hook, &input, context.cancel, Some(&call.id)).await {
                    Err(Problem::Aborted) => return Ok(BeforeToolCall::Run),
                    Err(Problem::Failed(problem)) => return Ok(block(fail(&problem), false)),
                    Ok(Answer::Block(reason)) => {
                        let reason =
                            reason.unwrap_or_else(|| format!("blocked by {}", hook.name()));
                        return Ok(block(reason, false));
                    }
                    Ok(Answer::Stdout(stdout)) => {
                        match parse::<BeforeReply>(HookEvent::BeforeToolCall, &stdout) {
                            Ok(reply) => reply,
                            Err(problem) => return Ok(block(fail(&problem), false)),
                        }
                    }
                };
                if reply.block {
                    let reason = reply
                        .reason
                        .filter(|reason| !reason.trim().is_empty())
                        .unwrap_or_else(|| format!("blocked by {}", hook.name()));
                    return Ok(block(reason, reply.terminate));
                }
                if reply.reason.is_some() || reply.terminate {
                    let problem = r#"its output has "reason" or "terminate" without "block": true"#;
                    return Ok(block(fail(problem), false));
                }
                if let Some(arguments) = reply.arguments {
                    args = Value::Object(arguments);
                    replaced = true;
                }
            }
            if !replaced {
                return Ok(BeforeToolCall::Run);
            }
            // The patterns judge the arguments the tool will run with.
            if let Some(reason) = self
                .policy
                .check(&call.name, &args, self.sandbox.as_deref())
            {
                return Ok(block(reason, false));
            }
            Ok(BeforeToolCall::RunWith(args))
        })
    }

    fn after_tool_call<'a>(
        &'a self,
        executed: ExecutedToolCall<'a>,
    ) -> BoxFuture<'a, Result<Option<ResultOverride>, String>> {
        Box::pin(async move {
            let context = executed.call;
            let (turn, usage) = self.progress(&context.assistant_message.usage);
            let mut content = executed.result.text();
            let mut is_error = executed.is_error;
            let mut changes: Option<ResultOverride> = None;
            for hook in self.of(HookEvent::AfterToolCall) {
                let input = HookInput {
                    event: HookEvent::AfterToolCall.as_str(),
                    turn,
                    usage,
                    cwd: &self.cwd,
                    tool_call: Some(CallInput::new(context.call, context.args)),
                    result: Some(ResultInput {
                        content: content.clone(),
                        is_error,
                    }),
                    message: None,
                    tool_results: None,
                };
                let consequence = "its result was withheld";
                let fail =
                    |problem: &str| self.fail(hook, Some(&context.call.id), problem, consequence);
                let reply = match self
                    .ask(hook, &input, context.cancel, Some(&context.call.id))
                    .await
                {
                    Err(Problem::Aborted) => return Ok(changes),
                    Err(Problem::Failed(problem)) => return Err(fail(&problem)),
                    Ok(Answer::Block(reason)) => {
                        return Err(
                            reason.unwrap_or_else(|| format!("result withheld by {}", hook.name()))
                        );
                    }
                    Ok(Answer::Stdout(stdout)) => {
                        parse::<AfterReply>(HookEvent::AfterToolCall, &stdout)
                            .map_err(|problem| fail(&problem))?
                    }
                };
                if reply == AfterReply::default() {
                    continue;
                }
                let change = changes.get_or_insert_with(ResultOverride::default);
                if let Some(text) = reply.content {
                    change.content = Some(vec![Content::text(text.clone())]);
                    content = text;
                }
                if let Some(flag) = reply.is_error {
                    change.is_error = Some(flag);
                    is_error = flag;
                }
                if let Some(terminate) = reply.terminate {
                    change.terminate = Some(terminate);
                }
            }
            Ok(changes)
        })
    }

    fn finish_turn<'a>(&'a self, turn: FinishedTurn<'a>) -> BoxFuture<'a, Option<TurnDecision>> {
        Box::pin(async move {
            let builtin = self.builtins.finish_turn(turn).await;
            let (number, usage) = {
                let mut state = self.lock();
                state.turns = state.turns.saturating_add(1);
                state.usage.add(&turn.message.usage);
                (state.turns, state.usage)
            };
            // Error and aborted replies end the run whatever a hook says;
            // a limit that ended it is not for a hook to overrule.
            if matches!(
                turn.message.stop_reason,
                StopReason::Error | StopReason::Aborted
            ) || builtin == Some(TurnDecision::End)
            {
                return builtin;
            }
            // `continue`, with the message for the model if there is one.
            let mut more: Option<Option<String>> = None;
            for hook in self.of(HookEvent::FinishTurn) {
                let input = HookInput {
                    event: HookEvent::FinishTurn.as_str(),
                    turn: number,
                    usage,
                    cwd: &self.cwd,
                    tool_call: None,
                    result: None,
                    message: Some(Assistant::new(turn.message)),
                    tool_results: Some(turn.tool_results),
                };
                let reply = match self.ask(hook, &input, turn.cancel, None).await {
                    Err(Problem::Aborted) => return builtin,
                    // Exit 2 blocks the end, as a stop hook's does
                    // elsewhere: one more turn, stderr for the model.
                    Ok(Answer::Block(reason)) => Ok(FinishReply {
                        action: Some(Action::Continue),
                        reason: Some(
                            reason
                                .unwrap_or_else(|| format!("{} asks you to continue", hook.name())),
                        ),
                    }),
                    Ok(Answer::Stdout(stdout)) => {
                        parse::<FinishReply>(HookEvent::FinishTurn, &stdout)
                    }
                    Err(Problem::Failed(problem)) => Err(problem),
                };
                match reply {
                    Ok(FinishReply {
                        action: Some(Action::End),
                        ..
                    }) => return Some(TurnDecision::End),
                    Ok(FinishReply {
                        action: Some(Action::Continue),
                        reason,
                    }) => {
                        let message = match (more.take().flatten(), reason) {
                            (Some(first), Some(next)) => Some(format!("{first}\n\n{next}")),
                            (first, next) => first.or(next),
                        };
                        more = Some(message);
                    }
                    Ok(FinishReply {
                        action: None,
                        reason: Some(_),
                    }) => {
                        let problem = r#"its output has "reason" without "action": "continue""#;
                        return Some(self.end_failed(hook, problem));
                    }
                    Ok(FinishReply { action: None, .. }) => {}
                    Err(problem) => return Some(self.end_failed(hook, &problem)),
                }
            }
            let Some(message) = more else {
                return builtin;
            };
            // `continue` never goes past the turn limit or the budget; the
            // run then ends as not confirmed complete.
            let out_of_turns = number >= self.limits.max_turns;
            let out_of_tokens = budget_exceeded(usage.total_tokens, self.limits.max_tokens_total);
            if out_of_turns || out_of_tokens {
                self.lock().verdict = Some(HookVerdict::ContinueRefused {
                    budget: out_of_tokens,
                });
                return builtin;
            }
            if let Some(text) = message {
                self.queues.steer(Message::user_text(text));
            }
            Some(TurnDecision::Continue)
        })
    }
}

impl HookChain {
    /// A `finish-turn` hook failed: report it and end the run.
    fn end_failed(&self, hook: &Numbered, problem: &str) -> TurnDecision {
        let reason = self.fail(hook, None, problem, "the run was ended");
        self.lock().verdict = Some(HookVerdict::Failed(reason));
        TurnDecision::End
    }
}

//! Tests of the loop's rules (ARCHITECTURE.md §1.2–1.4), each asserting the exact event
//! sequence or message fields, driven through the stateful `Agent` on the
//! scripted provider.

#![allow(clippy::unwrap_used, clippy::expect_used)] // tests may panic on a broken fixture

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures::future::BoxFuture;
use futures::stream::BoxStream;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use leash_agent::ToolExecution;
use leash_agent::assistant_stream::ABORTED;
use leash_agent::tool_call::{BLOCKED, TRUNCATED_CALL};
use leash_agent::types::{AgentEvent, Block, ResultOverride, TurnDecision};
use leash_agent::{Agent, AgentError, Declarations, LoopConfig, QueueMode};
use leash_agent::{
    AgentHooks, BeforeToolCall, ExecutedToolCall, FinishedTurn, NextTurnChanges, NoHooks,
    RequestChanges, RequestContext, ToolCallContext,
};
use leash_faux::{FauxProvider, Script};
use leash_protocol::provider::{Provider, Request};
use leash_protocol::tool::{Tool, ToolError, ToolUpdates};
use leash_protocol::{
    Message, StopReason, StreamEvent, ToolCall, ToolOutput, ToolResultMessage, ToolSpec,
};

// ---------------------------------------------------------------- helpers

/// The text of a tool result.
fn result_text(result: &ToolResultMessage) -> String {
    result
        .content
        .iter()
        .filter_map(leash_protocol::Content::as_text)
        .collect()
}

/// A provider that plays a script and records each request's messages.
struct Recorder {
    faux: FauxProvider,
    requests: Mutex<Vec<Vec<Message>>>,
    models: Mutex<Vec<String>>,
    /// Each request's thinking level and session id.
    options: Mutex<Vec<(leash_protocol::provider::ThinkingLevel, Option<String>)>>,
    /// Each request's system prompt and the names of its tools.
    declared: Mutex<Vec<(String, Vec<String>)>>,
}

impl Recorder {
    fn new(script: Value) -> Arc<Self> {
        let script = Script::parse(&script.to_string(), "test").unwrap();
        Arc::new(Recorder {
            faux: FauxProvider::new(script),
            requests: Mutex::new(Vec::new()),
            models: Mutex::new(Vec::new()),
            options: Mutex::new(Vec::new()),
            declared: Mutex::new(Vec::new()),
        })
    }

    /// Each request's system prompt and tool names.
    fn declared(&self) -> Vec<(String, Vec<String>)> {
        self.declared.lock().unwrap().clone()
    }

    fn requests(&self) -> Vec<Vec<Message>> {
        self.requests.lock().unwrap().clone()
    }

    fn thinking(&self) -> Vec<leash_protocol::provider::ThinkingLevel> {
        let options = self.options.lock().unwrap();
        options.iter().map(|(thinking, _)| *thinking).collect()
    }

    fn sessions(&self) -> Vec<Option<String>> {
        let options = self.options.lock().unwrap();
        options.iter().map(|(_, session)| session.clone()).collect()
    }
}

impl Provider for Recorder {
    fn name(&self) -> &str {
        "faux"
    }
    fn stream(&self, request: Request<'_>) -> BoxStream<'static, StreamEvent> {
        self.requests
            .lock()
            .unwrap()
            .push(request.messages.to_vec());
        self.models.lock().unwrap().push(request.model.to_owned());
        self.declared.lock().unwrap().push((
            request.system.to_owned(),
            request.tools.iter().map(|t| t.name.clone()).collect(),
        ));
        self.options.lock().unwrap().push((
            request.options.thinking,
            request.options.session_id.map(str::to_owned),
        ));
        self.faux.stream(request)
    }
}

/// A tool for tests: sleeps `ms`, then answers `text`, or fails with `fail`;
/// with `late_ms`, a task it leaves behind sends one more update that long
/// after it started.
struct TestTool {
    spec: ToolSpec,
    runs: AtomicUsize,
    sequential: bool,
    on_run: Option<Box<dyn Fn() + Send + Sync>>,
}

impl TestTool {
    fn new(name: &str) -> Arc<Self> {
        Arc::new(Self::plain(name))
    }

    fn plain(name: &str) -> Self {
        TestTool {
            spec: ToolSpec {
                name: name.into(),
                description: "test tool".into(),
                parameters: json!({
                    "type": "object",
                    "properties": {
                        "text": {"type": "string"},
                        "ms": {"type": "integer", "minimum": 0},
                        "fail": {"type": "string"},
                        "late_ms": {"type": "integer", "minimum": 0}
                    },
                    "additionalProperties": false
                }),
            },
            runs: AtomicUsize::new(0),
            sequential: false,
            on_run: None,
        }
    }

    fn runs(&self) -> usize {
        self.runs.load(Ordering::SeqCst)
    }
}

impl Tool for TestTool {
    fn spec(&self) -> ToolSpec {
        self.spec.clone()
    }
    fn sequential(&self) -> bool {
        self.sequential
    }
    fn execute<'a>(
        &'a self,
        _call_id: &'a str,
        args: Value,
        _cancel: CancellationToken,
        updates: ToolUpdates,
    ) -> BoxFuture<'a, Result<ToolOutput, ToolError>> {
        Box::pin(async move {
            self.runs.fetch_add(1, Ordering::SeqCst);
            if let Some(on_run) = &self.on_run {
                on_run();
            }
            updates.send(json!({"progress": "started"}));
            if let Some(ms) = args.get("late_ms").and_then(Value::as_u64) {
                // A task the tool leaves behind reports after it returned.
                let late = updates.clone();
                tokio::spawn(async move {
                    tokio::time::sleep(Duration::from_millis(ms)).await;
                    late.send(json!({"progress": "late"}));
                });
            }
            if let Some(ms) = args.get("ms").and_then(Value::as_u64) {
                tokio::time::sleep(Duration::from_millis(ms)).await;
            }
            if let Some(fail) = args.get("fail").and_then(Value::as_str) {
                return Err(fail.to_owned().into());
            }
            let text = args.get("text").and_then(Value::as_str).unwrap_or("done");
            Ok(ToolOutput::text(text))
        })
    }
}

type BeforeFn = dyn Fn(&ToolCall) -> Result<Option<Block>, String> + Send + Sync;
type AfterFn = dyn Fn(&ToolResultMessage) -> Option<ResultOverride> + Send + Sync;
type FinishFn = dyn Fn(&FinishedTurn<'_>) -> Option<TurnDecision> + Send + Sync;

/// Hooks assembled from closures, for tests.
#[derive(Default)]
struct TestHooks {
    before: Option<Box<BeforeFn>>,
    after: Option<Box<AfterFn>>,
    finish: Option<Box<FinishFn>>,
    model: Option<String>,
    /// Models `prepare_next_turn` switches to, turn after turn, with the
    /// number of tool results of the turn it was shown.
    next_turn: Mutex<Vec<usize>>,
}

impl AgentHooks for TestHooks {
    fn before_tool_call<'a>(
        &'a self,
        hook: ToolCallContext<'a>,
    ) -> BoxFuture<'a, Result<BeforeToolCall, String>> {
        Box::pin(async move {
            let verdict = self.before.as_ref().map_or(Ok(None), |f| f(hook.call))?;
            Ok(verdict.map_or(BeforeToolCall::Run, BeforeToolCall::Block))
        })
    }
    fn after_tool_call<'a>(
        &'a self,
        executed: ExecutedToolCall<'a>,
    ) -> BoxFuture<'a, Result<Option<ResultOverride>, String>> {
        Box::pin(async move { Ok(self.after.as_ref().and_then(|f| f(executed.result))) })
    }
    fn finish_turn<'a>(&'a self, turn: FinishedTurn<'a>) -> BoxFuture<'a, Option<TurnDecision>> {
        Box::pin(async move { self.finish.as_ref().and_then(|f| f(&turn)) })
    }
    fn prepare_request<'a>(
        &'a self,
        _request: RequestContext<'a>,
    ) -> BoxFuture<'a, RequestChanges> {
        Box::pin(async move {
            RequestChanges {
                model: self.model.clone(),
                ..RequestChanges::default()
            }
        })
    }
    fn prepare_next_turn<'a>(
        &'a self,
        last: FinishedTurn<'a>,
        model: &'a str,
    ) -> BoxFuture<'a, NextTurnChanges> {
        self.next_turn.lock().unwrap().push(last.tool_results.len());
        let model = format!("{model}+");
        Box::pin(async move {
            NextTurnChanges {
                request: RequestChanges {
                    model: Some(model),
                    ..RequestChanges::default()
                },
                messages: Vec::new(),
            }
        })
    }
}

fn config(tools: Vec<Arc<dyn Tool>>, hooks: impl AgentHooks + 'static) -> LoopConfig {
    LoopConfig {
        model: "faux-1".into(),
        system: "sys".into(),
        tools,
        declarations: Declarations::Beside,
        tool_execution: ToolExecution::Parallel,
        hooks: Arc::new(hooks),
    }
}

/// Records events as short lines; `message_update`s are left out.
fn record(agent: &Agent) -> (Arc<Mutex<Vec<String>>>, leash_agent::Subscription) {
    let log = Arc::new(Mutex::new(Vec::new()));
    let sink = Arc::clone(&log);
    let subscription = agent.subscribe(move |event| {
        if let Some(line) = describe(event) {
            sink.lock().unwrap().push(line);
        }
    });
    (log, subscription)
}

fn describe(event: &AgentEvent) -> Option<String> {
    Some(match event {
        AgentEvent::AgentStart => "agent_start".into(),
        AgentEvent::TurnStart => "turn_start".into(),
        AgentEvent::MessageStart { .. } | AgentEvent::MessageUpdate { .. } => return None,
        AgentEvent::MessageEnd { message } => format!("message_end {}", message.role()),
        AgentEvent::ToolExecutionStart { tool_call_id, .. } => format!("tool_start {tool_call_id}"),
        AgentEvent::ToolExecutionUpdate { .. } => return None,
        AgentEvent::ToolExecutionEnd {
            tool_call_id,
            is_error,
            ..
        } => format!(
            "tool_end {tool_call_id} {}",
            if *is_error { "error" } else { "ok" }
        ),
        AgentEvent::TurnEnd { tool_results, .. } => format!("turn_end {}", tool_results.len()),
        AgentEvent::Retry { .. } => "retry".into(),
        AgentEvent::AgentEnd { .. } => "agent_end".into(),
    })
}

fn lines(log: &Arc<Mutex<Vec<String>>>) -> Vec<String> {
    log.lock().unwrap().clone()
}

fn tool_results(messages: &[Message]) -> Vec<ToolResultMessage> {
    messages
        .iter()
        .filter_map(|m| match m {
            Message::ToolResult(r) => Some(r.clone()),
            _ => None,
        })
        .collect()
}

fn last_assistant_stop(messages: &[Message]) -> Option<StopReason> {
    messages.iter().rev().find_map(|m| match m {
        Message::Assistant(a) => Some(a.stop_reason),
        _ => None,
    })
}

fn call(name: &str, args: Value) -> Value {
    json!({"name": name, "arguments": args})
}

mod agent_api;
mod batch;
mod default_provider;
mod hooks;
mod host_embedding;
mod options;
mod parity;
mod run;
mod state;
mod tool_shapes;
mod transcript;
mod words;

//! Tests of the loop's rules (SPEC 1.2–1.4), each asserting the exact event
//! sequence or message fields, driven through the stateful `Agent` on the
//! scripted provider.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures::future::BoxFuture;
use futures::stream::BoxStream;
use pretty_assertions::assert_eq;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use crate::agent::assistant_stream::ABORTED;
use crate::agent::hooks::{AgentHooks, FinishedTurn, NoHooks, RequestChanges};
use crate::agent::tool_batch::ToolExecution;
use crate::agent::tool_call::{BLOCKED, TRUNCATED_CALL, result_text};
use crate::agent::types::{
    AgentEvent, Block, Message, ResultOverride, StopReason, ToolCall, ToolOutput,
    ToolResultMessage, TurnDecision,
};
use crate::agent::{Agent, AgentError, LoopConfig, QueueMode};
use crate::provider::faux::{FauxProvider, Script};
use crate::provider::{Provider, Request, StreamEvent, ToolSpec};
use crate::tools::{Tool, ToolError, ToolUpdates};

// ---------------------------------------------------------------- helpers

/// A provider that plays a script and records each request's messages.
struct Recorder {
    faux: FauxProvider,
    requests: Mutex<Vec<Vec<Message>>>,
    models: Mutex<Vec<String>>,
}

impl Recorder {
    fn new(script: Value) -> Arc<Self> {
        let script = Script::parse(&script.to_string(), "test").unwrap();
        Arc::new(Recorder {
            faux: FauxProvider::new(script),
            requests: Mutex::new(Vec::new()),
            models: Mutex::new(Vec::new()),
        })
    }

    fn requests(&self) -> Vec<Vec<Message>> {
        self.requests.lock().unwrap().clone()
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
        self.faux.stream(request)
    }
}

/// A tool for tests: sleeps `ms`, then answers `text`, or fails with `fail`.
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
                        "fail": {"type": "string"}
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
    fn spec(&self) -> &ToolSpec {
        &self.spec
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
        call: &'a ToolCall,
        _args: &'a Value,
        _context: &'a [Message],
    ) -> BoxFuture<'a, Result<Option<Block>, String>> {
        Box::pin(async move { self.before.as_ref().map_or(Ok(None), |f| f(call)) })
    }
    fn after_tool_call<'a>(
        &'a self,
        _call: &'a ToolCall,
        _args: &'a Value,
        result: &'a ToolResultMessage,
        _is_error: bool,
    ) -> BoxFuture<'a, Option<ResultOverride>> {
        Box::pin(async move { self.after.as_ref().and_then(|f| f(result)) })
    }
    fn finish_turn<'a>(&'a self, turn: FinishedTurn<'a>) -> BoxFuture<'a, Option<TurnDecision>> {
        Box::pin(async move { self.finish.as_ref().and_then(|f| f(&turn)) })
    }
    fn prepare_request<'a>(
        &'a self,
        _context: &'a [Message],
        _model: &'a str,
    ) -> BoxFuture<'a, RequestChanges> {
        Box::pin(async move {
            RequestChanges {
                context: None,
                model: self.model.clone(),
            }
        })
    }
    fn prepare_next_turn<'a>(
        &'a self,
        last: FinishedTurn<'a>,
        model: &'a str,
    ) -> BoxFuture<'a, RequestChanges> {
        self.next_turn.lock().unwrap().push(last.tool_results.len());
        let model = format!("{model}+");
        Box::pin(async move {
            RequestChanges {
                context: None,
                model: Some(model),
            }
        })
    }
}

fn config(tools: Vec<Arc<dyn Tool>>, hooks: impl AgentHooks + 'static) -> LoopConfig {
    LoopConfig {
        model: "faux-1".into(),
        system: "sys".into(),
        tools,
        tool_execution: ToolExecution::Parallel,
        hooks: Arc::new(hooks),
    }
}

/// Records events as short lines; `message_update`s are left out.
fn record(agent: &Agent) -> (Arc<Mutex<Vec<String>>>, crate::agent::Subscription) {
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

// ---------------------------------------------------------------- the run

#[tokio::test]
async fn a_tool_round_trip_is_two_requests_for_one_submission() {
    let provider = Recorder::new(json!([
        {"toolCalls": [call("read", json!({"text": "export function first(){}"}))]},
        {"text": "first([]) returns undefined."}
    ]));
    let tool = TestTool::new("read");
    let agent = Agent::new(provider.clone(), config(vec![tool.clone()], NoHooks));
    let (log, _sub) = record(&agent);
    let added = agent
        .prompt(vec![Message::user_text("explain")])
        .await
        .unwrap();

    assert_eq!(
        lines(&log),
        vec![
            "agent_start",
            "turn_start",
            "message_end user",
            "message_end assistant",
            "tool_start call_1_1",
            "tool_end call_1_1 ok",
            "message_end toolResult",
            "turn_end 1",
            "turn_start",
            "message_end assistant",
            "turn_end 0",
            "agent_end",
        ]
    );
    let requests = provider.requests();
    assert_eq!(requests.len(), 2);
    // The second request carries the call and its result, answered by id.
    let result = &tool_results(&requests[1])[0];
    assert_eq!(result.tool_call_id, "call_1_1");
    assert_eq!(result_text(result), "export function first(){}");
    assert!(result.duration_ms.is_some());
    assert_eq!(added.len(), 4);
    assert_eq!(agent.messages().len(), 4);
}

#[tokio::test]
async fn a_blocked_call_never_runs_and_has_no_duration() {
    let provider = Recorder::new(json!([
        {"toolCalls": [call("read", json!({}))]},
        {"text": "ok"}
    ]));
    let tool = TestTool::new("read");
    let hooks = TestHooks {
        before: Some(Box::new(|_| Ok(Some(Block::default())))),
        ..TestHooks::default()
    };
    let agent = Agent::new(provider.clone(), config(vec![tool.clone()], hooks));
    let added = agent.prompt(vec![Message::user_text("go")]).await.unwrap();

    assert_eq!(tool.runs(), 0);
    let result = &tool_results(&added)[0];
    assert!(result.is_error);
    assert_eq!(result_text(result), BLOCKED);
    assert_eq!(result_text(result), "Tool execution was blocked");
    assert_eq!(result.duration_ms, None);
    let json = serde_json::to_value(Message::ToolResult(result.clone())).unwrap();
    assert!(json.get("durationMs").is_none(), "{json}");
    // Not terminating: the model is asked again.
    assert_eq!(provider.requests().len(), 2);
}

#[tokio::test]
async fn a_batch_where_every_call_is_blocked_with_terminate_makes_no_further_request() {
    let provider = Recorder::new(json!([
        {"toolCalls": [call("read", json!({})), call("read", json!({"text": "x"}))]},
        {"text": "never asked"}
    ]));
    let hooks = TestHooks {
        before: Some(Box::new(|_| {
            Ok(Some(Block {
                reason: Some("no".into()),
                terminate: true,
            }))
        })),
        ..TestHooks::default()
    };
    let agent = Agent::new(provider.clone(), config(vec![TestTool::new("read")], hooks));
    let (log, _sub) = record(&agent);
    let added = agent.prompt(vec![Message::user_text("go")]).await.unwrap();

    assert_eq!(provider.requests().len(), 1);
    assert_eq!(tool_results(&added).len(), 2);
    assert_eq!(lines(&log).last().map(String::as_str), Some("agent_end"));
    assert_eq!(
        lines(&log)
            .iter()
            .filter(|l| l.starts_with("turn_end"))
            .count(),
        1
    );
}

#[tokio::test]
async fn a_mixed_batch_goes_on() {
    let provider = Recorder::new(json!([
        {"toolCalls": [call("read", json!({"text": "block me"})), call("read", json!({"text": "run me"}))]},
        {"text": "answer"}
    ]));
    let tool = TestTool::new("read");
    let hooks = TestHooks {
        before: Some(Box::new(|call| {
            Ok((call.arguments["text"] == "block me").then_some(Block {
                reason: None,
                terminate: true,
            }))
        })),
        ..TestHooks::default()
    };
    let agent = Agent::new(provider.clone(), config(vec![tool.clone()], hooks));
    let added = agent.prompt(vec![Message::user_text("go")]).await.unwrap();
    assert_eq!(provider.requests().len(), 2);
    assert_eq!(tool.runs(), 1);
    assert_eq!(last_assistant_stop(&added), Some(StopReason::Stop));
}

#[tokio::test]
async fn an_error_in_before_tool_call_becomes_the_result() {
    let provider = Recorder::new(json!([
        {"toolCalls": [call("read", json!({}))]},
        {"text": "ok"}
    ]));
    let tool = TestTool::new("read");
    let hooks = TestHooks {
        before: Some(Box::new(|_| Err("policy service down".into()))),
        ..TestHooks::default()
    };
    let agent = Agent::new(provider, config(vec![tool.clone()], hooks));
    let added = agent.prompt(vec![Message::user_text("go")]).await.unwrap();
    let result = &tool_results(&added)[0];
    assert_eq!(result_text(result), "policy service down");
    assert!(result.is_error);
    assert_eq!(tool.runs(), 0);
}

#[tokio::test]
async fn after_tool_call_replaces_fields() {
    let provider = Recorder::new(json!([
        {"toolCalls": [call("read", json!({"fail": "boom"}))]},
        {"text": "ok"}
    ]));
    let hooks = TestHooks {
        after: Some(Box::new(|result| {
            assert!(result.is_error);
            Some(ResultOverride {
                content: Some(vec![crate::agent::types::Content::text("rewritten")]),
                is_error: Some(false),
                ..ResultOverride::default()
            })
        })),
        ..TestHooks::default()
    };
    let agent = Agent::new(provider, config(vec![TestTool::new("read")], hooks));
    let added = agent.prompt(vec![Message::user_text("go")]).await.unwrap();
    let result = &tool_results(&added)[0];
    assert_eq!(result_text(result), "rewritten");
    assert!(!result.is_error);
    assert!(result.duration_ms.is_some());
}

#[tokio::test]
async fn unknown_tool_invalid_arguments_and_a_failing_tool_are_error_results() {
    let provider = Recorder::new(json!([
        {"toolCalls": [
            call("nope", json!({})),
            call("read", json!({"ms": "soon"})),
            {"name": "read", "argumentsRaw": "{\"text\": "},
            call("read", json!({"fail": "disk on fire"}))
        ]},
        {"text": "ok"}
    ]));
    let tool = TestTool::new("read");
    let agent = Agent::new(provider, config(vec![tool.clone()], NoHooks));
    let added = agent.prompt(vec![Message::user_text("go")]).await.unwrap();
    let results = tool_results(&added);
    let texts: Vec<String> = results.iter().map(result_text).collect();
    assert_eq!(texts[0], "Tool nope not found");
    assert!(
        texts[1].starts_with("Invalid arguments for read: /ms: "),
        "{}",
        texts[1]
    );
    assert_eq!(
        texts[2],
        "Invalid arguments for read: the arguments are not valid JSON: {\"text\": "
    );
    assert_eq!(texts[3], "disk on fire");
    assert!(results.iter().all(|r| r.is_error));
    // Only the call that ran has a duration.
    let durations: Vec<bool> = results.iter().map(|r| r.duration_ms.is_some()).collect();
    assert_eq!(durations, vec![false, false, false, true]);
    assert_eq!(tool.runs(), 1);
}

#[tokio::test]
async fn parallel_ends_come_in_completion_order_and_results_in_source_order() {
    let provider = Recorder::new(json!([
        {"toolCalls": [
            {"id": "slow", "name": "read", "arguments": {"ms": 150, "text": "slow"}},
            {"id": "fast", "name": "read", "arguments": {"ms": 10, "text": "fast"}}
        ]},
        {"text": "ok"}
    ]));
    let agent = Agent::new(provider, config(vec![TestTool::new("read")], NoHooks));
    let (log, _sub) = record(&agent);
    let started = Instant::now();
    let added = agent.prompt(vec![Message::user_text("go")]).await.unwrap();
    // Concurrent: well under the 160 ms the two would take in sequence.
    assert!(started.elapsed() < Duration::from_millis(160 + 100));
    let log = lines(&log);
    let tool_lines: Vec<&str> = log
        .iter()
        .map(String::as_str)
        .filter(|l| l.starts_with("tool_") || *l == "message_end toolResult")
        .collect();
    assert_eq!(
        tool_lines,
        vec![
            "tool_start slow",
            "tool_start fast",
            "tool_end fast ok",
            "tool_end slow ok",
            "message_end toolResult",
            "message_end toolResult",
        ]
    );
    let ids: Vec<String> = tool_results(&added)
        .into_iter()
        .map(|r| r.tool_call_id)
        .collect();
    assert_eq!(ids, vec!["slow", "fast"]);
}

#[tokio::test]
async fn sequential_mode_finishes_each_call_before_the_next() {
    let provider = Recorder::new(json!([
        {"toolCalls": [
            {"id": "a", "name": "read", "arguments": {"ms": 50}},
            {"id": "b", "name": "read", "arguments": {"ms": 1}}
        ]},
        {"text": "ok"}
    ]));
    let mut cfg = config(vec![TestTool::new("read")], NoHooks);
    cfg.tool_execution = ToolExecution::Sequential;
    let agent = Agent::new(provider, cfg);
    let (log, _sub) = record(&agent);
    agent.prompt(vec![Message::user_text("go")]).await.unwrap();
    let log = lines(&log);
    let tool_lines: Vec<&str> = log
        .iter()
        .map(String::as_str)
        .filter(|l| l.starts_with("tool_") || *l == "message_end toolResult")
        .collect();
    assert_eq!(
        tool_lines,
        vec![
            "tool_start a",
            "tool_end a ok",
            "message_end toolResult",
            "tool_start b",
            "tool_end b ok",
            "message_end toolResult",
        ]
    );
}

#[tokio::test]
async fn a_tool_declared_sequential_makes_the_batch_sequential() {
    let provider = Recorder::new(json!([
        {"toolCalls": [
            {"id": "a", "name": "seq", "arguments": {"ms": 60}},
            {"id": "b", "name": "read", "arguments": {"ms": 1}}
        ]},
        {"text": "ok"}
    ]));
    let mut seq = TestTool::plain("seq");
    seq.sequential = true;
    let agent = Agent::new(
        provider,
        config(vec![Arc::new(seq), TestTool::new("read")], NoHooks),
    );
    let (log, _sub) = record(&agent);
    agent.prompt(vec![Message::user_text("go")]).await.unwrap();
    let log = lines(&log);
    let position = |needle: &str| log.iter().position(|l| l == needle).unwrap();
    assert!(position("tool_end a ok") < position("tool_start b"));
}

#[tokio::test]
async fn tool_progress_is_emitted_as_updates() {
    let provider = Recorder::new(json!([
        {"toolCalls": [call("read", json!({}))]},
        {"text": "ok"}
    ]));
    let agent = Agent::new(provider, config(vec![TestTool::new("read")], NoHooks));
    let updates = Arc::new(Mutex::new(Vec::new()));
    let sink = Arc::clone(&updates);
    let _sub = agent.subscribe(move |event| {
        if let AgentEvent::ToolExecutionUpdate { partial, .. } = event {
            sink.lock().unwrap().push(partial.clone());
        }
    });
    agent.prompt(vec![Message::user_text("go")]).await.unwrap();
    assert_eq!(
        *updates.lock().unwrap(),
        vec![json!({"progress": "started"})]
    );
}

#[tokio::test]
async fn length_truncated_tool_calls_fail_without_running_and_the_run_goes_on() {
    let provider = Recorder::new(json!([
        {"toolCalls": [call("read", json!({}))], "stop": "length"},
        {"text": "done"}
    ]));
    let tool = TestTool::new("read");
    let agent = Agent::new(provider.clone(), config(vec![tool.clone()], NoHooks));
    let added = agent.prompt(vec![Message::user_text("go")]).await.unwrap();
    assert_eq!(tool.runs(), 0);
    let result = &tool_results(&added)[0];
    assert_eq!(result_text(result), TRUNCATED_CALL);
    assert!(result.is_error);
    assert_eq!(result.duration_ms, None);
    assert_eq!(provider.requests().len(), 2);
}

#[tokio::test]
async fn error_replies_are_hard_exits() {
    let provider = Recorder::new(json!([{"text": "part", "error": "HTTP 500: boom"}]));
    let finish_calls = Arc::new(AtomicUsize::new(0));
    let counter = Arc::clone(&finish_calls);
    let hooks = TestHooks {
        finish: Some(Box::new(move |_| {
            counter.fetch_add(1, Ordering::SeqCst);
            Some(TurnDecision::Continue)
        })),
        ..TestHooks::default()
    };
    let agent = Agent::new(provider.clone(), config(vec![], hooks));
    let (log, _sub) = record(&agent);
    let added = agent.prompt(vec![Message::user_text("go")]).await.unwrap();
    // finish_turn was called, but its Continue was ignored.
    assert_eq!(finish_calls.load(Ordering::SeqCst), 1);
    assert_eq!(provider.requests().len(), 1);
    assert_eq!(last_assistant_stop(&added), Some(StopReason::Error));
    assert_eq!(
        lines(&log)[lines(&log).len() - 2..],
        ["turn_end 0".to_owned(), "agent_end".to_owned()]
    );
}

// ---------------------------------------------------------------- finish_turn

#[tokio::test]
async fn finish_turn_end_stops_even_with_tool_calls_pending() {
    let provider = Recorder::new(json!([
        {"toolCalls": [call("read", json!({}))]},
        {"text": "never"}
    ]));
    let tool = TestTool::new("read");
    let hooks = TestHooks {
        finish: Some(Box::new(|_| Some(TurnDecision::End))),
        ..TestHooks::default()
    };
    let agent = Agent::new(provider.clone(), config(vec![tool.clone()], hooks));
    agent.follow_up(Message::user_text("not polled after End"));
    let (log, _sub) = record(&agent);
    agent.prompt(vec![Message::user_text("go")]).await.unwrap();
    assert_eq!(tool.runs(), 1);
    assert_eq!(provider.requests().len(), 1);
    let log = lines(&log);
    assert_eq!(
        log[log.len() - 2..],
        ["turn_end 1".to_owned(), "agent_end".to_owned()]
    );
}

#[tokio::test]
async fn finish_turn_continue_with_nothing_queued_makes_exactly_one_more_request() {
    let provider = Recorder::new(json!([{"text": "first"}, {"text": "second"}, {"text": "x"}]));
    let turns = Arc::new(AtomicUsize::new(0));
    let counter = Arc::clone(&turns);
    let hooks = TestHooks {
        finish: Some(Box::new(move |_| {
            (counter.fetch_add(1, Ordering::SeqCst) == 0).then_some(TurnDecision::Continue)
        })),
        ..TestHooks::default()
    };
    let agent = Agent::new(provider.clone(), config(vec![], hooks));
    let (log, _sub) = record(&agent);
    agent.prompt(vec![Message::user_text("go")]).await.unwrap();
    assert_eq!(provider.requests().len(), 2);
    // The context-only turn sends the same context plus the first reply.
    assert_eq!(provider.requests()[1].len(), 2);
    assert_eq!(
        lines(&log),
        vec![
            "agent_start",
            "turn_start",
            "message_end user",
            "message_end assistant",
            "turn_end 0",
            "turn_start",
            "message_end assistant",
            "turn_end 0",
            "agent_end"
        ]
    );
}

#[tokio::test]
async fn finish_turn_continue_adds_nothing_when_tool_results_already_cause_a_request() {
    let provider = Recorder::new(json!([
        {"toolCalls": [call("read", json!({}))]},
        {"text": "answer"},
        {"text": "must not be asked"}
    ]));
    let turns = Arc::new(AtomicUsize::new(0));
    let counter = Arc::clone(&turns);
    let hooks = TestHooks {
        finish: Some(Box::new(move |_| {
            (counter.fetch_add(1, Ordering::SeqCst) == 0).then_some(TurnDecision::Continue)
        })),
        ..TestHooks::default()
    };
    let agent = Agent::new(provider.clone(), config(vec![TestTool::new("read")], hooks));
    agent.prompt(vec![Message::user_text("go")]).await.unwrap();
    assert_eq!(provider.requests().len(), 2);
}

#[tokio::test]
async fn continue_on_every_turn_is_bounded_by_a_turn_limit() {
    let provider = Recorder::new(json!({"responses": [{"text": "again"}], "repeatLast": true}));
    let turns = Arc::new(AtomicUsize::new(0));
    let counter = Arc::clone(&turns);
    // A user hook that always continues, combined with a limit of 3 turns.
    let hooks = TestHooks {
        finish: Some(Box::new(move |_| {
            let turn = counter.fetch_add(1, Ordering::SeqCst) + 1;
            Some(if turn >= 3 {
                TurnDecision::End
            } else {
                TurnDecision::Continue
            })
        })),
        ..TestHooks::default()
    };
    let agent = Agent::new(provider.clone(), config(vec![], hooks));
    tokio::time::timeout(
        Duration::from_secs(5),
        agent.prompt(vec![Message::user_text("go")]),
    )
    .await
    .unwrap()
    .unwrap();
    assert_eq!(provider.requests().len(), 3);
}

// ---------------------------------------------------------------- queues

#[tokio::test]
async fn steering_is_delivered_before_the_next_request() {
    let provider = Recorder::new(json!([
        {"toolCalls": [call("read", json!({}))]},
        {"text": "ok"}
    ]));
    let agent_slot: Arc<Mutex<Option<Agent>>> = Arc::new(Mutex::new(None));
    let slot = Arc::clone(&agent_slot);
    let mut tool = TestTool::plain("read");
    tool.on_run = Some(Box::new(move || {
        if let Some(agent) = slot.lock().unwrap().as_ref() {
            agent.steer(Message::user_text("also check the tests"));
        }
    }));
    let agent = Agent::new(provider.clone(), config(vec![Arc::new(tool)], NoHooks));
    *agent_slot.lock().unwrap() = Some(agent.clone());
    let (log, _sub) = record(&agent);
    agent.prompt(vec![Message::user_text("go")]).await.unwrap();
    *agent_slot.lock().unwrap() = None;

    let second = &provider.requests()[1];
    let roles: Vec<&str> = second.iter().map(Message::role).collect();
    assert_eq!(roles, vec!["user", "assistant", "toolResult", "user"]);
    assert_eq!(
        lines(&log)[8..11],
        [
            "turn_start".to_owned(),
            "message_end user".to_owned(),
            "message_end assistant".to_owned()
        ]
    );
}

#[tokio::test]
async fn steering_queued_before_the_run_is_delivered_in_the_first_turn() {
    let provider = Recorder::new(json!([{"text": "ok"}]));
    let agent = Agent::new(provider.clone(), config(vec![], NoHooks));
    agent.steer(Message::user_text("steer"));
    agent.prompt(vec![Message::user_text("go")]).await.unwrap();
    assert_eq!(provider.requests()[0].len(), 2);
}

#[tokio::test]
async fn follow_ups_are_delivered_one_at_a_time_when_the_agent_would_stop() {
    let provider = Recorder::new(json!([{"text": "one"}, {"text": "two"}, {"text": "three"}]));
    let agent = Agent::new(provider.clone(), config(vec![], NoHooks));
    agent.follow_up(Message::user_text("f1"));
    agent.follow_up(Message::user_text("f2"));
    let (log, _sub) = record(&agent);
    agent.prompt(vec![Message::user_text("go")]).await.unwrap();
    assert_eq!(provider.requests().len(), 3);
    assert_eq!(provider.requests()[1].len(), 3);
    assert_eq!(provider.requests()[2].len(), 5);
    assert_eq!(
        lines(&log)[4..9],
        [
            "turn_end 0".to_owned(),
            "turn_start".to_owned(),
            "message_end user".to_owned(),
            "message_end assistant".to_owned(),
            "turn_end 0".to_owned()
        ]
    );
}

#[tokio::test]
async fn a_queue_in_all_mode_delivers_everything_at_once() {
    let provider = Recorder::new(json!([{"text": "one"}, {"text": "two"}]));
    let agent = Agent::new(provider.clone(), config(vec![], NoHooks));
    agent.set_follow_up_mode(QueueMode::All);
    agent.follow_up(Message::user_text("f1"));
    agent.follow_up(Message::user_text("f2"));
    agent.prompt(vec![Message::user_text("go")]).await.unwrap();
    assert_eq!(provider.requests().len(), 2);
    assert_eq!(provider.requests()[1].len(), 4);
}

// ---------------------------------------------------------------- wrapper

#[tokio::test]
async fn a_second_prompt_while_running_fails_at_once_and_changes_nothing() {
    let provider = Recorder::new(json!([{"text": "slow", "delayMs": 200}]));
    let agent = Agent::new(provider.clone(), config(vec![], NoHooks));
    let running = agent.clone();
    let first = tokio::spawn(async move { running.prompt(vec![Message::user_text("one")]).await });
    tokio::time::sleep(Duration::from_millis(50)).await;
    let second = agent.prompt(vec![Message::user_text("two")]).await;
    assert_eq!(second, Err(AgentError::AlreadyRunning));
    assert_eq!(
        AgentError::AlreadyRunning.to_string(),
        "Agent is already processing a prompt."
    );
    first.await.unwrap().unwrap();
    assert_eq!(provider.requests().len(), 1);
    assert_eq!(agent.messages().len(), 2);
}

#[tokio::test]
async fn unsubscribing_stops_events() {
    let provider = Recorder::new(json!([{"text": "a"}, {"text": "b"}]));
    let agent = Agent::new(provider, config(vec![], NoHooks));
    let (log, subscription) = record(&agent);
    agent.prompt(vec![Message::user_text("one")]).await.unwrap();
    let seen = lines(&log).len();
    subscription.unsubscribe();
    agent.prompt(vec![Message::user_text("two")]).await.unwrap();
    assert_eq!(lines(&log).len(), seen);
}

#[tokio::test]
async fn prepare_request_may_switch_the_model() {
    let provider = Recorder::new(json!([{"text": "a"}]));
    let hooks = TestHooks {
        model: Some("bigger".into()),
        ..TestHooks::default()
    };
    let agent = Agent::new(provider.clone(), config(vec![], hooks));
    let added = agent.prompt(vec![Message::user_text("one")]).await.unwrap();
    assert_eq!(*provider.models.lock().unwrap(), vec!["bigger".to_owned()]);
    match &added[1] {
        Message::Assistant(a) => assert_eq!(a.model, "bigger"),
        other => panic!("unexpected {other:?}"),
    }
}

#[tokio::test]
async fn prepare_next_turn_runs_before_every_turn_but_the_first() {
    let provider = Recorder::new(json!([
        {"toolCalls": [call("read", json!({}))]},
        {"toolCalls": [call("read", json!({"text": "b"})), call("read", json!({"text": "c"}))]},
        {"text": "ok"}
    ]));
    let hooks = Arc::new(TestHooks::default());
    let agent = Agent::new(
        provider.clone(),
        LoopConfig {
            hooks: hooks.clone(),
            ..config(vec![TestTool::new("read")], NoHooks)
        },
    );
    agent.prompt(vec![Message::user_text("go")]).await.unwrap();
    // Shown the turn that just completed: 1 result, then 2.
    assert_eq!(*hooks.next_turn.lock().unwrap(), vec![1, 2]);
    // Its model change applies to the next request and stays.
    assert_eq!(
        *provider.models.lock().unwrap(),
        vec!["faux-1", "faux-1+", "faux-1++"]
    );
}

// ---------------------------------------------------------------- abort

#[tokio::test]
async fn abort_during_a_stream_ends_it_promptly_with_turn_end_and_agent_end() {
    let provider = Recorder::new(json!([{"text": "never", "delayMs": 10000}]));
    let agent = Agent::new(provider, config(vec![], NoHooks));
    let (log, _sub) = record(&agent);
    let aborter = agent.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(50)).await;
        aborter.abort();
    });
    let started = Instant::now();
    let added = agent.prompt(vec![Message::user_text("go")]).await.unwrap();
    assert!(started.elapsed() < Duration::from_secs(2));
    match added.last() {
        Some(Message::Assistant(a)) => {
            assert_eq!(a.stop_reason, StopReason::Aborted);
            assert_eq!(a.error_message.as_deref(), Some(ABORTED));
        }
        other => panic!("unexpected {other:?}"),
    }
    let log = lines(&log);
    assert_eq!(
        log[log.len() - 2..],
        ["turn_end 0".to_owned(), "agent_end".to_owned()]
    );
    agent.wait_for_idle().await;
    assert!(!agent.is_running());
}

#[tokio::test]
async fn abort_during_a_tool_stops_it_and_still_answers_every_call() {
    let provider = Recorder::new(json!([
        {"toolCalls": [call("read", json!({"ms": 10000})), call("read", json!({"ms": 10000}))]},
        {"text": "never"}
    ]));
    for mode in [ToolExecution::Parallel, ToolExecution::Sequential] {
        let mut cfg = config(vec![TestTool::new("read")], NoHooks);
        cfg.tool_execution = mode;
        let provider = Recorder::new(json!([
            {"toolCalls": [call("read", json!({"ms": 10000})), call("read", json!({"ms": 10000}))]},
            {"text": "never"}
        ]));
        let agent = Agent::new(provider.clone(), cfg);
        let (log, _sub) = record(&agent);
        let aborter = agent.clone();
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(100)).await;
            aborter.abort();
        });
        let started = Instant::now();
        let added = agent.prompt(vec![Message::user_text("go")]).await.unwrap();
        assert!(started.elapsed() < Duration::from_secs(2), "{mode:?}");
        let results = tool_results(&added);
        assert_eq!(results.len(), 2, "{mode:?}");
        assert!(
            results
                .iter()
                .all(|r| result_text(r) == ABORTED && r.is_error)
        );
        assert_eq!(provider.requests().len(), 1, "{mode:?}");
        let log = lines(&log);
        assert_eq!(
            log[log.len() - 2..],
            ["turn_end 2".to_owned(), "agent_end".to_owned()]
        );
    }
    drop(provider);
}

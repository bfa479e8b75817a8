//! What Pi 1.6.0's hooks can do, expressed with leash's: replace a call's
//! arguments, fail `after_tool_call`, see the run's cancellation token,
//! inject messages before the next turn (ARCHITECTURE.md §1.3).

use super::*;
use leash_protocol::{AssistantMessage, Content};
use pretty_assertions::assert_eq;

/// Replaces the arguments of every call, or fails `after_tool_call`, and
/// records what the hooks were shown.
#[derive(Default)]
struct Rewriter {
    replacement: Option<Value>,
    after_error: Option<String>,
    /// (tool calls in the assistant message, its stop reason, context length).
    seen: Mutex<Vec<(usize, StopReason, usize)>>,
    after_args: Mutex<Vec<Value>>,
}

impl AgentHooks for Rewriter {
    fn before_tool_call<'a>(
        &'a self,
        hook: ToolCallContext<'a>,
    ) -> BoxFuture<'a, Result<BeforeToolCall, String>> {
        let message: &AssistantMessage = hook.assistant_message;
        self.seen.lock().unwrap().push((
            message.tool_calls().count(),
            message.stop_reason,
            hook.context.len(),
        ));
        let decision = match &self.replacement {
            Some(args) => BeforeToolCall::RunWith(args.clone()),
            None => BeforeToolCall::Run,
        };
        Box::pin(async move { Ok(decision) })
    }

    fn after_tool_call<'a>(
        &'a self,
        executed: ExecutedToolCall<'a>,
    ) -> BoxFuture<'a, Result<Option<ResultOverride>, String>> {
        self.after_args
            .lock()
            .unwrap()
            .push(executed.call.args.clone());
        self.seen.lock().unwrap().push((
            executed.call.assistant_message.tool_calls().count(),
            executed.call.assistant_message.stop_reason,
            executed.call.context.len(),
        ));
        let outcome = match &self.after_error {
            Some(text) => Err(text.clone()),
            None => Ok(None),
        };
        Box::pin(async move { outcome })
    }
}

/// Pi's `beforeToolCall` gets `{assistantMessage, toolCall, args, context}`
/// and may change `args` in place; the tool runs with the changed
/// arguments, which are not validated again.
#[tokio::test]
async fn before_tool_call_may_replace_the_arguments_and_sees_the_assistant_message() {
    let provider = Recorder::new(json!([
        {"toolCalls": [call("read", json!({"text": "from the model"}))]},
        {"text": "ok"}
    ]));
    let tool = TestTool::new("read");
    // `extra` breaks the tool's schema (additionalProperties: false): the
    // replacement runs anyway, as in Pi.
    let replacement = json!({"text": "from the hook", "extra": 1});
    let hooks = Arc::new(Rewriter {
        replacement: Some(replacement.clone()),
        ..Rewriter::default()
    });
    let mut cfg = config(vec![tool.clone()], NoHooks);
    cfg.hooks = hooks.clone();
    let agent = Agent::new(provider, cfg);
    let added = agent.prompt(vec![Message::user_text("go")]).await.unwrap();

    let result = &tool_results(&added)[0];
    assert_eq!(result_text(result), "from the hook");
    assert!(!result.is_error);
    assert_eq!(tool.runs(), 1);
    // after_tool_call sees the arguments that ran.
    assert_eq!(*hooks.after_args.lock().unwrap(), [replacement]);
    // Both hooks saw the assistant message (one call, toolUse) and the
    // run's context (prompt + assistant message).
    assert_eq!(
        *hooks.seen.lock().unwrap(),
        [(1, StopReason::ToolUse, 2), (1, StopReason::ToolUse, 2)]
    );
}

/// Pi's `finalizeExecutedToolCall` catches an `afterToolCall` that throws:
/// the call's result becomes an error result with the error's message.
#[tokio::test]
async fn a_failing_after_tool_call_becomes_the_call_s_error_result() {
    let provider = Recorder::new(json!([
        {"toolCalls": [call("read", json!({"text": "fine"}))]},
        {"text": "ok"}
    ]));
    let hooks = Arc::new(Rewriter {
        after_error: Some("audit log unavailable".into()),
        ..Rewriter::default()
    });
    let mut cfg = config(vec![TestTool::new("read")], NoHooks);
    cfg.hooks = hooks.clone();
    let agent = Agent::new(provider, cfg);
    let added = agent.prompt(vec![Message::user_text("go")]).await.unwrap();

    let result = &tool_results(&added)[0];
    assert_eq!(result_text(result), "audit log unavailable");
    assert!(result.is_error);
    // The tool did run: its duration stays.
    assert!(result.duration_ms.is_some());
    assert_eq!(hooks.seen.lock().unwrap().len(), 2);
}

/// Waits in `before_tool_call` until the run is aborted, then lets the call
/// run; records whether every hook's token was the run's.
#[derive(Default)]
struct WaitsForAbort {
    tokens_cancelled: Mutex<Vec<(&'static str, bool)>>,
}

impl AgentHooks for WaitsForAbort {
    fn before_tool_call<'a>(
        &'a self,
        hook: ToolCallContext<'a>,
    ) -> BoxFuture<'a, Result<BeforeToolCall, String>> {
        Box::pin(async move {
            hook.cancel.cancelled().await;
            self.tokens_cancelled
                .lock()
                .unwrap()
                .push(("before_tool_call", true));
            Ok(BeforeToolCall::Run)
        })
    }

    fn prepare_request<'a>(&'a self, request: RequestContext<'a>) -> BoxFuture<'a, RequestChanges> {
        self.tokens_cancelled
            .lock()
            .unwrap()
            .push(("prepare_request", request.cancel.is_cancelled()));
        Box::pin(async { RequestChanges::default() })
    }

    fn finish_turn<'a>(&'a self, turn: FinishedTurn<'a>) -> BoxFuture<'a, Option<TurnDecision>> {
        self.tokens_cancelled
            .lock()
            .unwrap()
            .push(("finish_turn", turn.cancel.is_cancelled()));
        Box::pin(async { None })
    }
}

/// Pi hands every hook the run's abort signal, and `prepareToolCall`
/// re-checks it after `beforeToolCall`: a call whose hook returned after an
/// abort is answered "Operation aborted" and never runs.
#[tokio::test]
async fn hooks_get_the_run_s_cancellation_token_and_an_abort_during_before_tool_call_wins() {
    let provider = Recorder::new(json!([
        {"toolCalls": [call("read", json!({}))]},
        {"text": "never"}
    ]));
    let tool = TestTool::new("read");
    let hooks = Arc::new(WaitsForAbort::default());
    let mut cfg = config(vec![tool.clone()], NoHooks);
    cfg.hooks = hooks.clone();
    let agent = Agent::new(provider.clone(), cfg);
    let aborter = agent.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(50)).await;
        aborter.abort();
    });
    let added = tokio::time::timeout(
        Duration::from_secs(5),
        agent.prompt(vec![Message::user_text("go")]),
    )
    .await
    .expect("the hook saw the abort")
    .unwrap();

    let result = &tool_results(&added)[0];
    assert_eq!(result_text(result), ABORTED);
    assert_eq!(tool.runs(), 0);
    assert_eq!(provider.requests().len(), 1);
    assert_eq!(
        *hooks.tokens_cancelled.lock().unwrap(),
        [("prepare_request", false), ("before_tool_call", true)]
    );
}

/// Injects one message before each next turn.
struct Injector;

impl AgentHooks for Injector {
    fn prepare_next_turn<'a>(
        &'a self,
        last: FinishedTurn<'a>,
        _model: &'a str,
    ) -> BoxFuture<'a, NextTurnChanges> {
        let note = format!("note after {} results", last.tool_results.len());
        Box::pin(async move {
            NextTurnChanges {
                messages: vec![Message::user_text(note)],
                ..NextTurnChanges::default()
            }
        })
    }
}

/// Pi's `prepareNextTurn` may return `messages`: they are appended, with
/// `message_start`/`message_end`, ahead of the pending steering messages
/// and before the next request.
#[tokio::test]
async fn prepare_next_turn_may_inject_messages_into_the_next_turn() {
    let provider = Recorder::new(json!([
        {"toolCalls": [call("read", json!({}))]},
        {"text": "done"}
    ]));
    let agent = Agent::new(
        provider.clone(),
        config(vec![TestTool::new("read")], Injector),
    );
    let steer = agent.clone();
    let _steer_on_first_turn_end = agent.subscribe(move |event| {
        if matches!(event, AgentEvent::ToolExecutionEnd { .. }) {
            steer.steer(Message::user_text("steered"));
        }
    });
    let (log, _sub) = record(&agent);
    let added = agent.prompt(vec![Message::user_text("go")]).await.unwrap();

    let requests = provider.requests();
    assert_eq!(requests.len(), 2);
    let texts: Vec<String> = requests[1]
        .iter()
        .filter_map(|m| match m {
            Message::User(u) => u
                .content
                .first()
                .and_then(Content::as_text)
                .map(str::to_owned),
            _ => None,
        })
        .collect();
    assert_eq!(texts, ["go", "note after 1 results", "steered"]);
    assert_eq!(added.len(), 6);
    let log = lines(&log);
    let second_turn = log.iter().rposition(|l| l == "turn_start").unwrap();
    assert_eq!(
        log[second_turn..second_turn + 3],
        ["turn_start", "message_end user", "message_end user"]
    );
}

/// A tool whose work outlives its future: it hands its token to a task and
/// waits forever.
struct Detached {
    spec: ToolSpec,
    stopped: Arc<tokio::sync::Notify>,
}

impl Tool for Detached {
    fn spec(&self) -> ToolSpec {
        self.spec.clone()
    }
    fn execute<'a>(
        &'a self,
        _call_id: &'a str,
        _args: Value,
        cancel: CancellationToken,
        _updates: ToolUpdates,
    ) -> BoxFuture<'a, Result<ToolOutput, ToolError>> {
        let stopped = Arc::clone(&self.stopped);
        tokio::spawn(async move {
            cancel.cancelled().await;
            stopped.notify_one();
        });
        Box::pin(std::future::pending())
    }
}

/// Pi passes the run's abort signal to `tool.execute`: the token a tool
/// gets (a child of the run's, so the tool cannot abort the run) fires when
/// the run is aborted, reaching work the tool started elsewhere.
#[tokio::test]
async fn a_tool_s_token_fires_when_the_run_is_aborted() {
    let provider = Recorder::new(json!([{"toolCalls": [call("detached", json!({}))]}]));
    let stopped = Arc::new(tokio::sync::Notify::new());
    let tool = Arc::new(Detached {
        spec: ToolSpec {
            name: "detached".into(),
            description: "never returns".into(),
            parameters: json!({"type": "object"}),
        },
        stopped: Arc::clone(&stopped),
    });
    let agent = Agent::new(provider, config(vec![tool], NoHooks));
    let aborter = agent.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(50)).await;
        aborter.abort();
    });
    let added = agent.prompt(vec![Message::user_text("go")]).await.unwrap();
    assert_eq!(result_text(&tool_results(&added)[0]), ABORTED);
    tokio::time::timeout(Duration::from_secs(5), stopped.notified())
        .await
        .expect("the tool's token fired");
}

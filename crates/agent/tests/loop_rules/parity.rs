//! The places leash's loop disagreed with Pi 1.6.0's `agent-loop.ts` /
//! `agent.ts`: three rules (ARCHITECTURE.md §1.2–1.4 as corrected) and
//! the event order of a truncated batch, each run the way Pi's scenario
//! runs it.

use super::*;
use pretty_assertions::assert_eq;

/// Pi's `runLoop` calls `finishTurn` for an `aborted` reply as for an
/// `error` one, then emits `turn_end` and `agent_end`; the decision is
/// ignored and no queue is polled (ARCHITECTURE.md §1.2, hard exits).
#[tokio::test]
async fn an_aborted_reply_goes_through_finish_turn_then_turn_end_then_agent_end() {
    let provider = Recorder::new(json!([
        {"text": "never", "delayMs": 10000},
        {"text": "never asked"}
    ]));
    let order = Arc::new(Mutex::new(Vec::new()));
    let seen = Arc::clone(&order);
    let hooks = TestHooks {
        finish: Some(Box::new(move |turn| {
            seen.lock().unwrap().push(format!(
                "finish_turn {} cancelled={}",
                turn.message.stop_reason.as_str(),
                turn.cancel.is_cancelled()
            ));
            Some(TurnDecision::Continue)
        })),
        ..TestHooks::default()
    };
    let agent = Agent::new(provider.clone(), config(vec![], hooks));
    let sink = Arc::clone(&order);
    let _sub = agent.subscribe(move |event| {
        if let Some(line @ ("turn_end 0" | "agent_end")) = describe(event).as_deref() {
            sink.lock().unwrap().push(line.to_owned());
        }
    });
    agent.follow_up(Message::user_text("later"));
    let aborter = agent.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(50)).await;
        aborter.abort();
    });
    let added = agent.prompt(vec![Message::user_text("go")]).await.unwrap();

    assert_eq!(last_assistant_stop(&added), Some(StopReason::Aborted));
    assert_eq!(
        *order.lock().unwrap(),
        [
            "finish_turn aborted cancelled=true",
            "turn_end 0",
            "agent_end"
        ]
    );
    // `Continue` was ignored and the follow-up queue never polled.
    assert_eq!(provider.requests().len(), 1);
    assert_eq!(agent.peek_follow_ups().len(), 1);
}

/// Pi's `executePreparedToolCall` stops accepting a call's updates once its
/// `execute` settles: in a parallel batch no `tool_execution_update` of a
/// call follows that call's `tool_execution_end`, even while another call
/// still runs (ARCHITECTURE.md §1.3).
#[tokio::test]
async fn a_call_s_update_sent_after_its_execute_returned_is_dropped_in_a_parallel_batch() {
    let provider = Recorder::new(json!([
        {"toolCalls": [
            {"id": "fast", "name": "read", "arguments": {"late_ms": 30}},
            {"id": "slow", "name": "read", "arguments": {"ms": 150}}
        ]},
        {"text": "ok"}
    ]));
    let agent = Agent::new(provider, config(vec![TestTool::new("read")], NoHooks));
    let log = Arc::new(Mutex::new(Vec::new()));
    let sink = Arc::clone(&log);
    let _sub = agent.subscribe(move |event| {
        let line = match event {
            AgentEvent::ToolExecutionUpdate {
                tool_call_id,
                partial,
                ..
            } => format!("update {tool_call_id} {}", partial["progress"]),
            AgentEvent::ToolExecutionEnd { tool_call_id, .. } => format!("end {tool_call_id}"),
            _ => return,
        };
        sink.lock().unwrap().push(line);
    });
    agent.prompt(vec![Message::user_text("go")]).await.unwrap();

    // Before the fix the late update of `fast` arrived after `end fast`,
    // while `slow` still ran.
    let log = log.lock().unwrap();
    let of = |id: &str| -> Vec<String> {
        log.iter()
            .filter(|line| line.contains(id))
            .cloned()
            .collect()
    };
    assert_eq!(of("fast"), ["update fast \"started\"", "end fast"]);
    assert_eq!(of("slow"), ["update slow \"started\"", "end slow"]);
    assert_eq!(log.last().map(String::as_str), Some("end slow"));
}

/// Pi's `Agent.processEvents` appends each message to the transcript at its
/// `message_end`, so the transcript holds the running prompt's messages
/// while the run goes on: the prompt, then the assistant message, then each
/// tool result (ARCHITECTURE.md §1.4).
#[tokio::test]
async fn the_transcript_grows_at_each_message_end() {
    let provider = Recorder::new(json!([
        {"toolCalls": [call("read", json!({})), call("read", json!({}))]},
        {"text": "done"}
    ]));
    let agent = Agent::new(provider, config(vec![TestTool::new("read")], NoHooks));
    let sizes = Arc::new(Mutex::new(Vec::new()));
    let sink = Arc::clone(&sizes);
    let reader = agent.clone();
    let sub = agent.subscribe(move |event| {
        let label = match event {
            AgentEvent::MessageEnd { message } => message.role().to_owned(),
            AgentEvent::ToolExecutionStart { .. } => "tool_start".to_owned(),
            _ => return,
        };
        let messages = reader.messages();
        let roles: Vec<&str> = messages.iter().map(Message::role).collect();
        sink.lock()
            .unwrap()
            .push(format!("{label}: {}", roles.join(",")));
    });
    let added = agent.prompt(vec![Message::user_text("go")]).await.unwrap();
    drop(sub);

    assert_eq!(
        *sizes.lock().unwrap(),
        [
            "user: user",
            "assistant: user,assistant",
            "tool_start: user,assistant",
            "tool_start: user,assistant",
            "toolResult: user,assistant,toolResult",
            "toolResult: user,assistant,toolResult,toolResult",
            "assistant: user,assistant,toolResult,toolResult,assistant",
        ]
    );
    assert_eq!(agent.messages(), added);
}

/// Pi's `failToolCallsFromTruncatedMessage` emits, call after call,
/// `tool_execution_start`, `tool_execution_end` and the result message
/// (leash used to emit every end first, then every result message).
#[tokio::test]
async fn truncated_calls_are_failed_one_after_the_other_with_their_result_message() {
    let provider = Recorder::new(json!([
        {"toolCalls": [call("read", json!({})), call("read", json!({}))], "stop": "length"},
        {"text": "done"}
    ]));
    let agent = Agent::new(provider, config(vec![TestTool::new("read")], NoHooks));
    let (log, _sub) = record(&agent);
    agent.prompt(vec![Message::user_text("go")]).await.unwrap();
    let log = lines(&log);
    let first = log
        .iter()
        .position(|l| l.starts_with("tool_start"))
        .unwrap();
    assert_eq!(
        log[first..first + 6],
        [
            "tool_start call_1_1",
            "tool_end call_1_1 error",
            "message_end toolResult",
            "tool_start call_1_2",
            "tool_end call_1_2 error",
            "message_end toolResult",
        ]
    );
}

/// Aborts the run from the `before_tool_call` of the call named `abort`.
struct AbortsInBefore {
    agent: std::sync::OnceLock<Agent>,
    after_calls: AtomicUsize,
}

impl AgentHooks for AbortsInBefore {
    fn before_tool_call<'a>(
        &'a self,
        hook: ToolCallContext<'a>,
    ) -> BoxFuture<'a, Result<BeforeToolCall, String>> {
        if hook.call.id == "abort"
            && let Some(agent) = self.agent.get()
        {
            agent.abort();
        }
        Box::pin(async { Ok(BeforeToolCall::Run) })
    }

    fn after_tool_call<'a>(
        &'a self,
        _executed: ExecutedToolCall<'a>,
    ) -> BoxFuture<'a, Result<Option<ResultOverride>, String>> {
        self.after_calls.fetch_add(1, Ordering::SeqCst);
        Box::pin(async { Ok(None) })
    }
}

/// Pi's parallel batch checks the abort signal before it executes each
/// prepared call: a call prepared before the abort is answered "Operation
/// aborted" without running, without `durationMs` and without
/// `afterToolCall`.
#[tokio::test]
async fn a_parallel_call_prepared_before_an_abort_never_runs() {
    let provider = Recorder::new(json!([
        {"toolCalls": [
            {"id": "ready", "name": "read", "arguments": {}},
            {"id": "abort", "name": "read", "arguments": {}}
        ]},
        {"text": "never"}
    ]));
    let tool = TestTool::new("read");
    let hooks = Arc::new(AbortsInBefore {
        agent: std::sync::OnceLock::new(),
        after_calls: AtomicUsize::new(0),
    });
    let mut cfg = config(vec![tool.clone()], NoHooks);
    cfg.hooks = hooks.clone();
    let agent = Agent::new(provider, cfg);
    let _ = hooks.agent.set(agent.clone());
    let added = agent.prompt(vec![Message::user_text("go")]).await.unwrap();

    let results = tool_results(&added);
    assert_eq!(results.len(), 2);
    for result in &results {
        assert_eq!(result_text(result), ABORTED);
        assert!(result.is_error);
        assert_eq!(result.duration_ms, None, "{}", result.tool_call_id);
    }
    assert_eq!(tool.runs(), 0);
    assert_eq!(hooks.after_calls.load(Ordering::SeqCst), 0);
}

//! One turn and its tool batch (ARCHITECTURE.md §1.3): results, hooks, modes, updates.

use super::*;
use pretty_assertions::assert_eq;

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
                content: Some(vec![leash_protocol::Content::text("rewritten")]),
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

/// Pi checks arguments against the schema: with `schema-validation` only.
#[cfg(feature = "schema-validation")]
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

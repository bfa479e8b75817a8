//! The built-in limits as hooks: turns, the repeat guard, the budgets.

use super::*;
use leash_protocol::AssistantContent;
use serde_json::json;
use tokio_util::sync::CancellationToken;

/// Asks `before_tool_call` about one call; `None` lets it run.
async fn before(
    limits: &RunLimits,
    call: &ToolCall,
    args: &Value,
) -> Result<Option<Block>, String> {
    before_in(limits, call, args, &[]).await
}

/// [`before`] with the run's `context` so far.
async fn before_in(
    limits: &RunLimits,
    call: &ToolCall,
    args: &Value,
    context: &[Message],
) -> Result<Option<Block>, String> {
    let (message, cancel) = (AssistantMessage::default(), CancellationToken::new());
    let hook = ToolCallContext {
        assistant_message: &message,
        call,
        args,
        context,
        cancel: &cancel,
    };
    limits
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
    let limits = RunLimits::new(LimitSettings::new(4, 2), QueueHandle::default());
    let args = json!({"path": "a"});
    let mut verdicts = Vec::new();
    for _ in 0..3 {
        verdicts.push(before(&limits, &call("read_file"), &args).await);
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
            "blocked: read_file was already called 2 times with these exact arguments and no file changed since, so those results still hold; use them"
        )
    );
    // Other arguments are another key.
    let other = before(&limits, &call("read_file"), &json!({"path": "b"})).await;
    assert_eq!(other, Ok(None));
}

/// A tool result; `changed` records a file change in its details.
fn result(changed: bool, is_error: bool) -> Message {
    let change = FileChange {
        path: "a".into(),
        created: false,
        added: 1,
        removed: 1,
    };
    Message::ToolResult(leash_protocol::ToolResultMessage {
        tool_call_id: "w".into(),
        tool_name: "edit_file".into(),
        content: vec![],
        details: if changed {
            change.to_details()
        } else {
            Value::Null
        },
        is_error,
        duration_ms: Some(1),
        usage: None,
        timestamp: 0,
    })
}

#[tokio::test]
async fn a_change_to_a_file_resets_the_repeat_counts() {
    let limits = RunLimits::new(LimitSettings::new(9, 2), QueueHandle::default());
    let args = json!({"path": "a"});
    let read = call("read_file");
    let mut context = vec![];
    for _ in 0..2 {
        assert_eq!(before_in(&limits, &read, &args, &context).await, Ok(None));
    }
    // A write that changed nothing, or failed, is no reason to ask again.
    context.push(result(false, false));
    context.push(result(true, true));
    let blocked = before_in(&limits, &read, &args, &context).await;
    assert!(matches!(blocked, Ok(Some(_))), "{blocked:?}");
    // A write that changed a file is.
    context.push(result(true, false));
    for _ in 0..2 {
        assert_eq!(before_in(&limits, &read, &args, &context).await, Ok(None));
    }
    let blocked = before_in(&limits, &read, &args, &context).await;
    assert!(matches!(blocked, Ok(Some(_))), "{blocked:?}");
    assert_eq!(changes_in(&context), 1);
}

#[tokio::test]
async fn the_limit_ends_the_nth_turn_only_when_it_still_asks_for_tools() {
    let limits = RunLimits::new(LimitSettings::new(2, 2), QueueHandle::default());
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
    assert_eq!(limits.finish_turn(turn(&tools)).await, None);
    assert_eq!(limits.finish_turn(turn(&text)).await, None);
    assert!(!limits.report().turn_limit_reached);
    assert_eq!(
        limits.finish_turn(turn(&tools)).await,
        Some(TurnDecision::End)
    );
    assert!(limits.report().turn_limit_reached);
    assert_eq!(limits.turns(), 3);
}

#[tokio::test]
async fn the_cost_budget_ends_a_run_that_wants_another_turn() {
    let limits = RunLimits::new(
        LimitSettings {
            price: Some(Price::parse("1000000,0").unwrap()),
            max_cost: Some(Cost::parse_usd("1.5").unwrap()),
            ..LimitSettings::new(8, 8)
        },
        QueueHandle::default(),
    );
    let cancel = CancellationToken::new();
    // A million dollars per million tokens: a dollar a token.
    let turn_of = |input| AssistantMessage {
        usage: leash_protocol::Usage {
            input,
            ..Default::default()
        }
        .with_total(),
        ..with_tool_call()
    };
    let (one, two) = (turn_of(1), turn_of(1));
    let turn = |message| FinishedTurn {
        message,
        tool_results: &[],
        context: &[],
        new_messages: &[],
        batch_terminated: false,
        cancel: &cancel,
    };
    assert_eq!(limits.finish_turn(turn(&one)).await, None);
    assert!(!limits.report().budget_exhausted);
    assert_eq!(
        limits.finish_turn(turn(&two)).await,
        Some(TurnDecision::End)
    );
    let report = limits.report();
    assert!(report.budget_exhausted && report.cost_exhausted);
    assert_eq!(report.cost_used, Cost::parse_usd("2").unwrap());
}

#[tokio::test]
async fn error_turns_do_not_count() {
    let limits = RunLimits::new(LimitSettings::new(1, 2), QueueHandle::default());
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
    assert_eq!(limits.finish_turn(turn).await, None);
    assert_eq!(limits.turns(), 0);
}

//! The `Agent`'s state from Pi 1.6.0's `AgentState` (`agent.test.ts`): the
//! model, thinking level, system prompt, tools and messages a host sets
//! between prompts, and the run's own view — the streaming message, the
//! pending tool calls, the error message.

use super::*;
use leash_protocol::provider::ThinkingLevel;
use pretty_assertions::assert_eq;

fn texts(messages: &[Message]) -> Vec<String> {
    messages
        .iter()
        .map(|m| match m {
            Message::User(u) => u
                .content
                .iter()
                .filter_map(|block| match block {
                    leash_protocol::Content::Text { text } => Some(text.as_str()),
                    #[allow(unreachable_patterns)]
                    _ => None,
                })
                .collect(),
            Message::Assistant(a) => a.text(),
            Message::ToolResult(r) => r.text(),
            Message::System(s) => s.content.clone(),
            Message::Custom(c) => c.role().to_owned(),
        })
        .collect()
}

/// Pi: "should create an agent instance with default state" and "… with
/// custom initial state".
#[test]
fn a_new_agent_shows_its_configuration_and_an_idle_run() {
    let agent = Agent::new(Recorder::new(json!([])), config(vec![], NoHooks));
    assert_eq!(agent.model(), "faux-1");
    assert_eq!(agent.system_prompt(), "sys");
    assert_eq!(agent.thinking_level(), ThinkingLevel::Off);
    assert!(agent.tools().is_empty());
    assert!(agent.messages().is_empty());
    assert!(!agent.is_running());
    assert_eq!(agent.streaming_message(), None);
    assert!(agent.pending_tool_calls().is_empty());
    assert_eq!(agent.error_message(), None);
}

/// Pi: "should update state with mutators" and "should subscribe to events"
/// (state mutators emit no event); tools and messages are stored as copies.
#[test]
fn state_setters_store_copies_and_emit_no_event() {
    let agent = Agent::new(Recorder::new(json!([])), config(vec![], NoHooks));
    let (log, _sub) = record(&agent);

    agent.set_system_prompt("Custom prompt");
    assert_eq!(agent.system_prompt(), "Custom prompt");
    agent.set_model("gemini-2.5-flash");
    assert_eq!(agent.model(), "gemini-2.5-flash");
    agent.set_thinking_level(ThinkingLevel::High);
    assert_eq!(agent.thinking_level(), ThinkingLevel::High);

    let tools: Vec<Arc<dyn Tool>> = vec![TestTool::new("test")];
    agent.set_tools(tools.clone());
    let mut shown = agent.tools();
    assert_eq!(shown.len(), 1);
    assert!(Arc::ptr_eq(&shown[0], &tools[0]));
    shown.clear();
    assert_eq!(agent.tools().len(), 1, "the agent keeps its own list");

    let messages = vec![Message::user_text("Hello")];
    agent.set_messages(messages.clone());
    assert_eq!(agent.messages(), messages);
    let mut shown = agent.messages();
    shown.push(Message::user_text("Hi"));
    assert_eq!(agent.messages().len(), 1, "the agent keeps its own copy");
    agent.set_messages(Vec::new());
    assert!(agent.messages().is_empty());

    assert!(lines(&log).is_empty(), "setting state emits no event");
}

/// Pi: "continue() should process queued follow-up messages after an
/// assistant turn", on a transcript set through the state.
#[tokio::test]
async fn continue_runs_queued_follow_ups_after_a_transcript_set_by_the_host() {
    let provider = Recorder::new(json!([{"text": "Processed"}]));
    let agent = Agent::new(provider.clone(), config(vec![], NoHooks));
    agent.set_messages(vec![
        Message::user_text("Initial"),
        assistant("Initial response"),
    ]);
    agent.follow_up(Message::user_text("Queued follow-up"));
    agent.continue_run().await.unwrap();
    assert_eq!(
        texts(&agent.messages()),
        [
            "Initial",
            "Initial response",
            "Queued follow-up",
            "Processed"
        ]
    );
    assert_eq!(texts(&provider.requests()[0]).len(), 3);
}

/// The model, system prompt, thinking level and tools set between prompts
/// are what the next run asks with (Pi's `createLoopConfig` reads the state
/// at each run).
#[tokio::test]
async fn the_next_run_uses_the_state_set_between_prompts() {
    let provider = Recorder::new(json!([
        {"text": "one"},
        {"toolCalls": [call("late", json!({}))]},
        {"text": "two"}
    ]));
    let agent = Agent::new(provider.clone(), config(vec![], NoHooks));
    agent.prompt(vec![Message::user_text("a")]).await.unwrap();
    agent.set_model("other-model");
    let late = TestTool::new("late");
    agent.set_tools(vec![late.clone()]);
    agent.prompt(vec![Message::user_text("b")]).await.unwrap();
    assert_eq!(late.runs(), 1);
    assert_eq!(
        *provider.models.lock().unwrap(),
        ["faux-1", "other-model", "other-model"]
    );
}

/// Pi's `processEvents`: `streamingMessage` is the message between its
/// `message_start` and `message_end`, updated by every `message_update`,
/// and gone once the run is over.
#[tokio::test]
async fn the_streaming_message_follows_the_reply_as_it_arrives() {
    let provider = Recorder::new(json!([{"text": "one two three"}]));
    let agent = Agent::new(provider, config(vec![], NoHooks));
    let during = agent.clone();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let sink = Arc::clone(&seen);
    let _sub = agent.subscribe(move |event| {
        if matches!(event, AgentEvent::MessageUpdate { .. }) {
            let text = match during.streaming_message() {
                Some(Message::Assistant(a)) => a.text(),
                other => format!("{other:?}"),
            };
            sink.lock().unwrap().push(text);
        }
        if matches!(event, AgentEvent::MessageEnd { .. }) {
            assert_eq!(during.streaming_message(), None);
        }
    });
    agent.prompt(vec![Message::user_text("go")]).await.unwrap();
    let seen = seen.lock().unwrap().clone();
    assert!(seen.len() > 2, "{seen:?}");
    assert!(seen.windows(2).all(|w| w[1].starts_with(&w[0])), "{seen:?}");
    assert_eq!(seen.last().map(String::as_str), Some("one two three"));
    assert_eq!(agent.streaming_message(), None);
}

/// Pi's `processEvents`: `pendingToolCalls` holds a call's id from its
/// `tool_execution_start` to its `tool_execution_end`.
#[tokio::test]
async fn pending_tool_calls_are_the_calls_started_and_not_yet_ended() {
    let provider = Recorder::new(json!([
        {"toolCalls": [
            {"id": "c1", "name": "t", "arguments": {"ms": 30}},
            {"id": "c2", "name": "t", "arguments": {}}
        ]},
        {"text": "done"}
    ]));
    let agent = Agent::new(provider, config(vec![TestTool::new("t")], NoHooks));
    let during = agent.clone();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let sink = Arc::clone(&seen);
    let _sub = agent.subscribe(move |event| {
        let name = match event {
            AgentEvent::ToolExecutionStart { tool_call_id, .. } => format!("start {tool_call_id}"),
            AgentEvent::ToolExecutionEnd { tool_call_id, .. } => format!("end {tool_call_id}"),
            _ => return,
        };
        sink.lock()
            .unwrap()
            .push(format!("{name}: {:?}", during.pending_tool_calls()));
    });
    agent.prompt(vec![Message::user_text("go")]).await.unwrap();
    assert_eq!(
        *seen.lock().unwrap(),
        [
            r#"start c1: ["c1"]"#,
            r#"start c2: ["c1", "c2"]"#,
            r#"end c2: ["c1"]"#,
            r#"end c1: []"#,
        ]
    );
    assert!(agent.pending_tool_calls().is_empty());
}

/// Pi: "emits full lifecycle events for thrown run failures" — after a
/// failed run the state holds its error message; the next run clears it.
#[tokio::test]
async fn a_failed_run_leaves_its_error_message_until_the_next_run() {
    let provider = Recorder::new(json!([{"error": "provider exploded"}, {"text": "ok"}]));
    let agent = Agent::new(provider, config(vec![], NoHooks));
    agent
        .prompt(vec![Message::user_text("hello")])
        .await
        .unwrap();
    assert_eq!(agent.error_message().as_deref(), Some("provider exploded"));
    agent
        .prompt(vec![Message::user_text("again")])
        .await
        .unwrap();
    assert_eq!(agent.error_message(), None);
}

/// Pi: an aborted run's `turn_end` carries "Operation aborted", which the
/// state keeps as its error message.
#[tokio::test]
async fn an_aborted_run_leaves_operation_aborted() {
    let provider = Recorder::new(json!([{"text": "slow", "delayMs": 500}]));
    let agent = Agent::new(provider, config(vec![], NoHooks));
    let aborter = agent.clone();
    let _sub = agent.subscribe(move |event| {
        if matches!(event, AgentEvent::TurnStart) {
            aborter.abort();
        }
    });
    agent.prompt(vec![Message::user_text("go")]).await.unwrap();
    assert_eq!(agent.error_message().as_deref(), Some(ABORTED));
}

fn assistant(text: &str) -> Message {
    Message::Assistant(leash_protocol::AssistantMessage {
        content: vec![leash_protocol::AssistantContent::Text { text: text.into() }],
        provider: "faux".into(),
        model: "faux-1".into(),
        ..Default::default()
    })
}

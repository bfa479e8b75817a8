//! The stateful wrapper's surface from Pi 1.6.0's `Agent`: `continue()`,
//! `reset()`, queue peek and clear, `isRunning`, async listeners.

use super::*;
use leash_agent::ContinueError;
use pretty_assertions::assert_eq;

fn user_texts(messages: &[Message]) -> Vec<String> {
    messages
        .iter()
        .filter_map(|m| match m {
            Message::User(u) => u
                .content
                .first()
                .and_then(leash_protocol::Content::as_text)
                .map(str::to_owned),
            _ => None,
        })
        .collect()
}

/// Pi's `continue()` throws "No messages to continue from" on an empty
/// transcript and "Cannot continue from message role: assistant" when the
/// transcript ends in an assistant message and both queues are empty;
/// neither starts a run.
#[tokio::test]
async fn continue_is_refused_on_an_empty_transcript_or_after_an_assistant_with_nothing_queued() {
    let provider = Recorder::new(json!([{"text": "hi"}]));
    let agent = Agent::new(provider.clone(), config(vec![], NoHooks));
    let (log, _sub) = record(&agent);
    let error = agent.continue_run().await.unwrap_err();
    assert_eq!(error, AgentError::CannotContinue(ContinueError::NoMessages));
    assert_eq!(error.to_string(), "No messages to continue from");

    agent.prompt(vec![Message::user_text("go")]).await.unwrap();
    let before = agent.messages();
    let error = agent.continue_run().await.unwrap_err();
    assert_eq!(
        error.to_string(),
        "Cannot continue from message role: assistant"
    );
    assert_eq!(agent.messages(), before);
    assert_eq!(provider.requests().len(), 1);
    assert!(!agent.is_running());
    assert_eq!(
        lines(&log).iter().filter(|l| *l == "agent_start").count(),
        1
    );
}

/// Pi's `runAgentLoopContinue`: a run from the transcript as it is, with
/// `agent_start`, `turn_start` and no prompt message.
#[tokio::test]
async fn continue_runs_from_a_transcript_that_ends_in_a_tool_result() {
    let provider = Recorder::new(json!([
        {"toolCalls": [call("read", json!({}))]},
        {"text": "answered"}
    ]));
    let hooks = TestHooks {
        // Ends the first run right after its tool batch, leaving the
        // transcript on a tool result.
        finish: Some(Box::new(|turn| {
            turn.message.has_tool_calls().then_some(TurnDecision::End)
        })),
        ..TestHooks::default()
    };
    let agent = Agent::new(provider.clone(), config(vec![TestTool::new("read")], hooks));
    agent.prompt(vec![Message::user_text("go")]).await.unwrap();
    assert_eq!(
        agent.messages().last().map(Message::role),
        Some("toolResult")
    );

    let (log, _sub) = record(&agent);
    let added = agent.continue_run().await.unwrap();
    assert_eq!(
        lines(&log),
        [
            "agent_start",
            "turn_start",
            "message_end assistant",
            "turn_end 0",
            "agent_end"
        ]
    );
    assert_eq!(added.len(), 1);
    assert_eq!(provider.requests()[1].len(), 3);
    assert_eq!(agent.messages().len(), 4);
}

/// Pi's `continue()` after an assistant message: queued steering becomes
/// the prompt (and the run skips its first steering poll, so one-at-a-time
/// mode still delivers one message per turn); else queued follow-ups do.
#[tokio::test]
async fn continue_after_an_assistant_message_runs_the_queued_messages() {
    let provider = Recorder::new(json!([
        {"text": "first"},
        {"text": "second"},
        {"text": "third"},
        {"text": "fourth"}
    ]));
    let agent = Agent::new(provider.clone(), config(vec![], NoHooks));
    agent.prompt(vec![Message::user_text("go")]).await.unwrap();
    agent.steer(Message::user_text("steer 1"));
    agent.steer(Message::user_text("steer 2"));
    agent.continue_run().await.unwrap();
    let requests = provider.requests();
    assert_eq!(user_texts(&requests[1]), ["go", "steer 1"]);
    assert_eq!(user_texts(&requests[2]), ["go", "steer 1", "steer 2"]);

    agent.follow_up(Message::user_text("follow"));
    agent.continue_run().await.unwrap();
    let requests = provider.requests();
    assert_eq!(requests.len(), 4);
    assert_eq!(
        user_texts(&requests[3]).last().map(String::as_str),
        Some("follow")
    );
}

/// Pi's `reset()` throws while a run is in progress; otherwise it empties
/// the transcript and both queues.
#[tokio::test]
async fn reset_is_refused_while_running_and_otherwise_clears_transcript_and_queues() {
    let provider = Recorder::new(json!([{"text": "slow", "delayMs": 200}]));
    let agent = Agent::new(provider, config(vec![], NoHooks));
    let during = agent.clone();
    let refused = Arc::new(Mutex::new(None));
    let slot = Arc::clone(&refused);
    let _sub = agent.subscribe(move |event| {
        if matches!(event, AgentEvent::TurnStart) {
            *slot.lock().unwrap() = Some((during.reset(), during.messages().len()));
        }
    });
    agent.prompt(vec![Message::user_text("go")]).await.unwrap();
    assert_eq!(
        *refused.lock().unwrap(),
        Some((Err(AgentError::ResetWhileRunning), 0))
    );
    assert_eq!(agent.messages().len(), 2);

    agent.steer(Message::user_text("s"));
    agent.follow_up(Message::user_text("f"));
    agent.reset().unwrap();
    assert!(agent.messages().is_empty());
    assert!(!agent.has_queued_messages());
}

/// Pi's `PendingMessageQueue.peek()` shows what the next poll would
/// deliver (by mode) without taking it; `clearSteeringQueue` /
/// `clearFollowUpQueue` drop a queue.
#[test]
fn queues_can_be_peeked_without_consuming_and_cleared() {
    let agent = Agent::new(Recorder::new(json!([])), config(vec![], NoHooks));
    agent.steer(Message::user_text("s1"));
    agent.steer(Message::user_text("s2"));
    agent.follow_up(Message::user_text("f1"));
    assert_eq!(user_texts(&agent.peek_steering()), ["s1"]);
    assert_eq!(user_texts(&agent.peek_steering()), ["s1"]);
    agent.set_steering_mode(QueueMode::All);
    assert_eq!(user_texts(&agent.peek_steering()), ["s1", "s2"]);
    assert_eq!(user_texts(&agent.peek_follow_ups()), ["f1"]);

    agent.clear_steering();
    assert!(agent.peek_steering().is_empty());
    assert!(agent.has_queued_messages());
    agent.clear_follow_ups();
    assert!(!agent.has_queued_messages());
    agent.follow_up(Message::user_text("f2"));
    agent.clear_queues();
    assert!(agent.peek_follow_ups().is_empty());
}

/// Pi's `isStreaming` / `activeRun`: true from the first event to the last,
/// false once `prompt` resolved.
#[tokio::test]
async fn is_running_is_true_for_the_whole_run_only() {
    let agent = Agent::new(
        Recorder::new(json!([{"text": "hi"}])),
        config(vec![], NoHooks),
    );
    let during = agent.clone();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let sink = Arc::clone(&seen);
    let sub = agent.subscribe(move |_| sink.lock().unwrap().push(during.is_running()));
    assert!(!agent.is_running());
    agent.prompt(vec![Message::user_text("go")]).await.unwrap();
    drop(sub);
    assert!(!agent.is_running());
    let seen = seen.lock().unwrap();
    assert!(!seen.is_empty() && seen.iter().all(|running| *running));
}

/// Pi awaits async subscribers in subscription order, and `prompt()`
/// settles only after every listener finished with `agent_end`.
#[tokio::test]
async fn async_listeners_are_awaited_in_order_and_prompt_waits_for_them() {
    let agent = Agent::new(
        Recorder::new(json!([{"text": "hi"}])),
        config(vec![], NoHooks),
    );
    let log = Arc::new(Mutex::new(Vec::new()));
    let first = Arc::clone(&log);
    let _slow = agent.subscribe_async(move |event, cancel| {
        let log = Arc::clone(&first);
        Box::pin(async move {
            if matches!(event, AgentEvent::AgentStart | AgentEvent::AgentEnd { .. }) {
                tokio::time::sleep(Duration::from_millis(40)).await;
                let name = if matches!(event, AgentEvent::AgentStart) {
                    "slow agent_start"
                } else {
                    "slow agent_end"
                };
                log.lock()
                    .unwrap()
                    .push(format!("{name} cancelled={}", cancel.is_cancelled()));
            }
        })
    });
    let second = Arc::clone(&log);
    let _inline = agent.subscribe(move |event| {
        if let Some(line @ ("agent_start" | "turn_start" | "agent_end")) =
            describe(event).as_deref()
        {
            second.lock().unwrap().push(format!("inline {line}"));
        }
    });
    agent.prompt(vec![Message::user_text("go")]).await.unwrap();
    // Returned only now: the slow listener's agent_end is already logged.
    assert_eq!(
        *log.lock().unwrap(),
        [
            "slow agent_start cancelled=false",
            "inline agent_start",
            "inline turn_start",
            "slow agent_end cancelled=false",
            "inline agent_end",
        ]
    );
}

//! Pi 1.6.0's own sentences for each refusal of the `Agent` (`agent.test.ts`
//! and `agent.ts`), listed in ARCHITECTURE.md §1.2.

use super::*;
use leash_agent::ContinueError;
use pretty_assertions::assert_eq;

/// Runs `while_running` from inside a slow run's `turn_start` listener and
/// returns what it gave, with the transcript's length at that moment.
async fn during_a_run<T: Send + 'static>(
    while_running: impl Fn(&Agent) -> T + Send + Sync + 'static,
) -> (Agent, Option<(T, usize)>) {
    let provider = Recorder::new(json!([{"text": "slow", "delayMs": 100}]));
    let agent = Agent::new(provider, config(vec![], NoHooks));
    let during = agent.clone();
    let seen = Arc::new(Mutex::new(None));
    let slot = Arc::clone(&seen);
    let sub = agent.subscribe(move |event| {
        if matches!(event, AgentEvent::TurnStart) {
            *slot.lock().unwrap() = Some((while_running(&during), during.messages().len()));
        }
    });
    agent.prompt(vec![Message::user_text("go")]).await.unwrap();
    drop(sub);
    let seen = seen.lock().unwrap().take();
    (agent, seen)
}

/// Pi: "should reject reset while processing without corrupting the
/// transcript" — `reset()` throws "Agent is already processing. Wait for
/// completion before resetting." and the transcript is untouched.
#[tokio::test]
async fn reset_while_processing_is_refused_in_pis_words() {
    let (agent, seen) = during_a_run(|agent| agent.reset()).await;
    let (result, length) = seen.unwrap();
    assert_eq!(result, Err(AgentError::ResetWhileRunning));
    assert_eq!(
        AgentError::ResetWhileRunning.to_string(),
        "Agent is already processing. Wait for completion before resetting."
    );
    assert_eq!(length, 0);
    assert_eq!(agent.messages().len(), 2);
}

/// Pi: "should throw when continue() called while streaming" — "Agent is
/// already processing. Wait for completion before continuing."
#[tokio::test]
async fn continue_while_streaming_is_refused_in_pis_words() {
    let (agent, seen) = during_a_run(|agent| {
        let agent = agent.clone();
        futures::executor::block_on(agent.continue_run())
    })
    .await;
    let (result, _) = seen.unwrap();
    assert_eq!(result, Err(AgentError::ContinueWhileRunning));
    assert_eq!(
        AgentError::ContinueWhileRunning.to_string(),
        "Agent is already processing. Wait for completion before continuing."
    );
    assert_eq!(agent.messages().len(), 2);
}

/// Pi: "should throw when prompt() called while streaming" — "Agent is
/// already processing a prompt. Use steer() or followUp() to queue
/// messages, or wait for completion."
#[tokio::test]
async fn prompt_while_streaming_is_refused_in_pis_words() {
    let (_, seen) = during_a_run(|agent| {
        let agent = agent.clone();
        futures::executor::block_on(agent.prompt(vec![Message::user_text("two")]))
    })
    .await;
    let (result, _) = seen.unwrap();
    assert_eq!(result, Err(AgentError::AlreadyRunning));
    assert_eq!(
        AgentError::AlreadyRunning.to_string(),
        "Agent is already processing a prompt. \
         Use steer() or followUp() to queue messages, or wait for completion."
    );
}

/// Pi's `continue()` on an empty transcript: "No messages to continue from".
#[tokio::test]
async fn continue_with_no_messages_uses_pis_words() {
    let agent = Agent::new(Recorder::new(json!([])), config(vec![], NoHooks));
    let error = agent.continue_run().await.unwrap_err();
    assert_eq!(error, AgentError::CannotContinue(ContinueError::NoMessages));
    assert_eq!(error.to_string(), "No messages to continue from");
}

/// Pi's `agentLoopContinue` on an empty context (agent-loop.test.ts, "with
/// empty messages"): "Cannot continue: no messages in context", before any
/// event; the last message being an assistant one keeps its sentence.
#[tokio::test]
async fn agent_loop_continue_with_no_messages_uses_pis_words() {
    use leash_agent::{NoQueues, RunInputs, run_agent_loop_continue};
    let provider = Recorder::new(json!([]));
    let config = config(vec![], NoHooks);
    let events = Arc::new(Mutex::new(0_usize));
    let counter = Arc::clone(&events);
    let emit = move |_: AgentEvent| *counter.lock().unwrap() += 1;
    let cancel = CancellationToken::new();
    let inputs = || RunInputs {
        provider: provider.as_ref(),
        config: &config,
        queues: &NoQueues,
        cancel: &cancel,
        emit: &emit,
        options: leash_protocol::provider::RequestOptions::default(),
    };
    let error = run_agent_loop_continue(Vec::new(), inputs())
        .await
        .unwrap_err();
    assert_eq!(error, ContinueError::NoMessages);
    assert_eq!(error.to_string(), "Cannot continue: no messages in context");
    let assistant = Message::Assistant(leash_protocol::AssistantMessage::default());
    let error = run_agent_loop_continue(vec![assistant], inputs())
        .await
        .unwrap_err();
    assert_eq!(
        error.to_string(),
        "Cannot continue from message role: assistant"
    );
    assert_eq!(*events.lock().unwrap(), 0);
    assert!(provider.requests().is_empty());
}

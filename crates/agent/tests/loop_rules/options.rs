//! What a run asks of the provider beyond the conversation (Pi 1.6.0's
//! request options): the thinking level, which `prepare_request` may change,
//! the session id, and an observer of the provider's own stream events.

use super::*;
use leash_protocol::provider::ThinkingLevel;
use pretty_assertions::assert_eq;

/// Pi: "forwards sessionId to streamFunction options" — the agent's session
/// id reaches the provider, and a new one set between prompts the next
/// request.
#[tokio::test]
async fn the_session_id_is_forwarded_to_the_provider() {
    let provider = Recorder::new(json!([{"text": "ok"}, {"text": "ok"}]));
    let agent = Agent::new(provider.clone(), config(vec![], NoHooks));
    agent.set_session_id(Some("session-abc".into()));
    agent
        .prompt(vec![Message::user_text("hello")])
        .await
        .unwrap();
    agent.set_session_id(Some("session-def".into()));
    assert_eq!(agent.session_id().as_deref(), Some("session-def"));
    agent
        .prompt(vec![Message::user_text("hello again")])
        .await
        .unwrap();
    assert_eq!(
        provider.sessions(),
        [
            Some("session-abc".to_owned()),
            Some("session-def".to_owned())
        ]
    );
}

/// Hooks that raise the thinking level from the second request on and
/// record the provider's own stream events.
#[derive(Default)]
struct Options {
    requests: AtomicUsize,
    seen: Mutex<Vec<ThinkingLevel>>,
    provider_events: Mutex<Vec<String>>,
}

impl AgentHooks for Options {
    fn prepare_request<'a>(&'a self, request: RequestContext<'a>) -> BoxFuture<'a, RequestChanges> {
        self.seen.lock().unwrap().push(request.thinking);
        let second = self.requests.fetch_add(1, Ordering::SeqCst) > 0;
        Box::pin(async move {
            RequestChanges {
                thinking: second.then_some(ThinkingLevel::High),
                ..RequestChanges::default()
            }
        })
    }
    fn on_provider_event(&self, event: &StreamEvent) {
        let name = match event {
            StreamEvent::Text(_) => "text",
            StreamEvent::Done(_) => "done",
            _ => "other",
        };
        self.provider_events.lock().unwrap().push(name.to_owned());
    }
}

/// Pi's `createLoopConfig` passes the state's thinking level as the
/// request's `reasoning`, and a `prepareRequest` hook may set another one:
/// the provider receives each request's level.
#[tokio::test]
async fn the_thinking_level_reaches_the_provider_and_prepare_request_may_change_it() {
    let provider = Recorder::new(json!([
        {"toolCalls": [call("t", json!({}))]},
        {"text": "done"},
        {"text": "again"}
    ]));
    let hooks = Arc::new(Options::default());
    let mut config = config(vec![TestTool::new("t")], NoHooks);
    config.hooks = hooks.clone();
    let agent = Agent::new(provider.clone(), config);
    agent.set_thinking_level(ThinkingLevel::Low);
    agent.prompt(vec![Message::user_text("go")]).await.unwrap();
    assert_eq!(
        provider.thinking(),
        [ThinkingLevel::Low, ThinkingLevel::High]
    );
    assert_eq!(
        *hooks.seen.lock().unwrap(),
        [ThinkingLevel::Low, ThinkingLevel::Low]
    );
    agent.set_thinking_level(ThinkingLevel::Off);
    hooks.requests.store(0, Ordering::SeqCst);
    agent
        .prompt(vec![Message::user_text("again")])
        .await
        .unwrap();
    assert_eq!(provider.thinking()[2], ThinkingLevel::Off);
}

/// Pi's `onProviderStreamEvent`: a host observes every event the provider
/// streams, in order, before the loop builds the message from it.
#[tokio::test]
async fn an_observer_sees_every_provider_stream_event() {
    let provider = Recorder::new(json!([{"text": "one two three"}]));
    let hooks = Arc::new(Options::default());
    let mut config = config(vec![], NoHooks);
    config.hooks = hooks.clone();
    let agent = Agent::new(provider, config);
    let updates = Arc::new(AtomicUsize::new(0));
    let count = Arc::clone(&updates);
    let _sub = agent.subscribe(move |event| {
        if let AgentEvent::MessageUpdate {
            event: leash_agent::types::AssistantMessageEvent::TextDelta { .. },
        } = event
        {
            count.fetch_add(1, Ordering::SeqCst);
        }
    });
    agent.prompt(vec![Message::user_text("go")]).await.unwrap();
    let events = hooks.provider_events.lock().unwrap().clone();
    assert_eq!(events.last().map(String::as_str), Some("done"));
    let texts = events.iter().filter(|e| *e == "text").count();
    assert!(texts > 1, "{events:?}");
    assert_eq!(texts, updates.load(Ordering::SeqCst));
}

/// Keeps only the last two messages for the request.
struct LastTwo;

impl AgentHooks for LastTwo {
    fn convert_to_llm<'a>(&'a self, context: &'a [Message]) -> BoxFuture<'a, Option<Vec<Message>>> {
        let start = context.len().saturating_sub(2);
        Box::pin(async move { Some(context[start..].to_vec()) })
    }
}

/// Pi: "should apply transformContext before convertToLlm" — the messages
/// a request sends are what the hook made of the context, while the
/// context (and the transcript) keep every message.
#[tokio::test]
async fn convert_to_llm_shapes_what_a_request_sends_and_keeps_the_context() {
    let provider = Recorder::new(json!([{"text": "Response"}]));
    let agent = Agent::new(provider.clone(), config(vec![], LastTwo));
    agent.set_messages(vec![
        Message::user_text("old message 1"),
        Message::user_text("old message 2"),
        Message::user_text("old message 3"),
    ]);
    let added = agent
        .prompt(vec![Message::user_text("new message")])
        .await
        .unwrap();
    let sent = provider.requests();
    assert_eq!(sent[0].len(), 2);
    assert_eq!(
        serde_json::to_value(&sent[0][1]).unwrap()["content"][0]["text"],
        "new message"
    );
    assert_eq!(added.len(), 2);
    assert_eq!(agent.messages().len(), 5);
}

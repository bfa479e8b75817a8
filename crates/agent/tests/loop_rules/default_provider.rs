//! Pi 1.6.0's `setDefaultStreamFn`: a provider set once for the process.

use super::*;
use leash_agent::{
    DefaultProvider, MessageQueues, NO_DEFAULT_PROVIDER, NoQueues, RunInputs, default_provider,
    run_agent_loop, set_default_provider,
};
use leash_protocol::provider::RequestOptions;
use pretty_assertions::assert_eq;

/// Pi: "uses the configured default when a legacy caller omits streamFn";
/// without a default, an agent without a provider is refused.
#[tokio::test]
async fn an_agent_without_a_provider_uses_the_configured_default() {
    let provider = Recorder::new(json!([{"text": "fallback"}, {"text": "fallback"}]));
    set_default_provider(Some(provider.clone()));
    let made = Agent::with_default_provider(config(vec![], NoHooks));
    // The loop takes the default where it takes a provider.
    let through_loop = loop_reply(&DefaultProvider::default()).await;
    set_default_provider(None);
    assert_eq!(through_loop, ("faux".to_owned(), "fallback".to_owned()));
    let unset = loop_reply(&DefaultProvider::default()).await;
    assert_eq!(
        unset,
        ("default".to_owned(), NO_DEFAULT_PROVIDER.to_owned())
    );
    let agent = made.unwrap();
    agent
        .prompt(vec![Message::user_text("Hello")])
        .await
        .unwrap();
    assert_eq!(provider.requests().len(), 2);
    assert_eq!(
        agent.messages().last().map(|m| match m {
            Message::Assistant(a) => a.text(),
            _ => String::new(),
        }),
        Some("fallback".to_owned())
    );

    assert!(default_provider().is_none());
    let error = Agent::with_default_provider(config(vec![], NoHooks)).err();
    assert_eq!(error, Some(AgentError::NoProvider));
    assert_eq!(
        AgentError::NoProvider.to_string(),
        "No provider given and no default provider set"
    );
}

/// One prompt through the bare loop on `provider`: the reply's provider
/// name and its text, or its error message when it failed.
async fn loop_reply(provider: &dyn Provider) -> (String, String) {
    let config = config(vec![], NoHooks);
    let cancel = CancellationToken::new();
    let queues: &dyn MessageQueues = &NoQueues;
    let added = run_agent_loop(
        vec![Message::user_text("Hello")],
        Vec::new(),
        RunInputs {
            provider,
            config: &config,
            queues,
            cancel: &cancel,
            emit: &|_event: AgentEvent| {},
            options: RequestOptions::default(),
        },
    )
    .await;
    match added.last() {
        Some(Message::Assistant(reply)) => (
            reply.provider.clone(),
            reply.error_message.clone().unwrap_or_else(|| reply.text()),
        ),
        _ => (String::new(), String::new()),
    }
}

/// Without a default set, a loop run on [`DefaultProvider`] ends as any
/// failed request does, with the sentence the agent's refusal uses.
#[test]
fn the_loop_without_a_default_says_so() {
    assert_eq!(NO_DEFAULT_PROVIDER, AgentError::NoProvider.to_string());
}

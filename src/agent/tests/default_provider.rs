//! Pi 1.6.0's `setDefaultStreamFn`: a provider set once for the process.

use super::*;
use crate::agent::{default_provider, set_default_provider};
use pretty_assertions::assert_eq;

/// Pi: "uses the configured default when a legacy caller omits streamFn";
/// without a default, an agent without a provider is refused.
#[tokio::test]
async fn an_agent_without_a_provider_uses_the_configured_default() {
    let provider = Recorder::new(json!([{"text": "fallback"}]));
    set_default_provider(Some(provider.clone()));
    let made = Agent::with_default_provider(config(vec![], NoHooks));
    set_default_provider(None);
    let agent = made.unwrap();
    agent
        .prompt(vec![Message::user_text("Hello")])
        .await
        .unwrap();
    assert_eq!(provider.requests().len(), 1);
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

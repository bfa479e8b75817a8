//! The request body.

use super::*;
use crate::testing::user;
use crate::{RequestOptions, ThinkingLevel};
use pretty_assertions::assert_eq;

#[test]
fn cache_points_only_where_the_model_takes_them() {
    assert!(caches("us.anthropic.claude-sonnet-4-5-20250929-v1:0"));
    assert!(caches("amazon.nova-pro-v1:0"));
    assert!(!caches("anthropic.claude-3-5-sonnet-20240620-v1:0"));
    assert!(!caches("meta.llama3-70b-instruct-v1:0"));
    let messages = vec![user("q")];
    let request = Request {
        model: "meta.llama3-70b-instruct-v1:0",
        system: "S",
        messages: &messages,
        tools: &[],
        transcript: &[],
        options: RequestOptions::default(),
    };
    let settings = HttpSettings::new("", None);
    let body = serde_json::to_value(request_body(&request, &settings)).unwrap();
    assert_eq!(
        body,
        json!({"system": [{"text": "S"}], "messages": [{"role": "user", "content": [{"text": "q"}]}]})
    );
}

#[test]
fn thinking_goes_to_claude_as_a_budget_and_drops_the_temperature() {
    let messages = vec![user("q")];
    let request = Request {
        model: "anthropic.claude-opus-4-v1:0",
        system: "",
        messages: &messages,
        tools: &[],
        transcript: &[],
        options: RequestOptions {
            thinking: ThinkingLevel::Low,
            session_id: None,
        },
    };
    let settings = HttpSettings {
        temperature: Some(0.2),
        max_tokens: Some(1000),
        cache: false,
        ..HttpSettings::new("", None)
    };
    let body = serde_json::to_value(request_body(&request, &settings)).unwrap();
    assert_eq!(body["inferenceConfig"], json!({"maxTokens": 3048}));
    assert_eq!(
        body["additionalModelRequestFields"],
        json!({"thinking": {"type": "enabled", "budget_tokens": 2048}})
    );
}

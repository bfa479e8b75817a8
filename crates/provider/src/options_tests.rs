//! How each wire sends the request options (Pi's `reasoning` and
//! `sessionId` stream options).

use serde_json::{Value, json};

use super::{RequestOptions, ThinkingLevel};
use crate::{HttpSettings, Request};
use leash_protocol::Message;

/// The body each OpenAI wire builds for a request with these options.
fn openai_bodies(options: RequestOptions<'_>) -> (Value, Value) {
    let settings = HttpSettings::new("http://localhost", None);
    let messages = [Message::user_text("hi")];
    let request = Request {
        transcript: &[],
        model: "m",
        system: "",
        messages: &messages,
        tools: &[],
        options,
    };
    let chat = crate::openai::request::request_body(&request, &settings);
    let responses = crate::openai_responses::request::request_body(&request, &settings);
    (
        serde_json::to_value(chat).unwrap(),
        serde_json::to_value(responses).unwrap(),
    )
}

/// Pi's OpenAI wires: the thinking level is `reasoning_effort` on Chat
/// Completions and `reasoning.effort` on Responses, and the session id the
/// `prompt_cache_key`; `Off` and no session leave the body as it was.
#[test]
fn the_openai_wires_send_the_thinking_level_and_the_session_id() {
    let (chat, responses) = openai_bodies(RequestOptions {
        thinking: ThinkingLevel::Low,
        session_id: Some("session-abc"),
    });
    assert_eq!(chat["reasoning_effort"], "low");
    assert_eq!(chat["prompt_cache_key"], "session-abc");
    assert_eq!(responses["reasoning"], json!({"effort": "low"}));
    assert_eq!(responses["prompt_cache_key"], "session-abc");

    let (chat, responses) = openai_bodies(RequestOptions::default());
    for body in [&chat, &responses] {
        let keys: Vec<&str> = body
            .as_object()
            .unwrap()
            .keys()
            .map(String::as_str)
            .collect();
        for absent in ["reasoning_effort", "reasoning", "prompt_cache_key"] {
            assert!(!keys.contains(&absent), "{absent} in {body}");
        }
    }
}

/// Pi's Anthropic wire: the thinking level is `thinking: {type: "enabled",
/// budget_tokens}` (Pi's default budgets), `max_tokens` grows by the budget
/// so the answer keeps its room, and `temperature` is left out (the API
/// refuses it with thinking on); `Off` leaves the body as it was.
#[test]
fn the_anthropic_wire_sends_a_thinking_budget() {
    let settings = HttpSettings {
        temperature: Some(0.2),
        ..HttpSettings::new("http://localhost", None)
    };
    let messages = [Message::user_text("hi")];
    let body = |thinking| {
        let request = Request {
            transcript: &[],
            model: "m",
            system: "",
            messages: &messages,
            tools: &[],
            options: RequestOptions {
                thinking,
                session_id: Some("ignored"),
            },
        };
        serde_json::to_value(crate::anthropic::request::request_body(&request, &settings)).unwrap()
    };
    let on = body(ThinkingLevel::Low);
    assert_eq!(
        on["thinking"],
        json!({"type": "enabled", "budget_tokens": 2048})
    );
    assert_eq!(on["max_tokens"], 8192 + 2048);
    assert!(on.get("temperature").is_none(), "{on}");
    assert_eq!(
        body(ThinkingLevel::High)["thinking"]["budget_tokens"],
        16384
    );

    let off: Value = body(ThinkingLevel::Off);
    assert!(off.get("thinking").is_none(), "{off}");
    assert_eq!(off["max_tokens"], 8192);
    assert_eq!(off["temperature"], json!(0.2f32));
}

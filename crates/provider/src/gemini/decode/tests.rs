//! The decoder on the chunk sequences Gemini streams.

use super::*;
use crate::testing::gemini::*;
use pretty_assertions::assert_eq;
use serde_json::json;

fn decode(chunks: &[String]) -> Vec<StreamEvent> {
    let mut decoder = Decoder::default();
    let mut out = Vec::new();
    for data in chunks {
        if decoder.decode_event("message", data, &mut out) == Flow::End {
            return out;
        }
    }
    decoder.body_ended(&mut out);
    out
}

fn strings(values: &[serde_json::Value]) -> Vec<String> {
    values.iter().map(|value| value.to_string()).collect()
}

#[test]
fn text_then_stop_with_cached_and_thought_tokens() {
    let events = decode(&strings(&[
        thought("Weighing it", "c2ln"),
        text("Hel"),
        text("lo"),
        finish("STOP", 100, 40, 7, 20),
    ]));
    assert_eq!(
        events,
        vec![
            StreamEvent::Thinking("Weighing it".into()),
            StreamEvent::ThinkingSignature("c2ln".into()),
            StreamEvent::Text("Hel".into()),
            StreamEvent::Text("lo".into()),
            StreamEvent::Usage(Usage {
                input: 60,
                output: 27,
                cache_read: 40,
                cache_write: 0,
                total_tokens: 127,
                cost: None,
            }),
            StreamEvent::Done(StopReason::Stop),
        ]
    );
}

#[test]
fn a_function_call_is_one_whole_call_and_keeps_its_signature() {
    let events = decode(&strings(&[
        call("read_file", json!({"path": "a.ts"}), Some("sig-1")),
        finish("STOP", 10, 0, 5, 0),
    ]));
    assert_eq!(events[0], StreamEvent::Thinking(String::new()));
    assert_eq!(events[1], StreamEvent::ThinkingSignature("sig-1".into()));
    let StreamEvent::ToolCallStart { key, id, name } = &events[2] else {
        panic!("{events:?}");
    };
    assert_eq!((*key, name.as_str()), (0, "read_file"));
    assert!(id.starts_with(MADE_UP), "{id}");
    assert_eq!(
        events[3],
        StreamEvent::ToolCallArgs {
            key: 0,
            fragment: "{\"path\":\"a.ts\"}".into()
        }
    );
    assert_eq!(events.last(), Some(&StreamEvent::Done(StopReason::ToolUse)));
}

#[test]
fn an_id_the_model_gave_is_kept() {
    let with_id = chunk(
        json!([{"functionCall": {"id": "fc-7", "name": "grep", "args": {}}}]),
        Some("STOP"),
    );
    let events = decode(&strings(&[with_id]));
    assert!(matches!(&events[0], StreamEvent::ToolCallStart { id, .. } if id == "fc-7"));
}

#[test]
fn max_tokens_is_length_and_safety_is_an_error() {
    let cut = decode(&strings(&[text("Part"), finish("MAX_TOKENS", 5, 0, 5, 0)]));
    assert_eq!(cut.last(), Some(&StreamEvent::Done(StopReason::Length)));
    let blocked = decode(&strings(&[text("Part"), finish("SAFETY", 5, 0, 5, 0)]));
    assert_eq!(
        blocked.last(),
        Some(&StreamEvent::Error(
            "Gemini stopped the reply (finishReason: SAFETY)".into()
        ))
    );
    let garbled = decode(&strings(&[finish("MALFORMED_FUNCTION_CALL", 5, 0, 0, 0)]));
    assert!(
        matches!(garbled.last(), Some(StreamEvent::Error(e)) if e.contains("MALFORMED_FUNCTION_CALL"))
    );
}

#[test]
fn a_blocked_prompt_an_error_chunk_and_a_cut_body_end_in_errors() {
    let blocked = decode(&[r#"{"promptFeedback":{"blockReason":"PROHIBITED_CONTENT"}}"#.into()]);
    assert_eq!(
        blocked,
        vec![StreamEvent::Error(
            "Gemini blocked the prompt (blockReason: PROHIBITED_CONTENT)".into()
        )]
    );
    let error = decode(&[error_json(503, "The model is overloaded.", "UNAVAILABLE").to_string()]);
    assert_eq!(
        error,
        vec![StreamEvent::Error(
            "the provider reported an error mid-stream: The model is overloaded. (UNAVAILABLE)"
                .into()
        )]
    );
    let cut = decode(&strings(&[text("Half")]));
    assert_eq!(
        cut.last(),
        Some(&StreamEvent::Error(
            "the stream was cut off (no finishReason); the reply is incomplete".into()
        ))
    );
    let garbage = decode(&["{not json".into()]);
    assert!(matches!(&garbage[0], StreamEvent::Error(e) if e.contains("not JSON")));
    let shape = decode(&[r#"{"candidates": 7}"#.into()]);
    assert!(matches!(&shape[0], StreamEvent::Error(e) if e.contains("unexpected shape")));
}

#[test]
fn hostile_counts_never_overflow() {
    let huge = json!({"candidates": [{"content": {"parts": []}, "finishReason": "STOP"}],
        "usageMetadata": {"promptTokenCount": 1, "cachedContentTokenCount": u64::MAX,
                          "candidatesTokenCount": u64::MAX, "thoughtsTokenCount": u64::MAX}});
    let events = decode(&strings(&[huge]));
    assert!(matches!(
        events.last(),
        Some(StreamEvent::Done(StopReason::Stop))
    ));
}

//! The decoder on ConverseStream's events.

use super::*;
use pretty_assertions::assert_eq;

fn decode(events: &[(&str, &str)]) -> Vec<StreamEvent> {
    let mut decoder = Decoder::default();
    let mut out = Vec::new();
    for (name, data) in events {
        if decoder.decode_event(name, data, &mut out) == Flow::End {
            return out;
        }
    }
    decoder.body_ended(&mut out);
    out
}

#[test]
fn a_call_with_thinking_and_usage() {
    let events = decode(&[
        ("messageStart", r#"{"role":"assistant"}"#),
        (
            "contentBlockDelta",
            r#"{"contentBlockIndex":0,"delta":{"reasoningContent":{"text":"Hmm"}}}"#,
        ),
        (
            "contentBlockDelta",
            r#"{"contentBlockIndex":0,"delta":{"reasoningContent":{"signature":"sig"}}}"#,
        ),
        (
            "contentBlockStart",
            r#"{"contentBlockIndex":1,"start":{"toolUse":{"toolUseId":"t1","name":"grep"}}}"#,
        ),
        (
            "contentBlockDelta",
            r#"{"contentBlockIndex":1,"delta":{"toolUse":{"input":"{}"}}}"#,
        ),
        (
            "contentBlockDelta",
            r#"{"contentBlockIndex":7,"delta":{"toolUse":{"input":"stray"}}}"#,
        ),
        ("messageStop", r#"{"stopReason":"tool_use"}"#),
        (
            "metadata",
            r#"{"usage":{"inputTokens":5,"outputTokens":2,"cacheWriteInputTokens":9}}"#,
        ),
    ]);
    assert_eq!(
        events,
        vec![
            StreamEvent::Thinking("Hmm".into()),
            StreamEvent::ThinkingSignature("sig".into()),
            StreamEvent::ToolCallStart {
                key: 0,
                id: "t1".into(),
                name: "grep".into()
            },
            StreamEvent::ToolCallArgs {
                key: 0,
                fragment: "{}".into()
            },
            StreamEvent::Usage(Usage {
                input: 5,
                output: 2,
                cache_read: 0,
                cache_write: 9,
                total_tokens: 16,
                cost: None
            }),
            StreamEvent::Done(StopReason::ToolUse),
        ]
    );
}

#[test]
fn the_endings() {
    let stop = |reason: &str| {
        let data = format!(r#"{{"stopReason":"{reason}"}}"#);
        decode(&[("messageStop", data.as_str())]).pop().unwrap()
    };
    assert_eq!(stop("end_turn"), StreamEvent::Done(StopReason::Stop));
    assert_eq!(stop("max_tokens"), StreamEvent::Done(StopReason::Length));
    assert_eq!(
        stop("guardrail_intervened"),
        StreamEvent::Error("Bedrock stopped the reply (stopReason: guardrail_intervened)".into())
    );
    assert_eq!(
        decode(&[("messageStart", "{}")]),
        vec![StreamEvent::Error(
            "the stream was cut off (no messageStop); the reply is incomplete".into()
        )]
    );
    let exception = decode(&[(
        "exception:validationException",
        r#"{"message":"bad input"}"#,
    )]);
    assert_eq!(
        exception,
        vec![StreamEvent::Error(
            "the provider reported an error mid-stream: bad input (validationException)".into()
        )]
    );
    let garbage = decode(&[("contentBlockDelta", "{nope")]);
    assert!(matches!(&garbage[..], [StreamEvent::Error(e)] if e.contains("not JSON")));
}

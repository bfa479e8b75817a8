//! The decoder on every wire sequence.

use super::*;
use pretty_assertions::assert_eq;

use crate::anthropic::testing::*;
/// Feeds `(event name, data)` pairs and collects everything produced,
/// plus the end-of-stream verdict when the decoder was not finished.
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

const MESSAGE_START: (&str, &str) = (
    "message_start",
    r#"{"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","content":[],"model":"claude-test","stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":25,"cache_creation_input_tokens":3,"cache_read_input_tokens":7,"output_tokens":1}}}"#,
);
const MESSAGE_STOP: (&str, &str) = ("message_stop", r#"{"type":"message_stop"}"#);

#[test]
fn text_reply_with_ping_and_usage() {
    let events = decode(&[
        MESSAGE_START,
        (
            "content_block_start",
            r#"{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}"#,
        ),
        ("ping", r#"{"type": "ping"}"#),
        (
            "content_block_delta",
            r#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hello"}}"#,
        ),
        (
            "content_block_delta",
            r#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":" world"}}"#,
        ),
        (
            "content_block_stop",
            r#"{"type":"content_block_stop","index":0}"#,
        ),
        (
            "message_delta",
            r#"{"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"output_tokens":15}}"#,
        ),
        MESSAGE_STOP,
    ]);
    assert_eq!(
        events,
        vec![
            usage(25, 1, 7, 3),
            StreamEvent::Text("Hello".to_string()),
            StreamEvent::Text(" world".to_string()),
            usage(25, 15, 7, 3),
            StreamEvent::Done(StopReason::Stop),
        ]
    );
}

#[test]
fn interleaved_text_and_tool_use_with_fragmented_arguments() {
    let events = decode(&[
        MESSAGE_START,
        (
            "content_block_start",
            r#"{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}"#,
        ),
        (
            "content_block_delta",
            r#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Let me look."}}"#,
        ),
        (
            "content_block_stop",
            r#"{"type":"content_block_stop","index":0}"#,
        ),
        (
            "content_block_start",
            r#"{"type":"content_block_start","index":1,"content_block":{"type":"tool_use","id":"toolu_a","name":"read_file","input":{}}}"#,
        ),
        (
            "content_block_delta",
            r#"{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":""}}"#,
        ),
        (
            "content_block_delta",
            r#"{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"{\"pa"}}"#,
        ),
        (
            "content_block_delta",
            r#"{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"th\": \"sam"}}"#,
        ),
        (
            "content_block_delta",
            r#"{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"ple.ts\"}"}}"#,
        ),
        (
            "content_block_stop",
            r#"{"type":"content_block_stop","index":1}"#,
        ),
        (
            "content_block_start",
            r#"{"type":"content_block_start","index":2,"content_block":{"type":"text","text":""}}"#,
        ),
        (
            "content_block_delta",
            r#"{"type":"content_block_delta","index":2,"delta":{"type":"text_delta","text":"And the dir."}}"#,
        ),
        (
            "content_block_stop",
            r#"{"type":"content_block_stop","index":2}"#,
        ),
        (
            "content_block_start",
            r#"{"type":"content_block_start","index":3,"content_block":{"type":"tool_use","id":"toolu_b","name":"list_dir","input":{}}}"#,
        ),
        (
            "content_block_stop",
            r#"{"type":"content_block_stop","index":3}"#,
        ),
        (
            "message_delta",
            r#"{"type":"message_delta","delta":{"stop_reason":"tool_use","stop_sequence":null},"usage":{"output_tokens":40}}"#,
        ),
        MESSAGE_STOP,
    ]);
    assert_eq!(
        events,
        vec![
            usage(25, 1, 7, 3),
            StreamEvent::Text("Let me look.".to_string()),
            StreamEvent::ToolCallStart {
                key: 1,
                id: "toolu_a".to_string(),
                name: "read_file".to_string()
            },
            StreamEvent::ToolCallArgs {
                key: 1,
                fragment: "{\"pa".to_string()
            },
            StreamEvent::ToolCallArgs {
                key: 1,
                fragment: "th\": \"sam".to_string()
            },
            StreamEvent::ToolCallArgs {
                key: 1,
                fragment: "ple.ts\"}".to_string()
            },
            StreamEvent::Text("And the dir.".to_string()),
            StreamEvent::ToolCallStart {
                key: 3,
                id: "toolu_b".to_string(),
                name: "list_dir".to_string()
            },
            StreamEvent::ToolCallArgs {
                key: 3,
                fragment: "{}".to_string()
            },
            usage(25, 40, 7, 3),
            StreamEvent::Done(StopReason::ToolUse),
        ]
    );
}

#[test]
fn thinking_and_signature_are_kept() {
    let events = decode(&[
        MESSAGE_START,
        (
            "content_block_start",
            r#"{"type":"content_block_start","index":0,"content_block":{"type":"thinking","thinking":""}}"#,
        ),
        (
            "content_block_delta",
            r#"{"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"Two plus two"}}"#,
        ),
        (
            "content_block_delta",
            r#"{"type":"content_block_delta","index":0,"delta":{"type":"signature_delta","signature":"EqQBCgIYAhIM"}}"#,
        ),
        (
            "content_block_stop",
            r#"{"type":"content_block_stop","index":0}"#,
        ),
        (
            "content_block_start",
            r#"{"type":"content_block_start","index":1,"content_block":{"type":"redacted_thinking","data":"xyz"}}"#,
        ),
        (
            "content_block_stop",
            r#"{"type":"content_block_stop","index":1}"#,
        ),
        (
            "content_block_start",
            r#"{"type":"content_block_start","index":2,"content_block":{"type":"text","text":""}}"#,
        ),
        (
            "content_block_delta",
            r#"{"type":"content_block_delta","index":2,"delta":{"type":"text_delta","text":"4"}}"#,
        ),
        (
            "content_block_stop",
            r#"{"type":"content_block_stop","index":2}"#,
        ),
        (
            "message_delta",
            r#"{"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":9}}"#,
        ),
        MESSAGE_STOP,
    ]);
    assert_eq!(
        events,
        vec![
            usage(25, 1, 7, 3),
            StreamEvent::Thinking("Two plus two".to_string()),
            StreamEvent::ThinkingSignature("EqQBCgIYAhIM".to_string()),
            StreamEvent::RedactedThinking("xyz".to_string()),
            StreamEvent::Text("4".to_string()),
            usage(25, 9, 7, 3),
            StreamEvent::Done(StopReason::Stop),
        ]
    );
}

#[test]
fn mid_stream_error_event_ends_with_its_message() {
    let events = decode(&[
        MESSAGE_START,
        (
            "content_block_start",
            r#"{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}"#,
        ),
        (
            "content_block_delta",
            r#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hel"}}"#,
        ),
        (
            "error",
            r#"{"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}"#,
        ),
        MESSAGE_STOP,
    ]);
    assert_eq!(
        events,
        vec![
            usage(25, 1, 7, 3),
            StreamEvent::Text("Hel".to_string()),
            StreamEvent::Error(
                "the provider reported an error mid-stream: Overloaded (overloaded_error)"
                    .to_string()
            ),
        ]
    );
}

#[test]
fn stop_reasons_map_to_spec_terms() {
    let run = |reason: &str| {
        let delta = format!(
            r#"{{"type":"message_delta","delta":{{"stop_reason":"{reason}"}},"usage":{{"output_tokens":2}}}}"#
        );
        decode(&[("message_delta", &delta), MESSAGE_STOP])
            .pop()
            .unwrap()
    };
    assert_eq!(run("end_turn"), StreamEvent::Done(StopReason::Stop));
    assert_eq!(run("stop_sequence"), StreamEvent::Done(StopReason::Stop));
    assert_eq!(run("tool_use"), StreamEvent::Done(StopReason::ToolUse));
    assert_eq!(run("max_tokens"), StreamEvent::Done(StopReason::Length));
    assert_eq!(
        run("refusal"),
        StreamEvent::Error("the model refused to answer (stop_reason: refusal)".to_string())
    );
    assert_eq!(run("something_new"), StreamEvent::Done(StopReason::Stop));
}

#[test]
fn a_stream_without_message_stop_is_an_error() {
    let events = decode(&[
        MESSAGE_START,
        (
            "message_delta",
            r#"{"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":2}}"#,
        ),
    ]);
    assert_eq!(
        events.last(),
        Some(&StreamEvent::Error(
            "the stream was cut off (no message_stop); the reply is incomplete".to_string()
        ))
    );
}

#[test]
fn message_stop_without_a_stop_reason_is_an_incomplete_reply() {
    let text = (
        "content_block_delta",
        r#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Par"}}"#,
    );
    let block = (
        "content_block_start",
        r#"{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}"#,
    );
    let null_reason = (
        "message_delta",
        r#"{"type":"message_delta","delta":{"stop_reason":null},"usage":{"output_tokens":2}}"#,
    );
    for events in [
        decode(&[MESSAGE_START, block, text, MESSAGE_STOP]),
        decode(&[MESSAGE_START, MESSAGE_STOP]),
        decode(&[MESSAGE_START, block, text, null_reason, MESSAGE_STOP]),
    ] {
        assert_eq!(
            events.last(),
            Some(&StreamEvent::Error(crate::NO_STOP_REASON.to_string())),
            "{events:?}"
        );
        assert!(!events.iter().any(|e| matches!(e, StreamEvent::Done(_))));
    }
}

#[test]
fn unknown_events_blocks_and_deltas_are_skipped_invalid_json_is_an_error() {
    let events = decode(&[
        ("some_future_event", "not even json"),
        (
            "content_block_start",
            r#"{"type":"content_block_start","index":0,"content_block":{"type":"server_tool_use","id":"x","name":"web_search","input":{}}}"#,
        ),
        (
            "content_block_delta",
            r#"{"type":"content_block_delta","index":0,"delta":{"type":"citations_delta","citation":{}}}"#,
        ),
        (
            "content_block_delta",
            r#"{"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":"{}"}}"#,
        ),
        ("", r#"{"type":"brand_new"}"#),
        (
            "content_block_delta",
            r#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"ok"}}"#,
        ),
        (
            "content_block_delta",
            "{\"type\":\"content_block_delta\",\"ind",
        ),
    ]);
    assert_eq!(events.len(), 2);
    assert_eq!(events[0], StreamEvent::Text("ok".to_string()));
    assert!(matches!(
        &events[1],
        StreamEvent::Error(message)
            if message.starts_with("the provider sent an event that is not JSON (")
                && message.ends_with(r#"{"type":"content_block_delta","ind"#)
    ));
}

#[test]
fn tool_input_sent_whole_in_the_start_event_is_used() {
    let events = decode(&[
        (
            "content_block_start",
            r#"{"type":"content_block_start","index":0,"content_block":{"type":"tool_use","id":"t","name":"read_file","input":{"path":"a"}}}"#,
        ),
        (
            "message_delta",
            r#"{"type":"message_delta","delta":{"stop_reason":"tool_use"}}"#,
        ),
        MESSAGE_STOP,
    ]);
    assert_eq!(
        events,
        vec![
            StreamEvent::ToolCallStart {
                key: 0,
                id: "t".to_string(),
                name: "read_file".to_string()
            },
            StreamEvent::ToolCallArgs {
                key: 0,
                fragment: r#"{"path":"a"}"#.to_string()
            },
            StreamEvent::Done(StopReason::ToolUse),
        ]
    );
}

#[test]
fn garbage_never_panics() {
    let names = [
        "",
        "message_start",
        "content_block_delta",
        "error",
        "message_delta",
    ];
    let datas = [
        "",
        "null",
        "[]",
        "{}",
        r#"{"type":"content_block_delta"}"#,
        r#"{"type":"content_block_delta","index":-1,"delta":{"type":"text_delta","text":"x"}}"#,
        r#"{"type":"message_delta","delta":null,"usage":{"output_tokens":"many"}}"#,
        r#"{"type":"error","error":{}}"#,
        "\u{0}\u{fffd}",
    ];
    for name in names {
        for data in datas {
            let mut decoder = Decoder::default();
            let mut out = Vec::new();
            decoder.decode_event(name, data, &mut out);
        }
    }
}

//! The decoder on every wire sequence.

use super::*;
use pretty_assertions::assert_eq;
use serde_json::json;

use crate::openai::testing::*;
/// Feeds payloads until the decoder ends the stream, then the end of
/// the body when it did not.
fn decode(payloads: &[String]) -> Vec<StreamEvent> {
    let mut decoder = Decoder::default();
    let mut out = Vec::new();
    for payload in payloads {
        if decoder.decode_event("message", payload, &mut out) == Flow::End {
            return out;
        }
    }
    decoder.body_ended(&mut out);
    out
}

#[test]
fn text_arrives_delta_by_delta() {
    let role =
        json!({"choices":[{"index":0,"delta":{"role":"assistant","content":""}}]}).to_string();
    let events = decode(&[
        role,
        text_delta("Hel"),
        text_delta("lo, "),
        text_delta("wörld"),
        finish("stop"),
        done(),
    ]);
    assert_eq!(
        events,
        vec![
            StreamEvent::Text("Hel".to_string()),
            StreamEvent::Text("lo, ".to_string()),
            StreamEvent::Text("wörld".to_string()),
            StreamEvent::Done(StopReason::Stop),
        ]
    );
}

#[test]
fn tool_call_arguments_arrive_in_fragments() {
    let events = decode(&[
        call_delta(0, Some("call_9"), Some("read_file"), ""),
        call_delta(0, None, None, "{\"pa"),
        call_delta(0, None, None, "th\": \"sam"),
        call_delta(0, None, None, "ple.ts\"}"),
        finish("tool_calls"),
        done(),
    ]);
    assert_eq!(
        events,
        vec![
            StreamEvent::ToolCallStart {
                key: 0,
                id: "call_9".to_string(),
                name: "read_file".to_string()
            },
            StreamEvent::ToolCallArgs {
                key: 0,
                fragment: "{\"pa".to_string()
            },
            StreamEvent::ToolCallArgs {
                key: 0,
                fragment: "th\": \"sam".to_string()
            },
            StreamEvent::ToolCallArgs {
                key: 0,
                fragment: "ple.ts\"}".to_string()
            },
            StreamEvent::Done(StopReason::ToolUse),
        ]
    );
}

#[test]
fn parallel_calls_interleave_by_index() {
    let events = decode(&[
        call_delta(0, Some("call_a"), Some("read_file"), ""),
        call_delta(1, Some("call_b"), Some("list_dir"), "{\"pa"),
        call_delta(0, None, None, "{}"),
        call_delta(1, None, None, "th\":\".\"}"),
        finish("tool_calls"),
        done(),
    ]);
    let start = |key, id: &str, name: &str| StreamEvent::ToolCallStart {
        key,
        id: id.to_string(),
        name: name.to_string(),
    };
    let args = |key, fragment: &str| StreamEvent::ToolCallArgs {
        key,
        fragment: fragment.to_string(),
    };
    assert_eq!(
        events,
        vec![
            start(0, "call_a", "read_file"),
            start(1, "call_b", "list_dir"),
            args(1, "{\"pa"),
            args(0, "{}"),
            args(1, "th\":\".\"}"),
            StreamEvent::Done(StopReason::ToolUse),
        ]
    );
}

#[test]
fn odd_tool_call_deltas_from_compatible_servers() {
    // Arguments before the name, no id, no index, the id repeated.
    let no_index = |id: &str, name: &str, args: &str| {
        json!({"choices":[{"delta":{"tool_calls":[{"id":id,"function":{"name":name,"arguments":args}}]}}]})
                .to_string()
    };
    let events = decode(&[
        call_delta(3, None, None, "{\"a\":"),
        call_delta(3, None, Some("f"), "1}"),
        call_delta(3, None, Some("f"), ""),
        no_index("x1", "g", "{}"),
        no_index("x2", "h", "{}"),
        call_delta(7, Some("nameless"), None, "{}"),
        finish("stop"),
    ]);
    let start = |key, id: &str, name: &str| StreamEvent::ToolCallStart {
        key,
        id: id.to_string(),
        name: name.to_string(),
    };
    let args = |key, fragment: &str| StreamEvent::ToolCallArgs {
        key,
        fragment: fragment.to_string(),
    };
    assert_eq!(
        events,
        vec![
            start(3, "call_3", "f"),
            args(3, "{\"a\":1}"),
            start(4, "x1", "g"),
            args(4, "{}"),
            start(5, "x2", "h"),
            args(5, "{}"),
            start(7, "nameless", ""),
            args(7, "{}"),
            StreamEvent::Done(StopReason::ToolUse),
        ]
    );
}

#[test]
fn a_call_at_the_largest_index_and_one_without_an_index_do_not_overflow() {
    // Found with the openai_stream fuzz target: `index + 1` overflowed.
    let max = usize::MAX;
    let events = decode(&[
            json!({"choices":[{"delta":{"tool_calls":[{"index": max, "id": "a", "function": {"name": "x", "arguments": "{}"}}]}}]}).to_string(),
            json!({"choices":[{"delta":{"tool_calls":[{"id": "b", "function": {"name": "y", "arguments": "{}"}}]}}]}).to_string(),
            finish("tool_calls"),
        ]);
    let starts: Vec<_> = events
        .iter()
        .filter_map(|event| match event {
            StreamEvent::ToolCallStart { key, id, .. } => Some((*key, id.as_str())),
            _ => None,
        })
        .collect();
    assert_eq!(starts, vec![(max, "a"), (0, "b")]);
    assert_eq!(events.last(), Some(&StreamEvent::Done(StopReason::ToolUse)));
}

#[test]
fn the_usage_chunk_separates_cached_tokens() {
    let usage =
        json!({"choices":[],"usage":{"prompt_tokens":100,"completion_tokens":20,"total_tokens":120,
            "prompt_tokens_details":{"cached_tokens":60}}})
        .to_string();
    let events = decode(&[text_delta("ok"), finish("stop"), usage, done()]);
    assert_eq!(
        events,
        vec![
            StreamEvent::Text("ok".to_string()),
            StreamEvent::Usage(Usage {
                input: 40,
                output: 20,
                cache_read: 60,
                cache_write: 0,
                total_tokens: 120,
                cost: None,
            }),
            StreamEvent::Done(StopReason::Stop),
        ]
    );
}

#[test]
fn reasoning_in_either_field() {
    let reasoning_content =
        json!({"choices":[{"delta":{"reasoning_content":"think "}}]}).to_string();
    let reasoning = json!({"choices":[{"delta":{"reasoning":"more","content":null}}]}).to_string();
    let both =
        json!({"choices":[{"delta":{"reasoning_content":"once","reasoning":"once"}}]}).to_string();
    let object = json!({"choices":[{"delta":{"reasoning":{"effort":"high"}}}]}).to_string();
    let events = decode(&[
        reasoning_content,
        reasoning,
        both,
        object,
        text_delta("A"),
        finish("stop"),
        done(),
    ]);
    assert_eq!(
        events,
        vec![
            StreamEvent::Thinking("think ".to_string()),
            StreamEvent::Thinking("more".to_string()),
            StreamEvent::Thinking("once".to_string()),
            StreamEvent::Text("A".to_string()),
            StreamEvent::Done(StopReason::Stop),
        ]
    );
}

#[test]
fn finish_reasons() {
    assert_eq!(
        decode(&[text_delta("a"), finish("length"), done()]).last(),
        Some(&StreamEvent::Done(StopReason::Length))
    );
    assert_eq!(
        decode(&[text_delta("a"), finish("stop")]).last(),
        Some(&StreamEvent::Done(StopReason::Stop))
    );
    assert_eq!(
        decode(&[text_delta("a"), finish("stop")]).last(),
        Some(&StreamEvent::Done(StopReason::Stop))
    );
    assert_eq!(
        decode(&[text_delta("a"), finish("eos"), done()]).last(),
        Some(&StreamEvent::Done(StopReason::Stop))
    );
    assert_eq!(
        decode(&[text_delta("a"), finish("content_filter"), done()]),
        vec![
            StreamEvent::Text("a".to_string()),
            StreamEvent::Error(
                "the provider's content filter stopped the reply (finish_reason: content_filter)"
                    .to_string()
            ),
        ]
    );
}

#[test]
fn done_without_a_finish_reason_is_an_incomplete_reply() {
    let incomplete = StreamEvent::Error(crate::NO_STOP_REASON.to_string());
    assert_eq!(
        decode(&[text_delta("a"), done()]),
        vec![StreamEvent::Text("a".to_string()), incomplete.clone()]
    );
    assert_eq!(decode(&[done()]), vec![incomplete.clone()]);
    // A call without a finish reason is not run either.
    let call = call_delta(0, Some("c"), Some("read_file"), "{}");
    assert_eq!(decode(&[call, done()]).last(), Some(&incomplete));
    assert!(crate::NO_STOP_REASON.ends_with(crate::INCOMPLETE));
}

#[test]
fn broken_streams_end_with_an_error() {
    assert_eq!(
        decode(&[text_delta("a")]).last(),
        Some(&StreamEvent::Error(
            "the stream was cut off (no finish_reason, no [DONE]); the reply is incomplete"
                .to_string()
        ))
    );
    let Some(StreamEvent::Error(not_json)) =
        decode(&[text_delta("a"), "{\"choices\": [".to_string()]).pop()
    else {
        panic!("no error");
    };
    assert!(
        not_json.starts_with("the provider sent an event that is not JSON ("),
        "{not_json}"
    );
    assert!(not_json.ends_with("): {\"choices\": ["), "{not_json}");
    let Some(StreamEvent::Error(shape)) = decode(&["{\"choices\": 3}".to_string()]).pop() else {
        panic!("no error");
    };
    assert!(
        shape.starts_with("the provider sent an event of an unexpected shape"),
        "{shape}"
    );
    let error =
        json!({"error":{"message":"The server had an error","type":"server_error"}}).to_string();
    assert_eq!(
        decode(&[text_delta("a"), error, done()]).last(),
        Some(&StreamEvent::Error(
            "the provider reported an error mid-stream: The server had an error".to_string()
        ))
    );
    let mut decoder = Decoder::default();
    let mut out = Vec::new();
    assert_eq!(
        decoder.decode_event("error", "{\"error\":\"overloaded\"}", &mut out),
        Flow::End
    );
    assert_eq!(
        out,
        vec![StreamEvent::Error(
            "the provider reported an error mid-stream: overloaded".to_string()
        )]
    );
}

#[test]
fn a_transport_failure_after_the_finish_reason_still_completes() {
    let mut decoder = Decoder::default();
    let mut out = Vec::new();
    decoder.decode_event("message", &finish("stop"), &mut out);
    decoder.body_failed(&sse::SseError::Transport("reset".to_string()), &mut out);
    assert_eq!(out, vec![StreamEvent::Done(StopReason::Stop)]);
    let mut decoder = Decoder::default();
    let mut out = Vec::new();
    decoder.body_failed(&sse::SseError::InvalidUtf8, &mut out);
    assert_eq!(
        out,
        vec![StreamEvent::Error(
            "the response stream is not valid UTF-8; the reply is incomplete".to_string()
        )]
    );
}

#[test]
fn keep_alives_and_null_fields_are_ignored() {
    let nulls = json!({"choices":null,"usage":null,"error":null}).to_string();
    let null_delta = json!({"choices":[{"delta":null,"finish_reason":null}]}).to_string();
    let events = decode(&[
        String::new(),
        nulls,
        null_delta,
        text_delta("x"),
        finish("stop"),
        done(),
    ]);
    assert_eq!(
        events,
        vec![
            StreamEvent::Text("x".to_string()),
            StreamEvent::Done(StopReason::Stop)
        ]
    );
}

//! The decoder on every wire sequence of the documented event stream.

use super::*;
use crate::driver::{Flow, WireDecoder};
use crate::openai_responses::testing::*;
use leash_protocol::Usage;
use pretty_assertions::assert_eq;
use serde_json::json;

/// Feeds the events until the decoder ends the stream, then the end of
/// the body when it did not.
fn decode(events: &Events) -> Vec<StreamEvent> {
    let mut decoder = Decoder::default();
    let mut out = Vec::new();
    for (kind, data) in events.payloads() {
        if decoder.decode_event(&kind, &data, &mut out) == Flow::End {
            return out;
        }
    }
    decoder.body_ended(&mut out);
    out
}

fn text(text: &str) -> StreamEvent {
    StreamEvent::Text(text.to_owned())
}

fn args(key: usize, fragment: &str) -> StreamEvent {
    StreamEvent::ToolCallArgs {
        key,
        fragment: fragment.to_owned(),
    }
}

fn start(key: usize, id: &str, name: &str) -> StreamEvent {
    StreamEvent::ToolCallStart {
        key,
        id: id.to_owned(),
        name: name.to_owned(),
    }
}

#[test]
fn text_arrives_delta_by_delta_with_cached_input_apart() {
    let events = Events::default()
        .created()
        .message_added(0)
        .text(0, "Hel")
        .text(0, "lo, wörld")
        .push(
            "response.output_text.done",
            json!({"item_id": "msg_0", "output_index": 0, "content_index": 0, "text": "Hello, wörld"}),
        )
        .item_done(
            0,
            json!({"id": "msg_0", "type": "message", "status": "completed", "role": "assistant",
                   "content": [{"type": "output_text", "text": "Hello, wörld", "annotations": []}]}),
        )
        .completed(usage(100, 60, 20, 8));
    assert_eq!(
        decode(&events),
        vec![
            text("Hel"),
            text("lo, wörld"),
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
fn a_message_that_never_streamed_gives_its_text_when_done() {
    let events = Events::default()
        .message_added(0)
        .item_done(
            0,
            json!({"id": "msg_0", "type": "message", "role": "assistant",
                   "content": [{"type": "output_text", "text": "Whole."}]}),
        )
        .completed(json!(null));
    assert_eq!(
        decode(&events),
        vec![text("Whole."), StreamEvent::Done(StopReason::Stop)]
    );
}

#[test]
fn a_tool_call_arrives_in_fragments_and_done_repeats_nothing() {
    let events = Events::default()
        .call_added(0, "call_9", "read_file")
        .call_args(0, "{\"pa")
        .call_args(0, "th\": \"sample.ts\"}")
        .call_done(0, "call_9", "read_file", "{\"path\": \"sample.ts\"}")
        .completed(usage(50, 0, 10, 0));
    let decoded = decode(&events);
    assert_eq!(
        decoded[..3],
        [
            start(0, "call_9", "read_file"),
            args(0, "{\"pa"),
            args(0, "th\": \"sample.ts\"}"),
        ]
    );
    assert!(matches!(decoded[3], StreamEvent::Usage(_)));
    assert_eq!(decoded[4], StreamEvent::Done(StopReason::ToolUse));
    assert_eq!(decoded.len(), 5);
}

#[test]
fn parallel_calls_interleave_by_output_index() {
    let events = Events::default()
        .message_added(0)
        .text(0, "Reading both.")
        .call_added(1, "call_a", "read_file")
        .call_added(2, "call_b", "list_dir")
        .call_args(2, "{\"path\":")
        .call_args(1, "{\"path\":\"a.ts\"}")
        .call_args(2, "\"src\"}")
        .call_done(1, "call_a", "read_file", "{\"path\":\"a.ts\"}")
        .call_done(2, "call_b", "list_dir", "{\"path\":\"src\"}")
        .completed(json!(null));
    assert_eq!(
        decode(&events),
        vec![
            text("Reading both."),
            start(1, "call_a", "read_file"),
            start(2, "call_b", "list_dir"),
            args(2, "{\"path\":"),
            args(1, "{\"path\":\"a.ts\"}"),
            args(2, "\"src\"}"),
            StreamEvent::Done(StopReason::ToolUse),
        ]
    );
}

#[test]
fn arguments_that_come_only_whole_are_taken_once() {
    // `.done` with no fragments before it, then the item's own copy.
    let events = Events::default()
        .call_added(0, "call_1", "read_file")
        .call_done(0, "call_1", "read_file", "{\"path\":\"x\"}")
        .completed(json!(null));
    assert_eq!(
        decode(&events),
        vec![
            start(0, "call_1", "read_file"),
            args(0, "{\"path\":\"x\"}"),
            StreamEvent::Done(StopReason::ToolUse),
        ]
    );
    // Only the finished item: the call opens there.
    let events = Events::default()
        .push(
            "response.output_item.done",
            json!({"output_index": 3, "item": {"type": "function_call", "call_id": "call_3",
                   "name": "find", "arguments": "{}"}}),
        )
        .completed(json!(null));
    assert_eq!(
        decode(&events),
        vec![
            start(3, "call_3", "find"),
            args(3, "{}"),
            StreamEvent::Done(StopReason::ToolUse),
        ]
    );
}

#[test]
fn a_reasoning_item_is_kept_exactly_as_received_after_its_summary() {
    let item = reasoning_parts(0, &["Plan: read", " the file."], Some("gAAAA-enc=="));
    let events = Events::default()
        .reasoning_added(0)
        .summary(0, 0, "Plan: read")
        .summary(0, 1, " the file.")
        .item_done(0, item.clone())
        .call_added(1, "call_1", "read_file")
        .call_done(1, "call_1", "read_file", "{}")
        .completed(json!(null));
    assert_eq!(
        decode(&events),
        vec![
            StreamEvent::Thinking("Plan: read".into()),
            StreamEvent::Thinking("\n\n".into()),
            StreamEvent::Thinking(" the file.".into()),
            StreamEvent::ThinkingSignature(item.to_string()),
            start(1, "call_1", "read_file"),
            args(1, "{}"),
            StreamEvent::Done(StopReason::ToolUse),
        ]
    );
}

#[test]
fn the_raw_item_text_is_kept_byte_for_byte() {
    // Key order and spacing as the server wrote them, not as serde would.
    let raw = r#"{"type": "reasoning", "id":"rs_1","summary":[],"encrypted_content":"e\u0041"}"#;
    let data = format!(
        r#"{{"type":"response.output_item.done","sequence_number":3,"output_index":0,"item":{raw}}}"#
    );
    let mut decoder = Decoder::default();
    let mut out = Vec::new();
    assert_eq!(
        decoder.decode_event("response.output_item.done", &data, &mut out),
        Flow::Continue
    );
    assert_eq!(out, vec![StreamEvent::RedactedThinking(raw.to_owned())]);
}

#[test]
fn reasoning_without_a_summary_is_a_block_of_its_own() {
    let item = reasoning_parts(0, &[], Some("enc"));
    let events = Events::default()
        .reasoning_added(0)
        .item_done(0, item.clone())
        .message_added(1)
        .text(1, "Done.")
        .completed(json!(null));
    assert_eq!(
        decode(&events),
        vec![
            StreamEvent::RedactedThinking(item.to_string()),
            text("Done."),
            StreamEvent::Done(StopReason::Stop),
        ]
    );
}

#[test]
fn reasoning_without_encrypted_content_is_shown_not_kept() {
    let events = Events::default()
        .reasoning_added(0)
        .summary(0, 0, "Thinking.")
        .item_done(0, reasoning_parts(0, &["Thinking."], None))
        .item_done(1, reasoning_parts(1, &["Unstreamed."], None))
        .completed(json!(null));
    assert_eq!(
        decode(&events),
        vec![
            StreamEvent::Thinking("Thinking.".into()),
            StreamEvent::Thinking("Unstreamed.".into()),
            StreamEvent::Done(StopReason::Stop),
        ]
    );
}

#[test]
fn incomplete_at_the_output_limit_is_length_other_reasons_are_errors() {
    let events = Events::default()
        .text(0, "The answer is")
        .incomplete("max_output_tokens");
    let decoded = decode(&events);
    assert_eq!(decoded[0], text("The answer is"));
    assert!(matches!(decoded[1], StreamEvent::Usage(_)));
    assert_eq!(decoded[2], StreamEvent::Done(StopReason::Length));

    let decoded = decode(&Events::default().incomplete("content_filter"));
    let Some(StreamEvent::Error(message)) = decoded.last() else {
        panic!("{decoded:?}");
    };
    assert!(message.contains("content filter"), "{message}");
}

#[test]
fn failed_and_error_events_carry_the_servers_message() {
    let decoded = decode(
        &Events::default()
            .text(0, "Hal")
            .failed("The model crashed."),
    );
    assert_eq!(
        decoded.last(),
        Some(&StreamEvent::Error(
            "the provider reported an error mid-stream: The model crashed. (server_error)".into()
        ))
    );
    let decoded = decode(&Events::default().push(
        "error",
        json!({"code": "rate_limit_exceeded", "message": "Slow down.", "param": null}),
    ));
    assert_eq!(
        decoded,
        vec![StreamEvent::Error(
            "the provider reported an error mid-stream: Slow down. (rate_limit_exceeded)".into()
        )]
    );
}

#[test]
fn a_stream_cut_before_a_terminal_event_is_incomplete() {
    let decoded = decode(&Events::default().created().text(0, "An answer that"));
    let Some(StreamEvent::Error(message)) = decoded.last() else {
        panic!("{decoded:?}");
    };
    assert!(message.ends_with(crate::INCOMPLETE), "{message}");
    assert!(message.contains("response.completed"), "{message}");
}

#[test]
fn what_is_not_an_event_ends_the_stream_with_an_error() {
    for data in [
        "{not json",
        r#"{"type":"response.output_text.delta","delta":7}"#,
    ] {
        let mut decoder = Decoder::default();
        let mut out = Vec::new();
        assert_eq!(
            decoder.decode_event("message", data, &mut out),
            Flow::End,
            "{data}"
        );
        assert!(matches!(&out[..], [StreamEvent::Error(_)]), "{out:?}");
    }
    // `[DONE]` (a proxy's marker) before any terminal event.
    let mut out = Vec::new();
    assert_eq!(
        Decoder::default().decode_event("message", "[DONE]", &mut out),
        Flow::End
    );
    assert_eq!(out, vec![StreamEvent::Error(crate::NO_STOP_REASON.into())]);
}

#[test]
fn unknown_events_and_a_missing_type_fall_back_to_the_event_name() {
    let mut decoder = Decoder::default();
    let mut out = Vec::new();
    assert_eq!(
        decoder.decode_event(
            "response.future_thing",
            r#"{"type":"response.future_thing"}"#,
            &mut out
        ),
        Flow::Continue
    );
    assert_eq!(
        decoder.decode_event(
            "response.output_text.delta",
            r#"{"output_index":0,"delta":"Hi"}"#,
            &mut out
        ),
        Flow::Continue
    );
    assert_eq!(
        decoder.decode_event("response.completed", r#"{"response":{}}"#, &mut out),
        Flow::End
    );
    assert_eq!(out, vec![text("Hi"), StreamEvent::Done(StopReason::Stop)]);
}

#[test]
fn a_proxys_error_object_in_place_of_an_event_ends_the_stream() {
    let mut out = Vec::new();
    let data = r#"{"error":{"message":"Upstream timed out","type":"proxy_error"}}"#;
    assert_eq!(
        Decoder::default().decode_event("message", data, &mut out),
        Flow::End
    );
    assert_eq!(
        out,
        vec![StreamEvent::Error(
            "the provider reported an error mid-stream: Upstream timed out".into()
        )]
    );
    // `"error": null` (some servers add it to every event) is no error.
    let mut out = Vec::new();
    let data = r#"{"type":"response.output_text.delta","output_index":0,"delta":"x","error":null}"#;
    assert_eq!(
        Decoder::default().decode_event("message", data, &mut out),
        Flow::Continue
    );
    assert_eq!(out, vec![text("x")]);
}

#[test]
fn text_deltas_without_an_output_index_are_not_repeated_by_the_finished_message() {
    let mut decoder = Decoder::default();
    let mut out = Vec::new();
    let delta = r#"{"type":"response.output_text.delta","delta":"Hi"}"#;
    let done = r#"{"type":"response.output_item.done","output_index":0,
        "item":{"type":"message","content":[{"type":"output_text","text":"Hi"}]}}"#;
    assert_eq!(decoder.decode_event("", delta, &mut out), Flow::Continue);
    assert_eq!(decoder.decode_event("", done, &mut out), Flow::Continue);
    assert_eq!(
        decoder.decode_event("", r#"{"type":"response.completed"}"#, &mut out),
        Flow::End
    );
    assert_eq!(out, vec![text("Hi"), StreamEvent::Done(StopReason::Stop)]);
}

/// A terminal event is judged by the response's own `status`, not only by
/// the event's name: a `response.completed` (or any terminal event) whose
/// response says `failed` is the server's error, one that says
/// `incomplete` is judged as `response.incomplete` is. Byte-exact events.
#[test]
fn a_terminal_events_response_status_decides_how_the_reply_ended() {
    let feed = |event: &str, data: &str| {
        let mut decoder = Decoder::default();
        let mut out = Vec::new();
        let delta = r#"{"type":"response.output_text.delta","item_id":"msg_1","output_index":0,"content_index":0,"delta":"Hal"}"#;
        assert_eq!(decoder.decode_event("", delta, &mut out), Flow::Continue);
        assert_eq!(
            decoder.decode_event(event, data, &mut out),
            Flow::End,
            "{data}"
        );
        out
    };
    let failed = feed(
        "response.completed",
        r#"{"type":"response.completed","sequence_number":9,"response":{"id":"resp_1","object":"response","status":"failed","error":{"code":"server_error","message":"The model crashed."},"incomplete_details":null,"output":[],"usage":null}}"#,
    );
    assert_eq!(
        failed.last(),
        Some(&StreamEvent::Error(
            "the provider reported an error mid-stream: The model crashed. (server_error)".into()
        ))
    );
    let failed_without_error = feed(
        "response.completed",
        r#"{"type":"response.completed","response":{"status":"failed","error":null}}"#,
    );
    let Some(StreamEvent::Error(message)) = failed_without_error.last() else {
        panic!("{failed_without_error:?}");
    };
    assert!(
        message.starts_with("the provider reported an error"),
        "{message}"
    );
    let cut = feed(
        "response.completed",
        r#"{"type":"response.completed","response":{"status":"incomplete","incomplete_details":{"reason":"max_output_tokens"},"usage":{"input_tokens":5,"output_tokens":7,"total_tokens":12}}}"#,
    );
    assert!(matches!(cut[1], StreamEvent::Usage(_)), "{cut:?}");
    assert_eq!(cut.last(), Some(&StreamEvent::Done(StopReason::Length)));
    let cancelled = feed(
        "response.incomplete",
        r#"{"type":"response.incomplete","response":{"status":"cancelled"}}"#,
    );
    let Some(StreamEvent::Error(message)) = cancelled.last() else {
        panic!("{cancelled:?}");
    };
    assert!(message.contains("cancelled"), "{message}");
    let failed_incomplete = feed(
        "response.incomplete",
        r#"{"type":"response.incomplete","response":{"status":"failed","error":{"code":"x","message":"Broke."},"incomplete_details":{"reason":"max_output_tokens"}}}"#,
    );
    assert_eq!(
        failed_incomplete.last(),
        Some(&StreamEvent::Error(
            "the provider reported an error mid-stream: Broke. (x)".into()
        ))
    );
    // A completed response still ends as before.
    let done = feed(
        "response.completed",
        r#"{"type":"response.completed","response":{"status":"completed","error":null}}"#,
    );
    assert_eq!(done.last(), Some(&StreamEvent::Done(StopReason::Stop)));
}

//! One streamed reply into a message, event by event.

use super::*;
use leash_protocol::Usage;

fn build(events: Vec<StreamEvent>) -> (AssistantMessage, Vec<AssistantMessageEvent>) {
    let mut seen = Vec::new();
    let mut builder = MessageBuilder::new("test", "m");
    let mut stop = None;
    for event in events {
        match event {
            StreamEvent::Done(reason) => stop = Some(reason),
            other => builder.apply(other, &mut seen),
        }
    }
    builder.end(stop.unwrap_or(StopReason::Error), None, &mut seen);
    let message = builder.into_message();
    (message, seen)
}

#[test]
fn text_deltas_append_to_one_block() {
    let (message, updates) = build(vec![
        StreamEvent::Text("Hel".into()),
        StreamEvent::Text("lo".into()),
        StreamEvent::Done(StopReason::Stop),
    ]);
    assert_eq!(message.text(), "Hello");
    assert_eq!(message.content.len(), 1);
    assert_eq!(
        updates,
        vec![
            AssistantMessageEvent::TextStart { content_index: 0 },
            AssistantMessageEvent::TextDelta {
                content_index: 0,
                delta: "Hel".into()
            },
            AssistantMessageEvent::TextDelta {
                content_index: 0,
                delta: "lo".into()
            },
            AssistantMessageEvent::TextEnd { content_index: 0 },
        ]
    );
}

#[test]
fn interleaved_tool_call_fragments_are_assembled_by_key() {
    let (message, _) = build(vec![
        StreamEvent::Text("Reading.".into()),
        StreamEvent::ToolCallStart {
            key: 0,
            id: "a".into(),
            name: "read_file".into(),
        },
        StreamEvent::ToolCallStart {
            key: 1,
            id: "b".into(),
            name: "list_dir".into(),
        },
        StreamEvent::ToolCallArgs {
            key: 1,
            fragment: "{\"pa".into(),
        },
        StreamEvent::ToolCallArgs {
            key: 0,
            fragment: "{\"path\":".into(),
        },
        StreamEvent::ToolCallArgs {
            key: 0,
            fragment: "\"x.ts\"}".into(),
        },
        StreamEvent::ToolCallArgs {
            key: 1,
            fragment: "th\":\"src\"}".into(),
        },
        StreamEvent::Done(StopReason::ToolUse),
    ]);
    let calls: Vec<_> = message.tool_calls().collect();
    assert_eq!(calls.len(), 2);
    assert_eq!(calls[0].id, "a");
    assert_eq!(calls[0].arguments, serde_json::json!({"path": "x.ts"}));
    assert_eq!(calls[1].id, "b");
    assert_eq!(calls[1].arguments, serde_json::json!({"path": "src"}));
    assert_eq!(message.stop_reason, StopReason::ToolUse);
}

#[test]
fn missing_arguments_are_an_empty_object_and_broken_json_is_kept_raw() {
    let (message, _) = build(vec![
        StreamEvent::ToolCallStart {
            key: 0,
            id: "a".into(),
            name: "list_dir".into(),
        },
        StreamEvent::ToolCallStart {
            key: 1,
            id: "b".into(),
            name: "read_file".into(),
        },
        StreamEvent::ToolCallArgs {
            key: 1,
            fragment: "{\"path\": ".into(),
        },
        StreamEvent::Done(StopReason::Length),
    ]);
    let calls: Vec<_> = message.tool_calls().collect();
    assert_eq!(calls[0].arguments, serde_json::json!({}));
    assert_eq!(calls[1].arguments, Value::String("{\"path\": ".into()));
}

#[test]
fn thinking_then_text_opens_two_blocks_and_keeps_the_signature() {
    let (message, _) = build(vec![
        StreamEvent::Thinking("hmm".into()),
        StreamEvent::ThinkingSignature("sig".into()),
        StreamEvent::Text("answer".into()),
        StreamEvent::Done(StopReason::Stop),
    ]);
    assert_eq!(
        message.content,
        vec![
            AssistantContent::Thinking {
                thinking: "hmm".into(),
                signature: Some("sig".into()),
                redacted: false,
            },
            AssistantContent::Text {
                text: "answer".into()
            },
        ]
    );
}

#[test]
fn reasoning_after_a_signed_block_opens_a_block_of_its_own() {
    // Two reasoning items in a row (Responses), or two Anthropic
    // thinking blocks: each keeps its own signature.
    let (message, _) = build(vec![
        StreamEvent::Thinking("first".into()),
        StreamEvent::ThinkingSignature("sig1".into()),
        StreamEvent::Thinking("second".into()),
        StreamEvent::ThinkingSignature("sig2".into()),
        StreamEvent::Done(StopReason::Stop),
    ]);
    let thinking = |text: &str, sig: &str| AssistantContent::Thinking {
        thinking: text.into(),
        signature: Some(sig.into()),
        redacted: false,
    };
    assert_eq!(
        message.content,
        vec![thinking("first", "sig1"), thinking("second", "sig2")]
    );
}

#[test]
fn usage_pieces_merge_and_total_is_recomputed() {
    let (message, _) = build(vec![
        StreamEvent::Usage(Usage {
            input: 10,
            cache_read: 5,
            ..Usage::default()
        }),
        StreamEvent::Usage(Usage {
            output: 7,
            ..Usage::default()
        }),
        StreamEvent::Done(StopReason::Stop),
    ]);
    assert_eq!(message.usage.input, 10);
    assert_eq!(message.usage.output, 7);
    assert_eq!(message.usage.cache_read, 5);
    assert_eq!(message.usage.total_tokens, 22);
}

#![allow(clippy::unwrap_used)]

use serde_json::{Value, json};

use super::*;

fn session(api: &str, provider: &str) -> Value {
    json!({"role": "session", "schemaVersion": 1, "provider": provider, "api": api,
           "model": "m", "system": "be brief"})
}

fn user(text: &str) -> Value {
    json!({"role": "user", "content": [{"type": "text", "text": text}], "timestamp": 1})
}

fn assistant(provider: &str, content: Value, stop: &str) -> Value {
    json!({"role": "assistant", "content": content, "provider": provider, "model": "m",
           "usage": {"input": 1, "output": 1, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 2},
           "stopReason": stop, "timestamp": 2})
}

fn result(id: &str, name: &str) -> Value {
    json!({"role": "toolResult", "toolCallId": id, "toolName": name,
           "content": [{"type": "text", "text": "ok"}], "isError": false, "timestamp": 3})
}

fn text(lines: &[Value]) -> String {
    lines.iter().map(|line| format!("{line}\n")).collect()
}

fn thinking_then_call(provider: &str) -> Vec<Value> {
    vec![
        session("anthropic-messages", "anthropic"),
        user("find"),
        assistant(
            provider,
            json!([{"type": "thinking", "thinking": "hmm", "signature": "SIG"},
                   {"type": "toolCall", "id": "toolu_1", "name": "read_file", "arguments": {}}]),
            "toolUse",
        ),
        result("toolu_1", "read_file"),
        assistant(provider, json!([{"type": "text", "text": "found"}]), "stop"),
    ]
}

#[test]
fn the_same_wire_keeps_every_block_as_received() {
    let restored = restore(&text(&thinking_then_call("anthropic")), Wire::Anthropic).unwrap();
    assert_eq!(restored.turns, 2);
    assert_eq!(restored.lines, 5);
    assert_eq!(restored.system, "be brief");
    assert!(restored.notices.is_empty());
    let Message::Assistant(first) = &restored.messages[1] else {
        panic!("{:?}", restored.messages[1]);
    };
    assert!(matches!(
        &first.content[0],
        AssistantContent::Thinking { signature: Some(s), .. } if s == "SIG"
    ));
}

#[test]
fn another_wire_drops_thinking_with_a_notice() {
    let restored = restore(&text(&thinking_then_call("anthropic")), Wire::Responses).unwrap();
    let Message::Assistant(first) = &restored.messages[1] else {
        panic!("{:?}", restored.messages[1]);
    };
    assert_eq!(first.content.len(), 1);
    assert_eq!(restored.notices.len(), 1, "{:?}", restored.notices);
    assert!(restored.notices[0].contains("1 thinking block(s)"));
}

#[test]
fn a_reply_from_another_provider_than_its_session_line_is_refused() {
    let error = restore(&text(&thinking_then_call("openai")), Wire::Anthropic).unwrap_err();
    assert_eq!(
        error.to_string(),
        "line 3: a reply from provider \"openai\" in a step on anthropic-messages"
    );
}

#[test]
fn an_aborted_reply_is_left_out_and_its_calls_need_no_result() {
    let lines = [
        session("faux", "faux"),
        user("find"),
        assistant(
            "faux",
            json!([{"type": "toolCall", "id": "c1", "name": "read_file", "arguments": {}}]),
            "aborted",
        ),
    ];
    let restored = restore(&text(&lines), Wire::Faux).unwrap();
    assert_eq!(restored.turns, 0);
    assert_eq!(restored.messages.len(), 1);
    assert!(
        restored.notices[0].contains("line 3"),
        "{:?}",
        restored.notices
    );
}

#[test]
fn a_result_naming_another_tool_than_its_call_is_refused() {
    let mut lines = thinking_then_call("anthropic");
    lines[3] = result("toolu_1", "write_file");
    let error = restore(&text(&lines), Wire::Anthropic).unwrap_err();
    assert!(
        error
            .to_string()
            .starts_with("line 4: the result of \"toolu_1\" names tool \"write_file\"")
    );
}

#[test]
fn a_call_id_used_twice_is_refused() {
    let mut lines = thinking_then_call("anthropic");
    lines.push(user("again"));
    lines.push(assistant(
        "anthropic",
        json!([{"type": "toolCall", "id": "toolu_1", "name": "read_file", "arguments": {}}]),
        "toolUse",
    ));
    let error = restore(&text(&lines), Wire::Anthropic).unwrap_err();
    assert_eq!(
        error.to_string(),
        "line 7: tool call id \"toolu_1\" was used before, on line 3"
    );
}

#[test]
fn a_reply_with_very_many_calls_is_checked_without_a_quadratic_search() {
    let count = 50_000;
    let calls: Vec<Value> = (0..count)
        .map(|n| json!({"type": "toolCall", "id": format!("c{n}"), "name": "t", "arguments": {}}))
        .collect();
    let mut lines = vec![
        session("faux", "faux"),
        user("go"),
        assistant("faux", Value::Array(calls), "toolUse"),
    ];
    // Answered last to first: the worst order for a list search.
    lines.extend((0..count).rev().map(|n| result(&format!("c{n}"), "t")));
    let started = std::time::Instant::now();
    let restored = restore(&text(&lines), Wire::Faux).unwrap();
    assert_eq!(restored.messages.len(), count + 2);
    // Generous for a loaded machine: a guard, not a benchmark.
    assert!(started.elapsed().as_secs() < 10, "{:?}", started.elapsed());
}

/// A step killed after its first call's result, before the second's.
fn killed_in_a_tool_call() -> Vec<Value> {
    vec![
        session("anthropic-messages", "anthropic"),
        user("find"),
        assistant(
            "anthropic",
            json!([{"type": "text", "text": "one"}]),
            "stop",
        ),
        user("again"),
        assistant(
            "anthropic",
            json!([{"type": "toolCall", "id": "toolu_1", "name": "read_file", "arguments": {}},
                   {"type": "toolCall", "id": "toolu_2", "name": "grep", "arguments": {}}]),
            "toolUse",
        ),
        result("toolu_1", "read_file"),
    ]
}

#[test]
fn a_reply_whose_calls_a_kill_cut_off_is_left_out_with_its_results() {
    let lines = killed_in_a_tool_call();
    let restored = restore(&text(&lines), Wire::Anthropic).unwrap();
    assert_eq!(restored.turns, 1);
    assert_eq!(restored.messages.len(), 3, "{:?}", restored.messages);
    assert_eq!(restored.notices.len(), 1, "{:?}", restored.notices);
    assert!(
        restored.notices[0].contains("the reply on line 5 and its 1 tool result(s) are left out"),
        "{:?}",
        restored.notices
    );
    // A resumed step appended after it: the same rule at its session line.
    let mut appended = lines.clone();
    appended.extend([
        session("anthropic-messages", "anthropic"),
        user("go on"),
        assistant(
            "anthropic",
            json!([{"type": "text", "text": "two"}]),
            "stop",
        ),
    ]);
    let restored = restore(&text(&appended), Wire::Anthropic).unwrap();
    assert_eq!((restored.turns, restored.messages.len()), (2, 5));
    // The resumed step may ask the same calls again, with the same ids.
    let mut again = lines.clone();
    again.extend([
        session("anthropic-messages", "anthropic"),
        user("go on"),
        lines[4].clone(),
        result("toolu_1", "read_file"),
        result("toolu_2", "grep"),
    ]);
    let restored = restore(&text(&again), Wire::Anthropic).unwrap();
    assert_eq!((restored.turns, restored.messages.len()), (2, 7));
    // Anything but results after the unanswered calls is still refused.
    let mut interleaved = lines;
    interleaved.push(user("sneaked in"));
    let error = restore(&text(&interleaved), Wire::Anthropic).unwrap_err();
    assert!(error.to_string().contains("has no tool result"), "{error}");
}

#[test]
fn a_cut_last_line_is_left_out_and_a_whole_one_without_newline_is_read() {
    let lines = thinking_then_call("anthropic");
    let whole = text(&lines);
    let cut = format!("{whole}{{\"role\":\"user\",\"cont");
    let restored = restore(&cut, Wire::Anthropic).unwrap();
    assert_eq!((restored.turns, restored.tail), (2, Tail::Cut));
    assert!(
        restored.notices[0].contains("line 6 is cut off"),
        "{:?}",
        restored.notices
    );
    assert_eq!(Restored::whole_lines(&cut), whole);
    let bare = whole.trim_end_matches('\n');
    let restored = restore(bare, Wire::Anthropic).unwrap();
    assert_eq!((restored.turns, restored.tail), (2, Tail::NoNewline));
    assert!(restored.notices.is_empty(), "{:?}", restored.notices);
    assert_eq!(Restored::whole_lines(bare), whole);
    // A cut last line that held the file's only line leaves nothing.
    let error = restore("{\"role\":\"sess", Wire::Anthropic).unwrap_err();
    assert_eq!(
        error.to_string(),
        "line 1: the only line is cut off (no newline at its end)"
    );
}

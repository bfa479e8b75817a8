//! The text renderer's lines, fed events by hand.

use super::*;
use leash_protocol::{AssistantMessage, Content, ToolResultMessage};

/// The lines a fresh renderer writes for `events`.
fn lines_of(events: &[AgentEvent]) -> Vec<String> {
    let out = Shared::default();
    let mut renderer = TextRenderer::new(Box::new(out.clone()), true);
    for event in events {
        renderer.event(event);
    }
    out.text().lines().map(str::to_owned).collect()
}

fn start(id: &str, name: &str, args: serde_json::Value) -> AgentEvent {
    AgentEvent::ToolExecutionStart {
        tool_call_id: id.into(),
        tool_name: name.into(),
        args,
    }
}

fn end(id: &str, name: &str, text: &str, is_error: bool, ms: Option<u64>) -> AgentEvent {
    AgentEvent::ToolExecutionEnd {
        tool_call_id: id.into(),
        tool_name: name.into(),
        result: ToolResultMessage {
            tool_call_id: id.into(),
            tool_name: name.into(),
            content: vec![Content::text(text)],
            details: serde_json::Value::Null,
            is_error,
            duration_ms: ms,
            usage: None,
            timestamp: 0,
        },
        is_error,
        duration_ms: ms,
    }
}

#[test]
fn a_tool_line_shows_the_main_argument_the_outcome_and_the_time() {
    use serde_json::json;
    let lines = lines_of(&[
        start("a", "read_file", json!({"path": "src/x.rs", "offset": 3})),
        start("b", "grep", json!({"pattern": "TODO", "path": "src"})),
        start(
            "c",
            "git",
            json!({"command": "diff", "args": ["--stat", "HEAD"]}),
        ),
        start(
            "d",
            "mcp__db__query",
            json!({"limit": 3, "sql": "select 1"}),
        ),
        start("e", "list_dir", json!({})),
        end("b", "grep", "", false, Some(4)),
        end(
            "a",
            "read_file",
            "Tool execution was blocked\nmore",
            true,
            None,
        ),
        end("c", "git", "", false, Some(12)),
        end("d", "mcp__db__query", "\n  no such table\n", true, Some(7)),
        end("e", "list_dir", "", false, Some(0)),
    ]);
    assert_eq!(
        lines,
        [
            r#"[tool] grep "TODO" in src ok 4 ms"#,
            "[tool] read_file src/x.rs error: Tool execution was blocked",
            "[tool] git diff --stat HEAD ok 12 ms",
            r#"[tool] mcp__db__query "select 1" error: no such table (7 ms)"#,
            "[tool] list_dir . ok 0 ms",
        ]
    );
}

#[test]
fn a_tool_the_run_withheld_names_the_flag_that_offers_it() {
    use serde_json::json;
    let lines = lines_of(&[
        start("a", "bash", json!({"command": "ls"})),
        end("a", "bash", "Tool bash not found", true, None),
        start("b", "edit_file", json!({"path": "x.rs"})),
        end("b", "edit_file", "Tool edit_file not found", true, None),
        // A command that ran and failed, and a refusal of another kind:
        // no flag would change them.
        start("c", "bash", json!({"command": "false"})),
        end("c", "bash", "Tool bash not found", true, Some(3)),
        start("d", "nope", json!({})),
        end("d", "nope", "Tool nope not found", true, None),
    ]);
    assert_eq!(
        lines,
        [
            r#"[tool] bash "ls" error: Tool bash not found (leash offers bash only with --allow-exec)"#,
            "[tool] edit_file x.rs error: Tool edit_file not found (leash offers edit_file only with --allow-write)",
            r#"[tool] bash "false" error: Tool bash not found (3 ms)"#,
            "[tool] nope error: Tool nope not found",
        ]
    );
}

#[test]
fn a_reply_shows_its_reasoning_and_interim_text_but_not_the_answer() {
    use leash_protocol::{AssistantContent, StopReason, ToolCall};
    let thinking = AssistantContent::Thinking {
        thinking: "First the file,\nthen the answer.".into(),
        signature: None,
        redacted: false,
    };
    let secret = AssistantContent::Thinking {
        thinking: "ENCRYPTED".into(),
        signature: Some("sig".into()),
        redacted: true,
    };
    let call = AssistantContent::ToolCall(ToolCall {
        id: "c".into(),
        name: "read_file".into(),
        arguments: serde_json::json!({}),
    });
    let text = |t: &str| AssistantContent::Text { text: t.into() };
    let message = |content, stop_reason| AgentEvent::MessageEnd {
        message: Message::Assistant(AssistantMessage {
            content,
            stop_reason,
            ..AssistantMessage::default()
        }),
    };
    let lines = lines_of(&[
        message(
            vec![thinking, secret, text("Reading it."), call],
            StopReason::ToolUse,
        ),
        message(vec![text("The answer.")], StopReason::Stop),
    ]);
    assert_eq!(
        lines,
        [
            "[thinking] First the file, then the answer.",
            "[model] Reading it."
        ]
    );
}

#[test]
fn turn_and_run_end_lines_show_tokens_and_with_a_price_the_cost() {
    let usage = leash_protocol::Usage {
        input: 200,
        output: 50,
        cache_read: 1000,
        cache_write: 300,
        ..Default::default()
    }
    .with_total();
    let event = AgentEvent::TurnEnd {
        message: AssistantMessage {
            usage,
            ..AssistantMessage::default()
        },
        tool_results: vec![],
    };
    let out = Shared::default();
    let price = Price::parse("3,15,0.3,3.75").unwrap();
    let mut renderer = TextRenderer::new(Box::new(out.clone()), true).with_price(Some(price));
    renderer.event(&AgentEvent::TurnStart);
    renderer.event(&event);
    let mut report = failed_report();
    report.status = crate::exit::Status::Ok;
    report.turns = 2;
    report.usage = usage;
    report.cost = Some(price.cost(&usage));
    renderer.run_end(&report);
    assert_eq!(
        out.text(),
        "[turn 1] answer · tokens: 200 input, 50 output, 1000 cache read, 300 cache write · cost $0.002775\n\
         [run_end] ok · 2 turns · tokens: 200 input, 50 output, 1000 cache read, 300 cache write · cost $0.002775\n"
    );
    // Without a price: the tokens only; with --events none: nothing.
    assert_eq!(
        lines_of(&[AgentEvent::TurnStart, AgentEvent::TurnStart, event]),
        ["[turn 2] answer · tokens: 200 input, 50 output, 1000 cache read, 300 cache write"]
    );
    let quiet = Shared::default();
    TextRenderer::new(Box::new(quiet.clone()), false).run_end(&report);
    assert_eq!(quiet.text(), "");
}

#[test]
fn text_from_servers_and_models_cannot_forge_lines() {
    let out = Shared::default();
    let mut renderer = TextRenderer::new(Box::new(out.clone()), true);
    renderer.event(&start(
        "c1",
        "x\nleash: all good",
        serde_json::json!({"path": "p\r\u{1b}[2K1"}),
    ));
    renderer.event(&end("c1", "x\nleash: all good", "", false, Some(1)));
    renderer.event(&AgentEvent::Retry {
        attempt: 1,
        delay_ms: 5,
        reason: "HTTP 500:\n  Traceback\n  leash: fake".into(),
    });
    renderer.notice("stdin\nleash: forged");
    let mut report = failed_report();
    report.message = format!("provider error: {}\n{}", "line one", "x".repeat(5000));
    renderer.run_end(&report);
    let text = out.text();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 5, "{text:?}");
    assert_eq!(lines[0], "[tool] x leash: all good p \u{fffd}[2K1 ok 1 ms");
    assert_eq!(
        lines[1],
        "[retry] attempt 1 in 5ms: HTTP 500: Traceback leash: fake"
    );
    assert_eq!(lines[2], "leash: stdin leash: forged");
    assert!(lines[3].starts_with("[run_end] error"));
    assert!(lines[4].starts_with("leash: provider error: line one xxx"));
    assert!(lines[4].ends_with('…'));
    assert!(lines[4].chars().count() <= MAX_LINE_CHARS + "leash: ".len() + 1);
    assert!(!text.contains('\r') && !text.contains('\u{1b}'));
}

fn failed_report() -> RunReport {
    RunReport {
        status: crate::exit::Status::Error,
        message: "it broke".into(),
        reply: String::new(),
        output: None,
        stop_reason: None,
        error_message: None,
        turns: 1,
        usage: Default::default(),
        turn_usage: Vec::new(),
        cost: None,
        duration_ms: 0,
        provider: "faux".into(),
        model: "faux".into(),
        reasoning_effort: None,
        restored_turns: None,
        changed_files: Vec::new(),
        attachments: Vec::new(),
    }
}

use crate::render::SharedBuffer as Shared;

impl Shared {
    fn text(&self) -> String {
        String::from_utf8(self.0.lock().unwrap().clone()).unwrap()
    }
}

/// A streamed reply "Hello world" followed by a failed end.
fn feed(renderer: &mut TextRenderer) {
    let assistant = Message::Assistant(AssistantMessage::default());
    renderer.event(&AgentEvent::TurnStart);
    renderer.event(&AgentEvent::MessageStart {
        message: assistant.clone(),
    });
    for delta in ["Hello", " world"] {
        renderer.event(&AgentEvent::MessageUpdate {
            event: AssistantMessageEvent::TextDelta {
                content_index: 0,
                delta: delta.into(),
            },
        });
    }
    renderer.event(&AgentEvent::MessageEnd { message: assistant });
    renderer.run_end(&failed_report());
}

fn terminal(color: bool, stream: bool) -> Terminal {
    Terminal {
        color,
        indicator: false,
        stream,
    }
}

#[test]
fn plain_lines_hold_no_escape_codes() {
    let out = Shared::default();
    let mut renderer =
        TextRenderer::new(Box::new(out.clone()), true).with_terminal(terminal(false, false), "m");
    feed(&mut renderer);
    assert_eq!(
        out.text(),
        "[run_end] error · 1 turn · tokens: 0 input, 0 output, 0 cache read, 0 cache write\nleash: it broke\n"
    );
}

#[test]
fn colour_marks_tags_and_the_failure_line() {
    let out = Shared::default();
    let mut renderer =
        TextRenderer::new(Box::new(out.clone()), true).with_terminal(terminal(true, false), "m");
    feed(&mut renderer);
    let text = out.text();
    assert!(text.contains("\u{1b}["), "{text:?}");
    assert!(text.contains("leash: it broke"));
}

#[test]
fn streamed_text_shows_live_and_ends_its_line() {
    let out = Shared::default();
    let mut renderer =
        TextRenderer::new(Box::new(out.clone()), true).with_terminal(terminal(false, true), "m");
    feed(&mut renderer);
    assert_eq!(
        out.text(),
        "Hello world\n[run_end] error · 1 turn · tokens: 0 input, 0 output, 0 cache read, 0 cache write\nleash: it broke\n"
    );
    // With --events none, only the stream and the why-line.
    let out = Shared::default();
    let mut renderer =
        TextRenderer::new(Box::new(out.clone()), false).with_terminal(terminal(false, true), "m");
    feed(&mut renderer);
    assert_eq!(out.text(), "Hello world\nleash: it broke\n");
}

#[test]
fn a_streamed_reply_is_not_repeated_as_a_model_line() {
    use leash_protocol::{AssistantContent, StopReason, ToolCall};
    let message = AgentEvent::MessageEnd {
        message: Message::Assistant(AssistantMessage {
            content: vec![
                AssistantContent::Text {
                    text: "Reading it.".into(),
                },
                AssistantContent::ToolCall(ToolCall {
                    id: "c".into(),
                    name: "read_file".into(),
                    arguments: serde_json::json!({}),
                }),
            ],
            stop_reason: StopReason::ToolUse,
            ..AssistantMessage::default()
        }),
    };
    for (stream, expected) in [(false, "[model] Reading it.\n"), (true, "")] {
        let out = Shared::default();
        let mut renderer = TextRenderer::new(Box::new(out.clone()), true)
            .with_terminal(terminal(false, stream), "m");
        renderer.event(&message);
        assert_eq!(out.text(), expected, "stream: {stream}");
    }
}

/// The run hands a renderer only the events its `interest` wants: what it
/// writes must be the same as when it is handed every event, and off a
/// terminal the per-delta updates (most events) are not wanted at all.
#[test]
fn the_events_a_renderer_is_not_interested_in_change_nothing_it_writes() {
    use serde_json::json;
    let reply = Message::Assistant(AssistantMessage {
        content: vec![leash_protocol::AssistantContent::Text {
            text: "Hello world".into(),
        }],
        ..AssistantMessage::default()
    });
    let mut events = vec![
        AgentEvent::TurnStart,
        AgentEvent::MessageStart {
            message: reply.clone(),
        },
    ];
    for delta in ["Hello", " world"] {
        events.push(AgentEvent::MessageUpdate {
            event: AssistantMessageEvent::TextDelta {
                content_index: 0,
                delta: delta.into(),
            },
        });
    }
    events.push(AgentEvent::MessageEnd { message: reply });
    events.push(start("a", "read_file", json!({"path": "x.rs"})));
    events.push(end("a", "read_file", "one line", false, Some(2)));
    let written = |shown: bool, stream: bool, only_wanted: bool| {
        let out = Shared::default();
        let mut renderer = TextRenderer::new(Box::new(out.clone()), shown)
            .with_terminal(terminal(false, stream), "m");
        let interest = renderer.interest();
        for event in &events {
            if !only_wanted || interest.wants(event) {
                renderer.event(event);
            }
        }
        renderer.run_end(&failed_report());
        (interest, out.text())
    };
    for (shown, stream, expected) in [
        (true, false, Interest::NoUpdates),
        (false, false, Interest::Nothing),
        (true, true, Interest::Every),
        (false, true, Interest::Every),
    ] {
        let (interest, all) = written(shown, stream, false);
        assert_eq!(interest, expected, "events {shown}, stream {stream}");
        assert_eq!(written(shown, stream, true).1, all);
        assert!(all.contains("leash: "), "{all}");
    }
}

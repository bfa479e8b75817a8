//! `--events text`: one short line per event, for people watching a run
//! (ARCHITECTURE.md §2.2). With `--events none` only the final "why" line of a failed
//! run is kept.
//!
//! On a terminal (decided once, by `config`) it may also colour the lines,
//! show a spinner while the model is awaited, and with `--stream` print the
//! reply's text as it arrives. None of that ever reaches a pipe, and the
//! reply on stdout is unchanged. Everything this renderer writes to stderr
//! passes through the indicator's `suspend`, so nothing garbles.

use std::io::Write;

use owo_colors::OwoColorize;

use super::jsonl::file_change;
use super::{EventRenderer, MAX_LINE_CHARS, RunReport, inert};
use crate::agent::types::{AgentEvent, AssistantMessageEvent};
use crate::config::Terminal;
use crate::protocol::{Message, Usage};
use crate::render::spinner::Indicator;
use crate::run::cost::{Cost, Price};
use crate::run::outcome::Status;

/// Writes the human-readable event lines.
pub struct TextRenderer {
    out: Box<dyn Write + Send>,
    events: bool,
    color: bool,
    stream: bool,
    /// Some when the indicator may be shown.
    indicator: Option<Indicator>,
    /// The model's name, for the indicator.
    model: String,
    /// Streamed text left the cursor mid-line.
    mid_line: bool,
    /// `--price`, for the cost on the `turn_end` lines.
    price: Option<Price>,
}

impl TextRenderer {
    /// `events: false` prints only notices and the failure line.
    pub fn new(out: Box<dyn Write + Send>, events: bool) -> Self {
        TextRenderer {
            out,
            events,
            color: false,
            stream: false,
            indicator: None,
            model: String::new(),
            mid_line: false,
            price: None,
        }
    }

    /// Shows each turn's and the run's cost at `price`.
    pub fn with_price(mut self, price: Option<Price>) -> Self {
        self.price = price;
        self
    }

    /// Uses the terminal as `terminal` allows: colour, the indicator (named
    /// after `model`), the live stream.
    pub fn with_terminal(mut self, terminal: Terminal, model: &str) -> Self {
        self.color = terminal.color;
        self.stream = terminal.stream;
        self.indicator = terminal.indicator.then(Indicator::new);
        self.model = model.to_owned();
        self
    }

    fn line(&mut self, text: &str) {
        // One write per line: runs sharing a pipe (`xargs -P`) never
        // interleave within a line.
        let mut line = String::with_capacity(text.len() + 2);
        if std::mem::take(&mut self.mid_line) {
            line.push('\n');
        }
        line.push_str(text);
        line.push('\n');
        let out = &mut self.out;
        let mut write = || {
            // A closed stderr must not end the run.
            let _ = out.write_all(line.as_bytes());
            let _ = out.flush();
        };
        match &self.indicator {
            Some(indicator) => indicator.suspend(write),
            None => write(),
        }
    }

    /// Reply text as it streams in, without a newline of its own.
    fn stream_text(&mut self, delta: &str) {
        if let Some(indicator) = &mut self.indicator {
            indicator.hide();
        }
        let _ = self.out.write_all(delta.as_bytes());
        let _ = self.out.flush();
        self.mid_line = !delta.ends_with('\n');
    }

    /// Ends a streamed line, so what follows starts on its own.
    fn end_stream(&mut self) {
        if std::mem::take(&mut self.mid_line) {
            let _ = self.out.write_all(b"\n");
            let _ = self.out.flush();
        }
    }

    /// The indicator and the stream: what an event changes on a terminal
    /// besides its line.
    fn live(&mut self, event: &AgentEvent) {
        match event {
            AgentEvent::MessageStart {
                message: Message::Assistant(_),
            } => {
                self.end_stream();
                let message = format!("waiting for {}", self.model);
                if let Some(indicator) = &mut self.indicator {
                    indicator.show(message);
                }
            }
            AgentEvent::MessageUpdate { event } => match event {
                AssistantMessageEvent::TextDelta { delta, .. } if self.stream => {
                    self.stream_text(delta);
                }
                AssistantMessageEvent::ThinkingStart { .. } => {
                    let message = format!("{} is thinking", self.model);
                    if let Some(indicator) = &self.indicator {
                        indicator.set_message(message);
                    }
                }
                AssistantMessageEvent::ToolCallStart { tool_name, .. } => {
                    if let Some(indicator) = &self.indicator {
                        let tool = inert(tool_name, 80);
                        indicator.set_message(format!("{} calls {tool}", self.model));
                    }
                }
                _ => {}
            },
            AgentEvent::MessageEnd {
                message: Message::Assistant(_),
            } => {
                if let Some(indicator) = &mut self.indicator {
                    indicator.hide();
                }
                self.end_stream();
            }
            _ => {}
        }
    }
}

/// How a line is coloured when colour is on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Tone {
    Plain,
    Good,
    Bad,
    Warning,
}

/// One event's line: `[tag] text`.
struct EventLine {
    tag: &'static str,
    text: String,
    tone: Tone,
}

impl EventLine {
    /// `text` may hold what a server or a model wrote (tool names, call
    /// ids, error text, reasons): it is made inert here, once for all.
    fn new(tag: &'static str, text: impl AsRef<str>, tone: Tone) -> Self {
        EventLine {
            tag,
            text: inert(text.as_ref(), MAX_LINE_CHARS),
            tone,
        }
    }

    fn render(&self, color: bool) -> String {
        let tag = format!("[{}]", self.tag);
        if !color {
            return match self.text.is_empty() {
                true => tag,
                false => format!("{tag} {}", self.text),
            };
        }
        let text = match self.tone {
            Tone::Plain => self.text.clone(),
            Tone::Good => self.text.green().to_string(),
            Tone::Bad => self.text.red().to_string(),
            Tone::Warning => self.text.yellow().to_string(),
        };
        match self.text.is_empty() {
            true => tag.dimmed().to_string(),
            false => format!("{} {text}", tag.dimmed()),
        }
    }
}

/// The line for one event, if it has one.
#[cfg(test)]
pub fn event_line(event: &AgentEvent) -> Option<String> {
    event_parts(event, None).map(|line| line.render(false))
}

/// Token counts and, with a price, the cost: the tail of the `turn_end`
/// and `run_end` lines.
pub fn usage_words(usage: &Usage, cost: Option<Cost>) -> String {
    let mut words = format!(
        "tokens: {} input, {} output, {} cache read, {} cache write",
        usage.input, usage.output, usage.cache_read, usage.cache_write
    );
    if let Some(cost) = cost {
        words.push_str(&format!(" · cost {cost}"));
    }
    words
}

fn event_parts(event: &AgentEvent, price: Option<&Price>) -> Option<EventLine> {
    Some(match event {
        AgentEvent::TurnStart => EventLine::new("turn_start", "", Tone::Plain),
        AgentEvent::MessageEnd { message } => match message {
            Message::Assistant(assistant) => match &assistant.error_message {
                Some(error) => EventLine::new(
                    "message_end",
                    format!("assistant {}: {error}", assistant.stop_reason.as_str()),
                    Tone::Bad,
                ),
                None => EventLine::new("message_end", "assistant", Tone::Plain),
            },
            other => EventLine::new("message_end", other.role(), Tone::Plain),
        },
        AgentEvent::ToolExecutionStart {
            tool_call_id,
            tool_name,
            ..
        } => EventLine::new(
            "tool_start",
            format!("{tool_name} {tool_call_id}"),
            Tone::Plain,
        ),
        AgentEvent::ToolExecutionEnd {
            tool_call_id,
            tool_name,
            is_error,
            duration_ms,
            result,
        } => {
            let mut text = format!(
                "{tool_name} {tool_call_id} {}",
                if *is_error { "error" } else { "ok" }
            );
            if let Some(ms) = duration_ms {
                text.push_str(&format!(" {ms}ms"));
            }
            if *is_error {
                let result = result.text();
                let first = result.lines().next().unwrap_or_default();
                text.push_str(&format!(": {first}"));
            }
            let tone = if *is_error { Tone::Bad } else { Tone::Good };
            EventLine::new("tool_end", text, tone)
        }
        AgentEvent::TurnEnd {
            tool_results,
            message,
        } => {
            let cost = price.map(|price| price.cost(&message.usage));
            EventLine::new(
                "turn_end",
                format!(
                    "{} · {}",
                    tool_results.len(),
                    usage_words(&message.usage, cost)
                ),
                Tone::Plain,
            )
        }
        AgentEvent::Retry {
            attempt,
            delay_ms,
            reason,
        } => EventLine::new(
            "retry",
            format!("attempt {attempt} in {delay_ms}ms: {reason}"),
            Tone::Warning,
        ),
        AgentEvent::AgentStart
        | AgentEvent::MessageStart { .. }
        | AgentEvent::MessageUpdate { .. }
        | AgentEvent::ToolExecutionUpdate { .. }
        | AgentEvent::AgentEnd { .. } => return None,
    })
}

impl EventRenderer for TextRenderer {
    fn event(&mut self, event: &AgentEvent) {
        self.live(event);
        if !self.events {
            return;
        }
        if let Some(line) = event_parts(event, self.price.as_ref()) {
            let line = line.render(self.color);
            self.line(&line);
        }
        if let AgentEvent::ToolExecutionEnd { result, .. } = event
            && let Some(change) = file_change(result)
        {
            let line = EventLine::new("changed", change.summary(), Tone::Good).render(self.color);
            self.line(&line);
        }
    }

    fn notice(&mut self, text: &str) {
        let line = format!("leash: {}", inert(text, MAX_LINE_CHARS));
        let line = match self.color {
            true => line.yellow().to_string(),
            false => line,
        };
        self.line(&line);
    }

    /// A failed hook is an event (README "Hooks"): `--events none` prints
    /// none, so one that ended the run is said once, by the last line.
    fn hook_failed(&mut self, failure: &crate::run::hooks::HookFailure) {
        if self.events {
            self.notice(&failure.reason);
        }
    }

    fn settle(&mut self) {
        if let Some(indicator) = &mut self.indicator {
            indicator.hide();
        }
        self.end_stream();
    }

    fn run_end(&mut self, report: &RunReport) {
        self.settle();
        if self.events && report.status != Status::Usage {
            let turns = match report.turns {
                1 => "1 turn".to_owned(),
                n => format!("{n} turns"),
            };
            let text = format!(
                "{} · {turns} · {}",
                report.status.as_str(),
                usage_words(&report.usage, report.cost)
            );
            let line = EventLine::new("run_end", text, Tone::Plain).render(self.color);
            self.line(&line);
        }
        if report.status != Status::Ok {
            let line = format!("leash: {}", inert(&report.message, MAX_LINE_CHARS));
            let line = match self.color {
                true => line.red().bold().to_string(),
                false => line,
            };
            self.line(&line);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::{AssistantMessage, Content, ToolResultMessage};

    #[test]
    fn tool_end_lines_show_status_duration_and_the_error() {
        let result = ToolResultMessage {
            tool_call_id: "call_1".into(),
            tool_name: "read_file".into(),
            content: vec![Content::text("Tool execution was blocked\nmore")],
            details: serde_json::Value::Null,
            is_error: true,
            duration_ms: None,
            timestamp: 0,
        };
        let line = event_line(&AgentEvent::ToolExecutionEnd {
            tool_call_id: "call_1".into(),
            tool_name: "read_file".into(),
            result,
            is_error: true,
            duration_ms: None,
        });
        assert_eq!(
            line.as_deref(),
            Some("[tool_end] read_file call_1 error: Tool execution was blocked")
        );
    }

    #[test]
    fn turn_end_and_run_end_lines_show_tokens_and_with_a_price_the_cost() {
        let usage = crate::protocol::Usage {
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
        renderer.event(&event);
        let mut report = failed_report();
        report.status = crate::run::outcome::Status::Ok;
        report.turns = 2;
        report.usage = usage;
        report.cost = Some(price.cost(&usage));
        renderer.run_end(&report);
        assert_eq!(
            out.text(),
            "[turn_end] 0 · tokens: 200 input, 50 output, 1000 cache read, 300 cache write · cost $0.002775\n\
             [run_end] ok · 2 turns · tokens: 200 input, 50 output, 1000 cache read, 300 cache write · cost $0.002775\n"
        );
        // Without a price: the tokens only; with --events none: nothing.
        assert_eq!(
            event_line(&event).as_deref(),
            Some("[turn_end] 0 · tokens: 200 input, 50 output, 1000 cache read, 300 cache write")
        );
        let quiet = Shared::default();
        TextRenderer::new(Box::new(quiet.clone()), false).run_end(&report);
        assert_eq!(quiet.text(), "");
    }

    #[test]
    fn text_from_servers_and_models_cannot_forge_lines() {
        let out = Shared::default();
        let mut renderer = TextRenderer::new(Box::new(out.clone()), true);
        renderer.event(&AgentEvent::ToolExecutionStart {
            tool_call_id: "c\r\u{1b}[2K1".into(),
            tool_name: "x\nleash: all good".into(),
            args: serde_json::Value::Null,
        });
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
        assert_eq!(lines[0], "[tool_start] x leash: all good c \u{fffd}[2K1");
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
            status: crate::run::outcome::Status::Error,
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
            changed_files: Vec::new(),
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
        let mut renderer = TextRenderer::new(Box::new(out.clone()), true)
            .with_terminal(terminal(false, false), "m");
        feed(&mut renderer);
        assert_eq!(
            out.text(),
            "[turn_start]\n[message_end] assistant\n[run_end] error · 1 turn · tokens: 0 input, 0 output, 0 cache read, 0 cache write\nleash: it broke\n"
        );
    }

    #[test]
    fn colour_marks_tags_and_the_failure_line() {
        let out = Shared::default();
        let mut renderer = TextRenderer::new(Box::new(out.clone()), true)
            .with_terminal(terminal(true, false), "m");
        feed(&mut renderer);
        let text = out.text();
        assert!(text.contains("\u{1b}["), "{text:?}");
        assert!(text.contains("leash: it broke"));
    }

    #[test]
    fn streamed_text_shows_live_and_ends_its_line() {
        let out = Shared::default();
        let mut renderer = TextRenderer::new(Box::new(out.clone()), true)
            .with_terminal(terminal(false, true), "m");
        feed(&mut renderer);
        assert_eq!(
            out.text(),
            "[turn_start]\nHello world\n[message_end] assistant\n[run_end] error · 1 turn · tokens: 0 input, 0 output, 0 cache read, 0 cache write\nleash: it broke\n"
        );
        // With --events none, only the stream and the why-line.
        let out = Shared::default();
        let mut renderer = TextRenderer::new(Box::new(out.clone()), false)
            .with_terminal(terminal(false, true), "m");
        feed(&mut renderer);
        assert_eq!(out.text(), "Hello world\nleash: it broke\n");
    }
}

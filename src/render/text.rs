//! `--events text`: the run told for people watching it (ARCHITECTURE.md
//! §2.2; what each event says is in `lines`). With `--events none` only the
//! final "why" line of a failed run is kept.
//!
//! On a terminal (decided once, by `config`) it may also colour the lines,
//! show a spinner while the model is awaited, and with `--stream` print the
//! reply's text as it arrives. None of that ever reaches a pipe, and the
//! reply on stdout is unchanged. Everything this renderer writes to stderr
//! passes through the indicator's `suspend`, so nothing garbles.

mod lines;

use std::io::Write;

use owo_colors::OwoColorize;

use self::lines::{EventLine, Narrator, Tone};
use super::jsonl::file_change;
use super::{EventRenderer, Interest, MAX_LINE_CHARS, RunReport, inert};
use crate::exit::Status;
use crate::policy::cost::Price;
use crate::render::format::Terminal;
use crate::render::spinner::Indicator;
use leash_agent::types::{AgentEvent, AssistantMessageEvent};
use leash_protocol::Message;

pub use self::lines::usage_words;

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
    /// `--price`, for the cost on the turn lines.
    price: Option<Price>,
    /// What the lines remember between events.
    narrator: Narrator,
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
            narrator: Narrator::default(),
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
        self.narrator.text_shown_live = terminal.stream;
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

impl EventRenderer for TextRenderer {
    fn event(&mut self, event: &AgentEvent) {
        self.live(event);
        if !self.events {
            return;
        }
        for line in self.narrator.lines(event, self.price.as_ref()) {
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

    /// `[resume] 5 turns from t.jsonl`, before the run's own events.
    fn resumed(&mut self, turns: u32, path: &std::path::Path) {
        if self.events {
            let plural = if turns == 1 { "" } else { "s" };
            let text = format!("{turns} turn{plural} from {}", path.display());
            let line = EventLine::new("resume", inert(&text, MAX_LINE_CHARS), Tone::Plain);
            self.line(&line.render(self.color));
        }
    }

    /// A failed hook is an event (docs/src/hooks.md "Hooks"): `--events none` prints
    /// none, so one that ended the run is said once, by the last line.
    fn hook_failed(&mut self, failure: &crate::policy::command_hooks::HookFailure) {
        if self.events {
            self.notice(&failure.reason);
        }
    }

    /// Off a terminal nothing streams and no indicator shows, so the
    /// updates change nothing; without `events`, no event does.
    fn interest(&self) -> Interest {
        if self.stream || self.indicator.is_some() {
            Interest::Every
        } else if self.events {
            Interest::NoUpdates
        } else {
            Interest::Nothing
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
mod tests;

//! How far along a batch is, on stderr: a progress bar on a terminal
//! (done/total, ok/failed, rate, ETA, tokens, cost), one summary line
//! every [`PIPE_EVERY`] on a pipe, and at the end one JSON line,
//! `{"type":"batch_end",…}`, counting the items by status.
//!
//! *Never* writes to stdout, and never decides an item's status: it
//! counts what the items reported.

use std::collections::BTreeMap;
use std::io::Write;
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use serde::Serialize;

/// How often a pipe gets a summary line.
pub const PIPE_EVERY: Duration = Duration::from_secs(2);

/// What the batch's items did so far.
pub struct Tally {
    /// The items this run of the batch is to run (its shard, less the
    /// ids `--resume` found).
    pub total: u64,
    /// Items that ended, by status name.
    pub by_status: BTreeMap<&'static str, u64>,
    /// Tokens the ended items used.
    pub tokens: u64,
    /// What they cost, in USD (with a price).
    pub cost: Option<f64>,
    started: Instant,
}

impl Tally {
    /// Nothing done yet of `total` items.
    pub fn new(total: u64) -> Self {
        Tally {
            total,
            by_status: BTreeMap::new(),
            tokens: 0,
            cost: None,
            started: Instant::now(),
        }
    }

    /// An item ended with `status`, using `tokens` and `cost`.
    pub fn add(&mut self, status: &'static str, tokens: u64, cost: Option<f64>) {
        *self.by_status.entry(status).or_default() += 1;
        self.tokens = self.tokens.saturating_add(tokens);
        if let Some(cost) = cost {
            self.cost = Some(self.cost.unwrap_or(0.0) + cost);
        }
    }

    /// Items that ended.
    pub fn done(&self) -> u64 {
        self.by_status.values().sum()
    }

    /// Items that ended `ok`.
    pub fn ok(&self) -> u64 {
        self.by_status.get("ok").copied().unwrap_or(0)
    }

    /// `12/40 done, 11 ok, 1 failed, 2.1/s, ETA 13s, 1234 tokens, $0.0123`.
    pub fn line(&self) -> String {
        let done = self.done();
        let elapsed = self.started.elapsed().as_secs_f64();
        let rate = if elapsed > 0.0 {
            done as f64 / elapsed
        } else {
            0.0
        };
        let eta = match rate > 0.0 {
            true => format!(
                "{}s",
                ((self.total.saturating_sub(done)) as f64 / rate).ceil()
            ),
            false => "?".to_owned(),
        };
        let mut line = format!(
            "{done}/{} done, {} ok, {} failed, {rate:.1}/s, ETA {eta}, {} tokens",
            self.total,
            self.ok(),
            done - self.ok(),
            self.tokens
        );
        if let Some(cost) = self.cost {
            line.push_str(&format!(", ${cost:.4}"));
        }
        line
    }

    /// The final JSON line.
    pub fn summary(&self, not_started: u64) -> String {
        #[derive(Serialize)]
        #[serde(rename_all = "camelCase")]
        struct BatchEnd<'a> {
            #[serde(rename = "type")]
            kind: &'static str,
            total: u64,
            ok: u64,
            failed: u64,
            not_started: u64,
            by_status: &'a BTreeMap<&'static str, u64>,
            tokens: u64,
            #[serde(skip_serializing_if = "Option::is_none")]
            cost: Option<f64>,
            duration_ms: u128,
        }
        let end = BatchEnd {
            kind: "batch_end",
            total: self.total,
            ok: self.ok(),
            failed: self.done() - self.ok(),
            not_started,
            by_status: &self.by_status,
            tokens: self.tokens,
            cost: self.cost,
            duration_ms: self.started.elapsed().as_millis(),
        };
        serde_json::to_string(&end).unwrap_or_default()
    }
}

/// The progress shown while the batch runs.
pub enum Progress {
    /// A bar, redrawn in place on a terminal.
    Bar(ProgressBar),
    /// A line every [`PIPE_EVERY`] on a pipe.
    Lines {
        /// When the last line was written.
        last: Instant,
    },
}

impl Progress {
    /// A bar when stderr is a terminal, lines otherwise.
    pub fn new(terminal: bool, total: u64) -> Self {
        match terminal {
            true => {
                let style = ProgressStyle::with_template("{bar:30} {msg}")
                    .unwrap_or_else(|_| ProgressStyle::default_bar());
                let bar = ProgressBar::with_draw_target(Some(total), ProgressDrawTarget::stderr())
                    .with_style(style);
                bar.enable_steady_tick(Duration::from_millis(200));
                Progress::Bar(bar)
            }
            false => Progress::Lines {
                last: Instant::now(),
            },
        }
    }

    /// Shows `tally`: the bar at once, a line when one is due.
    pub fn show(&mut self, tally: &Tally, stderr: &mut dyn Write) {
        match self {
            Progress::Bar(bar) => {
                bar.set_position(tally.done());
                bar.set_message(tally.line());
            }
            Progress::Lines { last } => {
                if last.elapsed() >= PIPE_EVERY {
                    *last = Instant::now();
                    let _ = writeln!(stderr, "leash batch: {}", tally.line());
                    let _ = stderr.flush();
                }
            }
        }
    }

    /// Takes the bar off the screen.
    pub fn finish(&self) {
        if let Progress::Bar(bar) = self {
            bar.finish_and_clear();
        }
    }
}

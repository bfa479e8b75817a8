//! The live "waiting for the model" indicator of `--events text` on a
//! terminal: a spinner with the elapsed time on stderr's last line.
//!
//! It is only ever created when stderr is a terminal (the caller decides,
//! once), and indicatif draws nothing on a pipe besides. Every other write
//! to stderr goes through [`Indicator::suspend`], which clears the spinner,
//! writes, and redraws it, so lines and spinner never garble each other.

use std::time::Duration;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

/// How often the spinner moves.
const TICK: Duration = Duration::from_millis(120);

/// A spinner on stderr, shown while leash waits.
#[derive(Debug, Default)]
pub struct Indicator {
    bar: Option<ProgressBar>,
}

impl Indicator {
    /// An indicator that shows nothing yet.
    pub fn new() -> Self {
        Indicator::default()
    }

    /// Shows the spinner with `message`, or changes the message of the one
    /// already shown.
    pub fn show(&mut self, message: String) {
        if let Some(bar) = &self.bar {
            bar.set_message(message);
            return;
        }
        let style = ProgressStyle::with_template("{spinner} {msg} {elapsed}")
            .unwrap_or_else(|_| ProgressStyle::default_spinner());
        let bar = ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr())
            .with_style(style)
            .with_message(message);
        bar.enable_steady_tick(TICK);
        self.bar = Some(bar);
    }

    /// Changes the message if the spinner is shown.
    pub fn set_message(&self, message: String) {
        if let Some(bar) = &self.bar {
            bar.set_message(message);
        }
    }

    /// Clears the spinner from the screen.
    pub fn hide(&mut self) {
        if let Some(bar) = self.bar.take() {
            bar.finish_and_clear();
        }
    }

    /// Runs `write` with the spinner cleared, then redraws it.
    pub fn suspend<R>(&self, write: impl FnOnce() -> R) -> R {
        match &self.bar {
            Some(bar) => bar.suspend(write),
            None => write(),
        }
    }
}

impl Drop for Indicator {
    fn drop(&mut self) {
        self.hide();
    }
}

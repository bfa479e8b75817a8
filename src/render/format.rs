//! The output formats a run can be asked for, and what the terminal may
//! show: chosen by flags (the clap value enums live here, with the
//! renderers that write them) and decided once by `config`.

use clap::ValueEnum;

/// `--events`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum EventsFormat {
    /// One line per event, for people.
    Text,
    /// One JSON object per line.
    Jsonl,
    /// Nothing but the last line on failure.
    None,
}

/// `--output`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum OutputFormat {
    /// The reply text and nothing else.
    Text,
    /// One JSON result object.
    Json,
}

/// `--color`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ColorChoice {
    /// Colour when stderr is a terminal and `NO_COLOR` is unset.
    Auto,
    /// Always colour (even with `NO_COLOR` or on a pipe).
    Always,
    /// Never colour.
    Never,
}

/// What stderr may show beyond plain lines, decided once from the flags,
/// the environment and whether stderr is a terminal.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Terminal {
    /// Colour in `--events text`.
    pub color: bool,
    /// A live indicator while waiting for the model (text events, a TTY).
    pub indicator: bool,
    /// `--stream`: reply text shown as it arrives (a TTY, not jsonl).
    pub stream: bool,
}

//! The `--transcript` file: one message per line, each flushed so the file
//! stays whole if the process is killed afterwards. After a failed write
//! nothing more is written; the failure is kept for the final report,
//! unless the reader of a pipe went away.
//!
//! Each run starts its part of the file with a session line
//! (docs/src/events.md "Transcript"): the schema version, the provider, API, model and system
//! message the messages after it were sent with, so `--resume` can read the
//! file back (see [`crate::render::resume`]).

use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::protocol::Message;
use crate::provider::ThinkingLevel;

/// The version of the transcript's lines; `--resume` refuses any other.
pub const TRANSCRIPT_VERSION: u32 = 1;

/// The first line of each run's part of a transcript: what the messages
/// after it were sent with.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "role", rename = "session", rename_all = "camelCase")]
pub struct SessionLine {
    /// [`TRANSCRIPT_VERSION`] when written.
    pub schema_version: u32,
    /// `openai`, `anthropic`, `faux`.
    pub provider: String,
    /// The wire: `openai-chat`, `openai-responses`, `anthropic-messages`, `faux`.
    pub api: String,
    /// The model asked for.
    pub model: String,
    /// The system message (empty for none).
    pub system: String,
    /// `--reasoning-effort`, when a level was asked for; absent for `off`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reasoning_effort: Option<ThinkingLevel>,
    /// With `--resume`: how many lines of which transcript this run
    /// restored (the lines before this one, when the file is appended).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resumed: Option<ResumedFrom>,
}

/// Where a resumed run's conversation came from.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ResumedFrom {
    /// The `--resume` path as given.
    pub path: String,
    /// The lines it had.
    pub lines: u32,
    /// The assistant messages restored.
    pub turns: u32,
}

/// An open transcript.
pub struct Transcript {
    writer: BufWriter<File>,
    path: PathBuf,
    stopped: bool,
    failure: Option<String>,
}

impl Transcript {
    /// The transcript in `file`, created (emptied) at `path`.
    pub fn new(file: File, path: &Path) -> Self {
        Transcript {
            writer: BufWriter::new(file),
            path: path.to_owned(),
            stopped: false,
            failure: None,
        }
    }

    /// Appends one message.
    pub fn write(&mut self, message: &Message) {
        self.write_line(message);
    }

    /// Appends the session line that starts a run's part of the file.
    pub fn write_session(&mut self, session: &SessionLine) {
        self.write_line(session);
    }

    /// Copies the lines of a resumed transcript (already checked) into a
    /// new file, so it holds the whole conversation.
    pub fn copy(&mut self, lines: &str) {
        if self.stopped {
            return;
        }
        let written = self
            .writer
            .write_all(lines.as_bytes())
            .and_then(|()| self.writer.flush());
        self.check(written);
    }

    fn write_line(&mut self, line: &impl Serialize) {
        if self.stopped {
            return;
        }
        let written = serde_json::to_writer(&mut self.writer, line)
            .map_err(io::Error::from)
            .and_then(|()| self.writer.write_all(b"\n"))
            .and_then(|()| self.writer.flush());
        self.check(written);
    }

    fn check(&mut self, written: io::Result<()>) {
        if let Err(error) = written {
            self.stopped = true;
            if !reader_left(&error) {
                self.failure = Some(format!(
                    "cannot write --transcript {}: {error}",
                    self.path.display()
                ));
            }
        }
    }

    /// The write that failed, if one did (taken once).
    pub fn take_failure(&mut self) -> Option<String> {
        self.failure.take()
    }
}

/// A reader that went away (`| head -c1`) is not a failure of the run.
pub fn reader_left(error: &io::Error) -> bool {
    error.kind() == io::ErrorKind::BrokenPipe
}

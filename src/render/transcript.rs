//! The `--transcript` file: one message per line, each handed to the file
//! in one write, so the file stays whole if the process is killed
//! afterwards. After a failed write
//! nothing more is written; the failure is kept for the final report,
//! unless the reader of a pipe went away.
//!
//! Each run starts its part of the file with a session line
//! (docs/src/events.md "Transcript"): the schema version, the provider, API, model and system
//! message the messages after it were sent with, so `--resume` can read the
//! file back (see [`crate::render::resume`]).

use std::fs::File;
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use leash_protocol::Message;
use leash_provider::ThinkingLevel;

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
    /// Unbuffered: each line is one write of its own.
    writer: File,
    path: PathBuf,
    stopped: bool,
    failure: Option<String>,
}

impl Transcript {
    /// The transcript in `file`, created (emptied) at `path`.
    pub fn new(file: File, path: &Path) -> Self {
        Transcript {
            writer: file,
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

    /// Before a resumed run appends to the transcript it resumed: ends the
    /// file on a whole line, as `--resume` read it (`read_bytes` long,
    /// `whole_bytes` of whole lines): a line a kill cut short is cut off,
    /// a missing last newline added. A file changed since it was read is
    /// left as it is.
    pub fn mend(&mut self, read_bytes: u64, whole_bytes: u64) {
        if self.stopped || read_bytes == whole_bytes {
            return;
        }
        let file = &mut self.writer;
        let unchanged = file.metadata().is_ok_and(|meta| meta.len() == read_bytes);
        if !unchanged {
            return;
        }
        let mended = match whole_bytes < read_bytes {
            true => file.set_len(whole_bytes),
            false => file.write_all(b"\n"),
        };
        self.check(mended);
    }

    fn write_line(&mut self, line: &impl Serialize) {
        if self.stopped {
            return;
        }
        // The whole line in one buffer, handed to the file in one write:
        // a kill lands before it or after it, or (a line past a page) cuts
        // it inside the kernel, which `--resume` reads as a cut last line.
        let written = serde_json::to_vec(line)
            .map_err(io::Error::from)
            .and_then(|mut bytes| {
                bytes.push(b'\n');
                self.writer.write_all(&bytes)
            })
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

//! The `--transcript` file: one message per line, each flushed so the file
//! stays whole if the process is killed afterwards. After a failed write
//! nothing more is written; the failure is kept for the final report,
//! unless the reader of a pipe went away.

use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};

use crate::protocol::Message;

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
        if self.stopped {
            return;
        }
        let written = serde_json::to_writer(&mut self.writer, message)
            .map_err(io::Error::from)
            .and_then(|()| self.writer.write_all(b"\n"))
            .and_then(|()| self.writer.flush());
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

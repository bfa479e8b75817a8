//! What a server leaves behind when it goes away — how it exited, its
//! last stderr line, whether it broke the cap on one message — kept for
//! the error a failed start or call shows, and shared by `start` and
//! `tool`.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::io::AsyncReadExt;

use super::shutdown::ServerProcesses;
use leash_child::lines::Overflow;

/// The cap on one message from a stdio server (one JSON-RPC line, its
/// newline not counted), like the SSE event cap
/// (`MAX_EVENT_BYTES`). Real
/// messages are far smaller (a result is cut to what the model reads
/// anyway); this only stops a broken or hostile server from growing a
/// buffer forever. It is checked before a byte past it is buffered, so a
/// longer line costs at most this much memory.
pub const MAX_MESSAGE_BYTES: usize = 16 * 1024 * 1024;

/// What a stdio server leaves behind when it goes away: how it exited
/// and the last line it wrote on stderr, to say why a start or a call
/// failed.
pub struct Witness {
    pub(super) name: String,
    /// Whether the server is a process of leash's (stdio) rather than an
    /// HTTP endpoint.
    pub(super) is_process: bool,
    pub(super) processes: ServerProcesses,
    pub(super) stderr: StderrTail,
    pub(super) overflow: Overflow,
    /// An HTTP server's `Mcp-Session-Id`, once it gave one (for the
    /// trace's `mcp.session.id`).
    pub(super) session: Arc<std::sync::Mutex<Option<String>>>,
}

impl Witness {
    /// `sent a message larger than the 16 MiB cap on one MCP message; the
    /// server was stopped` once the server went past
    /// [`MAX_MESSAGE_BYTES`] (a process is stopped now; an HTTP server is
    /// sent nothing more); `None` while it kept to it.
    pub async fn overflowed(&self) -> Option<String> {
        if !self.overflow.happened() {
            return None;
        }
        let consequence = match self.is_process {
            true => {
                self.processes.stop(&self.name).await;
                "the server was stopped"
            }
            false => "the session was closed",
        };
        Some(format!(
            "sent a message larger than the {} MiB cap on one MCP message \
             (MAX_MESSAGE_BYTES); {consequence}",
            MAX_MESSAGE_BYTES / (1024 * 1024)
        ))
    }

    /// Returns once the server sent a message past the cap.
    pub async fn overflow(&self) {
        self.overflow.wait().await;
    }

    /// `exited (exit status: 3); its last stderr line: …` once the
    /// process has exited (waiting at most `patience`), with `when`
    /// after the status; `None` while it runs.
    pub async fn exited(&self, when: &str, patience: Duration) -> Option<String> {
        if !self.is_process {
            return None;
        }
        let status = self.processes.exit_status(&self.name, patience).await?;
        // Its last words may still be in the pipe.
        self.stderr.read_to_end(Duration::from_millis(300)).await;
        let mut text = format!("exited ({status}) {when}");
        if let Some(line) = self.stderr.last_line() {
            text.push_str(&format!("; its last stderr line: {line}"));
        }
        Some(text)
    }
}

/// The last line a server wrote on stderr, read as it comes (bounded).
#[derive(Default)]
pub(crate) struct StderrTail {
    last: Arc<Mutex<String>>,
    reader: Mutex<Option<tokio::task::JoinHandle<()>>>,
}

/// The most of a stderr line that is kept.
const LINE_BYTES: usize = 1000;

impl StderrTail {
    /// Reads `stderr` to its end on a task of its own.
    pub(super) fn follow(&self, mut stderr: tokio::process::ChildStderr) {
        let last = Arc::clone(&self.last);
        let reader = tokio::spawn(async move {
            let mut current: Vec<u8> = Vec::new();
            let mut buffer = [0u8; 4096];
            while let Ok(read @ 1..) = stderr.read(&mut buffer).await {
                for &byte in &buffer[..read] {
                    if byte == b'\n' {
                        let line = String::from_utf8_lossy(&current).trim().to_owned();
                        if !line.is_empty()
                            && let Ok(mut last) = last.lock()
                        {
                            *last = line;
                        }
                        current.clear();
                    } else if current.len() < LINE_BYTES {
                        current.push(byte);
                    }
                }
            }
            let line = String::from_utf8_lossy(&current).trim().to_owned();
            if !line.is_empty()
                && let Ok(mut last) = last.lock()
            {
                *last = line;
            }
        });
        if let Ok(mut slot) = self.reader.lock() {
            *slot = Some(reader);
        }
    }

    /// Waits at most `patience` for the end of the stream (a helper of the
    /// server may hold it open).
    pub(super) async fn read_to_end(&self, patience: Duration) {
        let reader = self.reader.lock().ok().and_then(|mut slot| slot.take());
        if let Some(reader) = reader {
            let _ = tokio::time::timeout(patience, reader).await;
        }
    }

    pub(super) fn last_line(&self) -> Option<String> {
        let last = self.last.lock().ok()?;
        (!last.is_empty()).then(|| short(&last))
    }
}

/// An error message of a server or the SDK, as one short line.
pub(crate) fn short(message: &str) -> String {
    let line: String = message
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    let line = line.trim();
    match line.char_indices().nth(300) {
        Some((at, _)) => format!("{}…", &line[..at]),
        None => line.to_owned(),
    }
}

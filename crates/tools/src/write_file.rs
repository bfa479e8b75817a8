//! The `write_file` tool: creates a file under the root, or replaces one
//! whole, atomically (`sandbox::write`), and answers with what changed.
//! Offered only when the operator allows writing (`--allow-write`, or the
//! name in `--tools`).
//!
//! It must never write outside the root, a dotenv or key file, or inside
//! `.git` (`Sandbox::prepare_write` refuses them), and never leave a
//! half-written file.

use std::io;
use std::sync::Arc;

use schemars::JsonSchema;
use serde::Deserialize;
use tokio_util::sync::CancellationToken;

use super::changes::{ChangeLog, FileChange, diff, line_count};
use super::sandbox::Sandbox;
use super::sandbox::write::{MAX_EDIT_BYTES, MAX_WRITE_BYTES, ReadError, WriteError, WriteTarget};
use super::{Interrupted, ToolUpdates, TypedTool, run_blocking_call};
use leash_protocol::{Content, ToolOutput};

/// Why a `write_file` or `edit_file` call failed. `Display` is one line
/// for the model.
#[derive(Debug, thiserror::Error)]
pub enum WriteFileError {
    /// Refused or failed by the sandbox's writer.
    #[error(transparent)]
    Write(#[from] WriteError),
    /// More content than one call may write.
    #[error("content for '{path}' is {len} bytes; at most {MAX_WRITE_BYTES} bytes may be written")]
    TooLarge {
        /// The path, shortened and escaped.
        path: String,
        /// The content's length.
        len: usize,
    },
    /// The file there now is too large to replace or edit.
    #[error(
        "'{path}' is {len} bytes; files larger than {MAX_EDIT_BYTES} bytes are never edited or replaced"
    )]
    ExistingTooLarge {
        /// The path, shortened and escaped.
        path: String,
        /// Its length.
        len: u64,
    },
    /// The file there now is not UTF-8 text.
    #[error("'{path}' is not UTF-8 text; only text files are edited or replaced")]
    NotText {
        /// The path, shortened and escaped.
        path: String,
    },
    /// Reading the file there now failed.
    #[error("cannot read '{path}': {source}")]
    Read {
        /// The path, shortened and escaped.
        path: String,
        /// The operating system's error.
        #[source]
        source: io::Error,
    },
    /// The run was aborted, or the blocking work died.
    #[error(transparent)]
    Interrupted(#[from] Interrupted),
}

/// The `write_file` tool.
#[derive(Debug)]
pub struct WriteFile {
    sandbox: Arc<Sandbox>,
    changes: Arc<ChangeLog>,
}

/// The arguments of `write_file`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct WriteFileArgs {
    /// The file, relative to the root directory. Missing directories on the way are created.
    pub path: String,
    /// The whole new content of the file (UTF-8 text).
    pub content: String,
}

impl WriteFile {
    /// A `write_file` tool that writes under `sandbox`'s root and records
    /// each changed file in `changes`.
    pub fn new(sandbox: Arc<Sandbox>, changes: Arc<ChangeLog>) -> WriteFile {
        WriteFile { sandbox, changes }
    }
}

impl TypedTool for WriteFile {
    const NAME: &'static str = "write_file";
    const SEQUENTIAL: bool = true;
    type Args = WriteFileArgs;
    type Error = WriteFileError;

    fn description(&self) -> String {
        format!(
            "Create a file under the root directory, or replace one whole, with the given \
             text (at most {} MiB). The write is atomic. Prefer edit_file to change part \
             of an existing file. Dotenv and key files and anything in .git are refused.",
            MAX_WRITE_BYTES / (1024 * 1024)
        )
    }

    async fn call(
        &self,
        args: WriteFileArgs,
        cancel: CancellationToken,
        _updates: ToolUpdates,
    ) -> Result<ToolOutput, WriteFileError> {
        let sandbox = Arc::clone(&self.sandbox);
        let changes = Arc::clone(&self.changes);
        run_blocking_call(Self::NAME, &cancel, move |cancel| {
            write_blocking(&sandbox, &changes, &args, cancel)
        })
        .await
    }
}

/// The whole call, on a blocking thread.
fn write_blocking(
    sandbox: &Sandbox,
    changes: &ChangeLog,
    args: &WriteFileArgs,
    cancel: &CancellationToken,
) -> Result<ToolOutput, WriteFileError> {
    if args.content.len() > MAX_WRITE_BYTES {
        return Err(WriteFileError::TooLarge {
            path: super::sandbox::shown_path(&args.path),
            len: args.content.len(),
        });
    }
    let mut target = sandbox.prepare_write(&args.path, true)?;
    let old = existing_text(&mut target)?;
    if old.as_deref() == Some(args.content.as_str()) {
        return Ok(ToolOutput::text(format!(
            "unchanged: {} already holds this content",
            target.relative()
        )));
    }
    finish(
        sandbox,
        changes,
        &target,
        old.as_deref(),
        &args.content,
        cancel,
        None,
    )
}

/// The text of the file there now (`None` for no file), refused when it
/// is too large or not UTF-8.
pub(crate) fn existing_text(target: &mut WriteTarget) -> Result<Option<String>, WriteFileError> {
    let path = target.shown().to_owned();
    let bytes = target
        .read_existing(MAX_EDIT_BYTES)
        .map_err(|error| match error {
            ReadError::TooLarge { len } => WriteFileError::ExistingTooLarge {
                path: path.clone(),
                len,
            },
            ReadError::Io(source) => WriteFileError::Read {
                path: path.clone(),
                source,
            },
        })?;
    bytes
        .map(|bytes| String::from_utf8(bytes).map_err(|_| WriteFileError::NotText { path }))
        .transpose()
}

/// Writes `new` over `old` (or as a new file), records the change and
/// answers with it: a first line (`head`, or "created"/"replaced"), then
/// the short diff. The change rides in `details` for `--events`.
pub(crate) fn finish(
    sandbox: &Sandbox,
    changes: &ChangeLog,
    target: &WriteTarget,
    old: Option<&str>,
    new: &str,
    cancel: &CancellationToken,
    head: Option<String>,
) -> Result<ToolOutput, WriteFileError> {
    target.commit(sandbox, new.as_bytes(), cancel)?;
    changes.record(target.relative());
    let path = target.relative();
    let (change, text) = match old {
        None => {
            let change = FileChange {
                path: path.to_owned(),
                created: true,
                added: line_count(new),
                removed: 0,
            };
            let text = format!(
                "created {path} ({} lines, {} bytes)",
                change.added,
                new.len()
            );
            (change, text)
        }
        Some(old) => {
            let (added, removed, shown) = diff(path, old, new);
            let head = head.unwrap_or_else(|| format!("replaced {path}"));
            let text = format!("{head} (+{added} -{removed})\n{shown}");
            let change = FileChange {
                path: path.to_owned(),
                created: false,
                added,
                removed,
            };
            (change, text)
        }
    };
    Ok(ToolOutput {
        content: vec![Content::text(text)],
        details: change.to_details(),
        terminate: false,
        usage: None,
    })
}

#[cfg(test)]
#[path = "write_file_tests.rs"]
mod tests;

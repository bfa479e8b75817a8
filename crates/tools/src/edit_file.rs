//! The `edit_file` tool: replaces exact text in a file under the root
//! (once, unless `replace_all`), atomically, and answers with how many
//! replacements it made and a short diff. Offered only when the operator
//! allows writing (`--allow-write`, or the name in `--tools`).
//!
//! It must never guess: `old` must match the file's text exactly, and
//! exactly once unless `replace_all` — no match and several matches are
//! errors that say what to do. The write goes through the same
//! `Sandbox::prepare_write` as `write_file`.

use std::sync::Arc;

use schemars::JsonSchema;
use serde::Deserialize;
use tokio_util::sync::CancellationToken;

use super::changes::ChangeLog;
use super::sandbox::write::MAX_WRITE_BYTES;
use super::sandbox::{Sandbox, SandboxError};
use super::write_file::{WriteFileError, existing_text, finish};
use super::{Interrupted, ToolUpdates, TypedTool, run_blocking_call};
use leash_protocol::ToolOutput;

/// Why an `edit_file` call failed. `Display` is one line for the model.
#[derive(Debug, thiserror::Error)]
pub enum EditFileError {
    /// Refused or failed like a `write_file` call.
    #[error(transparent)]
    Write(#[from] WriteFileError),
    /// `old` is empty.
    #[error("old is empty; give the exact text to replace (use write_file to write a whole file)")]
    EmptyOld,
    /// `old` and `new` are the same.
    #[error("old and new are the same; nothing would change")]
    Same,
    /// No file there.
    #[error("'{path}' does not exist; use write_file to create it")]
    Missing {
        /// The path, shortened and escaped.
        path: String,
    },
    /// `old` is not in the file.
    #[error(
        "old text was not found in '{path}' (0 matches); read the file again and copy the exact text, whitespace and indentation included"
    )]
    NoMatch {
        /// The path, shortened and escaped.
        path: String,
    },
    /// `old` is in the file more than once, and `replace_all` is off.
    #[error(
        "old text occurs {count} times in '{path}'; include more of the surrounding lines so it matches exactly once, or set replace_all to replace all {count}"
    )]
    Ambiguous {
        /// The path, shortened and escaped.
        path: String,
        /// How many times it occurs.
        count: usize,
    },
    /// The edited file would be too large (found before it is built).
    #[error(
        "the edited '{path}' would be {len} bytes ({count} replacement{}); at most \
         {MAX_WRITE_BYTES} bytes may be written",
        if *count == 1 { "" } else { "s" }
    )]
    TooLarge {
        /// The path, shortened and escaped.
        path: String,
        /// The edited length.
        len: u128,
        /// How many replacements it would take.
        count: usize,
    },
}

impl From<Interrupted> for EditFileError {
    fn from(interrupted: Interrupted) -> Self {
        EditFileError::Write(WriteFileError::Interrupted(interrupted))
    }
}

/// The `edit_file` tool.
#[derive(Debug)]
pub struct EditFile {
    sandbox: Arc<Sandbox>,
    changes: Arc<ChangeLog>,
}

/// The arguments of `edit_file`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct EditFileArgs {
    /// The file, relative to the root directory. It must exist.
    pub path: String,
    /// The exact text to replace, whitespace and indentation included; it must occur exactly once unless replace_all.
    pub old: String,
    /// The text to put in its place.
    pub new: String,
    /// Replace every occurrence of old instead of exactly one (default false).
    #[serde(default)]
    pub replace_all: Option<bool>,
}

impl EditFile {
    /// An `edit_file` tool that edits under `sandbox`'s root and records
    /// each changed file in `changes`.
    pub fn new(sandbox: Arc<Sandbox>, changes: Arc<ChangeLog>) -> EditFile {
        EditFile { sandbox, changes }
    }
}

impl TypedTool for EditFile {
    const NAME: &'static str = "edit_file";
    const SEQUENTIAL: bool = true;
    type Args = EditFileArgs;
    type Error = EditFileError;

    fn description(&self) -> String {
        "Replace exact text in a UTF-8 file under the root directory: old must occur \
         exactly once (or set replace_all). The write is atomic; the answer says how many \
         replacements were made and shows a short diff. Read the file first and copy old \
         exactly."
            .to_owned()
    }

    async fn call(
        &self,
        args: EditFileArgs,
        cancel: CancellationToken,
        _updates: ToolUpdates,
    ) -> Result<ToolOutput, EditFileError> {
        let sandbox = Arc::clone(&self.sandbox);
        let changes = Arc::clone(&self.changes);
        run_blocking_call(Self::NAME, &cancel, move |cancel| {
            edit_blocking(&sandbox, &changes, &args, cancel)
        })
        .await
    }
}

/// The whole call, on a blocking thread.
fn edit_blocking(
    sandbox: &Sandbox,
    changes: &ChangeLog,
    args: &EditFileArgs,
    cancel: &CancellationToken,
) -> Result<ToolOutput, EditFileError> {
    if args.old.is_empty() {
        return Err(EditFileError::EmptyOld);
    }
    if args.old == args.new {
        return Err(EditFileError::Same);
    }
    let shown = super::sandbox::shown_path(&args.path);
    let mut target = match sandbox.prepare_write(&args.path, false) {
        Ok(target) => target,
        Err(super::sandbox::write::WriteError::Sandbox(SandboxError::NotFound { .. }))
        | Err(super::sandbox::write::WriteError::NoParent { .. }) => {
            return Err(EditFileError::Missing { path: shown });
        }
        Err(error) => return Err(WriteFileError::from(error).into()),
    };
    let Some(old_text) = existing_text(&mut target)? else {
        return Err(EditFileError::Missing { path: shown });
    };
    let replace_all = args.replace_all.unwrap_or(false);
    let count = old_text.matches(args.old.as_str()).count();
    match count {
        0 => return Err(EditFileError::NoMatch { path: shown }),
        1 => {}
        count if !replace_all => return Err(EditFileError::Ambiguous { path: shown, count }),
        _ => {}
    }
    // The size first: a tiny `old` and a big `new` replaced everywhere
    // would otherwise build gigabytes before any check.
    let len = edited_len(old_text.len(), count, args.old.len(), args.new.len());
    if len > MAX_WRITE_BYTES as u128 {
        return Err(EditFileError::TooLarge {
            path: shown,
            len,
            count,
        });
    }
    let new_text = match replace_all {
        true => old_text.replace(args.old.as_str(), &args.new),
        false => old_text.replacen(args.old.as_str(), &args.new, 1),
    };
    let head = format!(
        "edited {}: {count} replacement{}",
        target.relative(),
        if count == 1 { "" } else { "s" }
    );
    Ok(finish(
        sandbox,
        changes,
        &target,
        Some(&old_text),
        &new_text,
        cancel,
        Some(head),
    )?)
}

/// The length of a text of `len` bytes once `count` non-overlapping
/// matches of `old` bytes are each replaced by `new` bytes: exact, and in
/// `u128` so no product of `usize`s can overflow.
fn edited_len(len: usize, count: usize, old: usize, new: usize) -> u128 {
    let count = count as u128;
    (len as u128).saturating_sub(count * old as u128) + count * new as u128
}

#[cfg(test)]
#[path = "edit_file_tests.rs"]
mod tests;

//! Why a `git` call failed: one error for the tool, its whitelist, its
//! revisions and the git it runs.

use super::limits::{MAX_ARGS, TIME_LIMIT};
use super::repo::RepositoryError;
use crate::Interrupted;
use crate::sandbox::SandboxError;

/// The tool's name, as the model calls it.
pub(super) const NAME: &str = "git";

/// Why a `git` call failed. `Display` is one line for the model.
#[derive(Debug, thiserror::Error)]
pub enum GitError {
    /// An argument not on the whitelist, or malformed.
    #[error("argument '{arg}' is not allowed: {why}")]
    Refused {
        /// The argument (shortened, escaped).
        arg: String,
        /// Why, and what to give instead.
        why: String,
    },
    /// Too many arguments.
    #[error("too many arguments ({count}; at most {})", MAX_ARGS)]
    TooManyArgs {
        /// How many were given.
        count: usize,
    },
    /// `-n` or `-L` at the end, without its value.
    #[error("'{arg}' needs a value after it")]
    MissingValue {
        /// The option.
        arg: String,
    },
    /// A revision, or an end of a range, that is not a commit.
    #[error(
        "'{rev}' does not name a commit: git views take commits, tags of commits and ranges \
         of them (not a blob or tree id, nor REV^{{tree}}); to read a file use read_file"
    )]
    NotACommit {
        /// The revision (shortened, escaped).
        rev: String,
    },
    /// `blame` without exactly one path.
    #[error("git blame needs exactly one file, given after '--' (e.g. [\"--\", \"src/lib.rs\"])")]
    BlameOnePath,
    /// A path was refused by the sandbox.
    #[error(transparent)]
    Sandbox(#[from] SandboxError),
    /// The repository cannot be used.
    #[error(transparent)]
    Repository(#[from] RepositoryError),
    /// The git binary could not be run.
    #[error("cannot run git: {0}")]
    Spawn(String),
    /// git ran longer than its time limit (30 s).
    #[error("git {command} took longer than {}s and was stopped; narrow it (paths after '--', -n)", TIME_LIMIT.as_secs())]
    TimedOut {
        /// The command.
        command: &'static str,
    },
    /// git exited with an error.
    #[error("git {command} failed (exit {code}): {message}")]
    Failed {
        /// The command.
        command: &'static str,
        /// Its exit code (-1: killed by a signal).
        code: i32,
        /// The start of its stderr, one line.
        message: String,
    },
    /// The run was aborted, or the blocking work died.
    #[error(transparent)]
    Interrupted(#[from] Interrupted),
}

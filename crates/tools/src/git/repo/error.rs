//! Why the repository around the root cannot be used; below discovery,
//! the checks of where it lives, and the opening of its files.

use std::io;

/// Why the repository around the root cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum RepositoryError {
    /// A `.git` file that does not name a git directory.
    #[error("'{path}' is a .git file that does not name a usable git directory: {reason}")]
    BadGitFile {
        /// The `.git` file.
        path: String,
        /// Why.
        reason: String,
    },
    /// Something discovery reads is not the regular file or directory
    /// expected, so it is not opened.
    #[error(
        "'{path}' is {kind}, not the regular file or directory git keeps there; leash does not open it"
    )]
    NotRegular {
        /// The path.
        path: String,
        /// What it is ("a FIFO").
        kind: String,
    },
    /// A file discovery reads is larger than any git writes.
    #[error("'{path}' is larger than {limit} bytes")]
    TooLarge {
        /// The path.
        path: String,
        /// The cap.
        limit: u64,
    },
    /// A file or directory discovery needs could not be read.
    #[error("cannot read '{path}': {reason}")]
    Unreadable {
        /// The path.
        path: String,
        /// Why.
        reason: String,
    },
    /// A `.git` file or link, or a `commondir`, leads out of the work tree
    /// to a git directory that does not point back at it.
    #[error(
        "'{pointer}' leads to '{target}', which does not point back at the work tree '{top}'; leash shows only the repository of the root"
    )]
    Elsewhere {
        /// The `.git` file or `commondir`.
        pointer: String,
        /// Where it leads.
        target: String,
        /// The work tree.
        top: String,
    },
    /// `objects/info/alternates` names an object directory outside the
    /// work tree and its git directories.
    #[error(
        "'{file}' names '{line}', an object directory outside the work tree and its git directory; leash does not follow it"
    )]
    Alternate {
        /// The alternates file.
        file: String,
        /// The line.
        line: String,
    },
    /// Making the shadow git directory failed.
    #[error("cannot prepare a private git directory: {0}")]
    Shadow(#[source] io::Error),
}

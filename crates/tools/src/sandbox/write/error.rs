//! Why a write was refused or failed: the one error of `write.rs` and the
//! name check below it, kept apart so both use it without a circle.

use std::io;

use super::super::SandboxError;

/// Why a write was refused or failed. `Display` is one line for the model.
#[derive(Debug, thiserror::Error)]
pub enum WriteError {
    /// The path was refused by the walk, or a name on it is missing.
    #[error(transparent)]
    Sandbox(#[from] SandboxError),
    /// The path names the root itself, or ends with '/'.
    #[error("path '{path}' does not name a file; give a file path relative to the root")]
    NotAFile {
        /// The path, shortened and escaped.
        path: String,
    },
    /// The path names a directory.
    #[error("'{path}' is a directory; only files can be written")]
    Directory {
        /// The path, shortened and escaped.
        path: String,
    },
    /// A FIFO, socket or device.
    #[error("'{path}' is not a regular file (a FIFO, socket or device); it cannot be written")]
    Special {
        /// The path, shortened and escaped.
        path: String,
    },
    /// A file whose name says it holds secrets.
    #[error("'{path}' is {kind}, which holds secrets; leash's tools never write it")]
    Secret {
        /// The path, shortened and escaped.
        path: String,
        /// What kind of file, in words.
        kind: &'static str,
    },
    /// Inside a directory git takes for a git directory, whatever its
    /// name, or a write that would make one.
    #[error(
        "'{path}' is inside a git directory (a directory holding HEAD with objects/ and refs/, \
         as a repository does) or would make one, and git directories' hooks and config run \
         programs; leash's tools never write there"
    )]
    GitLike {
        /// The path, shortened and escaped.
        path: String,
    },
    /// Inside a `.git` directory.
    #[error(
        "'{path}' is inside a .git directory, whose hooks and config run programs; leash's tools never write there"
    )]
    GitDir {
        /// The path, shortened and escaped.
        path: String,
    },
    /// The name is a symlink now (a race, or a link to nothing).
    #[error(
        "'{path}' is a symlink that leads nowhere or was swapped in; write to the file it should name instead"
    )]
    Symlink {
        /// The path, shortened and escaped.
        path: String,
    },
    /// A directory on the way is missing and may not be created here.
    #[error("the directory of '{path}' does not exist")]
    NoParent {
        /// The path, shortened and escaped.
        path: String,
    },
    /// The directory was moved out of the root while the file was written.
    #[error("the directory of '{path}' changed while it was written; check it")]
    Changed {
        /// The path, shortened and escaped.
        path: String,
    },
    /// The run was aborted before the file was replaced (nothing changed).
    #[error("the write to '{path}' was cancelled; the file is unchanged")]
    Cancelled {
        /// The path, shortened and escaped.
        path: String,
    },
    /// An I/O failure; nothing was replaced.
    #[error("cannot write '{path}': {source}")]
    Io {
        /// The path, shortened and escaped.
        path: String,
        /// The operating system's error (it names no path).
        #[source]
        source: io::Error,
    },
}

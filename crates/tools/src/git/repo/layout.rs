//! Where a repository lives — its work tree, git directory and common
//! directory — as discovery found them; below discovery and the check
//! that the git directory belongs to the work tree.

use std::path::{Path, PathBuf};

/// A work tree and its git directory, as found from the root.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Repository {
    /// The work tree's top-level directory (canonical).
    pub(super) top: PathBuf,
    /// The git directory of this work tree (canonical): `.git`, or for a
    /// linked worktree or a submodule the directory its `.git` file names.
    pub(super) git_dir: PathBuf,
    /// The directory holding the shared objects, refs and config, when
    /// `git_dir` names one in a `commondir` file (a linked worktree).
    pub(super) common_dir: Option<PathBuf>,
}

impl Repository {
    /// The directory that holds the config: the common directory of a
    /// linked worktree, else the git directory.
    pub(super) fn config_dir(&self) -> &Path {
        self.common_dir.as_deref().unwrap_or(&self.git_dir)
    }
}

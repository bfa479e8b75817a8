//! `.git` kept as it was, where no private mount namespace makes it
//! read-only (docs/src/tools.md "What the kernel holds, ABI by ABI"):
//! what git would run or obey at the operator's next `git` command — the
//! config (`core.fsmonitor`, `core.hooksPath`, filters, aliases), the
//! hooks, `info/`, `commondir`, the alternates — is read before each
//! command and put back after it, and every path put back is reported.
//!
//! It must never follow a link (a planted link is removed, not read
//! through), and never report a path it did not change.

use std::collections::BTreeMap;
use std::fs;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};

/// The largest file kept (a config or a hook is far smaller).
const MAX_FILE_BYTES: u64 = 4 * 1024 * 1024;
/// The most files kept under `hooks/` and `info/` together.
const MAX_FILES: usize = 1000;

/// The files git obeys, relative to the git directory.
const FILES: [&str; 4] = [
    "config",
    "config.worktree",
    "commondir",
    "objects/info/alternates",
];
/// The directories whose every file git runs or obeys.
const DIRS: [&str; 2] = ["hooks", "info"];

/// The mode of a kept entry that is no regular file (a link, a FIFO, a
/// directory where a file was): restore removes it.
const ODD: u32 = u32::MAX;

/// One kept file: its bytes and mode.
type Kept = (Vec<u8>, u32);

/// What `.git` held before a command.
#[derive(Debug)]
pub(super) struct GitGuard {
    git: PathBuf,
    /// The git directory's inode: a `.git` replaced whole is told apart.
    inode: u64,
    files: BTreeMap<PathBuf, Kept>,
}

impl GitGuard {
    /// The root's `.git` directory as it is now; `None` when there is
    /// none (or it is a `.git` file: its target is outside the root, and
    /// the command cannot write there).
    pub(super) fn take(root: &Path) -> Option<GitGuard> {
        let git = root.join(".git");
        let meta = fs::symlink_metadata(&git).ok()?;
        if !meta.is_dir() {
            return None;
        }
        Some(GitGuard {
            files: kept_files(&git),
            inode: meta.ino(),
            git,
        })
    }

    /// Puts back every kept file that changed, removes every file that
    /// appeared where git would obey it; returns the paths it touched,
    /// relative to the root (`.git/config`), in order.
    pub(super) fn restore(&self) -> Vec<String> {
        let mut touched = Vec::new();
        let replaced = fs::symlink_metadata(&self.git)
            .map(|meta| !meta.is_dir() || meta.ino() != self.inode)
            .unwrap_or(true);
        if replaced {
            // A `.git` swapped for another (a link, a file, a new
            // directory): the new one is moved aside, the old one is gone
            // or elsewhere; said, never followed.
            return vec![".git".to_owned()];
        }
        let now = kept_files(&self.git);
        // What appeared goes first (a link planted where a directory was
        // is removed, never written through), then what changed comes
        // back.
        for path in now.keys().filter(|path| !self.files.contains_key(*path)) {
            let _ = remove_any(&self.git.join(path));
            touched.push(path.clone());
        }
        for (path, before) in &self.files {
            if now.get(path) != Some(before) {
                let full = self.git.join(path);
                let _ = remove_any(&full);
                if let Some(parent) = full.parent() {
                    let _ = fs::create_dir_all(parent);
                }
                if before.1 != ODD && fs::write(&full, &before.0).is_ok() {
                    let _ = fs::set_permissions(&full, fs::Permissions::from_mode(before.1));
                }
                touched.push(path.clone());
            }
        }
        touched.sort();
        touched.dedup();
        touched
            .into_iter()
            .map(|path| format!(".git/{}", path.display()))
            .collect()
    }
}

/// The regular files of [`FILES`] and [`DIRS`] under `git`, read without
/// following a link.
fn kept_files(git: &Path) -> BTreeMap<PathBuf, Kept> {
    let mut files = BTreeMap::new();
    let mut keep = |relative: PathBuf| {
        // A link (or anything but a directory) on the way is kept as odd
        // itself: nothing is read, written or removed through it.
        let mut on_the_way = PathBuf::new();
        for part in relative.parent().into_iter().flat_map(Path::components) {
            on_the_way.push(part);
            let is_dir = fs::symlink_metadata(git.join(&on_the_way)).is_ok_and(|m| m.is_dir());
            if !is_dir {
                if fs::symlink_metadata(git.join(&on_the_way)).is_ok() {
                    files.insert(on_the_way, (Vec::new(), ODD));
                }
                return;
            }
        }
        let full = git.join(&relative);
        let Ok(meta) = fs::symlink_metadata(&full) else {
            return;
        };
        if meta.is_file() && meta.len() <= MAX_FILE_BYTES {
            if let Ok(bytes) = fs::read(&full) {
                files.insert(relative, (bytes, meta.mode() & 0o7777));
            }
        } else {
            // A link, a FIFO, a directory where a file was: kept as
            // nothing, so restore removes it.
            files.insert(relative, (Vec::new(), ODD));
        }
    };
    for name in FILES {
        keep(PathBuf::from(name));
    }
    let mut count = 0;
    for dir in DIRS {
        let mut pending = vec![PathBuf::from(dir)];
        while let Some(relative) = pending.pop() {
            // A link where a directory is expected is kept as odd, never
            // listed through.
            match fs::symlink_metadata(git.join(&relative)) {
                Ok(meta) if meta.is_dir() => {}
                Ok(_) => {
                    keep(relative);
                    continue;
                }
                Err(_) => continue,
            }
            let Ok(entries) = fs::read_dir(git.join(&relative)) else {
                continue;
            };
            for entry in entries.flatten() {
                count += 1;
                if count > MAX_FILES {
                    return files;
                }
                let path = relative.join(entry.file_name());
                match entry.file_type() {
                    Ok(kind) if kind.is_dir() => pending.push(path),
                    _ => keep(path),
                }
            }
        }
    }
    files
}

fn remove_any(path: &Path) -> std::io::Result<()> {
    match fs::symlink_metadata(path) {
        Ok(meta) if meta.is_dir() => fs::remove_dir_all(path),
        Ok(_) => fs::remove_file(path),
        Err(error) => Err(error),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn a_planted_hook_and_a_changed_config_are_put_back_and_named() {
        let dir = tempfile::tempdir().unwrap();
        let git = dir.path().join(".git");
        fs::create_dir_all(git.join("hooks")).unwrap();
        fs::write(git.join("config"), "[core]\n").unwrap();
        fs::write(git.join("hooks/pre-commit.sample"), "#!/bin/sh\n").unwrap();
        let guard = GitGuard::take(dir.path()).unwrap();
        fs::write(git.join("config"), "[core]\nfsmonitor = evil\n").unwrap();
        fs::write(git.join("hooks/pre-commit"), "#!/bin/sh\nevil\n").unwrap();
        let elsewhere = dir.path().join("elsewhere");
        fs::create_dir(&elsewhere).unwrap();
        std::os::unix::fs::symlink(&elsewhere, git.join("info")).unwrap();
        fs::remove_file(git.join("hooks/pre-commit.sample")).unwrap();
        let touched = guard.restore();
        assert_eq!(
            touched,
            [
                ".git/config",
                ".git/hooks/pre-commit",
                ".git/hooks/pre-commit.sample",
                ".git/info"
            ]
        );
        assert!(!git.join("info").exists(), "the planted link is gone");
        assert!(elsewhere.exists(), "its target was not touched");
        // A link on the way to a kept file: removed, its target's file
        // left alone.
        fs::create_dir_all(git.join("objects/info")).unwrap();
        let guard = GitGuard::take(dir.path()).unwrap();
        fs::write(elsewhere.join("alternates"), "/elsewhere\n").unwrap();
        fs::remove_dir(git.join("objects/info")).unwrap();
        std::os::unix::fs::symlink(&elsewhere, git.join("objects/info")).unwrap();
        assert_eq!(guard.restore(), [".git/objects/info"]);
        assert!(elsewhere.join("alternates").exists());
        assert!(!git.join("objects/info").exists());
        assert_eq!(fs::read_to_string(git.join("config")).unwrap(), "[core]\n");
        assert!(!git.join("hooks/pre-commit").exists());
        assert!(git.join("hooks/pre-commit.sample").exists());
        // Nothing changed: nothing named.
        assert_eq!(
            GitGuard::take(dir.path()).unwrap().restore(),
            Vec::<String>::new()
        );
    }
}

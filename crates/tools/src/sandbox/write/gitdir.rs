//! Git directories found by what they hold, not by their name: the test
//! git itself makes (`is_git_directory`: a `HEAD`, with `objects/` and
//! `refs/`, or with a `commondir` naming where those are). A bare
//! repository `vendor/x.git`, the target of a `.git` file
//! (`--separate-git-dir meta`) and a linked worktree's private directory
//! all pass it, and each runs the hooks and config planted in it.
//!
//! Every check is made on an open directory descriptor (`statat` relative
//! to it, never following a final symlink), so it judges the very
//! directory the write will go through. This module must never open or
//! read anything: it only looks at which names a directory holds.

use std::ffi::OsStr;
use std::fs::File;
use std::io;

use rustix::fs::{AtFlags, FileType};
use rustix::io::Errno;

/// What a name in a directory is, as far as the test cares.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Present {
    /// Nothing by that name.
    No,
    /// A directory.
    Dir,
    /// Anything else (a file, a symlink, a FIFO, …).
    Other,
}

/// What `name` in `dir` is.
fn present(dir: &File, name: &str) -> io::Result<Present> {
    match rustix::fs::statat(dir, name, AtFlags::SYMLINK_NOFOLLOW) {
        Ok(stat) => Ok(match FileType::from_raw_mode(stat.st_mode) {
            FileType::Directory => Present::Dir,
            _ => Present::Other,
        }),
        Err(Errno::NOENT) | Err(Errno::NOTDIR) => Ok(Present::No),
        Err(errno) => Err(errno.into()),
    }
}

/// Whether `dir` would pass git's own git-directory test once `adding` (a
/// name about to be created in it, file or directory) exists too.
///
/// Erring on the side of "yes": `HEAD` and `commondir` count whatever
/// they are but a directory (git accepts a symlinked `HEAD`), `objects`
/// and `refs` whatever they are but a plain absence (a symlink to a
/// directory serves git as well). So a write can neither land in a git
/// directory nor finish one (the last of `HEAD`, `objects/`, `refs/`).
pub(super) fn is_git_directory(dir: &File, adding: Option<&OsStr>) -> io::Result<bool> {
    let has = |name: &str, file_like: bool| -> io::Result<bool> {
        if adding.is_some_and(|adding| adding == name) {
            return Ok(true);
        }
        Ok(match present(dir, name)? {
            Present::No => false,
            Present::Dir => !file_like,
            Present::Other => true,
        })
    };
    if !has("HEAD", true)? {
        return Ok(false);
    }
    Ok(has("commondir", true)? || (has("objects", false)? && has("refs", false)?))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;
    use std::fs;

    fn open(path: &std::path::Path) -> File {
        File::open(path).unwrap()
    }

    #[test]
    fn heads_objects_refs_or_a_commondir_make_a_git_directory() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        assert!(!is_git_directory(&open(d), None).unwrap());
        fs::write(d.join("HEAD"), "ref: refs/heads/main\n").unwrap();
        assert!(!is_git_directory(&open(d), None).unwrap());
        fs::create_dir(d.join("objects")).unwrap();
        assert!(!is_git_directory(&open(d), None).unwrap());
        assert!(is_git_directory(&open(d), Some(OsStr::new("refs"))).unwrap());
        fs::create_dir(d.join("refs")).unwrap();
        assert!(is_git_directory(&open(d), None).unwrap());
        fs::remove_file(d.join("HEAD")).unwrap();
        assert!(!is_git_directory(&open(d), None).unwrap());
        assert!(is_git_directory(&open(d), Some(OsStr::new("HEAD"))).unwrap());
        fs::create_dir(d.join("HEAD")).unwrap();
        assert!(!is_git_directory(&open(d), None).unwrap());

        let wt = tempfile::tempdir().unwrap();
        fs::write(wt.path().join("HEAD"), "x").unwrap();
        assert!(!is_git_directory(&open(wt.path()), None).unwrap());
        std::os::unix::fs::symlink("../elsewhere", wt.path().join("commondir")).unwrap();
        assert!(is_git_directory(&open(wt.path()), None).unwrap());
    }
}

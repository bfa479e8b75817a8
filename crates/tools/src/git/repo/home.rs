//! Whether a discovered git directory belongs to the work tree of the
//! root, and holds only what a git directory holds. A `.git` file (or
//! link) leading out of the work tree is followed only when its target
//! points back at it: a linked worktree's `gitdir` file names this work
//! tree's `.git`, a submodule's `core.worktree` names this work tree. A
//! `commondir` is followed only in a linked worktree's own layout
//! (`<common>/worktrees/<name>`, pointing back). Every alternate object
//! directory must lie inside the work tree or the git directories. No
//! entry of the git directories that git reads through the shadow (the
//! top level, `objects`, `refs`, `logs`) may be a link, FIFO, socket or
//! device.
//!
//! It must never open anything but through [`super::open`], and never run
//! git (the repository is not trusted yet).

use std::fs;
use std::path::{Path, PathBuf};

use super::open::{odd_file_type, odd_kind, read_text, refused};
use super::{Repository, RepositoryError};

/// The largest `gitdir`, `config` or `alternates` file read here.
const POINTER_BYTES: u64 = 256 * 1024;
/// How deep alternates may chain (git's own limit).
const ALTERNATE_DEPTH: usize = 5;
/// The most entries looked at under `refs` and `logs` together.
const WALK_BUDGET: usize = 1_000_000;

/// Checks `repo` as the module doc says.
pub(super) fn check(repo: &Repository) -> Result<(), RepositoryError> {
    let top = &repo.top;
    if let Some(common) = &repo.common_dir {
        let layout = repo.git_dir.parent() == Some(common.join("worktrees").as_path());
        if !layout || !gitdir_points_back(&repo.git_dir, top)? {
            return Err(elsewhere(&repo.git_dir.join("commondir"), common, top));
        }
    } else if !repo.git_dir.starts_with(top) && !worktree_points_back(&repo.git_dir, top)? {
        return Err(elsewhere(&top.join(".git"), &repo.git_dir, top));
    }
    let mut budget = WALK_BUDGET;
    let mut dirs = vec![repo.git_dir.as_path()];
    dirs.extend(repo.common_dir.as_deref());
    for dir in &dirs {
        check_git_dir(dir, &mut budget)?;
    }
    let mut trusted = vec![top.as_path()];
    trusted.extend(&dirs);
    check_alternates(&repo.config_dir().join("objects"), &trusted, 0)
}

fn elsewhere(pointer: &Path, target: &Path, top: &Path) -> RepositoryError {
    RepositoryError::Elsewhere {
        pointer: pointer.display().to_string(),
        target: target.display().to_string(),
        top: top.display().to_string(),
    }
}

/// A linked worktree's back-pointer: `<git_dir>/gitdir` names `top/.git`.
fn gitdir_points_back(git_dir: &Path, top: &Path) -> Result<bool, RepositoryError> {
    let Some(text) = read_text(&git_dir.join("gitdir"), POINTER_BYTES)? else {
        return Ok(false);
    };
    let named = git_dir.join(text.trim_end_matches(['\n', '\r']));
    Ok(fs::canonicalize(named).is_ok_and(|named| named == top.join(".git")))
}

/// A linked worktree's back-pointer, or a submodule's: its config's
/// `core.worktree` names `top`.
fn worktree_points_back(git_dir: &Path, top: &Path) -> Result<bool, RepositoryError> {
    if gitdir_points_back(git_dir, top)? {
        return Ok(true);
    }
    let Some(config) = read_text(&git_dir.join("config"), POINTER_BYTES)? else {
        return Ok(false);
    };
    Ok(core_worktree(&config)
        .and_then(|named| fs::canonicalize(git_dir.join(named)).ok())
        .is_some_and(|named| named == top))
}

/// The last `core.worktree` of a config's text, read as plain data: a
/// `[core]` section, a `worktree = VALUE` line (quotes around the whole
/// value taken off). Anything fancier is not understood, so not followed.
pub(in crate::git) fn core_worktree(config: &str) -> Option<PathBuf> {
    let mut in_core = false;
    let mut found = None;
    for line in config.lines().map(str::trim) {
        if line.starts_with('[') {
            let name = line.trim_start_matches('[').split(']').next().unwrap_or("");
            in_core = name.trim().eq_ignore_ascii_case("core");
        } else if in_core
            && let Some((key, value)) = line.split_once('=')
            && key.trim().eq_ignore_ascii_case("worktree")
        {
            let value = value.trim();
            let value = value
                .strip_prefix('"')
                .and_then(|v| v.strip_suffix('"'))
                .unwrap_or(value);
            found = (!value.is_empty() && !value.contains(['"', '\\', ';', '#']))
                .then(|| PathBuf::from(value));
        }
    }
    found
}

/// The entries git reads through the shadow: each a regular file or a
/// directory, no link (which could lead anywhere), at the top level, in
/// `objects` and two levels of it, and all through `refs` and `logs`.
fn check_git_dir(dir: &Path, budget: &mut usize) -> Result<(), RepositoryError> {
    for (name, _) in plain_entries(dir)? {
        match name.to_str() {
            Some("objects") => check_objects(&dir.join("objects"))?,
            Some("refs" | "logs") => walk(&dir.join(&name), budget)?,
            _ => {}
        }
    }
    Ok(())
}

/// An object directory: its entries, and those of its subdirectories
/// (`pack`, `info`, the loose fan-out), plain.
fn check_objects(objects: &Path) -> Result<(), RepositoryError> {
    for (name, is_dir) in plain_entries(objects)? {
        if is_dir {
            plain_entries(&objects.join(name))?;
        }
    }
    Ok(())
}

/// Every entry below `dir`, plain, within `budget`.
fn walk(dir: &Path, budget: &mut usize) -> Result<(), RepositoryError> {
    let mut todo = vec![dir.to_path_buf()];
    while let Some(dir) = todo.pop() {
        for (name, is_dir) in plain_entries(&dir)? {
            *budget = budget
                .checked_sub(1)
                .ok_or_else(|| RepositoryError::Unreadable {
                    path: dir.display().to_string(),
                    reason: format!("more than {WALK_BUDGET} refs and logs"),
                })?;
            if is_dir {
                todo.push(dir.join(name));
            }
        }
    }
    Ok(())
}

/// The names of `dir`'s entries and whether each is a directory; an error
/// for a link, FIFO, socket or device among them.
fn plain_entries(dir: &Path) -> Result<Vec<(std::ffi::OsString, bool)>, RepositoryError> {
    let unreadable = |error: std::io::Error| RepositoryError::Unreadable {
        path: dir.display().to_string(),
        reason: error.to_string(),
    };
    let meta = fs::symlink_metadata(dir).map_err(unreadable)?;
    if let Some(kind) = odd_kind(&meta) {
        return Err(refused(dir, kind));
    }
    let mut entries = Vec::new();
    for entry in fs::read_dir(dir).map_err(unreadable)? {
        let entry = entry.map_err(unreadable)?;
        // The type the listing carries (a `stat` only where the file
        // system leaves it out): one system call per loose object made
        // this walk the largest cost of a run's start in a busy checkout.
        let kind = entry.file_type().map_err(unreadable)?;
        if let Some(odd) = odd_file_type(kind) {
            return Err(refused(&entry.path(), odd));
        }
        entries.push((entry.file_name(), kind.is_dir()));
    }
    Ok(entries)
}

/// Each directory `objects/info/alternates` names (and each they name, to
/// git's depth) lies inside one of `trusted` and is plain.
fn check_alternates(
    objects: &Path,
    trusted: &[&Path],
    depth: usize,
) -> Result<(), RepositoryError> {
    let file = objects.join("info/alternates");
    let Some(text) = read_text(&file, POINTER_BYTES)? else {
        return Ok(());
    };
    for line in text.lines() {
        let line = line.trim_end_matches('\r');
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let target = fs::canonicalize(objects.join(line));
        let inside = match &target {
            Ok(target) => !line.starts_with('"') && trusted.iter().any(|t| target.starts_with(t)),
            Err(_) => false,
        };
        if !inside || depth + 1 >= ALTERNATE_DEPTH {
            return Err(RepositoryError::Alternate {
                file: file.display().to_string(),
                line: line.chars().take(200).collect(),
            });
        }
        if let Ok(target) = target {
            check_objects(&target)?;
            check_alternates(&target, trusted, depth + 1)?;
        }
    }
    Ok(())
}

//! The repository that contains the root, found without running git, and
//! the private "shadow" git directory each call runs git against.
//!
//! A repository's own config (`.git/config`, the files it includes, a
//! worktree's `config.worktree`) can name programs git runs on its own
//! (`core.fsmonitor`, `diff.external`, textconv and filter drivers, …). So
//! git is never pointed at the real git directory: it gets a temporary
//! directory whose entries are symlinks to the real one's objects, refs,
//! index and logs, but whose `config` leash writes itself, holding only
//! keys that describe the repository's format and never name a program.
//! The real config is read as data only (`git config --file … --list`,
//! includes off) to copy those keys.
//!
//! Discovery opens nothing but the regular files and directories it
//! expects ([`open`]), and offers the repository only when it is the root's
//! own ([`home`]). The index is copied into the shadow, so a view that
//! refreshes it (`status`, `diff`) rewrites the copy, never the real one.
//!
//! This module must never let git read a config file the repository wrote,
//! nor write under the real git directory.

mod error;
mod home;
mod layout;
mod open;

use std::fs;
use std::io;
use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};

pub use self::error::RepositoryError;
#[cfg(test)]
pub(super) use self::home::core_worktree;
pub use self::layout::Repository;
use self::open::{odd_kind, read_regular, read_text, refused};

/// The real git directory's entries the shadow never links: the config
/// files (written by leash instead), the hooks, `HEAD` (copied: git refuses
/// a `HEAD` symlink that does not point into `refs/`), the index (copied:
/// git rewrites it when it refreshes), `commondir`
/// (rewritten to the shadow's own common directory), and the git
/// directories of other worktrees and of submodules (every view ignores
/// submodules).
const NOT_LINKED: [&str; 9] = [
    "config",
    "index",
    "index.lock",
    "config.worktree",
    "hooks",
    "HEAD",
    "commondir",
    "worktrees",
    "modules",
];

/// The config keys copied from the real config: the repository's format
/// (without which git cannot read it) and the core settings that change
/// what `status` and `diff` report. Only ever values, never a program.
const COPIED_CORE_KEYS: [&str; 11] = [
    "core.repositoryformatversion",
    "core.filemode",
    "core.ignorecase",
    "core.symlinks",
    "core.autocrlf",
    "core.eol",
    "core.precomposeunicode",
    "core.checkstat",
    "core.trustctime",
    "core.sparsecheckout",
    "core.sparsecheckoutcone",
];

/// The largest `HEAD`, `commondir` or `.git` file leash reads.
const SMALL_FILE_BYTES: u64 = 4096;
/// The largest index copied into the shadow.
pub(super) const INDEX_BYTES: u64 = 256 * 1024 * 1024;
/// The largest real config read (as data) to copy its format keys.
pub(super) const CONFIG_BYTES: u64 = 256 * 1024;

impl Repository {
    /// The repository whose work tree contains `root` (canonical), found
    /// as git finds it, by looking for `.git` in `root` and each directory
    /// above; `None` when there is none, or when `root` lies inside a git
    /// directory rather than a work tree. `GIT_DIR` and the like are not
    /// looked at: the tool shows the repository of the root, nothing else.
    pub fn discover(root: &Path) -> Result<Option<Repository>, RepositoryError> {
        for dir in root.ancestors() {
            let dot_git = dir.join(".git");
            let Ok(meta) = fs::symlink_metadata(&dot_git) else {
                continue;
            };
            if root.starts_with(&dot_git) {
                return Ok(None);
            }
            let git_dir = if meta.is_dir() {
                dot_git.clone()
            } else if meta.is_file() {
                read_git_file(&dot_git)?
            } else if meta.file_type().is_symlink() {
                // Followed like a `.git` file, then checked like one.
                dot_git.clone()
            } else {
                return Err(refused(&dot_git, odd_kind(&meta).unwrap_or("not a file")));
            };
            let git_dir = fs::canonicalize(&git_dir).map_err(|e| bad_git_file(&dot_git, e))?;
            match fs::symlink_metadata(git_dir.join("HEAD")) {
                Ok(head) if !head.is_file() => {
                    let kind = odd_kind(&head).unwrap_or("a directory");
                    return Err(refused(&git_dir.join("HEAD"), kind));
                }
                Ok(_) => {}
                Err(_) => continue,
            }
            let common_dir = match read_text(&git_dir.join("commondir"), SMALL_FILE_BYTES)? {
                Some(text) => {
                    let common = git_dir.join(text.trim_end_matches(['\n', '\r']));
                    Some(fs::canonicalize(common).map_err(|e| bad_git_file(&dot_git, e))?)
                }
                None => None,
            };
            if !looks_like_git_dir(&git_dir, common_dir.as_deref().unwrap_or(&git_dir)) {
                continue;
            }
            let repository = Repository {
                top: dir.to_path_buf(),
                git_dir,
                common_dir,
            };
            home::check(&repository)?;
            return Ok(Some(repository));
        }
        Ok(None)
    }
    /// Checks again what [`Repository::discover`] checked of the git
    /// directories (no link, FIFO or device where git reads; alternates
    /// inside): a confined command may have planted one since.
    pub(super) fn recheck(&self) -> Result<(), RepositoryError> {
        home::check(self)
    }

    /// The work tree's top-level directory.
    pub fn top(&self) -> &Path {
        &self.top
    }

    /// Builds the shadow git directory under `scratch` (an empty private
    /// directory) and returns its path. `config` is the real config's
    /// `git config --list -z` text, from which the format keys are copied.
    pub(super) fn shadow(&self, scratch: &Path, config: &[u8]) -> Result<PathBuf, RepositoryError> {
        let shadow = scratch.join("git");
        let build = || -> io::Result<()> {
            fs::create_dir(&shadow)?;
            link_entries(&self.git_dir, &shadow)?;
            let head = read_regular(&self.git_dir.join("HEAD"), SMALL_FILE_BYTES)
                .map_err(io::Error::other)?
                .unwrap_or_default();
            fs::write(shadow.join("HEAD"), head)?;
            // git rewrites the index it refreshes: a private copy. It keeps
            // the original's modification time: git re-reads a file whose
            // recorded time is not older than the index's ("racy git"), and
            // a fresh copy would hide an edit made in the same clock tick
            // as the commit, whose size and time match the index entry.
            let original = self.git_dir.join("index");
            if let Some(index) = read_regular(&original, INDEX_BYTES).map_err(io::Error::other)? {
                let copy = shadow.join("index");
                fs::write(&copy, index)?;
                if let Ok(modified) = fs::symlink_metadata(&original).and_then(|m| m.modified()) {
                    fs::File::options()
                        .write(true)
                        .open(&copy)?
                        .set_modified(modified)?;
                }
            }
            let config_text = shadow_config(config);
            match &self.common_dir {
                Some(common) => {
                    let shadow_common = scratch.join("common");
                    fs::create_dir(&shadow_common)?;
                    link_entries(common, &shadow_common)?;
                    fs::write(shadow_common.join("config"), config_text)?;
                    let mut target = shadow_common.into_os_string().into_encoded_bytes();
                    target.push(b'\n');
                    fs::write(shadow.join("commondir"), target)
                }
                None => fs::write(shadow.join("config"), config_text),
            }
        };
        build().map_err(RepositoryError::Shadow)?;
        Ok(shadow)
    }

    /// The real config file's bytes (empty when there is none), to be
    /// read only as data by `git config --file`.
    pub(super) fn config_bytes(&self) -> Result<Vec<u8>, RepositoryError> {
        Ok(read_regular(&self.config_dir().join("config"), CONFIG_BYTES)?.unwrap_or_default())
    }
}

/// Symlinks every entry of `real` into `shadow`, but those in [`NOT_LINKED`].
fn link_entries(real: &Path, shadow: &Path) -> io::Result<()> {
    for entry in fs::read_dir(real)? {
        let entry = entry?;
        let name = entry.file_name();
        if NOT_LINKED.iter().any(|skip| name == *skip) {
            continue;
        }
        symlink(entry.path(), shadow.join(&name))?;
    }
    Ok(())
}

/// The shadow's config: the copied keys of `listed` (`git config --list
/// -z` output: `key\nvalue\0` records), each value a plain word, then the
/// settings leash insists on.
pub(super) fn shadow_config(listed: &[u8]) -> String {
    let mut core = Vec::new();
    let mut extensions = Vec::new();
    for record in listed.split(|&b| b == 0) {
        let Ok(record) = std::str::from_utf8(record) else {
            continue;
        };
        let (key, value) = record.split_once('\n').unwrap_or((record, "true"));
        let key = key.to_ascii_lowercase();
        if !plain_word(value) {
            continue;
        }
        if COPIED_CORE_KEYS.contains(&key.as_str()) {
            core.push((key["core.".len()..].to_owned(), value.to_owned()));
        } else if let Some(name) = key.strip_prefix("extensions.")
            && plain_word(name)
            && !name.contains('.')
        {
            extensions.push((name.to_owned(), value.to_owned()));
        }
    }
    let mut text = String::from("[core]\n\tbare = false\n");
    for (key, value) in core.iter().filter(|(key, _)| key != "bare") {
        text.push_str(&format!("\t{key} = {value}\n"));
    }
    if !extensions.is_empty() {
        text.push_str("[extensions]\n");
        for (key, value) in &extensions {
            text.push_str(&format!("\t{key} = {value}\n"));
        }
    }
    text
}

/// A value that needs no quoting and cannot be read as anything but a
/// word: letters, digits, `.`, `_`, `-`.
fn plain_word(value: &str) -> bool {
    !value.is_empty()
        && value.len() <= 64
        && value
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'))
}

/// The git directory a `.git` file names (`gitdir: PATH`, relative to the
/// file's directory).
fn read_git_file(dot_git: &Path) -> Result<PathBuf, RepositoryError> {
    let text = read_text(dot_git, SMALL_FILE_BYTES)?.unwrap_or_default();
    let Some(target) = text.lines().next().and_then(|l| l.strip_prefix("gitdir: ")) else {
        return Err(RepositoryError::BadGitFile {
            path: dot_git.display().to_string(),
            reason: "it does not start with 'gitdir: '".to_owned(),
        });
    };
    let base = dot_git.parent().unwrap_or(Path::new("/"));
    Ok(base.join(target.trim_end()))
}

/// What git itself asks of a git directory: `HEAD`, and `objects` and
/// `refs` in its common directory.
fn looks_like_git_dir(dir: &Path, common: &Path) -> bool {
    dir.join("HEAD").is_file() && common.join("objects").is_dir() && common.join("refs").is_dir()
}

fn bad_git_file(path: &Path, error: io::Error) -> RepositoryError {
    RepositoryError::BadGitFile {
        path: path.display().to_string(),
        reason: error.to_string(),
    }
}

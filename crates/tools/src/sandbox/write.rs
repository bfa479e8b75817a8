//! Writing under the root: the one place a file is created or replaced
//! (`write_file`, `edit_file`).
//!
//! A path is resolved by the readers' walk (no `..`, no symlink out of the
//! root, a symlink inside followed to what it names), then the directory
//! that will hold the file is opened once and verified like an opened file
//! (same inode as resolved, and the kernel's own path of the descriptor
//! inside the root). Everything after that is done *relative to that
//! descriptor* (`openat`, `mkdirat`, `renameat`, `unlinkat`): a directory
//! on the way swapped for a symlink afterwards cannot redirect a write, as
//! no path is walked again. The new bytes go to a temporary file created
//! with `O_EXCL | O_NOFOLLOW` under a name from the kernel's random source,
//! are `fsync`ed, and are renamed over the target: a reader sees the old
//! file or the new one, never a half-written one, and a failed write
//! leaves the old file as it was.
//!
//! Refused: dotenv files (as the readers refuse them), files named like
//! private keys or credential stores ([`refused_name`]), anything under a
//! `.git` directory or a directory git would take for a git directory
//! whatever its name (`gitdir`: checked on each directory descriptor from
//! the root down, since hooks and config there run programs), a write that
//! would turn a directory into one, directories,
//! FIFOs, sockets and devices, and a target that is a symlink when the
//! directory is opened (one that pointed out of the root was already
//! refused by the walk; one that appears later is a race).

use std::ffi::{OsStr, OsString};
use std::fs::{self, File, Metadata};
use std::io::{self, Read, Write};
use std::os::fd::OwnedFd;
use std::os::unix::fs::MetadataExt;
use std::path::{Component, Path, PathBuf};

use rustix::fs::{AtFlags, FileType, Mode, OFlags};
use rustix::io::Errno;
use tokio_util::sync::CancellationToken;

use super::resolve::Missing;
use super::{Sandbox, SandboxError, descriptor_target, identity, shown_path, under_dot_git};

mod error;
mod gitdir;
mod names;
pub mod temp;

pub use error::WriteError;
use names::check_name;
pub use names::refused_name;

use temp::Temp;
pub use temp::remove_every_temp_file;

/// The most bytes one `write_file` may write, and the most an edit may
/// make a file.
pub const MAX_WRITE_BYTES: usize = 16 * 1024 * 1024;
/// The largest existing file `edit_file` edits or `write_file` replaces
/// (it is read whole, to replace text in it and to show a diff).
pub const MAX_EDIT_BYTES: usize = 4 * 1024 * 1024;

/// A file under the root about to be written: the directory that holds it
/// (open, verified inside the root), its name there, and what is there now.
#[derive(Debug)]
pub(crate) struct WriteTarget {
    dir: File,
    name: OsString,
    relative: String,
    shown: String,
    existing: Option<(File, Metadata)>,
}

impl Sandbox {
    /// Resolves a model-given path for writing and opens the directory
    /// that holds it. With `create_dirs`, directories missing on the way
    /// are created (inside the verified directory, never through a
    /// symlink); without, a missing one is an error.
    pub(crate) fn prepare_write(
        &self,
        path: &str,
        create_dirs: bool,
    ) -> Result<WriteTarget, WriteError> {
        let shown = shown_path(path);
        let relative = self.check_path(path)?;
        self.check_root()?;
        let names: Vec<&OsStr> = relative
            .components()
            .filter_map(|c| match c {
                Component::Normal(name) => Some(name),
                _ => None,
            })
            .collect();
        let Some((last, parents)) = names.split_last() else {
            return Err(WriteError::NotAFile { path: shown });
        };
        if path.ends_with('/') {
            return Err(WriteError::NotAFile { path: shown });
        }
        check_name(last, &shown)?;
        // The file itself when it exists (a symlink inside the root is
        // followed to what it names), else the deepest directory that does.
        let (dir_real, missing, name): (PathBuf, Vec<&OsStr>, OsString) =
            match self.walk(path, &relative, Missing::Fail) {
                Ok(real) => {
                    let (Some(dir), Some(name)) = (real.parent(), real.file_name()) else {
                        return Err(WriteError::Directory { path: shown });
                    };
                    if !real.starts_with(&self.root) || real == self.root {
                        return Err(WriteError::Directory { path: shown });
                    }
                    (dir.to_path_buf(), Vec::new(), name.to_os_string())
                }
                Err(SandboxError::NotFound { .. }) => {
                    let mut found = None;
                    for depth in (0..=parents.len()).rev() {
                        let prefix: PathBuf = parents[..depth].iter().collect();
                        match self.walk(path, &prefix, Missing::Fail) {
                            Ok(real) => {
                                found = Some((real, parents[depth..].to_vec()));
                                break;
                            }
                            Err(SandboxError::NotFound { .. }) => continue,
                            Err(error) => return Err(error.into()),
                        }
                    }
                    let Some((dir, missing)) = found else {
                        return Err(WriteError::NoParent { path: shown });
                    };
                    (dir, missing, last.to_os_string())
                }
                Err(error) => return Err(error.into()),
            };
        check_name(&name, &shown)?;
        let inside = dir_real.strip_prefix(&self.root).unwrap_or(Path::new(""));
        let mut relative_real: PathBuf = inside.to_path_buf();
        relative_real.extend(missing.iter());
        relative_real.push(&name);
        if under_dot_git(&relative_real) {
            return Err(WriteError::GitDir { path: shown });
        }
        if !missing.is_empty() && !create_dirs {
            return Err(WriteError::NoParent { path: shown });
        }
        let mut dir = self.open_dir(inside, &dir_real, &shown)?;
        for part in missing {
            refuse_git_directory(&dir, Some(part), &shown)?;
            dir = make_dir(&dir, part).map_err(|source| io_error(&shown, source))?;
            refuse_git_directory(&dir, None, &shown)?;
        }
        refuse_git_directory(&dir, Some(&name), &shown)?;
        let existing = existing_file(&dir, &name, &shown)?;
        Ok(WriteTarget {
            dir,
            name,
            relative: relative_real.to_string_lossy().into_owned(),
            shown,
            existing,
        })
    }

    /// Opens a resolved directory (`inside`, relative to the root; `real`,
    /// canonical) one name at a time from the root's own descriptor, never
    /// through a symlink, and refuses it when it or any directory on the
    /// way is a git directory by structure ([`gitdir`]). The handle is
    /// then checked as `verify_opened` checks a file: the one resolved,
    /// inside the root. Every later step is relative to it.
    fn open_dir(&self, inside: &Path, real: &Path, shown: &str) -> Result<File, WriteError> {
        let before = fs::symlink_metadata(real).map_err(|source| io_error(shown, source))?;
        if !before.file_type().is_dir() {
            return Err(WriteError::NoParent {
                path: shown.to_owned(),
            });
        }
        let changed = || WriteError::Changed {
            path: shown.to_owned(),
        };
        let fd = rustix::fs::open(&self.root, dir_flags(), Mode::empty())
            .map_err(|errno| io_error(shown, errno.into()))?;
        let mut dir = File::from(fd);
        let root = dir.metadata().map_err(|source| io_error(shown, source))?;
        if identity(&root) != self.identity {
            return Err(SandboxError::RootChanged.into());
        }
        refuse_git_directory(&dir, None, shown)?;
        for component in inside.components() {
            let Component::Normal(name) = component else {
                return Err(changed());
            };
            let fd =
                rustix::fs::openat(&dir, name, dir_flags(), Mode::empty()).map_err(|errno| {
                    match errno {
                        Errno::LOOP | Errno::NOTDIR => changed(),
                        other => io_error(shown, other.into()),
                    }
                })?;
            dir = File::from(fd);
            refuse_git_directory(&dir, None, shown)?;
        }
        let opened = dir.metadata().map_err(|source| io_error(shown, source))?;
        if identity(&opened) != identity(&before) {
            return Err(changed());
        }
        if let Some(at) = descriptor_target(&dir)
            && !at.starts_with(&self.root)
        {
            return Err(changed());
        }
        Ok(dir)
    }

    /// Whether a directory opened by `prepare_write` still lies inside the
    /// root (where the kernel can say).
    fn still_inside(&self, dir: &File) -> bool {
        descriptor_target(dir).is_none_or(|at| at.starts_with(&self.root))
    }
}

impl WriteTarget {
    /// The file's path relative to the root, as results and the change
    /// list show it.
    pub(crate) fn relative(&self) -> &str {
        &self.relative
    }

    /// The model's path as error messages repeat it.
    pub(crate) fn shown(&self) -> &str {
        &self.shown
    }

    /// The bytes of the file there now (`None` when there is none), at
    /// most `cap` of them: a longer file is an error.
    pub(crate) fn read_existing(&mut self, cap: usize) -> Result<Option<Vec<u8>>, ReadError> {
        let Some((file, meta)) = &mut self.existing else {
            return Ok(None);
        };
        if meta.len() > cap as u64 {
            return Err(ReadError::TooLarge { len: meta.len() });
        }
        let mut bytes = Vec::new();
        file.take(cap as u64 + 1)
            .read_to_end(&mut bytes)
            .map_err(ReadError::Io)?;
        if bytes.len() > cap {
            return Err(ReadError::TooLarge {
                len: bytes.len() as u64,
            });
        }
        Ok(Some(bytes))
    }

    /// Replaces (or creates) the file with `bytes`, atomically: a
    /// temporary file in the same directory, written and `fsync`ed, then
    /// renamed over the name. An existing file's permission bits are kept
    /// (set-user/group-ID dropped); a new file gets the usual `0666` less
    /// the umask. Nothing is replaced once `cancel` fired.
    pub(crate) fn commit(
        &self,
        sandbox: &Sandbox,
        bytes: &[u8],
        cancel: &CancellationToken,
    ) -> Result<(), WriteError> {
        let shown = self.shown.as_str();
        let keep = self
            .existing
            .as_ref()
            .map(|(_, meta)| Mode::from_raw_mode(meta.mode() & 0o1777));
        let (temp, file) =
            Temp::create(&self.dir, keep.is_some()).map_err(|source| io_error(shown, source))?;
        // Dropped unrenamed on every early return: its file goes with it.
        write_synced(file, bytes, keep).map_err(|source| io_error(shown, source))?;
        if cancel.is_cancelled() {
            return Err(WriteError::Cancelled {
                path: shown.to_owned(),
            });
        }
        temp.rename_over(&self.name)
            .map_err(|source| io_error(shown, source))?;
        // The rename is durable once the directory is.
        let _ = rustix::fs::fsync(&self.dir);
        if !sandbox.still_inside(&self.dir) {
            return Err(WriteError::Changed {
                path: shown.to_owned(),
            });
        }
        Ok(())
    }
}

/// Why the file there now could not be read.
#[derive(Debug)]
pub(crate) enum ReadError {
    /// Longer than the cap.
    TooLarge {
        /// Its length in bytes.
        len: u64,
    },
    /// Reading failed.
    Io(io::Error),
}

/// Refuses a directory that is a git directory by structure, or would be
/// one once `adding` exists in it.
fn refuse_git_directory(dir: &File, adding: Option<&OsStr>, shown: &str) -> Result<(), WriteError> {
    match gitdir::is_git_directory(dir, adding) {
        Ok(false) => Ok(()),
        Ok(true) => Err(WriteError::GitLike {
            path: shown.to_owned(),
        }),
        Err(source) => Err(io_error(shown, source)),
    }
}

/// How a directory is opened: never through a final symlink.
fn dir_flags() -> OFlags {
    OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC
}

/// Creates (or finds) the directory `name` in `dir` and opens it, never
/// through a symlink.
fn make_dir(dir: &File, name: &OsStr) -> io::Result<File> {
    match rustix::fs::mkdirat(dir, name, Mode::from_raw_mode(0o777)) {
        Ok(()) | Err(Errno::EXIST) => {}
        Err(errno) => return Err(errno.into()),
    }
    let fd: OwnedFd = rustix::fs::openat(dir, name, dir_flags(), Mode::empty())?;
    Ok(File::from(fd))
}

/// What is at `name` in `dir` now: nothing, or a regular file (opened, so
/// it can be read and its permissions kept). Anything else is refused.
fn existing_file(
    dir: &File,
    name: &OsStr,
    shown: &str,
) -> Result<Option<(File, Metadata)>, WriteError> {
    let stat = match rustix::fs::statat(dir, name, AtFlags::SYMLINK_NOFOLLOW) {
        Ok(stat) => stat,
        Err(Errno::NOENT) => return Ok(None),
        Err(errno) => return Err(io_error(shown, errno.into())),
    };
    let path = shown.to_owned();
    match FileType::from_raw_mode(stat.st_mode) {
        FileType::RegularFile => {}
        FileType::Directory => return Err(WriteError::Directory { path }),
        FileType::Symlink => return Err(WriteError::Symlink { path }),
        _ => return Err(WriteError::Special { path }),
    }
    let flags = OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::NOCTTY;
    let fd =
        rustix::fs::openat(dir, name, flags | OFlags::CLOEXEC, Mode::empty()).map_err(|errno| {
            match errno {
                Errno::LOOP => WriteError::Symlink {
                    path: shown.to_owned(),
                },
                other => io_error(shown, other.into()),
            }
        })?;
    let file = File::from(fd);
    let meta = file.metadata().map_err(|source| io_error(shown, source))?;
    if !meta.file_type().is_file() {
        return Err(WriteError::Special { path });
    }
    Ok(Some((file, meta)))
}

/// Writes and `fsync`s the temporary file; `keep` is an existing file's
/// permission bits, applied before the data is synced.
fn write_synced(mut file: File, bytes: &[u8], keep: Option<Mode>) -> io::Result<()> {
    if let Some(mode) = keep {
        rustix::fs::fchmod(&file, mode)?;
    }
    file.write_all(bytes)?;
    file.sync_all()
}

fn io_error(shown: &str, source: io::Error) -> WriteError {
    match source.kind() {
        io::ErrorKind::NotFound | io::ErrorKind::NotADirectory => WriteError::NoParent {
            path: shown.to_owned(),
        },
        _ => WriteError::Io {
            path: shown.to_owned(),
            source,
        },
    }
}

#[cfg(test)]
mod tests;

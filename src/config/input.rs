//! What leash reads besides argv, as settings: every file a flag names
//! (`--system-file`, `--output-schema`, `--mcp-config`, `--env-file`,
//! `--faux-script`, `--resume`, `--attach`, the config file, the batch's
//! INPUT) goes through [`open_input`], and how stdin is to be treated
//! (read by `run::input`).
//!
//! One way for all (docs/src/security.md "Security and limits"): opened without
//! blocking (a FIFO nobody writes to, or a committed link to `/dev/tty`,
//! must not hold leash in `open` before any timer runs; on Linux with
//! `O_PATH` first, which opens no device at all), judged by `fstat` on
//! the descriptor opened (no race with a swap), read up to a cap (never
//! grown without bound). A regular file is read; `/dev/null`
//! alone is read as empty (how people say "none"); a directory, FIFO,
//! socket or any other device is refused at once. Only the batch's INPUT
//! may be a pipe ([`Accept::FileOrPipe`]), since that is how it is fed.

use std::fs::{File, Metadata};
use std::io::Read;
use std::os::unix::fs::{FileTypeExt, MetadataExt, OpenOptionsExt};
use std::path::Path;

/// How stdin is treated (`--stdin`, `--no-stdin`, or neither).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum StdinMode {
    /// Read a non-terminal stdin, with a grace for an open pipe.
    #[default]
    Auto,
    /// Wait for stdin without a grace (bounded by the deadline).
    Wait,
    /// Never read it.
    Never,
}

/// The most leash reads of a file it is given (`--system-file`,
/// `--output-schema`, `--faux-script`, `--env-file`, the config file): also
/// the stdin cap, so a prompt or script that fits one way fits the other.
pub const FILE_LIMIT: u64 = 16 * 1024 * 1024;

/// What a refused file input is, instead of a regular file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NotAFile {
    /// A directory.
    Directory,
    /// A FIFO, or a pipe reached through `/dev/fd`.
    Pipe,
    /// A socket.
    Socket,
    /// A device other than `/dev/null` (a terminal, `/dev/zero`, a disk).
    Device,
}

impl std::fmt::Display for NotAFile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            NotAFile::Directory => "it is a directory",
            NotAFile::Pipe => "it is a pipe (a FIFO), not a regular file; leash never waits on one here",
            NotAFile::Socket => "it is a socket, not a regular file",
            NotAFile::Device => {
                "it is a device, not a regular file (of the devices only /dev/null is read, as empty)"
            }
        })
    }
}

/// Why a file input could not be read.
#[derive(Debug, thiserror::Error)]
pub enum FileReadError {
    /// It could not be opened or read.
    #[error("{0}")]
    Io(#[from] std::io::Error),
    /// It is no regular file (and not `/dev/null`).
    #[error("{0}")]
    NotAFile(NotAFile),
    /// The file opened is not the one first judged (swapped meanwhile).
    #[error("it changed while it was opened")]
    Changed,
    /// It is larger than its limit ([`FILE_LIMIT`] for most).
    #[error("it is larger than {limit} bytes")]
    TooLarge {
        /// The limit in bytes.
        limit: u64,
    },
    /// It is not UTF-8 text.
    #[error("it is not UTF-8 text")]
    NotUtf8,
}

/// What a file input may be besides a regular file or `/dev/null`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Accept {
    /// Nothing else: every flag's file.
    File,
    /// A pipe too (`leash batch <(…)`, a FIFO): opening it may wait for
    /// its writer, so the caller reads it where a signal still ends the
    /// wait.
    FileOrPipe,
}

/// A file input, opened and judged by its descriptor.
#[derive(Debug)]
pub enum Opened {
    /// A regular file (or, with [`Accept::FileOrPipe`], a pipe).
    File(File),
    /// `/dev/null`: read as empty.
    Null,
}

impl Opened {
    /// The bytes, at most `limit` of them: one byte past it tells a file
    /// that is too large (or endless), which is never read whole.
    pub fn read_to_limit(self, limit: u64) -> Result<Vec<u8>, FileReadError> {
        let Opened::File(file) = self else {
            return Ok(Vec::new());
        };
        let mut bytes = Vec::new();
        file.take(limit.saturating_add(1)).read_to_end(&mut bytes)?;
        if bytes.len() as u64 > limit {
            return Err(FileReadError::TooLarge { limit });
        }
        Ok(bytes)
    }
}

/// Opens a file input the one way: never blocking in `open`, judged by
/// `fstat` on what was opened. See the module's documentation.
///
/// On Linux the path is first opened with `O_PATH`, which opens nothing
/// (a link to a device with side effects on open, `/dev/watchdog`, arms
/// nothing) and waits on no FIFO; only a regular file is then opened for
/// reading, through that descriptor, and checked to be the same file.
pub fn open_input(path: &Path, accept: Accept) -> Result<Opened, FileReadError> {
    let looked = look(path)?;
    let meta = looked.metadata()?;
    let kind = meta.file_type();
    if kind.is_file() {
        let file = read_handle(path, looked)?;
        return same_file(file, &meta);
    }
    if kind.is_char_device() && is_dev_null(&meta) {
        return Ok(Opened::Null);
    }
    if kind.is_fifo() && accept == Accept::FileOrPipe {
        // Opened to wait for a named FIFO's writer (a pipe of the
        // shell's, `/dev/fd/N`, never waits), and checked to be the same.
        return same_file(File::open(path)?, &meta);
    }
    Err(FileReadError::NotAFile(match kind {
        kind if kind.is_dir() => NotAFile::Directory,
        kind if kind.is_fifo() => NotAFile::Pipe,
        kind if kind.is_socket() => NotAFile::Socket,
        _ => NotAFile::Device,
    }))
}

/// The flags every file input is read with: never waiting, never taking
/// a terminal as the controlling one.
fn read_flags() -> i32 {
    let flags = rustix::fs::OFlags::NONBLOCK | rustix::fs::OFlags::NOCTTY;
    i32::try_from(flags.bits()).unwrap_or(0)
}

/// A descriptor to judge `path` by, opening nothing (`O_PATH`).
#[cfg(target_os = "linux")]
fn look(path: &Path) -> std::io::Result<File> {
    use rustix::fs::{Mode, OFlags};
    let fd = rustix::fs::open(path, OFlags::PATH | OFlags::CLOEXEC, Mode::empty())?;
    Ok(File::from(fd))
}

/// Without `O_PATH`: opened without blocking, and judged as it is.
#[cfg(not(target_os = "linux"))]
fn look(path: &Path) -> std::io::Result<File> {
    std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(read_flags())
        .open(path)
}

/// The regular file `looked` found, opened for reading: through the
/// descriptor itself where `/proc` can reopen it, else by its path (and
/// then checked by [`same_file`]).
#[cfg(target_os = "linux")]
fn read_handle(path: &Path, looked: File) -> std::io::Result<File> {
    use std::os::fd::AsRawFd;
    let mut options = std::fs::OpenOptions::new();
    options.read(true).custom_flags(read_flags());
    let through = format!("/proc/self/fd/{}", looked.as_raw_fd());
    options.open(through).or_else(|_| options.open(path))
}

#[cfg(not(target_os = "linux"))]
fn read_handle(_path: &Path, looked: File) -> std::io::Result<File> {
    Ok(looked)
}

/// `file`, if it is the file first judged (`meta`): not one swapped in.
fn same_file(file: File, meta: &Metadata) -> Result<Opened, FileReadError> {
    let opened = file.metadata()?;
    if (opened.dev(), opened.ino()) != (meta.dev(), meta.ino()) {
        return Err(FileReadError::Changed);
    }
    Ok(Opened::File(file))
}

/// Whether `meta` is the null device: the same device as `/dev/null`, so a
/// link to it counts and a file merely named so does not.
fn is_dev_null(meta: &Metadata) -> bool {
    std::fs::metadata("/dev/null")
        .is_ok_and(|null| null.file_type().is_char_device() && null.rdev() == meta.rdev())
}

/// Reads a regular file (or `/dev/null`) of at most `limit` bytes.
pub fn read_file_input(path: &Path, limit: u64) -> Result<Vec<u8>, FileReadError> {
    open_input(path, Accept::File)?.read_to_limit(limit)
}

/// Reads a text file input of at most `limit` bytes ([`read_file_input`]).
pub fn read_text_file(path: &Path, limit: u64) -> Result<String, FileReadError> {
    String::from_utf8(read_file_input(path, limit)?).map_err(|_| FileReadError::NotUtf8)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_input_is_read_only_up_to_its_limit() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f.txt");
        std::fs::write(&path, "12345").unwrap();
        assert_eq!(read_text_file(&path, 5).unwrap(), "12345");
        assert!(matches!(
            read_text_file(&path, 4),
            Err(FileReadError::TooLarge { limit: 4 })
        ));
        assert!(matches!(
            read_text_file(&dir.path().join("none"), 4),
            Err(FileReadError::Io(_))
        ));
    }

    #[test]
    fn only_dev_null_of_the_devices_is_read_and_as_empty() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(read_text_file(Path::new("/dev/null"), 4).unwrap(), "");
        let link = dir.path().join("none.toml");
        std::os::unix::fs::symlink("/dev/null", &link).unwrap();
        assert_eq!(read_text_file(&link, 4).unwrap(), "");
        for device in ["/dev/zero", "/dev/urandom"] {
            let error = read_text_file(Path::new(device), 4).unwrap_err();
            assert!(
                matches!(error, FileReadError::NotAFile(NotAFile::Device)),
                "{device}: {error}"
            );
        }
        assert!(matches!(
            read_text_file(dir.path(), 4),
            Err(FileReadError::NotAFile(NotAFile::Directory))
        ));
    }

    #[test]
    fn a_fifo_is_refused_at_once_unless_a_pipe_is_accepted() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("fifo");
        let made = std::process::Command::new("mkfifo").arg(&fifo).status();
        assert!(made.is_ok_and(|status| status.success()), "mkfifo");
        let started = std::time::Instant::now();
        // Nobody writes to it: a plain open would block forever.
        assert!(matches!(
            read_text_file(&fifo, 4),
            Err(FileReadError::NotAFile(NotAFile::Pipe))
        ));
        assert!(started.elapsed() < std::time::Duration::from_secs(1));
        let writer = {
            let fifo = fifo.clone();
            std::thread::spawn(move || std::fs::write(fifo, "items\n").unwrap())
        };
        let opened = open_input(&fifo, Accept::FileOrPipe).unwrap();
        assert_eq!(opened.read_to_limit(100).unwrap(), b"items\n");
        writer.join().unwrap();
    }
}

//! Reading a file under a checkout's `.git` (or its `.git` file) as
//! discovery and the shadow need it: only a regular file, looked at with
//! `lstat` first, opened non-blocking without following a symlink, checked
//! again with `fstat` on the handle, and read up to a cap.
//!
//! It must never open a FIFO, socket or device (an open or a read of one
//! can block for ever, before the run's timer exists) nor follow a link.

use std::fs::{self, File, FileType, Metadata};
use std::io::{self, Read};
use std::os::unix::fs::{FileTypeExt, MetadataExt, OpenOptionsExt};
use std::path::Path;

use super::RepositoryError;

/// What kind of thing `meta` describes, for an error ("a FIFO"); `None`
/// for a regular file or a directory.
pub(super) fn odd_kind(meta: &Metadata) -> Option<&'static str> {
    odd_file_type(meta.file_type())
}

/// [`odd_kind`] of a file type alone: what a directory listing says of an
/// entry without a `stat` of its own.
pub(super) fn odd_file_type(kind: FileType) -> Option<&'static str> {
    if kind.is_file() || kind.is_dir() {
        None
    } else if kind.is_symlink() {
        Some("a symbolic link")
    } else if kind.is_fifo() {
        Some("a FIFO")
    } else if kind.is_socket() {
        Some("a socket")
    } else {
        Some("a device")
    }
}

/// The refusal of `path`, which is `kind`.
pub(super) fn refused(path: &Path, kind: &str) -> RepositoryError {
    RepositoryError::NotRegular {
        path: path.display().to_string(),
        kind: kind.to_owned(),
    }
}

/// The bytes of the regular file at `path`, at most `cap` of them (more is
/// an error); `None` when nothing is there.
pub(super) fn read_regular(path: &Path, cap: u64) -> Result<Option<Vec<u8>>, RepositoryError> {
    let unreadable = |error: io::Error| RepositoryError::Unreadable {
        path: path.display().to_string(),
        reason: error.to_string(),
    };
    let seen = match fs::symlink_metadata(path) {
        Ok(meta) => meta,
        Err(error) if error.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(error) => return Err(unreadable(error)),
    };
    match odd_kind(&seen) {
        Some(kind) => return Err(refused(path, kind)),
        None if seen.is_dir() => return Err(refused(path, "a directory")),
        None => {}
    }
    let file = fs::OpenOptions::new()
        .read(true)
        .custom_flags(nix::libc::O_NONBLOCK | nix::libc::O_NOFOLLOW)
        .open(path)
        .map_err(unreadable)?;
    let meta = file.metadata().map_err(unreadable)?;
    if !meta.is_file() || meta.ino() != seen.ino() || meta.dev() != seen.dev() {
        // Swapped since the look: whatever it is now, it is not opened.
        return Err(refused(
            path,
            odd_kind(&meta).unwrap_or("replaced while read"),
        ));
    }
    if meta.len() > cap {
        return Err(RepositoryError::TooLarge {
            path: path.display().to_string(),
            limit: cap,
        });
    }
    read_capped(file, cap).map(Some).map_err(unreadable)
}

/// At most `cap` bytes of `file` (a file that grew past it is an error).
fn read_capped(file: File, cap: u64) -> io::Result<Vec<u8>> {
    let mut bytes = Vec::new();
    file.take(cap.saturating_add(1)).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > cap {
        return Err(io::Error::other(format!(
            "it grew past {cap} bytes while read"
        )));
    }
    Ok(bytes)
}

/// [`read_regular`] as text (lossy: only paths and words are read).
pub(super) fn read_text(path: &Path, cap: u64) -> Result<Option<String>, RepositoryError> {
    Ok(read_regular(path, cap)?.map(|bytes| String::from_utf8_lossy(&bytes).into_owned()))
}

//! The file of an item's events in `--events-dir`: `DIR/NAME.jsonl`,
//! where NAME is the id escaped to one harmless file name ([`file_name`])
//! and, past what a file system takes, cut and finished with a hash of
//! the id. An id is data: its file never replaces a file that is not an
//! earlier events file — never the batch's input or results file, never
//! through a link, never a FIFO or device ([`events_file`],
//! [`conflict`], the latter checked for every line before anything runs).
//!
//! *Never* writes outside `--events-dir` or over a file it did not write.

use std::fs::{File, Metadata, OpenOptions};
use std::io::{self, BufRead, BufReader, Read, Seek};
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

/// The longest NAME before `.jsonl`: file systems take 255 bytes a name.
const MAX_NAME_BYTES: usize = 240;

/// What a name past [`MAX_NAME_BYTES`] keeps of the escaped id, before
/// the `~` and the hash.
const KEPT_NAME_BYTES: usize = 180;

/// How much of an existing file is read to tell whether it holds events.
const FIRST_LINE_BYTES: u64 = 64 * 1024;

/// Files no events file may be: the batch's input and its results file,
/// by device and inode (so no spelling of a path gets past it).
#[derive(Debug, Clone, Default)]
pub struct Protected(Vec<(u64, u64)>);

impl Protected {
    /// Protects the file at `path`, when there is one.
    pub fn path(&mut self, path: &Path) {
        if let Ok(meta) = std::fs::metadata(path) {
            self.meta(&meta);
        }
    }

    /// Protects the file `meta` describes.
    pub fn meta(&mut self, meta: &Metadata) {
        self.0.push((meta.dev(), meta.ino()));
    }

    fn holds(&self, meta: &Metadata) -> bool {
        self.0.contains(&(meta.dev(), meta.ino()))
    }
}

/// `open(2)` flags: a link is refused, not followed; a FIFO never blocks.
fn nofollow_nonblock() -> i32 {
    let flags = rustix::fs::OFlags::NOFOLLOW | rustix::fs::OFlags::NONBLOCK;
    i32::try_from(flags.bits()).unwrap_or(0)
}

/// The path of `id`'s events in `dir`.
pub fn events_path(dir: &Path, id: &str) -> PathBuf {
    dir.join(format!("{}.jsonl", file_name(id)))
}

/// The file of `id`'s events in `dir`: created new, or an earlier events
/// file emptied; anything else at its path is refused.
pub fn events_file(dir: &Path, id: &str, protected: &Protected) -> io::Result<(PathBuf, File)> {
    let path = events_path(dir, id);
    let created = OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .custom_flags(nofollow_nonblock())
        .open(&path);
    match created {
        Ok(file) => return Ok((path, file)),
        Err(error) if error.kind() == io::ErrorKind::AlreadyExists => {}
        Err(error) => return Err(error),
    }
    let mut file = OpenOptions::new()
        .read(true)
        .write(true)
        .custom_flags(nofollow_nonblock())
        .open(&path)
        .map_err(|error| refused(&path, &error.to_string()))?;
    if let Some(why) = not_reusable(&file, protected) {
        return Err(refused(&path, &why));
    }
    // Reading the first line moved the offset: emptied without going back,
    // the file would start with that many NUL bytes.
    file.set_len(0)?;
    file.rewind()?;
    Ok((path, file))
}

/// Why `id`'s events file could not be written in `dir` without
/// replacing a file that is not an earlier events file (`None`: it can).
pub fn conflict(dir: &Path, id: &str, protected: &Protected) -> Option<String> {
    let path = events_path(dir, id);
    std::fs::symlink_metadata(&path).ok()?;
    let why = match OpenOptions::new()
        .read(true)
        .custom_flags(nofollow_nonblock())
        .open(&path)
    {
        Ok(file) => not_reusable(&file, protected)?,
        Err(error) => error.to_string(),
    };
    Some(refused(&path, &why).to_string())
}

fn refused(path: &Path, why: &str) -> io::Error {
    io::Error::other(format!(
        "its events file {} already exists and {why}; leash never overwrites it",
        path.display()
    ))
}

/// Why an existing file may not be emptied for events: it is the input
/// or the results file, not a regular file, or its first line is not an
/// event (`None`: empty, or events).
fn not_reusable(file: &File, protected: &Protected) -> Option<String> {
    let meta = match file.metadata() {
        Ok(meta) => meta,
        Err(error) => return Some(error.to_string()),
    };
    if protected.holds(&meta) {
        return Some("is the batch's input or results file".to_owned());
    }
    if !meta.file_type().is_file() {
        return Some("is not a regular file".to_owned());
    }
    let mut first = Vec::new();
    let read = BufReader::new(file)
        .take(FIRST_LINE_BYTES)
        .read_until(b'\n', &mut first);
    if read.is_err() {
        return Some("cannot be read".to_owned());
    }
    let event = serde_json::from_slice::<serde_json::Value>(&first)
        .ok()
        .is_some_and(|value| value.get("type").is_some_and(serde_json::Value::is_string));
    (!first.is_empty() && !event).then(|| "does not hold events".to_owned())
}

/// `id` as one harmless file name: `[A-Za-z0-9_-]` and inner dots kept,
/// every other byte (a separator, `%`, `~`, a leading dot) as `%XX`. Two
/// ids never share a name. A name longer than `MAX_NAME_BYTES` keeps
/// its first `KEPT_NAME_BYTES` and ends in `~` and 32 hex digits of the
/// id's SHA-256 (no escaped name holds a `~`, so it meets no other).
pub fn file_name(id: &str) -> String {
    let mut name = String::with_capacity(id.len());
    for (at, byte) in id.bytes().enumerate() {
        let kept = byte.is_ascii_alphanumeric()
            || byte == b'_'
            || byte == b'-'
            || (byte == b'.' && at > 0);
        match kept {
            true => name.push(char::from(byte)),
            false => name.push_str(&format!("%{byte:02X}")),
        }
    }
    if name.len() <= MAX_NAME_BYTES {
        return name;
    }
    let digest = ring::digest::digest(&ring::digest::SHA256, id.as_bytes());
    let hash: String = digest.as_ref()[..16]
        .iter()
        .map(|byte| format!("{byte:02x}"))
        .collect();
    // The escaped name is ASCII: any cut is on a character boundary.
    format!("{}~{hash}", &name[..KEPT_NAME_BYTES])
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write as _;

    #[test]
    fn an_id_never_names_a_path() {
        assert_eq!(file_name("../../etc/passwd"), "%2E.%2F..%2Fetc%2Fpasswd");
        assert_eq!(file_name(".."), "%2E.");
        assert_eq!(file_name("a%2Fb"), "a%252Fb");
        assert_eq!(file_name("a~b"), "a%7Eb");
        assert_eq!(file_name("item-1.v2"), "item-1.v2");
        assert!(!file_name("a/b\\c\u{0}").contains(['/', '\\', '\0']));
    }

    #[test]
    fn a_long_id_is_cut_and_hashed_within_the_limit() {
        let cjk = "漢".repeat(66); // 198 bytes, 594 escaped
        let name = file_name(&cjk);
        assert!(name.len() + ".jsonl".len() <= 255, "{}", name.len());
        assert!(name.contains('~'));
        let other = format!("{}字", "漢".repeat(65));
        assert_ne!(file_name(&other), name);
        assert_eq!(file_name(&cjk), name);
    }

    #[test]
    fn only_an_empty_or_events_file_is_replaced() {
        let dir = tempfile::tempdir().unwrap();
        let mut protected = Protected::default();
        std::fs::write(dir.path().join("old.jsonl"), "{\"type\":\"agent_start\"}\n").unwrap();
        std::fs::write(dir.path().join("data.jsonl"), "{\"id\":\"x\"}\n").unwrap();
        std::fs::write(dir.path().join("input.jsonl"), "").unwrap();
        protected.path(&dir.path().join("input.jsonl"));
        assert!(conflict(dir.path(), "new", &protected).is_none());
        assert!(conflict(dir.path(), "old", &protected).is_none());
        let data = conflict(dir.path(), "data", &protected).unwrap();
        assert!(data.contains("does not hold events"), "{data}");
        let input = conflict(dir.path(), "input", &protected).unwrap();
        assert!(input.contains("input or results"), "{input}");
        assert!(events_file(dir.path(), "data", &protected).is_err());
        assert!(events_file(dir.path(), "input", &protected).is_err());
        let (_, mut old) = events_file(dir.path(), "old", &protected).unwrap();
        old.write_all(b"{\"type\":\"run_end\"}\n").unwrap();
        assert_eq!(
            std::fs::read_to_string(dir.path().join("old.jsonl")).unwrap(),
            "{\"type\":\"run_end\"}\n",
            "an emptied events file is written from its start"
        );
        assert!(events_file(dir.path(), "new", &protected).is_ok());
        std::os::unix::fs::symlink("data.jsonl", dir.path().join("link.jsonl")).unwrap();
        assert!(conflict(dir.path(), "link", &protected).is_some());
        assert!(events_file(dir.path(), "link", &protected).is_err());
        assert_eq!(
            std::fs::read_to_string(dir.path().join("data.jsonl")).unwrap(),
            "{\"id\":\"x\"}\n"
        );
    }
}

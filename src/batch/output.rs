//! Where a batch's lines go: one whole JSON line per item, flushed at
//! once ([`Lines`]), in input order unless `--unordered` ([`Order`]); the
//! ids `--resume` finds complete in an earlier output ([`resume`]); and
//! the file of an item's events in `--events-dir` ([`events_file`]).
//!
//! *Never* writes part of a line: each line is one buffer handed to one
//! `write_all`, then flushed; and never lets an id name a path (every
//! byte but `[A-Za-z0-9._-]` is escaped, a leading dot too).

use std::collections::{BTreeMap, HashSet};
use std::fs::{File, OpenOptions};
use std::io::{self, BufRead, BufReader, Seek, SeekFrom, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use crate::render::transcript::reader_left;

/// The batch's result lines: stdout, or the `--resume` file.
pub struct Lines {
    out: Box<dyn Write + Send>,
    /// A write failed: no later line is written (one would follow a gap).
    failed: Option<String>,
}

impl Lines {
    /// Lines to `out`.
    pub fn new(out: Box<dyn Write + Send>) -> Self {
        Lines { out, failed: None }
    }

    /// Writes `line` and its newline whole, and flushes it.
    pub fn write(&mut self, line: &str) {
        if self.failed.is_some() {
            return;
        }
        let mut bytes = Vec::with_capacity(line.len() + 1);
        bytes.extend_from_slice(line.as_bytes());
        bytes.push(b'\n');
        if let Err(error) = self.out.write_all(&bytes).and_then(|()| self.out.flush()) {
            self.failed = Some(match reader_left(&error) {
                true => String::new(),
                false => format!("cannot write a result line: {error}"),
            });
        }
    }

    /// Why a write failed (empty: the reader went away), if one did.
    pub fn failure(&self) -> Option<&str> {
        self.failed.as_deref()
    }
}

/// Input order: an item's line waits for every earlier item's; an item
/// that ends without a line (stopped by a signal) lets the later ones go.
pub struct Order {
    ordered: bool,
    next: u64,
    waiting: BTreeMap<u64, Option<String>>,
}

impl Order {
    /// `ordered`: input order; otherwise each line as it comes.
    pub fn new(ordered: bool) -> Self {
        Order {
            ordered,
            next: 0,
            waiting: BTreeMap::new(),
        }
    }

    /// The item at `position` (from 0, in the order the items were
    /// started) ended with `line`; returns the lines now due, in order.
    pub fn done(&mut self, position: u64, line: Option<String>) -> Vec<String> {
        if !self.ordered {
            return line.into_iter().collect();
        }
        self.waiting.insert(position, line);
        let mut due = Vec::new();
        while let Some(line) = self.waiting.remove(&self.next) {
            due.extend(line);
            self.next += 1;
        }
        due
    }

    /// Every line still waiting, in order (the batch is over: the items
    /// before them will never end).
    pub fn rest(&mut self) -> Vec<String> {
        std::mem::take(&mut self.waiting)
            .into_values()
            .flatten()
            .collect()
    }
}

/// `--resume OUT`: the ids of OUT's complete lines, and OUT opened to
/// append. A last line without its newline (a write cut short) is cut off
/// the file first; a missing OUT is created.
pub fn resume(path: &Path) -> io::Result<(HashSet<String>, File)> {
    let mut file = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .custom_flags(nofollow())
        .open(path)?;
    let mut done = HashSet::new();
    let mut complete: u64 = 0;
    let mut reader = BufReader::new(&file);
    let mut line = Vec::new();
    loop {
        line.clear();
        let read = reader.read_until(b'\n', &mut line)?;
        if read == 0 || line.last() != Some(&b'\n') {
            break;
        }
        complete += read as u64;
        let id = serde_json::from_slice::<serde_json::Value>(&line)
            .ok()
            .and_then(|value| value.get("id")?.as_str().map(str::to_owned));
        done.extend(id);
    }
    drop(reader);
    file.set_len(complete)?;
    file.seek(SeekFrom::End(0))?;
    Ok((done, file))
}

/// `open(2)`'s `O_NOFOLLOW`: a link planted where a file is written is
/// refused, not followed.
fn nofollow() -> i32 {
    i32::try_from(rustix::fs::OFlags::NOFOLLOW.bits()).unwrap_or(0)
}

/// The file of `id`'s events in `dir`: `DIR/ESCAPED.jsonl`, created or
/// emptied, never through a link.
pub fn events_file(dir: &Path, id: &str) -> io::Result<(PathBuf, File)> {
    let path = dir.join(format!("{}.jsonl", file_name(id)));
    let file = OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .custom_flags(nofollow())
        .open(&path)?;
    Ok((path, file))
}

/// `id` as one harmless file name: `[A-Za-z0-9_-]` and inner dots kept,
/// every other byte (a separator, `%`, a leading dot) as `%XX`. Two ids
/// never share a name.
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
    name
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_id_never_names_a_path() {
        assert_eq!(file_name("../../etc/passwd"), "%2E.%2F..%2Fetc%2Fpasswd");
        assert_eq!(file_name(".."), "%2E.");
        assert_eq!(file_name("a%2Fb"), "a%252Fb");
        assert_eq!(file_name("item-1.v2"), "item-1.v2");
        assert!(!file_name("a/b\\c\u{0}").contains(['/', '\\', '\0']));
    }

    #[test]
    fn input_order_waits_for_every_earlier_item() {
        let mut order = Order::new(true);
        assert!(order.done(1, Some("b".into())).is_empty());
        assert!(order.done(2, Some("c".into())).is_empty());
        assert_eq!(order.done(0, Some("a".into())), ["a", "b", "c"]);
        assert!(order.done(4, Some("e".into())).is_empty());
        assert!(order.done(3, None).contains(&"e".to_owned()));
        assert!(order.rest().is_empty());
    }

    #[test]
    fn resume_cuts_a_partial_last_line() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("out.jsonl");
        std::fs::write(&path, "{\"id\":\"a\"}\n{\"id\":\"b\"}\n{\"id\":\"c\",\"st").unwrap();
        let (done, mut file) = resume(&path).unwrap();
        assert_eq!(done.len(), 2);
        assert!(done.contains("a") && done.contains("b"));
        file.write_all(b"{\"id\":\"c\"}\n").unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        assert_eq!(text, "{\"id\":\"a\"}\n{\"id\":\"b\"}\n{\"id\":\"c\"}\n");
    }
}

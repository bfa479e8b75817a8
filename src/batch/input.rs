//! The batch's input: one item a line, `{"id", "prompt", "system"?,
//! "root"?, "model"?}` or a plain-text prompt (its 1-based line number is
//! its id). [`spool`] reads it once, through the one reader of file
//! inputs (`config::input`: a regular file, `/dev/null`, or a pipe —
//! `-`, `/dev/stdin`, `<(…)`, a FIFO — never a device), into a private,
//! unlinked temp file; [`validate`] checks that copy, keeping only the
//! ids, and refuses the first bad line before any item runs; [`Items`]
//! runs the same copy. So a pipe is read once, and lines appended to the
//! input while the batch runs are never run unchecked.
//!
//! *Never* holds the whole input: one line at a time, each at most
//! [`MAX_LINE_BYTES`]; and never trusts an id as a file name
//! (`output::events_file` escapes it).

use std::collections::HashSet;
use std::fs::File;
use std::io::{self, BufRead, BufReader, Read, Seek, Write};
use std::path::{Path, PathBuf};

use serde::Deserialize;

use crate::config::input::{Accept, FileReadError, Opened, open_input};

/// The longest line read (a prompt may be long, not endless).
pub const MAX_LINE_BYTES: u64 = 16 * 1024 * 1024;

/// The longest id, in bytes: it names a file in `--events-dir`.
pub const MAX_ID_BYTES: usize = 200;

/// One item of the batch, as a run needs it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Item {
    /// Its place among the items, from 0 (blank lines are no items).
    pub index: u64,
    /// Its id: given, or its line number.
    pub id: String,
    /// The user message.
    pub prompt: String,
    /// Replaces the batch's `--system`.
    pub system: Option<String>,
    /// Replaces the batch's `--root`.
    pub root: Option<String>,
    /// Replaces the batch's `--model`.
    pub model: Option<String>,
}

/// A line of JSON, as written; anything else in it is refused.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Line {
    id: Option<String>,
    prompt: String,
    system: Option<String>,
    root: Option<String>,
    model: Option<String>,
}

/// Why the input cannot be run; each names the line.
#[derive(Debug, thiserror::Error)]
pub enum InputError {
    /// The file could not be opened or read.
    #[error("cannot read the batch input {what}: {source}")]
    Read {
        /// The file, or stdin.
        what: String,
        /// Why.
        source: io::Error,
    },
    /// A line that is no item.
    #[error("batch input line {line}: {problem}")]
    Line {
        /// Its number, from 1.
        line: u64,
        /// What is wrong with it.
        problem: String,
    },
}

/// Where the items come from.
pub enum Source {
    /// A path: a regular file, `/dev/null`, or a pipe (`/dev/stdin`,
    /// `<(…)`, a FIFO).
    File(PathBuf),
    /// Stdin (`-`, or no INPUT).
    Stdin,
}

impl Source {
    /// `-` or nothing is stdin.
    pub fn of(input: Option<&Path>) -> Source {
        match input {
            Some(path) if path != Path::new("-") => Source::File(path.to_owned()),
            _ => Source::Stdin,
        }
    }

    fn name(&self) -> String {
        match self {
            Source::File(path) => path.display().to_string(),
            Source::Stdin => "(stdin)".to_owned(),
        }
    }
}

/// The input, read once: the one private copy that is checked and run.
pub struct Spool {
    file: File,
}

/// Reads the whole input once into a private, unlinked temp file, each
/// line at most [`MAX_LINE_BYTES`]. A pipe is waited for (a FIFO's writer
/// included): call it where a signal still ends the wait.
pub fn spool(source: &Source) -> Result<Spool, InputError> {
    let what = source.name();
    let read_error = |source: io::Error| InputError::Read {
        what: what.clone(),
        source,
    };
    let reader: Box<dyn Read> = match source {
        Source::File(path) => match open_input(path, Accept::FileOrPipe) {
            Ok(Opened::File(file)) => Box::new(file),
            Ok(Opened::Null) => Box::new(io::empty()),
            Err(FileReadError::Io(error)) => return Err(read_error(error)),
            Err(refused) => return Err(read_error(io::Error::other(refused.to_string()))),
        },
        Source::Stdin => Box::new(io::stdin()),
    };
    let mut file = tempfile::tempfile().map_err(read_error)?;
    let mut lines = LineReader::new(reader);
    while let Some((_, bytes)) = lines.next_line().map_err(read_error)? {
        file.write_all(&bytes).map_err(read_error)?;
    }
    file.flush().map_err(read_error)?;
    file.rewind().map_err(read_error)?;
    Ok(Spool { file })
}

/// The input, validated: every id, and the copy to run.
pub struct Validated {
    /// Every item's id, in no order.
    pub ids: HashSet<String>,
    /// How many items the caller's `keep` kept (this run's share).
    pub kept: u64,
    spool: File,
}

/// Checks the whole spooled input: every line is an item (or blank),
/// every id is new. Keeps the ids only.
///
/// `keep` says whether this run takes an item, or why the item may not
/// run at all (the line is then refused, naming it).
pub fn validate(
    spool: Spool,
    keep: &dyn Fn(&Item) -> Result<bool, String>,
) -> Result<Validated, InputError> {
    let read_error = |source: io::Error| InputError::Read {
        what: "the batch input".to_owned(),
        source,
    };
    let Spool { mut file } = spool;
    let mut lines = LineReader::new(&file);
    let mut ids = HashSet::new();
    let (mut count, mut kept) = (0, 0);
    while let Some((number, bytes)) = lines.next_line().map_err(read_error)? {
        let Some(item) = parse_line(number, count, &bytes)? else {
            continue;
        };
        if !ids.insert(item.id.clone()) {
            return Err(InputError::Line {
                line: number,
                problem: format!("the id {:?} is already taken by an earlier line", item.id),
            });
        }
        count += 1;
        let taken = keep(&item).map_err(|problem| InputError::Line {
            line: number,
            problem,
        })?;
        kept += u64::from(taken);
    }
    file.rewind().map_err(read_error)?;
    Ok(Validated {
        ids,
        kept,
        spool: file,
    })
}

impl Validated {
    /// The items of the checked copy, from the start.
    pub fn items(self) -> Items {
        Items {
            lines: LineReader::new(Box::new(self.spool)),
            next_index: 0,
        }
    }
}

/// The items of a validated input, in order, read from its private copy.
pub struct Items {
    lines: LineReader<Box<dyn Read + Send>>,
    next_index: u64,
}

impl Iterator for Items {
    type Item = Result<Item, InputError>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            let (number, bytes) = match self.lines.next_line() {
                Ok(Some(line)) => line,
                Ok(None) => return None,
                Err(source) => {
                    return Some(Err(InputError::Read {
                        what: "the batch input".to_owned(),
                        source,
                    }));
                }
            };
            match parse_line(number, self.next_index, &bytes) {
                Ok(Some(item)) => {
                    self.next_index += 1;
                    return Some(Ok(item));
                }
                Ok(None) => continue,
                Err(error) => return Some(Err(error)),
            }
        }
    }
}

/// Lines of at most [`MAX_LINE_BYTES`], numbered from 1.
struct LineReader<R> {
    reader: BufReader<R>,
    number: u64,
}

impl<R: Read> LineReader<R> {
    fn new(reader: R) -> Self {
        LineReader {
            reader: BufReader::new(reader),
            number: 0,
        }
    }

    /// The next line with its number (its `\n` kept), `None` at the end.
    fn next_line(&mut self) -> io::Result<Option<(u64, Vec<u8>)>> {
        let mut bytes = Vec::new();
        let read = (&mut self.reader)
            .take(MAX_LINE_BYTES + 1)
            .read_until(b'\n', &mut bytes)?;
        if read == 0 {
            return Ok(None);
        }
        self.number += 1;
        if bytes.len() as u64 > MAX_LINE_BYTES {
            return Err(io::Error::other(format!(
                "line {} is longer than {MAX_LINE_BYTES} bytes",
                self.number
            )));
        }
        Ok(Some((self.number, bytes)))
    }
}

/// Line `number`'s item (it would be item `index`), `None` for a blank
/// line, or why it is none.
pub fn parse_line(number: u64, index: u64, bytes: &[u8]) -> Result<Option<Item>, InputError> {
    let refuse = |problem: String| InputError::Line {
        line: number,
        problem,
    };
    let text = std::str::from_utf8(bytes).map_err(|_| refuse("it is not UTF-8 text".into()))?;
    // A byte-order mark (editors on Windows write one) is no prompt text.
    let text = match number {
        1 => text.strip_prefix('\u{feff}').unwrap_or(text),
        _ => text,
    };
    let text = text.strip_suffix('\n').unwrap_or(text);
    let text = text.strip_suffix('\r').unwrap_or(text);
    if text.trim().is_empty() {
        return Ok(None);
    }
    if !text.trim_start().starts_with('{') {
        return Ok(Some(Item {
            index,
            id: number.to_string(),
            prompt: text.to_owned(),
            system: None,
            root: None,
            model: None,
        }));
    }
    let line: Line = serde_json::from_str(text).map_err(|error| refuse(error.to_string()))?;
    let id = line.id.unwrap_or_else(|| number.to_string());
    if id.is_empty() || id.len() > MAX_ID_BYTES || id.chars().any(char::is_control) {
        return Err(refuse(format!(
            "the id must be 1 to {MAX_ID_BYTES} bytes without control characters"
        )));
    }
    if line.prompt.trim().is_empty() {
        return Err(refuse("the prompt is empty".into()));
    }
    for (field, value) in [("root", &line.root), ("model", &line.model)] {
        if value.as_deref().is_some_and(str::is_empty) {
            return Err(refuse(format!("`{field}` is empty")));
        }
    }
    Ok(Some(Item {
        index,
        id,
        prompt: line.prompt,
        system: line.system,
        root: line.root,
        model: line.model,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn item(line: &str) -> Result<Option<Item>, InputError> {
        parse_line(7, 3, line.as_bytes())
    }

    #[test]
    fn a_plain_line_is_a_prompt_named_by_its_line_number() {
        let item = item("explain foo.rs\n").unwrap().unwrap();
        assert_eq!((item.id.as_str(), item.index), ("7", 3));
        assert_eq!(item.prompt, "explain foo.rs");
        assert_eq!(parse_line(1, 0, b"  \r\n").unwrap(), None);
    }

    #[test]
    fn bad_json_lines_name_the_line_and_the_problem() {
        for (line, problem) in [
            (r#"{"id": "a"}"#, "missing field `prompt`"),
            (r#"{"id": 3, "prompt": "x"}"#, "invalid type"),
            (r#"{"prompt": "x", "sytem": "y"}"#, "unknown field `sytem`"),
            (r#"{"prompt": "x""#, "EOF"),
            (r#"{"prompt": " "}"#, "the prompt is empty"),
            (r#"{"id": "", "prompt": "x"}"#, "the id must be"),
            (
                "{\"id\": \"a\\nb\", \"prompt\": \"x\"}",
                "control characters",
            ),
        ] {
            let error = item(line).unwrap_err().to_string();
            assert!(error.starts_with("batch input line 7: "), "{error}");
            assert!(error.contains(problem), "{line}: {error}");
        }
    }

    #[test]
    fn a_leading_byte_order_mark_is_no_text() {
        let line = "\u{feff}{\"id\": \"a\", \"prompt\": \"x\"}\n";
        let item = parse_line(1, 0, line.as_bytes()).unwrap().unwrap();
        assert_eq!((item.id.as_str(), item.prompt.as_str()), ("a", "x"));
        let plain = parse_line(1, 0, "\u{feff}explain\n".as_bytes())
            .unwrap()
            .unwrap();
        assert_eq!(plain.prompt, "explain");
    }
}

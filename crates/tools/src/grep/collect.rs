//! One `grep` call's results: each file's matching lines as the searcher
//! reports them (a [`FileSink`] per file), gathered under one lock in path
//! order with only the first `limit` matches by path kept ([`Collected`]),
//! and rendered as `path:line:text` with the note on what was left off.

use std::collections::BTreeMap;
use std::io;

use grep_searcher::{Searcher, Sink, SinkContext, SinkContextKind, SinkMatch};
use tokio_util::sync::CancellationToken;

use super::{MAX_BYTES, MAX_LIMIT, MAX_LINE_CHARS};

/// One line of a file's results.
#[derive(Debug)]
enum Line {
    Match {
        number: u64,
        text: String,
    },
    Before {
        number: u64,
        text: String,
    },
    After {
        number: u64,
        text: String,
    },
    /// A gap between two groups of context.
    Break,
}

/// The results of one file: its first `limit` matching lines (with their
/// context) and how many it has in all.
#[derive(Debug)]
pub(super) struct FileHits {
    path: String,
    lines: Vec<Line>,
    kept: usize,
    total: u64,
}

/// The searcher's sink for one file.
pub(super) struct FileSink<'a> {
    hits: FileHits,
    limit: usize,
    /// Only count: the file's matches come after the first `limit`.
    count_only: bool,
    /// Past the last kept match and its after-context: only count.
    closed: bool,
    binary: bool,
    cancel: &'a CancellationToken,
}

impl<'a> FileSink<'a> {
    pub(super) fn new(
        path: String,
        limit: usize,
        count_only: bool,
        cancel: &'a CancellationToken,
    ) -> Self {
        FileSink {
            hits: FileHits {
                path,
                lines: Vec::new(),
                kept: 0,
                total: 0,
            },
            limit,
            count_only,
            closed: count_only,
            binary: false,
            cancel,
        }
    }

    /// The file's results, or `None` when it had no match or is binary.
    pub(super) fn finish(self) -> Option<FileHits> {
        (!self.binary && self.hits.total > 0).then_some(self.hits)
    }
}

impl Sink for FileSink<'_> {
    type Error = io::Error;

    fn matched(&mut self, _: &Searcher, found: &SinkMatch<'_>) -> Result<bool, io::Error> {
        if self.cancel.is_cancelled() {
            return Ok(false);
        }
        self.hits.total += 1;
        if !self.closed && self.hits.kept < self.limit {
            self.hits.kept += 1;
            self.hits.lines.push(Line::Match {
                number: found.line_number().unwrap_or(0),
                text: shown_line(found.bytes()),
            });
        } else {
            self.closed = true;
        }
        Ok(true)
    }

    fn context(&mut self, _: &Searcher, line: &SinkContext<'_>) -> Result<bool, io::Error> {
        if self.closed || self.count_only {
            return Ok(true);
        }
        let number = line.line_number().unwrap_or(0);
        let text = shown_line(line.bytes());
        match line.kind() {
            SinkContextKind::After => self.hits.lines.push(Line::After { number, text }),
            _ if self.hits.kept >= self.limit => self.closed = true,
            _ => self.hits.lines.push(Line::Before { number, text }),
        }
        Ok(true)
    }

    fn context_break(&mut self, _: &Searcher) -> Result<bool, io::Error> {
        if self.hits.kept >= self.limit {
            self.closed = true;
        }
        if !self.closed {
            self.hits.lines.push(Line::Break);
        }
        Ok(true)
    }

    fn binary_data(&mut self, _: &Searcher, _offset: u64) -> Result<bool, io::Error> {
        self.binary = true;
        Ok(false)
    }
}

/// A line as shown: without its line ending, lossy UTF-8, control
/// characters but tab escaped, cut after [`MAX_LINE_CHARS`] characters.
fn shown_line(bytes: &[u8]) -> String {
    let bytes = bytes.strip_suffix(b"\n").unwrap_or(bytes);
    let bytes = bytes.strip_suffix(b"\r").unwrap_or(bytes);
    let text = String::from_utf8_lossy(bytes);
    let mut out = String::new();
    for (shown, c) in text.chars().enumerate() {
        if shown == MAX_LINE_CHARS {
            let rest = text.chars().count() - shown;
            out.push_str(&format!(" [… line cut: {rest} more characters]"));
            break;
        }
        if c.is_control() && c != '\t' {
            out.extend(c.escape_default());
        } else {
            out.push(c);
        }
    }
    out
}

/// All files' results: the ones holding the first `limit` matches by path,
/// and the counts of all.
#[derive(Debug)]
pub(super) struct Collected {
    limit: usize,
    files: BTreeMap<String, FileHits>,
    /// Matches held in `files`.
    kept: usize,
    total: u64,
    files_with_matches: u64,
}

impl Collected {
    pub(super) fn new(limit: usize) -> Self {
        Collected {
            limit,
            files: BTreeMap::new(),
            kept: 0,
            total: 0,
            files_with_matches: 0,
        }
    }

    /// Whether the first `limit` matches by path all lie before `path`, so
    /// a file at `path` need only be counted.
    pub(super) fn is_full_before(&self, path: &str) -> bool {
        self.kept >= self.limit
            && self
                .files
                .last_key_value()
                .is_some_and(|(last, _)| path > last.as_str())
    }

    /// Adds one file's results, then drops the files (last by path) that
    /// the first `limit` matches no longer need.
    pub(super) fn add(&mut self, hits: FileHits) {
        self.total += hits.total;
        self.files_with_matches += 1;
        if hits.kept == 0 {
            return;
        }
        self.kept += hits.kept;
        self.files.insert(hits.path.clone(), hits);
        while let Some((_, last)) = self.files.last_key_value() {
            if self.kept - last.kept < self.limit {
                break;
            }
            self.kept -= last.kept;
            self.files.pop_last();
        }
    }

    pub(super) fn total_matches(&self) -> u64 {
        self.total
    }

    pub(super) fn files_with_matches(&self) -> u64 {
        self.files_with_matches
    }
}

/// The text the model reads and how many matches it shows.
pub(super) struct Rendered {
    pub(super) text: String,
    pub(super) shown: u64,
}

/// `path:line:text` per match (`path-line-text` per context line, `--`
/// between groups when `separate`), the first `limit` matches by path, and
/// a note when some were left off.
pub(super) fn render(collected: &Collected, separate: bool) -> Rendered {
    let mut out = String::new();
    let mut budget = collected.limit;
    let mut shown = 0u64;
    let mut cut = false;
    'files: for (path, hits) in &collected.files {
        if budget == 0 {
            break;
        }
        if separate && !out.is_empty() {
            out.push_str("--\n");
        }
        for line in &hits.lines {
            let piece = match line {
                Line::Match { .. } | Line::Before { .. } | Line::Break if budget == 0 => break,
                Line::Match { number, text } => format!("{path}:{number}:{text}\n"),
                Line::Before { number, text } | Line::After { number, text } => {
                    format!("{path}-{number}-{text}\n")
                }
                Line::Break => "--\n".to_owned(),
            };
            if out.len() + piece.len() > MAX_BYTES {
                cut = true;
                break 'files;
            }
            out.push_str(&piece);
            if matches!(line, Line::Match { .. }) {
                budget -= 1;
                shown += 1;
            }
        }
    }
    let more = collected.total.saturating_sub(shown);
    if more == 0 {
        out.pop();
    } else {
        let why = if cut {
            format!("the output reached {} KiB", MAX_BYTES / 1024)
        } else {
            format!("limit {}", collected.limit)
        };
        out.push_str(&format!(
            "\n[{more} more matching line{} not shown ({why}; {} in {} file{} in all). \
             Narrow the search with path, glob or a more specific pattern, or raise limit \
             (at most {MAX_LIMIT}).]",
            if more == 1 { "" } else { "s" },
            collected.total,
            collected.files_with_matches,
            if collected.files_with_matches == 1 {
                ""
            } else {
                "s"
            },
        ));
    }
    Rendered { text: out, shown }
}

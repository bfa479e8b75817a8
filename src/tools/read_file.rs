//! The `read_file` tool (SPEC 2.5): the UTF-8 text of a file under the
//! root, by lines, cut at a fixed size with a note that says how to read on.
//!
//! It must never read outside the root (every path goes through
//! [`Sandbox::open`]), never hold more than one cut's worth of the file in
//! memory (the rest is only streamed to count its lines), and never hand
//! the model bytes that are not UTF-8 text.

use std::io::{self, BufRead, BufReader, Read};
use std::sync::Arc;

use futures::future::BoxFuture;
use serde::Deserialize;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use super::sandbox::{EntryKind, Sandbox, SandboxError, shown_path};
use super::{Blocking, Tool, ToolError, ToolUpdates, run_blocking};
use crate::protocol::{Content, ToolOutput, ToolSpec};

/// The most lines one call shows, whatever `limit` asks for.
pub const MAX_LINES: u64 = 2000;
/// The most bytes of file text one call shows.
pub const MAX_BYTES: usize = 50 * 1024;
/// How much of the start of a file is searched for a NUL byte.
pub const BINARY_SNIFF_BYTES: u64 = 8 * 1024;
/// The read buffer; also how often a long read looks at its cancel token.
const READ_BUFFER_BYTES: usize = 64 * 1024;

/// Why a `read_file` call failed. `Display` is one line for the model.
#[derive(Debug, thiserror::Error)]
pub enum ReadFileError {
    /// The path was refused or could not be opened.
    #[error(transparent)]
    Sandbox(#[from] SandboxError),
    /// The arguments do not fit the schema.
    #[error("invalid arguments: {0}")]
    Args(String),
    /// The path names a directory.
    #[error("'{path}' is a directory; use list_dir")]
    Directory {
        /// The path as the model gave it (shortened).
        path: String,
    },
    /// A NUL byte in the file's start.
    #[error("'{path}' is a binary file (it contains NUL bytes); read_file only reads UTF-8 text")]
    Binary {
        /// The path as the model gave it (shortened).
        path: String,
    },
    /// Bytes that are not UTF-8 in the part to show.
    #[error(
        "'{path}' is not UTF-8 text (invalid bytes in line {line}); read_file only reads UTF-8 text"
    )]
    NotUtf8 {
        /// The path as the model gave it (shortened).
        path: String,
        /// The 1-based line holding the first invalid byte.
        line: u64,
    },
    /// `offset` lies after the last line.
    #[error("offset {offset} is past the end of '{path}', which has {lines} line{s}", s = plural(*lines))]
    PastEnd {
        /// The path as the model gave it (shortened).
        path: String,
        /// The offset asked for.
        offset: u64,
        /// How many lines the file has.
        lines: u64,
    },
    /// Reading failed after the file was opened.
    #[error("reading '{path}' failed: {source}")]
    Io {
        /// The path as the model gave it (shortened).
        path: String,
        /// The operating system's error.
        #[source]
        source: io::Error,
    },
    /// The run was aborted while the file was read.
    #[error("read_file was cancelled")]
    Cancelled,
    /// The blocking task died (a bug, not the model's doing).
    #[error("read_file failed unexpectedly: {0}")]
    Internal(String),
}

/// The `read_file` tool.
#[derive(Debug)]
pub struct ReadFile {
    sandbox: Arc<Sandbox>,
    spec: ToolSpec,
}

/// The arguments, as the schema describes them.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Args {
    path: String,
    #[serde(default)]
    offset: Option<u64>,
    #[serde(default)]
    limit: Option<u64>,
}

/// What stopped the excerpt before the end of the file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Cut {
    /// Nothing: the excerpt reaches the end of the file.
    None,
    /// The caller's `limit`.
    Limit,
    /// [`MAX_LINES`].
    Lines,
    /// [`MAX_BYTES`], between lines.
    Bytes,
    /// The first line alone is longer than [`MAX_BYTES`]; its start is shown.
    LongLine {
        /// The whole line's length in bytes.
        len: u64,
    },
}

/// The part of a file one call shows.
#[derive(Debug, PartialEq)]
struct Excerpt {
    text: String,
    /// 1-based number of the first line shown (0 for an empty file).
    first: u64,
    /// How many lines are shown (a cut long line counts).
    shown: u64,
    /// How many lines the file has.
    total: u64,
    cut: Cut,
}

impl ReadFile {
    /// A `read_file` tool that reads under `sandbox`'s root.
    pub fn new(sandbox: Arc<Sandbox>) -> ReadFile {
        let spec = ToolSpec {
            name: "read_file".to_string(),
            description: format!(
                "Read a UTF-8 text file under the root directory. Shows at most {MAX_LINES} \
                 lines or {} KiB per call; a longer file is cut with a note that says which \
                 offset to read on from. Use list_dir for directories.",
                MAX_BYTES / 1024
            ),
            parameters: json!({
                "type": "object",
                "properties": {
                    "path": {
                        "type": "string",
                        "description": "The file, relative to the root directory."
                    },
                    "offset": {
                        "type": "integer",
                        "minimum": 1,
                        "description": "The first line to show, 1-based (default 1)."
                    },
                    "limit": {
                        "type": "integer",
                        "minimum": 1,
                        "description": format!("The most lines to show (default and cap {MAX_LINES}).")
                    }
                },
                "required": ["path"],
                "additionalProperties": false
            }),
        };
        ReadFile { sandbox, spec }
    }

    async fn run(
        &self,
        args: Value,
        cancel: CancellationToken,
    ) -> Result<ToolOutput, ReadFileError> {
        let args = parse_args(args)?;
        if cancel.is_cancelled() {
            return Err(ReadFileError::Cancelled);
        }
        let sandbox = Arc::clone(&self.sandbox);
        let token = cancel.clone();
        // On cancel the blocking work is left to notice the same token at
        // its next step and end by itself; the call answers at once.
        match run_blocking(move || read_blocking(&sandbox, &args, &token), &cancel).await {
            Blocking::Done(result) => result,
            Blocking::Cancelled => Err(ReadFileError::Cancelled),
            Blocking::Failed(error) => Err(ReadFileError::Internal(error)),
        }
    }
}

impl Tool for ReadFile {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn execute<'a>(
        &'a self,
        _call_id: &'a str,
        args: Value,
        cancel: CancellationToken,
        _updates: ToolUpdates,
    ) -> BoxFuture<'a, Result<ToolOutput, ToolError>> {
        Box::pin(async move { self.run(args, cancel).await.map_err(ToolError::from) })
    }
}

/// Reads the arguments; the loop validated them, but a tool never trusts that.
fn parse_args(args: Value) -> Result<Args, ReadFileError> {
    let args: Args =
        serde_json::from_value(args).map_err(|e| ReadFileError::Args(e.to_string()))?;
    if args.offset == Some(0) {
        return Err(ReadFileError::Args("offset must be 1 or more".to_string()));
    }
    if args.limit == Some(0) {
        return Err(ReadFileError::Args("limit must be 1 or more".to_string()));
    }
    Ok(args)
}

/// The whole call, on a blocking thread: open under the sandbox, read the
/// excerpt, render it.
fn read_blocking(
    sandbox: &Sandbox,
    args: &Args,
    cancel: &CancellationToken,
) -> Result<ToolOutput, ReadFileError> {
    let shown = shown_path(&args.path);
    let opened = sandbox.open(&args.path)?;
    if opened.kind() == EntryKind::Dir {
        return Err(ReadFileError::Directory { path: shown });
    }
    let offset = args.offset.unwrap_or(1);
    let excerpt = read_excerpt(opened.into_file(), &shown, offset, args.limit, cancel)?;
    let details = json!({
        "path": args.path,
        "lines": excerpt.total,
        "firstLine": excerpt.first,
        "lastLine": excerpt.last(),
        "truncated": excerpt.truncated(),
    });
    Ok(ToolOutput {
        content: vec![Content::text(render(&excerpt))],
        details,
        terminate: false,
    })
}

/// Reads lines `offset..` of `source`, at most `limit` (capped by
/// [`MAX_LINES`]) and [`MAX_BYTES`], then streams the rest only to count
/// its lines. `path` is for error messages.
fn read_excerpt<R: Read>(
    mut source: R,
    path: &str,
    offset: u64,
    limit: Option<u64>,
    cancel: &CancellationToken,
) -> Result<Excerpt, ReadFileError> {
    let io_error = |source| ReadFileError::Io {
        path: path.to_string(),
        source,
    };
    let mut head = Vec::new();
    (&mut source)
        .take(BINARY_SNIFF_BYTES)
        .read_to_end(&mut head)
        .map_err(io_error)?;
    if head.contains(&0) {
        return Err(ReadFileError::Binary {
            path: path.to_string(),
        });
    }
    let mut lines = LineReader {
        inner: BufReader::with_capacity(READ_BUFFER_BYTES, io::Cursor::new(head).chain(source)),
        cancel,
        path,
    };
    let mut scratch = Vec::new();
    let mut consumed: u64 = 0;
    while consumed + 1 < offset && lines.next(&mut scratch, 0)?.is_some() {
        consumed += 1;
    }

    let wanted = limit.map_or(MAX_LINES, |l| l.min(MAX_LINES));
    let mut body = Vec::new();
    let mut shown = 0u64;
    let mut cut = Cut::None;
    loop {
        if shown == wanted {
            cut = match limit {
                Some(l) if l <= MAX_LINES => Cut::Limit,
                _ => Cut::Lines,
            };
            break;
        }
        let start = body.len();
        let Some(len) = lines.next(&mut body, MAX_BYTES)? else {
            break;
        };
        consumed += 1;
        if start as u64 + len <= MAX_BYTES as u64 {
            shown += 1;
            continue;
        }
        if shown == 0 {
            shown = 1;
            cut = Cut::LongLine { len };
        } else {
            body.truncate(start);
            cut = Cut::Bytes;
        }
        break;
    }
    while lines.next(&mut scratch, 0)?.is_some() {
        consumed += 1;
    }
    let total = consumed;

    if shown == 0 {
        if offset > 1 {
            return Err(ReadFileError::PastEnd {
                path: path.to_string(),
                offset,
                lines: total,
            });
        }
        return Ok(Excerpt {
            text: String::new(),
            first: 0,
            shown: 0,
            total,
            cut: Cut::None,
        });
    }
    let text = utf8_text(body, path, offset, cut)?;
    Ok(Excerpt {
        text,
        first: offset,
        shown,
        total,
        cut,
    })
}

/// The shown bytes as text. A long line cut at [`MAX_BYTES`] may end in
/// half a character, which is dropped; anything else not UTF-8 (or a NUL
/// past the sniffed start) means the file is not text.
fn utf8_text(body: Vec<u8>, path: &str, first: u64, cut: Cut) -> Result<String, ReadFileError> {
    let not_utf8 = |bytes: &[u8], valid: usize| ReadFileError::NotUtf8 {
        path: path.to_string(),
        line: first + newlines(&bytes[..valid]),
    };
    if body.contains(&0) {
        return Err(ReadFileError::Binary {
            path: path.to_string(),
        });
    }
    match String::from_utf8(body) {
        Ok(text) => Ok(text),
        Err(err) => {
            let bad = err.utf8_error();
            let mut bytes = err.into_bytes();
            if !matches!(cut, Cut::LongLine { .. }) || bad.error_len().is_some() {
                return Err(not_utf8(&bytes, bad.valid_up_to()));
            }
            bytes.truncate(bad.valid_up_to());
            String::from_utf8(bytes).map_err(|e| {
                let valid = e.utf8_error().valid_up_to();
                not_utf8(e.as_bytes(), valid)
            })
        }
    }
}

fn newlines(bytes: &[u8]) -> u64 {
    bytes.iter().filter(|&&b| b == b'\n').count() as u64
}

fn plural(n: u64) -> &'static str {
    if n == 1 { "" } else { "s" }
}

impl Excerpt {
    /// The last line shown (0 for an empty file).
    fn last(&self) -> u64 {
        (self.first + self.shown).saturating_sub(1)
    }

    /// Whether one of read_file's own limits (not the caller's) cut it.
    fn truncated(&self) -> bool {
        match self.cut {
            Cut::LongLine { .. } => true,
            Cut::Lines | Cut::Bytes => self.last() < self.total,
            Cut::None | Cut::Limit => false,
        }
    }
}

/// The text the model sees: the lines as they are in the file, then, when
/// there is more to read, a blank line and a note that says how.
fn render(excerpt: &Excerpt) -> String {
    if excerpt.total == 0 {
        return "[empty file]".to_string();
    }
    let Some(note) = read_on_note(excerpt) else {
        return excerpt.text.clone();
    };
    let mut out = String::with_capacity(excerpt.text.len() + note.len() + 2);
    out.push_str(&excerpt.text);
    if !out.ends_with('\n') {
        out.push('\n');
    }
    out.push('\n');
    out.push_str(&note);
    out
}

/// The note after a cut excerpt, or `None` when it reaches the end.
fn read_on_note(excerpt: &Excerpt) -> Option<String> {
    let (first, last, total) = (excerpt.first, excerpt.last(), excerpt.total);
    let read_on = format!("call read_file with offset={} to read on", last + 1);
    if let Cut::LongLine { len } = excerpt.cut {
        let rest = if last < total {
            format!("; {read_on}")
        } else {
            String::new()
        };
        return Some(format!(
            "[truncated: line {first} is {len} bytes long; showed its first {} bytes only{rest}]",
            excerpt.text.len()
        ));
    }
    if last >= total {
        return None;
    }
    let prefix = if excerpt.cut == Cut::Limit {
        ""
    } else {
        "truncated: "
    };
    let range = if first == last {
        format!("line {first}")
    } else {
        format!("lines {first}-{last}")
    };
    Some(format!("[{prefix}showed {range} of {total}; {read_on}]"))
}

/// Reads a file line by line without ever holding more of a line than the
/// caller keeps, and stops when the run is cancelled.
struct LineReader<'a, R> {
    inner: R,
    cancel: &'a CancellationToken,
    path: &'a str,
}

impl<R: BufRead> LineReader<'_, R> {
    /// Consumes the next line (with its `\n`), appending its bytes to `out`
    /// only while `out` is shorter than `keep`. Returns the line's full
    /// length, or `None` at the end of the file.
    fn next(&mut self, out: &mut Vec<u8>, keep: usize) -> Result<Option<u64>, ReadFileError> {
        let mut len = 0u64;
        loop {
            if self.cancel.is_cancelled() {
                return Err(ReadFileError::Cancelled);
            }
            let buf = match self.inner.fill_buf() {
                Ok(buf) => buf,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(source) => {
                    return Err(ReadFileError::Io {
                        path: self.path.to_string(),
                        source,
                    });
                }
            };
            if buf.is_empty() {
                return Ok((len > 0).then_some(len));
            }
            let (take, ends) = match buf.iter().position(|&b| b == b'\n') {
                Some(i) => (i + 1, true),
                None => (buf.len(), false),
            };
            let room = keep.saturating_sub(out.len()).min(take);
            out.extend_from_slice(&buf[..room]);
            self.inner.consume(take);
            len += take as u64;
            if ends {
                return Ok(Some(len));
            }
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)] // a failed setup step should fail the test loudly
mod tests {
    use super::*;
    use std::fs;
    use std::os::unix::fs::symlink;
    use std::path::PathBuf;

    const SECRET: &str = "TOP-SECRET-CONTENT";

    struct Fixture {
        _dir: tempfile::TempDir,
        base: PathBuf,
        root: PathBuf,
        tool: ReadFile,
    }

    fn fixture() -> Fixture {
        let dir = tempfile::tempdir().unwrap();
        let base = fs::canonicalize(dir.path()).unwrap();
        let root = base.join("root");
        fs::create_dir_all(root.join("src")).unwrap();
        fs::create_dir_all(base.join("outside")).unwrap();
        fs::write(base.join("outside/secret.txt"), SECRET).unwrap();
        let tool = ReadFile::new(Arc::new(Sandbox::new(&root).unwrap()));
        Fixture {
            _dir: dir,
            base,
            root,
            tool,
        }
    }

    impl Fixture {
        fn write(&self, name: &str, bytes: impl AsRef<[u8]>) {
            fs::write(self.root.join(name), bytes).unwrap();
        }

        /// The call's text, or its error's text.
        async fn call(&self, args: Value) -> Result<String, String> {
            self.call_output(args).await.map(|out| text_of(&out))
        }

        async fn call_output(&self, args: Value) -> Result<ToolOutput, String> {
            let (sink, _rx) = tokio::sync::mpsc::unbounded_channel();
            let updates = ToolUpdates::new(0, sink);
            self.tool
                .execute("call_1", args, CancellationToken::new(), updates)
                .await
                .map_err(|e| e.to_string())
        }
    }

    fn text_of(out: &ToolOutput) -> String {
        out.content
            .iter()
            .map(|Content::Text { text }| text.as_str())
            .collect()
    }

    fn numbered(from: u64, to: u64) -> String {
        (from..=to).map(|n| format!("line {n}\n")).collect()
    }

    #[test]
    fn the_schema_is_strict() {
        let f = fixture();
        let spec = f.tool.spec();
        assert_eq!(spec.name, "read_file");
        assert_eq!(spec.parameters["type"], "object");
        assert_eq!(spec.parameters["required"], json!(["path"]));
        assert_eq!(spec.parameters["additionalProperties"], json!(false));
        assert_eq!(spec.parameters["properties"]["offset"]["minimum"], json!(1));
        assert_eq!(spec.parameters["properties"]["limit"]["minimum"], json!(1));
    }

    #[tokio::test]
    async fn reads_a_small_file_exactly() {
        let f = fixture();
        f.write("a.txt", "hello\nworld\n");
        f.write("b.txt", "no newline at the end");
        let out = f.call_output(json!({"path": "a.txt"})).await.unwrap();
        assert_eq!(text_of(&out), "hello\nworld\n");
        assert_eq!(
            out.details,
            json!({"path": "a.txt", "lines": 2, "firstLine": 1, "lastLine": 2, "truncated": false})
        );
        assert_eq!(
            f.call(json!({"path": "b.txt"})).await.unwrap(),
            "no newline at the end"
        );
        assert_eq!(
            f.call(json!({"path": "a.txt", "offset": 2})).await.unwrap(),
            "world\n"
        );
    }

    #[tokio::test]
    async fn an_empty_file_says_so() {
        let f = fixture();
        f.write("empty.txt", "");
        assert_eq!(
            f.call(json!({"path": "empty.txt"})).await.unwrap(),
            "[empty file]"
        );
        assert_eq!(
            f.call(json!({"path": "empty.txt", "offset": 2}))
                .await
                .unwrap_err(),
            "offset 2 is past the end of 'empty.txt', which has 0 lines"
        );
    }

    #[tokio::test]
    async fn a_large_file_is_cut_with_a_note_and_reads_on() {
        let f = fixture();
        f.write("big.txt", numbered(1, 5231));
        let out = f.call_output(json!({"path": "big.txt"})).await.unwrap();
        assert_eq!(
            text_of(&out),
            numbered(1, 2000)
                + "\n[truncated: showed lines 1-2000 of 5231; call read_file with offset=2001 to read on]"
        );
        assert_eq!(
            out.details,
            json!({"path": "big.txt", "lines": 5231, "firstLine": 1, "lastLine": 2000, "truncated": true})
        );
        assert_eq!(
            f.call(json!({"path": "big.txt", "offset": 2001, "limit": 3}))
                .await
                .unwrap(),
            numbered(2001, 2003)
                + "\n[showed lines 2001-2003 of 5231; call read_file with offset=2004 to read on]"
        );
        assert_eq!(
            f.call(json!({"path": "big.txt", "offset": 4001}))
                .await
                .unwrap(),
            numbered(4001, 5231)
        );
        assert_eq!(
            f.call(json!({"path": "big.txt", "offset": 5231, "limit": 1}))
                .await
                .unwrap(),
            "line 5231\n"
        );
        assert_eq!(
            f.call(json!({"path": "big.txt", "offset": 7, "limit": 1}))
                .await
                .unwrap(),
            "line 7\n\n[showed line 7 of 5231; call read_file with offset=8 to read on]"
        );
        // A limit above the cap is cut at the cap, and says it was.
        assert_eq!(
            f.call(json!({"path": "big.txt", "offset": 3000, "limit": 3000}))
                .await
                .unwrap(),
            numbered(3000, 4999)
                + "\n[truncated: showed lines 3000-4999 of 5231; call read_file with offset=5000 to read on]"
        );
    }

    #[tokio::test]
    async fn following_the_notes_reads_the_whole_file_once() {
        let f = fixture();
        let content = numbered(1, 4500);
        f.write("big.txt", &content);
        let mut offset = 1;
        let mut seen = String::new();
        for _ in 0..10 {
            let text = f
                .call(json!({"path": "big.txt", "offset": offset}))
                .await
                .unwrap();
            let Some((body, note)) = text.split_once("\n\n[truncated") else {
                seen.push_str(&text);
                break;
            };
            seen.push_str(body);
            seen.push('\n');
            let next = note.split("offset=").nth(1).unwrap();
            offset = next.split(' ').next().unwrap().parse().unwrap();
        }
        assert_eq!(seen, content);
    }

    #[tokio::test]
    async fn the_byte_cap_cuts_between_lines() {
        let f = fixture();
        // 100 bytes a line: exactly 512 lines fit in 50 KiB.
        let line = format!("{}\n", "x".repeat(99));
        f.write("wide.txt", line.repeat(1000));
        assert_eq!(
            f.call(json!({"path": "wide.txt"})).await.unwrap(),
            line.repeat(512)
                + "\n[truncated: showed lines 1-512 of 1000; call read_file with offset=513 to read on]"
        );
    }

    #[tokio::test]
    async fn a_line_longer_than_the_cap_shows_its_start() {
        let f = fixture();
        f.write("long.txt", format!("{}\nnext\n", "a".repeat(200_000)));
        assert_eq!(
            f.call(json!({"path": "long.txt"})).await.unwrap(),
            format!(
                "{}\n\n[truncated: line 1 is 200001 bytes long; showed its first 51200 bytes only; call read_file with offset=2 to read on]",
                "a".repeat(MAX_BYTES)
            )
        );
        assert_eq!(
            f.call(json!({"path": "long.txt", "offset": 2}))
                .await
                .unwrap(),
            "next\n"
        );
        // Cut inside a 3-byte character: the half character is dropped.
        f.write("euro.txt", "€".repeat(60_000));
        assert_eq!(
            f.call(json!({"path": "euro.txt"})).await.unwrap(),
            format!(
                "{}\n\n[truncated: line 1 is 180000 bytes long; showed its first 51198 bytes only]",
                "€".repeat(17_066)
            )
        );
    }

    #[tokio::test]
    async fn offset_past_the_end_says_how_many_lines_there_are() {
        let f = fixture();
        f.write("three.txt", "a\nb\nc\n");
        f.write("one.txt", "a");
        assert_eq!(
            f.call(json!({"path": "three.txt", "offset": 4}))
                .await
                .unwrap_err(),
            "offset 4 is past the end of 'three.txt', which has 3 lines"
        );
        assert_eq!(
            f.call(json!({"path": "three.txt", "offset": u64::MAX}))
                .await
                .unwrap_err(),
            format!(
                "offset {} is past the end of 'three.txt', which has 3 lines",
                u64::MAX
            )
        );
        assert_eq!(
            f.call(json!({"path": "one.txt", "offset": 2}))
                .await
                .unwrap_err(),
            "offset 2 is past the end of 'one.txt', which has 1 line"
        );
        assert_eq!(
            f.call(json!({"path": "three.txt", "offset": 3}))
                .await
                .unwrap(),
            "c\n"
        );
    }

    #[tokio::test]
    async fn missing_files_and_directories_are_errors() {
        let f = fixture();
        assert_eq!(
            f.call(json!({"path": "nope.txt"})).await.unwrap_err(),
            "path 'nope.txt' does not exist under the root; use list_dir to see what is there"
        );
        assert_eq!(
            f.call(json!({"path": "src"})).await.unwrap_err(),
            "'src' is a directory; use list_dir"
        );
        assert_eq!(
            f.call(json!({"path": "."})).await.unwrap_err(),
            "'.' is a directory; use list_dir"
        );
    }

    #[tokio::test]
    async fn binary_and_non_utf8_files_are_refused() {
        let f = fixture();
        f.write("img.bin", b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR");
        assert_eq!(
            f.call(json!({"path": "img.bin"})).await.unwrap_err(),
            "'img.bin' is a binary file (it contains NUL bytes); read_file only reads UTF-8 text"
        );
        f.write("latin1.txt", b"ok\ncaf\xe9\n");
        assert_eq!(
            f.call(json!({"path": "latin1.txt"})).await.unwrap_err(),
            "'latin1.txt' is not UTF-8 text (invalid bytes in line 2); read_file only reads UTF-8 text"
        );
        // A NUL past the sniffed start, in the part to show, is still binary.
        let mut late = "xxxxxxx\n".repeat(1100).into_bytes();
        late.extend_from_slice(b"\0\n");
        f.write("late.bin", late);
        assert_eq!(
            f.call(json!({"path": "late.bin"})).await.unwrap_err(),
            "'late.bin' is a binary file (it contains NUL bytes); read_file only reads UTF-8 text"
        );
        // Bad bytes only after the part shown do not stop the part shown.
        f.write("tail.txt", b"good\nbad \xff\n");
        assert_eq!(
            f.call(json!({"path": "tail.txt", "limit": 1}))
                .await
                .unwrap(),
            "good\n\n[showed line 1 of 2; call read_file with offset=2 to read on]"
        );
    }

    #[tokio::test]
    async fn nothing_outside_the_root_is_ever_shown() {
        let f = fixture();
        symlink(f.base.join("outside/secret.txt"), f.root.join("link_file")).unwrap();
        symlink(f.base.join("outside"), f.root.join("link_dir")).unwrap();
        symlink("/proc/self/environ", f.root.join("env")).unwrap();
        let outside_abs = f.base.join("outside/secret.txt");
        let cases = [
            "../outside/secret.txt",
            "src/../../outside/secret.txt",
            "src/..",
            outside_abs.to_str().unwrap(),
            "/proc/self/environ",
            "link_file",
            "link_dir/secret.txt",
            "env",
        ];
        for path in cases {
            let err = f.call(json!({"path": path})).await.unwrap_err();
            assert!(err.contains("outside the allowed root"), "{path}: {err}");
            assert!(!err.contains(SECRET), "{path}: {err}");
        }
    }

    #[tokio::test]
    async fn symlinks_inside_the_root_are_read() {
        let f = fixture();
        f.write("src/lib.rs", "fn main() {}\n");
        symlink("src/lib.rs", f.root.join("alias.rs")).unwrap();
        assert_eq!(
            f.call(json!({"path": "alias.rs"})).await.unwrap(),
            "fn main() {}\n"
        );
        let abs = f.root.join("src/lib.rs");
        assert_eq!(
            f.call(json!({"path": abs.to_str().unwrap()}))
                .await
                .unwrap(),
            "fn main() {}\n"
        );
    }

    #[tokio::test]
    async fn bad_paths_are_refused_in_one_line() {
        let f = fixture();
        let nul = f.call(json!({"path": "a\0b"})).await.unwrap_err();
        assert!(nul.contains("NUL byte"), "{nul}");
        let long = f
            .call(json!({"path": "x".repeat(10_000)}))
            .await
            .unwrap_err();
        assert!(long.contains("too long"), "{long}");
        assert!(!long.contains('\n') && long.len() < 300, "{long}");
        symlink("loop", f.root.join("loop")).unwrap();
        let looped = f.call(json!({"path": "loop"})).await.unwrap_err();
        assert!(looped.contains("symlink loop"), "{looped}");
    }

    #[tokio::test]
    async fn dotenv_files_are_refused_by_name_and_through_symlinks() {
        let f = fixture();
        f.write(".env", "OPENAI_API_KEY=sk-dotenv\n");
        f.write(".env.local", "OPENAI_API_KEY=sk-dotenv\n");
        fs::create_dir_all(f.root.join("config")).unwrap();
        f.write("config/.env.production", "OPENAI_API_KEY=sk-dotenv\n");
        f.write(".envrc.txt", "fine\n");
        symlink(".env", f.root.join("innocent.txt")).unwrap();
        symlink("notes.txt", f.root.join(".env.link")).unwrap();
        f.write("notes.txt", "notes\n");
        for path in [
            ".env",
            "./.env",
            ".env.local",
            "config/.env.production",
            "innocent.txt",
            ".env.link",
        ] {
            let error = f.call(json!({"path": path})).await.unwrap_err();
            assert!(error.contains("is a dotenv file"), "{path}: {error}");
            assert!(!error.contains("sk-dotenv"), "{error}");
        }
        let abs = f.root.join(".env");
        let error = f
            .call(json!({"path": abs.to_str().unwrap()}))
            .await
            .unwrap_err();
        assert!(error.contains("is a dotenv file"), "{error}");
        assert_eq!(
            f.call(json!({"path": ".envrc.txt"})).await.unwrap(),
            "fine\n"
        );
    }

    #[tokio::test]
    async fn arguments_outside_the_schema_are_errors() {
        let f = fixture();
        f.write("a.txt", "a\n");
        for args in [
            json!({"path": "a.txt", "offset": 0}),
            json!({"path": "a.txt", "limit": 0}),
            json!({"path": "a.txt", "offset": -1}),
            json!({"path": "a.txt", "extra": true}),
            json!({"offset": 1}),
            json!("a.txt"),
        ] {
            let err = f.call(args.clone()).await.unwrap_err();
            assert!(err.starts_with("invalid arguments: "), "{args}: {err}");
        }
    }

    #[tokio::test]
    async fn a_cancelled_call_reads_nothing() {
        let f = fixture();
        f.write("a.txt", "a\n");
        let cancel = CancellationToken::new();
        cancel.cancel();
        let (sink, _rx) = tokio::sync::mpsc::unbounded_channel();
        let updates = ToolUpdates::new(0, sink);
        let err = f
            .tool
            .execute("call_1", json!({"path": "a.txt"}), cancel, updates)
            .await
            .unwrap_err();
        assert_eq!(err.to_string(), "read_file was cancelled");
    }

    #[test]
    fn an_endless_stream_stops_when_cancelled() {
        let cancel = CancellationToken::new();
        let trigger = cancel.clone();
        let canceller = std::thread::spawn(move || {
            std::thread::sleep(std::time::Duration::from_millis(50));
            trigger.cancel();
        });
        let err = read_excerpt(io::repeat(b'x'), "endless", 1, None, &cancel).unwrap_err();
        canceller.join().unwrap();
        assert!(matches!(err, ReadFileError::Cancelled), "{err:?}");
    }

    #[test]
    fn a_huge_single_line_keeps_only_the_cut() {
        let source = io::repeat(b'y').take(20 * 1024 * 1024);
        let excerpt = read_excerpt(source, "huge", 1, None, &CancellationToken::new()).unwrap();
        assert_eq!(excerpt.text.len(), MAX_BYTES);
        assert!(excerpt.text.capacity() < 2 * MAX_BYTES + READ_BUFFER_BYTES);
        assert_eq!(excerpt.total, 1);
        assert_eq!(
            excerpt.cut,
            Cut::LongLine {
                len: 20 * 1024 * 1024
            }
        );
    }

    #[test]
    fn crlf_lines_are_kept_as_they_are() {
        let excerpt = read_excerpt(
            io::Cursor::new("a\r\nb\r\n"),
            "crlf",
            1,
            None,
            &CancellationToken::new(),
        )
        .unwrap();
        assert_eq!(render(&excerpt), "a\r\nb\r\n");
        assert_eq!(excerpt.total, 2);
    }
}

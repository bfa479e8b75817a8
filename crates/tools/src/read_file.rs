//! The `read_file` tool (ARCHITECTURE.md §2.5): the UTF-8 text of a file under the
//! root, by lines, cut at a fixed size with a note that says how to read on.
//!
//! An image (PNG, JPEG, GIF, WebP, known by its bytes) is returned whole
//! as an attachment for the model to see, within the strictest caps any
//! provider states; each wire carries it or says it cannot
//! (docs/src/resume.md "Attachments").
//!
//! It must never read outside the root (every path goes through
//! [`Sandbox::open`]), never hold more than one cut's worth of a text file
//! (or one capped image) in memory (the rest is only streamed to count its
//! lines), and never hand the model bytes that are not UTF-8 text or an
//! image. How the excerpt is read and rendered is `excerpt`'s.

mod error;
mod excerpt;
mod image;
mod limits;

use std::io::{self, Read};
use std::sync::Arc;

use schemars::JsonSchema;
use serde::{Deserialize, Deserializer};
use serde_json::json;
use tokio_util::sync::CancellationToken;

use self::error::NAME;
pub use self::error::ReadFileError;
use self::excerpt::{Start, read_excerpt, render};
use self::image::{image_attachment, read_image};
pub use self::limits::{BINARY_SNIFF_BYTES, MAX_BYTES, MAX_LINES};
use super::sandbox::{EntryKind, Sandbox, shown_path};
use super::{ToolUpdates, TypedTool, run_blocking_call};
use leash_media::sniff;
use leash_protocol::{Attachment, Content, ToolOutput};

/// The `read_file` tool.
#[derive(Debug)]
pub struct ReadFile {
    sandbox: Arc<Sandbox>,
}

/// The arguments of `read_file`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ReadFileArgs {
    /// The file, relative to the root directory.
    pub path: String,
    /// The first line to show, 1-based (default 1).
    #[serde(default, deserialize_with = "offset_at_least_one")]
    #[schemars(range(min = 1))]
    pub offset: Option<u64>,
    /// The most lines to show (default and cap 2000).
    #[serde(default, deserialize_with = "limit_at_least_one")]
    #[schemars(range(min = 1))]
    pub limit: Option<u64>,
    /// Where in line `offset` to start, in bytes (default 0): to read on
    /// inside a line longer than one call shows, as the cut note says.
    #[serde(default)]
    pub byte_offset: Option<u64>,
}

fn offset_at_least_one<'de, D: Deserializer<'de>>(d: D) -> Result<Option<u64>, D::Error> {
    at_least_one("offset", d)
}

fn limit_at_least_one<'de, D: Deserializer<'de>>(d: D) -> Result<Option<u64>, D::Error> {
    at_least_one("limit", d)
}

/// An optional count that must not be 0 when given.
fn at_least_one<'de, D: Deserializer<'de>>(field: &str, d: D) -> Result<Option<u64>, D::Error> {
    let value = Option::<u64>::deserialize(d)?;
    if value == Some(0) {
        return Err(serde::de::Error::custom(format!(
            "{field} must be 1 or more"
        )));
    }
    Ok(value)
}

impl ReadFile {
    /// A `read_file` tool that reads under `sandbox`'s root.
    pub fn new(sandbox: Arc<Sandbox>) -> ReadFile {
        ReadFile { sandbox }
    }
}

impl TypedTool for ReadFile {
    const NAME: &'static str = NAME;
    type Args = ReadFileArgs;
    type Error = ReadFileError;

    fn description(&self) -> String {
        format!(
            "Read a UTF-8 text file under the root directory. Shows at most {MAX_LINES} \
             lines or {} KiB per call; a longer file is cut with a note that says which \
             offset (and, inside a longer line, byte_offset) to read on from. An image \
             (PNG, JPEG, GIF, WebP) is shown whole. Use list_dir for directories.",
            MAX_BYTES / 1024
        )
    }

    async fn call(
        &self,
        args: ReadFileArgs,
        cancel: CancellationToken,
        _updates: ToolUpdates,
    ) -> Result<ToolOutput, ReadFileError> {
        let sandbox = Arc::clone(&self.sandbox);
        run_blocking_call(Self::NAME, &cancel, move |cancel| {
            read_blocking(&sandbox, &args, cancel)
        })
        .await
    }
}

/// The whole call, on a blocking thread: open under the sandbox, read the
/// excerpt, render it.
fn read_blocking(
    sandbox: &Sandbox,
    args: &ReadFileArgs,
    cancel: &CancellationToken,
) -> Result<ToolOutput, ReadFileError> {
    let shown = shown_path(&args.path);
    let (file, head) = open_with_head(sandbox, &args.path, &shown)?;
    if sniff::sniff(&head).is_some_and(|kind| kind.is_image()) {
        return read_image(&args.path, shown, head, file);
    }
    let start = Start {
        line: args.offset.unwrap_or(1),
        byte: args.byte_offset.unwrap_or(0),
    };
    let source = io::Cursor::new(head).chain(file);
    let excerpt = read_excerpt(source, &shown, start, args.limit, cancel)?;
    let details = json!({
        "path": args.path,
        "lines": excerpt.total,
        "firstLine": excerpt.first,
        "lastLine": excerpt.last(),
        "byteOffset": excerpt.start,
        "truncated": excerpt.truncated(),
        "cutPiece": excerpt.cut_piece(),
    });
    Ok(ToolOutput {
        content: vec![Content::text(render(&excerpt))],
        details,
        terminate: false,
        usage: None,
    })
}

/// A `read_file` image opened again by the path the model gave, for
/// `--resume` (docs/src/resume.md "Resume"): through the same sandbox, to be read
/// within the same caps as the call that first read it, once its size is
/// known to be the recorded one.
pub fn open_image(sandbox: &Sandbox, path: &str) -> Result<ImageFile, ReadFileError> {
    let shown = shown_path(path);
    let (file, head) = open_with_head(sandbox, path, &shown)?;
    if !sniff::sniff(&head).is_some_and(|kind| kind.is_image()) {
        return Err(ReadFileError::Image {
            path: shown,
            problem: "it is not an image".into(),
        });
    }
    Ok(ImageFile {
        path: path.to_owned(),
        shown,
        head,
        file,
    })
}

/// An image file [`open_image`] opened, not read yet.
#[derive(Debug)]
pub struct ImageFile {
    path: String,
    shown: String,
    head: Vec<u8>,
    file: std::fs::File,
}

impl ImageFile {
    /// Its size in bytes, from the open file.
    pub fn size(&self) -> io::Result<u64> {
        self.file.metadata().map(|meta| meta.len())
    }

    /// The image, whole, as `read_file` returns it.
    pub fn read(self) -> Result<Attachment, ReadFileError> {
        image_attachment(&self.path, &self.shown, self.head, self.file)
    }
}

/// The file at `path` under the sandbox (not a directory), and enough of
/// its start to know an image by its magic number.
fn open_with_head(
    sandbox: &Sandbox,
    path: &str,
    shown: &str,
) -> Result<(std::fs::File, Vec<u8>), ReadFileError> {
    let opened = sandbox.open(path)?;
    if opened.kind() == EntryKind::Dir {
        return Err(ReadFileError::Directory {
            path: shown.to_owned(),
        });
    }
    let mut file = opened.into_file();
    let mut head = Vec::with_capacity(16);
    (&mut file)
        .take(16)
        .read_to_end(&mut head)
        .map_err(|source| ReadFileError::Io {
            path: shown.to_owned(),
            source,
        })?;
    Ok((file, head))
}

#[cfg(test)]
mod tests;

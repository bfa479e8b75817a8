//! The `list_dir` tool (ARCHITECTURE.md §2.5): the entries of a directory under the
//! root, sorted by name, one per line, capped with a note.
//!
//! It must never list outside the root (every path goes through
//! [`Sandbox::open`]) and never follow a symlink it lists: a symlink is
//! shown as an entry of its own, whatever it points at. Memory stays bounded
//! however large the directory: only the first entries by name are kept.

use std::collections::BinaryHeap;
use std::ffi::OsString;
use std::fs::DirEntry;
use std::io;
use std::sync::Arc;

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;
use tokio_util::sync::CancellationToken;

use super::sandbox::{EntryKind, Sandbox, SandboxError, push_escaped, shown_path};
use super::{Interrupted, ToolUpdates, TypedTool, run_blocking_call};
use leash_protocol::{Content, ToolOutput};

/// The most entries one call shows.
pub(crate) const MAX_ENTRIES: usize = 1000;

/// Why a `list_dir` call failed. `Display` is one line for the model.
#[derive(Debug, thiserror::Error)]
pub enum ListDirError {
    /// The path was refused or could not be opened.
    #[error(transparent)]
    Sandbox(#[from] SandboxError),
    /// The path names a file.
    #[error("'{path}' is not a directory; use read_file")]
    NotDirectory {
        /// The path as the model gave it (shortened).
        path: String,
    },
    /// Reading the directory failed after it was opened.
    #[error("listing '{path}' failed: {source}")]
    Io {
        /// The path as the model gave it (shortened).
        path: String,
        /// The operating system's error.
        #[source]
        source: io::Error,
    },
    /// The run was aborted while the directory was listed, or the
    /// blocking work died (a bug, not the model's doing).
    #[error(transparent)]
    Interrupted(#[from] Interrupted),
}

/// The `list_dir` tool.
#[derive(Debug)]
pub struct ListDir {
    sandbox: Arc<Sandbox>,
}

/// The arguments of `list_dir`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ListDirArgs {
    /// The directory, relative to the root directory (default '.').
    #[serde(default)]
    pub path: Option<String>,
    /// How many entries (by name) to skip: the next page of a listing that was cut (default 0).
    #[serde(default)]
    pub offset: Option<u32>,
}

/// What an entry is, as far as its own directory entry says (never
/// following a symlink).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Kind {
    Dir,
    Symlink,
    Other,
}

/// One listed entry; ordered by name (names in a directory are unique).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
struct Entry {
    name: OsString,
    kind: Kind,
}

/// One page of a directory's entries by name, where it starts, and how
/// many entries the directory has.
#[derive(Debug)]
struct Listing {
    entries: Vec<Entry>,
    offset: usize,
    total: usize,
}

impl ListDir {
    /// A `list_dir` tool that lists under `sandbox`'s root.
    pub fn new(sandbox: Arc<Sandbox>) -> ListDir {
        ListDir { sandbox }
    }
}

impl TypedTool for ListDir {
    const NAME: &'static str = "list_dir";
    type Args = ListDirArgs;
    type Error = ListDirError;

    fn description(&self) -> String {
        format!(
            "List a directory under the root directory: one entry per line, sorted by \
             name; directories end with '/', symlinks with '@'. Shows at most \
             {MAX_ENTRIES} entries; offset pages through a longer listing."
        )
    }

    async fn call(
        &self,
        args: ListDirArgs,
        cancel: CancellationToken,
        _updates: ToolUpdates,
    ) -> Result<ToolOutput, ListDirError> {
        let path = args.path.unwrap_or_else(|| ".".to_string());
        let offset = args.offset.unwrap_or(0) as usize;
        let sandbox = Arc::clone(&self.sandbox);
        run_blocking_call(Self::NAME, &cancel, move |cancel| {
            list_blocking(&sandbox, &path, offset, MAX_ENTRIES, cancel)
        })
        .await
    }
}

/// The whole call, on a blocking thread: open under the sandbox, collect
/// `cap` entries by name from `offset` on, render them.
fn list_blocking(
    sandbox: &Sandbox,
    path: &str,
    offset: usize,
    cap: usize,
    cancel: &CancellationToken,
) -> Result<ToolOutput, ListDirError> {
    let shown = shown_path(path);
    let opened = sandbox.open(path)?;
    if opened.kind() != EntryKind::Dir {
        return Err(ListDirError::NotDirectory { path: shown });
    }
    let io_error = |source| ListDirError::Io {
        path: shown.clone(),
        source,
    };
    let entries = opened.read_dir().map_err(io_error)?;
    let listing = page_of_entries(entries, offset, cap, cancel).map_err(|e| match e {
        Interrupt::Cancelled => Interrupted::Cancelled {
            tool: ListDir::NAME,
        }
        .into(),
        Interrupt::Io(source) => io_error(source),
    })?;
    let details = json!({
        "path": path,
        "entries": listing.total,
        "offset": listing.offset,
        "shown": listing.entries.len(),
        "truncated": listing.total > listing.offset + listing.entries.len(),
    });
    Ok(ToolOutput {
        content: vec![Content::text(render(&listing))],
        details,
        terminate: false,
        usage: None,
    })
}

/// Why collecting entries stopped early.
enum Interrupt {
    Cancelled,
    Io(io::Error),
}

/// The entries `offset..offset + cap` by name, sorted, and the count of
/// all. Holds at most `offset + cap + 1` entries at any time.
fn page_of_entries(
    entries: impl Iterator<Item = io::Result<DirEntry>>,
    offset: usize,
    cap: usize,
    cancel: &CancellationToken,
) -> Result<Listing, Interrupt> {
    let keep = offset.saturating_add(cap);
    let mut kept: BinaryHeap<Entry> = BinaryHeap::with_capacity(keep.saturating_add(1).min(4096));
    let mut total = 0usize;
    for entry in entries {
        if cancel.is_cancelled() {
            return Err(Interrupt::Cancelled);
        }
        let entry = entry.map_err(Interrupt::Io)?;
        total += 1;
        let kind = match entry.file_type() {
            Ok(t) if t.is_symlink() => Kind::Symlink,
            Ok(t) if t.is_dir() => Kind::Dir,
            _ => Kind::Other,
        };
        kept.push(Entry {
            name: entry.file_name(),
            kind,
        });
        if kept.len() > keep {
            // The heap's top is the largest name: the one that can go.
            kept.pop();
        }
    }
    let mut entries = kept.into_sorted_vec();
    entries.drain(..offset.min(entries.len()));
    Ok(Listing {
        entries,
        offset,
        total,
    })
}

/// One line per entry; a note when some were left off.
fn render(listing: &Listing) -> String {
    if listing.total == 0 {
        return "[empty directory]".to_string();
    }
    if listing.entries.is_empty() {
        return format!(
            "[no entries from offset {}: the directory has {}]",
            listing.offset, listing.total
        );
    }
    let mut out = String::new();
    for entry in &listing.entries {
        push_escaped(&mut out, &entry.name.to_string_lossy());
        match entry.kind {
            Kind::Dir => out.push('/'),
            Kind::Symlink => out.push('@'),
            Kind::Other => {}
        }
        out.push('\n');
    }
    let shown_to = listing.offset + listing.entries.len();
    let shown = match listing.offset {
        0 => format!("the first {}", listing.entries.len()),
        offset => format!("entries {}-{shown_to}", offset + 1),
    };
    if listing.total > shown_to {
        out.push_str(&format!(
            "\n[truncated: showed {shown} of {} entries, sorted by name; offset {shown_to} \
             lists the next]",
            listing.total
        ));
    } else if listing.offset > 0 {
        out.push_str(&format!(
            "\n[showed {shown} of {} entries, sorted by name: the last page]",
            listing.total
        ));
    } else {
        out.pop();
    }
    out
}

#[cfg(test)]
#[path = "list_dir_tests.rs"]
mod tests;

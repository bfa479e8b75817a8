//! The `list_dir` tool (SPEC 2.5): the entries of a directory under the
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

use futures::future::BoxFuture;
use serde::Deserialize;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use super::sandbox::{EntryKind, Sandbox, SandboxError, shown_path};
use super::{Blocking, Tool, ToolError, ToolUpdates, run_blocking};
use crate::protocol::{Content, ToolOutput, ToolSpec};

/// The most entries one call shows.
pub const MAX_ENTRIES: usize = 1000;

/// Why a `list_dir` call failed. `Display` is one line for the model.
#[derive(Debug, thiserror::Error)]
pub enum ListDirError {
    /// The path was refused or could not be opened.
    #[error(transparent)]
    Sandbox(#[from] SandboxError),
    /// The arguments do not fit the schema.
    #[error("invalid arguments: {0}")]
    Args(String),
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
    /// The run was aborted while the directory was listed.
    #[error("list_dir was cancelled")]
    Cancelled,
    /// The blocking task died (a bug, not the model's doing).
    #[error("list_dir failed unexpectedly: {0}")]
    Internal(String),
}

/// The `list_dir` tool.
#[derive(Debug)]
pub struct ListDir {
    sandbox: Arc<Sandbox>,
    spec: ToolSpec,
}

/// The arguments, as the schema describes them.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Args {
    #[serde(default)]
    path: Option<String>,
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

/// The first entries of a directory by name, and how many it has.
#[derive(Debug)]
struct Listing {
    entries: Vec<Entry>,
    total: usize,
}

impl ListDir {
    /// A `list_dir` tool that lists under `sandbox`'s root.
    pub fn new(sandbox: Arc<Sandbox>) -> ListDir {
        let spec = ToolSpec {
            name: "list_dir".to_string(),
            description: format!(
                "List a directory under the root directory: one entry per line, sorted by \
                 name; directories end with '/', symlinks with '@'. Shows at most \
                 {MAX_ENTRIES} entries."
            ),
            parameters: json!({
                "type": "object",
                "properties": {
                    "path": {
                        "type": "string",
                        "description": "The directory, relative to the root directory (default '.')."
                    }
                },
                "additionalProperties": false
            }),
        };
        ListDir { sandbox, spec }
    }

    async fn run(
        &self,
        args: Value,
        cancel: CancellationToken,
    ) -> Result<ToolOutput, ListDirError> {
        let args: Args =
            serde_json::from_value(args).map_err(|e| ListDirError::Args(e.to_string()))?;
        let path = args.path.unwrap_or_else(|| ".".to_string());
        if cancel.is_cancelled() {
            return Err(ListDirError::Cancelled);
        }
        let sandbox = Arc::clone(&self.sandbox);
        let token = cancel.clone();
        // On cancel the blocking work is left to notice the same token at
        // its next step and end by itself; the call answers at once.
        match run_blocking(
            move || list_blocking(&sandbox, &path, MAX_ENTRIES, &token),
            &cancel,
        )
        .await
        {
            Blocking::Done(result) => result,
            Blocking::Cancelled => Err(ListDirError::Cancelled),
            Blocking::Failed(error) => Err(ListDirError::Internal(error)),
        }
    }
}

impl Tool for ListDir {
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

/// The whole call, on a blocking thread: open under the sandbox, collect
/// the first `cap` entries by name, render them.
fn list_blocking(
    sandbox: &Sandbox,
    path: &str,
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
    let listing = first_entries(entries, cap, cancel).map_err(|e| match e {
        Interrupt::Cancelled => ListDirError::Cancelled,
        Interrupt::Io(source) => io_error(source),
    })?;
    let details = json!({
        "path": path,
        "entries": listing.total,
        "shown": listing.entries.len(),
        "truncated": listing.total > listing.entries.len(),
    });
    Ok(ToolOutput {
        content: vec![Content::text(render(&listing))],
        details,
        terminate: false,
    })
}

/// Why collecting entries stopped early.
enum Interrupt {
    Cancelled,
    Io(io::Error),
}

/// The `cap` smallest entries by name, sorted, and the count of all. Holds
/// at most `cap + 1` entries at any time.
fn first_entries(
    entries: impl Iterator<Item = io::Result<DirEntry>>,
    cap: usize,
    cancel: &CancellationToken,
) -> Result<Listing, Interrupt> {
    let mut kept: BinaryHeap<Entry> = BinaryHeap::with_capacity(cap.saturating_add(1).min(4096));
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
        if kept.len() > cap {
            // The heap's top is the largest name: the one that can go.
            kept.pop();
        }
    }
    Ok(Listing {
        entries: kept.into_sorted_vec(),
        total,
    })
}

/// One line per entry; a note when some were left off.
fn render(listing: &Listing) -> String {
    if listing.total == 0 {
        return "[empty directory]".to_string();
    }
    let mut out = String::new();
    for entry in &listing.entries {
        // Control characters are escaped so a name cannot break the
        // one-entry-per-line shape.
        for c in entry.name.to_string_lossy().chars() {
            if c.is_control() {
                out.extend(c.escape_default());
            } else {
                out.push(c);
            }
        }
        match entry.kind {
            Kind::Dir => out.push('/'),
            Kind::Symlink => out.push('@'),
            Kind::Other => {}
        }
        out.push('\n');
    }
    if listing.total > listing.entries.len() {
        out.push_str(&format!(
            "\n[truncated: showed the first {} of {} entries, sorted by name]",
            listing.entries.len(),
            listing.total
        ));
    } else {
        out.pop();
    }
    out
}

#[cfg(test)]
#[allow(clippy::unwrap_used)] // a failed setup step should fail the test loudly
mod tests {
    use super::*;
    use std::fs;
    use std::os::unix::fs::symlink;
    use std::path::PathBuf;

    const SECRET_NAME: &str = "secret-name-outside.txt";

    struct Fixture {
        _dir: tempfile::TempDir,
        base: PathBuf,
        root: PathBuf,
        tool: ListDir,
    }

    fn fixture() -> Fixture {
        let dir = tempfile::tempdir().unwrap();
        let base = fs::canonicalize(dir.path()).unwrap();
        let root = base.join("root");
        fs::create_dir_all(&root).unwrap();
        fs::create_dir_all(base.join("outside")).unwrap();
        fs::write(base.join("outside").join(SECRET_NAME), "secret").unwrap();
        let tool = ListDir::new(Arc::new(Sandbox::new(&root).unwrap()));
        Fixture {
            _dir: dir,
            base,
            root,
            tool,
        }
    }

    impl Fixture {
        async fn call(&self, args: Value) -> Result<String, String> {
            self.call_output(args).await.map(|out| text_of(&out))
        }

        async fn call_output(&self, args: Value) -> Result<ToolOutput, String> {
            let (sink, _rx) = tokio::sync::mpsc::unbounded_channel();
            self.tool
                .execute(
                    "call_1",
                    args,
                    CancellationToken::new(),
                    ToolUpdates::new(0, sink),
                )
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

    #[test]
    fn the_schema_is_strict() {
        let f = fixture();
        let spec = f.tool.spec();
        assert_eq!(spec.name, "list_dir");
        assert_eq!(spec.parameters["type"], "object");
        assert_eq!(spec.parameters["additionalProperties"], json!(false));
        assert_eq!(spec.parameters["properties"]["path"]["type"], "string");
        assert!(spec.parameters.get("required").is_none());
    }

    #[tokio::test]
    async fn entries_are_sorted_with_markers() {
        let f = fixture();
        for name in ["b.txt", "a.txt", "C.txt", ".hidden"] {
            fs::write(f.root.join(name), "x").unwrap();
        }
        fs::create_dir(f.root.join("dir")).unwrap();
        symlink("a.txt", f.root.join("link_in")).unwrap();
        symlink("dir", f.root.join("link_dir")).unwrap();
        symlink(f.base.join("outside"), f.root.join("link_out")).unwrap();
        let want = ".hidden\nC.txt\na.txt\nb.txt\ndir/\nlink_dir@\nlink_in@\nlink_out@";
        let out = f.call_output(json!({})).await.unwrap();
        assert_eq!(text_of(&out), want);
        assert_eq!(
            out.details,
            json!({"path": ".", "entries": 8, "shown": 8, "truncated": false})
        );
        assert_eq!(f.call(json!({"path": "."})).await.unwrap(), want);
        assert_eq!(f.call(json!({"path": null})).await.unwrap(), want);
        assert_eq!(
            f.call(json!({"path": f.root.to_str().unwrap()}))
                .await
                .unwrap(),
            want
        );
    }

    #[tokio::test]
    async fn subdirectories_and_symlinks_to_them_list() {
        let f = fixture();
        fs::create_dir_all(f.root.join("src/nested")).unwrap();
        fs::write(f.root.join("src/main.rs"), "").unwrap();
        symlink("src", f.root.join("alias")).unwrap();
        assert_eq!(
            f.call(json!({"path": "src"})).await.unwrap(),
            "main.rs\nnested/"
        );
        assert_eq!(
            f.call(json!({"path": "alias/"})).await.unwrap(),
            "main.rs\nnested/"
        );
        assert_eq!(
            f.call(json!({"path": "src/nested"})).await.unwrap(),
            "[empty directory]"
        );
    }

    #[tokio::test]
    async fn large_directories_are_capped_with_a_note() {
        let f = fixture();
        // Created in reverse so the kept set cannot be creation order.
        for i in (0..MAX_ENTRIES + 5).rev() {
            fs::write(f.root.join(format!("f{i:04}")), "").unwrap();
        }
        let out = f.call_output(json!({})).await.unwrap();
        let want: String = (0..MAX_ENTRIES)
            .map(|i| format!("f{i:04}\n"))
            .collect::<String>()
            + "\n[truncated: showed the first 1000 of 1005 entries, sorted by name]";
        assert_eq!(text_of(&out), want);
        assert_eq!(
            out.details,
            json!({"path": ".", "entries": 1005, "shown": 1000, "truncated": true})
        );
    }

    #[test]
    fn the_cap_keeps_the_first_names_in_order() {
        let f = fixture();
        for name in ["e", "a", "d", "b", "c"] {
            fs::write(f.root.join(name), "").unwrap();
        }
        let sandbox = Sandbox::new(&f.root).unwrap();
        let out = list_blocking(&sandbox, ".", 2, &CancellationToken::new()).unwrap();
        assert_eq!(
            text_of(&out),
            "a\nb\n\n[truncated: showed the first 2 of 5 entries, sorted by name]"
        );
    }

    #[tokio::test]
    async fn files_and_missing_paths_are_errors() {
        let f = fixture();
        fs::write(f.root.join("a.txt"), "x").unwrap();
        assert_eq!(
            f.call(json!({"path": "a.txt"})).await.unwrap_err(),
            "'a.txt' is not a directory; use read_file"
        );
        assert_eq!(
            f.call(json!({"path": "nope"})).await.unwrap_err(),
            "path 'nope' does not exist under the root; use list_dir to see what is there"
        );
        let err = f.call(json!({"path": "x", "extra": 1})).await.unwrap_err();
        assert!(err.starts_with("invalid arguments: "), "{err}");
        let err = f.call(json!({"path": 5})).await.unwrap_err();
        assert!(err.starts_with("invalid arguments: "), "{err}");
    }

    #[tokio::test]
    async fn nothing_outside_the_root_is_listed() {
        let f = fixture();
        symlink(f.base.join("outside"), f.root.join("link_out")).unwrap();
        symlink("/", f.root.join("slash")).unwrap();
        let outside_abs = f.base.join("outside");
        let cases = [
            "..",
            "../outside",
            "./..",
            outside_abs.to_str().unwrap(),
            "/",
            "/proc/self",
            "link_out",
            "link_out/",
            "slash/etc",
        ];
        for path in cases {
            let err = f.call(json!({"path": path})).await.unwrap_err();
            assert!(err.contains("outside the allowed root"), "{path}: {err}");
            assert!(!err.contains(SECRET_NAME), "{path}: {err}");
        }
        let root_listing = f.call(json!({})).await.unwrap();
        assert_eq!(root_listing, "link_out@\nslash@");
    }

    #[tokio::test]
    async fn names_with_control_characters_stay_on_one_line() {
        let f = fixture();
        fs::write(f.root.join("two\nlines"), "").unwrap();
        assert_eq!(f.call(json!({})).await.unwrap(), "two\\nlines");
    }

    #[tokio::test]
    async fn dotenv_files_are_listed_by_name_but_never_opened() {
        let f = fixture();
        fs::write(f.root.join(".env"), "OPENAI_API_KEY=sk-dotenv\n").unwrap();
        fs::create_dir_all(f.root.join("venv/.env")).unwrap();
        fs::write(f.root.join("venv/.env/pyvenv.cfg"), "x").unwrap();
        let listing = f.call(json!({})).await.unwrap();
        assert!(listing.contains(".env"), "{listing}");
        let error = f.call(json!({"path": ".env"})).await.unwrap_err();
        assert!(error.contains("is a dotenv file"), "{error}");
        // A directory of that name (a virtualenv) is not a dotenv file.
        let inside = f.call(json!({"path": "venv/.env"})).await.unwrap();
        assert!(inside.contains("pyvenv.cfg"), "{inside}");
    }

    #[tokio::test]
    async fn a_cancelled_call_lists_nothing() {
        let f = fixture();
        let cancel = CancellationToken::new();
        cancel.cancel();
        let (sink, _rx) = tokio::sync::mpsc::unbounded_channel();
        let err = f
            .tool
            .execute("call_1", json!({}), cancel, ToolUpdates::new(0, sink))
            .await
            .unwrap_err();
        assert_eq!(err.to_string(), "list_dir was cancelled");
    }
}

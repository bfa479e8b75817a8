//! What the tools' unit tests share: a scratch tree with a root and a
//! directory beside it, and one call of a tool as the loop makes it.
#![allow(clippy::unwrap_used)] // a failed setup step should fail the test loudly

use std::fs;
use std::path::PathBuf;

use serde_json::Value;
use tokio_util::sync::CancellationToken;

use super::{Tool, ToolUpdates};
use leash_protocol::{Content, ToolOutput};

/// A scratch directory holding `root/` (the sandbox root) and `outside/`
/// (where nothing may be read from).
pub(crate) struct Tree {
    _dir: tempfile::TempDir,
    /// The canonical scratch directory.
    pub(crate) base: PathBuf,
    /// `base/root`.
    pub(crate) root: PathBuf,
}

/// A fresh tree; `outside/{name}` holds `content`.
pub(crate) fn tree(name: &str, content: &str) -> Tree {
    let dir = tempfile::tempdir().unwrap();
    let base = fs::canonicalize(dir.path()).unwrap();
    let root = base.join("root");
    fs::create_dir_all(&root).unwrap();
    fs::create_dir_all(base.join("outside")).unwrap();
    fs::write(base.join("outside").join(name), content).unwrap();
    Tree {
        _dir: dir,
        base,
        root,
    }
}

/// One call of `tool`, as the loop makes it: its output, or its error's text.
pub(crate) async fn call(tool: &dyn Tool, args: Value) -> Result<ToolOutput, String> {
    let (sink, _rx) = tokio::sync::mpsc::unbounded_channel();
    tool.execute(
        "call_1",
        args,
        CancellationToken::new(),
        ToolUpdates::new(0, sink),
    )
    .await
    .map_err(|error| error.to_string())
}

/// The text of an output's content, joined.
pub(crate) fn text_of(output: &ToolOutput) -> String {
    output.content.iter().filter_map(Content::as_text).collect()
}

/// A tool over a [`Tree`]'s root, called as the loop calls it.
pub(crate) struct Fixture<T> {
    pub(crate) tree: Tree,
    pub(crate) tool: T,
}

impl<T> std::ops::Deref for Fixture<T> {
    type Target = Tree;
    fn deref(&self) -> &Tree {
        &self.tree
    }
}

impl<T: Tool> Fixture<T> {
    /// Writes a file under the root.
    pub(crate) fn write(&self, name: &str, bytes: impl AsRef<[u8]>) {
        fs::write(self.root.join(name), bytes).unwrap();
    }

    /// The call's text, or its error's text.
    pub(crate) async fn call(&self, args: Value) -> Result<String, String> {
        self.call_output(args).await.map(|out| text_of(&out))
    }

    /// The call's output, or its error's text.
    pub(crate) async fn call_output(&self, args: Value) -> Result<ToolOutput, String> {
        call(&self.tool, args).await
    }
}

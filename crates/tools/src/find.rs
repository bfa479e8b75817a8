//! The `find` tool: the files under the root whose path matches a glob,
//! found by the same walk as `grep` (`.gitignore`/`.ignore` honoured,
//! hidden files skipped, symlinks never followed), sorted, relative to the
//! root, capped with a note.
//!
//! It reads no file (only directories, and the ignore files in them) and
//! never walks outside the root: the named directory goes through
//! [`Sandbox::open`]. Memory stays bounded however large the tree: only
//! the first `limit` paths by name are kept.

use std::collections::BinaryHeap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use ignore::WalkState;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;
use tokio_util::sync::CancellationToken;

use super::sandbox::{EntryKind, Sandbox, SandboxError, shown_path};
use super::walk::{PathGlob, relative_to, shown_relative, walker};
use super::{Interrupted, ToolUpdates, TypedTool, run_blocking_call};
use leash_protocol::{Content, ToolOutput};

/// Paths shown when the call names no `limit`.
pub(crate) const DEFAULT_LIMIT: u32 = 1000;
/// The most paths one call shows, whatever `limit` asks for.
pub(crate) const MAX_LIMIT: u32 = 5000;

/// Why a `find` call failed. `Display` is what the model reads.
#[derive(Debug, thiserror::Error)]
pub enum FindError {
    /// The path was refused or could not be opened.
    #[error(transparent)]
    Sandbox(#[from] SandboxError),
    /// The path names a file.
    #[error("'{path}' is not a directory; find searches a directory tree")]
    NotDirectory {
        /// The path as the model gave it (shortened).
        path: String,
    },
    /// The pattern is not a glob.
    #[error("invalid glob '{pattern}': {reason}")]
    Glob {
        /// The pattern, shortened.
        pattern: String,
        /// Why.
        reason: String,
    },
    /// The run was aborted while walking, or the blocking work died.
    #[error(transparent)]
    Interrupted(#[from] Interrupted),
}

/// The `find` tool.
#[derive(Debug)]
pub struct Find {
    sandbox: Arc<Sandbox>,
}

/// The arguments of `find`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct FindArgs {
    /// A glob the file's path relative to the root must match:
    /// '**/*.rs', 'src/**/mod.rs'. '*' stays within one directory, '**'
    /// crosses them; a glob without '/' matches the file name alone.
    pub(crate) pattern: String,
    /// The directory to search, relative to the root (default '.').
    #[serde(default)]
    pub(crate) path: Option<String>,
    /// The most paths to show (default 1000, at most 5000).
    #[serde(default)]
    #[schemars(range(min = 1, max = 5000))]
    pub(crate) limit: Option<u32>,
}

impl Find {
    /// A `find` tool that searches under `sandbox`'s root.
    pub fn new(sandbox: Arc<Sandbox>) -> Find {
        Find { sandbox }
    }
}

impl TypedTool for Find {
    const NAME: &'static str = "find";
    type Args = FindArgs;
    type Error = FindError;

    fn description(&self) -> String {
        format!(
            "Find files under the root directory whose path matches a glob ('**/*.rs', \
             'src/**/mod.rs'; a glob without '/' matches the file name). .gitignore/.ignore \
             are honoured and hidden files skipped. Prints one path per line, relative to \
             the root, sorted; at most {DEFAULT_LIMIT} unless limit says otherwise (up to \
             {MAX_LIMIT}), with a note counting the rest."
        )
    }

    async fn call(
        &self,
        args: FindArgs,
        cancel: CancellationToken,
        _updates: ToolUpdates,
    ) -> Result<ToolOutput, FindError> {
        let sandbox = Arc::clone(&self.sandbox);
        run_blocking_call(Self::NAME, &cancel, move |cancel| {
            find_blocking(&sandbox, &args, cancel)
        })
        .await
    }
}

/// The whole call, on a blocking thread.
fn find_blocking(
    sandbox: &Sandbox,
    args: &FindArgs,
    cancel: &CancellationToken,
) -> Result<ToolOutput, FindError> {
    let glob = PathGlob::new(&args.pattern).map_err(|reason| FindError::Glob {
        pattern: shown_path(&args.pattern),
        reason,
    })?;
    let path = args.path.as_deref().unwrap_or(".");
    let opened = sandbox.open(path)?;
    if opened.kind() != EntryKind::Dir {
        return Err(FindError::NotDirectory {
            path: shown_path(path),
        });
    }
    let limit = args.limit.unwrap_or(DEFAULT_LIMIT).clamp(1, MAX_LIMIT) as usize;
    let kept: Mutex<BinaryHeap<String>> = Mutex::new(BinaryHeap::new());
    let total = AtomicU64::new(0);
    let root = sandbox.root();
    walker(sandbox, opened.real_path())
        .build_parallel()
        .run(|| {
            let (glob, kept, total) = (&glob, &kept, &total);
            Box::new(move |entry| {
                if cancel.is_cancelled() {
                    return WalkState::Quit;
                }
                let Ok(entry) = entry else {
                    return WalkState::Continue;
                };
                if !entry.file_type().is_some_and(|t| t.is_file()) {
                    return WalkState::Continue;
                }
                let Some(relative) = relative_to(root, entry.path()) else {
                    return WalkState::Continue;
                };
                if !glob.is_match(relative) {
                    return WalkState::Continue;
                }
                total.fetch_add(1, Ordering::Relaxed);
                if let Ok(mut kept) = kept.lock() {
                    kept.push(shown_relative(relative));
                    if kept.len() > limit {
                        // The heap's top is the largest path: the one that can go.
                        kept.pop();
                    }
                }
                WalkState::Continue
            })
        });
    if cancel.is_cancelled() {
        return Err(Interrupted::Cancelled { tool: Find::NAME }.into());
    }
    let paths = kept
        .into_inner()
        .map_err(|_| Interrupted::Failed {
            tool: Find::NAME,
            reason: "a walk thread panicked".to_owned(),
        })?
        .into_sorted_vec();
    let total = total.into_inner();
    let mut text = paths.join("\n");
    if paths.is_empty() {
        text = format!(
            "No files match '{}' in '{}' (hidden and ignored files are skipped).",
            shown_path(&args.pattern),
            shown_path(path)
        );
    } else if total > paths.len() as u64 {
        text.push_str(&format!(
            "\n\n[truncated: showed the first {} of {total} matching files, sorted by path; \
             narrow the pattern or path, or raise limit (at most {MAX_LIMIT})]",
            paths.len()
        ));
    }
    let details = json!({
        "pattern": args.pattern,
        "path": path,
        "files": total,
        "shown": paths.len(),
        "truncated": total > paths.len() as u64,
    });
    Ok(ToolOutput {
        content: vec![Content::text(text)],
        details,
        terminate: false,
        usage: None,
    })
}

#[cfg(test)]
#[path = "find_tests.rs"]
mod tests;

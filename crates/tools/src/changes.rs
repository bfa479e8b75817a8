//! What the writing tools changed: one `FileChange` per call (carried in
//! the call's result `details`, shown by `--events`), the run's
//! [`ChangeLog`] (the `changedFiles` of `--output json`), and the short
//! unified diff a writing tool answers with.

use std::collections::BTreeSet;
use std::sync::{Mutex, PoisonError};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::Value;
use similar::{ChangeTag, TextDiff};

/// The most lines of diff a result shows.
pub(crate) const MAX_DIFF_LINES: usize = 60;
/// The most bytes of diff a result shows.
pub(crate) const MAX_DIFF_BYTES: usize = 4 * 1024;
/// How long the diff may search for the smallest change before it settles
/// for a larger (still correct) one.
const DIFF_DEADLINE: Duration = Duration::from_millis(200);

/// One file a tool call changed: the `changed` field of
/// `tool_execution_end` and the `change` of the result's `details`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct FileChange {
    /// The file, relative to the root.
    pub path: String,
    /// Whether the call created it.
    pub created: bool,
    /// Lines added.
    pub added: u64,
    /// Lines removed.
    pub removed: u64,
}

impl FileChange {
    /// The change a tool result's `details` records, if it records one.
    pub fn from_details(details: &Value) -> Option<FileChange> {
        serde_json::from_value(details.get("change")?.clone()).ok()
    }

    /// `details` holding this change.
    pub fn to_details(&self) -> Value {
        serde_json::json!({ "change": self })
    }

    /// `src/x.rs (+3 -1)`, or `src/x.rs (new, +3)`.
    pub fn summary(&self) -> String {
        match self.created {
            true => format!("{} (new, +{})", self.path, self.added),
            false => format!("{} (+{} -{})", self.path, self.added, self.removed),
        }
    }
}

/// The files a run changed, relative to the root: shared by the writing
/// tools, read once for the result.
#[derive(Debug, Default)]
pub struct ChangeLog {
    paths: Mutex<BTreeSet<String>>,
}

impl ChangeLog {
    /// Records a changed file.
    pub fn record(&self, path: &str) {
        self.paths
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(path.to_owned());
    }

    /// Every changed file, sorted, each once.
    pub fn paths(&self) -> Vec<String> {
        self.paths
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .iter()
            .cloned()
            .collect()
    }
}

/// A diff of `old` against `new`: the lines added and removed, and a
/// unified diff of at most [`MAX_DIFF_LINES`] lines and [`MAX_DIFF_BYTES`]
/// bytes, with a note when cut.
pub(crate) fn diff(path: &str, old: &str, new: &str) -> (u64, u64, String) {
    let diff = TextDiff::configure()
        .timeout(DIFF_DEADLINE)
        .diff_lines(old, new);
    let (mut added, mut removed) = (0u64, 0u64);
    for change in diff.iter_all_changes() {
        match change.tag() {
            ChangeTag::Insert => added += 1,
            ChangeTag::Delete => removed += 1,
            ChangeTag::Equal => {}
        }
    }
    let mut out = format!("--- a/{path}\n+++ b/{path}\n");
    let mut lines = 0usize;
    let mut cut = false;
    let mut unified = diff.unified_diff();
    unified.context_radius(2);
    'hunks: for hunk in unified.iter_hunks() {
        for line in hunk.to_string().lines() {
            if lines >= MAX_DIFF_LINES || out.len() + line.len() + 1 > MAX_DIFF_BYTES {
                cut = true;
                break 'hunks;
            }
            out.push_str(line);
            out.push('\n');
            lines += 1;
        }
    }
    if cut {
        out.push_str("… (diff cut; read the file to see the rest)\n");
    }
    (added, removed, out)
}

/// How many lines a text has (a last line without a newline counts).
pub(crate) fn line_count(text: &str) -> u64 {
    text.lines().count() as u64
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn a_diff_counts_lines_and_shows_a_unified_hunk() {
        let (added, removed, text) = diff("a.txt", "one\ntwo\nthree\n", "one\n2\n2b\nthree\n");
        assert_eq!((added, removed), (2, 1));
        assert!(text.starts_with("--- a/a.txt\n+++ b/a.txt\n@@ -1,3 +1,4 @@\n"));
        assert!(text.contains("-two\n+2\n+2b\n"), "{text}");
    }

    #[test]
    fn a_long_diff_is_cut_with_a_note() {
        let old: String = (0..1000).map(|i| format!("line {i}\n")).collect();
        let new: String = (0..1000).map(|i| format!("LINE {i}\n")).collect();
        let (added, removed, text) = diff("big.txt", &old, &new);
        assert_eq!((added, removed), (1000, 1000));
        assert!(text.lines().count() <= MAX_DIFF_LINES + 3);
        assert!(text.len() <= MAX_DIFF_BYTES + 100);
        assert!(text.ends_with("… (diff cut; read the file to see the rest)\n"));
    }

    #[test]
    fn one_long_line_is_cut_by_bytes() {
        let new = "x".repeat(100_000);
        let (added, _, text) = diff("one.txt", "", &new);
        assert_eq!(added, 1);
        assert!(text.len() < MAX_DIFF_BYTES, "{}", text.len());
        assert!(text.contains("diff cut"));
    }

    #[test]
    fn the_change_log_is_sorted_and_unique() {
        let log = ChangeLog::default();
        for path in ["b.rs", "a/x.rs", "b.rs"] {
            log.record(path);
        }
        assert_eq!(log.paths(), ["a/x.rs", "b.rs"]);
    }

    #[test]
    fn a_change_round_trips_through_details() {
        let change = FileChange {
            path: "src/x.rs".into(),
            created: false,
            added: 3,
            removed: 1,
        };
        assert_eq!(
            FileChange::from_details(&change.to_details()),
            Some(change.clone())
        );
        assert_eq!(change.summary(), "src/x.rs (+3 -1)");
        assert_eq!(
            FileChange::from_details(&serde_json::json!({"path": "x"})),
            None
        );
    }
}

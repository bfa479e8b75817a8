//! The `grep` tool: a regex (or fixed-string) search under the root, over
//! one file or a directory tree, on ripgrep's own crates: `grep-regex` for
//! the matcher, `grep-searcher` for line-oriented search with binary
//! detection and context lines, and the parallel `ignore` walker (see
//! `walk`).
//!
//! It must never read outside the root (the named path goes through
//! [`Sandbox::open`], every file the walk finds through
//! `Sandbox::open_found`; symlinks are never followed), never read a
//! dotenv file or a special file, and never hold more than about two
//! `limit`s of matching lines whatever the tree: a file whose matches come
//! after the first `limit` by path is only counted. Results are sorted by
//! path, so a parallel walk still answers the same every time.

mod collect;
mod limits;

use std::fs::File;
use std::io::{self, Read};
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use grep_regex::{RegexMatcher, RegexMatcherBuilder};
use grep_searcher::{BinaryDetection, Searcher, SearcherBuilder};
use ignore::WalkState;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;
use tokio_util::sync::CancellationToken;

use self::collect::{Collected, FileSink, render};
pub(crate) use self::limits::{DEFAULT_LIMIT, MAX_BYTES, MAX_CONTEXT, MAX_LIMIT, MAX_LINE_CHARS};
use super::sandbox::{EntryKind, Sandbox, SandboxError, shown_path};
use super::walk::{PathGlob, relative_to, walker};
use super::{Interrupted, ToolUpdates, TypedTool, run_blocking_call};
use leash_protocol::{Content, ToolOutput};

/// Why a `grep` call failed. `Display` is what the model reads.
#[derive(Debug, thiserror::Error)]
pub enum GrepError {
    /// The path was refused or could not be opened.
    #[error(transparent)]
    Sandbox(#[from] SandboxError),
    /// The pattern is not a regex `grep` can use.
    #[error(
        "invalid regex '{pattern}': {reason} (Rust regex syntax; set literal: true to search for the text as it is)"
    )]
    Pattern {
        /// The pattern, shortened.
        pattern: String,
        /// The regex parser's reason.
        reason: String,
    },
    /// The `glob` is not a glob.
    #[error("invalid glob '{glob}': {reason}")]
    Glob {
        /// The glob, shortened.
        glob: String,
        /// Why.
        reason: String,
    },
    /// Reading the named file failed.
    #[error("searching '{path}' failed: {source}")]
    Io {
        /// The path as the model gave it (shortened).
        path: String,
        /// The operating system's error.
        #[source]
        source: io::Error,
    },
    /// The run was aborted while searching, or the blocking work died.
    #[error(transparent)]
    Interrupted(#[from] Interrupted),
}

impl GrepError {
    fn cancelled() -> Self {
        Interrupted::Cancelled { tool: Grep::NAME }.into()
    }
}

/// The `grep` tool.
#[derive(Debug)]
pub struct Grep {
    sandbox: Arc<Sandbox>,
}

/// The arguments of `grep`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct GrepArgs {
    /// The regex to search for (Rust regex syntax), or the text itself
    /// when `literal` is true. Matched line by line.
    pub(crate) pattern: String,
    /// A file or directory relative to the root (default '.', the whole
    /// tree).
    #[serde(default)]
    pub(crate) path: Option<String>,
    /// Only search files whose path relative to the root matches this glob
    /// ('*.rs' matches by file name, 'src/**/*.rs' by path).
    #[serde(default)]
    pub(crate) glob: Option<String>,
    /// Match case-insensitively (default false).
    #[serde(default)]
    pub(crate) ignore_case: Option<bool>,
    /// Search for `pattern` as fixed text, not a regex (default false).
    #[serde(default)]
    pub(crate) literal: Option<bool>,
    /// Lines to show before and after each match (default 0, at most 10).
    #[serde(default)]
    #[schemars(range(max = 10))]
    pub(crate) context: Option<u32>,
    /// The most matching lines to show (default 100, at most 1000).
    #[serde(default)]
    #[schemars(range(min = 1, max = 1000))]
    pub(crate) limit: Option<u32>,
}

impl Grep {
    /// A `grep` tool that searches under `sandbox`'s root.
    pub fn new(sandbox: Arc<Sandbox>) -> Grep {
        Grep { sandbox }
    }
}

impl TypedTool for Grep {
    const NAME: &'static str = "grep";
    type Args = GrepArgs;
    type Error = GrepError;

    fn description(&self) -> String {
        format!(
            "Search file contents under the root directory for a regex (Rust syntax) or, \
             with literal: true, a fixed string. Searches one file or a whole directory \
             tree; .gitignore/.ignore are honoured and hidden and binary files skipped. \
             Prints 'path:line:text' per matching line (context lines as 'path-line-text'), \
             paths relative to the root, sorted; at most {DEFAULT_LIMIT} matches unless \
             limit says otherwise (up to {MAX_LIMIT}), with a note counting the rest. Lines \
             longer than {MAX_LINE_CHARS} characters are cut."
        )
    }

    async fn call(
        &self,
        args: GrepArgs,
        cancel: CancellationToken,
        _updates: ToolUpdates,
    ) -> Result<ToolOutput, GrepError> {
        let sandbox = Arc::clone(&self.sandbox);
        run_blocking_call(Self::NAME, &cancel, move |cancel| {
            grep_blocking(&sandbox, &args, cancel)
        })
        .await
    }
}

/// What one search needs, shared by the walk's threads.
struct Search {
    matcher: RegexMatcher,
    searcher: SearcherBuilder,
    limit: usize,
    cancel: CancellationToken,
}

impl Search {
    /// Searches one opened file into `collected`. `Ok(false)`: cancelled.
    fn file(
        &self,
        searcher: &mut Searcher,
        file: File,
        shown: String,
        collected: &Mutex<Collected>,
    ) -> io::Result<bool> {
        let count_only = collected
            .lock()
            .map(|c| c.is_full_before(&shown))
            .unwrap_or(true);
        let mut sink = FileSink::new(shown, self.limit, count_only, &self.cancel);
        let reader = Cancellable {
            inner: file,
            cancel: &self.cancel,
        };
        let outcome = searcher.search_reader(&self.matcher, reader, &mut sink);
        if self.cancel.is_cancelled() {
            return Ok(false);
        }
        outcome?;
        if let Some(hits) = sink.finish()
            && let Ok(mut collected) = collected.lock()
        {
            collected.add(hits);
        }
        Ok(true)
    }
}

/// A reader that fails once the run is cancelled, so even one huge file
/// stops at its next read.
struct Cancellable<'a, R> {
    inner: R,
    cancel: &'a CancellationToken,
}

impl<R: Read> Read for Cancellable<'_, R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if self.cancel.is_cancelled() {
            return Err(io::Error::other("grep was cancelled"));
        }
        self.inner.read(buf)
    }
}

/// The whole call, on a blocking thread.
fn grep_blocking(
    sandbox: &Sandbox,
    args: &GrepArgs,
    cancel: &CancellationToken,
) -> Result<ToolOutput, GrepError> {
    let matcher = matcher(args)?;
    let glob = match &args.glob {
        Some(glob) => Some(PathGlob::new(glob).map_err(|reason| GrepError::Glob {
            glob: shown_path(glob),
            reason,
        })?),
        None => None,
    };
    let path = args.path.as_deref().unwrap_or(".");
    let opened = sandbox.open(path)?;
    let context = args.context.unwrap_or(0).min(MAX_CONTEXT) as usize;
    let limit = args.limit.unwrap_or(DEFAULT_LIMIT).clamp(1, MAX_LIMIT) as usize;
    let search = Search {
        matcher,
        searcher: {
            let mut builder = SearcherBuilder::new();
            builder
                .line_number(true)
                .binary_detection(BinaryDetection::quit(0))
                .before_context(context)
                .after_context(context);
            builder
        },
        limit,
        cancel: cancel.clone(),
    };
    let collected = Mutex::new(Collected::new(limit));
    let searched = AtomicU64::new(0);
    let root = sandbox.root();
    let real = opened.real_path().to_path_buf();
    match opened.kind() {
        EntryKind::File => {
            let shown = shown_of(root, &real);
            let mut searcher = search.searcher.build();
            let done = search
                .file(&mut searcher, opened.into_file(), shown, &collected)
                .map_err(|source| GrepError::Io {
                    path: shown_path(path),
                    source,
                })?;
            if !done {
                return Err(GrepError::cancelled());
            }
            searched.fetch_add(1, Ordering::Relaxed);
        }
        EntryKind::Dir => {
            walk(
                sandbox,
                &real,
                glob.as_ref(),
                &search,
                &collected,
                &searched,
            );
            if cancel.is_cancelled() {
                return Err(GrepError::cancelled());
            }
        }
    }
    let collected = collected.into_inner().map_err(|_| Interrupted::Failed {
        tool: Grep::NAME,
        reason: "a search thread panicked".to_owned(),
    })?;
    let searched = searched.into_inner();
    let rendered = render(&collected, context > 0);
    let text = if rendered.shown == 0 && collected.total_matches() == 0 {
        format!(
            "No matches for '{}' in '{}' ({searched} file{} searched; hidden, ignored and binary files are skipped).",
            shown_path(&args.pattern),
            shown_path(path),
            if searched == 1 { "" } else { "s" },
        )
    } else {
        rendered.text
    };
    let details = json!({
        "pattern": args.pattern,
        "path": path,
        "matches": collected.total_matches(),
        "shown": rendered.shown,
        "files": collected.files_with_matches(),
        "searched": searched,
        "truncated": rendered.shown < collected.total_matches(),
    });
    Ok(ToolOutput {
        content: vec![Content::text(text)],
        details,
        terminate: false,
        usage: None,
    })
}

/// The matcher for the call's pattern and flags.
fn matcher(args: &GrepArgs) -> Result<RegexMatcher, GrepError> {
    RegexMatcherBuilder::new()
        .case_insensitive(args.ignore_case.unwrap_or(false))
        .fixed_strings(args.literal.unwrap_or(false))
        .line_terminator(Some(b'\n'))
        .ban_byte(Some(0))
        .build(&args.pattern)
        .map_err(|error| GrepError::Pattern {
            pattern: shown_path(&args.pattern),
            reason: regex_reason(&error.to_string()),
        })
}

/// The last line of a regex error (its reason), without the `error:` tag;
/// the lines above it repeat the pattern with a caret.
fn regex_reason(message: &str) -> String {
    let last = message
        .lines()
        .map(str::trim)
        .rfind(|line| !line.is_empty())
        .unwrap_or("not a valid regex");
    last.strip_prefix("error: ").unwrap_or(last).to_owned()
}

/// The path relative to the root as shown, for a canonical path inside it.
fn shown_of(root: &Path, real: &Path) -> String {
    super::walk::shown_relative(relative_to(root, real).unwrap_or(real))
}

/// The parallel walk of `dir`: every regular file it finds (matching the
/// glob) is opened through the sandbox and searched.
fn walk(
    sandbox: &Sandbox,
    dir: &Path,
    glob: Option<&PathGlob>,
    search: &Search,
    collected: &Mutex<Collected>,
    searched: &AtomicU64,
) {
    let root = sandbox.root();
    walker(sandbox, dir).build_parallel().run(|| {
        let mut searcher = search.searcher.build();
        Box::new(move |entry| {
            if search.cancel.is_cancelled() {
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
            if glob.is_some_and(|glob| !glob.is_match(relative)) {
                return WalkState::Continue;
            }
            let Some(inode) = entry.ino() else {
                return WalkState::Continue;
            };
            let Ok(file) = sandbox.open_found(entry.path(), inode) else {
                return WalkState::Continue;
            };
            searched.fetch_add(1, Ordering::Relaxed);
            let shown = super::walk::shown_relative(relative);
            match search.file(&mut searcher, file, shown, collected) {
                Ok(false) => WalkState::Quit,
                _ => WalkState::Continue,
            }
        })
    });
}

#[cfg(test)]
mod tests;

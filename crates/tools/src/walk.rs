//! What `grep` and `find` share: the walk of a directory under the root
//! (ripgrep's `ignore` walker: `.gitignore`/`.ignore` honoured, hidden
//! files skipped, symlinks never followed), the glob a path must match, and
//! the path as the model sees it.
//!
//! The walk reads nothing outside the root: parent directories' ignore
//! files are applied only from the root down (never above it), and the
//! user's global gitignore and `.git/info/exclude` (which a worktree keeps
//! outside the tree) are not read. Files the walk finds are opened through
//! [`Sandbox::open_found`], which checks them like every other open.

use std::path::Path;
use std::sync::Arc;

use globset::{GlobBuilder, GlobMatcher};
use ignore::WalkBuilder;
use ignore::gitignore::{Gitignore, GitignoreBuilder};

use super::sandbox::{Sandbox, push_escaped};

/// The names of the ignore files the walk honours, in every directory.
const IGNORE_FILES: [&str; 2] = [".gitignore", ".ignore"];

/// A walker over `dir` (a canonical directory inside the root).
pub(super) fn walker(sandbox: &Sandbox, dir: &Path) -> WalkBuilder {
    let mut builder = WalkBuilder::new(dir);
    builder
        .standard_filters(true)
        .hidden(true)
        .parents(false)
        .git_global(false)
        .git_exclude(false)
        .require_git(false)
        .follow_links(false)
        .threads(0);
    let above = ancestor_ignores(sandbox.root(), dir);
    if !above.is_empty() {
        let above = Arc::new(above);
        builder.filter_entry(move |entry| {
            let is_dir = entry.file_type().is_some_and(|t| t.is_dir());
            !above.iter().any(|ignore| {
                entry.path().starts_with(ignore.path())
                    && ignore
                        .matched_path_or_any_parents(entry.path(), is_dir)
                        .is_ignore()
            })
        });
    }
    builder
}

/// The ignore files of the directories from the root down to `dir`'s
/// parent (the walker reads `dir`'s own and those below it), nearest last.
fn ancestor_ignores(root: &Path, dir: &Path) -> Vec<Gitignore> {
    let Ok(below) = dir.strip_prefix(root) else {
        return Vec::new();
    };
    let mut ignores = Vec::new();
    let mut current = root.to_path_buf();
    for name in below.iter() {
        let mut builder = GitignoreBuilder::new(&current);
        let mut any = false;
        for file in IGNORE_FILES {
            let path = current.join(file);
            // Only a regular file (never a symlink) inside the root.
            if std::fs::symlink_metadata(&path).is_ok_and(|m| m.is_file()) {
                any |= builder.add(&path).is_none();
            }
        }
        if any && let Ok(ignore) = builder.build() {
            ignores.push(ignore);
        }
        current.push(name);
    }
    ignores
}

/// A glob a path relative to the root must match. `*` and `?` stop at `/`,
/// `**` crosses directories; a glob without a `/` matches the file name
/// alone (`*.rs` finds every Rust file, as in a `.gitignore`).
#[derive(Debug, Clone)]
pub(super) struct PathGlob {
    matcher: GlobMatcher,
    name_only: bool,
}

impl PathGlob {
    /// The glob, or the reason it is not one.
    pub(super) fn new(pattern: &str) -> Result<PathGlob, String> {
        let pattern = pattern.strip_prefix("./").unwrap_or(pattern);
        let glob = GlobBuilder::new(pattern)
            .literal_separator(true)
            .backslash_escape(true)
            .build()
            .map_err(|error| error.kind().to_string())?;
        Ok(PathGlob {
            matcher: glob.compile_matcher(),
            name_only: !pattern.contains('/'),
        })
    }

    /// Whether `relative` (a path relative to the root) matches.
    pub(super) fn is_match(&self, relative: &Path) -> bool {
        if self.name_only {
            relative
                .file_name()
                .is_some_and(|name| self.matcher.is_match(name))
        } else {
            self.matcher.is_match(relative)
        }
    }
}

/// `path` relative to the root, or `None` for a path outside it.
pub(super) fn relative_to<'a>(root: &Path, path: &'a Path) -> Option<&'a Path> {
    path.strip_prefix(root).ok()
}

/// A path relative to the root as the model sees it: lossy UTF-8, control
/// characters escaped so a name cannot break the one-result-per-line shape,
/// `.` for the root itself.
pub(super) fn shown_relative(relative: &Path) -> String {
    if relative.as_os_str().is_empty() {
        return ".".to_owned();
    }
    let mut out = String::new();
    push_escaped(&mut out, &relative.to_string_lossy());
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_glob_without_a_slash_matches_the_name_and_one_with_a_slash_the_path() {
        let rs = PathGlob::new("*.rs").unwrap_or_else(|e| panic!("{e}"));
        assert!(rs.is_match(Path::new("src/tools/mod.rs")));
        assert!(!rs.is_match(Path::new("src/tools/mod.rsx")));
        let deep = PathGlob::new("src/**/mod.rs").unwrap_or_else(|e| panic!("{e}"));
        assert!(deep.is_match(Path::new("src/tools/mod.rs")));
        assert!(deep.is_match(Path::new("src/mod.rs")));
        assert!(!deep.is_match(Path::new("lib/tools/mod.rs")));
        let one = PathGlob::new("./src/*.rs").unwrap_or_else(|e| panic!("{e}"));
        assert!(one.is_match(Path::new("src/lib.rs")));
        assert!(!one.is_match(Path::new("src/tools/mod.rs")));
        assert!(PathGlob::new("src/[a").is_err());
    }

    #[test]
    fn shown_paths_escape_control_characters() {
        assert_eq!(shown_relative(Path::new("")), ".");
        assert_eq!(shown_relative(Path::new("a\nb.rs")), "a\\nb.rs");
    }
}

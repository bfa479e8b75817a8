//! The user's documentation as the tests read it: the README (the front
//! door) and the manual's chapters under `docs/src/` (the mdBook). The
//! recipes that tests run as written are found by their
//! `<!-- recipe: NAME -->` marker wherever they live, so a recipe can move
//! between the README and the book without a test noticing.

use std::path::{Path, PathBuf};

/// The repository's root, where README.md and docs/ are.
fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// README.md, then every chapter of the manual in name order.
fn pages() -> Vec<PathBuf> {
    let mut chapters: Vec<PathBuf> = std::fs::read_dir(root().join("docs/src"))
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "md"))
        .collect();
    chapters.sort();
    let mut pages = vec![root().join("README.md")];
    pages.extend(chapters);
    pages
}

/// One chapter of the manual, e.g. `manual("batch.md")`.
pub fn manual(chapter: &str) -> String {
    let path = root().join("docs/src").join(chapter);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The README and the whole manual as one text, for facts that must be
/// documented somewhere a user reads.
pub fn everything() -> String {
    pages()
        .iter()
        .map(|path| std::fs::read_to_string(path).unwrap())
        .collect::<Vec<_>>()
        .join("\n")
}

/// The code block that follows `<!-- recipe: NAME -->` in the README or
/// the manual. A recipe shown in both places carries the marker in each,
/// and every copy must be the same text: the one a test runs is the one a
/// user copies, wherever they copy it from.
pub fn recipe(name: &str) -> String {
    let marker = format!("<!-- recipe: {name} -->");
    let mut copies: Vec<(PathBuf, String)> = Vec::new();
    for path in pages() {
        let text = std::fs::read_to_string(&path).unwrap();
        let mut rest = text.as_str();
        while let Some(at) = rest.find(&marker) {
            let after = &rest[at + marker.len()..];
            let fence = after
                .find("```")
                .unwrap_or_else(|| panic!("{marker} in {}: no code block", path.display()));
            let body = &after[fence..];
            let start = body.find('\n').unwrap() + 1;
            let end = body[start..].find("```").unwrap();
            copies.push((path.clone(), body[start..start + end].to_owned()));
            rest = &body[start + end..];
        }
    }
    let (first_path, first) = copies
        .first()
        .unwrap_or_else(|| panic!("no {marker} in README.md or docs/src"));
    for (path, copy) in &copies[1..] {
        assert_eq!(
            copy,
            first,
            "{marker}: {} and {} differ",
            path.display(),
            first_path.display()
        );
    }
    first.clone()
}

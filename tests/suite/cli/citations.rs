//! Code cites its documents by heading, never by issue number (README
//! "The manual"): a comment's `ARCHITECTURE.md "Floors"` or
//! `docs/src/tools.md "The shell: --allow-exec"` must name a heading that file has, or
//! a bold lead (`**The key never leaves**`) of one of its lists, so a
//! maintainer who follows it lands somewhere. A heading renamed or a file
//! moved breaks the cites here, not in a reader's hands.

use super::install::repo_file;

use std::path::{Path, PathBuf};

/// Where comments cite documents: the code, the tests, the benches, the
/// fuzz targets, the examples, and the build and CI scripts.
const CODE: &[&str] = &[
    "src",
    "tests",
    "benches",
    "fuzz/src",
    "fuzz/fuzz_targets",
    "examples",
];
const SCRIPTS: &[&str] = &["Makefile", ".ci", "action", "install.sh"];

fn files_under(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        if dir.is_file() {
            out.push(dir.to_owned());
        }
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            files_under(&path, out);
        } else {
            out.push(path);
        }
    }
}

/// The comment text of a file, each run of consecutive comment lines
/// joined into one line (a cite may wrap), with its first line number.
fn comment_runs(text: &str, marker: &str) -> Vec<(usize, String)> {
    let mut runs: Vec<(usize, String)> = Vec::new();
    let mut open = false;
    for (number, line) in text.lines().enumerate() {
        let trimmed = line.trim_start();
        match trimmed.strip_prefix(marker) {
            Some(rest) => {
                let rest = rest.trim_start_matches(['/', '!']).trim();
                match runs.last_mut() {
                    Some((_, run)) if open => {
                        run.push(' ');
                        run.push_str(rest);
                    }
                    _ => runs.push((number + 1, rest.to_owned())),
                }
                open = true;
            }
            None => open = false,
        }
    }
    runs
}

/// Every `FILE.md "Heading"` (or `FILE.md, "Heading"`) in `text`: the
/// document as written and the quoted words.
fn cites(text: &str) -> Vec<(String, String)> {
    let mut found = Vec::new();
    let mut rest = text;
    while let Some(at) = rest.find(".md") {
        let before = &rest[..at];
        let start = before
            .rfind(|c: char| !(c.is_ascii_alphanumeric() || "_-/.".contains(c)))
            .map_or(0, |i| i + 1);
        let name = format!("{}.md", &before[start..]);
        let after = rest[at + 3..].trim_start_matches(',').trim_start();
        if let Some(quoted) = after.strip_prefix('"')
            && let Some(end) = quoted.find('"')
        {
            found.push((name, quoted[..end].to_owned()));
        }
        rest = &rest[at + 3..];
    }
    found
}

/// A document's headings and bold leads, backticks and stars dropped.
fn anchors(document: &str) -> Vec<String> {
    let plain = |s: &str| {
        s.replace(['`', '*'], "")
            .trim()
            .trim_end_matches(['.', ':'])
            .to_owned()
    };
    let mut names = Vec::new();
    for line in document.lines() {
        if let Some(heading) = line.strip_prefix('#') {
            names.push(plain(heading.trim_start_matches('#')));
        }
        let mut rest = line;
        while let Some(open) = rest.find("**") {
            let Some(close) = rest[open + 2..].find("**") else {
                break;
            };
            names.push(plain(&rest[open + 2..open + 2 + close]));
            rest = &rest[open + 2 + close + 2..];
        }
    }
    names
}

/// The document a cite names: from the root, else a chapter of the manual.
fn document(name: &str) -> Option<PathBuf> {
    [repo_file(name), repo_file("docs/src").join(name)]
        .into_iter()
        .find(|path| path.is_file())
}

fn broken_cites() -> (usize, Vec<String>) {
    let mut sources = Vec::new();
    for dir in CODE.iter().chain(SCRIPTS) {
        files_under(&repo_file(dir), &mut sources);
    }
    let mut checked = 0;
    let mut broken = Vec::new();
    for source in sources {
        let marker = match source.extension().and_then(|e| e.to_str()) {
            Some("rs") => "//",
            Some("md" | "json" | "toml" | "txt" | "snap" | "mjs" | "js") => continue,
            _ => "#",
        };
        let Ok(text) = std::fs::read_to_string(&source) else {
            continue; // a binary seed or fixture
        };
        for (line, run) in comment_runs(&text, marker) {
            for (name, heading) in cites(&run) {
                let Some(path) = document(&name) else {
                    continue; // a name that is no document of this repository
                };
                checked += 1;
                let wanted = heading.replace(['`', '*'], "");
                let doc = std::fs::read_to_string(&path).unwrap();
                if !anchors(&doc).iter().any(|a| *a == wanted.trim()) {
                    let shown = source.strip_prefix(repo_file("")).unwrap_or(&source);
                    broken.push(format!("{}:{line}: {name} \"{heading}\"", shown.display()));
                }
            }
        }
    }
    (checked, broken)
}

#[test]
fn every_cite_of_a_document_names_a_heading_it_has() {
    let (checked, broken) = broken_cites();
    assert!(
        checked > 100,
        "only {checked} cites found: the scan is broken"
    );
    assert!(
        broken.is_empty(),
        "{} cites name no heading or bold lead of their document:\n{}",
        broken.len(),
        broken.join("\n")
    );
}

#[test]
fn a_cite_is_found_across_wrapped_comment_lines_and_checked() {
    let text = "//! See ARCHITECTURE.md\n//! \"Floors\" and docs/src/tools.md, \"No such heading\".\nlet x = 1;\n";
    let runs = comment_runs(text, "//");
    assert_eq!(runs.len(), 1);
    let found = cites(&runs[0].1);
    assert_eq!(
        found,
        [
            ("ARCHITECTURE.md".to_owned(), "Floors".to_owned()),
            ("docs/src/tools.md".to_owned(), "No such heading".to_owned()),
        ]
    );
    let doc =
        "# Title\n\n## The `faux` model\n\n- **The key never leaves**: ...\n- **Resume.** ...\n";
    let names = anchors(doc);
    assert!(names.contains(&"The faux model".to_owned()));
    assert!(names.contains(&"The key never leaves".to_owned()));
    assert!(names.contains(&"Resume".to_owned()));
    assert!(!names.contains(&"No such heading".to_owned()));
}

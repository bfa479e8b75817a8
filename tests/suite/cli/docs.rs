//! `make check`'s manual step (README "The manual"): `.ci/links` builds
//! the book with mdbook and checks every relative link and #anchor with
//! lychee, offline, both pinned into .tools/ (installed here through the
//! Makefile's own target when missing: a missing tool fails the test, never
//! skips it). It passes this repository and fails broken copies, naming
//! what broke.

use super::install::repo_file;
use crate::support::shell::Workspace;

use std::path::Path;
use std::process::{Command, Output};

fn log(output: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}

/// `make docs-tools` once, then `.ci/links DIR`.
fn links(dir: &Path) -> Output {
    let tools = Command::new("make")
        .args(["--no-print-directory", "-s", "docs-tools"])
        .current_dir(repo_file(""))
        .env_remove("MAKEFLAGS")
        .output()
        .unwrap();
    assert!(tools.status.success(), "{}", log(&tools));
    Command::new(repo_file(".ci/links"))
        .arg(dir)
        .output()
        .unwrap()
}

/// The root's documents and docs/ copied into a fresh directory.
fn copy() -> Workspace {
    let ws = Workspace::new();
    for file in [
        "README.md",
        "ARCHITECTURE.md",
        "SECURITY.md",
        "CHANGELOG.md",
        "CONTRIBUTING.md",
        "LICENSE",
        "docs/book.toml",
    ] {
        ws.write(file, &std::fs::read_to_string(repo_file(file)).unwrap());
    }
    for entry in std::fs::read_dir(repo_file("docs/src")).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_str().unwrap().to_owned();
        ws.write(
            &format!("docs/src/{name}"),
            &std::fs::read_to_string(&path).unwrap(),
        );
    }
    ws
}

/// Replaces the one `from` in `file` of `ws` with `to`.
fn edit(ws: &Workspace, file: &str, from: &str, to: &str) {
    let text = std::fs::read_to_string(ws.path(file)).unwrap();
    assert_eq!(text.matches(from).count(), 1, "{file}: {from}");
    ws.write(file, &text.replacen(from, to, 1));
}

#[test]
fn the_manual_builds_and_every_internal_link_resolves() {
    let ws = copy();
    let ours = links(&ws.path(""));
    assert!(ours.status.success(), "{}", log(&ours));
    assert!(ws.path("target/book/batch.html").is_file());
    assert!(log(&ours).contains(" 0 Errors"), "{}", log(&ours));
}

#[test]
fn a_broken_anchor_in_a_chapter_fails_the_check_naming_it() {
    let ws = copy();
    edit(&ws, "docs/src/usage.md", "](#stdin)", "](#stidn)");
    let broken = links(&ws.path(""));
    assert!(!broken.status.success(), "{}", log(&broken));
    let text = log(&broken);
    assert!(text.contains("usage.md#stidn"), "{text}");
    assert!(text.contains("Cannot find fragment"), "{text}");
}

#[test]
fn a_readme_link_to_a_heading_github_would_not_slug_so_fails() {
    let ws = copy();
    // GitHub slugs "The shell: --allow-exec" as the-shell---allow-exec; a
    // link that drops the dashes leads nowhere on GitHub.
    edit(
        &ws,
        "README.md",
        "](docs/src/tools.md#the-shell)",
        "](docs/src/tools.md#the-shell-allow-exec)",
    );
    let broken = links(&ws.path(""));
    assert!(!broken.status.success(), "{}", log(&broken));
    let text = log(&broken);
    assert!(text.contains("README.md"), "{text}");
    assert!(text.contains("tools.md#the-shell-allow-exec"), "{text}");
}

#[test]
fn a_link_to_a_missing_chapter_or_a_chapter_missing_from_the_book_fails() {
    let ws = copy();
    edit(
        &ws,
        "README.md",
        "| [Hooks](docs/src/hooks.md) |",
        "| [Hooks](docs/src/hook.md) |",
    );
    let broken = links(&ws.path(""));
    assert!(!broken.status.success(), "{}", log(&broken));
    assert!(log(&broken).contains("hook.md"), "{}", log(&broken));

    let ws = copy();
    std::fs::remove_file(ws.path("docs/src/mcp.md")).unwrap();
    let broken = links(&ws.path(""));
    assert!(!broken.status.success(), "{}", log(&broken));
    assert!(log(&broken).contains("mcp.md"), "{}", log(&broken));
}

#[test]
fn a_chapter_summary_md_leaves_out_fails_the_check() {
    let ws = copy();
    ws.write("docs/src/orphan.md", "# Orphan\n");
    let broken = links(&ws.path(""));
    assert!(!broken.status.success(), "{}", log(&broken));
    assert!(
        log(&broken).contains("docs/src/orphan.md is not in docs/src/SUMMARY.md"),
        "{}",
        log(&broken)
    );
}

#[test]
fn the_readme_stays_a_front_door() {
    let readme = std::fs::read_to_string(repo_file("README.md")).unwrap();
    let lines = readme.lines().count();
    assert!(
        lines <= 250,
        "README.md has {lines} lines: move the detail into docs/src"
    );
}

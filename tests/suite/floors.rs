//! `.ci/floors` (ARCHITECTURE.md "Floors"), run as `make check` runs it,
//! on small fake `src/` trees: it refuses two files that use each other
//! (through a `use` line or a plain path in code), a file past 500 lines of
//! code, and accepts a folder's front door (`pub use child::Item`) with a
//! child that uses its parent's re-export.

#![allow(clippy::unwrap_used, clippy::expect_used)] // tests may panic on a broken fixture

use std::path::{Path, PathBuf};
use std::process::Output;

use assert_cmd::Command;
use tempfile::TempDir;

/// A fake crate: `src/lib.rs` declaring `mod policy;`, and these files
/// under `src/` (path, text).
fn tree(files: &[(&str, &str)]) -> TempDir {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("src");
    std::fs::create_dir_all(&src).unwrap();
    std::fs::write(src.join("lib.rs"), "mod policy;\n").unwrap();
    for (path, text) in files {
        let file = src.join(path);
        std::fs::create_dir_all(file.parent().unwrap()).unwrap();
        std::fs::write(file, text).unwrap();
    }
    dir
}

fn script() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(".ci/floors")
}

/// `python3 .ci/floors --src DIR/src`, as `make check` runs it.
fn floors(dir: &TempDir) -> Output {
    Command::new("python3")
        .arg(script())
        .arg("--src")
        .arg(dir.path().join("src"))
        .output()
        .expect("python3 runs .ci/floors")
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

/// The lines of stderr that name a circle.
fn circle_lines(output: &Output) -> Vec<String> {
    stderr(output)
        .lines()
        .filter(|line| line.contains("circle"))
        .map(str::to_owned)
        .collect()
}

const FACADE: &str = "mod queues;\nmod run;\n\npub use queues::Queue;\npub use run::run;\n";

#[test]
fn two_files_that_use_each_other_are_refused_on_one_line_naming_both() {
    let dir = tree(&[
        ("policy/mod.rs", FACADE),
        (
            "policy/queues.rs",
            "use super::run::Turn;\n\npub struct Queue(pub Vec<Turn>);\n",
        ),
        (
            "policy/run.rs",
            "use crate::policy::queues::Queue;\n\npub struct Turn;\n\npub fn run(_: Queue) {}\n",
        ),
    ]);
    let output = floors(&dir);
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    let circles = circle_lines(&output);
    assert_eq!(circles.len(), 1, "{circles:?}");
    assert!(circles[0].starts_with("floors: a circle of 2 files: "));
    assert!(circles[0].contains("policy/queues.rs uses policy/run.rs (line 1)"));
    assert!(circles[0].contains("policy/run.rs uses policy/queues.rs (line 1)"));
}

#[test]
fn a_plain_path_in_code_counts_as_a_use() {
    let dir = tree(&[
        ("policy/mod.rs", FACADE),
        (
            "policy/queues.rs",
            "pub struct Queue;\n\npub fn poll() -> usize {\n    super::run::TURNS\n}\n",
        ),
        (
            "policy/run.rs",
            "pub const TURNS: usize = 3;\n\npub fn run(_: crate::policy::queues::Queue) {}\n",
        ),
    ]);
    let output = floors(&dir);
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    let circles = circle_lines(&output);
    assert_eq!(circles.len(), 1, "{circles:?}");
    assert!(circles[0].contains("policy/queues.rs uses policy/run.rs (line 4)"));
    assert!(circles[0].contains("policy/run.rs uses policy/queues.rs (line 3)"));
}

#[test]
fn a_front_door_and_a_child_using_its_parents_reexport_are_no_circle() {
    // mod.rs re-exports both children; queues.rs names `super::Turn`,
    // which leads through the re-export to run.rs, not to mod.rs.
    let dir = tree(&[
        (
            "policy/mod.rs",
            "mod queues;\nmod run;\n\npub use queues::Queue;\npub use run::{Turn, run};\n",
        ),
        (
            "policy/queues.rs",
            "use super::Turn;\n\npub struct Queue(pub Vec<Turn>);\n",
        ),
        ("policy/run.rs", "pub struct Turn;\n\npub fn run() {}\n"),
    ]);
    let output = floors(&dir);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert!(circle_lines(&output).is_empty());
}

#[test]
fn a_parent_and_a_child_that_use_each_other_are_refused() {
    // Not a front door: the parent calls into its child, which reads the
    // parent's own constant back.
    let dir = tree(&[
        (
            "policy/mod.rs",
            "mod run;\n\npub const TURNS: usize = 3;\n\npub fn go() {\n    run::run();\n}\n",
        ),
        (
            "policy/run.rs",
            "use super::TURNS;\n\npub fn run() -> usize {\n    TURNS\n}\n",
        ),
    ]);
    let output = floors(&dir);
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    let circles = circle_lines(&output);
    assert_eq!(circles.len(), 1, "{circles:?}");
    assert!(circles[0].contains("policy/mod.rs uses policy/run.rs (line 6)"));
    assert!(circles[0].contains("policy/run.rs uses policy/mod.rs (line 1)"));
}

#[test]
fn a_file_past_500_lines_of_code_is_refused_and_its_tests_do_not_count() {
    let long = "pub const A: u8 = 0;\n".repeat(501);
    let tested = format!(
        "{}#[cfg(test)]\nmod tests {{\n{}}}\n",
        "pub const B: u8 = 0;\n".repeat(500),
        "    const C: u8 = 0;\n".repeat(100)
    );
    let dir = tree(&[
        ("policy/mod.rs", "mod long;\nmod tested;\n"),
        ("policy/long.rs", &long),
        ("policy/tested.rs", &tested),
    ]);
    let output = floors(&dir);
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    let text = stderr(&output);
    let refused: Vec<&str> = text
        .lines()
        .filter(|line| line.contains("past 500"))
        .collect();
    assert_eq!(
        refused,
        ["floors: policy/long.rs: 501 lines of code, past 500: split it along a seam"]
    );
}

//! The `grep` tool over a large generated tree (10k files, 100 MB, in a
//! temporary directory), timed as a whole leash run on the faux model (one
//! grep call, then an answer), next to the `rg` binary on the same tree
//! when it is installed.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::process::Runner;
use crate::table::{Row, Target, median};

/// Files in the tree, spread over [`DIRS`] directories.
const FILES: usize = 10_000;
const DIRS: usize = 100;
/// Bytes per file (10k × 10 KiB ≈ 100 MB).
const FILE_BYTES: usize = 10 * 1024;
/// Every this many files holds the needle line (all land in `d000`).
const NEEDLE_EVERY: usize = 1000;
/// The regex searched for: rare, with a literal part, as a model would.
const PATTERN: &str = r"needle_[0-9]+\(";

/// Builds the tree under `dir`: plain text lines of words, a few needles.
fn generate(dir: &Path) {
    const WORDS: [&str; 16] = [
        "let", "value", "match", "return", "struct", "impl", "config", "error", "path", "self",
        "string", "option", "result", "buffer", "index", "token",
    ];
    let mut state: u64 = 0x9E37_79B9_7F4A_7C15;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    // 64 distinct blocks, reused: generating is not what is measured.
    let blocks: Vec<String> = (0..64)
        .map(|_| {
            let mut block = String::with_capacity(FILE_BYTES + 80);
            while block.len() < FILE_BYTES {
                let words = 4 + next() % 8;
                for w in 0..words {
                    if w > 0 {
                        block.push(' ');
                    }
                    block.push_str(WORDS[(next() % 16) as usize]);
                }
                block.push_str(";\n");
            }
            block
        })
        .collect();
    for d in 0..DIRS {
        std::fs::create_dir_all(dir.join(format!("d{d:03}"))).expect("a directory");
    }
    for f in 0..FILES {
        let mut text = blocks[f % blocks.len()].clone();
        if f % NEEDLE_EVERY == 0 {
            text.push_str(&format!("call needle_{f}(here);\n"));
        }
        let path = dir.join(format!("d{:03}/f{f:05}.txt", f % DIRS));
        std::fs::write(path, text).expect("a file");
    }
}

/// Rows for leash's grep over the tree and, when `rg` runs, its ratio.
pub fn grep_tree(runner: &Runner, runs: usize, rows: &mut Vec<Row>) {
    let tree = tempfile::tempdir().expect("a temporary directory");
    let root: PathBuf = tree.path().join("tree");
    generate(&root);
    let script = tree.path().join("grep.json");
    let call = serde_json::json!([
        {"toolCalls": [{"id": "g", "name": "grep", "arguments": {"pattern": PATTERN}}]},
        {"text": "done"}
    ]);
    std::fs::write(&script, call.to_string()).expect("the script");
    let args: Vec<String> = [
        "--provider",
        "faux",
        "--faux-script",
        &script.display().to_string(),
        "--root",
        &root.display().to_string(),
        "--tools",
        "grep",
        "--events",
        "jsonl",
        "search",
    ]
    .iter()
    .map(|s| (*s).to_owned())
    .collect();
    let mut leash = Vec::new();
    for i in 0..=runs {
        let run = runner.run(&args);
        run.expect_code(0, "the grep run");
        if i == 0 {
            // Warm-up (page cache); and proof the search found the needles.
            let events = String::from_utf8_lossy(&run.stderr);
            assert!(
                events.contains("d000/f00000.txt:") && events.contains("d000/f09000.txt:"),
                "grep found every needle: {events:.2000}"
            );
            continue;
        }
        leash.push(run.wall_ms());
    }
    let leash_median = median(&leash);
    rows.push(Row::new(
        "grep tool, 10k files / 100 MB (whole run): wall",
        "ms",
        leash,
    ));
    let rg_works = Command::new("rg")
        .arg("--version")
        .output()
        .is_ok_and(|out| out.status.success());
    if !rg_works {
        eprintln!("costs: rg is not installed; the grep ratio row is skipped");
        return;
    }
    let rg = PathBuf::from("rg");
    let rg_path = which(&rg).unwrap_or(rg);
    let rg_args: Vec<String> = ["-n", PATTERN, &root.display().to_string()]
        .iter()
        .map(|s| (*s).to_owned())
        .collect();
    let mut rg_wall = Vec::new();
    for i in 0..=runs {
        let run = runner.run_program(&rg_path, &rg_args);
        run.expect_code(0, "rg");
        if i > 0 {
            rg_wall.push(run.wall_ms());
        }
    }
    let rg_median = median(&rg_wall);
    rows.push(Row::new("baseline: rg -n, same tree", "ms", rg_wall));
    rows.push(
        Row::new(
            "grep tool / rg, same tree (medians)",
            "x",
            vec![leash_median / rg_median],
        )
        .target(Target::AtMost(1.5)),
    );
}

/// The full path of a program on `PATH`.
fn which(program: &Path) -> Option<PathBuf> {
    std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|dir| dir.join(program))
            .find(|candidate| candidate.is_file())
    })
}

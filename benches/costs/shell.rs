//! The `bash` tool's cost beyond its command on a large root (100 000
//! files): whole leash runs on the faux model of one and of eleven `bash`
//! calls over the same root, their difference per call less the
//! commands' own `durationMs` — what finding `changedFiles` and the turn
//! around it cost (docs/src/tools.md "The shell: --allow-exec").

use std::path::Path;

use crate::process::Runner;
use crate::table::{Row, Target};

/// Files in the root, spread over [`DIRS`] directories.
const FILES: usize = 100_000;
const DIRS: usize = 1000;
/// The `bash` calls of the longer run.
const CALLS: usize = 11;
/// The target: a call's cost beyond its command.
const TARGET_MS: f64 = 50.0;

/// Builds the root: empty files (their count is what is measured).
fn generate(dir: &Path) {
    for d in 0..DIRS {
        std::fs::create_dir_all(dir.join(format!("d{d:04}"))).expect("a directory");
    }
    for f in 0..FILES {
        std::fs::write(dir.join(format!("d{:04}/f{f:06}", f % DIRS)), "").expect("a file");
    }
}

/// The script of `calls` distinct `bash` calls (identical calls would be
/// refused), then an answer.
fn script(dir: &Path, calls: usize) -> String {
    let mut turns: Vec<serde_json::Value> = (0..calls)
        .map(|n| {
            serde_json::json!({"toolCalls": [{"id": format!("b{n}"), "name": "bash",
                "arguments": {"command": format!("true {n}")}}]})
        })
        .collect();
    turns.push(serde_json::json!({"text": "done"}));
    let path = dir.join(format!("bash-{calls}.json"));
    std::fs::write(&path, serde_json::Value::Array(turns).to_string()).expect("the script");
    path.display().to_string()
}

/// The sum of the commands' own `durationMs` in a run's JSONL events.
fn command_ms(stderr: &[u8]) -> f64 {
    String::from_utf8_lossy(stderr)
        .lines()
        .filter_map(|line| serde_json::from_str::<serde_json::Value>(line).ok())
        .filter(|event| event["type"] == "tool_execution_end")
        .filter_map(|event| event["result"]["details"]["durationMs"].as_f64())
        .sum()
}

/// The row of a `bash` call's overhead on a 100 000-file root.
pub fn bash_overhead(runner: &Runner, runs: usize, rows: &mut Vec<Row>) {
    let tree = tempfile::tempdir().expect("a temporary directory");
    let root = tree.path().join("root");
    generate(&root);
    let args = |script: String| -> Vec<String> {
        [
            "--provider",
            "faux",
            "--faux-script",
            &script,
            "--root",
            &root.display().to_string(),
            "--allow-exec",
            "--max-turns",
            "20",
            "--events",
            "jsonl",
            "go",
        ]
        .iter()
        .map(|s| (*s).to_owned())
        .collect()
    };
    let one = args(script(tree.path(), 1));
    let many = args(script(tree.path(), CALLS));
    let mut per_call = Vec::new();
    for i in 0..=runs {
        let short = runner.run(&one);
        short.expect_code(
            0,
            "one bash call (does this kernel confine? see --allow-exec)",
        );
        let long = runner.run(&many);
        long.expect_code(0, "the bash calls");
        if i == 0 {
            continue; // Warm-up: the page cache.
        }
        let commands = command_ms(&long.stderr) - command_ms(&short.stderr);
        let extra = (long.wall_ms() - short.wall_ms() - commands) / (CALLS - 1) as f64;
        per_call.push(extra);
    }
    rows.push(
        Row::new(
            "bash call beyond its command, 100k-file root",
            "ms",
            per_call,
        )
        .target(Target::AtMost(TARGET_MS)),
    );
}

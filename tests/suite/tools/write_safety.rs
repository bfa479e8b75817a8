//! What a write must never leave or reach, through the real binary: a git
//! directory under any name (found by what it holds, as git finds one),
//! and a temporary file after the timer or a signal ends a run mid-write.

#![allow(clippy::unwrap_used)]

use super::edit::snapshot;
use crate::support::hostile::*;
use crate::support::run::{last_line, tool_ends};

use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

/// A workspace whose root holds one file.
fn workspace() -> Workspace {
    let ws = Workspace::new();
    ws.write("root/src/lib.rs", "pub fn answer() -> u32 {\n    41\n}\n");
    ws
}

/// Git directories under other names than `.git`, found by what they hold
/// (a `HEAD` file with `objects/` and `refs/`, or with a `commondir`), as
/// git itself finds them: a bare repository `vendor/x.git`, the target of
/// a `.git` file (`--separate-git-dir meta`), a linked worktree's private
/// directory. No write lands in one, nor makes a directory one; a plain
/// directory with a file named `HEAD` stays writable.
#[test]
fn git_directories_are_refused_by_structure_not_by_name() {
    let ws = workspace();
    for dir in ["root/vendor/x.git", "root/meta"] {
        ws.write(&format!("{dir}/HEAD"), "ref: refs/heads/main\n");
        ws.write(&format!("{dir}/config"), "[core]\n\tbare = true\n");
        ws.write(&format!("{dir}/objects/info/packs"), "");
        ws.write(&format!("{dir}/refs/heads/main"), "0000\n");
    }
    ws.write("root/.git", "gitdir: meta\n");
    ws.write("root/wt/HEAD", "ref: refs/heads/topic\n");
    ws.write("root/wt/commondir", "../meta\n");
    ws.write("root/almost/HEAD", "ref: refs/heads/main\n");
    ws.write("root/almost/refs/heads/main", "0000\n");
    ws.write("root/plain/HEAD", "just a file called HEAD\n");
    let root = ws.path("root");
    let before = snapshot(&root);
    let refused = [
        ("write_file", "vendor/x.git/hooks/post-checkout"),
        ("write_file", "vendor/x.git/config"),
        ("write_file", "vendor/x.git/objects/info/alternates"),
        ("write_file", "meta/config"),
        ("write_file", "meta/hooks/pre-commit"),
        ("write_file", "./meta//hooks/post-merge"),
        ("write_file", "wt/hooks/post-checkout"),
        ("write_file", "wt/config.worktree"),
        ("write_file", "almost/objects/info/alternates"),
        ("edit_file", "meta/config"),
        ("edit_file", "vendor/x.git/config"),
    ];
    let allowed = [
        ("write_file", "plain/HEAD"),
        ("write_file", "plain/notes.txt"),
        ("write_file", "vendor/readme.txt"),
    ];
    let call = |id: String, (tool, path): (&str, &str)| {
        let arguments = match tool {
            "write_file" => json!({"path": path, "content": "#!/bin/sh\necho PWNED\n"}),
            _ => json!({"path": path, "old": "[core]", "new": "[core]\n\tfsmonitor = ./pwn"}),
        };
        json!({"id": id, "name": tool, "arguments": arguments})
    };
    let mut calls: Vec<Value> = Vec::new();
    for (i, c) in refused.iter().enumerate() {
        calls.push(call(format!("no{i}"), *c));
    }
    for (i, c) in allowed.iter().enumerate() {
        calls.push(call(format!("ok{i}"), *c));
    }
    let (output, _) = run(ws
        .faux(json!([{"toolCalls": calls}, {"text": "done"}]))
        .args(["--allow-write", "--events", "jsonl", "go"]));
    assert_calm(&output);
    assert_eq!(output.status.code(), Some(0), "{}", last_line(&output));
    let ends = tool_ends(&output);
    assert_eq!(ends.len(), refused.len() + allowed.len());
    for end in &ends {
        let id = end["toolCallId"].as_str().unwrap();
        let text = end["result"].to_string();
        if id.starts_with("no") {
            assert_eq!(end["isError"], true, "written into a git directory: {end}");
            assert!(text.contains("git directory"), "{text}");
        } else {
            assert_eq!(end["isError"], false, "a plain write was refused: {end}");
        }
    }
    let after = snapshot(&root);
    for (path, bytes) in &after {
        if let Some(old) = before.get(path) {
            if !path.starts_with(root.join("plain"))
                && !path.starts_with(root.join("vendor/readme.txt"))
            {
                assert_eq!(old, bytes, "{} changed", path.display());
            }
        } else {
            let relative = path.strip_prefix(&root).unwrap();
            assert!(
                ["plain/notes.txt", "vendor/readme.txt"]
                    .iter()
                    .any(|ok| relative == Path::new(ok)),
                "{} was created",
                path.display()
            );
        }
    }
    assert!(!root.join("vendor/x.git/hooks").exists());
    assert!(!root.join("meta/hooks").exists());
    assert!(!root.join("wt/hooks").exists());
    assert!(!root.join("almost/objects").exists());
    assert_eq!(
        std::fs::read_to_string(root.join("plain/HEAD")).unwrap(),
        "#!/bin/sh\necho PWNED\n"
    );
}

/// The temporary files of writes under `dir`.
fn temp_files(dir: &Path) -> Vec<String> {
    std::fs::read_dir(dir)
        .map(|entries| {
            entries
                .filter_map(|e| e.ok())
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|name| name.starts_with(".leash-write-"))
                .collect()
        })
        .unwrap_or_default()
}

/// A run ended while an edit writes its temporary file (a 4 MiB file grown
/// to 16 MiB, written and `fsync`ed on the tool's own thread, which the
/// exit does not wait for): by one signal (the run's exit point), by two
/// (the immediate exit) and by the timer. No temporary file is left, and
/// the file is either the old one or the whole new one.
///
/// The signal is sent the moment the temporary file appears, so the run
/// ends while it exists; a run whose write won the race anyway (the file
/// was replaced) proves nothing, so each way is tried until one ends
/// with the old file in place (at most a few times). The timer cannot be
/// aimed like that: its runs are spread over several timeouts and must
/// leave nothing, but need not land mid-write.
#[test]
fn no_temporary_file_survives_a_run_ended_mid_write() {
    let old = "x".repeat(4 * 1024 * 1024 - 64);
    let grown = old.replace('x', "xxxx");
    let script = json!([
        {"toolCalls": [{"id": "e1", "name": "edit_file",
            "arguments": {"path": "big.txt", "old": "x", "new": "xxxx", "replace_all": true}}]},
        {"text": "done"}
    ]);
    let mut failures = Vec::new();
    for way in ["SIGTERM", "SIGTERM+SIGINT", "timer"] {
        let mut cut_mid_write = false;
        for attempt in 0..6 {
            let ws = workspace();
            let root = ws.path("root");
            ws.write("root/big.txt", &old);
            let mut cmd = ws.faux(script.clone());
            cmd.args(["--allow-write", "-q", "go"])
                .stdout(Stdio::null())
                .stderr(Stdio::null());
            if way == "timer" {
                // The timer cannot be aimed at the write: spread it.
                cmd.args(["-t", ["0.3", "0.5", "0.8", "1.2", "2", "3"][attempt]]);
            }
            let mut child = cmd.spawn().unwrap();
            let pid = Pid::from_raw(child.id() as i32);
            let started = Instant::now();
            let mut seen_temp = false;
            let status = loop {
                if let Some(status) = child.try_wait().unwrap() {
                    break status;
                }
                seen_temp = seen_temp || !temp_files(&root).is_empty();
                if seen_temp && way != "timer" {
                    kill(pid, Signal::SIGTERM).unwrap();
                    if way == "SIGTERM+SIGINT" {
                        std::thread::sleep(Duration::from_millis(2));
                        kill(pid, Signal::SIGINT).unwrap();
                    }
                    break child.wait().unwrap();
                }
                assert!(started.elapsed() < Duration::from_secs(20), "{way}: no end");
                std::thread::sleep(Duration::from_micros(200));
            };
            // Two signals end with the second's code when the immediate
            // exit wins, with the first's when the orderly one finished
            // first (a busy machine): both ended the run mid-write.
            let expected: &[i32] = match way {
                "SIGTERM" => &[143],
                "SIGTERM+SIGINT" => &[130, 143],
                _ => &[124],
            };
            let now = std::fs::read_to_string(root.join("big.txt")).unwrap();
            assert!(now == old || now == grown, "{way}: a half-written file");
            let left = temp_files(&root);
            if !left.is_empty() {
                failures.push(format!("{way}: exit {:?} left {left:?}", status.code()));
                break;
            }
            // Proof the run really ended mid-write: the temporary file was
            // there, the run ended as the way says, the old file stayed.
            if seen_temp && status.code().is_some_and(|code| expected.contains(&code)) && now == old
            {
                cut_mid_write = true;
                break;
            }
        }
        // The signals are sent while the temporary file exists, so they
        // must catch the write; the timer may miss it on a slower or
        // faster machine (it then only shows nothing is left).
        if !cut_mid_write && failures.is_empty() && way != "timer" {
            failures.push(format!("{way}: no run was ended mid-write (inconclusive)"));
        }
    }
    assert_eq!(failures, Vec::<String>::new());
}

//! The `bash` tool's contract: the status is a result, output is capped
//! as it streams, the events show the command and its status, patterns
//! and settings see it, and without `--allow-exec` there is no shell.

use std::time::Duration;

use serde_json::json;

use super::{Parent, command, confinable, details, texts};
use crate::support::run::Run;

#[test]
fn a_failing_command_is_a_result_and_the_run_exits_0() {
    if !confinable() {
        return;
    }
    let parent = Parent::new();
    let outcome = parent
        .run(&[command("echo out; echo err >&2; exit 7")])
        .output();
    assert_eq!(outcome.code(), Some(0), "{}", outcome.stderr());
    let text = &texts(&outcome)[0];
    assert!(text.starts_with("out\nerr\n[exit 7 · "), "{text}");
    assert!(text.ends_with(" s]"), "{text}");
    let details = &details(&outcome)[0];
    assert_eq!(details["exitCode"], 7);
    assert_eq!(details["timedOut"], false);
    let end = &crate::support::run::tool_ends(&outcome.output)[0];
    assert_eq!(end["isError"], false);
    assert!(end["durationMs"].is_u64());
}

#[test]
fn two_hundred_megabytes_of_output_are_capped_and_the_run_goes_on() {
    if !confinable() {
        return;
    }
    let parent = Parent::new();
    let outcome = parent
        .run(&[
            command("head -c 200000000 /dev/zero | tr '\\0' a | fold -w 99; echo last-line"),
            command("echo still-running"),
        ])
        .timeout(Duration::from_secs(120))
        .output();
    assert_eq!(outcome.code(), Some(0), "{}", outcome.stderr());
    let texts = texts(&outcome);
    // The first lines (where a build's first error is), the note, the
    // last lines.
    assert!(
        texts[0].starts_with(&"a".repeat(99)),
        "{}",
        &texts[0][..200]
    );
    // 10 KiB of 100-byte lines: the first 102 lines.
    assert!(
        texts[0].contains(") were dropped; the first 102 and the last "),
        "{}",
        &texts[0][10_000..10_500]
    );
    assert!(
        texts[0].ends_with("last-line\n[exit 0 · ") || texts[0].contains("last-line\n[exit 0 · ")
    );
    assert!(texts[0].len() < 52 * 1024, "{} bytes", texts[0].len());
    let details = &details(&outcome)[0];
    assert_eq!(details["outputBytes"], 200_000_000 + 200_000_000 / 99 + 10);
    assert!(details["droppedBytes"].as_u64().unwrap() > 199_000_000);
    assert!(texts[1].contains("still-running"));
}

#[test]
fn the_text_event_shows_the_command_its_status_and_time() {
    if !confinable() {
        return;
    }
    let parent = Parent::new();
    let outcome = parent
        .run(&[command("exit 101")])
        .args(["--events", "text", "--output", "text"])
        .output();
    assert_eq!(outcome.code(), Some(0), "{}", outcome.stderr());
    let line = outcome
        .stderr()
        .lines()
        .find(|line| line.starts_with("[tool] bash"))
        .unwrap_or_default()
        .to_owned();
    assert!(
        line.starts_with("[tool] bash \"exit 101\" exit 101 · 0."),
        "{line}"
    );
    assert!(line.ends_with(" s"), "{line}");
}

#[test]
fn files_the_shell_wrote_are_in_files_changed() {
    if !confinable() {
        return;
    }
    let parent = Parent::new();
    std::fs::write(parent.path("root/old.txt"), "old").unwrap();
    let outcome = parent
        .run(&[command("mkdir -p src && echo new > src/new.txt && rm old.txt && echo $TMPDIR > /dev/null && touch \"$TMPDIR/scratch\"")])
        .output();
    assert_eq!(outcome.code(), Some(0), "{}", outcome.stderr());
    let result: serde_json::Value = serde_json::from_str(&outcome.stdout()).unwrap();
    assert_eq!(result["changedFiles"], json!(["old.txt", "src/new.txt"]));
}

#[test]
fn a_deny_pattern_over_the_command_blocks_it() {
    if !confinable() {
        return;
    }
    let parent = Parent::new();
    let outcome = parent
        .run(&[command("git push origin main"), command("echo allowed")])
        .args(["--deny-tool", "bash(git push*)"])
        .output();
    assert_eq!(outcome.code(), Some(0), "{}", outcome.stderr());
    let texts = texts(&outcome);
    assert!(
        texts[0].contains("denied by --deny-tool bash(git push*)"),
        "{}",
        texts[0]
    );
    assert!(texts[1].contains("allowed"), "{}", texts[1]);
}

#[test]
fn without_allow_exec_there_is_no_shell() {
    let script = json!([
        {"toolCalls": [{"name": "bash", "arguments": {"command": "touch made"}}]},
        {"text": "done"}
    ]);
    let dir = tempfile::tempdir().unwrap();
    let outcome = Run::faux(script)
        .args([
            "--root",
            &dir.path().display().to_string(),
            "--events",
            "jsonl",
            "--no-stdin",
        ])
        .prompt("go")
        .output();
    assert_eq!(outcome.code(), Some(0), "{}", outcome.stderr());
    assert_eq!(texts(&outcome)[0], "Tool bash not found");
    assert!(!dir.path().join("made").exists());
}

#[test]
fn unconfined_says_so_on_every_run() {
    let parent = Parent::new();
    let outcome = parent
        .run(&[command("echo hi")])
        .args(["--allow-exec=unconfined"])
        .output();
    assert_eq!(outcome.code(), Some(0), "{}", outcome.stderr());
    assert!(
        outcome
            .stderr()
            .contains("--allow-exec=unconfined: bash commands run WITHOUT"),
        "{}",
        outcome.stderr()
    );
    assert_eq!(details(&outcome)[0]["confined"], false);
}

#[test]
fn allow_exec_takes_a_switch_or_unconfined_from_every_layer() {
    let parent = Parent::new();
    let outcome = parent.run(&[]).args(["--allow-exec=sometimes"]).output();
    assert_eq!(outcome.code(), Some(2), "{}", outcome.stderr());
    assert!(
        outcome
            .last_line()
            .contains("expected true, false or unconfined"),
        "{}",
        outcome.stderr()
    );
    let config = parent.path("home/.config/leash");
    std::fs::create_dir_all(&config).unwrap();
    std::fs::write(config.join("config.toml"), "allow-exec = \"unconfined\"\n").unwrap();
    let script = json!([{"toolCalls": [{"name": "bash", "arguments": {"command": "echo hi"}}]}, {"text": "done"}]);
    let outcome = Run::faux(script)
        .home(parent.path("home"))
        .current_dir(parent.path(""))
        .args([
            "--root",
            "root",
            "--events",
            "jsonl",
            "--no-stdin",
            "--max-turns",
            "3",
        ])
        .prompt("go")
        .output();
    assert_eq!(outcome.code(), Some(0), "{}", outcome.stderr());
    assert_eq!(details(&outcome)[0]["confined"], false);
}

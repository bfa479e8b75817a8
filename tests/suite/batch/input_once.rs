//! The batch's input read once (docs/src/batch.md "Fan-out: leash batch"): from
//! stdin (`-`), `/dev/stdin`, a process substitution and a FIFO every
//! item runs; lines appended while the batch runs are not run; a signal
//! while a FIFO's writer is awaited ends the batch at once with its code
//! and `batch_end`; `--attach -` is refused.

use std::io::Write;
use std::process::Stdio;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::support::run::{code, last_line, stderr, stdout};
use crate::support::shell::Workspace;

const ITEMS: &str = "first task\n{\"id\": \"b\", \"prompt\": \"second task\"}\nthird task\n";

/// `leash batch INPUT` on the faux model (each item replies "done").
fn batch(ws: &Workspace, input: &str) -> std::process::Command {
    let script = ws.script(json!({"responses": [{"text": "done"}], "repeatLast": true}));
    let mut cmd = ws.child();
    cmd.args(["batch", input, "--provider", "faux", "--faux-script"])
        .arg(script)
        .args(["-q", "--parallel", "1"]);
    cmd
}

/// The ids of the result lines on stdout, in order.
fn ids(stdout: &str) -> Vec<String> {
    stdout
        .lines()
        .map(|line| {
            serde_json::from_str::<Value>(line).unwrap()["id"]
                .as_str()
                .unwrap()
                .to_owned()
        })
        .collect()
}

fn mkfifo(ws: &Workspace, name: &str) -> std::path::PathBuf {
    let fifo = ws.path(name);
    let made = std::process::Command::new("mkfifo").arg(&fifo).status();
    assert!(made.is_ok_and(|status| status.success()), "mkfifo");
    fifo
}

/// Waits for `child`, killing it after `limit` (a hang fails the test).
fn wait(child: std::process::Child, limit: Duration) -> std::process::Output {
    let pid = child.id();
    let (done, waited) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        if waited.recv_timeout(limit).is_err() {
            let _ = std::process::Command::new("kill")
                .args(["-9", &pid.to_string()])
                .status();
        }
    });
    let output = child.wait_with_output().unwrap();
    let _ = done.send(());
    output
}

#[test]
fn every_item_runs_from_stdin_dev_stdin_and_a_process_substitution() {
    let ws = Workspace::new();
    for input in ["-", "/dev/stdin"] {
        let mut child = batch(&ws, input)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        child
            .stdin
            .take()
            .unwrap()
            .write_all(ITEMS.as_bytes())
            .unwrap();
        let output = wait(child, Duration::from_secs(20));
        assert_eq!(code(&output), 0, "{input}: {}", stderr(&output));
        assert_eq!(ids(&stdout(&output)), ["1", "b", "3"], "{input}");
    }
    let script = ws.script(json!({"responses": [{"text": "done"}], "repeatLast": true}));
    ws.write("items.jsonl", ITEMS);
    let output = ws
        .bash(&format!(
            "leash batch <(cat items.jsonl) --provider faux --faux-script {} -q",
            script.display()
        ))
        .output()
        .unwrap();
    assert_eq!(code(&output), 0, "{}", stderr(&output));
    assert_eq!(ids(&stdout(&output)), ["1", "b", "3"]);
}

#[test]
fn every_item_runs_from_a_fifo_written_after_the_batch_started() {
    let ws = Workspace::new();
    let fifo = mkfifo(&ws, "items.fifo");
    let child = batch(&ws, "items.fifo")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(200));
    std::fs::write(&fifo, ITEMS).unwrap();
    let output = wait(child, Duration::from_secs(20));
    assert_eq!(code(&output), 0, "{}", stderr(&output));
    assert_eq!(ids(&stdout(&output)), ["1", "b", "3"]);
    let end: Value = serde_json::from_str(&last_line(&output)).unwrap();
    assert_eq!(
        (end["total"].as_u64(), end["ok"].as_u64()),
        (Some(3), Some(3))
    );
}

#[test]
fn lines_appended_while_the_batch_runs_are_not_run() {
    let ws = Workspace::new();
    let input = ws.write("items.jsonl", "first task\nsecond task\n");
    let script =
        ws.script(json!({"responses": [{"text": "done", "delayMs": 500}], "repeatLast": true}));
    let child = ws
        .child()
        .args([
            "batch",
            "items.jsonl",
            "--provider",
            "faux",
            "--faux-script",
        ])
        .arg(script)
        .args(["-q", "--parallel", "1"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(250));
    let mut file = std::fs::OpenOptions::new()
        .append(true)
        .open(&input)
        .unwrap();
    // An unchecked line, and one repeating a checked id.
    file.write_all(b"{\"id\": \"1\", \"prompt\": \"again\"}\nthird task\n")
        .unwrap();
    drop(file);
    let output = wait(child, Duration::from_secs(20));
    assert_eq!(code(&output), 0, "{}", stderr(&output));
    assert_eq!(ids(&stdout(&output)), ["1", "2"]);
    let end: Value = serde_json::from_str(&last_line(&output)).unwrap();
    assert_eq!(
        (end["total"].as_u64(), end["ok"].as_u64()),
        (Some(2), Some(2))
    );
}

#[test]
fn sigterm_while_a_fifo_is_awaited_ends_the_batch_with_143() {
    let ws = Workspace::new();
    let _fifo = mkfifo(&ws, "items.fifo");
    let child = batch(&ws, "items.fifo")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(300));
    let pid = nix::unistd::Pid::from_raw(i32::try_from(child.id()).unwrap());
    let started = Instant::now();
    nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM).unwrap();
    let output = wait(child, Duration::from_secs(10));
    assert!(started.elapsed() < Duration::from_secs(2));
    assert_eq!(output.status.code(), Some(143), "{}", stderr(&output));
    let err = stderr(&output);
    assert!(
        err.contains("leash: stopped by a signal while the batch input was read: no item ran"),
        "{err}"
    );
    let end: Value = serde_json::from_str(&last_line(&output)).unwrap();
    assert_eq!(end["type"], "batch_end");
    assert_eq!(stdout(&output), "");
}

#[test]
fn attach_stdin_is_a_single_runs() {
    let ws = Workspace::new();
    ws.write("items.jsonl", "a task\n");
    let output = batch(&ws, "items.jsonl")
        .args(["--attach", "-", "--attach-type", "text/plain"])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(code(&output), 2, "{}", stderr(&output));
    assert_eq!(
        last_line(&output),
        "leash: --attach - is a single run's; a batch's items cannot share one stdin (attach a file)"
    );
    assert_eq!(stdout(&output), "");
}

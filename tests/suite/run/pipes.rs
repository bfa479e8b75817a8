//! Output pipes against the real binary (docs/src/shells.md "Terminal manners"): `leash ... | head -c1`,
//! a closed stdout and a closed stderr end quietly — the exit code of the
//! run, no panic, no "broken pipe". Peak memory of huge replies is in
//! `hardening_memory.rs`.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::support::run::{stderr, stdout};
use crate::support::{self, hostile};

use std::io::Read;
use std::process::Stdio;
use std::time::Duration;

use hostile::*;
use serde_json::json;

/// A script whose reply is about 150 KB: more than a pipe buffer holds.
fn big_reply() -> serde_json::Value {
    json!([{"text": "word ".repeat(30_000)}])
}

#[test]
fn a_reader_that_takes_one_byte_and_leaves_ends_the_run_quietly() {
    for output in ["text", "json"] {
        let ws = Workspace::new();
        let mut child = ws
            .faux(big_reply())
            .args(["--output", output, "go"])
            .spawn()
            .unwrap();
        let mut stdout = child.stdout.take().unwrap();
        let mut first = [0u8; 1];
        stdout.read_exact(&mut first).unwrap();
        drop(stdout); // `| head -c1`
        let result = child.wait_with_output().unwrap();
        assert_calm(&result);
        assert_eq!(
            result.status.code(),
            Some(0),
            "{output}: {}",
            stderr(&result)
        );
    }
}

#[test]
fn the_same_through_a_shell_pipeline() {
    let ws = Workspace::new();
    let script = ws.script(big_reply());
    let output = shell(&ws, "bash")
        .current_dir(ws.path(""))
        .env("LEASH_ROOT", "root")
        .env("XDG_CONFIG_HOME", ws.path("config"))
        .arg("-c")
        .arg(r#"set -o pipefail; "$0" --provider faux --faux-script "$1" --no-stdin go | head -c1"#)
        .arg(support::run::bin())
        .arg(&script)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_calm(&output);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert_eq!(stdout(&output), "w");
}

#[test]
fn a_closed_stdout_or_stderr_ends_the_run_with_its_own_code() {
    let ws = Workspace::new();
    let ok = ws.script(big_reply());
    let leash = support::run::bin();
    for (redirect, script, code) in [(">&-", &ok, 0), ("2>&-", &ok, 0), (">&- 2>&-", &ok, 0)] {
        let status = shell(&ws, "sh")
            .current_dir(ws.path(""))
            .env("LEASH_ROOT", "root")
            .env("XDG_CONFIG_HOME", ws.path("config"))
            .arg("-c")
            .arg(format!(
                r#"exec "$0" --provider faux --faux-script "$1" --no-stdin --events jsonl go {redirect}"#
            ))
            .arg(&leash)
            .arg(script)
            .stdin(Stdio::null())
            .stderr(if redirect.contains("2>") { Stdio::null() } else { Stdio::piped() })
            .output()
            .unwrap();
        assert_calm(&status);
        assert_eq!(status.status.code(), Some(code), "{redirect}");
    }
    // A failing run keeps its code when nobody reads its output.
    let failing = ws.script(json!([{"text": "x", "error": "boom"}]));
    let status = shell(&ws, "sh")
        .current_dir(ws.path(""))
        .env("XDG_CONFIG_HOME", ws.path("config"))
        .arg("-c")
        .arg(r#"exec "$0" --provider faux --faux-script "$1" --no-stdin go >&- 2>&-"#)
        .arg(leash)
        .arg(&failing)
        .status()
        .unwrap();
    assert_eq!(status.code(), Some(1));
}

#[test]
fn a_stderr_reader_that_goes_away_does_not_stop_the_run() {
    let ws = Workspace::new();
    let mut child = ws
        .faux(json!([{"text": "word ".repeat(30_000), "chunkDelayMs": 0}]))
        .args(["--events", "jsonl", "go"])
        .spawn()
        .unwrap();
    drop(child.stderr.take());
    let started = std::time::Instant::now();
    let result = child.wait_with_output().unwrap();
    assert!(started.elapsed() < Duration::from_secs(10));
    assert_eq!(result.status.code(), Some(0));
    assert_eq!(result.stdout.len(), 150_001);
}

/// `program` (a shell that runs leash), isolated like leash itself
/// ([`support::run::isolate`]), with the workspace's `HOME` and config home.
fn shell(ws: &Workspace, program: &str) -> std::process::Command {
    let mut cmd = std::process::Command::new(program);
    support::run::isolate(&mut cmd, &ws.path(""), &ws.path("config"));
    cmd
}

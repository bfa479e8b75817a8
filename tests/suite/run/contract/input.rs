//! The CLI contract on the scripted model, continued: where the prompt
//! comes from (stdin rules) and how signals end a run.

#![allow(clippy::unwrap_used, clippy::expect_used)] // tests may panic on a broken fixture

use std::process::Stdio;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::{stderr_lines, workspace};

// ---------------------------------------------------------------- input

#[test]
fn the_prompt_can_come_from_stdin() {
    let ws = workspace();
    let transcript = ws.path("t.jsonl");
    ws.faux(json!([{"text": "ok"}]))
        .arg("--transcript")
        .arg(&transcript)
        .write_stdin("question from a pipe\n")
        .assert()
        .code(0);
    let first: Value = serde_json::from_str(
        std::fs::read_to_string(&transcript)
            .unwrap()
            .lines()
            .nth(1) // after the session line
            .unwrap(),
    )
    .unwrap();
    assert_eq!(first["content"][0]["text"], "question from a pipe\n");
}

#[test]
fn piped_stdin_is_appended_to_a_given_prompt() {
    let ws = workspace();
    let transcript = ws.path("t.jsonl");
    ws.faux(json!([{"text": "no bugs"}]))
        .args(["-s", "Review"])
        .arg("--transcript")
        .arg(&transcript)
        .arg("Any bugs?")
        .write_stdin("-a\n+b\n")
        .assert()
        .code(0)
        .stdout("no bugs\n");
    let first: Value = serde_json::from_str(
        std::fs::read_to_string(&transcript)
            .unwrap()
            .lines()
            .nth(1) // after the session line
            .unwrap(),
    )
    .unwrap();
    assert_eq!(
        first["content"][0]["text"],
        "Any bugs?\n\n<stdin>\n-a\n+b\n</stdin>"
    );
}

#[test]
fn an_empty_prompt_is_a_usage_error() {
    let ws = workspace();
    ws.faux(json!([{"text": "x"}]))
        .write_stdin("")
        .assert()
        .code(2);
    ws.faux(json!([{"text": "x"}])).arg("   ").assert().code(2);
}

#[test]
fn an_open_silent_pipe_does_not_hang_the_run() {
    let ws = workspace();
    let script = ws.script(json!([{"text": "answered"}]));
    // A child whose stdin is a pipe we keep open and never write to.
    let mut child = ws
        .child()
        .args(["--provider", "faux", "--faux-script"])
        .arg(script)
        .arg("question")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let _keep_open = child.stdin.take();
    let started = Instant::now();
    let output = child.wait_with_output().unwrap();
    assert!(started.elapsed() < Duration::from_secs(5));
    assert_eq!(output.status.code(), Some(0));
    assert_eq!(output.stdout, b"answered\n");
    let stderr = String::from_utf8(output.stderr).unwrap();
    assert!(
        stderr.contains("leash: stdin gave nothing within 1s"),
        "{stderr}"
    );
}

#[test]
fn dot_env_is_read_but_the_real_environment_wins() {
    let ws = workspace();
    let good = ws.script(json!([{"text": "from the real env"}]));
    std::fs::write(ws.path(".env"), "LEASH_PROVIDER=openai\n").unwrap();
    // .env's provider beats the one a faux script implies: it needs a key.
    let output = ws
        .leash()
        .env("LEASH_FAUX_SCRIPT", &good)
        .arg("go")
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&output.stderr).contains("OPENAI_API_KEY is not set"),
        "{output:?}"
    );
    // The real variable overrides the .env one.
    ws.leash()
        .env("LEASH_FAUX_SCRIPT", &good)
        .env("LEASH_PROVIDER", "faux")
        .arg("go")
        .assert()
        .code(0)
        .stdout("from the real env\n");
}

#[test]
fn follow_ups_are_delivered_when_the_agent_would_stop() {
    let ws = workspace();
    let transcript = ws.path("t.jsonl");
    ws.faux(json!([{"text": "first"}, {"text": "second"}]))
        .args(["--follow-up", "and in one line?"])
        .arg("--transcript")
        .arg(&transcript)
        .arg("go")
        .assert()
        .code(0)
        .stdout("second\n");
    let roles: Vec<String> = std::fs::read_to_string(&transcript)
        .unwrap()
        .lines()
        .map(|l| {
            serde_json::from_str::<Value>(l).unwrap()["role"]
                .as_str()
                .unwrap()
                .to_owned()
        })
        .filter(|role| role != "session")
        .collect();
    assert_eq!(roles, vec!["user", "assistant", "user", "assistant"]);
}

// ---------------------------------------------------------------- signals

fn signal_run(signal: &str) -> (std::process::Output, Duration, String) {
    let ws = workspace();
    let script = ws.script(json!([{"text": "never", "delayMs": 20000}]));
    let transcript = ws.path("t.jsonl");
    let child = ws
        .child()
        .args(["--provider", "faux", "--no-stdin", "--faux-script"])
        .arg(script)
        .arg("--transcript")
        .arg(&transcript)
        .arg("go")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(500));
    let started = Instant::now();
    let status = std::process::Command::new("kill")
        .args([signal, &child.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    let output = child.wait_with_output().unwrap();
    let transcript = std::fs::read_to_string(&transcript).unwrap();
    (output, started.elapsed(), transcript)
}

#[test]
fn sigint_aborts_cleanly_with_130() {
    let (output, elapsed, transcript) = signal_run("-INT");
    assert_eq!(output.status.code(), Some(130));
    assert!(elapsed < Duration::from_secs(2), "{elapsed:?}");
    let lines = stderr_lines(&output);
    assert_eq!(lines.last().unwrap(), "leash: interrupted by SIGINT");
    assert!(
        lines
            .iter()
            .any(|l| l.starts_with("[turn 1] aborted · tokens:"))
    );
    // The transcript is complete: the prompt and the aborted reply.
    let last: Value = serde_json::from_str(transcript.lines().last().unwrap()).unwrap();
    assert_eq!(last["stopReason"], "aborted");
    assert_eq!(last["errorMessage"], "Operation aborted");
}

#[test]
fn sigterm_aborts_cleanly_with_143() {
    let (output, elapsed, _) = signal_run("-TERM");
    assert_eq!(output.status.code(), Some(143));
    assert!(elapsed < Duration::from_secs(2), "{elapsed:?}");
    assert_eq!(
        stderr_lines(&output).last().unwrap(),
        "leash: terminated by SIGTERM"
    );
}

//! Piped input is never silently dropped (docs/src/usage.md "Stdin"): a producer
//! quiet past the grace that then writes stops the run (exit 2, nothing on
//! stdout), also when the answer was already computed; `--stdin-grace`
//! waits longer and the answer includes the input; a pipe held open and
//! never written still gets its answer after the grace; a pipe closed
//! with nothing in it is no late input.

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::support::shell::Workspace;

const LOG: &str = "error[E0308]: mismatched types in build.rs\n";

/// leash with `args` on a stdin pipe the test holds, stderr read line by
/// line on a thread of its own.
struct Piped {
    child: Child,
    stdin: Option<ChildStdin>,
    lines: mpsc::Receiver<String>,
    seen: Vec<String>,
    started: Instant,
}

impl Piped {
    fn start(ws: &Workspace, args: &[&str]) -> Self {
        let mut child = ws
            .child()
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let stdin = child.stdin.take();
        let stderr = child.stderr.take().unwrap();
        let (sender, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                let _ = sender.send(line);
            }
        });
        Piped {
            child,
            stdin,
            lines,
            seen: Vec::new(),
            started: Instant::now(),
        }
    }

    /// Waits until leash said it went on without stdin (so what comes
    /// next is late for certain), and at least `quiet` since the start.
    fn wait_for_the_grace(&mut self, quiet: Duration) {
        let deadline = Instant::now() + Duration::from_secs(20);
        while !self.seen.iter().any(|l| l.contains("stdin gave nothing")) {
            assert!(Instant::now() < deadline, "no notice; saw {:?}", self.seen);
            if let Ok(line) = self.lines.recv_timeout(Duration::from_millis(50)) {
                self.seen.push(line);
            }
        }
        if let Some(rest) = quiet.checked_sub(self.started.elapsed()) {
            std::thread::sleep(rest);
        }
    }

    /// Writes `text` and closes the pipe, as a producer that ends does.
    fn write(&mut self, text: &str) {
        let mut stdin = self.stdin.take().unwrap();
        // leash may have exited already (that is what some tests check).
        let _ = stdin.write_all(text.as_bytes());
    }

    /// The exit code, stdout, every stderr line and the time since `mark`.
    fn finish(mut self, mark: Instant) -> (Option<i32>, String, Vec<String>, Duration) {
        let output = std::mem::replace(&mut self.child, dummy())
            .wait_with_output()
            .unwrap();
        let took = mark.elapsed();
        while let Ok(line) = self.lines.recv_timeout(Duration::from_secs(2)) {
            self.seen.push(line);
        }
        let stdout = String::from_utf8(output.stdout).unwrap();
        (output.status.code(), stdout, self.seen, took)
    }
}

/// A finished child to put in the place of the one waited for.
fn dummy() -> Child {
    std::process::Command::new("true").spawn().unwrap()
}

fn faux(ws: &Workspace, script: Value) -> String {
    ws.script(script).display().to_string()
}

#[test]
fn input_after_the_grace_stops_the_run_with_nothing_on_stdout() {
    for output in ["text", "json"] {
        let ws = Workspace::new();
        // A model slower than the producer: the run is under way when the
        // log arrives 2.5 s in.
        let script = faux(
            &ws,
            json!([{"text": "Answered from: ", "echoPrompt": true, "delayMs": 8000}]),
        );
        let mut run = Piped::start(
            &ws,
            &[
                "--provider",
                "faux",
                "--faux-script",
                &script,
                "--output",
                output,
                "why did the build fail?",
            ],
        );
        run.wait_for_the_grace(Duration::from_millis(2500));
        let wrote = Instant::now();
        run.write(LOG);
        let (code, stdout, lines, took) = run.finish(wrote);
        assert_eq!(code, Some(2), "{lines:?}");
        assert_eq!(stdout, "", "nothing on stdout with --output {output}");
        let last = lines.last().unwrap();
        assert!(
            last.starts_with("leash: stdin arrived after the 1s grace")
                && last.contains("pass --stdin to wait for it"),
            "{last}"
        );
        // Stopped at once, not after the model's 8 s.
        assert!(took < Duration::from_secs(4), "{took:?}");
    }
}

#[test]
fn input_after_the_answer_was_computed_still_stops_the_run() {
    let ws = Workspace::new();
    let script = faux(&ws, json!([{"text": "An answer without the log."}]));
    // The answer is final at once; a finish-turn hook keeps the run open.
    let mut run = Piped::start(
        &ws,
        &[
            "--provider",
            "faux",
            "--faux-script",
            &script,
            "--hook",
            "finish-turn=sleep 3",
            "why did the build fail?",
        ],
    );
    run.wait_for_the_grace(Duration::from_millis(2500));
    let wrote = Instant::now();
    run.write(LOG);
    let (code, stdout, lines, _) = run.finish(wrote);
    assert_eq!(code, Some(2), "{lines:?}");
    assert_eq!(stdout, "");
    assert!(
        lines.last().unwrap().contains("stdin arrived after"),
        "{lines:?}"
    );
}

#[test]
fn a_longer_stdin_grace_waits_and_the_answer_includes_the_input() {
    let ws = Workspace::new();
    // The built-in reply shows the prompt the model got.
    let mut run = Piped::start(
        &ws,
        &[
            "--provider",
            "faux",
            "--stdin-grace",
            "10s",
            "why did the build fail?",
        ],
    );
    std::thread::sleep(Duration::from_millis(2500));
    run.write(LOG);
    let (code, stdout, lines, _) = run.finish(Instant::now());
    assert_eq!(code, Some(0), "{lines:?}");
    assert!(
        stdout.contains("why did the build fail?\n\n<stdin>\nerror[E0308]"),
        "{stdout}"
    );
    assert!(
        !lines.iter().any(|l| l.contains("gave nothing")),
        "{lines:?}"
    );
}

#[test]
fn a_pipe_held_open_and_never_written_is_answered_after_the_grace() {
    let ws = Workspace::new();
    let mut run = Piped::start(&ws, &["--provider", "faux", "--output", "json", "hi"]);
    let started = run.started;
    // The pipe stays open (held by `run`) until leash has exited.
    let output = std::mem::replace(&mut run.child, dummy());
    let output = output.wait_with_output().unwrap();
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(output.status.code(), Some(0));
    let result: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(result["status"], "ok");
    assert!(
        result["reply"].as_str().unwrap().ends_with("hi"),
        "{result}"
    );
    drop(run);
}

#[test]
fn a_pipe_closed_empty_after_the_grace_is_no_late_input() {
    let ws = Workspace::new();
    let script = faux(&ws, json!([{"text": "answered", "delayMs": 3000}]));
    let mut run = Piped::start(
        &ws,
        &["--provider", "faux", "--faux-script", &script, "question"],
    );
    run.wait_for_the_grace(Duration::from_millis(1500));
    // EOF, nothing written: the producer had nothing to say.
    drop(run.stdin.take());
    let (code, stdout, lines, _) = run.finish(Instant::now());
    assert_eq!(code, Some(0), "{lines:?}");
    assert_eq!(stdout, "answered\n");
}

#[test]
fn a_zero_stdin_grace_is_refused() {
    let ws = Workspace::new();
    let output = ws
        .leash()
        .args(["--provider", "faux", "--stdin-grace", "0", "hi"])
        .write_stdin("x")
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("invalid --stdin-grace '0': it must be more than 0"),
        "{stderr}"
    );
}

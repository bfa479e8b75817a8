//! Signals and the abort timer against the real binary (README "Exit codes";
//! ARCHITECTURE.md §1.4): SIGINT, SIGTERM, SIGHUP and the timer during a stream, during a
//! tool, and around a retry back-off; a second SIGINT. Each run ends with
//! its documented code (130, 143, 129, 124), with `turn_end`, `agent_end`
//! and a last `run_end` on stderr, and with a transcript that is complete,
//! valid JSON lines.
//!
//! The slow tool at this level is `read_file` on a sparse file of 1 TiB
//! whose first lines are text: it reads on until it is told to stop. The
//! library-level abort of a slow tool is in `src/agent/run_tests.rs`.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::support::hostile;

use std::io::{BufRead, BufReader};
use std::process::{Child, Command};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use hostile::*;
use serde_json::{Value, json};

const KEY: &str = "sk-signals-Hq7Wm2Rt";

/// A running `leash --events jsonl`, its stderr lines arriving on a channel.
struct Live {
    child: Child,
    lines: mpsc::Receiver<String>,
    seen: Vec<String>,
}

impl Live {
    fn start(mut cmd: Command) -> Live {
        let mut child = cmd
            .args(["--events", "jsonl", "--transcript", "t.jsonl", "go"])
            .spawn()
            .unwrap();
        let stderr = child.stderr.take().unwrap();
        let (send, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines() {
                let Ok(line) = line else { return };
                if send.send(line).is_err() {
                    return;
                }
            }
        });
        Live {
            child,
            lines,
            seen: Vec::new(),
        }
    }

    /// Waits for the first event of `kind`, then a moment more so the
    /// process is surely inside what the event started.
    fn wait_for(&mut self, kind: &str) {
        let deadline = Instant::now() + Duration::from_secs(15);
        while Instant::now() < deadline {
            if let Ok(line) = self.lines.recv_timeout(Duration::from_millis(100)) {
                let found =
                    serde_json::from_str::<Value>(&line).is_ok_and(|event| event["type"] == kind);
                self.seen.push(line);
                if found {
                    std::thread::sleep(Duration::from_millis(150));
                    return;
                }
            }
        }
        panic!("no {kind} event; saw {:?}", self.seen);
    }

    fn signal(&self, name: &str) {
        let status = Command::new("kill")
            .args([name, &self.child.id().to_string()])
            .status()
            .unwrap();
        assert!(status.success());
    }

    /// Waits (at most 10 s) for the end; returns the exit code, the time
    /// it took, and every stderr line.
    fn finish(mut self) -> (i32, Duration, Vec<String>) {
        let started = Instant::now();
        let status = loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                break status;
            }
            if started.elapsed() > Duration::from_secs(10) {
                let _ = self.child.kill();
                panic!("leash did not end; saw {:?}", self.seen);
            }
            std::thread::sleep(Duration::from_millis(20));
        };
        while let Ok(line) = self.lines.recv_timeout(Duration::from_secs(2)) {
            self.seen.push(line);
        }
        let code = status
            .code()
            .unwrap_or_else(|| panic!("killed by a signal: {status:?}; saw {:?}", self.seen));
        (code, started.elapsed(), self.seen)
    }
}

/// The end of every aborted run: valid JSON lines, `turn_end` then
/// `agent_end`, and `run_end` last with the exit code; a transcript of valid
/// lines whose last message is `last_role`.
fn assert_clean_end(ws: &Workspace, lines: &[String], code: i32, last_role: &str) {
    let events = assert_jsonl(&lines.join("\n"), "stderr");
    let types: Vec<&str> = events.iter().map(|e| e["type"].as_str().unwrap()).collect();
    let turn_end = types.iter().rposition(|t| *t == "turn_end");
    let agent_end = types.iter().rposition(|t| *t == "agent_end");
    assert!(turn_end.is_some() && turn_end < agent_end, "{types:?}");
    let last = events.last().unwrap();
    assert_eq!(last["type"], "run_end", "{types:?}");
    assert_eq!(last["exitCode"], code);
    let transcript = std::fs::read_to_string(ws.path("t.jsonl")).unwrap();
    assert!(transcript.ends_with('\n'), "a cut transcript line");
    let messages = assert_jsonl(&transcript, "transcript");
    assert_eq!(messages[0]["role"], "session");
    assert_eq!(messages[1]["role"], "user");
    assert_eq!(messages.last().unwrap()["role"], last_role, "{messages:?}");
    for text in [&transcript, &lines.join("\n")] {
        assert!(!text.contains(KEY));
    }
}

// ------------------------------------------------------------ during a stream

fn streaming(ws: &Workspace) -> Command {
    ws.faux(json!([{"text": "never", "delayMs": 30000}]))
}

#[test]
fn sigint_sigterm_and_the_timer_during_a_stream() {
    for (signal, code) in [
        (Some("-INT"), 130),
        (Some("-TERM"), 143),
        (Some("-HUP"), 129),
        (None, 124),
    ] {
        let ws = Workspace::new();
        let mut cmd = streaming(&ws);
        if signal.is_none() {
            cmd.args(["--timeout", "1s"]);
        }
        let mut live = Live::start(cmd);
        live.wait_for("message_start");
        live.wait_for("message_start"); // the assistant's, after the user's
        if let Some(signal) = signal {
            live.signal(signal);
        }
        let (got, elapsed, lines) = live.finish();
        assert_eq!(got, code, "{signal:?}: {lines:?}");
        assert!(elapsed < Duration::from_secs(3), "{signal:?}: {elapsed:?}");
        assert_clean_end(&ws, &lines, code, "assistant");
        let transcript = std::fs::read_to_string(ws.path("t.jsonl")).unwrap();
        assert!(transcript.contains("\"stopReason\":\"aborted\""));
    }
}

#[test]
fn a_second_sigint_exits_at_once_and_leaves_only_whole_lines() {
    let ws = Workspace::new();
    let mut live = Live::start(streaming(&ws));
    live.wait_for("message_start");
    live.wait_for("message_start");
    live.signal("-INT");
    live.signal("-INT");
    let (code, elapsed, lines) = live.finish();
    assert_eq!(code, 130);
    assert!(elapsed < Duration::from_secs(3), "{elapsed:?}");
    assert_jsonl(&lines.join("\n"), "stderr");
    let transcript = std::fs::read_to_string(ws.path("t.jsonl")).unwrap();
    assert!(transcript.is_empty() || transcript.ends_with('\n'));
    assert_jsonl(&transcript, "transcript");
}

// ------------------------------------------------------------ during a tool

/// A workspace with `root/huge.txt`: 8 KiB of text lines, then a hole to
/// 1 TiB that `read_file` reads on through to count lines.
fn slow_tool(ws: &Workspace) -> Command {
    let path = ws.write("root/huge.txt", "a\n".repeat(4096));
    std::fs::OpenOptions::new()
        .write(true)
        .open(&path)
        .unwrap()
        .set_len(1 << 40)
        .unwrap();
    ws.faux(json!([
        {"toolCalls": [{"name": "read_file", "arguments": {"path": "huge.txt"}}]},
        {"text": "never asked"}
    ]))
}

#[test]
fn sigint_sigterm_and_the_timer_during_a_tool() {
    for (signal, code) in [(Some("-INT"), 130), (Some("-TERM"), 143), (None, 124)] {
        let ws = Workspace::new();
        let mut cmd = slow_tool(&ws);
        if signal.is_none() {
            cmd.args(["--timeout", "1500ms"]);
        }
        let mut live = Live::start(cmd);
        live.wait_for("tool_execution_start");
        if let Some(signal) = signal {
            live.signal(signal);
        }
        let (got, elapsed, lines) = live.finish();
        assert_eq!(got, code, "{signal:?}: {lines:?}");
        assert!(elapsed < Duration::from_secs(3), "{signal:?}: {elapsed:?}");
        assert_clean_end(&ws, &lines, code, "toolResult");
        let transcript = std::fs::read_to_string(ws.path("t.jsonl")).unwrap();
        let result: Value = serde_json::from_str(transcript.lines().last().unwrap()).unwrap();
        assert_eq!(result["isError"], true);
        assert_eq!(result["content"][0]["text"], "Operation aborted");
    }
}

// ------------------------------------------------------------ around a retry

/// A server that answers 429 with `retry-after: SECS`, then stalls.
fn rate_limited(secs: &'static str) -> HostileServer {
    HostileServer::start(vec![
        responder(move |_, conn| {
            let body = br#"{"error":{"message":"slow down"}}"#;
            let length = body.len().to_string();
            conn.head(
                429,
                "application/json",
                &[("retry-after", secs), ("content-length", &length)],
            );
            conn.send(body);
        }),
        responder(|_, conn| conn.hold()),
    ])
}

#[test]
fn sigint_and_sigterm_during_a_retry_back_off() {
    for (signal, code) in [("-INT", 130), ("-TERM", 143)] {
        let server = rate_limited("5");
        let ws = Workspace::new();
        let mut live = Live::start(ws.http("openai", &format!("{}/v1", server.url()), KEY));
        live.wait_for("retry");
        live.signal(signal);
        let (got, elapsed, lines) = live.finish();
        assert_eq!(got, code, "{signal}: {lines:?}");
        assert!(elapsed < Duration::from_secs(3), "{signal}: {elapsed:?}");
        assert_clean_end(&ws, &lines, code, "assistant");
        assert_eq!(server.connections(), 1, "no retry after the signal");
    }
}

#[test]
fn the_timer_never_lets_a_back_off_wait_past_it() {
    // retry-after 5s with 2s left: no wait the timer would cut; the run
    // ends at once with the failure and why it was not retried.
    let server = rate_limited("5");
    let ws = Workspace::new();
    let mut cmd = ws.http("openai", &format!("{}/v1", server.url()), KEY);
    cmd.args(["--timeout", "2s"]);
    let live = Live::start(cmd);
    let (code, elapsed, lines) = live.finish();
    assert_eq!(code, 1, "{lines:?}");
    assert!(elapsed < Duration::from_secs(2), "{elapsed:?}");
    assert_clean_end(&ws, &lines, 1, "assistant");
    let message = serde_json::from_str::<Value>(lines.last().unwrap()).unwrap()["message"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(
        message.contains("HTTP 429 Too Many Requests: slow down; not retried: waiting 5.0s would pass the run's timeout"),
        "{message}"
    );
}

#[test]
fn the_timer_after_a_back_off_that_fits_ends_the_retried_request() {
    let server = rate_limited("0.3");
    let ws = Workspace::new();
    let mut cmd = ws.http("openai", &format!("{}/v1", server.url()), KEY);
    cmd.args(["--timeout", "1500ms"]);
    let live = Live::start(cmd);
    let (code, elapsed, lines) = live.finish();
    assert_eq!(code, 124, "{lines:?}");
    assert!(elapsed < Duration::from_secs(4), "{elapsed:?}");
    assert_clean_end(&ws, &lines, 124, "assistant");
    assert_eq!(server.connections(), 2, "the retry was sent, then cut");
    assert!(lines.iter().any(|l| l.contains("\"type\":\"retry\"")));
}

//! The contract under hostile input (docs/src/security.md "Security and limits", "Exit
//! codes", docs/src/events.md "Events") against the real binary: the key never leaves through a tool, text from servers
//! and models cannot forge a stderr line, a failed write fails the run, a
//! pipe nobody reads never holds the timer or a signal, SIGHUP is 129, and
//! the smaller promises of the event stream and the last line.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::support::hostile;
use crate::support::run::{Run, last_line, stderr, stdout};
use crate::support::sse::openai as openai_support;

use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use hostile::*;
use openai_support as oai;
use serde_json::{Value, json};

const RUN_KEY: &str = "sk-run-key-7Hq2Wm9Rt4";
const OTHER_KEY: &str = "sk-ant-dotenv-Zx81Pq";

/// A reply that calls `read_file` on each of `paths`, then `list_dir`.
fn tool_calls(paths: &[&str]) -> String {
    let mut chunks = vec![oai::role()];
    for (index, path) in paths.iter().enumerate() {
        let tool = if *path == "." {
            "list_dir"
        } else {
            "read_file"
        };
        chunks.push(oai::call_start(index, &format!("call_{index}"), tool));
        chunks.push(oai::call_args(index, &json!({"path": path}).to_string()));
    }
    chunks.push(oai::finish("tool_calls"));
    oai::body(&chunks, true)
}

#[test]
fn a_key_in_a_file_under_the_root_never_leaves_through_a_tool() {
    let first = tool_calls(&["notes.txt", ".env", ".env.local", "."]);
    let server = HostileServer::start(vec![
        responder(move |_, conn| {
            conn.respond(200, "text/event-stream", first.as_bytes());
        }),
        responder(|_, conn| {
            let reply = oai::text_reply(&["done"]);
            conn.respond(200, "text/event-stream", reply.as_bytes());
        }),
    ]);
    let ws = Workspace::new();
    // The other provider's key comes from the `.env` of the working directory.
    ws.write(".env", format!("ANTHROPIC_API_KEY={OTHER_KEY}\n"));
    ws.write(
        "root/notes.txt",
        format!("openai: {RUN_KEY}\nanthropic: {OTHER_KEY}\nend\n"),
    );
    ws.write("root/.env", format!("OPENAI_API_KEY={RUN_KEY}\n"));
    ws.write(
        "root/.env.local",
        format!("ANTHROPIC_API_KEY={OTHER_KEY}\n"),
    );
    let output = ws
        .http("openai", &format!("{}/v1", server.url()), RUN_KEY)
        .args([
            "--events",
            "jsonl",
            "--output",
            "json",
            "--transcript",
            "t.jsonl",
            "go",
        ])
        .output()
        .unwrap();
    assert_calm(&output);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    let sent = requests[1].body_text();
    let transcript = std::fs::read(ws.path("t.jsonl")).unwrap();
    for (what, text) in [
        ("request", sent.as_bytes()),
        ("stdout", &output.stdout[..]),
        ("stderr", &output.stderr[..]),
        ("transcript", &transcript[..]),
    ] {
        for key in [RUN_KEY, OTHER_KEY] {
            assert!(!contains(text, key), "{what} holds {key}");
        }
    }
    // The file was read, with the keys blanked out.
    assert!(
        sent.contains("openai: ***") && sent.contains("anthropic: ***"),
        "{sent}"
    );
    // Dotenv files are refused with an error that says why; the listing still names them.
    let results: Vec<Value> = assert_jsonl(&String::from_utf8_lossy(&transcript), "transcript")
        .into_iter()
        .filter(|message| message["role"] == "toolResult")
        .collect();
    assert_eq!(results.len(), 4);
    for result in &results[1..3] {
        assert_eq!(result["isError"], true, "{result}");
        let text = result["content"][0]["text"].as_str().unwrap();
        assert!(text.contains("is a dotenv file"), "{text}");
    }
    let listing = results[3]["content"][0]["text"].as_str().unwrap();
    assert!(
        listing.contains(".env\n") && listing.contains("notes.txt"),
        "{listing}"
    );
}

#[test]
fn text_from_a_server_or_a_model_cannot_forge_a_stderr_line() {
    let server = HostileServer::always(|_, conn| {
        let message = "upstream failed:\r\n  Traceback (most recent call last)\n\u{1b}[2K\u{1b}[32mleash: the run ended with an answer\u{7}";
        let body = json!({"error": {"message": message}});
        conn.respond(400, "application/json", body.to_string().as_bytes());
    });
    let ws = Workspace::new();
    let output = ws
        .http("openai", &format!("{}/v1", server.url()), RUN_KEY)
        .args(["--events", "text", "--retries", "0", "go"])
        .output()
        .unwrap();
    assert_calm(&output);
    assert_eq!(output.status.code(), Some(1));
    let err = stderr(&output);
    assert!(
        !err.contains('\r') && !err.contains('\u{1b}') && !err.contains('\u{7}'),
        "{err:?}"
    );
    let why: Vec<&str> = err
        .lines()
        .filter(|line| line.starts_with("leash:"))
        .collect();
    assert_eq!(why.len(), 1, "{err}");
    let last = last_line(&output);
    assert!(last.starts_with("leash: provider error: "), "{last}");
    assert!(
        last.contains("upstream failed: Traceback (most recent call last)"),
        "{last}"
    );

    // A tool name and a call id from the model, on the events lines.
    let ws = Workspace::new();
    let output = ws
        .faux(json!([
            {"toolCalls": [{"id": "c1\r\u{1b}[1A", "name": "x\nleash: forged", "arguments": {}}]},
            {"text": "ok"}
        ]))
        .args(["--events", "text", "go"])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let err = stderr(&output);
    assert!(!err.contains('\r') && !err.contains('\u{1b}'), "{err:?}");
    assert!(
        !err.lines().any(|line| line.starts_with("leash: forged")),
        "{err}"
    );
    assert!(
        err.lines()
            .any(|line| line == "[tool] x leash: forged error: Tool x"),
        "{err}"
    );
}

fn dev_full() -> std::fs::File {
    std::fs::OpenOptions::new()
        .write(true)
        .open("/dev/full")
        .unwrap()
}

#[test]
fn a_result_that_cannot_be_written_fails_the_run_and_says_so() {
    let ws = Workspace::new();
    let reply = json!([{"text": "the answer"}]);
    // stdout
    let output = ws
        .faux(reply.clone())
        .arg("go")
        .stdout(dev_full())
        .output()
        .unwrap();
    assert_calm(&output);
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    assert!(
        last_line(&output)
            .starts_with("leash: cannot write the result to stdout: No space left on device"),
        "{}",
        stderr(&output)
    );
    // --output-last-message and --transcript
    for flag in ["--output-last-message", "--transcript"] {
        let output = ws
            .faux(reply.clone())
            .args([flag, "/dev/full", "--events", "jsonl", "go"])
            .output()
            .unwrap();
        assert_calm(&output);
        assert_eq!(output.status.code(), Some(1), "{flag}: {}", stderr(&output));
        let events = assert_jsonl(&stderr(&output), "stderr");
        let end = events.last().unwrap();
        assert_eq!(end["type"], "run_end");
        assert_eq!(end["exitCode"], 1);
        let message = end["message"].as_str().unwrap();
        assert!(
            message.starts_with(&format!(
                "cannot write {flag} /dev/full: No space left on device"
            )),
            "{message}"
        );
        // A failed run's stdout holds no answer.
        assert_eq!(stdout(&output), "", "{flag}");
    }
    // A run that failed anyway keeps its own code and reason.
    let output = ws
        .faux(json!([{"text": "x", "error": "boom"}]))
        .args(["--transcript", "/dev/full", "go"])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(1));
    assert!(last_line(&output).contains("boom"), "{}", stderr(&output));
    assert!(stderr(&output).contains("leash: cannot write --transcript /dev/full"));
}

/// The print commands keep the same promise: `leash man > /dev/full` is a
/// failure that says so, while a reader that left (`| head`) is quiet.
#[test]
fn a_print_command_that_cannot_write_fails_and_says_so() {
    let home = tempfile::tempdir().unwrap();
    let leash = || {
        let mut cmd = Run::new().home(home.path()).command();
        cmd.stdin(Stdio::null()).stderr(Stdio::piped());
        cmd
    };
    for (args, what) in [
        (vec!["man"], "the man page"),
        (vec!["schema", "result"], "the schema"),
        (vec!["completions", "bash"], "the completions"),
    ] {
        let output = leash().args(&args).stdout(dev_full()).output().unwrap();
        assert_calm(&output);
        assert_eq!(
            output.status.code(),
            Some(1),
            "{args:?}: {}",
            stderr(&output)
        );
        assert_eq!(
            last_line(&output),
            format!("leash: cannot write {what} to stdout: No space left on device (os error 28)"),
            "{args:?}"
        );
    }
    // A closed reader is not a failure.
    let mut child = leash().arg("man").stdout(Stdio::piped()).spawn().unwrap();
    drop(child.stdout.take());
    let output = child.wait_with_output().unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert_eq!(stderr(&output), "");
}

/// A faux reply streamed for minutes in small deltas: its events fill any
/// pipe buffer within a second.
fn endless_stream(ws: &Workspace) -> Command {
    ws.faux(json!([{"text": "word ".repeat(200_000), "chunkDelayMs": 1}]))
}

/// Starts `cmd` with stderr a pipe that is never read.
fn start_unread(mut cmd: Command) -> Child {
    cmd.args(["--events", "jsonl", "--transcript", "t.jsonl", "go"])
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

/// Waits at most `limit` for the exit code.
fn wait_at_most(child: &mut Child, limit: Duration) -> Option<i32> {
    let started = Instant::now();
    while started.elapsed() < limit {
        if let Some(status) = child.try_wait().unwrap() {
            return status.code();
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let _ = child.kill();
    let _ = child.wait();
    panic!("leash did not end within {limit:?}");
}

#[test]
fn a_stderr_pipe_nobody_reads_never_holds_the_timer_or_a_signal() {
    for (signal, code) in [
        (Some("-TERM"), 143),
        (Some("-INT"), 130),
        (Some("-HUP"), 129),
        (None, 124),
    ] {
        let ws = Workspace::new();
        let mut cmd = endless_stream(&ws);
        if signal.is_none() {
            cmd.args(["--timeout", "2s"]);
        }
        let mut child = start_unread(cmd);
        // Long enough for the pipe to be full.
        std::thread::sleep(Duration::from_millis(1500));
        let sent = Instant::now();
        if let Some(signal) = signal {
            let status = Command::new("kill")
                .args([signal, &child.id().to_string()])
                .status()
                .unwrap();
            assert!(status.success());
        }
        let got = wait_at_most(&mut child, Duration::from_secs(6));
        assert_eq!(got, Some(code), "{signal:?}");
        assert!(
            sent.elapsed() < Duration::from_secs(3),
            "{signal:?}: {:?}",
            sent.elapsed()
        );
        // The transcript does not share the stuck pipe: it is whole.
        let transcript = std::fs::read_to_string(ws.path("t.jsonl")).unwrap();
        let messages = assert_jsonl(&transcript, "transcript");
        assert_eq!(
            messages.last().unwrap()["stopReason"],
            "aborted",
            "{signal:?}"
        );
    }
}

/// An output file that is a FIFO nobody reads blocks `open(2)` in the
/// kernel; the timer and the signals still end the run on time.
#[test]
fn an_output_fifo_nobody_reads_never_holds_the_timer_or_a_signal() {
    for flag in ["--transcript", "--output-last-message"] {
        for (signal, code) in [(Some("-TERM"), 143), (None, 124)] {
            let ws = Workspace::new();
            let fifo = ws.path("out.fifo");
            let made = Command::new("mkfifo").arg(&fifo).status().unwrap();
            assert!(made.success());
            let mut cmd = ws.faux(json!([{"text": "the answer"}]));
            cmd.arg(flag).arg(&fifo).arg("go");
            if signal.is_none() {
                cmd.args(["--timeout", "1s"]);
            }
            let mut child = cmd.spawn().unwrap();
            std::thread::sleep(Duration::from_millis(500));
            if let Some(signal) = signal {
                let sent = Command::new("kill")
                    .args([signal, &child.id().to_string()])
                    .status()
                    .unwrap();
                assert!(sent.success());
            }
            let exit = wait_at_most(&mut child, Duration::from_secs(5));
            assert_eq!(exit, Some(code), "{flag} {signal:?}");
        }
    }
}

#[test]
fn the_first_event_line_is_agent_start_even_after_a_notice_or_without_a_run() {
    let ws = Workspace::new();
    let script = ws.script(json!([{"text": "ok"}]));
    // An open stdin that never writes: leash goes on after a grace, with a notice.
    // Through the one launcher, then a deliberately empty environment.
    let mut child = Run::new()
        .home(ws.path(""))
        .command()
        .current_dir(ws.path(""))
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("HOME", ws.path(""))
        .env("XDG_CONFIG_HOME", ws.path("config"))
        .args(["--provider", "faux", "--faux-script"])
        .arg(&script)
        .args(["--events", "jsonl", "go"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stdin = child.stdin.take();
    let output = child.wait_with_output().unwrap();
    drop(stdin);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let events = assert_jsonl(&stderr(&output), "stderr");
    let types: Vec<&str> = events.iter().map(|e| e["type"].as_str().unwrap()).collect();
    assert_eq!(types[0], "agent_start", "{types:?}");
    assert_eq!(events[0]["schemaVersion"], 1);
    assert!(types.contains(&"notice"), "{types:?}");
    assert_eq!(types.iter().filter(|t| **t == "agent_start").count(), 1);
    // turn_end's message carries its role, like message_end's.
    let turn_end = events.iter().find(|e| e["type"] == "turn_end").unwrap();
    assert_eq!(turn_end["message"]["role"], "assistant");

    // A run that never starts (a last-message path that cannot be created).
    let output = ws
        .faux(json!([{"text": "ok"}]))
        .args([
            "--events",
            "jsonl",
            "--output-last-message",
            "no/such/dir/x",
            "go",
        ])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
    let events = assert_jsonl(&stderr(&output), "stderr");
    assert_eq!(events.first().unwrap()["type"], "agent_start");
    assert_eq!(events.last().unwrap()["type"], "run_end");
}

#[test]
fn the_last_line_counts_one_turn() {
    let ws = Workspace::new();
    let output = ws
        .faux(json!([{"toolCalls": [{"name": "list_dir", "arguments": {}}]}]))
        .args(["--max-turns", "1", "go"])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(3));
    assert_eq!(
        last_line(&output),
        "leash: turn limit reached after 1 turn; task not confirmed complete; raise it with --max-turns N"
    );
}

#[test]
fn an_invalid_output_claims_no_correction_that_never_ran() {
    let ws = Workspace::new();
    let schema = ws.write("schema.json", r#"{"type": "object"}"#);
    let output = ws
        .faux(json!([{"text": "not json"}, {"text": "still not json"}]))
        .arg("--output-schema")
        .arg(&schema)
        .args(["--max-turns", "1", "go"])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(6), "{}", stderr(&output));
    let last = last_line(&output);
    assert!(!last.contains("after one corrective turn"), "{last}");
    assert!(last.contains("no turn was left for a correction"), "{last}");
    // With a turn left, the correction runs and the line says so.
    let output = ws
        .faux(json!([{"text": "not json"}, {"text": "still not json"}]))
        .arg("--output-schema")
        .arg(&schema)
        .arg("go")
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(6), "{}", stderr(&output));
    assert!(
        last_line(&output).contains("after one corrective turn"),
        "{}",
        stderr(&output)
    );
}

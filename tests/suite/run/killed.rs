//! SIGKILL at any instant (docs/src/resume.md "After a kill"): a run on
//! the scripted model, one `bash` call a turn with a large output and a
//! long final reply, is killed with SIGKILL at many points — while it
//! starts, while the model streams, during each `bash` call, while the
//! transcript and `--output-last-message` are written — and after each
//! kill:
//!
//! - every whole line of the transcript is JSON, and `--resume` of it
//!   continues, restoring every turn the file completed (a reply whose
//!   calls have all their results), or refuses with one `leash:` line;
//! - the resumed transcript keeps the killed run's whole lines byte for
//!   byte;
//! - the `--output-last-message` file is empty or the whole reply;
//! - no process the run started is left (the command's supervisor sweeps
//!   when leash is gone).

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::support::shell::Workspace;

/// Turns with a `bash` call, before the final reply.
const TURNS: usize = 4;

/// Where a kill lands: a delay after the start, or a delay after the
/// `nth` (from 0) event of a type on stderr.
#[derive(Debug, Clone, Copy)]
enum Point {
    After(Duration),
    AfterEvent(&'static str, usize, Duration),
}

/// The script: each turn a `bash` call printing 20 kB (a transcript line
/// larger than any buffer) that sleeps `token`-long, then a reply of
/// many words (an `--output-last-message` past a page).
fn script(token: &str) -> Value {
    let mut responses: Vec<Value> = (0..TURNS)
        .map(|turn| {
            let command = format!("head -c 20000 /dev/zero | tr '\\0' {turn}; sleep {token}");
            json!({"text": format!("turn {turn}"),
                   "toolCalls": [{"name": "bash", "arguments": {"command": command}}]})
        })
        .collect();
    responses.push(json!({"text": final_reply()}));
    Value::Array(responses)
}

fn final_reply() -> String {
    (0..1500)
        .map(|n| format!("w{n}"))
        .collect::<Vec<_>>()
        .join(" ")
}

/// A sleep of about 0.15 s whose argument names this kill, so a process
/// left behind is found by its command line.
fn token(n: usize) -> String {
    format!("0.15{:07}{n:03}", std::process::id() % 10_000_000)
}

/// leash on `script`, killable, its events on a piped stderr.
fn start(ws: &Workspace, token: &str) -> Child {
    let script = ws.script(script(token));
    ws.child()
        .args(["--provider", "faux", "--faux-script"])
        .arg(script)
        .args([
            "--allow-exec",
            "--no-stdin",
            "--events",
            "jsonl",
            "--max-turns",
            "10",
        ])
        .args([
            "--transcript",
            "t.jsonl",
            "--output-last-message",
            "last.txt",
        ])
        .arg("work")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

/// Kills `child` with SIGKILL at `point` (or when it ends first).
fn kill_at(mut child: Child, point: Point) -> Option<i32> {
    let start = Instant::now();
    let stderr = child.stderr.take().unwrap();
    let (sent, seen) = std::sync::mpsc::channel::<String>();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            if sent.send(line).is_err() {
                break;
            }
        }
    });
    let wait = match point {
        Point::After(delay) => delay,
        Point::AfterEvent(kind, nth, delay) => {
            let mut count = 0;
            let deadline = start + Duration::from_secs(30);
            loop {
                let left = deadline.saturating_duration_since(Instant::now());
                match seen.recv_timeout(left) {
                    Ok(line) if line.contains(&format!("\"type\":\"{kind}\"")) => {
                        if count == nth {
                            break delay;
                        }
                        count += 1;
                    }
                    Ok(_) => {}
                    // The run ended first: the kill finds it gone.
                    Err(_) => break Duration::ZERO,
                }
            }
        }
    };
    std::thread::sleep(wait);
    let pid = nix::unistd::Pid::from_raw(i32::try_from(child.id()).unwrap());
    let _ = nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGKILL);
    let status = child.wait().unwrap();
    std::os::unix::process::ExitStatusExt::signal(&status)
}

/// The pids of live processes whose command line holds `token`.
fn holding(token: &str) -> Vec<u32> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Some(pid) = entry.file_name().to_str().and_then(|s| s.parse().ok()) else {
            continue;
        };
        let cmdline = std::fs::read(entry.path().join("cmdline")).unwrap_or_default();
        if String::from_utf8_lossy(&cmdline).contains(token) && alive(pid) {
            found.push(pid);
        }
    }
    found
}

/// Running: a zombie waiting for its reaper counts as gone.
fn alive(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
        stat.rsplit_once(") ")
            .is_some_and(|(_, rest)| !rest.starts_with('Z'))
    })
}

/// Waits (at most 3 s) until no process holds `token`.
fn assert_nothing_left(token: &str, point: Point) {
    let deadline = Instant::now() + Duration::from_secs(3);
    loop {
        let left = holding(token);
        if left.is_empty() {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "killed at {point:?}: still running: {left:?}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The turns `text` completed: replies (not `error`/`aborted`) whose
/// tool calls all have a result in the file.
fn completed_turns(text: &str) -> u64 {
    let lines: Vec<Value> = whole_lines(text)
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    let answered = |id: &str| {
        lines
            .iter()
            .any(|line| line["role"] == "toolResult" && line["toolCallId"] == id)
    };
    let turns = lines.iter().filter(|line| {
        line["role"] == "assistant"
            && !matches!(line["stopReason"].as_str(), Some("error" | "aborted"))
            && line["content"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|block| block["type"] == "toolCall")
                .all(|call| answered(call["id"].as_str().unwrap()))
    });
    turns.count() as u64
}

/// The lines of `text` that end in a newline.
fn whole_lines(text: &str) -> impl Iterator<Item = &str> {
    let whole = text.rfind('\n').map_or("", |end| &text[..=end]);
    whole.lines()
}

/// What one kill left, checked; the outcome of `--resume` as a word.
fn check(ws: &Workspace, point: Point, reply: &str) -> &'static str {
    let last = std::fs::read_to_string(ws.path("last.txt")).unwrap_or_default();
    assert!(
        last.is_empty() || last == reply,
        "killed at {point:?}: --output-last-message holds {} of {} bytes",
        last.len(),
        reply.len()
    );
    let transcript = ws.path("t.jsonl");
    let before = std::fs::read_to_string(&transcript).unwrap_or_default();
    for line in whole_lines(&before) {
        serde_json::from_str::<Value>(line).unwrap_or_else(|error| {
            panic!("killed at {point:?}: a whole line is not JSON ({error}): {line}")
        });
    }
    let torn = !before.is_empty() && !before.ends_with('\n');
    let turns = completed_turns(&before);
    let resumed = resume(ws, &transcript);
    let err = String::from_utf8_lossy(&resumed.stderr).into_owned();
    match resumed.status.code() {
        Some(0) => {
            let after = std::fs::read_to_string(&transcript).unwrap();
            let kept = whole_lines(&before).count();
            let session = after.lines().nth(kept).unwrap();
            let session: Value = serde_json::from_str(session).unwrap();
            assert_eq!(
                session["resumed"]["turns"].as_u64(),
                Some(turns),
                "killed at {point:?}: a completed turn was not restored\n{err}"
            );
            let whole: String = whole_lines(&before)
                .map(|line| format!("{line}\n"))
                .collect();
            assert!(
                after.starts_with(&whole),
                "killed at {point:?}: the resumed transcript changed the killed run's lines"
            );
            if torn {
                "continued after a cut line"
            } else {
                "continued"
            }
        }
        Some(2) => {
            let last_line = err.lines().last().unwrap_or_default();
            assert!(
                last_line.starts_with("leash: ") && last_line.contains("--resume"),
                "killed at {point:?}: the refusal does not say why: {err}"
            );
            assert!(
                before.trim().is_empty() || !before.contains("\"role\":\"assistant\""),
                "killed at {point:?}: a transcript with turns was refused: {last_line}\n{before:.400}"
            );
            "refused"
        }
        other => panic!("killed at {point:?}: --resume exited {other:?}: {err}"),
    }
}

/// `--resume` of the killed run's transcript, appended to it.
fn resume(ws: &Workspace, transcript: &Path) -> std::process::Output {
    let script = ws.write("resume.json", &json!([{"text": "resumed"}]).to_string());
    ws.child()
        .args(["--provider", "faux", "--faux-script"])
        .arg(script)
        .arg("--resume")
        .arg(transcript)
        .arg("--transcript")
        .arg(transcript)
        .args(["--no-stdin", "-q", "go on"])
        .output()
        .unwrap()
}

#[test]
fn a_run_killed_at_any_point_resumes_or_says_why_and_leaves_nothing() {
    // A whole run first, for its length and its reply.
    let reference = Workspace::new();
    let started = Instant::now();
    let child = start(&reference, &token(999));
    let output = child.wait_with_output().unwrap();
    let took = started.elapsed();
    let err = String::from_utf8_lossy(&output.stderr).into_owned();
    if err.contains("cannot confine commands") {
        assert!(std::env::var_os("CI").is_none(), "{err}");
        eprintln!("skipped: --allow-exec cannot confine here: {err}");
        return;
    }
    let tail: String = err
        .lines()
        .last()
        .unwrap_or_default()
        .chars()
        .take(400)
        .collect();
    assert_eq!(output.status.code(), Some(0), "{tail}");
    let reply = std::fs::read_to_string(reference.path("last.txt")).unwrap();
    assert!(reply.starts_with("w0 w1"), "{reply:.100}");

    let mut points = Vec::new();
    // Stepped through the whole run.
    let steps = 24u32;
    for step in 0..steps {
        points.push(Point::After(took * step / steps));
    }
    // During each call, and as each turn's lines are written.
    for turn in 0..TURNS {
        points.push(Point::AfterEvent(
            "tool_execution_start",
            turn,
            Duration::from_millis(60),
        ));
        points.push(Point::AfterEvent(
            "tool_execution_end",
            turn,
            Duration::ZERO,
        ));
    }
    for message in 0..2 * TURNS + 2 {
        points.push(Point::AfterEvent(
            "message_end",
            message,
            Duration::from_micros(200),
        ));
    }
    // While the last-message file is written.
    points.push(Point::AfterEvent("agent_end", 0, Duration::ZERO));
    points.push(Point::AfterEvent(
        "agent_end",
        0,
        Duration::from_micros(500),
    ));

    let mut outcomes: std::collections::BTreeMap<&str, usize> = Default::default();
    for (n, point) in points.iter().enumerate() {
        let ws = Workspace::new();
        let token = token(n);
        let child = start(&ws, &token);
        kill_at(child, *point);
        assert_nothing_left(&token, *point);
        *outcomes.entry(check(&ws, *point, &reply)).or_default() += 1;
    }
    eprintln!("{} kills: {outcomes:?}", points.len());
    assert!(
        outcomes.get("continued").is_some_and(|n| *n > 0),
        "{outcomes:?}"
    );

    // A kill inside the kernel's copy of a line past a page leaves the
    // line's start: the whole run's transcript cut inside each line.
    let whole = std::fs::read_to_string(reference.path("t.jsonl")).unwrap();
    let mut ends: Vec<usize> = whole.match_indices('\n').map(|(at, _)| at).collect();
    ends.pop();
    let mut cuts = 0;
    for end in ends {
        let ws = Workspace::new();
        std::fs::write(ws.path("t.jsonl"), &whole[..end + 2]).unwrap();
        let point = Point::After(Duration::ZERO);
        assert_eq!(check(&ws, point, &reply), "continued after a cut line");
        let mended = std::fs::read_to_string(ws.path("t.jsonl")).unwrap();
        assert!(mended.ends_with('\n'));
        for line in mended.lines() {
            serde_json::from_str::<Value>(line)
                .unwrap_or_else(|error| panic!("not mended ({error}): {line:.200}"));
        }
        cuts += 1;
    }
    assert!(cuts >= 2 * TURNS, "{cuts} cuts");
}

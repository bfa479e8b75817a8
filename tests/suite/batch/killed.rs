//! A batch killed with SIGKILL at any instant (docs/src/batch.md
//! "Resume"): eight items on the scripted model, two at a time, each a
//! `bash` call and a long reply (a result line past a page), with
//! `--events-dir` and `--resume OUT`, killed at many points — stepped
//! through the whole batch, and as each result line lands — and after
//! each kill:
//!
//! - every whole line of OUT is a result line, and a cut last line
//!   begins as one (`{"id":`);
//! - every whole line of each events file is JSON;
//! - no process an item started is left;
//! - the same command again runs exactly the items without a complete
//!   line, keeps every complete line byte for byte, and ends with each id
//!   once.

use std::collections::HashSet;
use std::process::Stdio;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::support::shell::Workspace;

const ITEMS: usize = 8;

/// A sleep of about 0.1 s naming this kill (see `run/killed.rs`).
fn token(n: usize) -> String {
    format!("0.1{:07}{n:03}", std::process::id() % 10_000_000)
}

/// `leash batch` over the items into `out.jsonl`.
fn batch(ws: &Workspace, token: &str) -> std::process::Command {
    let reply = (0..1200)
        .map(|n| format!("w{n}"))
        .collect::<Vec<_>>()
        .join(" ");
    let script = ws.script(json!([
        {"toolCalls": [{"name": "bash", "arguments": {"command": format!("sleep {token}")}}]},
        {"text": reply}
    ]));
    let items: String = (0..ITEMS).map(|n| format!("task {n}\n")).collect();
    let input = ws.write("items.txt", &items);
    let mut cmd = ws.child();
    cmd.arg("batch")
        .arg(input)
        .args(["--provider", "faux", "--faux-script"])
        .arg(script)
        .args([
            "--allow-exec",
            "-q",
            "--parallel",
            "2",
            "--events-dir",
            "ev",
        ])
        .args(["--resume", "out.jsonl"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    cmd
}

/// The whole lines of OUT and its cut tail.
fn out_of(ws: &Workspace) -> (String, String) {
    let text = std::fs::read_to_string(ws.path("out.jsonl")).unwrap_or_default();
    let end = text.rfind('\n').map_or(0, |at| at + 1);
    (text[..end].to_owned(), text[end..].to_owned())
}

fn ids(whole: &str) -> Vec<String> {
    whole
        .lines()
        .map(|line| {
            let value: Value = serde_json::from_str(line).unwrap();
            assert!(
                value["index"].is_u64() && value["status"].is_string(),
                "{line:.200}"
            );
            value["id"].as_str().unwrap().to_owned()
        })
        .collect()
}

/// Where a kill lands: after a delay, or once OUT holds `n` lines.
#[derive(Debug, Clone, Copy)]
enum Point {
    After(Duration),
    Lines(usize),
}

fn kill_at(ws: &Workspace, mut child: std::process::Child, point: Point) {
    match point {
        Point::After(delay) => std::thread::sleep(delay),
        Point::Lines(n) => {
            let deadline = Instant::now() + Duration::from_secs(30);
            while out_of(ws).0.lines().count() < n && Instant::now() < deadline {
                if child.try_wait().unwrap().is_some() {
                    break;
                }
                std::thread::sleep(Duration::from_millis(1));
            }
        }
    }
    let pid = nix::unistd::Pid::from_raw(i32::try_from(child.id()).unwrap());
    let _ = nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGKILL);
    child.wait().unwrap();
}

fn alive(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
        stat.rsplit_once(") ")
            .is_some_and(|(_, rest)| !rest.starts_with('Z'))
    })
}

/// Waits (at most 3 s) until no process's command line holds `token`.
fn assert_nothing_left(token: &str, point: Point) {
    let deadline = Instant::now() + Duration::from_secs(3);
    loop {
        let left: Vec<u32> = std::fs::read_dir("/proc")
            .unwrap()
            .flatten()
            .filter_map(|entry| {
                let pid: u32 = entry.file_name().to_str()?.parse().ok()?;
                let cmdline = std::fs::read(entry.path().join("cmdline")).ok()?;
                (String::from_utf8_lossy(&cmdline).contains(token) && alive(pid)).then_some(pid)
            })
            .collect();
        if left.is_empty() {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "killed at {point:?}: left {left:?}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Every whole line of every events file is JSON.
fn check_events(ws: &Workspace, point: Point) -> usize {
    let mut cut = 0;
    for entry in std::fs::read_dir(ws.path("ev"))
        .into_iter()
        .flatten()
        .flatten()
    {
        let bytes = std::fs::read(entry.path()).unwrap();
        let nul = bytes.iter().take_while(|byte| **byte == 0).count();
        assert_eq!(
            nul,
            0,
            "killed at {point:?}: {} starts with {nul} NUL bytes of {}",
            entry.path().display(),
            bytes.len()
        );
        let text = String::from_utf8(bytes).unwrap();
        let end = text.rfind('\n').map_or(0, |at| at + 1);
        for line in text[..end].lines() {
            serde_json::from_str::<Value>(line).unwrap_or_else(|error| {
                panic!(
                    "killed at {point:?}: {}: {error}: {line:.200}",
                    entry.path().display()
                )
            });
        }
        cut += usize::from(end < text.len());
    }
    cut
}

#[test]
fn a_batch_killed_at_any_point_resumes_every_item_exactly_once() {
    let reference = Workspace::new();
    let started = Instant::now();
    let output = batch(&reference, &token(999)).output().unwrap();
    let took = started.elapsed();
    let err = String::from_utf8_lossy(&output.stderr).into_owned();
    if err.contains("cannot confine commands") {
        assert!(std::env::var_os("CI").is_none(), "{err}");
        eprintln!("skipped: --allow-exec cannot confine here: {err}");
        return;
    }
    assert_eq!(output.status.code(), Some(0), "{:.400}", err);
    assert_eq!(ids(&out_of(&reference).0).len(), ITEMS);

    let steps = 16u32;
    let mut points: Vec<Point> = (0..steps).map(|n| Point::After(took * n / steps)).collect();
    points.extend((1..ITEMS).map(Point::Lines));
    let (mut cut_out, mut cut_events, mut rerun) = (0, 0, 0);
    for (n, point) in points.iter().enumerate() {
        let ws = Workspace::new();
        let token = token(n);
        kill_at(&ws, batch(&ws, &token).spawn().unwrap(), *point);
        assert_nothing_left(&token, *point);
        let (whole, tail) = out_of(&ws);
        assert!(
            tail.is_empty() || tail.starts_with("{\"id\":"),
            "killed at {point:?}: OUT ends in {tail:.80}"
        );
        cut_out += usize::from(!tail.is_empty());
        cut_events += check_events(&ws, *point);
        let kept = ids(&whole);

        let output = batch(&ws, &token).output().unwrap();
        let err = String::from_utf8_lossy(&output.stderr).into_owned();
        assert_eq!(
            output.status.code(),
            Some(0),
            "killed at {point:?}: {:.600}",
            err
        );
        let summary: Value = serde_json::from_str(err.lines().last().unwrap()).unwrap();
        assert_eq!(
            summary["total"].as_u64(),
            Some((ITEMS - kept.len()) as u64),
            "killed at {point:?}: {summary}"
        );
        rerun += ITEMS - kept.len();
        let (after, tail) = out_of(&ws);
        assert!(tail.is_empty());
        assert!(
            after.starts_with(&whole),
            "killed at {point:?}: a complete line changed"
        );
        let all = ids(&after);
        let unique: HashSet<&String> = all.iter().collect();
        assert_eq!(
            (all.len(), unique.len()),
            (ITEMS, ITEMS),
            "killed at {point:?}: {all:?}"
        );
        assert_eq!(
            check_events(&ws, *point),
            0,
            "killed at {point:?}: an events file is cut"
        );
    }
    eprintln!(
        "{} kills: {rerun} items run again, {cut_out} cut OUT lines, {cut_events} cut events lines",
        points.len()
    );
}

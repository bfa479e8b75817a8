//! No escape from `--root` through the real binary (docs/src/tools.md "File tools",
//! docs/src/security.md "Security and limits"): `..` in any
//! position, absolute paths, symlinks to files and directories leading
//! out, symlink loops, NUL bytes, very long paths, `/proc/self/...`, a root
//! that is itself a symlink, and a file swapped for a symlink while it is
//! read. Every refusal is an `isError` result, and the bytes leash sends to
//! the server — every request body — never hold outside content.
//!
//! `grep` and `find` get every path above refused, and a search of the
//! whole tree (symlinks out, a dotenv file, a file swapped for an outside
//! symlink while the tree is walked) never reads a byte outside it. `git`
//! gets every path refused too, and in a repository larger than the root
//! its views show the root's part only. (The calls are spread over replies
//! below leash's cap of 64 calls per reply, so every one of them runs.)
//!
//! The resolver's own unit tests (`src/tools/sandbox.rs`) cover each rule
//! one by one, including the check-then-open race at the system-call level.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::support::hostile;
use crate::support::run::{last_line, stderr};
use crate::support::sse::openai as openai_support;

use std::os::unix::fs::symlink;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use hostile::*;
use openai_support::{body, call_args, call_start, finish, role, text_reply};
use serde_json::{Value, json};

const KEY: &str = "sk-sandbox-environ-Zx81Kq";
const SECRET: &str = "OUTSIDE-SECRET-CONTENT-3e9a";
/// A name only a listing of the outside directory would show.
const OUTSIDE_NAME: &str = "only-outside-listing.txt";

/// A workspace whose `root/` is full of ways out.
fn escape_workspace() -> Workspace {
    let ws = Workspace::new();
    ws.write("outside/secret.txt", SECRET);
    ws.write(&format!("outside/{OUTSIDE_NAME}"), SECRET);
    ws.write("root/sub/inner.txt", "inner\n");
    let root = ws.path("root");
    let outside = ws.path("outside");
    symlink(outside.join("secret.txt"), root.join("abs_file")).unwrap();
    symlink("../outside/secret.txt", root.join("rel_file")).unwrap();
    symlink(&outside, root.join("abs_dir")).unwrap();
    symlink("../../outside", root.join("sub/rel_dir")).unwrap();
    symlink("loop_b", root.join("loop_a")).unwrap();
    symlink("loop_a", root.join("loop_b")).unwrap();
    symlink("self", root.join("self")).unwrap();
    symlink("/proc/self/environ", root.join("environ")).unwrap();
    symlink("/proc/self/cwd", root.join("cwd")).unwrap();
    symlink("/", root.join("slash")).unwrap();
    ws
}

/// The calls of one hostile reply: every way out, as `(tool, path)`.
fn escape_calls(ws: &Workspace) -> Vec<(&'static str, String)> {
    let outside = ws.path("outside");
    let mut calls: Vec<(&str, String)> = [
        "../outside/secret.txt",
        "sub/../../outside/secret.txt",
        "./sub/../../outside/secret.txt",
        "sub/inner.txt/../../../outside/secret.txt",
        "/etc/passwd",
        "/proc/self/environ",
        "/proc/self/cwd/outside/secret.txt",
        "/proc/self/root/etc/passwd",
        "abs_file",
        "rel_file",
        "abs_dir/secret.txt",
        "sub/rel_dir/secret.txt",
        "loop_a",
        "loop_b/x",
        "self",
        "environ",
        "cwd/outside/secret.txt",
        "slash/etc/passwd",
        "sample.ts\u{0}../../outside/secret.txt",
    ]
    .iter()
    .map(|path| ("read_file", path.to_string()))
    .collect();
    calls.push((
        "read_file",
        outside.join("secret.txt").display().to_string(),
    ));
    calls.push(("read_file", "a/".repeat(3000) + "sample.ts"));
    calls.push(("read_file", format!("{}/x", "n".repeat(300))));
    for path in [
        "..",
        "abs_dir",
        "sub/rel_dir",
        "cwd",
        "cwd/outside",
        "/proc/self/cwd/outside",
    ] {
        calls.push(("list_dir", path.to_string()));
    }
    calls.push(("list_dir", outside.display().to_string()));
    // grep and find resolve their path through the same sandbox: every
    // way out above is refused for them too.
    let named: Vec<String> = calls.iter().map(|(_, path)| path.clone()).collect();
    for path in named {
        calls.push(("grep", path.clone()));
        calls.push(("find", path));
    }
    calls
}

/// A call's arguments: the path, and for the searchers a pattern that
/// would match the outside content.
fn escape_args(tool: &str, path: &str) -> Value {
    match tool {
        "grep" => json!({ "pattern": "OUTSIDE|root:x", "path": path }),
        "find" => json!({ "pattern": "**", "path": path }),
        _ => json!({ "path": path }),
    }
}

/// The most calls of one scripted reply: below leash's cap of 64 calls per
/// reply, so every call really runs (past the cap a call is refused
/// unexecuted, which would prove nothing).
const CALLS_PER_REPLY: usize = 60;

/// A server that answers `calls` (`(tool, arguments)`, ids `call_0`…)
/// spread over replies of at most [`CALLS_PER_REPLY`], then `answer`; and
/// the `--max-turns` that lets them all run.
fn server_for_calls(calls: &[(&str, Value)], answer: &str) -> (HostileServer, String) {
    let mut replies: Vec<String> = calls
        .chunks(CALLS_PER_REPLY)
        .enumerate()
        .map(|(turn, chunk)| {
            let mut chunks = vec![role()];
            for (j, (tool, args)) in chunk.iter().enumerate() {
                let id = format!("call_{}", turn * CALLS_PER_REPLY + j);
                chunks.push(call_start(j, &id, tool));
                chunks.push(call_args(j, &args.to_string()));
            }
            chunks.push(finish("tool_calls"));
            body(&chunks, true)
        })
        .collect();
    replies.push(text_reply(&[answer]));
    let turns = replies.len().to_string();
    let responders = replies
        .into_iter()
        .map(|reply| {
            responder(move |_, conn| {
                conn.respond(200, "text/event-stream", reply.as_bytes());
            })
        })
        .collect();
    (HostileServer::start(responders), turns)
}

/// Every `tool_execution_end` of a run, by call id; none may be a call
/// refused for the per-reply cap.
fn ends_by_id(output: &std::process::Output) -> std::collections::HashMap<String, Value> {
    assert_jsonl(&stderr(output), "events")
        .into_iter()
        .filter(|event| event["type"] == "tool_execution_end")
        .map(|end| {
            assert!(
                !end.to_string().contains("not executed"),
                "a call did not run: {end}"
            );
            (end["toolCallId"].as_str().unwrap().to_owned(), end)
        })
        .collect()
}

#[test]
fn every_way_out_is_an_error_result_and_no_outside_byte_reaches_a_request() {
    let ws = escape_workspace();
    let calls: Vec<(&str, Value)> = escape_calls(&ws)
        .into_iter()
        .map(|(tool, path)| (tool, escape_args(tool, &path)))
        .collect();
    let (server, turns) = server_for_calls(&calls, "nothing readable out there");
    let (output, _) = run(ws
        .http("openai", &format!("{}/v1", server.url()), KEY)
        .args(["--events", "jsonl", "--transcript", "t.jsonl"])
        .args(["--max-turns", &turns, "--max-same-call", "99", "go"]));
    assert_calm(&output);
    assert_eq!(output.status.code(), Some(0), "{}", last_line(&output));

    let ends = ends_by_id(&output);
    assert_eq!(ends.len(), calls.len());
    for end in ends.values() {
        assert_eq!(end["isError"], true, "an escape was not refused: {end}");
    }
    let requests = server.requests();
    assert_eq!(requests.len(), calls.len().div_ceil(CALLS_PER_REPLY) + 1);
    for request in &requests {
        for leaked in [SECRET, OUTSIDE_NAME, KEY, "root:x:0:0"] {
            assert!(
                !contains(&request.body, leaked),
                "a request body holds {leaked:?}"
            );
        }
    }
    let transcript = std::fs::read(ws.path("t.jsonl")).unwrap();
    for output in [&output.stdout, &output.stderr, &transcript] {
        assert!(!contains(output, SECRET) && !contains(output, OUTSIDE_NAME));
        assert!(!contains(output, KEY));
    }
    // Refusals say why, in words the model can act on.
    let sent: Value = serde_json::from_slice(&requests.last().unwrap().body).unwrap();
    let said: Vec<String> = sent["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "tool")
        .map(|m| m["content"].as_str().unwrap_or_default().to_owned())
        .collect();
    assert!(said.iter().any(|t| t.contains("'..' is not allowed")));
    assert!(
        said.iter()
            .any(|t| t.contains("a symlink on it leads out of the root"))
    );
    assert!(said.iter().any(|t| t.contains("a symlink loop")));
    assert!(said.iter().any(|t| t.contains("contains a NUL byte")));
    assert!(said.iter().any(|t| t.contains("is too long")));
}

#[test]
fn a_root_that_is_a_symlink_reads_inside_and_refuses_outside() {
    let ws = escape_workspace();
    symlink(ws.path("root"), ws.path("root_link")).unwrap();
    let script = json!([
        {"toolCalls": [
            {"id": "in", "name": "read_file", "arguments": {"path": "sample.ts"}},
            {"id": "via_link", "name": "read_file", "arguments": {"path": ws.path("root_link/sample.ts")}},
            {"id": "out", "name": "read_file", "arguments": {"path": "../outside/secret.txt"}},
            {"id": "out_abs", "name": "read_file", "arguments": {"path": "abs_file"}}
        ]},
        {"text": "done"}
    ]);
    let (output, _) = run(ws
        .faux(script)
        .args(["--root", "root_link", "--events", "jsonl", "go"]));
    assert_calm(&output);
    assert_eq!(output.status.code(), Some(0), "{}", last_line(&output));
    let ends: Vec<Value> = assert_jsonl(&stderr(&output), "events")
        .into_iter()
        .filter(|event| event["type"] == "tool_execution_end")
        .collect();
    let is_error =
        |id: &str| ends.iter().find(|e| e["toolCallId"] == id).unwrap()["isError"].clone();
    assert_eq!(is_error("in"), false);
    assert_eq!(is_error("via_link"), false);
    assert_eq!(is_error("out"), true);
    assert_eq!(is_error("out_abs"), true);
    assert!(!contains(&output.stderr, SECRET));
}

#[test]
fn a_file_swapped_for_an_outside_symlink_while_it_is_read_never_leaks() {
    let ws = escape_workspace();
    ws.write("root/f_real", "inside\n");
    let root = ws.path("root");
    let outside = ws.path("outside/secret.txt");
    let stop = Arc::new(AtomicBool::new(false));
    let swapper = {
        let stop = stop.clone();
        std::thread::spawn(move || {
            while !stop.load(Ordering::Relaxed) {
                let _ = std::fs::rename(root.join("f_real"), root.join("f"));
                let _ = std::fs::rename(root.join("f"), root.join("f_real"));
                let _ = symlink(&outside, root.join("f"));
                let _ = std::fs::remove_file(root.join("f"));
            }
        })
    };
    let calls: Vec<Value> = (0..60)
        .map(|i| json!({"id": format!("r{i}"), "name": "read_file", "arguments": {"path": "f", "limit": i + 1}}))
        .collect();
    let (output, _) = run(ws
        .faux(json!([{"toolCalls": calls}, {"text": "done"}]))
        .args(["--transcript", "t.jsonl", "go"]));
    stop.store(true, Ordering::Relaxed);
    swapper.join().unwrap();
    assert_calm(&output);
    assert_eq!(output.status.code(), Some(0), "{}", last_line(&output));
    let transcript = std::fs::read_to_string(ws.path("t.jsonl")).unwrap();
    assert!(!transcript.contains(SECRET), "outside content was read");
    let results = assert_jsonl(&transcript, "transcript")
        .into_iter()
        .filter(|m| m["role"] == "toolResult")
        .count();
    assert_eq!(results, 60);
}

#[test]
fn searching_the_whole_tree_never_reads_through_a_way_out() {
    let ws = escape_workspace();
    ws.write("root/.env", format!("KEY={SECRET}\n"));
    ws.write("root/.env.local", format!("KEY={SECRET}\n"));
    ws.write("root/sub/.env", format!("KEY={SECRET}\n"));
    let script = json!([
        {"toolCalls": [
            {"id": "grep_all", "name": "grep", "arguments": {"pattern": "OUTSIDE-SECRET|root:x"}},
            {"id": "grep_env", "name": "grep", "arguments": {"pattern": "KEY=", "glob": ".env*"}},
            {"id": "grep_inner", "name": "grep", "arguments": {"pattern": "inner"}},
            {"id": "find_all", "name": "find", "arguments": {"pattern": "**"}}
        ]},
        {"text": "done"}
    ]);
    let (output, _) = run(ws.faux(script).args([
        "--root",
        "root",
        "--events",
        "jsonl",
        "--transcript",
        "t.jsonl",
        "go",
    ]));
    assert_calm(&output);
    assert_eq!(output.status.code(), Some(0), "{}", last_line(&output));
    let transcript = std::fs::read_to_string(ws.path("t.jsonl")).unwrap();
    for leaked in [SECRET, OUTSIDE_NAME, "root:x:0:0"] {
        assert!(
            !transcript.contains(leaked),
            "the transcript holds {leaked:?}"
        );
        assert!(!contains(&output.stderr, leaked));
    }
    let results: Vec<Value> = assert_jsonl(&transcript, "transcript")
        .into_iter()
        .filter(|m| m["role"] == "toolResult")
        .collect();
    let text = |id: &str| {
        results
            .iter()
            .find(|m| m["toolCallId"] == id)
            .map(|m| m["content"].to_string())
            .unwrap_or_default()
    };
    assert!(
        text("grep_all").contains("No matches"),
        "{}",
        text("grep_all")
    );
    assert!(
        text("grep_env").contains("No matches"),
        "{}",
        text("grep_env")
    );
    assert!(text("grep_inner").contains("sub/inner.txt:1:inner"));
    // find lists only the regular files inside: no symlink, no dotenv.
    assert!(text("find_all").contains("sub/inner.txt"));
    assert!(!text("find_all").contains("abs_file") && !text("find_all").contains(".env"));
}

#[test]
fn a_file_swapped_for_an_outside_symlink_while_the_tree_is_searched_never_leaks() {
    let ws = escape_workspace();
    let root = ws.path("root");
    for i in 0..20 {
        ws.write(&format!("root/many/f{i}"), "inside\n");
    }
    let outside = ws.path("outside/secret.txt");
    let stop = Arc::new(AtomicBool::new(false));
    let swapper = {
        let stop = stop.clone();
        std::thread::spawn(move || {
            let dir = root.join("many");
            while !stop.load(Ordering::Relaxed) {
                for i in 0..20 {
                    let name = dir.join(format!("f{i}"));
                    let _ = std::fs::remove_file(&name);
                    let _ = symlink(&outside, &name);
                    let _ = std::fs::remove_file(&name);
                    let _ = std::fs::write(&name, "inside\n");
                }
            }
        })
    };
    let calls: Vec<Value> = (0..30)
        .map(|i| json!({"id": format!("g{i}"), "name": "grep", "arguments": {"pattern": "OUTSIDE|inside", "path": "many", "limit": i + 1}}))
        .collect();
    let (output, _) = run(ws
        .faux(json!([{"toolCalls": calls}, {"text": "done"}]))
        .args(["--root", "root", "--transcript", "t.jsonl", "go"]));
    stop.store(true, Ordering::Relaxed);
    swapper.join().unwrap();
    assert_calm(&output);
    assert_eq!(output.status.code(), Some(0), "{}", last_line(&output));
    let transcript = std::fs::read_to_string(ws.path("t.jsonl")).unwrap();
    assert!(!transcript.contains(SECRET), "outside content was read");
    let results = assert_jsonl(&transcript, "transcript")
        .into_iter()
        .filter(|m| m["role"] == "toolResult")
        .count();
    assert_eq!(results, 30);
}

/// `git` in a repository that holds more than the root: the workspace
/// is the repository, `root/` a directory in it, and `outside/` (with the
/// secret, committed and then changed) beside it. Every way out as a path
/// is refused; the views without a path and a revision that names a file
/// (`HEAD:outside/secret.txt`) never show a byte or a name from outside
/// the root.
#[test]
fn git_never_shows_the_repository_outside_the_root() {
    let ws = escape_workspace();
    let top = ws.path("");
    let git = |args: &[&str]| {
        let output = std::process::Command::new("git")
            .args(["-c", "user.name=t", "-c", "user.email=t@example.com"])
            .args(["-c", "commit.gpgsign=false"])
            .args(args)
            .current_dir(&top)
            .env("GIT_CONFIG_GLOBAL", "/dev/null")
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .output()
            .unwrap();
        assert!(output.status.success(), "git {args:?}: {output:?}");
    };
    git(&["init", "-q"]);
    ws.write("root/sample.ts", "export const inside = 1;\n");
    git(&["add", "outside", "root"]);
    git(&["commit", "-q", "-m", "both sides"]);
    ws.write(
        "outside/secret.txt",
        format!("{SECRET}\nOUTSIDE-CHANGE-7f2\n"),
    );
    ws.write("root/sample.ts", "export const inside = 2;\n");

    let mut calls: Vec<Value> = Vec::new();
    let paths: Vec<String> = escape_calls(&ws)
        .into_iter()
        .filter(|(tool, _)| *tool == "read_file" || *tool == "list_dir")
        .map(|(_, path)| path)
        .collect();
    for path in &paths {
        calls.push(json!({"command": "diff", "args": ["--", path]}));
        calls.push(json!({"command": "log", "args": ["-p", "--", path]}));
        calls.push(json!({"command": "blame", "args": [path]}));
    }
    let refused = calls.len();
    for revision in ["HEAD:outside/secret.txt", "HEAD:../outside/secret.txt"] {
        calls.push(json!({"command": "show", "args": [revision]}));
    }
    let views = [
        json!({"command": "status"}),
        json!({"command": "diff"}),
        json!({"command": "diff", "args": ["HEAD"]}),
        json!({"command": "log", "args": ["-p", "--stat"]}),
        json!({"command": "show", "args": ["HEAD"]}),
        json!({"command": "show", "args": ["--stat", "HEAD"]}),
    ];
    calls.extend(views.iter().cloned());

    let calls: Vec<(&str, Value)> = calls.into_iter().map(|args| ("git", args)).collect();
    let (server, turns) = server_for_calls(&calls, "nothing outside");
    let (output, _) = run(ws
        .http("openai", &format!("{}/v1", server.url()), KEY)
        .args(["--tools", "git", "--events", "jsonl", "--max-turns", &turns])
        .args(["--max-same-call", "99", "go"]));
    assert_calm(&output);
    assert_eq!(output.status.code(), Some(0), "{}", last_line(&output));

    let ends = ends_by_id(&output);
    assert_eq!(ends.len(), calls.len());
    let end = |i: usize| ends[&format!("call_{i}")].clone();
    for (i, (_, args)) in calls.iter().enumerate().take(refused + 2) {
        assert_eq!(end(i)["isError"], true, "not refused: {args}");
    }
    // The views work, and show the root's change.
    let diff = end(refused + 3);
    assert_eq!(diff["isError"], false, "{diff}");
    assert!(diff.to_string().contains("inside = 2"), "{diff}");
    for i in refused + 2..calls.len() {
        assert_eq!(end(i)["isError"], false, "{}", end(i));
    }
    let requests = server.requests();
    for request in &requests {
        for leaked in [SECRET, OUTSIDE_NAME, "OUTSIDE-CHANGE-7f2", KEY] {
            assert!(
                !contains(&request.body, leaked),
                "a request body holds {leaked:?}"
            );
        }
    }
    assert!(!contains(&output.stderr, SECRET) && !contains(&output.stderr, OUTSIDE_NAME));
}

//! `write_file` and `edit_file` through the real binary (docs/src/tools.md "Writing, only
//! when asked"): a
//! model that edits a file on both provider mocks (the file changes,
//! `--output json` lists it, the events show the change); a run without
//! `--allow-write` that can never change a file; every way out of the
//! root refused for both tools; and a directory swapped for an outside
//! symlink over and over while the tools write into it.

#![allow(clippy::unwrap_used)]

use crate::support::hostile::*;
use crate::support::run::{last_line, stderr, stdout, tool_ends};
use crate::support::sse::{anthropic, openai, request_bodies, serve_in_order};

use std::collections::BTreeMap;
use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};
use std::process::Output;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use pretty_assertions::assert_eq;
use serde_json::{Value, json};
use wiremock::MockServer;

const KEY: &str = "sk-edit-tools-test";
const LIB: &str = "pub fn answer() -> u32 {\n    41\n}\n";
const FIXED: &str = "pub fn answer() -> u32 {\n    42\n}\n";
const SECRET: &str = "OUTSIDE-SECRET-7f3c";

/// A workspace whose root holds `src/lib.rs` with the bug to fix.
fn workspace() -> Workspace {
    let ws = Workspace::new();
    ws.write("root/src/lib.rs", LIB);
    ws.write("outside/secret.txt", SECRET);
    ws
}

/// Every file and directory under `dir`, with its bytes (a symlink: its
/// target): what "nothing changed there" compares.
pub(super) fn snapshot(dir: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    let mut out = BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(next) = stack.pop() {
        for entry in std::fs::read_dir(&next).unwrap() {
            let path = entry.unwrap().path();
            let meta = std::fs::symlink_metadata(&path).unwrap();
            let bytes = if meta.is_dir() {
                stack.push(path.clone());
                Vec::new()
            } else if meta.file_type().is_symlink() {
                let target = std::fs::read_link(&path).unwrap();
                target.to_string_lossy().as_bytes().to_vec()
            } else {
                std::fs::read(&path).unwrap()
            };
            out.insert(path, bytes);
        }
    }
    out
}

async fn run_async(mut cmd: std::process::Command) -> Output {
    tokio::task::spawn_blocking(move || cmd.output().unwrap())
        .await
        .unwrap()
}

/// The tool names a request offered.
fn offered(body: &Value, name_of: impl Fn(&Value) -> &Value) -> Vec<String> {
    body["tools"]
        .as_array()
        .map(|tools| {
            tools
                .iter()
                .map(|tool| name_of(tool).as_str().unwrap().to_owned())
                .collect()
        })
        .unwrap_or_default()
}

#[tokio::test(flavor = "multi_thread")]
async fn openai_a_model_edits_a_file_and_the_result_lists_it() {
    let ws = workspace();
    let server = MockServer::start().await;
    let args = json!({"path": "src/lib.rs", "old": "    41\n", "new": "    42\n"}).to_string();
    let first = openai::body(
        &[
            openai::role(),
            openai::call_start(0, "call_edit", "edit_file"),
            openai::call_args(0, &args),
            openai::finish("tool_calls"),
        ],
        true,
    );
    serve_in_order(
        &server,
        "/v1/chat/completions",
        vec![first, openai::text_reply(&["Fixed."])],
    )
    .await;
    let mut cmd = ws.http("openai", &format!("{}/v1", server.uri()), KEY);
    cmd.args(["--allow-write", "--output", "json", "--events", "jsonl"])
        .arg("fix answer()");
    let output = run_async(cmd).await;
    assert_calm(&output);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert_eq!(
        std::fs::read_to_string(ws.path("root/src/lib.rs")).unwrap(),
        FIXED
    );
    let result: Value = serde_json::from_str(&stdout(&output)).unwrap();
    assert_eq!(result["changedFiles"], json!(["src/lib.rs"]));
    assert_eq!(result["reply"], "Fixed.");
    let ends = tool_ends(&output);
    assert_eq!(ends.len(), 1);
    assert_eq!(ends[0]["isError"], false);
    assert_eq!(
        ends[0]["changed"],
        json!({"path": "src/lib.rs", "created": false, "added": 1, "removed": 1})
    );

    let bodies = request_bodies(&server).await;
    assert_eq!(bodies.len(), 2);
    assert_eq!(
        offered(&bodies[0], |tool| &tool["function"]["name"]),
        [
            "read_file",
            "list_dir",
            "grep",
            "find",
            "write_file",
            "edit_file"
        ]
    );
    let said = bodies[1]["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["role"] == "tool")
        .unwrap()["content"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(
        said.starts_with("edited src/lib.rs: 1 replacement (+1 -1)\n--- a/src/lib.rs\n"),
        "{said}"
    );
    assert!(said.contains("-    41\n+    42\n"), "{said}");
}

#[tokio::test(flavor = "multi_thread")]
async fn anthropic_a_model_writes_and_edits_and_the_events_show_each_change() {
    let ws = workspace();
    let server = MockServer::start().await;
    let write = json!({"path": "notes/todo.md", "content": "# todo\n- ship\n"}).to_string();
    let edit = json!({"path": "src/lib.rs", "old": "41", "new": "42"}).to_string();
    let first = [
        anthropic::message_start(100),
        anthropic::tool_use_block(0, "toolu_write", "write_file", &[&write]),
        anthropic::tool_use_block(1, "toolu_edit", "edit_file", &[&edit]),
        anthropic::message_delta("tool_use", 20),
        anthropic::message_stop(),
    ]
    .concat();
    serve_in_order(
        &server,
        "/v1/messages",
        vec![first, anthropic::text_reply("Done.")],
    )
    .await;
    let mut cmd = ws.http("anthropic", &server.uri(), KEY);
    cmd.env("LEASH_ALLOW_WRITE", "1")
        .args(["--output", "json", "--events", "text"])
        .arg("fix it and note it");
    let output = run_async(cmd).await;
    assert_calm(&output);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert_eq!(
        std::fs::read_to_string(ws.path("root/src/lib.rs")).unwrap(),
        FIXED
    );
    assert_eq!(
        std::fs::read_to_string(ws.path("root/notes/todo.md")).unwrap(),
        "# todo\n- ship\n"
    );
    let result: Value = serde_json::from_str(&stdout(&output)).unwrap();
    assert_eq!(
        result["changedFiles"],
        json!(["notes/todo.md", "src/lib.rs"])
    );
    let err = stderr(&output);
    let changed: Vec<&str> = err
        .lines()
        .filter(|line| line.starts_with("[changed]"))
        .collect();
    assert_eq!(
        changed,
        [
            "[changed] notes/todo.md (new, +2)",
            "[changed] src/lib.rs (+1 -1)"
        ]
    );

    let bodies = request_bodies(&server).await;
    assert_eq!(
        offered(&bodies[0], |tool| &tool["name"]),
        [
            "read_file",
            "list_dir",
            "grep",
            "find",
            "write_file",
            "edit_file"
        ]
    );
    let results = bodies[1]["messages"][2]["content"].as_array().unwrap();
    assert_eq!(results[0]["is_error"], false);
    assert_eq!(
        results[0]["content"],
        "created notes/todo.md (2 lines, 14 bytes)"
    );
    assert_eq!(results[1]["is_error"], false);
}

/// Without `--allow-write` the tools are not offered, a call of either is
/// an error result, and no file changes.
#[tokio::test(flavor = "multi_thread")]
async fn without_allow_write_no_file_can_change() {
    let ws = workspace();
    let before = snapshot(&ws.path("root"));
    let server = MockServer::start().await;
    let write = json!({"path": "src/lib.rs", "content": "pwned"}).to_string();
    let edit = json!({"path": "src/lib.rs", "old": "41", "new": "0"}).to_string();
    let create = json!({"path": "new.txt", "content": "pwned"}).to_string();
    let first = openai::body(
        &[
            openai::role(),
            openai::call_start(0, "call_write", "write_file"),
            openai::call_args(0, &write),
            openai::call_start(1, "call_edit", "edit_file"),
            openai::call_args(1, &edit),
            openai::call_start(2, "call_create", "write_file"),
            openai::call_args(2, &create),
            openai::finish("tool_calls"),
        ],
        true,
    );
    serve_in_order(
        &server,
        "/v1/chat/completions",
        vec![first, openai::text_reply(&["Could not."])],
    )
    .await;
    let mut cmd = ws.http("openai", &format!("{}/v1", server.uri()), KEY);
    cmd.args(["--output", "json", "--events", "jsonl"])
        .arg("break it");
    let output = run_async(cmd).await;
    assert_calm(&output);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert_eq!(snapshot(&ws.path("root")), before, "a file changed");
    let result: Value = serde_json::from_str(&stdout(&output)).unwrap();
    assert_eq!(result["changedFiles"], json!([]));
    let ends = tool_ends(&output);
    assert_eq!(ends.len(), 3);
    for end in &ends {
        assert_eq!(end["isError"], true, "{end}");
        assert!(end.get("changed").is_none());
    }
    let bodies = request_bodies(&server).await;
    assert_eq!(
        offered(&bodies[0], |tool| &tool["function"]["name"]),
        ["read_file", "list_dir", "grep", "find"]
    );
}

/// `--tools` naming one write tool offers that one alone; the config
/// file's `allow-write` adds both.
#[test]
fn tools_and_the_config_key_choose_the_write_tools() {
    let ws = workspace();
    let script = json!([
        {"toolCalls": [
            {"id": "w", "name": "write_file", "arguments": {"path": "a.txt", "content": "a\n"}},
            {"id": "e", "name": "edit_file", "arguments": {"path": "src/lib.rs", "old": "41", "new": "42"}}
        ]},
        {"text": "done"}
    ]);
    let (output, _) = run(ws.faux(script.clone()).args([
        "--tools",
        "read_file,edit_file",
        "--output",
        "json",
        "go",
    ]));
    assert_calm(&output);
    let result: Value = serde_json::from_str(&stdout(&output)).unwrap();
    assert_eq!(result["changedFiles"], json!(["src/lib.rs"]));
    assert!(!ws.path("root/a.txt").exists());

    ws.write("root/src/lib.rs", LIB);
    ws.write("config/leash/config.toml", "allow-write = true\n");
    let (output, _) = run(ws.faux(script).args(["--output", "json", "go"]));
    assert_calm(&output);
    let result: Value = serde_json::from_str(&stdout(&output)).unwrap();
    assert_eq!(result["changedFiles"], json!(["a.txt", "src/lib.rs"]));
}

/// A root full of ways out, as in `sandbox.rs`.
fn escape_workspace() -> Workspace {
    let ws = workspace();
    ws.write("root/sub/inner.txt", "inner\n");
    ws.write("root/.git/config", "[core]\n");
    ws.write("root/.env", "KEY=1\n");
    let root = ws.path("root");
    let outside = ws.path("outside");
    symlink(outside.join("secret.txt"), root.join("abs_file")).unwrap();
    symlink("../outside/secret.txt", root.join("rel_file")).unwrap();
    symlink(&outside, root.join("abs_dir")).unwrap();
    symlink("../../outside", root.join("sub/rel_dir")).unwrap();
    symlink("../outside/fresh.txt", root.join("dangling_out")).unwrap();
    symlink("loop_b", root.join("loop_a")).unwrap();
    symlink("loop_a", root.join("loop_b")).unwrap();
    symlink("/proc/self/cwd", root.join("cwd")).unwrap();
    symlink("/", root.join("slash")).unwrap();
    ws
}

#[test]
fn every_way_out_is_refused_for_write_and_edit() {
    let ws = escape_workspace();
    let outside = ws.path("outside");
    let root_before = snapshot(&ws.path("root"));
    let outside_before = snapshot(&outside);
    let paths = [
        "../outside/secret.txt".to_owned(),
        "../outside/fresh.txt".to_owned(),
        "sub/../../outside/secret.txt".to_owned(),
        outside.join("secret.txt").display().to_string(),
        outside.join("fresh.txt").display().to_string(),
        "/tmp/leash-edit-tools-never.txt".to_owned(),
        "abs_file".to_owned(),
        "rel_file".to_owned(),
        "abs_dir/secret.txt".to_owned(),
        "abs_dir/fresh.txt".to_owned(),
        "abs_dir/new_dir/fresh.txt".to_owned(),
        "sub/rel_dir/secret.txt".to_owned(),
        "dangling_out".to_owned(),
        "loop_a".to_owned(),
        "cwd/outside/secret.txt".to_owned(),
        "slash/tmp/leash-edit-tools-never.txt".to_owned(),
        ".git/config".to_owned(),
        ".git/hooks/pre-commit".to_owned(),
        ".env".to_owned(),
        "id_ed25519".to_owned(),
        "sub/inner.txt\u{0}x".to_owned(),
    ];
    let mut calls = Vec::new();
    for (i, path) in paths.iter().enumerate() {
        calls.push(json!({"id": format!("w{i}"), "name": "write_file",
            "arguments": {"path": path, "content": format!("PWNED {i}")}}));
        calls.push(json!({"id": format!("e{i}"), "name": "edit_file",
            "arguments": {"path": path, "old": SECRET, "new": format!("PWNED {i}")}}));
    }
    let (output, _) = run(ws
        .faux(json!([{"toolCalls": calls}, {"text": "done"}]))
        .args([
            "--allow-write",
            "--events",
            "jsonl",
            "--output",
            "json",
            "go",
        ]));
    assert_calm(&output);
    assert_eq!(output.status.code(), Some(0), "{}", last_line(&output));
    let ends = tool_ends(&output);
    assert_eq!(ends.len(), paths.len() * 2);
    for end in &ends {
        assert_eq!(end["isError"], true, "a way out was not refused: {end}");
    }
    assert_eq!(
        snapshot(&outside),
        outside_before,
        "something outside changed"
    );
    assert_eq!(
        snapshot(&ws.path("root")),
        root_before,
        "something inside changed"
    );
    assert!(!Path::new("/tmp/leash-edit-tools-never.txt").exists());
    let result: Value = serde_json::from_str(&stdout(&output)).unwrap();
    assert_eq!(result["changedFiles"], json!([]));
}

/// A directory of the root is swapped for a symlink to the outside and
/// back, over and over, while the model writes and edits files in it:
/// nothing outside is ever created or changed.
#[test]
fn a_directory_swapped_for_an_outside_symlink_while_writing_never_escapes() {
    let ws = escape_workspace();
    let root = ws.path("root");
    let outside = ws.path("outside");
    ws.write("outside/inner.txt", "inner\n");
    let outside_before = snapshot(&outside);
    let stop = Arc::new(AtomicBool::new(false));
    let swapper = {
        let stop = stop.clone();
        let outside = outside.clone();
        std::thread::spawn(move || {
            while !stop.load(Ordering::Relaxed) {
                let _ = std::fs::rename(root.join("sub"), root.join("sub_real"));
                let _ = symlink(&outside, root.join("sub"));
                let _ = std::fs::remove_file(root.join("sub"));
                let _ = std::fs::rename(root.join("sub_real"), root.join("sub"));
                // A moment as a real directory, so some writes land.
                std::thread::sleep(std::time::Duration::from_micros(100));
            }
        })
    };
    let mut calls = Vec::new();
    for i in 0..60 {
        calls.push(json!({"id": format!("w{i}"), "name": "write_file",
            "arguments": {"path": format!("sub/new{}.txt", i % 5), "content": format!("inside {i}\n")}}));
        calls.push(json!({"id": format!("e{i}"), "name": "edit_file",
            "arguments": {"path": "sub/inner.txt", "old": "inner", "new": format!("inner{i}"), "replace_all": i % 2 == 0}}));
    }
    let (output, _) = run(ws
        .faux(json!([{"toolCalls": calls}, {"text": "done"}]))
        .args([
            "--allow-write",
            "--events",
            "jsonl",
            "--max-same-call",
            "200",
            "go",
        ]));
    stop.store(true, Ordering::Relaxed);
    swapper.join().unwrap();
    assert_calm(&output);
    assert_eq!(output.status.code(), Some(0), "{}", last_line(&output));
    let ends = tool_ends(&output);
    assert_eq!(ends.len(), 120);
    assert_eq!(
        snapshot(&outside),
        outside_before,
        "something outside changed"
    );
    let written = ends.iter().filter(|end| end["isError"] == false).count();
    assert!(written > 0, "no call ever wrote; the race was not run");
}

//! The first minutes of a new user, through the real binary: the repeat
//! guard never blocks a re-read after a write changed the file, the text
//! events say what a person needs, `--output json` carries the reason of
//! every failure, and each limit's line names the flag that raises it.

#![allow(clippy::unwrap_used)]

use serde_json::{Value, json};

use crate::support::shell::{Workspace, stderr, stdout, tool_call};

/// One faux response that calls `name` with `args`.
fn calls(name: &str, args: Value) -> Value {
    json!({ "toolCalls": [tool_call(name, args)] })
}

fn read(path: &str) -> Value {
    calls("read_file", json!({ "path": path }))
}

fn edit(path: &str, old: &str, new: &str) -> Value {
    calls("edit_file", json!({ "path": path, "old": old, "new": new }))
}

/// `--output json`'s object.
fn result(output: &std::process::Output) -> Value {
    serde_json::from_str(&stdout(output)).unwrap_or_else(|e| panic!("{e}: {}", stdout(output)))
}

/// The last stderr line, without `leash: `.
fn last_line(output: &std::process::Output) -> String {
    let err = stderr(output);
    let line = err.lines().last().unwrap_or_default();
    line.strip_prefix("leash: ")
        .unwrap_or_else(|| panic!("no leash: line: {err}"))
        .to_owned()
}

#[test]
fn a_re_read_after_an_edit_is_not_a_repeat() {
    let ws = Workspace::new();
    ws.write("notes.txt", "one\n");
    let script = json!([
        read("notes.txt"),
        edit("notes.txt", "one", "two"),
        read("notes.txt"),
        edit("notes.txt", "two", "three"),
        read("notes.txt"),
        { "text": "done" }
    ]);
    let output = ws
        .faux(script)
        .args(["--allow-write", "--max-turns", "8", "--no-stdin"])
        .args(["--output", "json", "edit it"])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert_eq!(
        std::fs::read_to_string(ws.path("notes.txt")).unwrap(),
        "three\n"
    );
    assert_eq!(result(&output)["reply"], "done");
}

#[test]
fn pure_repeats_still_trip_the_guard() {
    let ws = Workspace::new();
    ws.write("notes.txt", "one\n");
    // A failed edit changes nothing: the third read is still a repeat.
    let script = json!([
        read("notes.txt"),
        edit("notes.txt", "absent", "two"),
        read("notes.txt"),
        read("notes.txt"),
        { "text": "done" }
    ]);
    let output = ws
        .faux(script)
        .args(["--allow-write", "--max-turns", "8", "--no-stdin", "edit it"])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(4), "{}", stderr(&output));
    let line = last_line(&output);
    assert!(
        line.contains("read_file was already called 2 times"),
        "{line}"
    );
    assert!(line.contains("--max-same-call"), "{line}");
}

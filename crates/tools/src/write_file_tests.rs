//! Tests of `write_file`, through its `execute`.
#![allow(clippy::unwrap_used)] // a failed setup step should fail the test loudly

use super::*;
use crate::Tool;
use crate::testing::{Fixture, tree};
use serde_json::json;
use std::fs;

struct Writer {
    fixture: Fixture<WriteFile>,
    changes: Arc<ChangeLog>,
}

fn writer() -> Writer {
    let tree = tree("secret.txt", "secret");
    let changes = Arc::new(ChangeLog::default());
    let tool = WriteFile::new(
        Arc::new(Sandbox::new(&tree.root).unwrap()),
        Arc::clone(&changes),
    );
    Writer {
        fixture: Fixture { tree, tool },
        changes,
    }
}

#[test]
fn the_schema_is_strict_and_the_tool_runs_alone() {
    let w = writer();
    let spec = w.fixture.tool.spec();
    assert_eq!(spec.name, "write_file");
    assert_eq!(spec.parameters["additionalProperties"], json!(false));
    assert_eq!(spec.parameters["required"], json!(["path", "content"]));
    assert!(w.fixture.tool.sequential());
}

#[tokio::test]
async fn creates_then_replaces_with_a_diff_and_records_the_change() {
    let w = writer();
    let f = &w.fixture;
    let out = f
        .call_output(json!({"path": "src/new.rs", "content": "fn a() {}\nfn b() {}\n"}))
        .await
        .unwrap();
    assert_eq!(
        crate::testing::text_of(&out),
        "created src/new.rs (2 lines, 20 bytes)"
    );
    assert_eq!(
        FileChange::from_details(&out.details).unwrap().summary(),
        "src/new.rs (new, +2)"
    );
    let text = f
        .call(json!({"path": "src/new.rs", "content": "fn a() {}\nfn c() {}\n"}))
        .await
        .unwrap();
    assert!(
        text.starts_with("replaced src/new.rs (+1 -1)\n--- a/src/new.rs\n+++ b/src/new.rs\n"),
        "{text}"
    );
    assert!(text.contains("-fn b() {}\n+fn c() {}\n"), "{text}");
    assert_eq!(
        fs::read_to_string(f.root.join("src/new.rs")).unwrap(),
        "fn a() {}\nfn c() {}\n"
    );
    let same = f
        .call(json!({"path": "src/new.rs", "content": "fn a() {}\nfn c() {}\n"}))
        .await
        .unwrap();
    assert_eq!(same, "unchanged: src/new.rs already holds this content");
    f.write("b.txt", "b");
    f.call(json!({"path": "b.txt", "content": "B"}))
        .await
        .unwrap();
    assert_eq!(w.changes.paths(), ["b.txt", "src/new.rs"]);
}

#[tokio::test]
async fn refusals_change_nothing_and_say_why() {
    let w = writer();
    let f = &w.fixture;
    f.write(".env", "KEY=1");
    f.write("bin.dat", [0xff, 0xfe, 0x00]);
    let too_big = "x".repeat(MAX_WRITE_BYTES + 1);
    for (args, says) in [
        (json!({"path": ".env", "content": "x"}), "dotenv file"),
        (
            json!({"path": "../outside/secret.txt", "content": "x"}),
            "'..' is not allowed",
        ),
        (
            json!({"path": "bin.dat", "content": "x"}),
            "is not UTF-8 text",
        ),
        (
            json!({"path": "big.txt", "content": too_big}),
            "at most 16777216 bytes",
        ),
    ] {
        let error = f.call(args).await.unwrap_err();
        assert!(error.contains(says), "{error}");
    }
    assert_eq!(fs::read(f.root.join(".env")).unwrap(), b"KEY=1");
    assert_eq!(
        fs::read(f.root.join("bin.dat")).unwrap(),
        [0xff, 0xfe, 0x00]
    );
    assert!(!f.root.join("big.txt").exists());
    assert_eq!(
        fs::read_to_string(f.base.join("outside/secret.txt")).unwrap(),
        "secret"
    );
    assert!(w.changes.paths().is_empty());
}

#[tokio::test]
async fn a_file_too_large_to_replace_is_refused() {
    let w = writer();
    let f = &w.fixture;
    f.write("huge.txt", "y".repeat(MAX_EDIT_BYTES + 1));
    let error = f
        .call(json!({"path": "huge.txt", "content": "small"}))
        .await
        .unwrap_err();
    assert!(error.contains("are never edited or replaced"), "{error}");
    assert_eq!(
        fs::metadata(f.root.join("huge.txt")).unwrap().len(),
        MAX_EDIT_BYTES as u64 + 1
    );
}

//! Tests of `edit_file`, through its `execute`.
#![allow(clippy::unwrap_used)] // a failed setup step should fail the test loudly

use super::*;
use crate::Tool;
use crate::changes::FileChange;
use crate::testing::{Fixture, tree};
use serde_json::json;
use std::fs;
use std::os::unix::fs::PermissionsExt;

struct Editor {
    fixture: Fixture<EditFile>,
    changes: Arc<ChangeLog>,
}

fn editor() -> Editor {
    let tree = tree("secret.txt", "secret");
    let changes = Arc::new(ChangeLog::default());
    let tool = EditFile::new(
        Arc::new(Sandbox::new(&tree.root).unwrap()),
        Arc::clone(&changes),
    );
    Editor {
        fixture: Fixture { tree, tool },
        changes,
    }
}

const CODE: &str = "fn main() {\n    let x = 1;\n    let y = 1;\n    println!(\"{x}\");\n}\n";

#[test]
fn the_schema_is_strict_and_the_tool_runs_alone() {
    let e = editor();
    let spec = e.fixture.tool.spec();
    assert_eq!(spec.name, "edit_file");
    assert_eq!(spec.parameters["additionalProperties"], json!(false));
    assert_eq!(spec.parameters["required"], json!(["path", "old", "new"]));
    assert_eq!(
        spec.parameters["properties"]["replace_all"]["type"],
        "boolean"
    );
    assert!(e.fixture.tool.sequential());
}

#[tokio::test]
async fn one_exact_match_is_replaced_with_a_count_and_a_diff() {
    let e = editor();
    let f = &e.fixture;
    f.write("main.rs", CODE);
    fs::set_permissions(f.root.join("main.rs"), fs::Permissions::from_mode(0o751)).unwrap();
    let out = f
        .call_output(
            json!({"path": "main.rs", "old": "let x = 1;", "new": "let x = 2;\n    let z = 3;"}),
        )
        .await
        .unwrap();
    let text = crate::testing::text_of(&out);
    assert!(
        text.starts_with("edited main.rs: 1 replacement (+2 -1)\n--- a/main.rs\n+++ b/main.rs\n@@"),
        "{text}"
    );
    assert!(
        text.contains("-    let x = 1;\n+    let x = 2;\n+    let z = 3;\n"),
        "{text}"
    );
    assert_eq!(
        fs::read_to_string(f.root.join("main.rs")).unwrap(),
        CODE.replace("let x = 1;", "let x = 2;\n    let z = 3;")
    );
    assert_eq!(
        fs::metadata(f.root.join("main.rs"))
            .unwrap()
            .permissions()
            .mode()
            & 0o7777,
        0o751
    );
    assert_eq!(
        FileChange::from_details(&out.details).unwrap(),
        FileChange {
            path: "main.rs".into(),
            created: false,
            added: 2,
            removed: 1
        }
    );
    assert_eq!(e.changes.paths(), ["main.rs"]);
}

#[tokio::test]
async fn match_count_rules() {
    let e = editor();
    let f = &e.fixture;
    f.write("main.rs", CODE);
    let no_match = f
        .call(json!({"path": "main.rs", "old": "let q = 1;", "new": "x"}))
        .await
        .unwrap_err();
    assert!(
        no_match.contains("was not found in 'main.rs' (0 matches)"),
        "{no_match}"
    );
    let ambiguous = f
        .call(json!({"path": "main.rs", "old": "= 1;", "new": "= 5;"}))
        .await
        .unwrap_err();
    assert_eq!(
        ambiguous,
        "old text occurs 2 times in 'main.rs'; include more of the surrounding lines so it \
         matches exactly once, or set replace_all to replace all 2"
    );
    let explicit_one = f
        .call(json!({"path": "main.rs", "old": "= 1;", "new": "= 5;", "replace_all": false}))
        .await
        .unwrap_err();
    assert!(explicit_one.contains("occurs 2 times"));
    let empty = f
        .call(json!({"path": "main.rs", "old": "", "new": "x"}))
        .await
        .unwrap_err();
    assert!(empty.starts_with("old is empty"), "{empty}");
    let same = f
        .call(json!({"path": "main.rs", "old": "main", "new": "main"}))
        .await
        .unwrap_err();
    assert!(same.contains("nothing would change"));
    assert_eq!(fs::read_to_string(f.root.join("main.rs")).unwrap(), CODE);
    assert!(e.changes.paths().is_empty());

    let all = f
        .call(json!({"path": "main.rs", "old": "= 1;", "new": "= 5;", "replace_all": true}))
        .await
        .unwrap();
    assert!(
        all.starts_with("edited main.rs: 2 replacements (+2 -2)"),
        "{all}"
    );
    assert_eq!(
        fs::read_to_string(f.root.join("main.rs")).unwrap(),
        CODE.replace("= 1;", "= 5;")
    );
    let none_left = f
        .call(json!({"path": "main.rs", "old": "= 1;", "new": "= 5;", "replace_all": true}))
        .await
        .unwrap_err();
    assert!(none_left.contains("(0 matches)"));
}

#[tokio::test]
async fn missing_binary_dotenv_and_outside_files_are_refused() {
    let e = editor();
    let f = &e.fixture;
    f.write(".env.local", "KEY=1");
    f.write("bin.dat", [b'a', 0xff, b'b']);
    for (args, says) in [
        (
            json!({"path": "nope.rs", "old": "a", "new": "b"}),
            "does not exist; use write_file",
        ),
        (
            json!({"path": "no/dir.rs", "old": "a", "new": "b"}),
            "does not exist; use write_file",
        ),
        (
            json!({"path": ".env.local", "old": "1", "new": "2"}),
            "dotenv file",
        ),
        (
            json!({"path": "bin.dat", "old": "a", "new": "b"}),
            "not UTF-8 text",
        ),
        (
            json!({"path": "../outside/secret.txt", "old": "secret", "new": "x"}),
            "'..' is not allowed",
        ),
        (
            json!({"path": ".", "old": "a", "new": "b"}),
            "does not name a file",
        ),
    ] {
        let error = f.call(args).await.unwrap_err();
        assert!(error.contains(says), "{error}");
    }
    assert_eq!(fs::read(f.root.join(".env.local")).unwrap(), b"KEY=1");
    assert_eq!(
        fs::read_to_string(f.base.join("outside/secret.txt")).unwrap(),
        "secret"
    );
    assert!(!f.root.join("no").exists());
}

/// A tiny `old` replaced everywhere by a big `new` would make a file far
/// past the write cap: the size is computed from the match count before
/// any of the new text is built, so the call fails at once instead of
/// allocating 64 GiB (which, before, aborted the whole process).
#[tokio::test]
async fn replace_all_past_the_cap_is_refused_before_building_the_text() {
    let e = editor();
    let f = &e.fixture;
    let before = "x".repeat(64 * 1024);
    f.write("big.txt", &before);
    let new = "y".repeat(1024 * 1024);
    let error = f
        .call(json!({"path": "big.txt", "old": "x", "new": new, "replace_all": true}))
        .await
        .unwrap_err();
    assert_eq!(
        error,
        "the edited 'big.txt' would be 68719476736 bytes (65536 replacements); \
         at most 16777216 bytes may be written"
    );
    // One replacement past the cap is refused the same way.
    f.write("one.txt", "abc");
    let error = f
        .call(json!({"path": "one.txt", "old": "b", "new": "q".repeat(16 * 1024 * 1024)}))
        .await
        .unwrap_err();
    assert!(error.contains("(1 replacement)"), "{error}");
    assert_eq!(fs::read_to_string(f.root.join("big.txt")).unwrap(), before);
    assert!(e.changes.paths().is_empty());
}

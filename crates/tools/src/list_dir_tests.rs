//! Tests of `list_dir`, through its `execute` and its blocking core.
#![allow(clippy::unwrap_used)] // a failed setup step should fail the test loudly

use super::*;
use crate::Tool;
use crate::testing::{Fixture, text_of, tree};
use serde_json::json;
use std::fs;
use std::os::unix::fs::symlink;

const SECRET_NAME: &str = "secret-name-outside.txt";

fn fixture() -> Fixture<ListDir> {
    let tree = tree(SECRET_NAME, "secret");
    let tool = ListDir::new(Arc::new(Sandbox::new(&tree.root).unwrap()));
    Fixture { tree, tool }
}

#[test]
fn the_schema_is_strict() {
    let f = fixture();
    let spec = f.tool.spec();
    assert_eq!(spec.name, "list_dir");
    assert_eq!(spec.parameters["type"], "object");
    assert_eq!(spec.parameters["additionalProperties"], json!(false));
    assert_eq!(spec.parameters["properties"]["path"]["type"], "string");
    assert!(spec.parameters.get("required").is_none());
}

/// The typed tool derives its schema; providers are sent exactly the schema
/// and description written out by hand before.
#[test]
fn the_derived_spec_is_the_hand_written_one() {
    let spec = fixture().tool.spec();
    assert_eq!(
        spec.description,
        format!(
            "List a directory under the root directory: one entry per line, sorted by \
             name; directories end with '/', symlinks with '@'. Shows at most \
             {MAX_ENTRIES} entries; offset pages through a longer listing."
        )
    );
    let hand_written = json!({
        "type": "object",
        "properties": {
            "path": {
                "type": "string",
                "description": "The directory, relative to the root directory (default '.')."
            },
            "offset": {
                "type": "integer",
                "minimum": 0,
                "description": "How many entries (by name) to skip: the next page of a listing that was cut (default 0)."
            }
        },
        "additionalProperties": false
    });
    assert_eq!(spec.parameters, hand_written);
    assert_eq!(spec.parameters.to_string(), hand_written.to_string());
}

#[tokio::test]
async fn entries_are_sorted_with_markers() {
    let f = fixture();
    for name in ["b.txt", "a.txt", "C.txt", ".hidden"] {
        fs::write(f.root.join(name), "x").unwrap();
    }
    fs::create_dir(f.root.join("dir")).unwrap();
    symlink("a.txt", f.root.join("link_in")).unwrap();
    symlink("dir", f.root.join("link_dir")).unwrap();
    symlink(f.base.join("outside"), f.root.join("link_out")).unwrap();
    let want = ".hidden\nC.txt\na.txt\nb.txt\ndir/\nlink_dir@\nlink_in@\nlink_out@";
    let out = f.call_output(json!({})).await.unwrap();
    assert_eq!(text_of(&out), want);
    assert_eq!(
        out.details,
        json!({"path": ".", "entries": 8, "offset": 0, "shown": 8, "truncated": false})
    );
    assert_eq!(f.call(json!({"path": "."})).await.unwrap(), want);
    assert_eq!(f.call(json!({"path": null})).await.unwrap(), want);
    assert_eq!(
        f.call(json!({"path": f.root.to_str().unwrap()}))
            .await
            .unwrap(),
        want
    );
}

#[tokio::test]
async fn subdirectories_and_symlinks_to_them_list() {
    let f = fixture();
    fs::create_dir_all(f.root.join("src/nested")).unwrap();
    fs::write(f.root.join("src/main.rs"), "").unwrap();
    symlink("src", f.root.join("alias")).unwrap();
    assert_eq!(
        f.call(json!({"path": "src"})).await.unwrap(),
        "main.rs\nnested/"
    );
    assert_eq!(
        f.call(json!({"path": "alias/"})).await.unwrap(),
        "main.rs\nnested/"
    );
    assert_eq!(
        f.call(json!({"path": "src/nested"})).await.unwrap(),
        "[empty directory]"
    );
}

#[tokio::test]
async fn large_directories_are_capped_with_a_note() {
    let f = fixture();
    // Created in reverse so the kept set cannot be creation order.
    for i in (0..MAX_ENTRIES + 5).rev() {
        fs::write(f.root.join(format!("f{i:04}")), "").unwrap();
    }
    let out = f.call_output(json!({})).await.unwrap();
    let want: String = (0..MAX_ENTRIES)
        .map(|i| format!("f{i:04}\n"))
        .collect::<String>()
        + "\n[truncated: showed the first 1000 of 1005 entries, sorted by name; offset 1000 \
           lists the next]";
    assert_eq!(text_of(&out), want);
    assert_eq!(
        out.details,
        json!({"path": ".", "entries": 1005, "offset": 0, "shown": 1000, "truncated": true})
    );
    // The next page is the rest, and says it is the last.
    let next = f.call_output(json!({"offset": 1000})).await.unwrap();
    assert_eq!(
        text_of(&next),
        "f1000\nf1001\nf1002\nf1003\nf1004\n\n[showed entries 1001-1005 of 1005 entries, \
         sorted by name: the last page]"
    );
    assert_eq!(
        next.details,
        json!({"path": ".", "entries": 1005, "offset": 1000, "shown": 5, "truncated": false})
    );
}

#[tokio::test]
async fn an_offset_pages_through_the_names_and_past_the_end_says_so() {
    let f = fixture();
    for name in ["e", "a", "d", "b", "c"] {
        fs::write(f.root.join(name), "").unwrap();
    }
    let sandbox = Sandbox::new(&f.root).unwrap();
    let cancel = CancellationToken::new();
    let middle = list_blocking(&sandbox, ".", 1, 2, &cancel).unwrap();
    assert_eq!(
        text_of(&middle),
        "b\nc\n\n[truncated: showed entries 2-3 of 5 entries, sorted by name; offset 3 lists \
         the next]"
    );
    let past = f.call_output(json!({"offset": 9})).await.unwrap();
    assert_eq!(
        text_of(&past),
        "[no entries from offset 9: the directory has 5]"
    );
    assert_eq!(past.details["shown"], 0);
}

#[test]
fn the_cap_keeps_the_first_names_in_order() {
    let f = fixture();
    for name in ["e", "a", "d", "b", "c"] {
        fs::write(f.root.join(name), "").unwrap();
    }
    let sandbox = Sandbox::new(&f.root).unwrap();
    let out = list_blocking(&sandbox, ".", 0, 2, &CancellationToken::new()).unwrap();
    assert_eq!(
        text_of(&out),
        "a\nb\n\n[truncated: showed the first 2 of 5 entries, sorted by name; offset 2 lists \
         the next]"
    );
}

#[tokio::test]
async fn files_and_missing_paths_are_errors() {
    let f = fixture();
    fs::write(f.root.join("a.txt"), "x").unwrap();
    assert_eq!(
        f.call(json!({"path": "a.txt"})).await.unwrap_err(),
        "'a.txt' is not a directory; use read_file"
    );
    assert_eq!(
        f.call(json!({"path": "nope"})).await.unwrap_err(),
        "path 'nope' does not exist under the root; use list_dir to see what is there"
    );
    let err = f.call(json!({"path": "x", "extra": 1})).await.unwrap_err();
    assert!(err.starts_with("invalid arguments: "), "{err}");
    let err = f.call(json!({"path": 5})).await.unwrap_err();
    assert!(err.starts_with("invalid arguments: "), "{err}");
}

#[tokio::test]
async fn nothing_outside_the_root_is_listed() {
    let f = fixture();
    symlink(f.base.join("outside"), f.root.join("link_out")).unwrap();
    symlink("/", f.root.join("slash")).unwrap();
    let outside_abs = f.base.join("outside");
    let cases = [
        "..",
        "../outside",
        "./..",
        outside_abs.to_str().unwrap(),
        "/",
        "/proc/self",
        "link_out",
        "link_out/",
        "slash/etc",
    ];
    for path in cases {
        let err = f.call(json!({"path": path})).await.unwrap_err();
        assert!(err.contains("outside the allowed root"), "{path}: {err}");
        assert!(!err.contains(SECRET_NAME), "{path}: {err}");
    }
    let root_listing = f.call(json!({})).await.unwrap();
    assert_eq!(root_listing, "link_out@\nslash@");
}

#[tokio::test]
async fn names_with_control_characters_stay_on_one_line() {
    let f = fixture();
    fs::write(f.root.join("two\nlines"), "").unwrap();
    assert_eq!(f.call(json!({})).await.unwrap(), "two\\nlines");
}

#[tokio::test]
async fn dotenv_files_are_listed_by_name_but_never_opened() {
    let f = fixture();
    fs::write(f.root.join(".env"), "OPENAI_API_KEY=sk-dotenv\n").unwrap();
    fs::create_dir_all(f.root.join("venv/.env")).unwrap();
    fs::write(f.root.join("venv/.env/pyvenv.cfg"), "x").unwrap();
    let listing = f.call(json!({})).await.unwrap();
    assert!(listing.contains(".env"), "{listing}");
    let error = f.call(json!({"path": ".env"})).await.unwrap_err();
    assert!(error.contains("is a dotenv file"), "{error}");
    // A directory of that name (a virtualenv) is not a dotenv file.
    let inside = f.call(json!({"path": "venv/.env"})).await.unwrap();
    assert!(inside.contains("pyvenv.cfg"), "{inside}");
}

#[tokio::test]
async fn a_cancelled_call_lists_nothing() {
    let f = fixture();
    let cancel = CancellationToken::new();
    cancel.cancel();
    let (sink, _rx) = tokio::sync::mpsc::unbounded_channel();
    let err = f
        .tool
        .execute("call_1", json!({}), cancel, ToolUpdates::new(0, sink))
        .await
        .unwrap_err();
    assert_eq!(err.to_string(), "list_dir was cancelled");
}

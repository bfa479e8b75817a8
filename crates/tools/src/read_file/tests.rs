//! Tests of `read_file`, through the tool's `execute`.
#![allow(clippy::unwrap_used)] // a failed setup step should fail the test loudly

use super::*;
use crate::Tool;
use crate::testing::{Fixture, text_of, tree};
use serde_json::json;
use std::fs;
use std::os::unix::fs::symlink;

const SECRET: &str = "TOP-SECRET-CONTENT";

fn fixture() -> Fixture<ReadFile> {
    let tree = tree("secret.txt", SECRET);
    fs::create_dir_all(tree.root.join("src")).unwrap();
    let tool = ReadFile::new(Arc::new(Sandbox::new(&tree.root).unwrap()));
    Fixture { tree, tool }
}

fn numbered(from: u64, to: u64) -> String {
    (from..=to).map(|n| format!("line {n}\n")).collect()
}

#[test]
fn the_schema_is_strict() {
    let f = fixture();
    let spec = f.tool.spec();
    assert_eq!(spec.name, "read_file");
    assert_eq!(spec.parameters["type"], "object");
    assert_eq!(spec.parameters["required"], json!(["path"]));
    assert_eq!(spec.parameters["additionalProperties"], json!(false));
    assert_eq!(spec.parameters["properties"]["offset"]["minimum"], json!(1));
    assert_eq!(spec.parameters["properties"]["limit"]["minimum"], json!(1));
}

/// The typed tool derives its schema; providers are sent exactly the schema
/// and description written out by hand before.
#[test]
fn the_derived_spec_is_the_hand_written_one() {
    let spec = fixture().tool.spec();
    assert_eq!(
        spec.description,
        format!(
            "Read a UTF-8 text file under the root directory. Shows at most {MAX_LINES} \
             lines or {} KiB per call; a longer file is cut with a note that says which \
             offset (and, inside a longer line, byte_offset) to read on from. An image \
             (PNG, JPEG, GIF, WebP) is shown whole. Use list_dir for directories.",
            MAX_BYTES / 1024
        )
    );
    let hand_written = json!({
        "type": "object",
        "properties": {
            "path": {
                "type": "string",
                "description": "The file, relative to the root directory."
            },
            "offset": {
                "type": "integer",
                "minimum": 1,
                "description": "The first line to show, 1-based (default 1)."
            },
            "limit": {
                "type": "integer",
                "minimum": 1,
                "description": format!("The most lines to show (default and cap {MAX_LINES}).")
            },
            "byte_offset": {
                "type": "integer",
                "minimum": 0,
                "description": "Where in line `offset` to start, in bytes (default 0): to read on\ninside a line longer than one call shows, as the cut note says."
            }
        },
        "required": ["path"],
        "additionalProperties": false
    });
    assert_eq!(spec.parameters, hand_written);
    assert_eq!(spec.parameters.to_string(), hand_written.to_string());
}

#[tokio::test]
async fn reads_a_small_file_exactly() {
    let f = fixture();
    f.write("a.txt", "hello\nworld\n");
    f.write("b.txt", "no newline at the end");
    let out = f.call_output(json!({"path": "a.txt"})).await.unwrap();
    assert_eq!(text_of(&out), "hello\nworld\n");
    assert_eq!(
        out.details,
        json!({"path": "a.txt", "lines": 2, "firstLine": 1, "lastLine": 2, "byteOffset": 0, "truncated": false, "cutPiece": false})
    );
    assert_eq!(
        f.call(json!({"path": "b.txt"})).await.unwrap(),
        "no newline at the end"
    );
    assert_eq!(
        f.call(json!({"path": "a.txt", "offset": 2})).await.unwrap(),
        "world\n"
    );
}

#[tokio::test]
async fn an_empty_file_says_so() {
    let f = fixture();
    f.write("empty.txt", "");
    assert_eq!(
        f.call(json!({"path": "empty.txt"})).await.unwrap(),
        "[empty file]"
    );
    assert_eq!(
        f.call(json!({"path": "empty.txt", "offset": 2}))
            .await
            .unwrap_err(),
        "offset 2 is past the end of 'empty.txt', which has 0 lines"
    );
}

#[tokio::test]
async fn a_large_file_is_cut_with_a_note_and_reads_on() {
    let f = fixture();
    f.write("big.txt", numbered(1, 5231));
    let out = f.call_output(json!({"path": "big.txt"})).await.unwrap();
    assert_eq!(
        text_of(&out),
        numbered(1, 2000)
            + "\n[truncated: showed lines 1-2000 of 5231; call read_file with offset=2001 to read on]"
    );
    assert_eq!(
        out.details,
        json!({"path": "big.txt", "lines": 5231, "firstLine": 1, "lastLine": 2000, "byteOffset": 0, "truncated": true, "cutPiece": false})
    );
    assert_eq!(
        f.call(json!({"path": "big.txt", "offset": 2001, "limit": 3}))
            .await
            .unwrap(),
        numbered(2001, 2003)
            + "\n[showed lines 2001-2003 of 5231; call read_file with offset=2004 to read on]"
    );
    assert_eq!(
        f.call(json!({"path": "big.txt", "offset": 4001}))
            .await
            .unwrap(),
        numbered(4001, 5231)
    );
    assert_eq!(
        f.call(json!({"path": "big.txt", "offset": 5231, "limit": 1}))
            .await
            .unwrap(),
        "line 5231\n"
    );
    assert_eq!(
        f.call(json!({"path": "big.txt", "offset": 7, "limit": 1}))
            .await
            .unwrap(),
        "line 7\n\n[showed line 7 of 5231; call read_file with offset=8 to read on]"
    );
    // A limit above the cap is cut at the cap, and says it was.
    assert_eq!(
        f.call(json!({"path": "big.txt", "offset": 3000, "limit": 3000}))
            .await
            .unwrap(),
        numbered(3000, 4999)
            + "\n[truncated: showed lines 3000-4999 of 5231; call read_file with offset=5000 to read on]"
    );
}

#[tokio::test]
async fn following_the_notes_reads_the_whole_file_once() {
    let f = fixture();
    let content = numbered(1, 4500);
    f.write("big.txt", &content);
    let mut offset = 1;
    let mut seen = String::new();
    for _ in 0..10 {
        let text = f
            .call(json!({"path": "big.txt", "offset": offset}))
            .await
            .unwrap();
        let Some((body, note)) = text.split_once("\n\n[truncated") else {
            seen.push_str(&text);
            break;
        };
        seen.push_str(body);
        seen.push('\n');
        let next = note.split("offset=").nth(1).unwrap();
        offset = next.split(' ').next().unwrap().parse().unwrap();
    }
    assert_eq!(seen, content);
}

#[tokio::test]
async fn the_byte_cap_cuts_between_lines() {
    let f = fixture();
    // 100 bytes a line: exactly 512 lines fit in 50 KiB.
    let line = format!("{}\n", "x".repeat(99));
    f.write("wide.txt", line.repeat(1000));
    assert_eq!(
        f.call(json!({"path": "wide.txt"})).await.unwrap(),
        line.repeat(512)
            + "\n[truncated: showed lines 1-512 of 1000; call read_file with offset=513 to read on]"
    );
}

#[tokio::test]
async fn a_line_longer_than_the_cap_shows_its_start() {
    let f = fixture();
    f.write("long.txt", format!("{}\nnext\n", "a".repeat(200_000)));
    assert_eq!(
        f.call(json!({"path": "long.txt"})).await.unwrap(),
        format!(
            "{}\n\n[truncated: line 1 is 200001 bytes long; showed its bytes 0-51199; call read_file with offset=1 and byte_offset=51200 to read on inside it, or offset=2 for the next line]",
            "a".repeat(MAX_BYTES)
        )
    );
    assert_eq!(
        f.call(json!({"path": "long.txt", "offset": 2}))
            .await
            .unwrap(),
        "next\n"
    );
    // Cut inside a 3-byte character: the half character is dropped.
    f.write("euro.txt", "€".repeat(60_000));
    assert_eq!(
        f.call(json!({"path": "euro.txt"})).await.unwrap(),
        format!(
            "{}\n\n[truncated: line 1 is 180000 bytes long; showed its bytes 0-51197; call read_file with offset=1 and byte_offset=51198 to read on inside it]",
            "€".repeat(17_066)
        )
    );
}

#[tokio::test]
async fn offset_past_the_end_says_how_many_lines_there_are() {
    let f = fixture();
    f.write("three.txt", "a\nb\nc\n");
    f.write("one.txt", "a");
    assert_eq!(
        f.call(json!({"path": "three.txt", "offset": 4}))
            .await
            .unwrap_err(),
        "offset 4 is past the end of 'three.txt', which has 3 lines"
    );
    assert_eq!(
        f.call(json!({"path": "three.txt", "offset": u64::MAX}))
            .await
            .unwrap_err(),
        format!(
            "offset {} is past the end of 'three.txt', which has 3 lines",
            u64::MAX
        )
    );
    assert_eq!(
        f.call(json!({"path": "one.txt", "offset": 2}))
            .await
            .unwrap_err(),
        "offset 2 is past the end of 'one.txt', which has 1 line"
    );
    assert_eq!(
        f.call(json!({"path": "three.txt", "offset": 3}))
            .await
            .unwrap(),
        "c\n"
    );
}

#[tokio::test]
async fn missing_files_and_directories_are_errors() {
    let f = fixture();
    assert_eq!(
        f.call(json!({"path": "nope.txt"})).await.unwrap_err(),
        "path 'nope.txt' does not exist under the root; use list_dir to see what is there"
    );
    assert_eq!(
        f.call(json!({"path": "src"})).await.unwrap_err(),
        "'src' is a directory; use list_dir"
    );
    assert_eq!(
        f.call(json!({"path": "."})).await.unwrap_err(),
        "'.' is a directory; use list_dir"
    );
}

#[tokio::test]
async fn binary_and_non_utf8_files_are_refused() {
    let f = fixture();
    f.write("img.bin", b"\x7FELF\x02\x01\x01\0\0\0\0\0\0\0\0\0\x03\0");
    assert_eq!(
        f.call(json!({"path": "img.bin"})).await.unwrap_err(),
        "'img.bin' is a binary file (it contains NUL bytes); read_file only reads UTF-8 text"
    );
    f.write("latin1.txt", b"ok\ncaf\xe9\n");
    assert_eq!(
        f.call(json!({"path": "latin1.txt"})).await.unwrap_err(),
        "'latin1.txt' is not UTF-8 text (invalid bytes in line 2); read_file only reads UTF-8 text"
    );
    // A NUL past the sniffed start, in the part to show, is still binary.
    let mut late = "xxxxxxx\n".repeat(1100).into_bytes();
    late.extend_from_slice(b"\0\n");
    f.write("late.bin", late);
    assert_eq!(
        f.call(json!({"path": "late.bin"})).await.unwrap_err(),
        "'late.bin' is a binary file (it contains NUL bytes); read_file only reads UTF-8 text"
    );
    // Bad bytes only after the part shown do not stop the part shown.
    f.write("tail.txt", b"good\nbad \xff\n");
    assert_eq!(
        f.call(json!({"path": "tail.txt", "limit": 1}))
            .await
            .unwrap(),
        "good\n\n[showed line 1 of 2; call read_file with offset=2 to read on]"
    );
}

#[tokio::test]
async fn nothing_outside_the_root_is_ever_shown() {
    let f = fixture();
    symlink(f.base.join("outside/secret.txt"), f.root.join("link_file")).unwrap();
    symlink(f.base.join("outside"), f.root.join("link_dir")).unwrap();
    symlink("/proc/self/environ", f.root.join("env")).unwrap();
    let outside_abs = f.base.join("outside/secret.txt");
    let cases = [
        "../outside/secret.txt",
        "src/../../outside/secret.txt",
        "src/..",
        outside_abs.to_str().unwrap(),
        "/proc/self/environ",
        "link_file",
        "link_dir/secret.txt",
        "env",
    ];
    for path in cases {
        let err = f.call(json!({"path": path})).await.unwrap_err();
        assert!(err.contains("outside the allowed root"), "{path}: {err}");
        assert!(!err.contains(SECRET), "{path}: {err}");
    }
}

#[tokio::test]
async fn symlinks_inside_the_root_are_read() {
    let f = fixture();
    f.write("src/lib.rs", "fn main() {}\n");
    symlink("src/lib.rs", f.root.join("alias.rs")).unwrap();
    assert_eq!(
        f.call(json!({"path": "alias.rs"})).await.unwrap(),
        "fn main() {}\n"
    );
    let abs = f.root.join("src/lib.rs");
    assert_eq!(
        f.call(json!({"path": abs.to_str().unwrap()}))
            .await
            .unwrap(),
        "fn main() {}\n"
    );
}

#[tokio::test]
async fn bad_paths_are_refused_in_one_line() {
    let f = fixture();
    let nul = f.call(json!({"path": "a\0b"})).await.unwrap_err();
    assert!(nul.contains("NUL byte"), "{nul}");
    let long = f
        .call(json!({"path": "x".repeat(10_000)}))
        .await
        .unwrap_err();
    assert!(long.contains("too long"), "{long}");
    assert!(!long.contains('\n') && long.len() < 300, "{long}");
    symlink("loop", f.root.join("loop")).unwrap();
    let looped = f.call(json!({"path": "loop"})).await.unwrap_err();
    assert!(looped.contains("symlink loop"), "{looped}");
}

#[tokio::test]
async fn dotenv_files_are_refused_by_name_and_through_symlinks() {
    let f = fixture();
    f.write(".env", "OPENAI_API_KEY=sk-dotenv\n");
    f.write(".env.local", "OPENAI_API_KEY=sk-dotenv\n");
    fs::create_dir_all(f.root.join("config")).unwrap();
    f.write("config/.env.production", "OPENAI_API_KEY=sk-dotenv\n");
    f.write(".envrc.txt", "fine\n");
    symlink(".env", f.root.join("innocent.txt")).unwrap();
    symlink("notes.txt", f.root.join(".env.link")).unwrap();
    f.write("notes.txt", "notes\n");
    for path in [
        ".env",
        "./.env",
        ".env.local",
        "config/.env.production",
        "innocent.txt",
        ".env.link",
    ] {
        let error = f.call(json!({"path": path})).await.unwrap_err();
        assert!(error.contains("is a dotenv file"), "{path}: {error}");
        assert!(!error.contains("sk-dotenv"), "{error}");
    }
    let abs = f.root.join(".env");
    let error = f
        .call(json!({"path": abs.to_str().unwrap()}))
        .await
        .unwrap_err();
    assert!(error.contains("is a dotenv file"), "{error}");
    assert_eq!(
        f.call(json!({"path": ".envrc.txt"})).await.unwrap(),
        "fine\n"
    );
}

#[tokio::test]
async fn arguments_outside_the_schema_are_errors() {
    let f = fixture();
    f.write("a.txt", "a\n");
    for args in [
        json!({"path": "a.txt", "offset": 0}),
        json!({"path": "a.txt", "limit": 0}),
        json!({"path": "a.txt", "offset": -1}),
        json!({"path": "a.txt", "extra": true}),
        json!({"offset": 1}),
        json!("a.txt"),
    ] {
        let err = f.call(args.clone()).await.unwrap_err();
        assert!(err.starts_with("invalid arguments: "), "{args}: {err}");
    }
    // The tool's own words for a count of 0 (a hook may hand it such
    // arguments past the loop's schema check).
    assert_eq!(
        f.call(json!({"path": "a.txt", "offset": 0}))
            .await
            .unwrap_err(),
        "invalid arguments: offset must be 1 or more"
    );
    assert_eq!(
        f.call(json!({"path": "a.txt", "limit": 0}))
            .await
            .unwrap_err(),
        "invalid arguments: limit must be 1 or more"
    );
    assert_eq!(
        f.call(json!({"path": "a.txt", "extra": true}))
            .await
            .unwrap_err(),
        "invalid arguments: unknown field `extra`, expected one of `path`, `offset`, `limit`, `byte_offset`"
    );
}

#[tokio::test]
async fn a_cancelled_call_reads_nothing() {
    let f = fixture();
    f.write("a.txt", "a\n");
    let cancel = CancellationToken::new();
    cancel.cancel();
    let (sink, _rx) = tokio::sync::mpsc::unbounded_channel();
    let updates = ToolUpdates::new(0, sink);
    let err = f
        .tool
        .execute("call_1", json!({"path": "a.txt"}), cancel, updates)
        .await
        .unwrap_err();
    assert_eq!(err.to_string(), "read_file was cancelled");
}

/// Reads a file in the pieces the notes name, following each note's
/// `offset` and `byte_offset`; returns the pieces' texts and details.
async fn read_in_pieces(f: &Fixture<ReadFile>, path: &str) -> Vec<(String, serde_json::Value)> {
    let mut pieces = Vec::new();
    let mut args = json!({"path": path});
    loop {
        let out = f.call_output(args.clone()).await.unwrap();
        let text = crate::testing::text_of(&out);
        let Some((piece, note)) = text.rsplit_once("\n\n[truncated: ") else {
            pieces.push((text, out.details));
            return pieces;
        };
        pieces.push((piece.to_owned(), out.details));
        let number = |name: &str| -> u64 {
            let at = note.find(&format!(" {name}=")).unwrap() + name.len() + 2;
            note[at..]
                .split(|c: char| !c.is_ascii_digit())
                .next()
                .unwrap()
                .parse()
                .unwrap()
        };
        args =
            json!({"path": path, "offset": number("offset"), "byte_offset": number("byte_offset")});
        assert!(pieces.len() < 20, "no end: {note}");
    }
}

#[tokio::test]
async fn a_200_kb_single_line_file_reads_completely_in_pieces() {
    let f = fixture();
    let line: String = (0..40_000).map(|i| format!("{i:04}|")).collect::<String>() + "end";
    assert!(line.len() > 200_000);
    f.write("one-line.txt", &line);
    let pieces = read_in_pieces(&f, "one-line.txt").await;
    assert_eq!(pieces.len(), line.len().div_ceil(MAX_BYTES));
    let joined: String = pieces.iter().map(|(text, _)| text.as_str()).collect();
    assert_eq!(joined, line);
    assert_eq!(pieces[1].1["byteOffset"], json!(MAX_BYTES));
    assert!(
        pieces
            .iter()
            .all(|(_, details)| details["cutPiece"] == json!(true))
    );

    // Multi-byte characters: no piece splits one, none is lost; a line
    // after the long one is read on to as well.
    let euros = "€".repeat(60_000) + "x\nnext line\n";
    f.write("euro.txt", &euros);
    let joined: String = read_in_pieces(&f, "euro.txt")
        .await
        .iter()
        .map(|(text, _)| text.as_str())
        .collect();
    assert_eq!(joined, euros);
}

#[tokio::test]
async fn a_byte_offset_inside_a_character_or_past_the_line_is_handled() {
    let f = fixture();
    f.write("euro.txt", "€€€\nnext\n");
    // Byte 1 is inside the first '€': the piece starts at the next one.
    let out = f
        .call_output(json!({"path": "euro.txt", "byte_offset": 1}))
        .await
        .unwrap();
    assert_eq!(crate::testing::text_of(&out), "€€\nnext\n");
    assert_eq!(out.details["byteOffset"], json!(3));
    assert_eq!(
        f.call(json!({"path": "euro.txt", "offset": 2, "byte_offset": 9}))
            .await
            .unwrap_err(),
        "byte_offset 9 is past the end of line 2 of 'euro.txt', which is 5 bytes long"
    );
}

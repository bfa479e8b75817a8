//! Tests of `grep`, through its `execute` as the loop calls it.
#![allow(clippy::unwrap_used, clippy::expect_used)] // a failed setup step should fail the test loudly

use super::*;
use crate::Tool;
use crate::testing::{Fixture, call, tree};
use serde_json::{Value, json};
use std::fs;
use std::os::unix::fs::symlink;
use std::time::{Duration, Instant};

const SECRET: &str = "TOPSECRET-outside-the-root";

fn fixture() -> Fixture<Grep> {
    let tree = tree("secret.txt", &format!("{SECRET}\n"));
    let tool = Grep::new(Arc::new(Sandbox::new(&tree.root).unwrap()));
    Fixture { tree, tool }
}

impl Fixture<Grep> {
    fn mkdir(&self, dir: &str) {
        fs::create_dir_all(self.root.join(dir)).unwrap();
    }
}

async fn grep(f: &Fixture<Grep>, args: Value) -> Result<String, String> {
    f.call(args).await
}

#[test]
fn the_schema_names_every_argument_and_requires_only_the_pattern() {
    let spec = fixture().tool.spec();
    assert_eq!(spec.name, "grep");
    let properties = spec.parameters["properties"].as_object().unwrap();
    let mut names: Vec<&str> = properties.keys().map(String::as_str).collect();
    names.sort_unstable();
    assert_eq!(
        names,
        [
            "context",
            "glob",
            "ignore_case",
            "limit",
            "literal",
            "path",
            "pattern"
        ]
    );
    assert_eq!(spec.parameters["required"], json!(["pattern"]));
    assert_eq!(spec.parameters["additionalProperties"], json!(false));
    assert_eq!(properties["limit"]["maximum"], json!(1000));
}

#[tokio::test]
async fn matches_are_path_line_text_sorted_by_path_relative_to_the_root() {
    let f = fixture();
    f.mkdir("src/b");
    f.write("src/b/two.rs", "fn beta() {}\nlet x = 1;\nfn gamma() {}\n");
    f.write("src/a.rs", "// nothing\nfn alpha() {}\n");
    f.write("README.md", "no functions here\n");
    assert_eq!(
        grep(&f, json!({"pattern": r"fn \w+\(\)"})).await.unwrap(),
        "src/a.rs:2:fn alpha() {}\nsrc/b/two.rs:1:fn beta() {}\nsrc/b/two.rs:3:fn gamma() {}"
    );
    // One file, or one directory, by its path.
    assert_eq!(
        grep(&f, json!({"pattern": "gamma", "path": "src/b/two.rs"}))
            .await
            .unwrap(),
        "src/b/two.rs:3:fn gamma() {}"
    );
    assert_eq!(
        grep(&f, json!({"pattern": "fn", "path": "src/b"}))
            .await
            .unwrap(),
        "src/b/two.rs:1:fn beta() {}\nsrc/b/two.rs:3:fn gamma() {}"
    );
    let none = grep(&f, json!({"pattern": "omega"})).await.unwrap();
    assert!(
        none.starts_with("No matches for 'omega' in '.' (3 files searched"),
        "{none}"
    );
}

#[tokio::test]
async fn context_lines_surround_each_match_and_groups_are_separated() {
    let f = fixture();
    let lines: Vec<String> = (1..=12).map(|n| format!("line {n}")).collect();
    f.write("a.txt", lines.join("\n") + "\n");
    assert_eq!(
        grep(&f, json!({"pattern": "^line (2|10)$", "context": 1}))
            .await
            .unwrap(),
        "a.txt-1-line 1\na.txt:2:line 2\na.txt-3-line 3\n--\na.txt-9-line 9\na.txt:10:line 10\na.txt-11-line 11"
    );
}

#[tokio::test]
async fn the_limit_keeps_the_first_matches_by_path_and_counts_the_rest() {
    let f = fixture();
    for name in ["c.txt", "a.txt", "b.txt"] {
        f.write(name, "hit\nmiss\nhit\nhit\n");
    }
    let out = grep(&f, json!({"pattern": "hit", "limit": 4}))
        .await
        .unwrap();
    assert_eq!(
        out,
        "a.txt:1:hit\na.txt:3:hit\na.txt:4:hit\nb.txt:1:hit\n\n[5 more matching lines not \
         shown (limit 4; 9 in 3 files in all). Narrow the search with path, glob or a more \
         specific pattern, or raise limit (at most 1000).]"
    );
    let output = f
        .call_output(json!({"pattern": "hit", "limit": 4}))
        .await
        .unwrap();
    assert_eq!(output.details["matches"], json!(9));
    assert_eq!(output.details["shown"], json!(4));
    assert_eq!(output.details["truncated"], json!(true));
    // The default limit is 100.
    f.write("many.txt", "hit\n".repeat(150));
    let out = grep(&f, json!({"pattern": "hit", "path": "many.txt"}))
        .await
        .unwrap();
    assert_eq!(
        out.lines().filter(|l| l.starts_with("many.txt:")).count(),
        100
    );
    assert!(
        out.contains("[50 more matching lines not shown (limit 100;"),
        "{out}"
    );
}

#[tokio::test]
async fn the_same_search_answers_the_same_every_time_despite_the_parallel_walk() {
    let f = fixture();
    for dir in 0..8 {
        f.mkdir(&format!("d{dir}"));
        for file in 0..25 {
            f.write(&format!("d{dir}/f{file}.txt"), "x\nneedle\n");
        }
    }
    let first = grep(&f, json!({"pattern": "needle", "limit": 30}))
        .await
        .unwrap();
    assert!(first.starts_with("d0/f0.txt:2:needle\nd0/f1.txt:2:needle\nd0/f10.txt:2:needle\n"));
    assert!(first.contains("[170 more matching lines not shown (limit 30; 200 in 200 files"));
    for _ in 0..5 {
        assert_eq!(
            grep(&f, json!({"pattern": "needle", "limit": 30}))
                .await
                .unwrap(),
            first
        );
    }
}

#[tokio::test]
async fn gitignore_and_ignore_files_are_honoured_and_hidden_files_skipped() {
    let f = fixture();
    f.mkdir("target");
    f.mkdir("src/gen");
    f.mkdir(".hidden");
    f.write(".gitignore", "target/\n*.log\n");
    f.write("src/.ignore", "gen/\n");
    f.write("target/out.txt", "needle\n");
    f.write("app.log", "needle\n");
    f.write("src/gen/made.rs", "needle\n");
    f.write(".hidden/h.txt", "needle\n");
    f.write(".dotfile", "needle\n");
    f.write("src/kept.rs", "needle\n");
    assert_eq!(
        grep(&f, json!({"pattern": "needle"})).await.unwrap(),
        "src/kept.rs:1:needle"
    );
    // Searching a subdirectory still applies the root's .gitignore.
    f.mkdir("src/logs");
    f.write("src/logs/x.log", "needle\n");
    assert_eq!(
        grep(&f, json!({"pattern": "needle", "path": "src"}))
            .await
            .unwrap(),
        "src/kept.rs:1:needle"
    );
}

#[tokio::test]
async fn the_glob_narrows_the_files_searched() {
    let f = fixture();
    f.mkdir("src/x");
    f.write("src/x/a.rs", "needle\n");
    f.write("src/x/a.md", "needle\n");
    f.write("b.rs", "needle\n");
    assert_eq!(
        grep(&f, json!({"pattern": "needle", "glob": "*.rs"}))
            .await
            .unwrap(),
        "b.rs:1:needle\nsrc/x/a.rs:1:needle"
    );
    assert_eq!(
        grep(&f, json!({"pattern": "needle", "glob": "src/**/*.md"}))
            .await
            .unwrap(),
        "src/x/a.md:1:needle"
    );
    assert_eq!(
        grep(&f, json!({"pattern": "needle", "glob": "src/[x"})).await,
        Err("invalid glob 'src/[x': unclosed character class; missing ']'".to_owned())
    );
}

#[tokio::test]
async fn binary_files_are_skipped() {
    let f = fixture();
    f.write("blob.bin", b"needle\0\x01\x02needle\n");
    f.write("text.txt", "needle\n");
    assert_eq!(
        grep(&f, json!({"pattern": "needle"})).await.unwrap(),
        "text.txt:1:needle"
    );
}

#[tokio::test]
async fn literal_searches_the_text_as_it_is_and_ignore_case_folds_case() {
    let f = fixture();
    f.write("a.txt", "a.b(c)\naxb(c)\nA.B(C)\n");
    assert_eq!(
        grep(&f, json!({"pattern": "a.b"})).await.unwrap(),
        "a.txt:1:a.b(c)\na.txt:2:axb(c)"
    );
    assert_eq!(
        grep(&f, json!({"pattern": "a.b", "literal": true}))
            .await
            .unwrap(),
        "a.txt:1:a.b(c)"
    );
    assert_eq!(
        grep(&f, json!({"pattern": "a.b(c)", "literal": true}))
            .await
            .unwrap(),
        "a.txt:1:a.b(c)"
    );
    assert_eq!(
        grep(
            &f,
            json!({"pattern": "a.b(c)", "literal": true, "ignore_case": true})
        )
        .await
        .unwrap(),
        "a.txt:1:a.b(c)\na.txt:3:A.B(C)"
    );
}

#[tokio::test]
async fn an_invalid_regex_is_a_clear_error_result() {
    let f = fixture();
    f.write("a.txt", "x\n");
    assert_eq!(
        grep(&f, json!({"pattern": "fn (unclosed"})).await,
        Err(
            "invalid regex 'fn (unclosed': unclosed group (Rust regex syntax; set literal: \
             true to search for the text as it is)"
                .to_owned()
        )
    );
}

#[tokio::test]
async fn long_lines_are_cut_and_control_characters_escaped() {
    let f = fixture();
    f.write(
        "long.txt",
        format!("needle{}\nbell\x07needle\n", "y".repeat(1000)),
    );
    let out = grep(&f, json!({"pattern": "needle"})).await.unwrap();
    let first = out.lines().next().unwrap();
    assert_eq!(
        first,
        format!(
            "long.txt:1:needle{} [… line cut: 506 more characters]",
            "y".repeat(MAX_LINE_CHARS - 6)
        )
    );
    assert_eq!(out.lines().nth(1), Some("long.txt:2:bell\\u{7}needle"));
}

#[tokio::test]
async fn the_output_is_capped_in_bytes_with_a_note() {
    let f = fixture();
    let line = format!("needle {}\n", "z".repeat(400));
    f.write("big.txt", line.repeat(1000));
    let out = grep(&f, json!({"pattern": "needle", "limit": 1000}))
        .await
        .unwrap();
    assert!(out.len() <= MAX_BYTES + 300, "{}", out.len());
    assert!(
        out.contains("(the output reached 50 KiB; 1000 in 1 file in all)"),
        "{out:.100}"
    );
}

#[tokio::test]
async fn paths_outside_the_root_are_refused() {
    let f = fixture();
    assert_eq!(
        grep(&f, json!({"pattern": "TOPSECRET", "path": "../outside"})).await,
        Err("path '../outside' is outside the allowed root: '..' is not allowed; give a path relative to the root".to_owned())
    );
    let absolute = f.base.join("outside").display().to_string();
    let refused = grep(&f, json!({"pattern": "TOPSECRET", "path": absolute}))
        .await
        .unwrap_err();
    assert!(refused.contains("is outside the allowed root"), "{refused}");
}

#[tokio::test]
async fn symlinks_out_of_the_root_are_never_followed() {
    let f = fixture();
    symlink(f.base.join("outside"), f.root.join("out-dir")).unwrap();
    symlink(f.base.join("outside/secret.txt"), f.root.join("out-file")).unwrap();
    f.write("in.txt", "nothing\n");
    // The walk does not follow them.
    let out = grep(&f, json!({"pattern": "TOPSECRET"})).await.unwrap();
    assert!(
        !out.contains(SECRET) && out.starts_with("No matches"),
        "{out}"
    );
    // Named, they are refused.
    for path in ["out-dir", "out-file", "out-dir/secret.txt"] {
        let refused = grep(&f, json!({"pattern": "TOPSECRET", "path": path}))
            .await
            .unwrap_err();
        assert!(
            refused.contains("a symlink on it leads out of the root"),
            "{refused}"
        );
    }
}

#[tokio::test]
async fn dotenv_files_are_never_read() {
    let f = fixture();
    f.write(".env", "API_KEY=sk-dotenv\n");
    f.write(".env.local", "API_KEY=sk-dotenv\n");
    f.mkdir("sub");
    f.write("sub/.env", "API_KEY=sk-dotenv\n");
    let out = grep(&f, json!({"pattern": "sk-dotenv"})).await.unwrap();
    assert!(out.starts_with("No matches"), "{out}");
    for path in [".env", ".env.local", "sub/.env"] {
        let refused = grep(&f, json!({"pattern": "sk-dotenv", "path": path}))
            .await
            .unwrap_err();
        assert!(refused.contains("is a dotenv file"), "{refused}");
    }
    // Nor through a glob that names them.
    let out = grep(&f, json!({"pattern": "sk-dotenv", "glob": ".env*"}))
        .await
        .unwrap();
    assert!(out.starts_with("No matches"), "{out}");
}

#[test]
fn a_walked_dotenv_file_or_special_file_is_refused_by_the_sandbox() {
    use std::os::unix::fs::MetadataExt;
    let f = fixture();
    f.write("x.env.txt", "fine\n");
    f.write(".env.production", "API_KEY=sk\n");
    let sandbox = Sandbox::new(&f.root).unwrap();
    let inode = |path: &std::path::Path| fs::symlink_metadata(path).unwrap().ino();
    let fine = f.root.join("x.env.txt");
    assert!(sandbox.open_found(&fine, inode(&fine)).is_ok());
    // Another entry's inode: the file was swapped since the walk saw it.
    let outside = f.base.join("outside/secret.txt");
    assert!(matches!(
        sandbox.open_found(&fine, inode(&outside)),
        Err(SandboxError::Changed { .. })
    ));
    let dotenv = f.root.join(".env.production");
    assert!(matches!(
        sandbox.open_found(&dotenv, inode(&dotenv)),
        Err(SandboxError::Dotenv { .. })
    ));
    assert!(matches!(
        sandbox.open_found(&outside, inode(&outside)),
        Err(SandboxError::Outside { .. })
    ));
    // A symlink swapped in for a walked file, leading out: the handle's
    // path is outside the root, whatever inode the walk saw.
    let link = f.root.join("link");
    symlink(&outside, &link).unwrap();
    assert!(matches!(
        sandbox.open_found(&link, inode(&outside)),
        Err(SandboxError::Changed { .. })
    ));
    // A directory on the way swapped for a symlink out of the root.
    symlink(f.base.join("outside"), f.root.join("dir")).unwrap();
    assert!(matches!(
        sandbox.open_found(&f.root.join("dir/secret.txt"), inode(&outside)),
        Err(SandboxError::Changed { .. })
    ));
    let fifo = f.root.join("pipe");
    let made = std::process::Command::new("mkfifo").arg(&fifo).status();
    if made.is_ok_and(|status| status.success()) {
        // Opening a FIFO without a writer would block: the walk never
        // hands one over (its entry type is not a file), so only the
        // directory check is shown here.
        assert!(matches!(
            sandbox.open_found(&f.root, inode(&f.root)),
            Err(SandboxError::Special { .. })
        ));
    }
}

#[tokio::test]
async fn special_files_are_skipped_by_the_walk_and_refused_by_name() {
    let f = fixture();
    let made = std::process::Command::new("mkfifo")
        .arg(f.root.join("pipe"))
        .status();
    if !made.is_ok_and(|status| status.success()) {
        return; // no mkfifo here
    }
    f.write("a.txt", "needle\n");
    // A FIFO opened for reading would block forever: the walk skips it.
    assert_eq!(
        grep(&f, json!({"pattern": "needle"})).await.unwrap(),
        "a.txt:1:needle"
    );
    let refused = grep(&f, json!({"pattern": "x", "path": "pipe"}))
        .await
        .unwrap_err();
    assert!(
        refused.contains("not a regular file or directory"),
        "{refused}"
    );
}

#[tokio::test]
async fn cancellation_stops_a_big_walk() {
    let f = fixture();
    let chunk = "some text that does not match at all\n".repeat(2000);
    for dir in 0..20 {
        f.mkdir(&format!("d{dir}"));
        for file in 0..100 {
            f.write(&format!("d{dir}/f{file}.txt"), &chunk);
        }
    }
    let cancel = CancellationToken::new();
    cancel.cancel();
    let sandbox = Sandbox::new(&f.root).unwrap();
    let args: GrepArgs = serde_json::from_value(json!({"pattern": "needle"})).unwrap();
    // The blocking core itself stops at once when the token has fired.
    let started = Instant::now();
    let stopped = grep_blocking(&sandbox, &args, &cancel);
    assert!(
        matches!(stopped, Err(GrepError::Interrupted(_))),
        "{stopped:?}"
    );
    assert!(started.elapsed() < Duration::from_secs(2));
    // And a call cancelled while it runs answers as cancelled.
    let cancel = CancellationToken::new();
    let trigger = cancel.clone();
    let (sink, _rx) = tokio::sync::mpsc::unbounded_channel();
    let handle = tokio::spawn(async move {
        f.tool
            .execute(
                "c",
                json!({"pattern": "needle"}),
                cancel,
                ToolUpdates::new(0, sink),
            )
            .await
            .map_err(|e| e.to_string())
    });
    trigger.cancel();
    assert_eq!(
        handle.await.unwrap().err(),
        Some("grep was cancelled".to_owned())
    );
}

#[tokio::test]
async fn the_tool_is_called_through_the_loop_s_adapter() {
    let f = fixture();
    f.write("a.txt", "needle\n");
    let out = call(&f.tool, json!({"pattern": "needle", "bogus": 1})).await;
    assert!(
        out.unwrap_err()
            .starts_with("invalid arguments: unknown field `bogus`")
    );
}

/// A cancelled search stops at the next read of even one huge file. (The
/// reader once failed with `ErrorKind::Interrupted`, which the searcher
/// retries: the cancelled search spun forever.)
#[test]
fn a_cancelled_search_stops_inside_one_file() {
    let f = fixture();
    f.write("huge.txt", "no match on this line\n".repeat(200_000));
    let file = File::open(f.root.join("huge.txt")).unwrap();
    let cancel = CancellationToken::new();
    cancel.cancel();
    let args: GrepArgs = serde_json::from_value(json!({"pattern": "needle"})).unwrap();
    let search = Search {
        matcher: matcher(&args).unwrap(),
        searcher: SearcherBuilder::new(),
        limit: 10,
        cancel,
    };
    let (done, finished) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let collected = Mutex::new(Collected::new(10));
        let mut searcher = search.searcher.build();
        let outcome = search.file(&mut searcher, file, "huge.txt".to_owned(), &collected);
        let _ = done.send(outcome.map_err(|e| e.to_string()));
    });
    let outcome = finished
        .recv_timeout(Duration::from_secs(10))
        .expect("the cancelled search ended");
    assert_eq!(outcome, Ok(false));
}

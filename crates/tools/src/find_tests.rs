//! Tests of `find`, through its `execute` as the loop calls it.
#![allow(clippy::unwrap_used)] // a failed setup step should fail the test loudly

use super::*;
use crate::Tool;
use crate::testing::{Fixture, tree};
use serde_json::json;
use std::fs;
use std::os::unix::fs::symlink;

fn fixture() -> Fixture<Find> {
    let tree = tree("secret.rs", "secret\n");
    let tool = Find::new(Arc::new(Sandbox::new(&tree.root).unwrap()));
    let f = Fixture { tree, tool };
    for dir in ["src/tools/grep", "src/cli", "docs", "target/debug", ".git"] {
        fs::create_dir_all(f.root.join(dir)).unwrap();
    }
    for file in [
        "src/lib.rs",
        "src/tools/mod.rs",
        "src/tools/grep/mod.rs",
        "src/cli/mod.rs",
        "src/cli/args.txt",
        "docs/guide.md",
        "target/debug/build.rs",
        ".git/config.rs",
        ".hidden.rs",
        "build.rs",
    ] {
        f.write(file, "x\n");
    }
    f.write(".gitignore", "target/\n");
    f
}

#[test]
fn the_schema_requires_only_the_pattern() {
    let spec = fixture().tool.spec();
    assert_eq!(spec.name, "find");
    assert_eq!(spec.parameters["required"], json!(["pattern"]));
    assert_eq!(spec.parameters["additionalProperties"], json!(false));
    assert_eq!(
        spec.parameters["properties"]["limit"]["maximum"],
        json!(5000)
    );
}

#[tokio::test]
async fn files_matching_the_glob_are_listed_sorted_relative_to_the_root() {
    let f = fixture();
    assert_eq!(
        f.call(json!({"pattern": "**/*.rs"})).await.unwrap(),
        "build.rs\nsrc/cli/mod.rs\nsrc/lib.rs\nsrc/tools/grep/mod.rs\nsrc/tools/mod.rs"
    );
    assert_eq!(
        f.call(json!({"pattern": "src/**/mod.rs"})).await.unwrap(),
        "src/cli/mod.rs\nsrc/tools/grep/mod.rs\nsrc/tools/mod.rs"
    );
    // '*' stays in one directory; a glob without '/' matches the name.
    assert_eq!(
        f.call(json!({"pattern": "src/*.rs"})).await.unwrap(),
        "src/lib.rs"
    );
    assert_eq!(
        f.call(json!({"pattern": "mod.rs", "path": "src/tools"}))
            .await
            .unwrap(),
        "src/tools/grep/mod.rs\nsrc/tools/mod.rs"
    );
    assert_eq!(
        f.call(json!({"pattern": "*.py"})).await.unwrap(),
        "No files match '*.py' in '.' (hidden and ignored files are skipped)."
    );
}

#[tokio::test]
async fn the_limit_keeps_the_first_paths_and_notes_the_rest() {
    let f = fixture();
    let output = f
        .call_output(json!({"pattern": "*.rs", "limit": 2}))
        .await
        .unwrap();
    assert_eq!(
        crate::testing::text_of(&output),
        "build.rs\nsrc/cli/mod.rs\n\n[truncated: showed the first 2 of 5 matching files, \
         sorted by path; narrow the pattern or path, or raise limit (at most 5000)]"
    );
    assert_eq!(output.details["files"], json!(5));
    assert_eq!(output.details["truncated"], json!(true));
}

#[tokio::test]
async fn bad_globs_files_and_paths_outside_the_root_are_refused() {
    let f = fixture();
    assert_eq!(
        f.call(json!({"pattern": "src/[x"})).await,
        Err("invalid glob 'src/[x': unclosed character class; missing ']'".to_owned())
    );
    assert_eq!(
        f.call(json!({"pattern": "*", "path": "src/lib.rs"})).await,
        Err("'src/lib.rs' is not a directory; find searches a directory tree".to_owned())
    );
    let refused = f
        .call(json!({"pattern": "*", "path": "../outside"}))
        .await
        .unwrap_err();
    assert!(refused.contains("outside the allowed root"), "{refused}");
}

#[tokio::test]
async fn symlinks_are_never_followed_out_of_the_root() {
    let f = fixture();
    symlink(f.base.join("outside"), f.root.join("out")).unwrap();
    let listed = f.call(json!({"pattern": "**/secret.rs"})).await.unwrap();
    assert!(listed.starts_with("No files match"), "{listed}");
    let refused = f
        .call(json!({"pattern": "*", "path": "out"}))
        .await
        .unwrap_err();
    assert!(
        refused.contains("a symlink on it leads out of the root"),
        "{refused}"
    );
}

#[tokio::test]
async fn a_cancelled_find_answers_as_cancelled() {
    let f = fixture();
    let cancel = CancellationToken::new();
    cancel.cancel();
    let args: FindArgs = serde_json::from_value(json!({"pattern": "*"})).unwrap();
    let sandbox = Sandbox::new(&f.root).unwrap();
    assert_eq!(
        find_blocking(&sandbox, &args, &cancel)
            .map_err(|e| e.to_string())
            .err(),
        Some("find was cancelled".to_owned())
    );
}

//! The `git` tool through the real binary on both provider mocks: inside a
//! git work tree it joins the default tools, the model calls `git diff`,
//! and the diff reaches the next request as the tool's result, while the
//! repository's planted config runs nothing. Outside a work tree, naming
//! it is a usage error.

// A failed setup step (temp dir, spawn, JSON shape) should fail the test loudly.
#![allow(clippy::unwrap_used)]

use crate::support::run::Run;
use crate::support::shell::git;
use crate::support::sse::{anthropic, openai, serve_in_order};

use std::fs;
use std::path::{Path, PathBuf};

use pretty_assertions::assert_eq;
use serde_json::{Value, json};
use tempfile::TempDir;
use wiremock::MockServer;

const PROMPT: &str = "Review the uncommitted change.";
const REPLY: &str = "It adds three().";

/// A repository with one commit, an uncommitted change to `src/lib.rs`,
/// and a config that names programs which would leave a file in `marks/`.
struct Repo {
    dir: TempDir,
    top: PathBuf,
    marks: PathBuf,
}

fn repo() -> Repo {
    let dir = tempfile::tempdir().unwrap();
    let base = fs::canonicalize(dir.path()).unwrap();
    let top = base.join("repo");
    let marks = base.join("marks");
    fs::create_dir_all(top.join("src")).unwrap();
    fs::create_dir(&marks).unwrap();
    git(&top, &["init", "-q"]);
    fs::write(top.join("src/lib.rs"), "fn one() {}\n").unwrap();
    git(&top, &["add", "-A"]);
    git(&top, &["commit", "-q", "-m", "first"]);
    fs::write(top.join("src/lib.rs"), "fn one() {}\nfn three() {}\n").unwrap();
    let touch = |name: &str| format!("touch {}/{name}; false", marks.display());
    let mut config = fs::read_to_string(top.join(".git/config")).unwrap();
    config.push_str(&format!(
        "[core]\n\tfsmonitor = \"{}\"\n\tpager = \"{}\"\n[diff]\n\texternal = \"{}\"\n",
        touch("fsmonitor"),
        touch("pager"),
        touch("external"),
    ));
    fs::write(top.join(".git/config"), config).unwrap();
    Repo { dir, top, marks }
}

/// `leash` on `provider` at `base_url`, in `cwd`, with the default tools.
fn review(cwd: &Path, home: &Path, provider: &str, base_url: String) -> Run {
    Run::provider(provider, base_url, "m")
        .key("sk-git-tool-test")
        .home(home)
        .current_dir(cwd)
        .args(["--no-stdin", "--timeout", "20s"])
        .prompt(PROMPT)
}

fn offered(body: &Value, name_of: impl Fn(&Value) -> &Value) -> Vec<String> {
    body["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|tool| name_of(tool).as_str().unwrap().to_owned())
        .collect()
}

fn assert_diff(result: &str) {
    assert!(
        result.starts_with("diff --git a/src/lib.rs b/src/lib.rs\n"),
        "{result}"
    );
    assert!(result.contains("\n+fn three() {}\n"), "{result}");
}

fn assert_nothing_ran(repo: &Repo) {
    let ran: Vec<_> = fs::read_dir(&repo.marks).unwrap().collect();
    assert!(ran.is_empty(), "the repository's config ran: {ran:?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn openai_a_model_reads_the_diff_then_answers() {
    let repo = repo();
    let server = MockServer::start().await;
    let args = json!({"command": "diff", "args": ["--", "src"]}).to_string();
    let first = openai::body(
        &[
            openai::role(),
            openai::call_start(0, "call_git", "git"),
            openai::call_args(0, &args),
            openai::finish("tool_calls"),
        ],
        true,
    );
    serve_in_order(
        &server,
        "/v1/chat/completions",
        vec![first, openai::text_reply(&[REPLY])],
    )
    .await;
    let base = format!("{}/v1", server.uri());
    let output = review(&repo.top, repo.dir.path(), "openai", base)
        .output_async()
        .await;
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "stderr: {stderr}");
    assert_eq!(
        String::from_utf8_lossy(&output.stdout),
        format!("{REPLY}\n")
    );

    let bodies = openai::request_bodies(&server).await;
    assert_eq!(bodies.len(), 2);
    assert_eq!(
        offered(&bodies[0], |tool| &tool["function"]["name"]),
        ["read_file", "list_dir", "grep", "find", "git"]
    );
    let result = bodies[1]["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["role"] == "tool" && m["tool_call_id"] == "call_git")
        .unwrap()["content"]
        .as_str()
        .unwrap()
        .to_owned();
    assert_diff(&result);
    assert_nothing_ran(&repo);
}

#[tokio::test(flavor = "multi_thread")]
async fn anthropic_a_model_reads_the_diff_then_answers() {
    let repo = repo();
    let server = MockServer::start().await;
    let args = json!({"command": "diff"}).to_string();
    let first = [
        anthropic::message_start(100),
        anthropic::tool_use_block(0, "toolu_git", "git", &[&args]),
        anthropic::message_delta("tool_use", 20),
        anthropic::message_stop(),
    ]
    .concat();
    serve_in_order(
        &server,
        "/v1/messages",
        vec![first, anthropic::text_reply(REPLY)],
    )
    .await;
    let root = repo.top.join("src");
    let output = review(&root, repo.dir.path(), "anthropic", server.uri())
        .output_async()
        .await;
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "stderr: {stderr}");
    assert_eq!(
        String::from_utf8_lossy(&output.stdout),
        format!("{REPLY}\n")
    );

    let bodies = anthropic::request_bodies(&server).await;
    assert_eq!(bodies.len(), 2);
    assert_eq!(
        offered(&bodies[0], |tool| &tool["name"]),
        ["read_file", "list_dir", "grep", "find", "git"]
    );
    let result = &bodies[1]["messages"][2]["content"][0];
    assert_eq!(result["tool_use_id"], "toolu_git");
    assert_eq!(result["is_error"], false);
    assert_diff(result["content"].as_str().unwrap());
    assert_nothing_ran(&repo);
}

#[test]
fn naming_git_outside_a_work_tree_is_a_usage_error() {
    let dir = tempfile::tempdir().unwrap();
    let output = Run::new()
        .home(dir.path())
        .current_dir(dir.path())
        .args([
            "--provider",
            "faux",
            "--faux-script",
            concat!(env!("CARGO_MANIFEST_DIR"), "/fixtures/demo.json"),
            "--tools",
            "read_file,git",
            "--no-stdin",
            "hi",
        ])
        .output();
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("--tools names git, but the root")
            && stderr.contains("is not inside a git work tree"),
        "{stderr}"
    );
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
}

mod trust;

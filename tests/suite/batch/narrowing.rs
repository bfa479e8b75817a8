//! A batch input narrows, never widens (docs/src/batch.md "Fan-out: leash batch",
//! docs/src/security.md "Security and limits"): an item's `root` outside the batch's is
//! refused before anything runs, an item's `model` stays with the
//! batch's provider (the other provider's key never goes to the batch's
//! base URL), a BOM is no prompt, an item's `system` replaces a
//! `--system-file`, and an id of 90 UTF-8 bytes still names its events
//! file.

use std::time::Duration;

use wiremock::MockServer;

use super::*;
use crate::support::run::{Run, TEST_KEY};

const ANTHROPIC_KEY: &str = "sk-ant-other-provider-KEY-9999";

#[tokio::test]
async fn an_item_root_outside_the_batch_root_is_refused_before_anything_runs() {
    let server = MockServer::start().await;
    serve(
        &server,
        Api::OpenAi,
        &[answer("task", 0, Reply::Text("ok"))],
    )
    .await;
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("sub")).unwrap();
    std::os::unix::fs::symlink("/", dir.path().join("sub/out")).unwrap();
    for root in ["/", "sub/out", ".."] {
        let text = format!(
            "{{\"id\":\"a\",\"prompt\":\"task a\",\"root\":\"sub\"}}\n{{\"id\":\"b\",\"prompt\":\"task b\",\"root\":{root:?}}}\n"
        );
        std::fs::write(dir.path().join("input.jsonl"), text).unwrap();
        let outcome = batch(
            &server,
            Api::OpenAi,
            Path::new("input.jsonl"),
            &["--root", "."],
        )
        .current_dir(dir.path())
        .output_async()
        .await;
        assert_eq!(outcome.code(), Some(2), "{root}: {}", outcome.stderr());
        let last = outcome.last_line();
        assert!(
            last.starts_with("leash: batch input line 2: `root`")
                && last.contains("outside the batch's --root"),
            "{root}: {last}"
        );
        assert_eq!(outcome.stdout(), "");
    }
    assert!(server.received_requests().await.unwrap().is_empty());
}

#[tokio::test]
async fn an_items_model_never_switches_provider_or_sends_the_other_key() {
    let server = MockServer::start().await;
    serve(
        &server,
        Api::OpenAi,
        &[answer("task", 0, Reply::Text("ok"))],
    )
    .await;
    let (_dir, path) = input(
        "{\"id\":\"a\",\"prompt\":\"task a\",\"model\":\"claude-sonnet-4-5\"}\n{\"id\":\"b\",\"prompt\":\"task b\"}\n",
    );
    // The provider is implied (OpenAI), the base URL an OpenAI-compatible
    // gateway; both keys are exported.
    let outcome = Run::new()
        .env("OPENAI_API_KEY", TEST_KEY)
        .env("ANTHROPIC_API_KEY", ANTHROPIC_KEY)
        .command_word("batch")
        .arg(&path)
        .args(["--tools", "none", "-m", "gpt-test", "--base-url"])
        .arg(format!("{}/v1", server.uri()))
        .timeout(Duration::from_secs(60))
        .output_async()
        .await;
    assert_eq!(outcome.code(), Some(0), "{}", outcome.stderr());
    let lines = lines(&outcome);
    assert_eq!(lines[0]["provider"], "openai", "{:?}", lines[0]);
    assert_eq!(lines[0]["model"], "claude-sonnet-4-5");
    let requests = server.received_requests().await.unwrap();
    assert_eq!(requests.len(), 2);
    for request in &requests {
        assert_eq!(request.url.path(), "/v1/chat/completions");
        let auth = request.headers.get("authorization").unwrap();
        assert_eq!(auth.to_str().unwrap(), format!("Bearer {TEST_KEY}"));
        assert!(request.headers.get("x-api-key").is_none());
        let text = format!(
            "{:?}{}",
            request.headers,
            String::from_utf8_lossy(&request.body)
        );
        assert!(
            !text.contains(ANTHROPIC_KEY),
            "the other provider's key was sent"
        );
    }
    outcome.assert_key_absent(ANTHROPIC_KEY);
}

#[tokio::test]
async fn a_bom_is_stripped_and_an_items_system_replaces_a_system_file() {
    let server = MockServer::start().await;
    serve(
        &server,
        Api::OpenAi,
        &[answer("task", 0, Reply::Text("ok"))],
    )
    .await;
    let (dir, path) = input(
        "\u{feff}{\"id\":\"a\",\"prompt\":\"task a\",\"system\":\"ITEM-SYSTEM\"}\n{\"id\":\"b\",\"prompt\":\"task b\"}\n",
    );
    let system = dir.path().join("system.txt");
    std::fs::write(&system, "FILE-SYSTEM").unwrap();
    let outcome = batch(
        &server,
        Api::OpenAi,
        &path,
        &["--system-file", system.to_str().unwrap()],
    )
    .output_async()
    .await;
    assert_eq!(outcome.code(), Some(0), "{}", outcome.stderr());
    assert_eq!(ids(&lines(&outcome)), ["a", "b"]);
    let requests = server.received_requests().await.unwrap();
    let body_of = |marker: &str| {
        requests
            .iter()
            .map(|request| String::from_utf8_lossy(&request.body).into_owned())
            .find(|body| body.contains(marker))
            .unwrap()
    };
    let a = body_of("task a");
    assert!(
        a.contains("ITEM-SYSTEM") && !a.contains("FILE-SYSTEM"),
        "{a}"
    );
    assert!(!a.contains('\u{feff}'), "{a}");
    assert!(body_of("task b").contains("FILE-SYSTEM"));
}

#[tokio::test]
async fn a_90_byte_utf8_id_names_its_events_file() {
    let server = MockServer::start().await;
    serve(
        &server,
        Api::OpenAi,
        &[answer("task", 0, Reply::Text("ok"))],
    )
    .await;
    let id = "漢".repeat(30);
    let (dir, path) = input(&format!("{{\"id\":{id:?},\"prompt\":\"task\"}}\n"));
    let events = dir.path().join("events");
    let outcome = batch(
        &server,
        Api::OpenAi,
        &path,
        &["--events-dir", events.to_str().unwrap()],
    )
    .output_async()
    .await;
    assert_eq!(outcome.code(), Some(0), "{}", outcome.stderr());
    assert_eq!(lines(&outcome)[0]["status"], "ok");
    let files: Vec<_> = std::fs::read_dir(&events)
        .unwrap()
        .map(|e| e.unwrap())
        .collect();
    assert_eq!(files.len(), 1);
    let name = files[0].file_name().into_string().unwrap();
    assert!(name.len() <= 255 && name.ends_with(".jsonl"), "{name}");
    let text = std::fs::read_to_string(files[0].path()).unwrap();
    assert!(text.contains("\"type\":\"run_end\""), "{text}");
}

#[test]
fn an_item_root_in_a_git_work_tree_does_not_add_the_git_tool() {
    if !crate::support::shell::has("git") {
        eprintln!("skipped: no git");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let repo = dir.path().join("repo");
    std::fs::create_dir(&repo).unwrap();
    let init = std::process::Command::new("git")
        .args(["init", "-q"])
        .current_dir(&repo)
        .status()
        .unwrap();
    assert!(init.success());
    std::fs::write(
        dir.path().join("input.jsonl"),
        "{\"id\":\"a\",\"prompt\":\"look\",\"root\":\"repo\"}\n",
    )
    .unwrap();
    let script = serde_json::json!({"responses": [
        {"toolCalls": [{"id": "c1", "name": "git", "arguments": {"command": "status"}}]},
        {"text": "done"}
    ]});
    let outcome = Run::faux(script)
        .command_word("batch")
        .arg("input.jsonl")
        .args(["--root", ".", "--events-dir", "events"])
        .current_dir(dir.path())
        .timeout(Duration::from_secs(60))
        .output();
    assert_eq!(outcome.code(), Some(0), "{}", outcome.stderr());
    let events = std::fs::read_to_string(dir.path().join("events/a.jsonl")).unwrap();
    let end = events
        .lines()
        .map(|line| serde_json::from_str::<Value>(line).unwrap())
        .find(|event| event["type"] == "tool_execution_end")
        .unwrap();
    assert_eq!(end["isError"], true, "{end}");
    assert!(end.to_string().contains("Tool git not found"), "{end}");
}

//! One batch, one process: the order of the lines, bad input, a failing
//! item, shards and merge, `--events-dir`, the progress.

use std::process::Stdio;

use serde_json::Value;
use wiremock::MockServer;

use super::*;
use crate::support::run::Run;
use crate::support::shell::has;

const ITEMS: &str = r#"{"id": "slow", "prompt": "alpha task"}
{"id": "mid", "prompt": "beta task"}

plain gamma task
"#;

async fn three_items(api: Api) -> MockServer {
    let server = MockServer::start().await;
    serve(
        &server,
        api,
        &[
            answer("alpha", 1200, Reply::Text("A")),
            answer("beta", 400, Reply::Text("B")),
            answer("gamma", 0, Reply::Text("C")),
        ],
    )
    .await;
    server
}

#[tokio::test]
async fn lines_come_in_input_order_each_with_id_and_index() {
    for api in [Api::OpenAi, Api::Anthropic] {
        let server = three_items(api).await;
        let (_dir, path) = input(ITEMS);
        let outcome = batch(&server, api, &path, &[]).output_async().await;
        assert_eq!(outcome.code(), Some(0), "{}", outcome.stderr());
        let lines = lines(&outcome);
        // The plain line's id is its line number (4: the blank line counts).
        assert_eq!(ids(&lines), ["slow", "mid", "4"]);
        let indexes: Vec<u64> = lines.iter().map(|l| l["index"].as_u64().unwrap()).collect();
        assert_eq!(indexes, [0, 1, 2]);
        let replies: Vec<&str> = lines.iter().map(|l| l["reply"].as_str().unwrap()).collect();
        assert_eq!(replies, ["A", "B", "C"]);
        assert_eq!(lines[0]["status"], "ok");
        let summary = summary(&outcome);
        assert_eq!(
            (summary["total"].as_u64(), summary["ok"].as_u64()),
            (Some(3), Some(3))
        );
    }
}

#[tokio::test]
async fn unordered_lines_come_as_the_items_end() {
    let server = three_items(Api::OpenAi).await;
    let (_dir, path) = input(ITEMS);
    let outcome = batch(&server, Api::OpenAi, &path, &["--unordered"])
        .output_async()
        .await;
    assert_eq!(outcome.code(), Some(0), "{}", outcome.stderr());
    assert_eq!(ids(&lines(&outcome)), ["4", "mid", "slow"]);
}

#[tokio::test]
async fn a_bad_input_line_is_named_and_nothing_runs() {
    let server = three_items(Api::OpenAi).await;
    for (text, problem) in [
        (
            "{\"id\":\"a\",\"prompt\":\"alpha\"}\n{\"id\":\"b\"}\n",
            "batch input line 2: missing field `prompt`",
        ),
        (
            "alpha\n{\"id\":\"1\",\"prompt\":\"beta\"}\n",
            "batch input line 2: the id \"1\" is already taken",
        ),
        (
            "alpha\n{\"prompt\": 7}\n",
            "batch input line 2: invalid type",
        ),
        (
            "alpha\nbeta\n{not json\n",
            "batch input line 3: key must be a string",
        ),
    ] {
        let (_dir, path) = input(text);
        let outcome = batch(&server, Api::OpenAi, &path, &[]).output_async().await;
        assert_eq!(outcome.code(), Some(2), "{}", outcome.stderr());
        assert!(
            outcome
                .last_line()
                .starts_with(&format!("leash: {problem}")),
            "{}",
            outcome.stderr()
        );
        assert_eq!(outcome.stdout(), "");
    }
    assert!(server.received_requests().await.unwrap().is_empty());
}

#[tokio::test]
async fn a_failing_item_among_ok_ones_exits_9_and_is_counted() {
    for api in [Api::OpenAi, Api::Anthropic] {
        let server = MockServer::start().await;
        serve(
            &server,
            api,
            &[
                answer("alpha", 0, Reply::Text("A")),
                answer("broken", 0, Reply::Refuse),
                answer("gamma", 0, Reply::Text("C")),
            ],
        )
        .await;
        let (_dir, path) = input("alpha\nbroken\ngamma\n");
        let outcome = batch(&server, api, &path, &[]).output_async().await;
        assert_eq!(outcome.code(), Some(9), "{}", outcome.stderr());
        let lines = lines(&outcome);
        let statuses: Vec<&str> = lines
            .iter()
            .map(|l| l["status"].as_str().unwrap())
            .collect();
        assert_eq!(statuses, ["ok", "error", "ok"]);
        assert_eq!(lines[1]["exitCode"], 1);
        let summary = summary(&outcome);
        assert_eq!(
            summary["byStatus"],
            serde_json::json!({"ok": 2, "error": 1})
        );
        assert_eq!(
            (summary["ok"].as_u64(), summary["failed"].as_u64()),
            (Some(2), Some(1))
        );
        assert!(
            outcome
                .stderr()
                .contains("leash: 1 of 3 items did not end ok (error: 1)"),
            "{}",
            outcome.stderr()
        );
    }
}

#[tokio::test]
async fn shards_merge_back_into_every_id_exactly_once() {
    let server = MockServer::start().await;
    serve(
        &server,
        Api::OpenAi,
        &[answer("task", 0, Reply::Text("done"))],
    )
    .await;
    let text: String = (0..7).map(|n| format!("task number {n}\n")).collect();
    let (dir, path) = input(&text);
    let mut shards = Vec::new();
    for k in 0..3 {
        let shard = format!("{k}/3");
        let outcome = batch(&server, Api::OpenAi, &path, &["--shard", &shard])
            .output_async()
            .await;
        assert_eq!(outcome.code(), Some(0), "{}", outcome.stderr());
        let indexes: Vec<u64> = lines(&outcome)
            .iter()
            .map(|l| l["index"].as_u64().unwrap())
            .collect();
        assert!(indexes.iter().all(|index| index % 3 == k), "{indexes:?}");
        let file = dir.path().join(format!("shard{k}.jsonl"));
        std::fs::write(&file, outcome.stdout()).unwrap();
        shards.push(file);
    }
    let merge = |files: &[&std::path::PathBuf]| {
        Run::new()
            .command_word("batch")
            .arg("merge")
            .arg("--input")
            .arg(&path)
            .args(files.iter().map(|file| file.as_os_str()))
            .output()
    };
    let merged = merge(&[&shards[2], &shards[0], &shards[1]]);
    assert_eq!(merged.code(), Some(0), "{}", merged.stderr());
    let lines = lines(&merged);
    assert_eq!(ids(&lines), ["1", "2", "3", "4", "5", "6", "7"]);
    let missing = merge(&[&shards[0], &shards[2]]);
    assert_eq!(missing.code(), Some(1));
    assert_eq!(missing.stdout(), "");
    assert_eq!(
        missing.last_line(),
        "leash: batch merge: missing ids: \"2\", \"5\""
    );
    let repeated = merge(&[&shards[0], &shards[1], &shards[2], &shards[1]]);
    assert_eq!(repeated.code(), Some(1));
    assert!(
        repeated.last_line().contains("repeated ids: \"2\", \"5\""),
        "{}",
        repeated.stderr()
    );
}

#[tokio::test]
async fn events_dir_keeps_a_hostile_id_inside_it() {
    let server = MockServer::start().await;
    serve(
        &server,
        Api::Anthropic,
        &[answer("task", 0, Reply::Text("ok"))],
    )
    .await;
    let (dir, path) = input(
        "{\"id\": \"../escaped\", \"prompt\": \"task one\"}\n{\"id\": \"a/b\", \"prompt\": \"task two\"}\n{\"id\": \"..\", \"prompt\": \"task three\"}\n",
    );
    let events = dir.path().join("events");
    let outcome = batch(
        &server,
        Api::Anthropic,
        &path,
        &["--events-dir", events.to_str().unwrap()],
    )
    .output_async()
    .await;
    assert_eq!(outcome.code(), Some(0), "{}", outcome.stderr());
    assert!(!dir.path().join("escaped.jsonl").exists());
    let mut names: Vec<String> = std::fs::read_dir(&events)
        .unwrap()
        .map(|entry| entry.unwrap().file_name().into_string().unwrap())
        .collect();
    names.sort();
    assert_eq!(names, ["%2E.%2Fescaped.jsonl", "%2E..jsonl", "a%2Fb.jsonl"]);
    let text = std::fs::read_to_string(events.join("a%2Fb.jsonl")).unwrap();
    let last: Value = serde_json::from_str(text.lines().last().unwrap()).unwrap();
    assert_eq!(
        (last["type"].as_str(), last["status"].as_str()),
        (Some("run_end"), Some("ok"))
    );
    assert_eq!(ids(&lines(&outcome)), ["../escaped", "a/b", ".."]);
}

#[tokio::test]
async fn a_pipe_gets_a_progress_line_every_few_seconds() {
    let server = MockServer::start().await;
    serve(
        &server,
        Api::OpenAi,
        &[answer("task", 900, Reply::Text("ok"))],
    )
    .await;
    let (_dir, path) = input("task a\ntask b\ntask c\ntask d\n");
    let outcome = batch(&server, Api::OpenAi, &path, &["--parallel", "1"])
        .output_async()
        .await;
    assert_eq!(outcome.code(), Some(0), "{}", outcome.stderr());
    let progress: Vec<String> = outcome
        .stderr()
        .lines()
        .filter(|line| line.starts_with("leash batch: "))
        .map(str::to_owned)
        .collect();
    assert!(!progress.is_empty(), "{}", outcome.stderr());
    assert!(
        progress[0].contains("/4 done, ") && progress[0].contains(" tokens"),
        "{progress:?}"
    );
}

#[tokio::test]
async fn a_terminal_gets_a_progress_bar() {
    if !has("script") {
        eprintln!("skipped: no `script` to give leash a terminal");
        return;
    }
    let server = MockServer::start().await;
    serve(
        &server,
        Api::OpenAi,
        &[answer("task", 700, Reply::Text("ok"))],
    )
    .await;
    let (dir, path) = input("task a\ntask b\ntask c\n");
    let out = dir.path().join("out.jsonl");
    let mut run = batch(
        &server,
        Api::OpenAi,
        &path,
        &["--parallel", "1", "--resume", out.to_str().unwrap()],
    );
    // `script` runs the launcher's command line on a pseudo-terminal.
    let leash = run.command();
    let quoted: Vec<String> = std::iter::once(leash.get_program())
        .chain(leash.get_args())
        .map(|word| format!("'{}'", word.to_str().unwrap().replace('\'', "'\\''")))
        .collect();
    let mut cmd = std::process::Command::new("script");
    cmd.args(["-qec", &quoted.join(" "), "/dev/null"])
        .stdin(Stdio::null());
    if let Some(dir) = leash.get_current_dir() {
        cmd.current_dir(dir);
    }
    for (name, value) in leash.get_envs() {
        match value {
            Some(value) => cmd.env(name, value),
            None => cmd.env_remove(name),
        };
    }
    let output = tokio::task::spawn_blocking(move || cmd.output().unwrap())
        .await
        .unwrap();
    let text = String::from_utf8_lossy(&output.stdout).into_owned();
    assert_eq!(output.status.code(), Some(0), "{text}");
    assert!(text.contains("1/3 done, 1 ok, 0 failed"), "{text}");
    assert!(!text.contains("leash batch: "), "{text}");
    assert_eq!(std::fs::read_to_string(&out).unwrap().lines().count(), 3);
}

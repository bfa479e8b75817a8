//! A batch's own files against hostile input (docs/src/batch.md "Fan-out: leash
//! batch", docs/src/security.md "Security and limits"): a shard whose `index` is huge or
//! maximal, two copies on one `--resume OUT`, an id that names the input
//! or the results file, `--resume` on a file that is not a results file,
//! a signal while the batch's MCP servers start.

use std::time::{Duration, Instant};

use wiremock::MockServer;

use super::*;
use crate::support::run::Run;

fn merge(files: &[&Path]) -> Outcome {
    Run::new()
        .command_word("batch")
        .arg("merge")
        .args(files)
        .timeout(Duration::from_secs(20))
        .output()
}

#[test]
fn a_shard_with_a_huge_or_maximal_index_is_counted_not_allocated() {
    let dir = tempfile::tempdir().unwrap();
    for index in [4_000_000_000u64, u64::MAX] {
        let shard = dir.path().join(format!("shard-{index}.jsonl"));
        let text = format!(
            "{{\"id\":\"a\",\"index\":0,\"status\":\"ok\"}}\n{{\"id\":\"b\",\"index\":{index},\"status\":\"ok\"}}\n"
        );
        std::fs::write(&shard, text).unwrap();
        let started = Instant::now();
        let outcome = merge(&[&shard]);
        assert_eq!(outcome.code(), Some(1), "{index}: {}", outcome.stderr());
        let more = u128::from(index) - 1 - 20;
        assert_eq!(
            outcome.last_line(),
            format!(
                "leash: batch merge: missing indexes: {} and {more} more",
                (1..=20)
                    .map(|n| n.to_string())
                    .collect::<Vec<_>>()
                    .join(", ")
            )
        );
        assert_eq!(outcome.stdout(), "");
        assert!(started.elapsed() < Duration::from_secs(5), "{index}");
    }
}

#[tokio::test]
async fn a_second_batch_on_one_resume_file_is_refused_and_no_line_is_torn() {
    let server = MockServer::start().await;
    serve(
        &server,
        Api::OpenAi,
        &[answer("task", 300, Reply::Text("ok"))],
    )
    .await;
    let text: String = (0..6).map(|n| format!("task {n}\n")).collect();
    let (dir, path) = input(&text);
    let out = dir.path().join("out.jsonl");
    let args = ["--parallel", "2", "--resume", out.to_str().unwrap()];
    let first = batch(&server, Api::OpenAi, &path, &args).output_async();
    let second = async {
        // The first copy holds the lock once it has started.
        tokio::time::sleep(Duration::from_millis(400)).await;
        batch(&server, Api::OpenAi, &path, &args)
            .output_async()
            .await
    };
    let (first, second) = tokio::join!(first, second);
    assert_eq!(first.code(), Some(0), "{}", first.stderr());
    assert_eq!(second.code(), Some(2), "{}", second.stderr());
    assert!(
        second
            .last_line()
            .contains("another leash batch is writing to it"),
        "{}",
        second.stderr()
    );
    let text = std::fs::read_to_string(&out).unwrap();
    let lines: Vec<Value> = text
        .lines()
        .map(|line| serde_json::from_str(line).unwrap_or_else(|e| panic!("torn: {e}: {line}")))
        .collect();
    assert_eq!(lines.len(), 6, "{text}");
    assert_eq!(server.received_requests().await.unwrap().len(), 6);
}

#[tokio::test]
async fn an_id_naming_the_input_or_the_results_file_is_refused() {
    let server = MockServer::start().await;
    serve(
        &server,
        Api::OpenAi,
        &[answer("task", 0, Reply::Text("ok"))],
    )
    .await;
    let (dir, path) = input("{\"id\":\"input\",\"prompt\":\"task\"}\n");
    let before = std::fs::read_to_string(&path).unwrap();
    let here = dir.path().to_str().unwrap();
    let outcome = batch(&server, Api::OpenAi, &path, &["--events-dir", here])
        .output_async()
        .await;
    assert_eq!(outcome.code(), Some(2), "{}", outcome.stderr());
    assert!(
        outcome
            .last_line()
            .starts_with("leash: batch input line 1: the id \"input\""),
        "{}",
        outcome.stderr()
    );
    assert_eq!(std::fs::read_to_string(&path).unwrap(), before);

    // `shard-0` beside `--resume shard-0.jsonl`: the results file.
    std::fs::write(&path, "{\"id\":\"shard-0\",\"prompt\":\"task\"}\n").unwrap();
    let out = dir.path().join("shard-0.jsonl");
    let results = "{\"id\":\"old\",\"index\":0,\"status\":\"ok\"}\n";
    std::fs::write(&out, results).unwrap();
    let args = ["--events-dir", here, "--resume", out.to_str().unwrap()];
    let outcome = batch(&server, Api::OpenAi, &path, &args)
        .output_async()
        .await;
    assert_eq!(outcome.code(), Some(2), "{}", outcome.stderr());
    assert!(
        outcome.last_line().contains("input or results file"),
        "{}",
        outcome.stderr()
    );
    assert_eq!(std::fs::read_to_string(&out).unwrap(), results);
    assert!(server.received_requests().await.unwrap().is_empty());
}

#[tokio::test]
async fn resume_refuses_a_file_that_is_not_results_and_the_input_itself() {
    let server = MockServer::start().await;
    serve(
        &server,
        Api::OpenAi,
        &[answer("task", 0, Reply::Text("ok"))],
    )
    .await;
    let (dir, path) = input("task one\n");
    let package = dir.path().join("package.json");
    let text = "{\n  \"name\": \"app\",\n  \"version\": \"1.0.0\"\n}";
    std::fs::write(&package, text).unwrap();
    for (out, why) in [
        (package.as_path(), "is not a result line"),
        (path.as_path(), "it is the batch's input"),
    ] {
        let before = std::fs::read(out).unwrap();
        let args = ["--resume", out.to_str().unwrap()];
        let outcome = batch(&server, Api::OpenAi, &path, &args)
            .output_async()
            .await;
        assert_eq!(outcome.code(), Some(2), "{}", outcome.stderr());
        assert!(outcome.last_line().contains(why), "{}", outcome.stderr());
        assert_eq!(std::fs::read(out).unwrap(), before);
    }
    assert!(server.received_requests().await.unwrap().is_empty());
}

#[test]
fn sigterm_or_sigint_while_the_mcp_servers_start_ends_the_batch_with_its_code() {
    use std::process::Stdio;
    for (signal, code) in [
        (nix::sys::signal::Signal::SIGTERM, 143),
        (nix::sys::signal::Signal::SIGINT, 130),
    ] {
        let (dir, path) = input("one\ntwo\n");
        let pid_file = dir.path().join("server.pid");
        // A server that never answers the handshake.
        let mcp = format!(
            "slow=sh -c 'echo $$ > {}; exec sleep 30'",
            pid_file.display()
        );
        let script = serde_json::json!({"responses": [{"text": "done"}]});
        let mut run = Run::faux(script).command_word("batch").arg(&path).args([
            "--tools",
            "none",
            "--mcp",
            &mcp,
            "--mcp-timeout",
            "20s",
        ]);
        let mut command = run.command();
        // Its own process group, so a SIGINT reaches leash and the server
        // as a terminal's Ctrl-C would.
        std::os::unix::process::CommandExt::process_group(&mut command, 0);
        let child = command
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let deadline = Instant::now() + Duration::from_secs(10);
        while std::fs::read_to_string(&pid_file).map_or(true, |pid| pid.trim().is_empty()) {
            assert!(Instant::now() < deadline, "the server never started");
            std::thread::sleep(Duration::from_millis(20));
        }
        let leash = nix::unistd::Pid::from_raw(i32::try_from(child.id()).unwrap());
        let started = Instant::now();
        let target = match signal {
            // Ctrl-C goes to the whole group.
            nix::sys::signal::Signal::SIGINT => nix::unistd::Pid::from_raw(-leash.as_raw()),
            _ => leash,
        };
        nix::sys::signal::kill(target, signal).unwrap();
        let output = child.wait_with_output().unwrap();
        let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
        assert_eq!(output.status.code(), Some(code), "{signal}: {stderr}");
        assert!(started.elapsed() < Duration::from_secs(5), "{signal}");
        let summary: Value = serde_json::from_str(stderr.lines().last().unwrap()).unwrap();
        assert_eq!(summary["type"], "batch_end", "{stderr}");
        assert_eq!(summary["notStarted"].as_u64(), Some(2), "{stderr}");
        let server: i32 = std::fs::read_to_string(&pid_file)
            .unwrap()
            .trim()
            .parse()
            .unwrap();
        let alive = nix::sys::signal::kill(nix::unistd::Pid::from_raw(server), None).is_ok();
        assert!(
            !alive,
            "{signal}: the MCP server {server} outlived the batch"
        );
        drop(run);
    }
}

#[tokio::test]
async fn parallel_past_the_open_file_limit_runs_fewer_at_a_time_not_failing_items() {
    let server = MockServer::start().await;
    serve(
        &server,
        Api::OpenAi,
        &[answer("task", 200, Reply::Text("ok"))],
    )
    .await;
    let text: String = (0..48).map(|n| format!("task {n}\n")).collect();
    let (dir, path) = input(&text);
    let events = dir.path().join("events");
    let args = ["--parallel", "48", "--events-dir", events.to_str().unwrap()];
    let mut run = batch(&server, Api::OpenAi, &path, &args);
    let leash = run.command();
    // The same command under `ulimit -n 96` (soft and hard).
    let mut limited = std::process::Command::new("sh");
    limited
        .arg("-c")
        .arg("ulimit -n 96 && exec \"$0\" \"$@\"")
        .arg(leash.get_program())
        .args(leash.get_args())
        .env_clear()
        .envs(
            leash
                .get_envs()
                .filter_map(|(name, value)| Some((name, value?))),
        );
    if let Some(cwd) = leash.get_current_dir() {
        limited.current_dir(cwd);
    }
    let output = tokio::task::spawn_blocking(move || limited.output().unwrap())
        .await
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    assert!(
        stderr.contains("--parallel 48 needs more open files than the limit (96) allows"),
        "{stderr}"
    );
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    let statuses: Vec<Value> = stdout
        .lines()
        .map(|line| serde_json::from_str::<Value>(line).unwrap()["status"].clone())
        .collect();
    assert_eq!(statuses.len(), 48);
    assert!(statuses.iter().all(|status| status == "ok"), "{stdout}");
    drop(run);
}

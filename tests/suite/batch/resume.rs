//! `--resume` after a SIGTERM mid-batch: the stopped batch exits 143
//! with whole lines only, and the resumed one runs exactly the ids that
//! are missing — none lost, none twice.

use std::collections::HashSet;
use std::process::Stdio;
use std::time::{Duration, Instant};

use serde_json::Value;
use wiremock::MockServer;

use super::*;

fn out_lines(path: &std::path::Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .map(|line| serde_json::from_str(line).unwrap_or_else(|e| panic!("{e}: {line}")))
        .collect()
}

#[tokio::test]
async fn resume_after_sigterm_loses_and_repeats_no_id() {
    for api in [Api::OpenAi, Api::Anthropic] {
        let server = MockServer::start().await;
        serve(&server, api, &[answer("task", 600, Reply::Text("ok"))]).await;
        let text: String = (0..8).map(|n| format!("task {n}\n")).collect();
        let (dir, path) = input(&text);
        let out = dir.path().join("out.jsonl");
        let args = ["--parallel", "2", "--resume", out.to_str().unwrap()];

        let mut run = batch(&server, api, &path, &args);
        let child = run
            .command()
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let deadline = Instant::now() + Duration::from_secs(20);
        while out_lines(&out).len() < 2 {
            assert!(Instant::now() < deadline, "no line in {}", out.display());
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        let pid = nix::unistd::Pid::from_raw(i32::try_from(child.id()).unwrap());
        nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM).unwrap();
        let output = tokio::task::spawn_blocking(move || child.wait_with_output().unwrap())
            .await
            .unwrap();
        let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
        assert_eq!(output.status.code(), Some(143), "{stderr}");
        let summary: Value = serde_json::from_str(stderr.lines().last().unwrap()).unwrap();
        assert_eq!(summary["type"], "batch_end", "{stderr}");
        let first = out_lines(&out);
        assert!(first.len() < 8, "the signal came too late: {stderr}");
        assert!(first.iter().all(|line| line["status"] == "ok"), "{first:?}");
        drop(run);

        // A write cut short by a crash leaves a partial last line.
        let mut text = std::fs::read_to_string(&out).unwrap();
        text.push_str("{\"id\":\"7\",\"index\":7,\"sta");
        std::fs::write(&out, text).unwrap();

        let outcome = batch(&server, api, &path, &args).output_async().await;
        assert_eq!(outcome.code(), Some(0), "{}", outcome.stderr());
        assert_eq!(outcome.stdout(), "");
        assert_eq!(
            super::summary(&outcome)["total"].as_u64(),
            Some(8 - first.len() as u64)
        );
        let all = out_lines(&out);
        let ids: Vec<String> = ids(&all);
        let unique: HashSet<&String> = ids.iter().collect();
        assert_eq!((ids.len(), unique.len()), (8, 8), "{ids:?}");
        assert!(all.iter().all(|line| line["status"] == "ok"), "{all:?}");
    }
}

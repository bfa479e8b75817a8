//! An MCP server's life within a run (docs/src/mcp.md "MCP servers"; ARCHITECTURE.md
//! `src/child/`): one that dies mid-run gives an error result, and the
//! timer, a normal end and every signal stop the server's whole process
//! tree.

use super::*;
use pretty_assertions::assert_eq;

#[test]
fn a_server_that_dies_mid_run_gives_an_error_result_and_the_run_goes_on() {
    let ws = Workspace::new();
    let output = ws
        .faux(json!({"responses": [
            {"toolCalls": [tool_call("mcp__t__die", json!({}))]},
            {"toolCalls": [tool_call("mcp__t__env", json!({}))]},
            {"text": "carried on"}
        ]}))
        .args([
            "--no-stdin",
            "--events",
            "jsonl",
            "--mcp",
            &test_server_flag("t"),
        ])
        .arg("hi")
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert_eq!(stdout(&output), "carried on\n");
    let notices: Vec<Value> = json_events(&output)
        .into_iter()
        .filter(|event| event["type"] == "notice")
        .collect();
    assert_eq!(notices[0]["message"], "MCP servers started: t (7 tools)");
    let ends: Vec<Value> = json_events(&output)
        .into_iter()
        .filter(|event| event["type"] == "tool_execution_end")
        .collect();
    assert_eq!(ends.len(), 2);
    // The call it died in, and the next call, both say how it went.
    for end in &ends {
        assert_eq!(end["isError"], true, "{end}");
        assert_eq!(
            end["result"]["content"][0]["text"],
            "MCP server 't' exited (exit status: 9) during the call; \
             its last stderr line: dying on purpose"
        );
    }
}

/// leash with the test server (writing its pids) calling its `slow` tool,
/// as a child with its events read line by line.
fn slow_call(ws: &Workspace, extra: &[&str]) -> (Child, Vec<u32>) {
    let pid_file = ws.path("server.pid");
    let script = ws.script(json!({"responses": [
        {"toolCalls": [tool_call("mcp__t__slow", json!({}))]},
        {"text": "never"}
    ]}));
    let mut child = ws
        .child()
        .env("MCP_PID_FILE", &pid_file)
        .args(["--provider", "faux", "--faux-script"])
        .arg(script)
        .args([
            "--no-stdin",
            "--events",
            "jsonl",
            "--mcp",
            &test_server_flag("t"),
        ])
        .args(extra)
        .arg("hi")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let pids = server_pids(&pid_file);
    assert_eq!(pids.len(), 2);
    assert!(pids.iter().all(|pid| alive(*pid)));
    // Wait until the slow call runs.
    let stderr = child.stderr.take().unwrap();
    for line in BufReader::new(stderr).lines() {
        if line.unwrap().contains("\"tool_execution_start\"") {
            break;
        }
    }
    (child, pids)
}

#[test]
fn the_timer_stops_the_servers_process_tree() {
    let ws = Workspace::new();
    let (mut child, pids) = slow_call(&ws, &["--timeout", "2s"]);
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(124));
    assert_gone(&pids);
}

#[test]
fn sigterm_stops_the_servers_process_tree() {
    let ws = Workspace::new();
    let (mut child, pids) = slow_call(&ws, &["--timeout", "20s"]);
    let started = Instant::now();
    send(&child, "-TERM");
    assert_eq!(child.wait().unwrap().code(), Some(143));
    assert!(started.elapsed() < Duration::from_secs(5));
    assert_gone(&pids);
}

#[test]
fn a_normal_end_and_sigint_stop_the_servers_process_tree() {
    let ws = Workspace::new();
    let pid_file = ws.path("server.pid");
    let output = answer_at_once(&ws)
        .env("MCP_PID_FILE", &pid_file)
        .args(["--mcp", &test_server_flag("t")])
        .arg("hi")
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert_gone(&server_pids(&pid_file));

    let ws = Workspace::new();
    let (mut child, pids) = slow_call(&ws, &["--timeout", "20s"]);
    send(&child, "-INT");
    assert_eq!(child.wait().unwrap().code(), Some(130));
    assert_gone(&pids);
}

#[test]
fn a_second_signal_while_the_servers_stop_still_kills_them() {
    let ws = Workspace::new();
    let leader_file = ws.path("leader.pid");
    let pid_file = ws.path("server.pid");
    // The group's leader ignores SIGTERM (and so does the sleep it runs
    // once the server is gone): only SIGKILL ends it.
    let flag = format!(
        "t=sh -c \"trap '' TERM; echo $$ > {}; node {}; sleep 300\"",
        leader_file.display(),
        mcp_dir().join("test-server.mjs").display()
    );
    everything();
    let script = ws.script(json!({"responses": [
        {"toolCalls": [tool_call("mcp__t__slow", json!({}))]},
        {"text": "never"}
    ]}));
    let mut child = ws
        .child()
        .env("MCP_PID_FILE", &pid_file)
        .args(["--provider", "faux", "--faux-script"])
        .arg(script)
        .args(["--no-stdin", "--events", "jsonl", "--mcp", &flag, "hi"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut pids = server_pids(&pid_file);
    let stderr = child.stderr.take().unwrap();
    for line in BufReader::new(stderr).lines() {
        if line.unwrap().contains("\"tool_execution_start\"") {
            break;
        }
    }
    let leader: u32 = std::fs::read_to_string(&leader_file)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    pids.push(leader);
    for _ in 0..2 {
        send(&child, "-TERM");
        std::thread::sleep(Duration::from_millis(300));
    }
    assert_eq!(child.wait().unwrap().code(), Some(143));
    assert_gone(&pids);
}

//! MCP servers (docs/src/mcp.md "MCP servers"): the real binary with real servers
//! installed from npm by `make mcp-servers` (tests/mcp: the reference
//! `server-everything` over stdio and streamable HTTP, and a small server
//! of our own on the official SDK, `test-server.mjs`). No server is mocked.
//!
//! Strict startup (exit 8 naming the server and why), tools offered as
//! `mcp__NAME__TOOL` whose results reach the next request, a server dying
//! mid-run, a message past the 16 MiB cap, no server process left after
//! any exit (0, 124, 130, 143, 8, a second signal), and the run's key
//! never in a server's environment.

mod caps;
mod killed;
mod lifecycle;
mod startup;
mod tools;

use crate::support::run::{last_line, stderr, stdout};
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use wiremock::MockServer;

use crate::support::shell::{Workspace, tool_call};
use crate::support::sse::openai::*;
use crate::support::sse::{request_bodies, serve_in_order};

fn mcp_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/mcp")
}

/// The reference server's entry point, installed by `make mcp-servers`.
fn everything() -> PathBuf {
    let path = mcp_dir().join("node_modules/@modelcontextprotocol/server-everything/dist/index.js");
    assert!(
        path.exists(),
        "{} is missing: run `make mcp-servers` (npm ci in tests/mcp)",
        path.display()
    );
    path
}

/// `--mcp` for the reference server over stdio.
fn everything_flag(name: &str) -> String {
    format!("{name}=node {} stdio", everything().display())
}

/// `--mcp` for our own test server.
fn test_server_flag(name: &str) -> String {
    everything();
    format!(
        "{name}=node {}",
        mcp_dir().join("test-server.mjs").display()
    )
}

/// Running: a zombie waiting for its reaper counts as gone.
pub(super) fn alive(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
        stat.rsplit_once(") ")
            .is_some_and(|(_, rest)| !rest.starts_with('Z'))
    })
}

/// Waits (at most 3 s) until none of `pids` runs.
pub(super) fn assert_gone(pids: &[u32]) {
    let deadline = Instant::now() + Duration::from_secs(3);
    while pids.iter().any(|pid| alive(*pid)) {
        assert!(Instant::now() < deadline, "still running: {pids:?}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Sends `signal` (`-TERM`, `-INT`) to `child` with `kill`.
fn send(child: &Child, signal: &str) {
    let killed = Command::new("kill")
        .args([signal, &child.id().to_string()])
        .status()
        .unwrap();
    assert!(killed.success(), "kill {signal} failed");
}

/// The pids the test server wrote to `file` (itself and its helper),
/// waiting for it to appear.
fn server_pids(file: &Path) -> Vec<u32> {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        if let Ok(text) = std::fs::read_to_string(file)
            && text.ends_with('\n')
        {
            return text
                .split_whitespace()
                .map(|pid| pid.parse().unwrap())
                .collect();
        }
        assert!(Instant::now() < deadline, "the server wrote no pid file");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The JSON lines among stderr's of a `--events jsonl` run: unlike
/// [`crate::support::run::events`], a line that is not JSON is skipped.
fn json_events(output: &Output) -> Vec<Value> {
    stderr(output)
        .lines()
        .filter_map(|line| serde_json::from_str(line).ok())
        .collect()
}

/// An MCP server in streamable-HTTP mode, until stopped.
struct HttpServer(Child);

impl HttpServer {
    /// server-everything on `port`.
    fn start(port: u16) -> Self {
        let mut command = Command::new("node");
        command
            .arg(everything())
            .arg("streamableHttp")
            .env("PORT", port.to_string());
        Self::spawn(command).0
    }

    /// Our own test server answering POSTs as `mode` ("sse" or "json"),
    /// with the port it chose.
    fn test_server(mode: &str) -> (Self, u16) {
        everything();
        let mut command = Command::new("node");
        command
            .arg(mcp_dir().join("test-server.mjs"))
            .env("MCP_HTTP", mode);
        let (server, port) = Self::spawn(command);
        (server, port.expect("the test server names its port"))
    }

    /// Starts `command` and waits for its "listening on port N" line.
    fn spawn(mut command: Command) -> (Self, Option<u16>) {
        let mut child = command
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
        let mut port = None;
        for line in lines.by_ref() {
            let line = line.unwrap();
            if let Some((_, after)) = line.split_once("listening on port") {
                port = after.trim().parse().ok();
                break;
            }
        }
        // Keep draining its stderr so it never blocks.
        std::thread::spawn(move || lines.for_each(drop));
        (HttpServer(child), port)
    }

    fn stop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

impl Drop for HttpServer {
    fn drop(&mut self) {
        self.stop();
    }
}

/// A run that needs no tool call: the faux model answers at once.
fn answer_at_once(ws: &Workspace) -> assert_cmd::Command {
    let mut cmd = ws.faux(json!({"responses": [{"text": "never"}]}));
    cmd.args(["--no-stdin", "-q"]);
    cmd
}

//! leash killed with SIGKILL while its MCP servers start, and during a
//! call (docs/src/resume.md "After a kill"): a SIGKILLed leash cannot stop
//! its servers' process groups itself; its watchdog does. Checked after
//! each kill, at points stepped through the start, once the server wrote
//! its pids, and during its slow call: the server and the helper it
//! started (`sleep 300`, in its group) are gone within 3 s. Before the
//! watchdog, a server in a call and every helper outlived leash.

use super::*;

fn start(ws: &Workspace, pid_file: &Path) -> Child {
    let script = ws.script(json!({"responses": [
        {"toolCalls": [tool_call("mcp__t__slow", json!({}))]},
        {"text": "never"}
    ]}));
    ws.child()
        .env("MCP_PID_FILE", pid_file)
        .args(["--provider", "faux", "--faux-script"])
        .arg(script)
        .args([
            "--no-stdin",
            "-q",
            "--timeout",
            "20s",
            "--mcp",
            &test_server_flag("t"),
        ])
        .arg("hi")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap()
}

fn sigkill(child: &mut Child) {
    let pid = nix::unistd::Pid::from_raw(i32::try_from(child.id()).unwrap());
    let _ = nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGKILL);
    child.wait().unwrap();
}

#[test]
fn a_sigkill_while_servers_start_or_run_leaves_no_server() {
    // Stepped through the start (node takes a few hundred ms), then once
    // the server runs (its pids written) and once during its slow call.
    let mut points: Vec<Option<Duration>> = (0..8)
        .map(|n| Some(Duration::from_millis(60 * n)))
        .collect();
    points.extend([None, None]);
    for (n, point) in points.iter().enumerate() {
        let ws = Workspace::new();
        let pid_file = ws.path("pids");
        let mut child = start(&ws, &pid_file);
        match point {
            Some(delay) => std::thread::sleep(*delay),
            None => {
                server_pids(&pid_file);
                std::thread::sleep(Duration::from_millis(200 * (n as u64 % 2)));
            }
        }
        sigkill(&mut child);
        // A server that had not started yet may still write its pids.
        std::thread::sleep(Duration::from_millis(300));
        let Ok(text) = std::fs::read_to_string(&pid_file) else {
            continue;
        };
        let pids: Vec<u32> = text
            .split_whitespace()
            .filter_map(|p| p.parse().ok())
            .collect();
        let [server, helper] = pids[..] else {
            continue;
        };
        let deadline = Instant::now() + Duration::from_secs(3);
        while [server, helper].iter().any(|pid| alive(*pid)) && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(20));
        }
        let left: Vec<u32> = [server, helper]
            .into_iter()
            .filter(|pid| alive(*pid))
            .collect();
        for pid in &left {
            // Killed here, so a failure leaves nothing running.
            let _ = Command::new("kill")
                .args(["-KILL", &pid.to_string()])
                .status();
        }
        assert!(
            left.is_empty(),
            "killed at {point:?}: {left:?} outlived leash"
        );
    }
}

//! Strict startup of MCP servers (docs/src/mcp.md "MCP servers"): a server that
//! fails to start or never answers ends the run with exit 8 naming it, and a
//! signal during startup stops it.

use super::*;
use pretty_assertions::assert_eq;

#[test]
fn a_server_that_fails_to_start_ends_the_run_with_exit_8_naming_it() {
    let ws = Workspace::new();
    let cases = [
        (
            "gone=leash-no-such-mcp-server --flag",
            "leash: MCP server 'gone' cannot start 'leash-no-such-mcp-server': No such file",
        ),
        (
            "crash=sh -c 'echo listening >&2; echo config missing >&2; exit 3'",
            "leash: MCP server 'crash' exited (exit status: 3) before listing its tools; \
             its last stderr line: config missing",
        ),
        (
            // It starts, but the name of one of its tools cannot be offered.
            "a-server-name-of-thirty-two-char=node SERVER stdio",
            "longer than the providers' 64 characters",
        ),
    ];
    for (flag, expected) in cases {
        let flag = flag.replace("SERVER", &everything().display().to_string());
        let started = Instant::now();
        let output = answer_at_once(&ws)
            .args(["--mcp", &flag, "--mcp", &everything_flag("fine")])
            .arg("hi")
            .output()
            .unwrap();
        assert_eq!(output.status.code(), Some(8), "{flag}: {}", stderr(&output));
        assert!(
            last_line(&output).contains(expected),
            "{flag}: {}",
            last_line(&output)
        );
        assert!(stdout(&output).is_empty());
        assert!(started.elapsed() < Duration::from_secs(8), "{flag}");
    }
}

#[test]
fn a_server_that_never_answers_ends_the_run_with_exit_8_after_the_mcp_timeout() {
    let ws = Workspace::new();
    let pid_file = ws.path("mute.pid");
    let flag = format!(
        "mute=sh -c 'echo $$ > {}; exec sleep 30'",
        pid_file.display()
    );
    let started = Instant::now();
    let output = answer_at_once(&ws)
        .args(["--mcp-timeout", "1s", "--mcp", &flag])
        .arg("hi")
        .output()
        .unwrap();
    let took = started.elapsed();
    assert_eq!(output.status.code(), Some(8), "{}", stderr(&output));
    assert_eq!(
        last_line(&output),
        "leash: MCP server 'mute' did not start and list its tools within --mcp-timeout 1s"
    );
    assert!(
        took >= Duration::from_secs(1) && took < Duration::from_secs(5),
        "{took:?}"
    );
    let pid: u32 = std::fs::read_to_string(&pid_file)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    assert_gone(&[pid]);
}

#[test]
fn sigterm_while_a_server_starts_stops_it() {
    let ws = Workspace::new();
    let pid_file = ws.path("mute.pid");
    let flag = format!(
        "mute=sh -c 'echo $$ > {}; exec sleep 30'",
        pid_file.display()
    );
    let script = ws.script(json!({"responses": [{"text": "never"}]}));
    let mut child = ws
        .child()
        .args(["--provider", "faux", "--faux-script"])
        .arg(script)
        .args(["--no-stdin", "-q", "--mcp-timeout", "20s", "--mcp", &flag])
        .arg("hi")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let pids = server_pids(&pid_file);
    send(&child, "-TERM");
    assert_eq!(child.wait().unwrap().code(), Some(143));
    assert_gone(&pids);
}

#[test]
fn a_server_that_exits_on_end_of_input_after_its_start_timed_out_is_said_to_have_timed_out() {
    let ws = Workspace::new();
    // Never answers, and exits (0) when leash gives up and closes its stdin.
    let output = answer_at_once(&ws)
        .args([
            "--mcp-timeout",
            "1s",
            "--mcp",
            "eof=sh -c 'cat > /dev/null'",
        ])
        .arg("hi")
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(8), "{}", stderr(&output));
    assert_eq!(
        last_line(&output),
        "leash: MCP server 'eof' did not start and list its tools within --mcp-timeout 1s"
    );
}

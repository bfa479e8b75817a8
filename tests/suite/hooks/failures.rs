//! A hook that fails (docs/src/hooks.md "Hooks"; ARCHITECTURE.md `crates/child/`):
//! a crash, babble, a hang past `--hook-timeout`, the run's timer or a
//! signal — each fails closed, shows on the event stream, and leaves no
//! process of the hook's behind.

use super::*;

#[test]
fn a_crashing_or_babbling_hook_fails_closed_naming_the_hook() {
    let ws = Workspace::new();
    for (body, problem) in [
        (
            "echo boom >&2\nexit 1",
            "failed: exited with status 1: boom",
        ),
        ("kill -KILL $$", "failed: was killed by a signal"),
        ("echo sure", "failed: its output is not a JSON object"),
        (
            r#"echo '{"blocked": true}'"#,
            "failed: its output is not the JSON",
        ),
    ] {
        let hook = sh_hook(&ws, "crash.sh", "before-tool-call", body);
        let (output, _) = faux_run(
            &ws,
            calls_then_done(vec![call("read_file", json!({"path": "sample.ts"}))]),
            &["--hook", &hook],
        );
        assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
        let ends = tool_ends(&output);
        let (text, is_error) = &ends[0];
        assert!(*is_error, "{body}: {text}");
        assert!(text.starts_with("hook #1 (before-tool-call="), "{text}");
        assert!(text.contains("crash.sh) "), "{text}");
        assert!(text.contains(problem), "{body}: {text}");
        assert!(text.ends_with("; the call was blocked"), "{text}");
        let failures = hook_failures(&output);
        assert_eq!(failures.len(), 1, "{body}");
        assert_eq!(failures[0]["event"], "before-tool-call");
        assert_eq!(failures[0]["reason"], text.as_str());
        assert!(failures[0]["toolCallId"].is_string());
    }
    // A program that is gone by the time it runs (hook #1 removes #2)
    // fails closed too.
    let second = sh_hook(&ws, "second.sh", "before-tool-call", "echo '{}'");
    let first = sh_hook(
        &ws,
        "first.sh",
        "before-tool-call",
        &format!("rm '{}'", ws.path("second.sh").display()),
    );
    let (output, _) = faux_run(
        &ws,
        calls_then_done(vec![call("list_dir", json!({}))]),
        &["--hook", &first, "--hook", &second],
    );
    let ends = tool_ends(&output);
    assert!(
        ends[0].0.starts_with("hook #2 (before-tool-call="),
        "{ends:?}"
    );
    assert!(
        ends[0].1 && ends[0].0.contains("failed: could not start: "),
        "{ends:?}"
    );
}

#[test]
fn the_text_event_stream_shows_a_failed_hook() {
    let ws = Workspace::new();
    let hook = sh_hook(&ws, "crash.sh", "before-tool-call", "exit 7");
    let mut cmd = ws.faux(calls_then_done(vec![call("list_dir", json!({}))]));
    cmd.args(["--hook", &hook, "go"]);
    let (output, _) = run(&mut cmd);
    assert_eq!(output.status.code(), Some(0));
    let err = stderr(&output);
    assert!(
        err.lines()
            .any(|line| line.starts_with("leash: hook #1 (before-tool-call=")
                && line.ends_with("failed: exited with status 7; the call was blocked")),
        "{err}"
    );
}

#[test]
fn a_hanging_hook_is_ended_by_its_timeout_and_the_run_goes_on() {
    let ws = Workspace::new();
    let hook = sh_hook(&ws, "hang.sh", "before-tool-call", "sleep 30");
    let (output, elapsed) = faux_run(
        &ws,
        calls_then_done(vec![call("list_dir", json!({}))]),
        &["--hook", &hook, "--hook-timeout", "500ms"],
    );
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert!(elapsed < Duration::from_secs(5), "{elapsed:?}");
    let ends = tool_ends(&output);
    assert!(
        ends[0].1 && ends[0].0.contains("failed: timed out after 500ms"),
        "{ends:?}"
    );
    assert_eq!(hook_failures(&output).len(), 1);
}

#[test]
fn the_run_timeout_ends_a_run_whose_hook_hangs_and_kills_the_hook() {
    let ws = Workspace::new();
    let pid_file = ws.path("pid");
    let hook = sh_hook(
        &ws,
        "hang.sh",
        "before-tool-call",
        &format!("sleep 60 &\necho $! > '{}'\nwait", pid_file.display()),
    );
    let mut cmd = ws.faux(calls_then_done(vec![call("list_dir", json!({}))]));
    cmd.args([
        "--hook",
        &hook,
        "--hook-timeout",
        "60s",
        "--timeout",
        "1s",
        "go",
    ]);
    let (output, elapsed) = run(&mut cmd);
    assert_calm(&output);
    assert_eq!(output.status.code(), Some(124), "{}", stderr(&output));
    assert!(elapsed < Duration::from_secs(4), "{elapsed:?}");
    assert!(last_line(&output).contains("timed out after 1s"));
    let pid = std::fs::read_to_string(&pid_file).unwrap();
    assert!(
        gone(&pid),
        "the hook's sleep {} outlived the run",
        pid.trim()
    );
}

/// Whether the process `pid` is gone (or a zombie about to be reaped by
/// init), waiting up to a second.
fn gone(pid: &str) -> bool {
    let stat = PathBuf::from(format!("/proc/{}/stat", pid.trim()));
    (0..50).any(|_| {
        std::thread::sleep(Duration::from_millis(20));
        std::fs::read_to_string(&stat).map_or(true, |text| text.contains(") Z"))
    })
}

#[test]
fn sigterm_ends_a_run_whose_hook_hangs_at_once_and_kills_the_hook() {
    let ws = Workspace::new();
    let pid_file = ws.path("pid");
    let hook = sh_hook(
        &ws,
        "hang.sh",
        "after-tool-call",
        &format!("sleep 60 &\necho $! > '{}'\nwait", pid_file.display()),
    );
    let mut cmd = ws.faux(calls_then_done(vec![call("list_dir", json!({}))]));
    cmd.args([
        "--hook",
        &hook,
        "--hook-timeout",
        "60s",
        "--timeout",
        "60s",
        "go",
    ]);
    let child = cmd.spawn().unwrap();
    let deadline = std::time::Instant::now() + Duration::from_secs(15);
    while std::fs::read_to_string(&pid_file).map_or(true, |pid| !pid.ends_with('\n')) {
        assert!(
            std::time::Instant::now() < deadline,
            "the hook never started"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    let signalled = std::time::Instant::now();
    let status = std::process::Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    let output = child.wait_with_output().unwrap();
    assert_calm(&output);
    assert_eq!(output.status.code(), Some(143), "{}", stderr(&output));
    assert!(
        signalled.elapsed() < Duration::from_secs(2),
        "{:?}",
        signalled.elapsed()
    );
    let pid = std::fs::read_to_string(&pid_file).unwrap();
    assert!(
        gone(&pid),
        "the hook's sleep {} outlived the run",
        pid.trim()
    );
}

#[test]
fn a_hook_s_grandchild_is_gone_after_exits_0_124_130_and_143() {
    for exit in [0, 124, 130, 143] {
        let ws = Workspace::new();
        let pid_file = ws.path("pid");
        let body = if exit == 0 {
            // Answers at once, leaving a helper behind.
            format!(
                "sleep 300 >/dev/null 2>&1 &\necho $! > '{}'\necho '{{}}'",
                pid_file.display()
            )
        } else {
            format!("sleep 300 &\necho $! > '{}'\nwait", pid_file.display())
        };
        let hook = sh_hook(&ws, "hook.sh", "before-tool-call", &body);
        let mut cmd = ws.faux(calls_then_done(vec![call("list_dir", json!({}))]));
        let timeout = if exit == 124 { "1s" } else { "60s" };
        cmd.args(["--hook", &hook, "--hook-timeout", "60s"])
            .args(["--timeout", timeout, "go"])
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped());
        let child = cmd.spawn().unwrap();
        let deadline = std::time::Instant::now() + Duration::from_secs(15);
        while std::fs::read_to_string(&pid_file).map_or(true, |pid| !pid.ends_with('\n')) {
            assert!(std::time::Instant::now() < deadline, "{exit}: no hook ran");
            std::thread::sleep(Duration::from_millis(20));
        }
        let signal = match exit {
            130 => Some("-INT"),
            143 => Some("-TERM"),
            _ => None,
        };
        if let Some(signal) = signal {
            let sent = std::process::Command::new("kill")
                .args([signal, &child.id().to_string()])
                .status()
                .unwrap();
            assert!(sent.success());
        }
        let output = child.wait_with_output().unwrap();
        assert_eq!(output.status.code(), Some(exit), "{}", stderr(&output));
        let pid = std::fs::read_to_string(&pid_file).unwrap();
        assert!(
            gone(&pid),
            "{exit}: the hook's sleep {} outlived leash",
            pid.trim()
        );
    }
}

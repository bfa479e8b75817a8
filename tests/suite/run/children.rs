//! No child outlives leash (ARCHITECTURE.md "No child outlives leash"): `git`,
//! started by the git tool, and whatever it started, are gone when leash
//! exits on its timer (124) or on SIGTERM (143), even while git hangs.
//! The hooks' and the MCP servers' process trees are covered next to
//! their features (`hooks/`, `mcp/`).

use std::ffi::OsString;
use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::json;

use crate::suite::mcp::{alive, assert_gone};
use crate::support::shell::{Workspace, tool_call};

/// A workspace that is a git work tree, with a `git` first on `PATH` that
/// reads the config through the real git but hangs in every view, with a
/// helper of its own; `pids` gets "WRAPPER HELPER".
struct HangingGit {
    ws: Workspace,
    path: OsString,
    pids: PathBuf,
}

fn hanging_git() -> HangingGit {
    let ws = Workspace::new();
    let real = Command::new("sh")
        .args(["-c", "command -v git"])
        .output()
        .unwrap();
    let real = String::from_utf8(real.stdout).unwrap().trim().to_owned();
    assert!(real.starts_with('/'), "no git on PATH: {real:?}");
    let init = Command::new(&real)
        .args(["init", "-q"])
        .current_dir(ws.dir.path())
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .status()
        .unwrap();
    assert!(init.success());
    let pids = ws.path("git.pids");
    let wrapper = ws.write(
        "bin/git",
        &format!(
            "#!/bin/sh\ncase \"$*\" in *' config --file '*) exec '{real}' \"$@\";; esac\n\
             sleep 300 &\necho \"$$ $!\" > '{}'\nwait\n",
            pids.display()
        ),
    );
    std::fs::set_permissions(&wrapper, std::fs::Permissions::from_mode(0o755)).unwrap();
    let mut path = vec![ws.path("bin")];
    path.extend(std::env::split_paths(&std::env::var_os("PATH").unwrap()));
    let path = std::env::join_paths(path).unwrap();
    HangingGit { ws, path, pids }
}

/// leash calling `git status` with `extra` flags, and the pids of the
/// hanging git and its helper once it runs.
fn git_call(git: &HangingGit, extra: &[&str]) -> (Child, Vec<u32>) {
    let script = git.ws.script(json!({"responses": [
        {"toolCalls": [tool_call("git", json!({"command": "status"}))]},
        {"text": "never"}
    ]}));
    let child = git
        .ws
        .child()
        .env("PATH", &git.path)
        .args(["--provider", "faux", "--faux-script"])
        .arg(script)
        .args(["--no-stdin", "-q"])
        .args(extra)
        .arg("hi")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(15);
    let pids = loop {
        if let Ok(text) = std::fs::read_to_string(&git.pids)
            && text.ends_with('\n')
        {
            break text
                .split_whitespace()
                .map(|pid| pid.parse().unwrap())
                .collect::<Vec<u32>>();
        }
        assert!(Instant::now() < deadline, "git never ran");
        std::thread::sleep(Duration::from_millis(20));
    };
    assert!(pids.iter().all(|pid| alive(*pid)));
    (child, pids)
}

#[test]
fn git_and_its_helper_are_gone_after_the_timer_ends_the_run() {
    let git = hanging_git();
    let (mut child, pids) = git_call(&git, &["--timeout", "2s"]);
    assert_eq!(child.wait().unwrap().code(), Some(124));
    assert_gone(&pids);
}

#[test]
fn git_and_its_helper_are_gone_after_sigterm() {
    let git = hanging_git();
    let (mut child, pids) = git_call(&git, &["--timeout", "30s"]);
    let sent = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(sent.success());
    assert_eq!(child.wait().unwrap().code(), Some(143));
    assert_gone(&pids);
}

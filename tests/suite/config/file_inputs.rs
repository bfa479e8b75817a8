//! File inputs (docs/src/configuration.md "Configuration"): every one is bounded, an endless
//! one is refused naming the file, and bad paths are reported before stdin
//! is read.

use super::*;
use crate::support::run::Run;

#[test]
fn large_or_endless_file_inputs_are_refused_naming_the_file() {
    let ws = Workspace::new();
    let started = Instant::now();
    // Sparse: 16 MiB and one byte, none of it written.
    std::fs::File::create(ws.path("large"))
        .unwrap()
        .set_len(16 * 1024 * 1024 + 1)
        .unwrap();
    for flag in ["--system-file", "--output-schema"] {
        let output = ws
            .faux(json!([{"text": "x"}]))
            .args([flag, "large", "--no-stdin", "hi"])
            .output()
            .unwrap();
        assert_eq!(code(&output), 2, "{flag}");
        assert_eq!(
            last_line(&output),
            format!("leash: cannot read {flag} large: it is larger than 16777216 bytes")
        );
    }
    let output = ws
        .leash()
        .args(["--faux-script", "large", "--no-stdin", "hi"])
        .output()
        .unwrap();
    assert_eq!(code(&output), 2);
    assert!(last_line(&output).contains("--faux-script large: it is larger than"));
    std::os::unix::fs::symlink("/dev/zero", ws.path("home/.config/leash/config.toml"))
        .or_else(|_| {
            std::fs::create_dir_all(ws.path("home/.config/leash"))?;
            std::os::unix::fs::symlink("/dev/zero", ws.path("home/.config/leash/config.toml"))
        })
        .unwrap();
    let output = ws
        .faux(json!([{"text": "x"}]))
        .args(["--no-stdin", "hi"])
        .output()
        .unwrap();
    assert_eq!(code(&output), 2);
    assert!(
        last_line(&output).starts_with("leash: cannot read the config file ")
            && last_line(&output).ends_with("config.toml: it is a device, not a regular file (of the devices only /dev/null is read, as empty)"),
        "{}",
        last_line(&output)
    );
    assert!(started.elapsed() < Duration::from_secs(20));
}

#[test]
fn bad_paths_are_reported_before_stdin_is_read() {
    let ws = Workspace::new();
    let script = ws.script(json!([{"text": "x"}]));
    for bad in [
        ["--root", "/nonexistent"],
        ["--transcript", "/nonexistent/t.jsonl"],
        ["--output-last-message", "/nonexistent/last.txt"],
    ] {
        // --stdin waits for a pipe nobody writes to, up to the timeout.
        // Through the one launcher, then a deliberately empty environment.
        let mut cmd = Run::new().home(ws.path("home")).command();
        let mut child = cmd
            .current_dir(ws.dir.path())
            .env_clear()
            .env("HOME", ws.path("home"))
            .env("XDG_CONFIG_HOME", ws.path("home/.config"))
            .args(["--provider", "faux", "--faux-script"])
            .arg(&script)
            .args(["--stdin", "-t", "20s"])
            .args(bad)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let _open = child.stdin.take();
        let started = Instant::now();
        let output = child.wait_with_output().unwrap();
        assert!(started.elapsed() < Duration::from_secs(5), "{bad:?} waited");
        assert_eq!(output.status.code(), Some(2), "{bad:?}");
        let last = last_line(&output);
        assert!(last.contains(bad[1]), "{bad:?}: {last}");
    }
    // `leash config` runs the same checks.
    let output = ws
        .leash()
        .args([
            "config",
            "--base-url",
            "http://localhost:1",
            "--root",
            "/nonexistent",
        ])
        .output()
        .unwrap();
    assert_eq!(code(&output), 2);
    assert!(last_line(&output).starts_with("leash: invalid --root /nonexistent: "));
}

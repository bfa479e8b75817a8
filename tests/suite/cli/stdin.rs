//! Where the prompt comes from, as a new user meets it: an empty pipe is
//! said, not silently "reviewed"; bare `leash` on a terminal shows the
//! usage; an argument error is reported before a missing key.

use std::process::Stdio;

use serde_json::json;

use super::{last_line, workspace};
use crate::support::shell::has;

#[test]
fn an_empty_pipe_after_a_prompt_is_said_on_stderr() {
    let ws = workspace();
    // `git diff | leash -s Review "Any bugs?"` on a clean tree.
    let output = ws
        .faux(json!([{"text": "no bugs"}]))
        .args(["-s", "Review", "Any bugs?"])
        .write_stdin("")
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0), "{output:?}");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("leash: stdin was empty; the prompt goes alone"),
        "{stderr}"
    );
}

#[test]
fn an_empty_pipe_with_stdin_required_is_a_usage_error() {
    let ws = workspace();
    let output = ws
        .faux(json!([{"text": "no bugs"}]))
        .args(["--stdin", "-s", "Review", "Any bugs?"])
        .write_stdin("")
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2), "{output:?}");
    assert!(output.stdout.is_empty());
    assert_eq!(
        last_line(&output),
        "leash: stdin was empty, and --stdin says the run needs it"
    );
}

#[test]
fn a_closed_stdin_is_no_empty_pipe() {
    // CI runs `leash "task"` with stdin at /dev/null: nothing to say.
    let ws = workspace();
    let script = ws.script(json!([{"text": "done"}]));
    let output = ws
        .child()
        .args(["--provider", "faux", "--faux-script"])
        .arg(script)
        .arg("task")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0), "{output:?}");
    assert!(
        !String::from_utf8_lossy(&output.stderr).contains("stdin"),
        "{output:?}"
    );
}

#[test]
fn bare_leash_on_a_terminal_prints_the_usage_not_the_key_error() {
    if !has("script") {
        eprintln!("skipped: no `script` to give leash a terminal");
        return;
    }
    let ws = workspace();
    // `script` runs leash on a pseudo-terminal (stdin, stdout, stderr).
    let bin = crate::support::run::bin();
    let mut cmd = std::process::Command::new("script");
    cmd.args(["-qec", &format!("'{}'", bin.display()), "/dev/null"])
        .current_dir(ws.dir.path())
        .stdin(Stdio::null());
    let home = ws.home();
    crate::support::run::isolate(&mut cmd, &home, &home.join(".config"));
    let output = cmd.output().unwrap();
    let text = String::from_utf8_lossy(&output.stdout).replace('\r', "");
    assert_eq!(output.status.code(), Some(2), "{text}");
    assert!(text.contains("Usage: leash [OPTIONS] [PROMPT]"), "{text}");
    assert!(!text.contains("API_KEY"), "{text}");
    assert!(
        text.trim_end()
            .ends_with("leash: no prompt: pass PROMPT, or pipe it on stdin (e.g. echo 'question' | leash); leash -h shows the essentials"),
        "{text}"
    );
}

/// A run with no key anywhere: the OpenAI default, which needs one.
fn keyless(args: &[&str]) -> std::process::Output {
    workspace()
        .child()
        .args(args)
        .stdin(Stdio::null())
        .output()
        .unwrap()
}

#[test]
fn argument_errors_come_before_the_missing_key() {
    let unknown_tool = keyless(&["--tools", "read_file,shell", "go"]);
    assert_eq!(unknown_tool.status.code(), Some(2));
    assert!(
        last_line(&unknown_tool).starts_with("leash: unknown tool 'shell' in --tools"),
        "{unknown_tool:?}"
    );
    let missing_root = keyless(&["--root", "no/such/dir", "go"]);
    assert_eq!(missing_root.status.code(), Some(2));
    assert!(
        last_line(&missing_root).starts_with("leash: invalid --root no/such/dir"),
        "{missing_root:?}"
    );
    // The temp directory is in no git work tree.
    let git = keyless(&["--tools", "git", "go"]);
    assert_eq!(git.status.code(), Some(2));
    let line = last_line(&git);
    assert!(line.contains("git") && !line.contains("API_KEY"), "{line}");
    // With every argument right, the key is what is missing.
    let fine = keyless(&["go"]);
    assert_eq!(fine.status.code(), Some(2));
    assert!(last_line(&fine).contains("OPENAI_API_KEY is not set"));
}

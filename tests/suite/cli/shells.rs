//! leash among shells (docs/src/shells.md "Completions and the
//! man page", docs/src/usage.md "Usage"): completions for
//! every shell and a man page, the command-word rule, and `--help` the same
//! three ways.

use crate::support::run::stdout;
use crate::support::shell;

use serde_json::{Value, json};
use shell::{Workspace, has};

#[test]
fn completions_for_every_shell_and_a_man_page() {
    let ws = Workspace::new();
    for shell in ["bash", "zsh", "fish", "powershell", "elvish"] {
        let output = ws.leash().args(["completions", shell]).output().unwrap();
        assert_eq!(output.status.code(), Some(0), "{shell}: {output:?}");
        let script = stdout(&output);
        for word in ["max-turns", "output-last-message", "completions", "schema"] {
            assert!(script.contains(word), "{shell} completions lack {word}");
        }
    }
    let bash = ws.leash().args(["completions", "bash"]).output().unwrap();
    let path = ws.write("leash.bash", &stdout(&bash));
    let check = std::process::Command::new("bash")
        .arg("-n")
        .arg(&path)
        .output()
        .unwrap();
    assert!(check.status.success(), "{check:?}");
    if has("zsh") {
        let zsh = ws.leash().args(["completions", "zsh"]).output().unwrap();
        let path = ws.write("_leash", &stdout(&zsh));
        let check = std::process::Command::new("zsh")
            .arg("-n")
            .arg(&path)
            .output()
            .unwrap();
        assert!(check.status.success(), "{check:?}");
    }
    let output = ws.leash().arg("man").output().unwrap();
    assert_eq!(output.status.code(), Some(0));
    let page = stdout(&output);
    assert!(page.contains(".TH leash 1"), "{page}");
    assert!(page.contains(".SH \"EXIT STATUS\""));
    assert!(page.contains("LEASH_MAX_TURNS"));
    // Bad arguments to a command are usage errors.
    let output = ws.leash().args(["completions", "tcsh"]).output().unwrap();
    assert_eq!(output.status.code(), Some(2));
    let output = ws.leash().args(["schema", "nope"]).output().unwrap();
    assert_eq!(output.status.code(), Some(2));
}

#[test]
fn a_command_word_is_a_prompt_unless_it_comes_first() {
    let ws = Workspace::new();
    let transcript = ws.path("transcript.jsonl");
    for args in [vec!["--", "man"], vec!["-q", "man"], vec!["schema events"]] {
        let output = ws
            .faux(json!([{"text": "ok"}]))
            .arg("--transcript")
            .arg(&transcript)
            .args(&args)
            .output()
            .unwrap();
        assert_eq!(output.status.code(), Some(0), "{args:?}: {output:?}");
        assert_eq!(stdout(&output), "ok\n");
        let first = std::fs::read_to_string(&transcript).unwrap();
        let first: Value = serde_json::from_str(first.lines().nth(1).unwrap()).unwrap();
        assert_eq!(
            first["content"][0]["text"],
            *args.last().unwrap(),
            "{args:?}"
        );
    }
}

#[test]
fn help_is_short_complete_and_the_same_three_ways() {
    let ws = Workspace::new();
    let help = |args: &[&str]| {
        let output = ws.leash().args(args).output().unwrap();
        assert_eq!(output.status.code(), Some(0), "{args:?}");
        stdout(&output)
    };
    // `-h`: one screen (tests/suite/cli/help.rs), the essential flags,
    // the commands and the exit codes by name.
    let short = help(&["-h"]);
    assert!(short.lines().count() <= 24, "{short}");
    // `--help` and `help`: the same full text, with every flag, what each
    // exit code means and where settings come from.
    let long = help(&["--help"]);
    assert_eq!(long, help(&["help"]));
    assert!(
        long.lines().all(|line| line.chars().count() <= 100),
        "{long}"
    );
    for word in [
        "-q, --quiet",
        "--allow-write",
        "--max-turns <N>",
        "config",
        "completions SHELL",
        "man",
        "schema KIND",
    ] {
        assert!(short.contains(word), "{word} missing from -h:\n{short}");
        assert!(long.contains(word), "{word} missing from --help:\n{long}");
    }
    for word in [
        "--color <WHEN>",
        "--stream",
        "--output-last-message <FILE>",
        "--hook <EVENT=COMMAND>",
        "--mcp-config <FILE>",
        "--max-cost <USD>",
        "config [OPTIONS]",
    ] {
        assert!(!short.contains(word), "{word} in -h:\n{short}");
        assert!(long.contains(word), "{word} missing from --help:\n{long}");
    }
    assert!(short.contains("124 timeout"), "{short}");
    assert!(short.contains("leash --help"), "{short}");
    for word in ["124  timeout", "8    mcp", "config.toml", "NO_COLOR"] {
        assert!(long.contains(word), "{word} missing:\n{long}");
    }
    assert!(help(&["help", "config"]).contains("Usage: leash config [OPTIONS]"));
}

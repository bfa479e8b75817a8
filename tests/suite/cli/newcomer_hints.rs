//! The first minutes with leash (docs/src/usage.md "Usage", docs/src/providers.md "The scripted model (`faux`)"):
//! trying it without a key is one line, the flags people bring from the
//! peers get leash's own flag for the job, `leash help batch` lists only
//! what batch honours, and a resumed run says what it restored.

use serde_json::{Value, json};

use super::{last_line, workspace};

#[test]
fn faux_without_a_script_answers_with_the_prompt_it_got() {
    let ws = workspace();
    let output = ws
        .leash()
        .args(["--provider", "faux", "hi"])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0), "{output:?}");
    let stdout = String::from_utf8(output.stdout).unwrap();
    assert!(
        stdout.starts_with("This is leash's built-in offline model"),
        "{stdout}"
    );
    assert!(stdout.ends_with("The prompt it got:\n\nhi\n"), "{stdout}");
}

#[test]
fn the_missing_key_error_says_how_to_try_offline() {
    let ws = workspace();
    let output = ws
        .leash()
        .args(["--provider", "openai", "hi"])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
    assert!(
        last_line(&output)
            .ends_with("or try leash offline without a key: leash --provider faux \"hi\""),
        "{}",
        last_line(&output)
    );
}

#[test]
fn dash_p_is_the_prompt_as_the_peers_type_it() {
    let ws = workspace();
    for args in [
        &["-p", "hello there"][..],
        &["--prompt", "hello there"],
        &["--prompt=hello there"],
    ] {
        let output = ws
            .leash()
            .args(["--provider", "faux", "-q"])
            .args(args)
            .output()
            .unwrap();
        assert_eq!(output.status.code(), Some(0), "{args:?}: {output:?}");
        assert!(
            String::from_utf8_lossy(&output.stdout).ends_with("\n\nhello there\n"),
            "{output:?}"
        );
    }
    // `-p` alone, as `claude -p` is used in a pipe: the prompt is stdin.
    let output = ws
        .leash()
        .args(["--provider", "faux", "-q", "-p"])
        .write_stdin("from the pipe\n")
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0), "{output:?}");
    assert!(String::from_utf8_lossy(&output.stdout).ends_with("\n\nfrom the pipe\n"));
    // Both a `-p` prompt and a PROMPT argument: which one was meant?
    let output = ws
        .leash()
        .args(["--provider", "faux", "-p", "one", "two"])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2), "{output:?}");
}

#[test]
fn the_peers_flags_get_leash_s_own_flag_for_the_job() {
    let ws = workspace();
    let json = "use --output json (one result object on stdout) or --events jsonl \
                (the event stream on stderr)";
    let blanket = "there is no blanket switch: --allow-write lets the model change files \
                   under --root; --tools, --allow-tool and --deny-tool say what else it may call";
    let cases: [(&[&str], String); 6] = [
        (
            &["--json"],
            format!("leash: --json is no flag of leash's: {json}"),
        ),
        (
            &["--output-format", "json"],
            format!("leash: --output-format is no flag of leash's: {json}"),
        ),
        (
            &["--output-format=stream-json"],
            format!("leash: --output-format is no flag of leash's: {json}"),
        ),
        (
            &["--verbose"],
            "leash: --verbose is no flag of leash's: the events on stderr are the detail: \
             --events text (the default) for people, --events jsonl for programs"
                .to_owned(),
        ),
        (
            &["--yolo"],
            format!("leash: --yolo is no flag of leash's: {blanket}"),
        ),
        (
            &["--dangerously-skip-permissions"],
            format!("leash: --dangerously-skip-permissions is no flag of leash's: {blanket}"),
        ),
    ];
    for (args, line) in cases {
        let output = ws
            .leash()
            .args(["--provider", "faux"])
            .args(args)
            .arg("hello")
            .output()
            .unwrap();
        assert_eq!(output.status.code(), Some(2), "{args:?}");
        assert!(output.stdout.is_empty(), "{args:?}");
        assert_eq!(last_line(&output), line, "{args:?}");
    }
}

#[test]
fn help_batch_lists_no_flag_batch_ignores() {
    let ws = workspace();
    let output = ws.leash().args(["help", "batch"]).output().unwrap();
    assert_eq!(output.status.code(), Some(0));
    let help = String::from_utf8(output.stdout).unwrap();
    assert!(!help.contains("--output <"), "{help}");
    assert!(!help.contains("--prompt"), "{help}");
    assert!(help.contains("--parallel"), "{help}");
    // And batch refuses it rather than ignoring it.
    let output = ws
        .leash()
        .args(["batch", "--output", "text", "--provider", "faux"])
        .write_stdin("{\"id\": \"a\", \"prompt\": \"go\"}\n")
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2), "{output:?}");
}

#[test]
fn a_resumed_run_says_what_it_restored() {
    let ws = workspace();
    let first = ws
        .faux(json!([{"text": "first answer"}]))
        .args(["--transcript", "t.jsonl", "one"])
        .output()
        .unwrap();
    assert_eq!(first.status.code(), Some(0), "{first:?}");
    let second = ws
        .faux(json!([{"text": "second answer"}]))
        .args(["--resume", "t.jsonl", "two"])
        .output()
        .unwrap();
    assert_eq!(second.status.code(), Some(0), "{second:?}");
    let stderr = String::from_utf8(second.stderr).unwrap();
    assert!(stderr.contains("[resume] 1 turn from t.jsonl"), "{stderr}");
    let result = ws
        .faux(json!([{"text": "third"}]))
        .args(["--resume", "t.jsonl", "-q", "--output", "json", "three"])
        .output()
        .unwrap();
    let result: Value = serde_json::from_slice(&result.stdout).unwrap();
    assert_eq!(result["restoredTurns"], 1);
}

#[test]
fn the_codex_habits_get_leash_s_flag_for_the_job() {
    let ws = workspace();
    let sandbox = "leash reads only, unless told: --allow-write lets the model change files \
                   under --root, --allow-exec lets it run commands there (confined by the kernel)";
    let directory = "the tools work in --root DIR (default: the current directory): \
                     use --root DIR, or cd DIR first";
    let exec = "exec is no command of leash's: the prompt is the argument, so: leash [OPTIONS]";
    let cases: [(&[&str], String); 7] = [
        (&["exec", "hi"], format!("leash: {exec} \"hi\"")),
        (
            &["exec", "fix the bug", "now"],
            format!("leash: {exec} \"fix the bug now\""),
        ),
        (
            &["--full-auto", "hi"],
            format!("leash: --full-auto is no flag of leash's: {sandbox}"),
        ),
        (
            &["--sandbox", "workspace-write", "hi"],
            format!("leash: --sandbox is no flag of leash's: {sandbox}"),
        ),
        (
            &["--sandbox=danger-full-access", "hi"],
            format!("leash: --sandbox is no flag of leash's: {sandbox}"),
        ),
        (
            &["-C", "src", "hi"],
            format!("leash: -C is no flag of leash's: {directory}"),
        ),
        (
            &["--cd", "src", "hi"],
            format!("leash: --cd is no flag of leash's: {directory}"),
        ),
    ];
    for (args, line) in cases {
        let output = ws
            .leash()
            .args(["--provider", "faux"])
            .args(args)
            .output()
            .unwrap();
        assert_eq!(output.status.code(), Some(2), "{args:?}");
        assert!(output.stdout.is_empty(), "{args:?}");
        assert_eq!(last_line(&output), line, "{args:?}");
    }
}

#[test]
fn bash_named_in_tools_or_called_by_the_model_names_allow_exec() {
    let ws = workspace();
    // `--tools bash` (as `claude --tools Bash` users type it): the flag.
    let output = ws
        .leash()
        .args(["--provider", "faux", "--tools", "read_file,bash", "hi"])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2), "{output:?}");
    assert_eq!(
        last_line(&output),
        "leash: --tools names bash, which leash offers only with --allow-exec: add --allow-exec \
         (commands run in --root, confined by the kernel)"
    );
    // With the flag, naming it is fine: the model gets it.
    let output = ws
        .faux(json!([
            {"toolCalls": [{"name": "bash", "arguments": {"command": "echo from-bash"}}]},
            {"text": "done"}
        ]))
        .args([
            "--tools",
            "bash",
            "--allow-exec=unconfined",
            "--events",
            "jsonl",
        ])
        .arg("go")
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0), "{output:?}");
    let events = String::from_utf8(output.stderr).unwrap();
    assert!(events.contains("from-bash"), "{events}");

    // A model that calls bash on a run without the flag: the event line a
    // person reads names it (the model got the plain refusal).
    let output = ws
        .faux(json!([
            {"toolCalls": [{"name": "bash", "arguments": {"command": "ls"}}]},
            {"text": "I could not run ls."}
        ]))
        .arg("list the files")
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0), "{output:?}");
    let stderr = String::from_utf8(output.stderr).unwrap();
    assert!(
        stderr.contains(
            "[tool] bash \"ls\" error: Tool bash not found (leash offers bash only with --allow-exec)\n"
        ),
        "{stderr}"
    );
}

#[test]
fn the_missing_key_error_names_only_places_this_run_reads() {
    let ws = workspace();
    let last = |env: &[(&str, &str)], args: &[&str]| {
        let output = ws
            .leash()
            .envs(env.iter().copied())
            .args(["--provider", "openai"])
            .args(args)
            .arg("hi")
            .output()
            .unwrap();
        assert_eq!(output.status.code(), Some(2), "{output:?}");
        last_line(&output)
    };
    assert!(
        last(&[], &[]).contains("; set it in the environment or in .env, or try leash offline")
    );
    // `--bare` and `--no-env-file` read no `.env`: none is suggested.
    for (env, args) in [
        (&[][..], &["--bare"][..]),
        (&[("LEASH_BARE", "1")], &[]),
        (&[], &["--no-env-file"]),
    ] {
        let line = last(env, args);
        assert!(!line.contains(".env"), "{env:?} {args:?}: {line}");
        assert!(
            line.contains("; set it in the environment, or try leash offline"),
            "{line}"
        );
    }
    // In a GitHub Actions step: its `env:`, or the Action's input.
    for args in [&[][..], &["--bare"]] {
        let line = last(&[("GITHUB_ACTIONS", "true")], args);
        assert!(!line.contains(".env"), "{args:?}: {line}");
        assert!(
            line.contains(
                "in GitHub Actions set it in the step's env: \
                 (OPENAI_API_KEY: ${{ secrets.OPENAI_API_KEY }}) \
                 or in the leash Action's openai-api-key input"
            ),
            "{line}"
        );
    }
}

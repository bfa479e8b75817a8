//! The recipes of the README and the manual, run as written on the
//! scripted model: each block is read out of README.md or docs/src (after
//! its `<!-- recipe: NAME -->` marker, every copy the same) and
//! run by bash with `leash` on the PATH and `LEASH_FAUX_SCRIPT` standing in
//! for a provider. Where a recipe pipes into `jq` and `jq` is missing, the
//! leash part runs alone and the test checks the same with serde_json.

#![allow(clippy::unwrap_used, clippy::expect_used)] // tests may panic on a broken fixture

use crate::support::run::{stderr, stdout};
use crate::support::shell;

use std::path::Path;
use std::process::Output;

use serde_json::{Value, json};
use shell::{Workspace, has, tool_call};

pub(crate) use crate::support::docs::recipe;

/// The part of a recipe before it pipes into `jq`.
fn before_jq(recipe: &str) -> String {
    let cut = recipe.find("| jq").unwrap();
    recipe[..cut]
        .trim_end()
        .trim_end_matches('\\')
        .trim_end()
        .to_owned()
}

/// Runs `script` in `ws` with the faux model answering from `responses`.
fn run(ws: &Workspace, script: &str, responses: Value, env: &[(&str, &str)]) -> Output {
    let path = ws.script(responses);
    let mut cmd = ws.bash(script);
    cmd.env("LEASH_FAUX_SCRIPT", path);
    for (name, value) in env {
        cmd.env(name, value);
    }
    cmd.output().unwrap()
}

const REPLY: &str = "No bugs found.";

fn answer() -> Value {
    json!([{ "text": REPLY }])
}

fn failure() -> Value {
    json!([{ "text": "Half an", "error": "upstream exploded" }])
}

/// `git ARGS` in `ws`, with an identity and no user configuration.
fn git(ws: &Workspace, args: &[&str]) {
    let output = std::process::Command::new("git")
        .args(args)
        .current_dir(ws.dir.path())
        .env("HOME", ws.path("home"))
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_AUTHOR_NAME", "t")
        .env("GIT_AUTHOR_EMAIL", "t@example.com")
        .env("GIT_COMMITTER_NAME", "t")
        .env("GIT_COMMITTER_EMAIL", "t@example.com")
        .output()
        .unwrap();
    assert!(output.status.success(), "git {args:?}: {output:?}");
}

/// A git repository in `ws`: `lib.rs` committed, then changed.
fn git_repo(ws: &Workspace) {
    assert!(has("git"), "these recipes need git");
    ws.write("lib.rs", "fn first() -> u32 {\n    old_line()\n}\n");
    git(ws, &["init", "-q"]);
    git(ws, &["add", "lib.rs"]);
    git(ws, &["commit", "-q", "-m", "base"]);
    ws.write("lib.rs", "fn first() -> u32 {\n    new_line()\n}\n");
}

/// What the model was sent as the prompt, from a transcript.
fn prompt_sent(transcript: &Path) -> String {
    let text = std::fs::read_to_string(transcript).unwrap();
    // Line one is the session line (docs/src/events.md "Transcript").
    let first: Value = serde_json::from_str(text.lines().nth(1).unwrap()).unwrap();
    first["content"][0]["text"].as_str().unwrap().to_owned()
}

/// The value of `key: value` in a recipe's YAML (quotes taken off).
fn yaml_value(line: &str, key: &str) -> Option<String> {
    let value = line.trim().strip_prefix(key)?.strip_prefix(':')?.trim();
    Some(value.trim_matches('"').to_owned())
}

#[test]
fn a_github_actions_review_runs_the_action_and_fails_the_step_with_the_reason() {
    let yaml = recipe("github-actions");
    let lines: Vec<&str> = yaml.lines().collect();
    // The step that writes the diff, as the runner runs it.
    let diff = lines.iter().find_map(|l| yaml_value(l, "run")).unwrap();
    // The Action's inputs: the `with:` block after `uses: <this repo>`.
    let uses = lines
        .iter()
        .position(|l| l.trim().starts_with("uses: leash-cli/leash@"))
        .unwrap();
    let with = uses
        + lines[uses..]
            .iter()
            .position(|l| l.trim() == "with:")
            .unwrap();
    let inputs: Vec<(String, String)> = lines[with + 1..]
        .iter()
        .map(|l| {
            let (key, _) = l.trim().split_once(':').unwrap();
            (key.to_owned(), yaml_value(l, key).unwrap())
        })
        .collect();
    let env_name = |key: &str| format!("INPUT_{}", key.to_uppercase().replace('-', "_"));
    let args = &inputs.iter().find(|(key, _)| key == "args").unwrap().1;
    assert!(
        args.contains("-t ") && args.contains("--max-turns "),
        "{args}"
    );

    let ws = Workspace::new();
    git_repo(&ws);
    git(&ws, &["update-ref", "refs/remotes/origin/main", "HEAD"]);
    git(&ws, &["commit", "-q", "-am", "change"]);
    let output = run(&ws, &diff, answer(), &[]);
    assert_eq!(output.status.code(), Some(0), "{output:?}");

    let transcript = ws.path("transcript.jsonl");
    let action = |responses: Value| {
        let script = ws.script(responses);
        let mut env: Vec<(String, String)> = inputs
            .iter()
            .map(|(key, value)| (env_name(key), value.clone()))
            .collect();
        env.push(("LEASH_FAUX_SCRIPT".into(), script.to_str().unwrap().into()));
        env.push((
            "LEASH_TRANSCRIPT".into(),
            transcript.to_str().unwrap().into(),
        ));
        let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
        super::install::run_action(&ws, &env)
    };

    let review = action(answer());
    assert_eq!(review.output.status.code(), Some(0), "{:?}", review.output);
    assert_eq!(review.output("reply"), REPLY);
    assert_eq!(review.output("exit-code"), "0");
    assert!(review.summary.contains(REPLY), "{}", review.summary);
    let prompt = prompt_sent(&transcript);
    assert!(prompt.starts_with("Any bugs in this change?"), "{prompt}");
    assert!(
        prompt.contains("<stdin>") && prompt.contains("+    new_line()"),
        "{prompt}"
    );

    // A failed run fails the step, its reason in the log.
    let review = action(failure());
    assert_eq!(review.output.status.code(), Some(1), "{:?}", review.output);
    assert_eq!(review.output("exit-code"), "1");
    assert_eq!(
        review.errors(),
        ["::error title=leash exited 1::leash: provider error: upstream exploded"]
    );
    let events = std::fs::read_to_string(review.output("events-file")).unwrap();
    let last: Value = serde_json::from_str(events.lines().last().unwrap()).unwrap();
    assert_eq!(last["status"], "error");
}

#[test]
fn a_diff_piped_in_reaches_the_model_after_the_prompt() {
    let script = recipe("git-diff");
    assert!(script.starts_with("git diff | leash -s "), "{script}");
    let ws = Workspace::new();
    git_repo(&ws);
    let transcript = ws.path("transcript.jsonl");
    let output = run(
        &ws,
        &script,
        answer(),
        &[("LEASH_TRANSCRIPT", transcript.to_str().unwrap())],
    );
    assert_eq!(output.status.code(), Some(0), "{output:?}");
    assert_eq!(stdout(&output), format!("{REPLY}\n"));
    let prompt = prompt_sent(&transcript);
    assert!(prompt.starts_with("Any bugs?"), "{prompt}");
    assert!(
        prompt.contains("-    old_line()\n+    new_line()"),
        "{prompt}"
    );
    assert!(prompt.trim_end().ends_with("</stdin>"), "{prompt}");
}

#[test]
fn jq_takes_the_reply_out_of_the_json_result() {
    let script = recipe("jq-reply");
    let ws = Workspace::new();
    if has("jq") {
        let output = run(&ws, &script, answer(), &[]);
        assert_eq!(output.status.code(), Some(0), "{output:?}");
        assert_eq!(stdout(&output), format!("{REPLY}\n"));
        // Under pipefail the pipeline fails when leash does.
        let output = run(&ws, &script, failure(), &[]);
        assert_eq!(output.status.code(), Some(1), "{output:?}");
    } else {
        let leash = before_jq(&script);
        let output = run(&ws, &leash, answer(), &[]);
        assert_eq!(output.status.code(), Some(0), "{output:?}");
        let result: Value = serde_json::from_str(&stdout(&output)).unwrap();
        assert_eq!(result["reply"], REPLY);
        let output = run(&ws, &leash, failure(), &[]);
        assert_eq!(output.status.code(), Some(1), "{output:?}");
    }
}

#[test]
fn xargs_runs_leash_over_many_files_and_reports_any_failure() {
    assert!(has("xargs") && has("find"), "this recipe needs findutils");
    let script = recipe("xargs");
    let ws = Workspace::new();
    let names = ["a", "b", "c", "d", "e", "f"];
    for name in names {
        ws.write(&format!("src/{name}.rs"), "fn main() {}\n");
    }
    let every = json!({"responses": [{"text": REPLY}], "repeatLast": true});
    let output = run(&ws, &script, every, &[]);
    assert_eq!(output.status.code(), Some(0), "{output:?}");
    for name in names {
        let summary = std::fs::read_to_string(ws.path(&format!("src/{name}.rs.summary"))).unwrap();
        assert_eq!(summary, format!("{REPLY}\n"), "{name}");
    }
    // A failing run makes xargs exit 123; each run says why on stderr.
    let broken = json!({"responses": [{"error": "rate limited"}], "repeatLast": true});
    let output = run(&ws, &script, broken, &[]);
    assert_eq!(output.status.code(), Some(123), "{output:?}");
    let why: Vec<String> = stderr(&output)
        .lines()
        .filter(|line| line.starts_with("leash: "))
        .map(str::to_owned)
        .collect();
    assert_eq!(why.len(), names.len(), "{why:?}");
    assert!(
        why.iter()
            .all(|line| line == "leash: provider error: rate limited")
    );
    for name in names {
        let summary = std::fs::read_to_string(ws.path(&format!("src/{name}.rs.summary"))).unwrap();
        assert_eq!(summary, "", "{name}");
    }
}

#[test]
fn jq_reads_the_jsonl_events() {
    let script = recipe("jq-events");
    let ws = Workspace::new();
    let responses = json!([
        {"toolCalls": [
            tool_call("list_dir", json!({})),
            tool_call("read_file", json!({"path": "missing.rs"}))
        ]},
        {"text": REPLY}
    ]);
    let mut lines: Vec<Value> = if has("jq") {
        let output = run(&ws, &script, responses, &[]);
        assert_eq!(output.status.code(), Some(0), "{output:?}");
        stdout(&output)
            .lines()
            .map(|line| serde_json::from_str(line).unwrap())
            .collect()
    } else {
        let output = run(&ws, &before_jq(&script), responses, &[]);
        assert_eq!(output.status.code(), Some(0), "{output:?}");
        stdout(&output)
            .lines()
            .map(|line| serde_json::from_str::<Value>(line).unwrap())
            .filter(|event| event["type"] == "tool_execution_end")
            .map(|event| json!({"toolName": event["toolName"], "isError": event["isError"]}))
            .collect()
    };
    // Parallel tools end in completion order.
    lines.sort_by_key(|line| line["toolName"].as_str().unwrap().to_owned());
    assert_eq!(
        lines,
        vec![
            json!({"toolName": "list_dir", "isError": false}),
            json!({"toolName": "read_file", "isError": true}),
        ]
    );
}

#[test]
fn a_review_greps_for_the_callers_of_what_changed() {
    let script = recipe("grep-review");
    assert!(
        script.starts_with("git diff | leash --tools read_file,grep"),
        "{script}"
    );
    let ws = Workspace::new();
    git_repo(&ws);
    ws.write("main.rs", "fn main() {\n    let n = first();\n}\n");
    // In a hidden directory, which grep skips (the transcript would match).
    ws.write(".out/keep", "");
    let transcript = ws.path(".out/transcript.jsonl");
    let responses = json!([
        {"toolCalls": [tool_call("grep", json!({"pattern": r"first\(\)"}))]},
        {"text": REPLY}
    ]);
    let output = run(
        &ws,
        &script,
        responses,
        &[("LEASH_TRANSCRIPT", transcript.to_str().unwrap())],
    );
    assert_eq!(output.status.code(), Some(0), "{output:?}");
    assert_eq!(stdout(&output), format!("{REPLY}\n"));
    assert!(prompt_sent(&transcript).contains("+    new_line()"));
    // The model saw every use of first(), sorted, relative to the root.
    let text = std::fs::read_to_string(&transcript).unwrap();
    let result = text
        .lines()
        .map(|line| serde_json::from_str::<Value>(line).unwrap())
        .find(|message| message["role"] == "toolResult")
        .unwrap();
    assert_eq!(result["isError"], false, "{result}");
    assert_eq!(
        result["content"][0]["text"],
        "lib.rs:1:fn first() -> u32 {\nmain.rs:2:    let n = first();"
    );
}

#[test]
fn a_fix_that_edits_changes_the_file_and_git_diff_shows_it() {
    let script = recipe("fix-edits");
    assert!(script.starts_with("leash --allow-write"), "{script}");
    let ws = Workspace::new();
    git_repo(&ws);
    git(&ws, &["checkout", "-q", "--", "lib.rs"]);
    let responses = json!([
        {"toolCalls": [tool_call("edit_file", json!({
            "path": "lib.rs", "old": "old_line()", "new": "new_line()"
        }))]},
        {"text": "Fixed: first() calls new_line()."}
    ]);
    let output = run(&ws, &script, responses, &[]);
    assert_eq!(output.status.code(), Some(0), "{output:?}");
    assert_eq!(
        std::fs::read_to_string(ws.path("lib.rs")).unwrap(),
        "fn first() -> u32 {\n    new_line()\n}\n"
    );
    let out = stdout(&output);
    assert!(
        out.starts_with("Fixed: first() calls new_line().\n"),
        "{out}"
    );
    assert!(out.contains("-    old_line()\n+    new_line()\n"), "{out}");
    assert!(stderr(&output).contains("[changed] lib.rs (+1 -1)"));
}

#[test]
fn a_review_that_searches_reads_the_diff_with_git_and_greps_the_callers() {
    let script = recipe("review-searches");
    assert!(
        script.starts_with("leash --no-stdin --tools read_file,grep,git"),
        "{script}"
    );
    let ws = Workspace::new();
    git_repo(&ws);
    ws.write("main.rs", "fn main() {\n    let n = first();\n}\n");
    ws.write(".out/keep", "");
    // The repository's config names a program; the git tool must not run it.
    let ran = ws.path("fsmonitor-ran");
    let config = ws.path(".git/config");
    let mut text = std::fs::read_to_string(&config).unwrap();
    text.push_str(&format!(
        "[core]\n\tfsmonitor = \"touch {}; false\"\n",
        ran.display()
    ));
    std::fs::write(&config, text).unwrap();
    let transcript = ws.path(".out/transcript.jsonl");
    let responses = json!([
        {"toolCalls": [
            tool_call("git", json!({"command": "diff"})),
            tool_call("grep", json!({"pattern": r"first\(\)"}))
        ]},
        {"text": REPLY}
    ]);
    let output = run(
        &ws,
        &script,
        responses,
        &[("LEASH_TRANSCRIPT", transcript.to_str().unwrap())],
    );
    assert_eq!(output.status.code(), Some(0), "{output:?}");
    assert_eq!(stdout(&output), format!("{REPLY}\n"));
    let text = std::fs::read_to_string(&transcript).unwrap();
    let results: Vec<Value> = text
        .lines()
        .map(|line| serde_json::from_str::<Value>(line).unwrap())
        .filter(|message| message["role"] == "toolResult")
        .collect();
    assert_eq!(results.len(), 2, "{text}");
    let diff = results[0]["content"][0]["text"].as_str().unwrap();
    assert!(
        diff.starts_with("diff --git a/lib.rs b/lib.rs") && diff.contains("+    new_line()"),
        "{diff}"
    );
    assert_eq!(
        results[1]["content"][0]["text"],
        "lib.rs:1:fn first() -> u32 {\nmain.rs:2:    let n = first();"
    );
    assert!(!ran.exists(), "the repository's fsmonitor ran");
}

#[test]
fn the_screenshot_recipe_attaches_the_screenshot_and_the_log() {
    use leash_media::testing::png_of;
    let script = recipe("ui-screenshot");
    assert!(
        script.contains("leash --attach test-results/login/failure.png"),
        "{script}"
    );
    let ws = Workspace::new();
    std::fs::create_dir_all(ws.path("test-results/login")).unwrap();
    std::fs::write(ws.path("test-results/login/failure.png"), png_of(1280, 720)).unwrap();
    ws.write(
        "test-results/login/trace.log",
        "expect(button).toBeVisible() failed\n",
    );
    let expects = json!([{ "text": REPLY, "expect": { "attachments": [
        { "name": "test-results/login/failure.png", "mediaType": "image/png" },
        { "name": "test-results/login/trace.log", "mediaType": "text/plain" }
    ]}}]);
    let output = run(&ws, &script, expects, &[]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert_eq!(stdout(&output), format!("{REPLY}\n"));
}

#[test]
fn fixing_the_failing_test_runs_it_in_the_shell_edits_and_runs_it_again() {
    if !crate::suite::shell::confinable() {
        return;
    }
    let script = recipe("fix-failing-test");
    assert!(
        script.starts_with("leash --allow-exec --allow-write"),
        "{script}"
    );
    let ws = Workspace::new();
    ws.write("calc.sh", "add() { echo $(( $1 - $2 )); }\n");
    let test = ws.write(
        "test.sh",
        "#!/bin/sh\n. ./calc.sh\n[ \"$(add 2 2)\" = 4 ] && echo PASS || { echo FAIL: add 2 2 = $(add 2 2); exit 1; }\n",
    );
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&test, std::fs::Permissions::from_mode(0o755)).unwrap();
    let responses = json!([
        {"toolCalls": [tool_call("bash", json!({"command": "./test.sh"}))]},
        {"toolCalls": [tool_call("edit_file", json!({
            "path": "calc.sh", "old": "$1 - $2", "new": "$1 + $2"
        }))]},
        {"toolCalls": [tool_call("bash", json!({"command": "./test.sh"}))]},
        {"text": "Fixed: add() subtracted."}
    ]);
    let output = run(&ws, &script, responses, &[]);
    assert_eq!(output.status.code(), Some(0), "{output:?}");
    let err = stderr(&output);
    assert!(err.contains("[tool] bash \"./test.sh\" exit 1 · "), "{err}");
    assert!(err.contains("[tool] bash \"./test.sh\" exit 0 · "), "{err}");
    assert_eq!(stdout(&output), "Fixed: add() subtracted.\nPASS\n");
}

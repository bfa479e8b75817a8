//! The GitHub Action's steps (`action/setup.sh`, `action/run.sh`) as
//! action.yml runs them: by bash, with `GITHUB_OUTPUT`,
//! `GITHUB_STEP_SUMMARY` and `GITHUB_PATH` pointing at temp files, leash
//! on the scripted model.

#![allow(clippy::unwrap_used, clippy::expect_used)] // tests may panic on a broken fixture

use super::{TARGET, VERSION, release, repo_file, version_of};
use crate::support::run::{stderr, stdout};
use crate::support::shell::{Workspace, has, tool_call};

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Output;

use serde_json::{Value, json};

/// One run of an action step script, and what it left behind.
pub(crate) struct ActionRun {
    pub output: Output,
    /// GITHUB_OUTPUT, parsed (`name=value` and `name<<DELIM` … `DELIM`).
    pub outputs: HashMap<String, String>,
    pub summary: String,
    /// What the step wrote to GITHUB_ENV and GITHUB_PATH.
    pub env: String,
    pub path: String,
}

impl ActionRun {
    pub fn output(&self, name: &str) -> &str {
        self.outputs
            .get(name)
            .unwrap_or_else(|| panic!("no output {name}: {:?}", self.outputs))
    }

    /// The `--output json` object of the run.
    pub fn result(&self) -> Value {
        serde_json::from_str(self.output("result")).unwrap()
    }

    /// Every line of the log the runner would read as a workflow command
    /// (it reads both streams; leading blanks do not stop it).
    pub fn commands(&self) -> Vec<String> {
        let log = format!("{}\n{}", stdout(&self.output), stderr(&self.output));
        log.split(['\n', '\r'])
            .filter(|line| line.trim_start().starts_with("::"))
            .map(str::to_owned)
            .collect()
    }

    /// The `::error` annotations the step printed.
    pub fn errors(&self) -> Vec<String> {
        stdout(&self.output)
            .lines()
            .filter(|line| line.starts_with("::error"))
            .map(str::to_owned)
            .collect()
    }
}

/// The step outputs a GITHUB_OUTPUT file sets, as the runner reads them.
fn parse_outputs(text: &str) -> HashMap<String, String> {
    let mut outputs = HashMap::new();
    let mut lines = text.lines();
    while let Some(line) = lines.next() {
        if let Some((name, delimiter)) = line.split_once("<<") {
            let value: Vec<&str> = lines.by_ref().take_while(|l| *l != delimiter).collect();
            outputs.insert(name.to_owned(), value.join("\n"));
        } else if let Some((name, value)) = line.split_once('=') {
            outputs.insert(name.to_owned(), value.to_owned());
        }
    }
    outputs
}

/// `action/SCRIPT ARGS` as action.yml runs it (a bash step, isolated like
/// [`Workspace::bash`]), with the GitHub files in `ws/github/` (fresh for
/// each run) and `env` (the `INPUT_*` variables action.yml maps).
pub(crate) fn action_step(
    ws: &Workspace,
    script: &str,
    args: &[&str],
    env: &[(&str, &str)],
) -> ActionRun {
    assert!(has("jq"), "the action reads leash's JSON result with jq");
    let github = ws.path("github");
    let _ = std::fs::remove_dir_all(&github);
    std::fs::create_dir_all(&github).unwrap();
    let file = |name: &str| github.join(name).to_str().unwrap().to_owned();
    let path = repo_file("action").join(script);
    let output = ws
        .bash(&format!("\"{}\" \"$@\"", path.display()))
        .arg("bash")
        .args(args)
        .env("GITHUB_OUTPUT", file("output"))
        .env("GITHUB_STEP_SUMMARY", file("summary"))
        .env("GITHUB_ENV", file("env"))
        .env("GITHUB_PATH", file("path"))
        .env("RUNNER_TEMP", &github)
        .envs(env.iter().copied())
        .output()
        .unwrap();
    let read = |name: &str| std::fs::read_to_string(github.join(name)).unwrap_or_default();
    ActionRun {
        outputs: parse_outputs(&read("output")),
        summary: read("summary"),
        env: read("env"),
        path: read("path"),
        output,
    }
}

/// The action's run step (action/run.sh) on the debug leash with `inputs`.
pub(crate) fn run_action(ws: &Workspace, inputs: &[(&str, &str)]) -> ActionRun {
    let bin = crate::support::run::bin();
    let mut env = vec![("LEASH_BIN", bin.to_str().unwrap())];
    env.extend_from_slice(inputs);
    action_step(ws, "run.sh", &[], &env)
}

#[test]
fn the_actions_run_step_sets_outputs_and_a_summary_of_a_run_that_edits() {
    let ws = Workspace::new();
    ws.write("root/notes.md", "old\n");
    let reply = "Done: notes.md now says new.\nA second line, and a % sign.";
    let script = ws.script(json!([
        {"toolCalls": [tool_call("write_file", json!({"path": "notes.md", "content": "new\n"}))]},
        {"text": reply}
    ]));
    let args = format!(
        "--faux-script '{}' --root root -t 30s --max-turns 3",
        script.display()
    );
    let run = run_action(
        &ws,
        &[
            ("INPUT_PROMPT", "Say new in notes.md"),
            ("INPUT_PROVIDER", "faux"),
            ("INPUT_SYSTEM", "You edit notes."),
            ("INPUT_ALLOW_WRITE", "true"),
            ("INPUT_ARGS", &args),
        ],
    );
    assert_eq!(run.output.status.code(), Some(0), "{:?}", run.output);
    assert!(run.errors().is_empty(), "{:?}", run.errors());
    assert_eq!(run.output("exit-code"), "0");
    assert_eq!(run.output("reply"), reply);
    let result = run.result();
    assert_eq!(result["status"], "ok");
    assert_eq!(result["reply"], reply);
    assert_eq!(result["changedFiles"], json!(["notes.md"]));
    assert_eq!(
        std::fs::read_to_string(ws.path("root/notes.md")).unwrap(),
        "new\n"
    );

    // The summary: status, the reply, usage and the files changed.
    let summary = &run.summary;
    assert!(summary.starts_with("### leash: ok\n"), "{summary}");
    assert!(summary.contains(reply), "{summary}");
    assert!(summary.contains("| turns | input tokens |"), "{summary}");
    assert!(summary.contains("| 2 | "), "{summary}");
    assert!(summary.contains("**Files changed:** notes.md"), "{summary}");

    // The JSONL events are in the file the artifact uploads, not the log.
    let events = std::fs::read_to_string(run.output("events-file")).unwrap();
    let last: Value = serde_json::from_str(events.lines().last().unwrap()).unwrap();
    assert_eq!(last["type"], "run_end");
    assert!(events.contains("\"toolName\":\"write_file\""));
    assert!(!stdout(&run.output).contains("tool_execution"));
}

#[test]
fn a_failed_run_fails_the_step_with_leashs_reason_and_exit_code() {
    let ws = Workspace::new();
    let looping = ws.script(json!({
        "responses": [{"toolCalls": [tool_call("list_dir", json!({}))]}],
        "repeatLast": true
    }));
    let faux = format!("--faux-script {}", looping.display());

    // The turn limit: exit 3, its reason as an annotation, outputs set.
    let args = format!("{faux} --max-turns 1");
    let run = run_action(&ws, &[("INPUT_PROMPT", "loop"), ("INPUT_ARGS", &args)]);
    assert_eq!(run.output.status.code(), Some(3), "{:?}", run.output);
    assert_eq!(
        run.errors(),
        [
            "::error title=leash exited 3::leash: turn limit reached after 1 turn; task not confirmed complete; raise it with --max-turns N"
        ]
    );
    assert_eq!(run.output("exit-code"), "3");
    assert_eq!(run.result()["status"], "turn_limit");
    assert!(
        run.summary.starts_with(
            "### leash failed (exit 3)\n\n> turn limit reached after 1 turn; task not confirmed complete; raise it with --max-turns N\n"
        ),
        "{}",
        run.summary
    );

    // A bad flag in `args`: leash's usage error, exit 2.
    let args = format!("{faux} --bogus");
    let run = run_action(&ws, &[("INPUT_PROMPT", "x"), ("INPUT_ARGS", &args)]);
    assert_eq!(run.output.status.code(), Some(2), "{:?}", run.output);
    let errors = run.errors();
    assert_eq!(errors.len(), 1, "{errors:?}");
    assert!(
        errors[0].starts_with(
            "::error title=leash exited 2::leash: unexpected argument '--bogus' found"
        ),
        "{errors:?}"
    );
    assert_eq!(run.output("exit-code"), "2");

    // A model error: exit 1 with the provider's words.
    let broken = ws.script(json!([{"text": "Half", "error": "upstream exploded"}]));
    let args = format!("--faux-script {}", broken.display());
    let run = run_action(&ws, &[("INPUT_PROMPT", "x"), ("INPUT_ARGS", &args)]);
    assert_eq!(run.output.status.code(), Some(1), "{:?}", run.output);
    assert_eq!(
        run.errors(),
        ["::error title=leash exited 1::leash: provider error: upstream exploded"]
    );

    // The action's own input checks: no leash run, exit 2.
    for (inputs, expected) in [
        (
            vec![("INPUT_ARGS", faux.as_str())],
            "set the prompt input (or prompt-file)",
        ),
        (
            vec![("INPUT_PROMPT", "x"), ("INPUT_ALLOW_WRITE", "yes")],
            "allow-write must be true or false, not 'yes'",
        ),
        (
            vec![("INPUT_PROMPT", "x"), ("INPUT_ALLOW_EXEC", "yes")],
            "allow-exec must be true, false or unconfined, not 'yes'",
        ),
        (
            vec![("INPUT_PROMPT_FILE", "missing.diff")],
            "prompt-file 'missing.diff' does not exist",
        ),
    ] {
        let run = run_action(&ws, &inputs);
        assert_eq!(run.output.status.code(), Some(2), "{:?}", run.output);
        assert_eq!(run.errors(), [format!("::error::leash action: {expected}")]);
    }
}

#[test]
fn the_actions_allow_exec_input_runs_the_fix_the_failing_test_recipe() {
    if !crate::suite::shell::confinable() {
        return;
    }
    let ws = Workspace::new();
    ws.write("root/calc.py", "def add(a, b):\n    return a - b\n");
    let test = ws.write(
        "root/test.sh",
        // -B: no __pycache__ among the changed files, whatever
        // PYTHONDONTWRITEBYTECODE the machine has.
        "#!/bin/sh\npython3 -B -c 'from calc import add; assert add(2, 2) == 4' && echo PASS\n",
    );
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&test, std::fs::Permissions::from_mode(0o755)).unwrap();
    let script = ws.script(json!([
        {"toolCalls": [tool_call("bash", json!({"command": "./test.sh"}))]},
        {"toolCalls": [tool_call("edit_file", json!({
            "path": "calc.py", "old": "a - b", "new": "a + b"
        }))]},
        {"toolCalls": [tool_call("bash", json!({"command": "./test.sh"}))]},
        {"text": "Fixed."}
    ]));
    let args = format!(
        "--faux-script '{}' --root root -t 60s --max-turns 4",
        script.display()
    );
    let run = run_action(
        &ws,
        &[
            ("INPUT_PROMPT", "./test.sh fails; make it pass."),
            ("INPUT_PROVIDER", "faux"),
            ("INPUT_ALLOW_WRITE", "true"),
            ("INPUT_ALLOW_EXEC", "true"),
            ("INPUT_ARGS", &args),
        ],
    );
    assert_eq!(run.output.status.code(), Some(0), "{:?}", run.output);
    let result = run.result();
    assert_eq!(result["status"], "ok", "{result}");
    assert_eq!(result["changedFiles"], json!(["calc.py"]));
    let events = std::fs::read_to_string(run.output("events-file")).unwrap();
    let ends: Vec<&str> = events
        .lines()
        .filter(|line| line.contains("\"tool_execution_end\"") && line.contains("\"bash\""))
        .collect();
    assert_eq!(ends.len(), 2, "{events}");
    assert!(ends[0].contains("\"exitCode\":1"), "{}", ends[0]);
    assert!(
        ends[1].contains("PASS") && ends[1].contains("\"confined\":true"),
        "{}",
        ends[1]
    );
}

#[test]
fn the_actions_install_steps_install_the_pinned_release_then_use_the_cache() {
    let ws = Workspace::new();
    let base = ws.path("release");
    let released = release(&base);

    // plan: the version input, else the action's tag, else latest.
    let plan = |env: &[(&str, &str)]| {
        let mut env = env.to_vec();
        env.extend([("RUNNER_OS", "Linux"), ("RUNNER_ARCH", "X64")]);
        let cache = ws.path("toolcache");
        env.push(("RUNNER_TOOL_CACHE", cache.to_str().unwrap()));
        let step = action_step(&ws, "setup.sh", &["plan"], &env);
        assert_eq!(step.output.status.code(), Some(0), "{:?}", step.output);
        step.outputs
    };
    let tagged = plan(&[("GITHUB_ACTION_REF", "v0.1.0")]);
    assert_eq!(tagged["version"], "v0.1.0");
    assert_eq!(tagged["cacheable"], "true");
    let on_main = plan(&[("GITHUB_ACTION_REF", "main")]);
    assert_eq!(on_main["version"], "latest");
    assert_eq!(on_main["cacheable"], "false");
    // Pinned to a commit: that commit's Cargo.toml version.
    let at_commit = plan(&[("GITHUB_ACTION_REF", &"0123456789abcdef".repeat(3)[..40])]);
    assert_eq!(at_commit["version"], format!("v{VERSION}"));
    assert_eq!(at_commit["cacheable"], "true");
    // A major tag is no release: latest.
    assert_eq!(plan(&[("GITHUB_ACTION_REF", "v1")])["version"], "latest");
    let pinned = plan(&[("INPUT_VERSION", VERSION), ("GITHUB_ACTION_REF", "main")]);
    assert_eq!(pinned["version"], format!("v{VERSION}"));
    let dir = &pinned["dir"];
    assert!(
        dir.ends_with(&format!("/leash/v{VERSION}/Linux-X64")),
        "{dir}"
    );

    // install: the release through install.sh, then the cached copy —
    // checked against the release's checksum every time, the binary
    // always unpacked from the checked archive.
    let base_url = format!("file://{}", base.display());
    let install = |expected: &str| {
        let step = action_step(
            &ws,
            "setup.sh",
            &["install"],
            &[
                ("LEASH_VERSION", &pinned["version"]),
                ("LEASH_DIR", dir),
                ("LEASH_INSTALL_BASE", &base_url),
                ("LEASH_INSTALL_OS", "Linux"),
                ("LEASH_INSTALL_ARCH", "x86_64"),
            ],
        );
        assert_eq!(step.output.status.code(), Some(0), "{:?}", step.output);
        let log = format!("{}{}", stdout(&step.output), stderr(&step.output));
        assert!(log.contains(expected), "{log}");
        let bin = PathBuf::from(&step.outputs["bin"]);
        assert_eq!(bin, Path::new(dir).join("leash"));
        assert_eq!(version_of(&bin), format!("leash {VERSION}"));
        assert_eq!(step.path, format!("{dir}\n"));
    };
    install(&format!(
        "leash v{VERSION} ({TARGET}) installed to {dir}/leash"
    ));
    let name = format!("leash-{VERSION}-{TARGET}.tar.gz");
    let cached = Path::new(dir).join("archive").join(&name);
    assert!(cached.is_file(), "the archive is kept for the cache");

    // A cache whose binary was swapped (a self-hosted runner's cache
    // outlives the job): the archive is checked, the binary unpacked
    // again; the release's archive is not downloaded (it is gone).
    let archive = std::fs::read(&released).unwrap();
    std::fs::remove_file(&released).unwrap();
    std::fs::write(Path::new(dir).join("leash"), "#!/bin/sh\necho pwned\n").unwrap();
    install(&format!(
        "leash: {name} from {dir}/archive, checked against the release's checksum"
    ));

    // A cached archive that does not match is downloaded again.
    std::fs::write(&released, &archive).unwrap();
    let mut tampered = archive.clone();
    tampered[100] ^= 0xff;
    std::fs::write(&cached, &tampered).unwrap();
    install(&format!(
        "leash: warning: {} does not match the release's checksum; downloading it again",
        cached.display()
    ));
    assert_eq!(std::fs::read(&cached).unwrap(), archive);
}

#[test]
fn every_input_of_the_action_reaches_its_steps_and_the_manual() {
    let action = std::fs::read_to_string(repo_file("action.yml")).unwrap();
    let manual = crate::support::docs::manual("github-action.md");
    let block = &action[action.find("\ninputs:\n").unwrap()..action.find("\noutputs:\n").unwrap()];
    let inputs: Vec<&str> = block
        .lines()
        .filter_map(|line| line.strip_prefix("  ")?.strip_suffix(':'))
        .filter(|key| !key.starts_with(' '))
        .collect();
    let expected = [
        "prompt",
        "prompt-file",
        "system",
        "model",
        "provider",
        "version",
        "args",
        "allow-write",
        "allow-exec",
        "command",
        "input",
        "output",
    ];
    for name in expected {
        assert!(inputs.contains(&name), "no input {name}: {inputs:?}");
    }
    for name in &inputs {
        // Used by a step: mapped to INPUT_* for the scripts, or read inline.
        assert!(
            action.contains(&format!("${{{{ inputs.{name} }}}}"))
                || action.contains(&format!("inputs.{name} ")),
            "input {name} reaches no step"
        );
        assert!(
            manual.contains(&format!("`{name}`")),
            "docs/src/github-action.md: no `{name}`"
        );
    }
    for output in [
        "reply",
        "exit-code",
        "result",
        "events-file",
        "results-file",
        "bin",
    ] {
        assert!(
            action.contains(&format!("\n  {output}:\n")),
            "no output {output}"
        );
        assert!(
            manual.contains(&format!("`{output}`")),
            "docs/src/github-action.md: no `{output}`"
        );
    }
}

#[test]
fn leash_action_bin_runs_the_action_on_a_given_build_without_installing() {
    let ws = Workspace::new();
    let bin = crate::support::run::bin();
    let bin = bin.to_str().unwrap();
    let plan = action_step(&ws, "setup.sh", &["plan"], &[("LEASH_ACTION_BIN", bin)]);
    assert_eq!(plan.output.status.code(), Some(0), "{:?}", plan.output);
    assert_eq!(plan.outputs["cacheable"], "false", "nothing to cache");
    let install = |given: &str| {
        action_step(
            &ws,
            "setup.sh",
            &["install"],
            &[
                ("LEASH_VERSION", "latest"),
                ("LEASH_DIR", ws.path("never").to_str().unwrap()),
                ("LEASH_ACTION_BIN", given),
            ],
        )
    };
    let step = install(bin);
    assert_eq!(step.output.status.code(), Some(0), "{:?}", step.output);
    assert_eq!(step.outputs["bin"], bin);
    let dir = Path::new(bin).parent().unwrap();
    assert_eq!(step.path, format!("{}\n", dir.display()));
    assert!(!ws.path("never").exists(), "nothing installed");
    // A relative path, or no leash there: the step fails, nothing on PATH.
    for given in ["target/debug/leash", "/nonexistent/leash"] {
        let step = install(given);
        assert_eq!(step.output.status.code(), Some(1), "{:?}", step.output);
        assert_eq!(step.errors().len(), 1, "{:?}", step.output);
        assert_eq!(step.path, "");
    }
}

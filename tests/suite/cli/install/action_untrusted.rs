//! The Action's untrusted text stays data (docs/src/github-action.md "What the Action
//! checks"): one test per route out of a step — the outputs, the log, the
//! job summary — each fed by the scripted model's hostile reply, file
//! name, error message or batch item, and the Action's own inputs. Run
//! through the Action's real scripts as action.yml runs them.

use super::action::{ActionRun, action_step, run_action};
use super::repo_file;
use crate::support::shell::{Workspace, tool_call};

use std::collections::BTreeSet;

use serde_json::{Value, json};

/// The reply of fixtures/action-hostile.json (the CI workflow runs the
/// Action on the same file): workflow commands, a forged delimiter and
/// output line, HTML and Markdown.
fn hostile_reply() -> String {
    let script = std::fs::read_to_string(repo_file("fixtures/action-hostile.json")).unwrap();
    let script: Value = serde_json::from_str(&script).unwrap();
    script["responses"][0]["text"].as_str().unwrap().to_owned()
}

/// Text that would be a workflow command, an output line and hidden
/// Markdown if it got out raw.
const HOSTILE: &str = "boom\n::add-mask::leash\n::stop-commands::pwned\r\n::set-output name=exit-code::0\n::add-path::/tmp/evil\nexit-code<<EOF\n<!-- hidden\n# leash: ok";

fn assert_no_command_but(run: &ActionRun, expected: &[&str]) {
    let commands = run.commands();
    assert_eq!(commands.len(), expected.len(), "{commands:?}");
    for (command, prefix) in commands.iter().zip(expected) {
        assert!(command.starts_with(prefix), "{command:?}");
    }
    assert_eq!((run.env.as_str(), run.path.as_str()), ("", ""));
}

/// No `<`, `[` or backtick in `summary` that Markdown would read as
/// such (each is backslash-escaped), outside the Action's own fence and
/// code span.
fn assert_no_raw_markup(summary: &str) {
    // The reply's fence is the Action's own: what is inside is text.
    let mut fenced = false;
    for line in summary.lines() {
        if line.starts_with("```") {
            fenced = !fenced;
            continue;
        }
        if fenced {
            continue;
        }
        let line = line
            .replace("status `ok`", "")
            .replace("status `error`", "");
        let bytes = line.as_bytes();
        for (at, byte) in bytes.iter().enumerate() {
            if matches!(byte, b'<' | b'[' | b'`') {
                assert!(at > 0 && bytes[at - 1] == b'\\', "raw {line:?}: {summary}");
            }
        }
    }
}

/// The names a GITHUB_OUTPUT file sets.
fn output_names(run: &ActionRun) -> BTreeSet<&str> {
    run.outputs.keys().map(String::as_str).collect()
}

/// The `name<<DELIM` heredocs of a GITHUB_OUTPUT file never end early:
/// a reply holding output lines and delimiters is one value.
#[test]
fn a_hostile_reply_is_one_output_and_writes_nothing_else() {
    let ws = Workspace::new();
    let reply = hostile_reply();
    let args = format!(
        "--faux-script '{}' -t 30s",
        repo_file("fixtures/action-hostile.json").display()
    );
    let run = run_action(
        &ws,
        &[
            ("INPUT_PROMPT", "Say it."),
            ("INPUT_PROVIDER", "faux"),
            ("INPUT_ARGS", &args),
        ],
    );
    assert_eq!(run.output.status.code(), Some(0), "{:?}", run.output);
    assert_eq!(
        output_names(&run),
        BTreeSet::from(["events-file", "exit-code", "reply", "result"])
    );
    assert_eq!(run.output("reply"), reply);
    assert_eq!(run.output("exit-code"), "0");
    assert_eq!(run.result()["reply"], reply.as_str());
    // The reply went to no stream the runner reads commands from.
    assert_no_command_but(&run, &[]);
}

/// An error message (the provider's words, in the result and the run_end
/// event) is one escaped annotation in the log.
#[test]
fn a_hostile_error_message_is_one_escaped_annotation() {
    let ws = Workspace::new();
    let script = ws.script(json!([{"text": "Half", "error": HOSTILE}]));
    let args = format!("--faux-script '{}'", script.display());
    let run = run_action(&ws, &[("INPUT_PROMPT", "x"), ("INPUT_ARGS", &args)]);
    assert_eq!(run.output.status.code(), Some(1), "{:?}", run.output);
    assert_no_command_but(
        &run,
        &["::error title=leash exited 1::leash: provider error: boom"],
    );
    let error = &run.commands()[0];
    assert!(
        error.contains("boom%0A::add-mask::leash%0A::stop-commands::pwned%0D%0A::set-output"),
        "{error}"
    );
    assert_eq!(run.output("exit-code"), "1");
    // In the summary: one quoted line, its punctuation escaped.
    let reason = run.summary.lines().find(|l| l.starts_with("> ")).unwrap();
    assert!(
        reason.contains("boom ::add-mask::leash ::stop-commands::pwned ::set-output"),
        "{reason}"
    );
    assert!(
        reason.contains(r"exit-code\<\<EOF \<!-- hidden \# leash: ok"),
        "{reason}"
    );
    assert_no_raw_markup(&run.summary);
}

/// The reply in the job summary: a fence longer than any run of
/// backticks in it, so nothing in it is HTML or Markdown, and what
/// follows it is the Action's own table.
#[test]
fn a_hostile_reply_is_fenced_in_the_job_summary() {
    let ws = Workspace::new();
    let reply = format!("{}\n``````````\n</pre>\u{202e}gnp.exe", hostile_reply());
    let script = ws.script(json!([{"text": reply}]));
    let args = format!("--faux-script '{}'", script.display());
    let run = run_action(&ws, &[("INPUT_PROMPT", "x"), ("INPUT_ARGS", &args)]);
    assert_eq!(run.output.status.code(), Some(0), "{:?}", run.output);
    assert_eq!(run.output("reply"), reply);
    let fence = "`".repeat(11);
    let shown = reply.replace('\u{202e}', "\u{fffd}");
    let expected = format!("### leash: ok\n\n{fence}text\n{shown}\n{fence}\n\n| turns |");
    assert!(run.summary.starts_with(&expected), "{}", run.summary);
    // After the fence: only the Action's table and lines.
    let after = &run.summary[expected.len()..];
    assert!(!after.contains('<') && !after.contains("# "), "{after}");
    assert!(after.contains("\n**Files changed:** none\n"), "{after}");
}

/// A file the model names: one escaped line in the summary.
#[test]
fn a_hostile_file_name_is_text_in_the_job_summary() {
    let ws = Workspace::new();
    std::fs::create_dir_all(ws.path("root")).unwrap();
    let name = "<img src=x onerror=alert(1)> `x` [a](b) *c*.md";
    let script = ws.script(json!([
        {"toolCalls": [tool_call("write_file", json!({"path": name, "content": "x\n"}))]},
        {"text": "Written."}
    ]));
    let args = format!(
        "--faux-script '{}' --root root --max-turns 3",
        script.display()
    );
    let run = run_action(
        &ws,
        &[
            ("INPUT_PROMPT", "x"),
            ("INPUT_ALLOW_WRITE", "true"),
            ("INPUT_ARGS", &args),
        ],
    );
    assert_eq!(run.output.status.code(), Some(0), "{:?}", run.output);
    assert_eq!(run.result()["changedFiles"], json!([name]));
    assert!(
        run.summary
            .contains(r"**Files changed:** \<img src=x onerror=alert(1)\> \`x\` \[a\](b) \*c\*.md"),
        "{}",
        run.summary
    );
    assert_no_raw_markup(&run.summary);
}

/// A batch's item ids and messages (the items file is the checkout's):
/// escaped in the summary, one annotation in the log.
#[test]
fn a_hostile_batch_item_is_text_in_the_summary_and_the_log() {
    let ws = Workspace::new();
    let id = "<b>x</b>|`y`";
    let item = json!({"id": id, "prompt": "one"});
    ws.write("items.jsonl", &format!("{item}\n"));
    let script = ws.script(json!([{"text": "Half", "error": HOSTILE}]));
    let args = format!("--faux-script '{}'", script.display());
    let run = run_action(
        &ws,
        &[
            ("INPUT_COMMAND", "batch"),
            ("INPUT_INPUT", "items.jsonl"),
            ("INPUT_PROVIDER", "faux"),
            ("INPUT_ARGS", &args),
        ],
    );
    assert_eq!(run.output.status.code(), Some(9), "{:?}", run.output);
    assert_no_command_but(&run, &["::error title=leash batch exited 9::leash: "]);
    let line = run
        .summary
        .lines()
        .find(|l| l.starts_with("- "))
        .unwrap_or_else(|| panic!("{}", run.summary));
    assert!(
        line.starts_with(r"- \<b\>x\</b\>\|\`y\`: error: provider error: boom ::add-mask::leash"),
        "{line}"
    );
    assert_no_raw_markup(&run.summary);
}

/// The Action's inputs are text too: a message quoting one is escaped,
/// `version` is `latest` or a semantic version, and free text starting
/// with `-` reaches leash as a value.
#[test]
fn the_actions_inputs_cannot_run_a_command_or_add_an_output() {
    let ws = Workspace::new();
    let injected = "\n::add-mask::leash\n::stop-commands::pwned\nx=y";
    // Messages that quote an input: args that do not split, a missing
    // prompt file, a bad allow-write or command.
    let unsplit = format!("-t 30s \"{injected}");
    for inputs in [
        vec![("INPUT_PROMPT", "x"), ("INPUT_ARGS", unsplit.as_str())],
        vec![("INPUT_PROMPT_FILE", injected)],
        vec![("INPUT_PROMPT", "x"), ("INPUT_ALLOW_WRITE", injected)],
        vec![("INPUT_COMMAND", injected)],
        vec![("INPUT_COMMAND", "batch"), ("INPUT_INPUT", injected)],
    ] {
        let run = run_action(&ws, &inputs);
        assert_eq!(run.output.status.code(), Some(2), "{:?}", run.output);
        assert_no_command_but(&run, &["::error::leash action: "]);
        assert!(
            run.commands()[0].contains("%0A::add-mask::leash%0A::stop-commands::pwned%0Ax=y"),
            "{:?}",
            run.commands()
        );
        assert!(run.outputs.is_empty(), "{:?}", run.outputs);
    }

    // `version`: latest or a semantic version; nothing else becomes a
    // path or an output.
    let plan = |version: &str| {
        action_step(
            &ws,
            "setup.sh",
            &["plan"],
            &[
                ("INPUT_VERSION", version),
                ("RUNNER_TOOL_CACHE", "/opt/hostedtoolcache"),
            ],
        )
    };
    for bad in [
        "v1.2.3\ndir=/tmp/evil",
        "v1.2.3/../../../tmp",
        "main",
        "v1",
        "../v1.2.3",
        "v1.2.3\n::add-mask::leash",
    ] {
        let run = plan(bad);
        assert_eq!(
            run.output.status.code(),
            Some(1),
            "{bad:?}: {:?}",
            run.output
        );
        assert_no_command_but(
            &run,
            &["::error::leash action: version must be latest or a release such as v1.2.3, not '"],
        );
        assert!(run.outputs.is_empty(), "{bad:?}: {:?}", run.outputs);
    }
    for (good, version) in [
        ("latest", "latest"),
        ("1.2.3", "v1.2.3"),
        ("v0.2.0-rc.1+build.5", "v0.2.0-rc.1+build.5"),
    ] {
        let run = plan(good);
        assert_eq!(run.output.status.code(), Some(0), "{:?}", run.output);
        assert_eq!(run.outputs["version"], version);
        assert_eq!(
            run.outputs["dir"],
            format!("/opt/hostedtoolcache/leash/{version}/os-arch")
        );
    }
    // The install step holds its version to the same rule.
    let run = action_step(
        &ws,
        "setup.sh",
        &["install"],
        &[
            ("LEASH_VERSION", "v1.2.3\n::add-mask::leash"),
            ("LEASH_DIR", ws.path("cache").to_str().unwrap()),
        ],
    );
    assert_eq!(run.output.status.code(), Some(1), "{:?}", run.output);
    assert_no_command_but(&run, &["::error::leash action: version must be"]);
    assert!(!ws.path("cache").exists());

    // A system message written as a Markdown list is the system message.
    let system = "- Read the file first.\n- Never invent its contents.";
    let script = ws.script(json!([{"text": "ok"}]));
    let transcript = ws.path("transcript.jsonl");
    let args = format!(
        "--faux-script '{}' --transcript '{}'",
        script.display(),
        transcript.display()
    );
    let run = run_action(
        &ws,
        &[
            ("INPUT_PROMPT", "-x"),
            ("INPUT_SYSTEM", system),
            ("INPUT_MODEL", "-m"),
            ("INPUT_ARGS", &args),
        ],
    );
    assert_eq!(run.output.status.code(), Some(0), "{:?}", run.output);
    let text = std::fs::read_to_string(&transcript).unwrap();
    let session: Value = serde_json::from_str(text.lines().next().unwrap()).unwrap();
    assert_eq!(session["system"], system);
    assert_eq!(session["model"], "-m");
    let user: Value = serde_json::from_str(text.lines().nth(1).unwrap()).unwrap();
    assert_eq!(user["content"][0]["text"], "-x");
}

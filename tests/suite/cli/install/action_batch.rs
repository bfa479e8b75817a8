//! The GitHub Action's other commands (docs/src/batch.md "Fan-out: leash batch", the
//! Actions matrix): `command: batch` runs `leash batch` over the `input`
//! file into the `output` file, with the batch's summary as outputs and
//! in the job summary; `command: install` only installs leash (the merge
//! job). Run by bash as action.yml runs them, leash on the scripted model.

use super::action::run_action;
use super::repo_file;
use crate::support::shell::Workspace;

use serde_json::{Value, json};

/// Three items, ids `a`, `b`, `c`.
fn items(ws: &Workspace) {
    ws.write(
        "items.jsonl",
        "{\"id\": \"a\", \"prompt\": \"one\"}\n{\"id\": \"b\", \"prompt\": \"two\"}\n{\"id\": \"c\", \"prompt\": \"three\"}\n",
    );
}

fn lines(text: &str) -> Vec<Value> {
    text.lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect()
}

#[test]
fn the_actions_batch_command_runs_a_shard_into_its_output_file() {
    let ws = Workspace::new();
    items(&ws);
    let script = ws.script(json!([{"text": "done"}]));
    let args = format!("--faux-script '{}' --shard 0/2 -t 30s", script.display());
    let run = run_action(
        &ws,
        &[
            ("INPUT_COMMAND", "batch"),
            ("INPUT_INPUT", "items.jsonl"),
            ("INPUT_OUTPUT", "shard-0.jsonl"),
            ("INPUT_PROVIDER", "faux"),
            ("INPUT_ARGS", &args),
        ],
    );
    assert_eq!(run.output.status.code(), Some(0), "{:?}", run.output);
    assert!(run.errors().is_empty(), "{:?}", run.errors());
    assert_eq!(run.output("exit-code"), "0");
    let results = std::fs::read_to_string(ws.path("shard-0.jsonl")).unwrap();
    let results = lines(&results);
    let ids: Vec<&str> = results.iter().map(|r| r["id"].as_str().unwrap()).collect();
    assert_eq!(ids, ["a", "c"], "shard 0 of 2: indexes 0 and 2");
    assert!(results.iter().all(|r| r["reply"] == "done"));
    assert_eq!(run.output("results-file"), "shard-0.jsonl");
    let summary: Value = serde_json::from_str(run.output("result")).unwrap();
    assert_eq!(summary["type"], "batch_end");
    assert_eq!(
        (summary["total"].as_u64(), summary["ok"].as_u64()),
        (Some(2), Some(2))
    );
    assert!(
        run.summary.starts_with("### leash batch: ok\n"),
        "{}",
        run.summary
    );
    assert!(run.summary.contains("| 2 | 2 | 0 | 0 |"), "{}", run.summary);
    // The stderr of the batch (progress, summary) is the events file.
    let events = std::fs::read_to_string(run.output("events-file")).unwrap();
    assert!(events.contains("\"type\":\"batch_end\""), "{events}");
}

#[test]
fn a_failed_batch_fails_the_step_naming_the_failed_items() {
    let ws = Workspace::new();
    items(&ws);
    let broken = ws.script(json!([{"text": "Half", "error": "upstream exploded"}]));
    let args = format!("--faux-script '{}'", broken.display());
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
    assert_eq!(run.output("exit-code"), "9");
    let errors = run.errors();
    assert_eq!(errors.len(), 1, "{errors:?}");
    assert!(
        errors[0].starts_with("::error title=leash batch exited 9::leash: "),
        "{errors:?}"
    );
    // The default output file, every id in it.
    assert_eq!(run.output("results-file"), "leash-batch.jsonl");
    let results = std::fs::read_to_string(ws.path("leash-batch.jsonl")).unwrap();
    assert_eq!(lines(&results).len(), 3);
    assert!(
        run.summary.starts_with("### leash batch failed (exit 9)\n"),
        "{}",
        run.summary
    );
    assert!(
        run.summary
            .contains(r"- b: error: provider error: upstream exploded"),
        "{}",
        run.summary
    );
}

#[test]
fn the_actions_commands_check_their_inputs() {
    let ws = Workspace::new();
    items(&ws);
    // install: the install steps ran; the run step runs nothing.
    let run = run_action(&ws, &[("INPUT_COMMAND", "install")]);
    assert_eq!(run.output.status.code(), Some(0), "{:?}", run.output);
    assert!(run.outputs.is_empty(), "{:?}", run.outputs);
    for (inputs, expected) in [
        (
            vec![("INPUT_COMMAND", "go")],
            "command must be run, batch or install, not 'go'",
        ),
        (
            vec![("INPUT_COMMAND", "batch")],
            "set the input input: the JSONL file of items (command: batch)",
        ),
        (
            vec![("INPUT_COMMAND", "batch"), ("INPUT_INPUT", "missing.jsonl")],
            "input 'missing.jsonl' does not exist",
        ),
        (
            vec![
                ("INPUT_COMMAND", "batch"),
                ("INPUT_INPUT", "items.jsonl"),
                ("INPUT_PROMPT", "x"),
            ],
            "prompt and prompt-file are for command: run; each batch item has its own prompt",
        ),
        (
            vec![
                ("INPUT_COMMAND", "batch"),
                ("INPUT_INPUT", "items.jsonl"),
                ("INPUT_OUTPUT", "items.jsonl"),
            ],
            "output 'items.jsonl' exists already; name a new file (one from the checkout could forge results)",
        ),
    ] {
        let run = run_action(&ws, &inputs);
        assert_eq!(run.output.status.code(), Some(2), "{:?}", run.output);
        assert_eq!(run.errors(), [format!("::error::leash action: {expected}")]);
    }
}

#[test]
fn the_manuals_matrix_recipe_uses_the_action_for_every_leash_step() {
    let manual = crate::support::docs::manual("batch.md");
    let start = manual.find("A GitHub Actions matrix").unwrap();
    let recipe = &manual[start..start + manual[start..].find("\n```\n").unwrap()];
    assert!(!recipe.contains("install.sh"), "{recipe}");
    assert!(!recipe.contains("~/.local/bin/leash batch "), "{recipe}");
    assert!(recipe.contains("command: batch"), "{recipe}");
    assert!(recipe.contains("command: install"), "{recipe}");
    let action = std::fs::read_to_string(repo_file("action.yml")).unwrap();
    assert!(
        action.contains("\n  bin:\n"),
        "the install's bin as an output"
    );
}

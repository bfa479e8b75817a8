//! The Action in a matrix (docs/src/github-action.md "In a matrix",
//! docs/src/batch.md "Fan-out: leash batch"): every matrix recipe keeps
//! the other cells running when one fails (`fail-fast: false`) and names
//! each cell's artifacts after the cell, and the Action's default
//! artifact name carries the cell's index. The plain-run recipe's cells
//! run through action/run.sh as action.yml runs them, on the scripted
//! model.

use super::action::run_action;
use super::repo_file;
use crate::support::docs::{manual, recipe};
use crate::support::shell::{Workspace, tool_call};

use serde_json::json;

/// The YAML block of batch.md's Actions matrix recipe.
fn batch_matrix_recipe() -> String {
    let page = manual("batch.md");
    let start = page.find("A GitHub Actions matrix").unwrap();
    let block = &page[start..];
    let open = block.find("```yaml\n").unwrap() + 8;
    block[open..open + block[open..].find("```").unwrap()].to_owned()
}

#[test]
fn every_matrix_recipe_keeps_the_other_cells_running_and_names_artifacts_per_cell() {
    for yaml in [recipe("action-matrix"), batch_matrix_recipe()] {
        assert!(yaml.contains("fail-fast: false"), "{yaml}");
        let names: Vec<&str> = yaml.lines().filter(|l| l.contains("name:")).collect();
        assert!(!names.is_empty(), "{yaml}");
        for line in names {
            assert!(
                line.contains("${{ matrix."),
                "a name shared by every cell: {line}"
            );
        }
    }
    // The manual says why, next to each recipe.
    for page in ["github-action.md", "batch.md"] {
        let text = manual(page).replace('\n', " ");
        assert!(
            text.contains("`fail-fast: false`") && text.contains("cancels"),
            "{page} does not say why fail-fast is off"
        );
    }
    // The Action's own default name differs per cell.
    let action = std::fs::read_to_string(repo_file("action.yml")).unwrap();
    let upload = &action[action.find("uses: actions/upload-artifact@").unwrap()..];
    let name = upload
        .lines()
        .find(|l| l.trim().starts_with("name:"))
        .unwrap();
    assert!(name.contains("strategy.job-index"), "{name}");
}

/// The `with:` inputs of the recipe's leash step, for the cell `cell`
/// (`${{ matrix.dir }}` replaced), as the `INPUT_*` variables
/// action.yml maps them to.
fn cell_inputs(yaml: &str, cell: &str) -> Vec<(String, String)> {
    let lines: Vec<&str> = yaml.lines().collect();
    let uses = lines
        .iter()
        .position(|l| l.trim_start().starts_with("- uses: leash-cli/leash@"))
        .unwrap();
    let with = uses
        + lines[uses..]
            .iter()
            .position(|l| l.trim() == "with:")
            .unwrap();
    let indent = |l: &str| l.len() - l.trim_start().len();
    let depth = indent(lines[with]);
    lines[with + 1..]
        .iter()
        .take_while(|l| indent(l) > depth)
        .map(|l| {
            let (key, value) = l.trim().split_once(": ").unwrap();
            let value = value
                .replace("${{ matrix.dir }}", cell)
                .replace("${{ secrets.OPENAI_API_KEY }}", "sk-matrix-test-key");
            (
                format!("INPUT_{}", key.to_uppercase().replace('-', "_")),
                value,
            )
        })
        .collect()
}

#[test]
fn the_plain_run_matrix_recipe_runs_each_cell_on_its_own_directory() {
    let yaml = recipe("action-matrix");
    let ws = Workspace::new();
    ws.write("src/lib.rs", "fn mian() {}\n");
    ws.write("docs/guide.md", "Teh guide.\n");
    let script = ws.script(json!([
        {"toolCalls": [tool_call("list_dir", json!({}))]},
        {"text": "none"}
    ]));
    for (cell, file) in [("src", "lib.rs"), ("docs", "guide.md")] {
        let mut inputs = cell_inputs(&yaml, cell);
        inputs.push(("LEASH_FAUX_SCRIPT".into(), script.to_str().unwrap().into()));
        let inputs: Vec<(&str, &str)> = inputs
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .collect();
        let run = run_action(&ws, &inputs);
        assert_eq!(
            run.output.status.code(),
            Some(0),
            "{cell}: {:?}",
            run.output
        );
        let events = std::fs::read_to_string(run.output("events-file")).unwrap();
        assert!(events.contains(file), "{cell}: {events}");
    }
}

//! The manual's reference held to the code it describes, so neither can
//! change alone (docs/src/usage.md "Usage", docs/src/exit-codes.md "Exit
//! codes"): every flag of the clap definition, as `leash --help` prints
//! it, has a row in the usage table, and the exit-code table is the exit
//! table of the code, code by code and name by name.

use std::collections::BTreeSet;

use super::help::help;
use super::install::repo_file;

/// `leash --help` at a width that never wraps a flag's line.
fn long_help() -> String {
    help("--help", 100)
}

/// The long flags of the help's option lines (`  -m, --model <NAME>`).
fn flags_of_help(help: &str) -> BTreeSet<String> {
    help.lines()
        .filter(|line| line.starts_with("  -") || line.starts_with("      --"))
        .flat_map(|line| {
            line.split([' ', ',', '[', '<', '='])
                .filter(|word| word.starts_with("--") && word.len() > 2)
                .map(str::to_owned)
                .collect::<Vec<_>>()
        })
        .collect()
}

/// The flags the first cell of each row of the usage table names (a
/// `\|` inside a cell is a value's separator, not the cell's end).
fn flags_of_usage_table(page: &str) -> BTreeSet<String> {
    page.lines()
        .filter(|line| line.starts_with("| `"))
        .map(|line| line.replace("\\|", "/"))
        .filter_map(|line| line.split('|').nth(1).map(str::to_owned))
        .flat_map(|cell| {
            cell.split(['`', ' ', ',', '[', '='])
                .filter(|word| word.starts_with("--") && word.len() > 2)
                .map(str::to_owned)
                .collect::<Vec<_>>()
        })
        .collect()
}

/// `(code, name)` of each row of the help's exit table.
fn exits_of_help(help: &str) -> Vec<(String, String)> {
    help.lines()
        .skip_while(|line| !line.starts_with("Exit codes:"))
        .skip(1)
        .take_while(|line| !line.trim().is_empty())
        .filter_map(|line| {
            let mut words = line.split_whitespace();
            let code = words.next()?;
            let name = words.next()?;
            code.parse::<u8>()
                .ok()
                .map(|_| (code.to_owned(), name.to_owned()))
        })
        .collect()
}

/// `(code, name)` of each row of the manual's exit-code table.
fn exits_of_page(page: &str) -> Vec<(String, String)> {
    page.lines()
        .filter_map(|line| {
            let cells: Vec<&str> = line.split('|').map(str::trim).collect();
            let code = cells.get(1)?;
            let name = cells.get(2)?.trim_matches('`');
            code.parse::<u8>()
                .ok()
                .map(|_| ((*code).to_owned(), name.to_owned()))
        })
        .collect()
}

#[test]
fn every_flag_of_the_command_has_a_row_in_the_usage_table() {
    let help = flags_of_help(&long_help());
    assert!(help.len() > 40, "the help's flags were not read: {help:?}");
    assert!(help.contains("--max-turns") && help.contains("--version"));
    let page = std::fs::read_to_string(repo_file("docs/src/usage.md")).unwrap();
    let table = flags_of_usage_table(&page);
    let missing: Vec<&String> = help.difference(&table).collect();
    assert!(
        missing.is_empty(),
        "flags of `leash --help` with no row in docs/src/usage.md: {missing:?}"
    );
    let unknown: Vec<&String> = table.difference(&help).collect();
    assert!(
        unknown.is_empty(),
        "rows of docs/src/usage.md for flags leash does not have: {unknown:?}"
    );
}

#[test]
fn the_exit_code_page_is_the_codes_exit_table() {
    let help = exits_of_help(&long_help());
    assert!(
        help.len() >= 12,
        "the help's exit table was not read: {help:?}"
    );
    let page = std::fs::read_to_string(repo_file("docs/src/exit-codes.md")).unwrap();
    assert_eq!(exits_of_page(&page), help);
}

//! `leash -h` is one screen of an 80×24 terminal; `--help` wraps to the
//! terminal too, and neither breaks a word.

use super::workspace;

/// What one screen is: an 80×24 terminal, less the line of the prompt
/// that typed `leash -h`.
const SCREEN_COLUMNS: usize = 80;
const SCREEN_LINES: usize = 23;

/// `leash FLAG` (`-h`, `--help`) on a terminal `columns` wide.
pub(super) fn help(flag: &str, columns: usize) -> String {
    let output = workspace()
        .leash()
        .arg(flag)
        .env("COLUMNS", columns.to_string())
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0), "{output:?}");
    String::from_utf8(output.stdout).unwrap()
}

fn too_wide(text: &str, columns: usize) -> Vec<&str> {
    text.lines()
        .filter(|line| line.chars().count() > columns)
        .collect()
}

/// The words of `text` (split at white space), in order.
fn words(text: &str) -> Vec<&str> {
    text.split_whitespace().collect()
}

#[test]
fn short_help_is_one_screen_at_80_columns() {
    let text = help("-h", SCREEN_COLUMNS);
    assert_eq!(
        too_wide(&text, SCREEN_COLUMNS),
        Vec::<&str>::new(),
        "{text}"
    );
    let lines = text.lines().count();
    assert!(lines <= SCREEN_LINES, "{lines} lines:\n{text}");
    // The essentials are there, and where the rest is.
    for needle in [
        "--system",
        "--model",
        "--timeout",
        "--max-turns",
        "--tools",
        "--root",
        "--allow-write",
        "--quiet",
        "--output",
        "0 ok",
        "124 timeout",
        "leash --help",
        "config",
        "schema KIND",
    ] {
        assert!(text.contains(needle), "-h lacks {needle}:\n{text}");
    }
}

#[test]
fn help_is_wrapped_at_word_boundaries_to_the_terminal() {
    for flag in ["-h", "--help"] {
        let narrow = help(flag, SCREEN_COLUMNS);
        let wide = help(flag, 100);
        assert_eq!(
            too_wide(&narrow, SCREEN_COLUMNS),
            Vec::<&str>::new(),
            "{flag}:\n{narrow}"
        );
        // Wrapping moves words to the next line; it never cuts one.
        assert_eq!(words(&narrow), words(&wide), "{flag}");
    }
}

#[test]
fn long_help_keeps_every_flag_and_the_exit_table() {
    let text = help("--help", SCREEN_COLUMNS);
    for needle in [
        "--mcp-config",
        "--hook-timeout",
        "--price",
        "--transcript",
        "--stdin",
        "124  timeout",
        "Settings, layer by layer",
        "completions SHELL",
    ] {
        assert!(text.contains(needle), "--help lacks {needle}:\n{text}");
    }
}

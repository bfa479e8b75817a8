//! The help texts around clap's flag lines: `-h` is one screen of an 80×24
//! terminal (the essential flags, the commands in the usage, the exit
//! codes by name), `--help` the whole reference (every flag, the commands,
//! the exit table, where settings come from). clap wraps its own lines to
//! the terminal (`wrap_help`); the pieces here that clap cannot wrap well
//! (tables with a hanging indent) are wrapped at [`HELP_WIDTH`].
//!
//! Nothing here parses or decides; it must never hold an exit-code
//! literal (the codes come from the one exit table).

use crate::cli::names::COMMANDS;
use crate::exit::exit_lines;

/// The width the help's own tables are wrapped at: a standard terminal.
pub const HELP_WIDTH: usize = 80;

/// The flags `-h` shows, by clap id; every other flag is in `--help` only,
/// so `-h` stays one screen however many flags leash grows.
pub const ESSENTIAL_FLAGS: [&str; 9] = [
    "system",
    "model",
    "timeout",
    "max_turns",
    "tools",
    "root",
    "allow_write",
    "quiet",
    "output",
];

/// Where settings come from: the second part of the `--help` footer, and
/// the man page's ENVIRONMENT. One paragraph: clap wraps it to the terminal.
pub const SETTINGS_HELP: &str = "\
Settings, layer by layer, the first layer that sets one wins: the flag; the environment \
(LEASH_<FLAG>, e.g. LEASH_MAX_TURNS, for every flag but -p, -q, --follow-up, --resume, \
--mcp, --stdin and --no-stdin; keys in LEASH_API_KEY, OPENAI_API_KEY, ANTHROPIC_API_KEY; OPENAI_BASE_URL, \
ANTHROPIC_BASE_URL); ./.env (--env-file PATH, --no-env-file), read as data for the keys, \
base URLs, LEASH_PROVIDER, LEASH_MODEL and LEASH_API only; \
$XDG_CONFIG_HOME/leash/config.toml (else ~/.config/leash/config.toml; --config FILE, \
--no-config), with the same names in lower case (max-turns = 8, api-key = \"...\"); the \
default. --bare: flags and the real environment only (no .env, no config file). The key is never sent to a \
base URL from a lower layer than the key's unless --trust-base-url. \
`leash config [OPTIONS]` shows what a run would use and where each value came from.";

/// The second line of `-h`'s usage: every command, by name.
pub const COMMANDS_USAGE: &str =
    "leash batch|config|completions SHELL|man|schema KIND|help [COMMAND]";

/// The footer of `-h`: every exit code by name, and where the rest is.
pub fn short_help_footer() -> String {
    let lines = exit_lines();
    let mut footer = String::from("Exit codes:");
    let mut column = footer.len();
    for (i, (code, name, _)) in lines.iter().enumerate() {
        // A code and its name stay on one line.
        let end = if i + 1 == lines.len() { "." } else { "," };
        let piece = format!("{code} {name}{end}");
        if column + 1 + piece.len() > HELP_WIDTH {
            footer.push('\n');
            column = 0;
        } else {
            footer.push(' ');
            column += 1;
        }
        footer.push_str(&piece);
        column += piece.len();
    }
    footer.push_str("\nleash --help: every flag, what each code means, where settings come from.");
    footer
}

/// The footer of `--help`: the exit table, then where settings come from.
pub fn help_footer() -> String {
    let mut footer = String::from("Exit codes:\n");
    for (code, name, meaning) in exit_lines() {
        let line = format!("    {code:<5}{name:<16}{meaning}");
        footer.push_str(&wrap(&line, HELP_WIDTH, 25));
        footer.push('\n');
    }
    footer.push('\n');
    footer.push_str(SETTINGS_HELP);
    footer
}

/// The commands, for the top of `--help`, each summary beside its name.
pub fn commands_help() -> String {
    let mut text = String::from(
        "Commands (only as the first argument; `leash -- man` sends \"man\" as the prompt):",
    );
    for (command, args, about) in COMMANDS {
        let usage = format!("{} {args}", command.name());
        text.push('\n');
        text.push_str(&wrap(&format!("  {usage:<19}{about}"), HELP_WIDTH, 21));
    }
    text
}

/// `text` (one line) broken at spaces into lines of at most `width`
/// characters, the lines after the first indented by `indent`. A word
/// longer than a line stays whole.
pub fn wrap(text: &str, width: usize, indent: usize) -> String {
    let mut out = String::new();
    let mut column = 0;
    // Whether the current line holds a word yet: only then may it break.
    let mut placed = false;
    let mut rest = text;
    while !rest.is_empty() {
        let after = rest.trim_start_matches(' ');
        let gap = rest.len() - after.len();
        let (word, tail) = after.split_at(after.find(' ').unwrap_or(after.len()));
        let length = word.chars().count();
        if placed && column + gap + length > width {
            out.push('\n');
            out.push_str(&" ".repeat(indent));
            column = indent;
        } else {
            out.push_str(&rest[..gap]);
            column += gap;
        }
        out.push_str(word);
        column += length;
        placed = !word.is_empty();
        rest = tail;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wrap_breaks_at_spaces_with_a_hanging_indent() {
        assert_eq!(wrap("  ab cd ef", 7, 4), "  ab cd\n    ef");
        assert_eq!(wrap("abcdefgh ij", 4, 0), "abcdefgh\nij");
        assert_eq!(wrap("short", 80, 2), "short");
        assert_eq!(wrap("  a    b c", 8, 6), "  a    b\n      c");
    }

    #[test]
    fn the_tables_fit_the_help_width() {
        for text in [short_help_footer(), help_footer(), commands_help()] {
            for line in text.lines().filter(|line| !line.starts_with("Settings")) {
                assert!(line.chars().count() <= HELP_WIDTH, "{line}");
            }
        }
    }
}

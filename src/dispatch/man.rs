//! `leash man`: the man page, from the same clap definition as `--help`
//! (clap_mangen renders the title, synopsis and options), with the
//! sections a man page has and clap does not: the command rule, exit
//! status, environment and files. The exit codes come from the one table
//! `--help` prints, so the two cannot disagree.

use std::io::{self, Write};

use clap_mangen::Man;

use crate::cli::help::SETTINGS_HELP;
use crate::cli::{COMMANDS, command_tree};
use crate::config::file::variable_keys;
use crate::exit::exit_lines;

/// Writes the page as roff.
pub fn render(out: &mut dyn Write) -> io::Result<()> {
    let man = Man::new(command_tree()).date(env!("CARGO_PKG_VERSION"));
    man.render_title(out)?;
    man.render_name_section(out)?;
    man.render_synopsis_section(out)?;
    section(out, "DESCRIPTION")?;
    paragraph(
        out,
        "leash runs one bounded agent run: one prompt, one system message, a model that may \
         call tools, and an exit code that says how the run ended. The run's events go to \
         stderr; the final reply, and nothing else, to stdout.",
    )?;
    paragraph(
        out,
        "A command is recognised only as the first argument; any other word is the prompt, \
         and `leash -- man` sends \"man\" as the prompt.",
    )?;
    man.render_options_section(out)?;
    section(out, "COMMANDS")?;
    for (command, args, about) in COMMANDS {
        item(out, &format!("{} {args}", command.name()), about)?;
    }
    section(out, "EXIT STATUS")?;
    for (code, status, meaning) in exit_lines() {
        item(out, &format!("{code} {status}"), &meaning)?;
    }
    section(out, "ENVIRONMENT")?;
    paragraph(out, &SETTINGS_HELP.replace('\n', " "))?;
    item(
        out,
        "NO_COLOR",
        "When set and not empty, --color auto prints no colour.",
    )?;
    section(out, "FILES")?;
    item(
        out,
        "$XDG_CONFIG_HOME/leash/config.toml, ~/.config/leash/config.toml",
        &format!(
            "The optional config file; keys are the long flag names (model, max-turns, ...) \
             and {}.",
            variable_keys().join(", ")
        ),
    )?;
    item(
        out,
        ".env",
        "Read from the working directory only, never a parent (or the file of --env-file; \
         none with --no-env-file or LEASH_NO_ENV_FILE=1), as data: never exported to leash's \
         environment or any child. It may set the keys, the base URLs, LEASH_PROVIDER, \
         LEASH_MODEL and LEASH_API; any other LEASH_ variable in it is a usage error, any \
         other name is ignored. It sits under the environment: a variable of the environment \
         wins over any variable of .env for the same setting (OPENAI_BASE_URL over \
         LEASH_BASE_URL). A key is never sent to a base URL from a lower layer than the key's \
         unless --trust-base-url.",
    )?;
    man.render_version_section(out)
}

fn section(out: &mut dyn Write, title: &str) -> io::Result<()> {
    writeln!(out, ".SH \"{title}\"")
}

fn paragraph(out: &mut dyn Write, text: &str) -> io::Result<()> {
    writeln!(out, ".PP\n{}", escape(text))
}

fn item(out: &mut dyn Write, tag: &str, text: &str) -> io::Result<()> {
    writeln!(out, ".TP\n\\fB{}\\fR\n{}", escape(tag.trim()), escape(text))
}

/// Text as roff: backslashes and hyphens escaped, no line taken for a
/// request.
fn escape(text: &str) -> String {
    let escaped = text.replace('\\', "\\e").replace('-', "\\-");
    match escaped.starts_with(['.', '\'']) {
        true => format!("\\&{escaped}"),
        false => escaped,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_page_has_every_section_and_every_exit_code() {
        let mut page = Vec::new();
        render(&mut page).unwrap();
        let page = String::from_utf8(page).unwrap();
        for section in [
            ".TH leash 1",
            ".SH NAME",
            ".SH SYNOPSIS",
            ".SH OPTIONS",
            ".SH \"COMMANDS\"",
            ".SH \"EXIT STATUS\"",
            ".SH \"ENVIRONMENT\"",
            ".SH \"FILES\"",
        ] {
            assert!(page.contains(section), "{section} missing");
        }
        for code in [
            "\\fB0 ok\\fR",
            "\\fB124 timeout\\fR",
            "\\fB3 turn_limit\\fR",
        ] {
            assert!(page.contains(code), "{code} missing");
        }
        assert!(page.contains("LEASH_MAX_TURNS"));
    }
}

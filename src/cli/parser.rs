//! The parser of a run, as `-h` shows it (the essential flags only, no
//! environment variables), and the one test of whether a flag takes a
//! value — shared by the run, the batch and the refused command line.

use clap::{Command, CommandFactory};

use super::Cli;
use super::help::ESSENTIAL_FLAGS;

/// The parser of a run. `-h` shows the [`ESSENTIAL_FLAGS`]; `--help`
/// lists the commands first, then every flag. The `LEASH_*` names stay out
/// of the flag lines (the footer states the rule).
pub fn run_command() -> Command {
    Cli::command()
        .mut_args(|arg| {
            let essential = ESSENTIAL_FLAGS.contains(&arg.get_id().as_str());
            arg.hide_env(true).hide_short_help(!essential)
        })
        .help_template(
            "{about-with-newline}\n{usage-heading} {usage}\n\n{before-help}{all-args}{after-help}",
        )
}

/// Whether `flag` (`--long` or `-s`, no value attached) is one of
/// `command`'s options that take a value: the word after it is that value.
pub fn takes_value(command: &Command, flag: &str) -> bool {
    let short = match flag.strip_prefix('-') {
        Some(rest) if !rest.starts_with('-') && rest.chars().count() == 1 => rest.chars().next(),
        _ => None,
    };
    let long = flag.strip_prefix("--");
    command.get_arguments().any(|arg| {
        arg.get_action().takes_values()
            && ((long.is_some() && long == arg.get_long())
                || (short.is_some() && short == arg.get_short()))
    })
}

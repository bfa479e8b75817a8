//! A command line clap refused, as the one `leash:` line that says why and
//! which knob to turn: the environment variable when a bad value came from
//! one, the missing argument with the values it takes, quotes for a prompt
//! of several words. clap's own message is kept whole (its detail lines
//! joined), never cut to its first line.
//!
//! Nothing here decides an exit code or writes anywhere.

use std::ffi::OsString;

use clap::Command;
use clap::error::{ContextKind, ContextValue, ErrorKind};

use crate::cli::parser::takes_value;
use crate::cli::peers::{peer_command_reason, peer_flag_reason};
use crate::cli::{command_name, command_tree, run_command};
use crate::config::layers::{Environment, Source};

/// clap's error in one line: the reason with its details, then its tips.
pub fn clap_reason(error: &clap::Error, args: &[OsString], env: &Environment) -> String {
    if let Some(reason) = peer_flag(error) {
        return reason;
    }
    if let Some(reason) = unquoted_prompt(error, args) {
        return reason;
    }
    let text = error.render().to_string();
    let mut lines = text.lines().map(str::trim).filter(|line| !line.is_empty());
    let first = lines.next().unwrap_or("invalid arguments");
    let mut reason = first.strip_prefix("error: ").unwrap_or(first).to_owned();
    let mut details: Vec<String> = Vec::new();
    let mut tips: Vec<&str> = Vec::new();
    for line in lines {
        if line.starts_with("Usage:") || line.starts_with("For more information") {
            break;
        }
        match line.strip_prefix("tip: ") {
            Some(tip) => tips.push(tip),
            None => details.push(detail(line, error.kind(), args)),
        }
    }
    if !details.is_empty() {
        reason = format!("{reason} {}", details.join(", "));
    }
    for tip in tips {
        reason.push_str("; ");
        reason.push_str(tip);
    }
    match from_the_environment(error, args, env) {
        Some(variable) => format!("env {variable}: {reason} (fix or unset {variable})"),
        None => format!("{reason} (leash --help lists the flags)"),
    }
}

/// A flag from a peer CLI (`--json`, `--verbose`, `--yolo`, …): the
/// line names leash's own flag for the job instead of clap's guess.
fn peer_flag(error: &clap::Error) -> Option<String> {
    if error.kind() != ErrorKind::UnknownArgument {
        return None;
    }
    let Some(ContextValue::String(word)) = error.get(ContextKind::InvalidArg) else {
        return None;
    };
    peer_flag_reason(word)
}

/// One detail line of clap's message: a missing argument gets the values
/// it takes; `[possible values: …]` reads as a clause.
fn detail(line: &str, kind: ErrorKind, args: &[OsString]) -> String {
    if let Some(values) = line
        .strip_prefix("[possible values: ")
        .and_then(|rest| rest.strip_suffix(']'))
    {
        return format!("(one of: {values})");
    }
    if kind == ErrorKind::MissingRequiredArgument
        && let Some(values) = values_of(&command_of(args), line)
    {
        return format!("{line} (one of: {values})");
    }
    line.to_owned()
}

/// The command `args` ran: a command's, or a run's.
fn command_of(args: &[OsString]) -> Command {
    match command_name(args) {
        Some(name) => command_tree()
            .find_subcommand(name.name())
            .cloned()
            .unwrap_or_else(run_command),
        None => run_command(),
    }
}

/// The values the argument shown as `shown` (`<KIND>`) takes, if it has a
/// fixed list.
fn values_of(command: &Command, shown: &str) -> Option<String> {
    let arg = command.get_arguments().find(|arg| {
        arg.get_value_names()
            .is_some_and(|names| names.iter().any(|name| format!("<{name}>") == shown))
    })?;
    let values: Vec<String> = arg
        .get_possible_values()
        .iter()
        .filter(|value| !value.is_hide_set())
        .map(|value| value.get_name().to_owned())
        .collect();
    (!values.is_empty()).then(|| values.join(", "))
}

/// The variable a refused value came from, when it came from the
/// environment rather than the command line (clap reads only the exported
/// variables; the `.env` and the config file name themselves elsewhere).
fn from_the_environment(
    error: &clap::Error,
    args: &[OsString],
    env: &Environment,
) -> Option<String> {
    if !matches!(
        error.kind(),
        ErrorKind::InvalidValue | ErrorKind::ValueValidation
    ) || command_name(args).is_some()
    {
        return None;
    }
    let Some(ContextValue::String(shown)) = error.get(ContextKind::InvalidArg) else {
        return None;
    };
    let long = shown.strip_prefix("--")?.split([' ', '=']).next()?;
    let command = run_command();
    let arg = command
        .get_arguments()
        .find(|arg| arg.get_long() == Some(long))?;
    let variable = arg.get_env()?.to_str()?.to_owned();
    let exported = matches!(env.non_empty(&variable), Some((_, Source::Env(_))));
    (exported && !flag_given(args, arg.get_long(), arg.get_short())).then_some(variable)
}

/// Whether `args` name the flag (`--long`, `--long=…`, `-s`, `-sVALUE`,
/// or `s` in a cluster of short flags) before any `--`.
fn flag_given(args: &[OsString], long: Option<&str>, short: Option<char>) -> bool {
    args.iter()
        .skip(1)
        .filter_map(|arg| arg.to_str())
        .take_while(|word| *word != "--")
        .any(|word| match word.strip_prefix("--") {
            Some(rest) => Some(rest.split('=').next().unwrap_or(rest)) == long,
            None => {
                word.len() > 1
                    && word.starts_with('-')
                    && short.is_some_and(|short| word[1..].contains(short))
            }
        })
}

/// `leash what does x do`: the second word of an unquoted prompt is an
/// unexpected argument. Say to quote it, with the words quoted; a peer's
/// command first (`leash exec "hi"`) is told the prompt is the argument.
fn unquoted_prompt(error: &clap::Error, args: &[OsString]) -> Option<String> {
    if error.kind() != ErrorKind::UnknownArgument || command_name(args).is_some() {
        return None;
    }
    let Some(ContextValue::String(word)) = error.get(ContextKind::InvalidArg) else {
        return None;
    };
    if word.starts_with('-') {
        return None;
    }
    let words = prompt_words(args);
    if let Some(reason) = peer_command_reason(&words) {
        return Some(reason);
    }
    Some(format!(
        "unexpected argument '{word}': a prompt of several words is one argument, so quote it: \
         leash [OPTIONS] \"{}\"",
        words.join(" ")
    ))
}

/// The words of `args` that are no flag and no flag's value.
fn prompt_words(args: &[OsString]) -> Vec<&str> {
    let command = run_command();
    let takes_value = |flag: &str| takes_value(&command, flag);
    let mut words = Vec::new();
    let mut rest = args.iter().skip(1).filter_map(|arg| arg.to_str());
    while let Some(word) = rest.next() {
        if word == "--" {
            words.extend(rest.by_ref());
            break;
        }
        if word.len() > 1 && word.starts_with('-') {
            if !word.contains('=') && takes_value(word) {
                let _ = rest.next();
            }
            continue;
        }
        words.push(word);
    }
    words
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(list: &[&str]) -> Vec<OsString> {
        list.iter().map(OsString::from).collect()
    }

    #[test]
    fn the_prompt_words_skip_flags_and_their_values() {
        let line = args(&["leash", "-q", "what", "-t", "5s", "does", "--root=.", "x"]);
        assert_eq!(prompt_words(&line), ["what", "does", "x"]);
        let line = args(&["leash", "a", "--", "-b", "c"]);
        assert_eq!(prompt_words(&line), ["a", "-b", "c"]);
    }

    #[test]
    fn a_flag_counts_in_every_spelling_before_the_separator() {
        let given = |list: &[&str]| flag_given(&args(list), Some("timeout"), Some('t'));
        assert!(given(&["leash", "--timeout", "5"]));
        assert!(given(&["leash", "--timeout=5"]));
        assert!(given(&["leash", "-t5"]));
        assert!(given(&["leash", "-qt", "5"]));
        assert!(!given(&["leash", "--", "--timeout"]));
        assert!(!given(&["leash", "--timeouts"]));
        assert!(!given(&["leash", "go"]));
    }
}

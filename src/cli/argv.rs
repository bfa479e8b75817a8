//! argv, read once. [`read`] is the one parse of the command line: it
//! yields the [`Invocation`] — a run, `leash config`, a print command,
//! clap's own help or version, or a refused command line with the output
//! formats it could still recover — and everything after it (the `.env`
//! choice, the layered parse, the usage error's formats) reads that one
//! result instead of parsing argv again.

use std::ffi::OsString;

use clap::error::ErrorKind;
use clap::{ArgMatches, Command, FromArgMatches, ValueEnum};

use super::Cli;
use super::batch::BatchInvocation;
use super::commands::{PrintCommand, command_tree};
use super::names::{CommandName, command_name};
use super::parser::{run_command, takes_value};
use crate::render::format::{EventsFormat, OutputFormat};

/// What the command line asks for.
#[derive(Debug)]
pub enum Invocation {
    /// `leash [OPTIONS] [PROMPT]`.
    Run(RunArgs),
    /// `leash batch …`: many runs, or the merge of shards' outputs.
    Batch(BatchInvocation),
    /// `leash config [OPTIONS] [PROMPT]`: the settings such a run would use.
    Config(RunArgs),
    /// `completions`, `man`, `schema`, `help` (`None`: nothing to print).
    Print(Option<PrintCommand>),
    /// `--help` or `--version`: clap prints them.
    Shown(clap::Error),
    /// A command line clap refused.
    Refused(Refused),
}

/// A run's command line, parsed.
#[derive(Debug)]
pub struct RunArgs {
    /// The program name, then the run's own words (`config` left out):
    /// what the layered parse puts the lower layers' flags in front of.
    pub words: Vec<OsString>,
    /// The run's parser, built once.
    pub command: Command,
    /// What the command line and the process environment set, as clap
    /// read them.
    pub matches: ArgMatches,
}

/// A refused command line: clap's error, the words it refused, and the
/// formats its failure is reported in (read without clap, best-effort).
#[derive(Debug)]
pub struct Refused {
    /// Why clap refused it.
    pub error: clap::Error,
    /// The whole command line, program name first.
    pub args: Vec<OsString>,
    /// `--events` (or `-q`) as the words and the environment give it.
    pub events: EventsFormat,
    /// `--output` as the words and the environment give it.
    pub output: OutputFormat,
}

/// Reads `args` (program name first) once; `env` looks up the process
/// environment, for the formats of a refused line.
pub fn read(args: Vec<OsString>, env: &dyn Fn(&str) -> Option<String>) -> Invocation {
    match command_name(&args) {
        None => match RunArgs::parse(args.clone()) {
            Ok(run) => Invocation::Run(run),
            Err(error) => refused(error, args, env),
        },
        Some(CommandName::Batch) => match super::batch::read(&args) {
            Ok(batch) => Invocation::Batch(batch),
            Err(error) => refused(error, args, env),
        },
        Some(CommandName::Config) => match command_tree().try_get_matches_from(&args) {
            Ok(tree) => {
                let matches = tree
                    .subcommand_matches(CommandName::Config.name())
                    .cloned()
                    .unwrap_or_default();
                let words = args.iter().take(1).chain(args.iter().skip(2)).cloned();
                Invocation::Config(RunArgs {
                    words: words.collect(),
                    command: run_command(),
                    matches,
                })
            }
            Err(error) => refused(error, args, env),
        },
        Some(_) => match command_tree().try_get_matches_from(&args) {
            Ok(tree) => Invocation::Print(PrintCommand::from_matches(&tree)),
            Err(error) => refused(error, args, env),
        },
    }
}

impl RunArgs {
    /// Parses a run's `words` (program name first) with the run's parser.
    pub fn parse(words: Vec<OsString>) -> Result<Self, clap::Error> {
        let command = run_command();
        let matches = command.clone().try_get_matches_from(&words)?;
        Ok(RunArgs {
            words,
            command,
            matches,
        })
    }

    /// `--events` (with `-q`) and `--output` as the command line and the
    /// environment set them.
    pub fn formats(&self) -> (EventsFormat, OutputFormat) {
        match Cli::from_arg_matches(&self.matches) {
            Ok(cli) => (cli.events_format(), cli.output),
            Err(_) => (EventsFormat::Text, OutputFormat::Text),
        }
    }
}

/// clap's help and version go back to be printed; anything else is a
/// refused line with the formats it could recover.
fn refused(
    error: clap::Error,
    args: Vec<OsString>,
    env: &dyn Fn(&str) -> Option<String>,
) -> Invocation {
    if matches!(
        error.kind(),
        ErrorKind::DisplayHelp
            | ErrorKind::DisplayVersion
            | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand
    ) {
        return Invocation::Shown(error);
    }
    let (events, output) = formats_of(&args, env);
    Invocation::Refused(Refused {
        error,
        args,
        events,
        output,
    })
}

/// `--events`/`-q` and `--output` as `args` and the environment give them,
/// read without clap (which refused `args`): the last occurrence wins, the
/// values of other flags are skipped, nothing after `--` counts.
fn formats_of(
    args: &[OsString],
    env: &dyn Fn(&str) -> Option<String>,
) -> (EventsFormat, OutputFormat) {
    let command = run_command();
    let takes_value = |flag: &str| takes_value(&command, flag);
    let mut events = env("LEASH_EVENTS");
    let mut output = env("LEASH_OUTPUT");
    let mut quiet = false;
    let mut words = args.iter().skip(1).filter_map(|arg| arg.to_str());
    while let Some(word) = words.next() {
        if word == "--" {
            break;
        }
        let (flag, inline) = match word.split_once('=') {
            Some((flag, value)) if flag.starts_with("--") => (flag, Some(value.to_owned())),
            _ => (word, None),
        };
        let mut value = || inline.clone().or_else(|| words.next().map(str::to_owned));
        match flag {
            "--events" => events = value(),
            "--output" => output = value(),
            "-q" | "--quiet" => quiet = true,
            _ if inline.is_none() && takes_value(flag) => {
                let _ = words.next();
            }
            _ => {}
        }
    }
    let events = match (quiet, events.as_deref().map(str::trim)) {
        (true, _) => EventsFormat::None,
        (false, Some(value)) => EventsFormat::from_str(value, true).unwrap_or(EventsFormat::Text),
        (false, None) => EventsFormat::Text,
    };
    let output = output
        .and_then(|value| OutputFormat::from_str(value.trim(), true).ok())
        .unwrap_or(OutputFormat::Text);
    (events, output)
}

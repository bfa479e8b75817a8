//! The commands beside a run (`batch`, `config`, `completions`, `man`,
//! `schema`, `help`), recognised by name as the first argument only, and the two
//! parsers built from the one definition: a run's, and the whole tree.

use std::ffi::OsString;

use clap::{Arg, Command, CommandFactory};

use super::Cli;
use super::batch::batch_command;
use super::help::ESSENTIAL_FLAGS;
use crate::render::schema::SchemaKind;

/// The commands, recognised by name as the first argument only.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CommandName {
    /// `leash batch [INPUT] [OPTIONS]` and `leash batch merge SHARD…`.
    Batch,
    /// `leash config [OPTIONS]`.
    Config,
    /// `leash completions SHELL`.
    Completions,
    /// `leash man`.
    Man,
    /// `leash schema KIND`.
    Schema,
    /// `leash help [COMMAND]`.
    Help,
}

impl CommandName {
    /// The word that names it.
    pub fn name(self) -> &'static str {
        match self {
            CommandName::Batch => "batch",
            CommandName::Config => "config",
            CommandName::Completions => "completions",
            CommandName::Man => "man",
            CommandName::Schema => "schema",
            CommandName::Help => "help",
        }
    }
}

/// The commands, each with its arguments and one-line summary, in the
/// order `--help` lists them.
pub const COMMANDS: [(CommandName, &str, &str); 6] = [
    (
        CommandName::Batch,
        "[INPUT]",
        "Run each line of a JSONL file as one run, N at a time: one JSON line per item",
    ),
    (
        CommandName::Config,
        "[OPTIONS]",
        "Print the settings a run with these flags would use, each with its source",
    ),
    (
        CommandName::Completions,
        "SHELL",
        "Print a completion script: bash, zsh, fish, powershell or elvish",
    ),
    (
        CommandName::Man,
        "",
        "Print the man page (roff): leash man | man -l -",
    ),
    (
        CommandName::Schema,
        "KIND",
        "Print a JSON Schema: events (one --events jsonl line) or result (--output json)",
    ),
    (
        CommandName::Help,
        "[COMMAND]",
        "Print this help, or a command's",
    ),
];

/// A command that prints text, parsed from the command tree's matches.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PrintCommand {
    /// A completion script for this shell.
    Completions(clap_complete::Shell),
    /// The man page.
    Man,
    /// A JSON Schema.
    Schema(SchemaKind),
    /// The help of a run, or of the named command.
    Help(Option<String>),
}

impl PrintCommand {
    /// The command `matches` (of [`command_tree`]) hold, if it prints text.
    pub fn from_matches(matches: &clap::ArgMatches) -> Option<Self> {
        let (name, sub) = matches.subcommand()?;
        let command = COMMANDS
            .iter()
            .map(|(command, _, _)| *command)
            .find(|command| command.name() == name)?;
        Some(match command {
            CommandName::Config | CommandName::Batch => return None,
            CommandName::Completions => {
                PrintCommand::Completions(*sub.get_one::<clap_complete::Shell>("shell")?)
            }
            CommandName::Man => PrintCommand::Man,
            CommandName::Schema => PrintCommand::Schema(*sub.get_one::<SchemaKind>("kind")?),
            CommandName::Help => PrintCommand::Help(sub.get_one::<String>("command").cloned()),
        })
    }
}

/// The command `args` asks for, if any: only the first argument counts,
/// and only when it is exactly a command's name.
pub fn command_name(args: &[OsString]) -> Option<CommandName> {
    let first = args.get(1)?.to_str()?;
    COMMANDS
        .iter()
        .map(|(command, _, _)| *command)
        .find(|command| command.name() == first)
}

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

/// The whole command line, runs and commands, for completions and the man
/// page (which show the `LEASH_*` names), and for parsing a command.
pub fn command_tree() -> Command {
    let run = Cli::command();
    let run_flags: Vec<Arg> = run
        .get_arguments()
        .filter(|arg| !arg.is_positional())
        .map(|arg| arg.clone().hide_env(true))
        .collect();
    let about = |name: &str| {
        COMMANDS
            .iter()
            .find(|(command, _, _)| command.name() == name)
            .map(|(_, _, about)| *about)
            .unwrap_or_default()
    };
    run.disable_help_subcommand(true)
        .subcommand(batch_command().about(about("batch")))
        .subcommand(
            Command::new("config")
                .about(about("config"))
                .args(run_flags)
                .arg(Arg::new("prompt").value_name("PROMPT").hide(true))
                .after_help(
                    "Prefix any run's flags with `config` to see what that run would use \
                     and why. The key prints as ***.",
                ),
        )
        .subcommand(
            Command::new("completions").about(about("completions")).arg(
                Arg::new("shell")
                    .value_name("SHELL")
                    .required(true)
                    .value_parser(clap::value_parser!(clap_complete::Shell)),
            ),
        )
        .subcommand(Command::new("man").about(about("man")))
        .subcommand(
            Command::new("schema").about(about("schema")).arg(
                Arg::new("kind")
                    .value_name("KIND")
                    .required(true)
                    .value_parser(clap::value_parser!(SchemaKind)),
            ),
        )
        .subcommand(Command::new("help").about(about("help")).arg(
            Arg::new("command").value_name("COMMAND").value_parser([
                "batch",
                "config",
                "completions",
                "man",
                "schema",
                "help",
            ]),
        ))
}

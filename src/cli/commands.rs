//! The commands beside a run (`batch`, `config`, `completions`, `man`,
//! `schema`, `help`) as clap sees them: the print commands read from the
//! matches, and the whole tree (a run's flags and every command) for
//! completions and the man page. Their names are `names.rs`'s.

use clap::{Arg, Command, CommandFactory};

use super::Cli;
use super::batch::batch_command;
use super::names::{COMMANDS, CommandName};
use crate::render::schema::SchemaKind;

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

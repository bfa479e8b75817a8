//! The words that name a command (`batch`, `config`, `completions`, `man`,
//! `schema`, `help`), each with its usage and one line of help, and the
//! one rule that recognises them: the very first argument only. Below the
//! help texts and every parser.

use std::ffi::OsString;

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

/// The command `args` asks for, if any: only the first argument counts,
/// and only when it is exactly a command's name.
pub fn command_name(args: &[OsString]) -> Option<CommandName> {
    let first = args.get(1)?.to_str()?;
    COMMANDS
        .iter()
        .map(|(command, _, _)| *command)
        .find(|command| command.name() == first)
}

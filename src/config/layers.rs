//! Where each setting comes from. The layers, highest first: the flag; the
//! environment; `.env` (read as data, never exported: keys and model
//! selection only, see `dotenv`); the config file; the default.
//!
//! A setting is resolved layer by layer first and only then name by name
//! within a layer: `.env`'s `LEASH_BASE_URL` never beats an exported
//! `OPENAI_BASE_URL` ([`Source::layer`] orders them; `precedence` applies it).
//!
//! clap reads flags and the exported `LEASH_*` variables and says which it
//! used (`ArgMatches::value_source`); the `.env`'s model selection, then the
//! config file, fill in only what those left at the default, by parsing
//! their values as flags placed before the user's own, so they pass the
//! same validation. Every value keeps its [`Source`] for `leash config`.

use std::collections::{BTreeMap, HashMap};
use std::ffi::OsString;
use std::fmt;

use clap::parser::ValueSource;
use clap::{Arg, ArgMatches, Command, FromArgMatches};

use crate::cli::{Cli, RunArgs};
use crate::config::dotenv::{self, DotEnv, DotEnvError, DotEnvStatus};
use crate::config::file::{ConfigFile, ConfigFileError};

/// Where one setting's value came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Source {
    /// The command line.
    Flag,
    /// This environment variable.
    Env(String),
    /// This variable, supplied by the `.env` file.
    DotEnv(String),
    /// The config file.
    File,
    /// leash's default.
    Default,
    /// A default that follows from another setting (the reason).
    Implied(&'static str),
    /// Not set anywhere.
    Unset,
}

impl Source {
    /// The layer of the value, highest first: 0 the flag, 1 the
    /// environment, 2 `.env`, 3 the config file, 4 a default, 5 unset.
    pub fn layer(&self) -> u8 {
        match self {
            Source::Flag => 0,
            Source::Env(_) => 1,
            Source::DotEnv(_) => 2,
            Source::File => 3,
            Source::Default | Source::Implied(_) => 4,
            Source::Unset => 5,
        }
    }
}

impl fmt::Display for Source {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Source::Flag => f.write_str("flag"),
            Source::Env(name) => write!(f, "env {name}"),
            Source::DotEnv(name) => write!(f, ".env {name}"),
            Source::File => f.write_str("config file"),
            Source::Default => f.write_str("default"),
            Source::Implied(reason) => write!(f, "default: {reason}"),
            Source::Unset => f.write_str("unset"),
        }
    }
}

/// Looks a variable up.
type Lookup = Box<dyn Fn(&str) -> Option<String> + Send + Sync>;

/// The two layers of variables: the environment leash was started with,
/// and the values a `.env` supplies (held as data, never exported; only
/// the names [`allowed_variables`](crate::config::dotenv::allowed_variables)
/// lists).
pub struct Environment {
    lookup: Lookup,
    dotenv_values: BTreeMap<String, String>,
    dotenv: DotEnvStatus,
}

impl Environment {
    /// The process environment, and the `.env` that
    /// [`load_dotenv`](crate::config::dotenv::load_dotenv) read (or why it
    /// cannot be used: then nothing of it is).
    pub fn process(dotenv: Result<DotEnv, DotEnvError>) -> Self {
        let (values, status) = match dotenv {
            Ok(read) => (read.values, read.status),
            Err(error) => (BTreeMap::new(), DotEnvStatus::Failed(error.to_string())),
        };
        Environment {
            lookup: Box::new(|name| std::env::var(name).ok()),
            dotenv_values: values,
            dotenv: status,
        }
    }

    /// What became of `.env` (for `leash config` and the run's checks).
    pub fn dotenv(&self) -> &DotEnvStatus {
        &self.dotenv
    }

    /// A fixed environment (for tests): `(name, value)` pairs; those
    /// named in `from_dotenv` are the `.env`'s, the others exported.
    #[cfg(test)]
    pub fn from_pairs(pairs: &[(&str, &str)], from_dotenv: &[&str]) -> Self {
        let (dotenv, exported): (Vec<_>, Vec<_>) = pairs
            .iter()
            .map(|(name, value)| (name.to_string(), value.to_string()))
            .partition(|(name, _)| from_dotenv.contains(&name.as_str()));
        let vars: HashMap<String, String> = exported.into_iter().collect();
        Environment {
            lookup: Box::new(move |name| vars.get(name).cloned()),
            dotenv_values: dotenv.into_iter().collect(),
            dotenv: DotEnvStatus::NotFound,
        }
    }

    /// A variable's value: exported, else from `.env`.
    pub fn get(&self, name: &str) -> Option<String> {
        (self.lookup)(name).or_else(|| self.dotenv_value(name).map(str::to_owned))
    }

    /// A variable's value as exported, never from `.env`: for settings a
    /// checkout must not be able to choose (where traces go).
    pub fn exported(&self, name: &str) -> Option<String> {
        (self.lookup)(name)
    }

    /// A variable's value from `.env` alone.
    pub fn dotenv_value(&self, name: &str) -> Option<&str> {
        self.dotenv_values.get(name).map(String::as_str)
    }

    /// A variable's value when it is not blank, with its source: the
    /// environment's, else the `.env`'s.
    pub fn non_empty(&self, name: &str) -> Option<(String, Source)> {
        let blank = |value: &String| value.trim().is_empty();
        if let Some(value) = (self.lookup)(name).filter(|value| !blank(value)) {
            return Some((value, Source::Env(name.to_owned())));
        }
        let value = self.dotenv_values.get(name).filter(|value| !blank(value))?;
        Some((value.clone(), Source::DotEnv(name.to_owned())))
    }
}

/// One parsed setting: its value as given and where it came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Origin {
    /// Where the value came from.
    pub source: Source,
    /// The value as text (a list joined with `,`), if there is one.
    pub raw: Option<String>,
}

/// The origin of every argument of a parsed run, by clap id (`max_turns`).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Origins(HashMap<String, Origin>);

impl Origins {
    /// Where the argument `id` came from ([`Source::Unset`] if nowhere).
    pub fn source(&self, id: &str) -> Source {
        debug_assert!(self.knows(id), "`{id}` is no flag id of the run's parser");
        self.0
            .get(id)
            .map(|origin| origin.source.clone())
            .unwrap_or(Source::Unset)
    }

    /// Whether `id` is one of the run parser's argument ids: a typo in an
    /// id would otherwise read as a flag nobody set.
    pub fn knows(&self, id: &str) -> bool {
        self.0.contains_key(id)
    }

    /// The argument `id` as given, if it was.
    pub fn raw(&self, id: &str) -> Option<&str> {
        self.0.get(id).and_then(|origin| origin.raw.as_deref())
    }

    /// The origins of a parse; `lower` says which arguments a lower layer
    /// supplied (as flags placed before the user's own) and which.
    fn from_matches(
        command: &Command,
        matches: &ArgMatches,
        lower: &HashMap<String, Source>,
    ) -> Self {
        let mut origins = HashMap::new();
        for arg in command.get_arguments() {
            let id = arg.get_id().as_str();
            let source = match matches.value_source(id) {
                Some(ValueSource::CommandLine) => lower.get(id).cloned().unwrap_or(Source::Flag),
                // clap reads the process environment only.
                Some(ValueSource::EnvVariable) => arg
                    .get_env()
                    .and_then(|name| name.to_str())
                    .map(|name| Source::Env(name.to_owned()))
                    .unwrap_or(Source::Flag),
                Some(ValueSource::DefaultValue) => Source::Default,
                _ => Source::Unset,
            };
            // A switch shows as `true`/`false` whatever spelling set it
            // (`LEASH_STREAM=1`), so `leash config` output stays valid TOML.
            let switch = matches.try_get_one::<bool>(id).ok().flatten();
            let raw = matches.try_get_raw(id).ok().flatten().map(|values| {
                values
                    .map(|value| value.to_string_lossy().into_owned())
                    .collect::<Vec<_>>()
                    .join(",")
            });
            let raw = match (arg.get_action().takes_values(), switch) {
                (false, Some(on)) => Some(on.to_string()),
                _ => raw,
            };
            origins.insert(id.to_owned(), Origin { source, raw });
        }
        Origins(origins)
    }
}

/// A run's flags, parsed through every layer.
#[derive(Debug, Clone)]
pub struct ParsedRun {
    /// The values.
    pub cli: Cli,
    /// Where each came from.
    pub origins: Origins,
}

/// Why a run's flags did not parse.
#[derive(Debug, thiserror::Error)]
pub enum ParseError {
    /// The command line or the environment (also `--help`, `--version`).
    #[error(transparent)]
    Clap(#[from] clap::Error),
    /// A config file value.
    #[error(transparent)]
    File(#[from] ConfigFileError),
}

/// Parses a run's `args` (with the program name first) under the
/// environment, then fills in what neither set: first from the `.env`'s
/// model selection, then from `file`. clap reads only the process
/// environment, so the two lower layers are fed in as flags placed before
/// the user's own, each value keeping its [`Source`].
pub fn parse_run(
    run: &RunArgs,
    env: &Environment,
    file: Option<&ConfigFile>,
) -> Result<ParsedRun, ParseError> {
    let (command, first, args) = (&run.command, &run.matches, &run.words);
    let mut lower = Lower::new(command, first);
    for (name, value) in env.dotenv_values.iter() {
        if let Some(arg) = dotenv::selection_flag(name).and_then(|id| find(command, id)) {
            lower.offer(arg, value, Source::DotEnv(name.clone()));
        }
    }
    // The `.env` values were checked when it was read ([`dotenv::read_dotenv`]).
    let dotenv_args = lower.args.len();
    if let Some(file) = file {
        for (key, value) in file.values() {
            // A variable key (`api-key`) is looked up by `config`.
            if let Some(arg) = command
                .get_arguments()
                .find(|arg| arg.get_long() == Some(key) && arg.get_env().is_some())
            {
                lower.offer(arg, value, Source::File);
            }
        }
        // Repeatable flags (`hook`, `deny-tool`, `allow-tool`): the file's
        // list as a whole, unless a higher layer gave one.
        for (key, values) in file.repeated_values() {
            if let Some(arg) = command
                .get_arguments()
                .find(|arg| arg.get_long() == Some(key))
            {
                lower.offer_all(arg, values);
            }
        }
    }
    if lower.args.is_empty() {
        return Ok(ParsedRun::from_matches(command, first, &lower.sources)?);
    }
    let mut layered: Vec<OsString> = args.iter().take(1).cloned().collect();
    layered.extend(lower.args.iter().cloned());
    layered.extend(args.iter().skip(1).cloned());
    let parse = || {
        let matches = command.clone().try_get_matches_from(&layered)?;
        ParsedRun::from_matches(command, &matches, &lower.sources)
    };
    match (parse(), file) {
        (Ok(parsed), _) => Ok(parsed),
        (Err(error), Some(file)) if lower.args.len() > dotenv_args => Err(file_error(file, &error)),
        (Err(error), _) => Err(error.into()),
    }
}

/// The values the lower layers (`.env`, the config file) supply, as flags,
/// with where each came from; a setting a higher layer gave (or one it
/// conflicts with) is never offered.
struct Lower<'a> {
    command: &'a Command,
    first: &'a ArgMatches,
    args: Vec<OsString>,
    sources: HashMap<String, Source>,
}

impl<'a> Lower<'a> {
    fn new(command: &'a Command, first: &'a ArgMatches) -> Self {
        Lower {
            command,
            first,
            args: Vec::new(),
            sources: HashMap::new(),
        }
    }

    /// Given on the command line or in the environment, or supplied by a
    /// higher lower layer already.
    fn taken(&self, id: &str) -> bool {
        self.sources.contains_key(id)
            || matches!(
                self.first.value_source(id),
                Some(ValueSource::CommandLine | ValueSource::EnvVariable)
            )
    }

    fn offer(&mut self, arg: &Arg, value: &str, source: Source) {
        let id = arg.get_id().as_str();
        if self.taken(id) || conflicting(self.command, arg).any(|other| self.taken(other)) {
            return;
        }
        let long = arg.get_long().unwrap_or(id);
        if arg.get_action().takes_values() {
            self.args.push(OsString::from(format!("--{long}={value}")));
        } else if value == "true" {
            self.args.push(OsString::from(format!("--{long}")));
        } else {
            return;
        }
        self.sources.insert(id.to_owned(), source);
    }

    fn offer_all(&mut self, arg: &Arg, values: &[String]) {
        let id = arg.get_id().as_str();
        if self.taken(id) {
            return;
        }
        let long = arg.get_long().unwrap_or(id);
        self.args.extend(
            values
                .iter()
                .map(|value| OsString::from(format!("--{long}={value}"))),
        );
        self.sources.insert(id.to_owned(), Source::File);
    }
}

fn find<'a>(command: &'a Command, id: &str) -> Option<&'a Arg> {
    command.get_arguments().find(|arg| arg.get_id() == id)
}

/// Parses a run's `args` from the command line, the environment and the
/// `.env`, without a config file.
pub fn parse_flags(run: &RunArgs, env: &Environment) -> Result<ParsedRun, clap::Error> {
    parse_run(run, env, None).map_err(|error| match error {
        ParseError::Clap(error) => error,
        // Only a config file value is reported as one; there is none here.
        ParseError::File(error) => {
            clap::Error::raw(clap::error::ErrorKind::ValueValidation, error.to_string())
        }
    })
}

impl ParsedRun {
    fn from_matches(
        command: &Command,
        matches: &ArgMatches,
        lower: &HashMap<String, Source>,
    ) -> Result<Self, clap::Error> {
        Ok(ParsedRun {
            cli: Cli::from_arg_matches(matches)?.fold_prompt_flag(),
            origins: Origins::from_matches(command, matches, lower),
        })
    }
}

/// The ids of the arguments `arg` conflicts with, declared either way.
fn conflicting<'a>(command: &'a Command, arg: &'a Arg) -> impl Iterator<Item = &'a str> {
    command.get_arguments().filter_map(move |other| {
        let declared = |a: &Arg, b: &Arg| {
            command
                .get_arg_conflicts_with(a)
                .iter()
                .any(|c| c.get_id() == b.get_id())
        };
        (declared(arg, other) || declared(other, arg)).then(|| other.get_id().as_str())
    })
}

/// A clap error caused by a config file value, in one line.
fn file_error(file: &ConfigFile, error: &clap::Error) -> ParseError {
    let text = error.to_string();
    let first = text.lines().next().unwrap_or_default();
    let problem = first.strip_prefix("error: ").unwrap_or(first).to_owned();
    let key = error
        .get(clap::error::ContextKind::InvalidArg)
        .map(|arg| arg.to_string())
        .and_then(|arg| {
            arg.trim_start_matches("--")
                .split([' ', '='])
                .next()
                .map(str::to_owned)
        })
        .unwrap_or_else(|| "value".to_owned());
    ParseError::File(ConfigFileError::Value {
        path: file.path.display().to_string(),
        key,
        problem,
    })
}

#[cfg(test)]
#[path = "layers_tests.rs"]
mod tests;

/// Everything besides the parsed flags that a config is resolved from.
pub struct Inputs<'a> {
    /// Where each parsed flag came from.
    pub origins: &'a Origins,
    /// The environment (with `.env` merged under it).
    pub env: &'a Environment,
    /// The config file, if there is one.
    pub file: Option<&'a ConfigFile>,
    /// Whether stderr is a terminal.
    pub stderr_is_terminal: bool,
}

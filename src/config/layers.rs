//! Where each setting comes from. The layers, highest first: the flag; the
//! environment; `.env` (loaded under the environment, so a real variable
//! wins); the config file; the default.
//!
//! A setting is resolved layer by layer first and only then name by name
//! within a layer: `.env`'s `LEASH_BASE_URL` never beats an exported
//! `OPENAI_BASE_URL` ([`Source::layer`] orders them; `precedence` applies it).
//!
//! clap reads flags and `LEASH_*` variables and says which it used
//! (`ArgMatches::value_source`); the config file fills in only what both
//! left at the default, by parsing its values as flags placed before the
//! user's own, so they pass the same validation. Every value keeps its
//! [`Source`] for `leash config`.

use std::collections::{HashMap, HashSet};
use std::ffi::OsString;
use std::fmt;

use clap::parser::ValueSource;
use clap::{Arg, ArgMatches, Command, FromArgMatches};

use crate::cli::{Cli, run_command};
use crate::config::dotenv::{DotEnv, DotEnvError, DotEnvStatus};
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

/// The environment as leash sees it (after `.env` was merged under it),
/// and which variables `.env` supplied.
pub struct Environment {
    lookup: Lookup,
    from_dotenv: HashSet<String>,
    dotenv: DotEnvStatus,
}

impl Environment {
    /// The process environment, after [`load_dotenv`](crate::config::dotenv::load_dotenv) merged `.env` under it.
    pub fn process(dotenv: Result<DotEnv, DotEnvError>) -> Self {
        let (from_dotenv, status) = match dotenv {
            Ok(loaded) => (loaded.supplied, loaded.status),
            Err(error) => (HashSet::new(), DotEnvStatus::Failed(error.to_string())),
        };
        Environment {
            lookup: Box::new(|name| std::env::var(name).ok()),
            from_dotenv,
            dotenv: status,
        }
    }

    /// What became of `.env` (for `leash config` and the run's checks).
    pub fn dotenv(&self) -> &DotEnvStatus {
        &self.dotenv
    }

    /// A fixed environment (for tests): `(name, value)` pairs, and the
    /// names among them that came from `.env`.
    #[cfg(test)]
    pub fn from_pairs(pairs: &[(&str, &str)], from_dotenv: &[&str]) -> Self {
        let vars: HashMap<String, String> = pairs
            .iter()
            .map(|(name, value)| (name.to_string(), value.to_string()))
            .collect();
        Environment {
            lookup: Box::new(move |name| vars.get(name).cloned()),
            from_dotenv: from_dotenv.iter().map(|name| name.to_string()).collect(),
            dotenv: DotEnvStatus::NotFound,
        }
    }

    /// A variable's value.
    pub fn get(&self, name: &str) -> Option<String> {
        (self.lookup)(name)
    }

    /// A variable's value when it is not blank, with its source.
    pub fn non_empty(&self, name: &str) -> Option<(String, Source)> {
        let value = self.get(name).filter(|value| !value.trim().is_empty())?;
        Some((value, self.source_of(name)))
    }

    /// `env NAME` or `.env NAME`.
    pub fn source_of(&self, name: &str) -> Source {
        if self.from_dotenv.contains(name) {
            Source::DotEnv(name.to_owned())
        } else {
            Source::Env(name.to_owned())
        }
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
        self.0
            .get(id)
            .map(|origin| origin.source.clone())
            .unwrap_or(Source::Unset)
    }

    /// The argument `id` as given, if it was.
    pub fn raw(&self, id: &str) -> Option<&str> {
        self.0.get(id).and_then(|origin| origin.raw.as_deref())
    }

    /// The origins of a parse; `from_file` lists the ids the config file
    /// supplied (as flags placed before the user's own).
    pub fn from_matches(matches: &ArgMatches, env: &Environment, from_file: &[String]) -> Self {
        let command = run_command();
        let mut origins = HashMap::new();
        for arg in command.get_arguments() {
            let id = arg.get_id().as_str();
            let source = match matches.value_source(id) {
                Some(ValueSource::CommandLine) if from_file.iter().any(|f| f == id) => Source::File,
                Some(ValueSource::CommandLine) => Source::Flag,
                Some(ValueSource::EnvVariable) => arg
                    .get_env()
                    .and_then(|name| name.to_str())
                    .map(|name| env.source_of(name))
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
/// environment, filling in from `file` what neither set.
pub fn parse_run(
    args: &[OsString],
    env: &Environment,
    file: Option<&ConfigFile>,
) -> Result<ParsedRun, ParseError> {
    let command = run_command();
    let first = command.clone().try_get_matches_from(args)?;
    let Some(file) = file else {
        return Ok(ParsedRun::from_matches(&first, env, &[])?);
    };
    let given = |id: &str| {
        matches!(
            first.value_source(id),
            Some(ValueSource::CommandLine | ValueSource::EnvVariable)
        )
    };
    let mut injected = Vec::new();
    let mut from_file = Vec::new();
    for (key, value) in file.values() {
        let Some(arg) = command
            .get_arguments()
            .find(|arg| arg.get_long() == Some(key) && arg.get_env().is_some())
        else {
            continue; // a variable key, looked up by `config`
        };
        let id = arg.get_id().as_str();
        // A higher layer set it, or set a flag it conflicts with.
        if given(id) || conflicting(&command, arg).any(given) {
            continue;
        }
        if arg.get_action().takes_values() {
            injected.push(OsString::from(format!("--{key}={value}")));
        } else if value == "true" {
            injected.push(OsString::from(format!("--{key}")));
        } else {
            continue;
        }
        from_file.push(id.to_owned());
    }
    // Repeatable flags (`hook`, `deny-tool`, `allow-tool`): the file's
    // list as a whole, unless a higher layer gave one.
    for (key, values) in file.repeated_values() {
        let Some(arg) = command
            .get_arguments()
            .find(|arg| arg.get_long() == Some(key))
        else {
            continue;
        };
        let id = arg.get_id().as_str();
        if given(id) {
            continue;
        }
        injected.extend(
            values
                .iter()
                .map(|value| OsString::from(format!("--{key}={value}"))),
        );
        from_file.push(id.to_owned());
    }
    if injected.is_empty() {
        return Ok(ParsedRun::from_matches(&first, env, &[])?);
    }
    let mut layered: Vec<OsString> = args.iter().take(1).cloned().collect();
    layered.extend(injected);
    layered.extend(args.iter().skip(1).cloned());
    let matches = command
        .try_get_matches_from(&layered)
        .map_err(|error| file_error(file, &error))?;
    ParsedRun::from_matches(&matches, env, &from_file).map_err(|error| file_error(file, &error))
}

/// Parses a run's `args` from the command line and the environment
/// alone, without a config file.
pub fn parse_flags(args: &[OsString], env: &Environment) -> Result<ParsedRun, clap::Error> {
    let matches = run_command().try_get_matches_from(args)?;
    ParsedRun::from_matches(&matches, env, &[])
}

impl ParsedRun {
    fn from_matches(
        matches: &ArgMatches,
        env: &Environment,
        from_file: &[String],
    ) -> Result<Self, clap::Error> {
        Ok(ParsedRun {
            cli: Cli::from_arg_matches(matches)?,
            origins: Origins::from_matches(matches, env, from_file),
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
mod tests;

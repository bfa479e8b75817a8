//! The `.env` file: which one to read (decided from the command line and
//! the process environment before anything else, so a `.env` cannot choose
//! itself), and what leash takes from it.
//!
//! A `.env` usually comes with the checkout, and the checkout is not the
//! operator (docs/src/configuration.md "Configuration"). So it is read as data and never
//! exported: nothing of it reaches leash's own environment (clap, the HTTP
//! client's proxy and TLS variables) or any child. leash takes from it the
//! keys and model selection only; any other `LEASH_` name is a usage error
//! that says where the setting belongs; every other name is ignored.

use std::collections::BTreeMap;
use std::fmt;
use std::path::PathBuf;

use clap::ValueEnum;
use clap::parser::ValueSource;

use crate::cli::batch::BatchInvocation;
use crate::cli::{ApiName, Invocation, ProviderName, run_command};
use crate::config::input::{FILE_LIMIT, FileReadError, read_text_file};
use leash_provider::catalog;

/// Which `.env` to load, decided before the flags are fully parsed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EnvFileChoice {
    /// `.env` in the working directory (parents are not searched).
    Search,
    /// `--env-file PATH` (or `LEASH_ENV_FILE`): this file, which must exist.
    Path(PathBuf),
    /// `--no-env-file` (or `LEASH_NO_ENV_FILE`): none; the text says which.
    Off(&'static str),
}

/// Decides from the command line and the process environment (before any
/// `.env` is loaded, so a `.env` cannot choose itself) which `.env` to
/// load. The flag beats the variable; `--no-env-file` beats `--env-file`
/// within a layer. A refused command line reads none: its error is all it
/// reports.
pub fn env_file_choice(invocation: &Invocation) -> EnvFileChoice {
    let matches = match invocation {
        Invocation::Run(run) | Invocation::Config(run) => &run.matches,
        // A batch reads the `.env` its run flags choose, as each run would.
        Invocation::Batch(BatchInvocation::Run(batch)) => &batch.matches,
        _ => return EnvFileChoice::Off("not a run"),
    };
    let source = |id: &str| match matches.value_source(id) {
        Some(ValueSource::CommandLine) => 0,
        Some(ValueSource::EnvVariable) => 1,
        _ => 2,
    };
    // `try_get_one`: after an ignored error clap may not have filled in
    // the defaults. `--bare` reads neither a `.env` nor the config file.
    let bare = matches
        .try_get_one::<bool>("bare")
        .ok()
        .flatten()
        .is_some_and(|on| *on);
    if bare {
        return EnvFileChoice::Off(match source("bare") {
            0 => "--bare: flags and the real environment only",
            _ => "LEASH_BARE",
        });
    }
    let off = matches
        .try_get_one::<bool>("no_env_file")
        .ok()
        .flatten()
        .is_some_and(|on| *on)
        .then(|| source("no_env_file"));
    let path = matches
        .try_get_one::<PathBuf>("env_file")
        .ok()
        .flatten()
        .cloned();
    match (off, path) {
        (Some(off), Some(path)) if source("env_file") < off => EnvFileChoice::Path(path),
        (Some(0), _) => EnvFileChoice::Off("--no-env-file"),
        (Some(_), _) => EnvFileChoice::Off("LEASH_NO_ENV_FILE"),
        (None, Some(path)) => EnvFileChoice::Path(path),
        (None, None) => EnvFileChoice::Search,
    }
}

mod syntax;

pub use syntax::{SyntaxError, parse_entries};

/// The variables of the flags that choose the model, which a `.env` may
/// set besides the provider table's keys and base URLs: (variable, clap id).
const SELECTION: [(&str, &str); 4] = [
    ("LEASH_PROVIDER", "provider"),
    ("LEASH_MODEL", "model"),
    ("LEASH_API", "api"),
    ("LEASH_BASE_URL", "base_url"),
];

/// Every variable a `.env` may set: the keys (`LEASH_API_KEY`,
/// `OPENAI_API_KEY`, `ANTHROPIC_API_KEY`), the providers' base URLs, and
/// the model selection (`LEASH_PROVIDER`, `LEASH_MODEL`, `LEASH_API`,
/// `LEASH_BASE_URL`).
pub fn allowed_variables() -> impl Iterator<Item = &'static str> {
    catalog::variables()
        .into_iter()
        .chain(SELECTION.iter().map(|(name, _)| *name))
}

/// The clap id of the flag a `.env` variable stands for, if it is one
/// (`LEASH_MODEL` → `model`); the keys and provider base URLs are not flags.
pub fn selection_flag(name: &str) -> Option<&'static str> {
    SELECTION
        .iter()
        .find(|(variable, _)| *variable == name)
        .map(|(_, id)| *id)
}

/// What became of `.env`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DotEnvStatus {
    /// This file was read.
    Read {
        /// The file.
        path: PathBuf,
        /// The variables leash takes from it, in name order.
        taken: Vec<String>,
        /// The variables it sets that leash ignores, in name order.
        ignored: Vec<String>,
    },
    /// None in the working directory.
    NotFound,
    /// Reading was turned off (by the flag or the variable named).
    Off(&'static str),
    /// It could not be used: a usage error of every run.
    Failed(String),
}

impl fmt::Display for DotEnvStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DotEnvStatus::Read {
                path,
                taken,
                ignored,
            } => {
                write!(f, "{} (read as data", path.display())?;
                if !taken.is_empty() {
                    write!(f, "; uses {}", taken.join(", "))?;
                }
                if !ignored.is_empty() {
                    write!(
                        f,
                        "; ignores {}, as a .env supplies only keys and model selection",
                        ignored.join(", ")
                    )?;
                }
                f.write_str(")")
            }
            DotEnvStatus::NotFound => {
                f.write_str("none in the working directory (parent directories are not searched)")
            }
            DotEnvStatus::Off(by) => write!(f, "not read ({by})"),
            DotEnvStatus::Failed(problem) => write!(f, "not used: {problem}"),
        }
    }
}

/// A `.env` as leash uses it: its status and the values it supplies.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DotEnv {
    /// Which file, if any.
    pub status: DotEnvStatus,
    /// The allowed variables it sets, by name (the last line of a name wins).
    pub values: BTreeMap<String, String>,
}

/// What a `.env` text gives leash ([`read_dotenv`]).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct DotEnvValues {
    /// The allowed variables, by name (the last line of a name wins; a
    /// blank value counts as unset).
    pub values: BTreeMap<String, String>,
    /// The other names, which leash ignores, in name order.
    pub ignored: Vec<String>,
}

/// A `.env` that cannot be used: a usage error (exit 2).
#[derive(Debug, thiserror::Error)]
pub enum DotEnvError {
    /// The file could not be read, or is too large.
    #[error("cannot read {named} {path}: {source}")]
    Read {
        /// How it was named: `--env-file` (or its variable), or `the env
        /// file` found in the working directory.
        named: &'static str,
        /// The file.
        path: String,
        /// Why.
        source: FileReadError,
    },
    /// A line of it is not `NAME=value`.
    #[error("env file {path}: {source} (pass --no-env-file to skip it)")]
    Syntax {
        /// The file.
        path: String,
        /// Where and what.
        source: SyntaxError,
    },
    /// It sets a `LEASH_` variable that is not a key or model selection.
    #[error(
        ".env {path} sets {name}, which a .env may not set (a checkout is not the operator): \
         {remedy}"
    )]
    Refused {
        /// The file.
        path: String,
        /// The variable.
        name: String,
        /// Where the setting belongs.
        remedy: String,
    },
    /// `LEASH_PROVIDER` or `LEASH_API` names no provider or API.
    #[error(".env {path}: {name}: invalid value '{value}' (one of {expected})")]
    Value {
        /// The file.
        path: String,
        /// The variable.
        name: String,
        /// Its value, escaped.
        value: String,
        /// The values it may take.
        expected: String,
    },
}

/// Reads a `.env` text (`path` names it in errors) as data: the allowed
/// variables' values, the names leash ignores, or why it cannot be used.
/// Nothing is looked up in or written to the process environment.
pub fn read_dotenv(path: &str, text: &str) -> Result<DotEnvValues, DotEnvError> {
    let entries = parse_entries(text).map_err(|source| DotEnvError::Syntax {
        path: path.to_owned(),
        source,
    })?;
    let mut read = DotEnvValues::default();
    for (name, value) in entries {
        if allowed_variables().any(|allowed| allowed == name) {
            check_value(path, &name, &value)?;
            match value.trim().is_empty() {
                true => read.values.remove(&name),
                false => read.values.insert(name, value),
            };
        } else if name.starts_with("LEASH_") {
            return Err(DotEnvError::Refused {
                path: path.to_owned(),
                remedy: where_it_belongs(&name),
                name,
            });
        } else {
            read.ignored.push(name);
        }
    }
    read.ignored.sort();
    read.ignored.dedup();
    Ok(read)
}

/// A `LEASH_PROVIDER` or `LEASH_API` value must name a provider or an
/// API, as the flag's must.
fn check_value(path: &str, name: &str, value: &str) -> Result<(), DotEnvError> {
    fn names<T: ValueEnum>() -> Vec<String> {
        T::value_variants()
            .iter()
            .filter_map(|variant| variant.to_possible_value())
            .map(|value| value.get_name().to_owned())
            .collect()
    }
    let expected = match name {
        "LEASH_PROVIDER" => names::<ProviderName>(),
        "LEASH_API" => names::<ApiName>(),
        _ => return Ok(()),
    };
    let value = value.trim();
    match value.is_empty() || expected.iter().any(|known| known == value) {
        true => Ok(()),
        false => Err(DotEnvError::Value {
            path: path.to_owned(),
            name: name.to_owned(),
            // Escaped: a quoted value may span lines; the error is one.
            value: value.escape_debug().to_string(),
            expected: expected.join(", "),
        }),
    }
}

/// Where a `LEASH_` setting a `.env` may not give belongs: the flag, the
/// exported variable, and the config file when it is a config key.
fn where_it_belongs(name: &str) -> String {
    let command = run_command();
    let flag = command
        .get_arguments()
        .find(|arg| arg.get_env().is_some_and(|env| env == name))
        .and_then(|arg| arg.get_long());
    let Some(long) = flag else {
        return format!("leash reads no variable {name} (leash --help lists them)");
    };
    match crate::config::file::flag_keys()
        .iter()
        .any(|(key, _)| key == long)
    {
        true => format!("pass --{long}, export {name}, or set {long} in the config file"),
        false => format!("pass --{long} or export {name}"),
    }
}

/// Reads the chosen `.env` (with the same size cap as every file input)
/// as data; the search looks in the working directory only.
pub fn load_dotenv(choice: &EnvFileChoice) -> Result<DotEnv, DotEnvError> {
    let (named, path) = match choice {
        EnvFileChoice::Off(by) => return Ok(DotEnv::none(DotEnvStatus::Off(by))),
        EnvFileChoice::Path(path) => ("--env-file", path.clone()),
        EnvFileChoice::Search => {
            let path = PathBuf::from(".env");
            if !path.is_file() {
                return Ok(DotEnv::none(DotEnvStatus::NotFound));
            }
            ("the env file", path)
        }
    };
    let shown = path.display().to_string();
    let text = read_text_file(&path, FILE_LIMIT).map_err(|source| DotEnvError::Read {
        named,
        path: shown.clone(),
        source,
    })?;
    // The file as `leash config` names it: the one actually read.
    let absolute = std::fs::canonicalize(&path)
        .or_else(|_| std::path::absolute(&path))
        .unwrap_or(path);
    let read = read_dotenv(&absolute.display().to_string(), &text)?;
    Ok(DotEnv {
        status: DotEnvStatus::Read {
            path: absolute,
            taken: read.values.keys().cloned().collect(),
            ignored: read.ignored,
        },
        values: read.values,
    })
}

impl DotEnv {
    fn none(status: DotEnvStatus) -> Self {
        DotEnv {
            status,
            values: BTreeMap::new(),
        }
    }
}

#[cfg(test)]
mod tests;

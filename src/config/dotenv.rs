//! The `.env` file: which one to load (decided from the command line and
//! the process environment before anything else, so a `.env` cannot choose
//! itself), and loading it under the environment, remembering which names
//! it supplied.

use std::collections::HashSet;
use std::ffi::OsString;
use std::fmt;
use std::path::{Path, PathBuf};

use clap::parser::ValueSource;

use crate::cli::{CommandName, run_command};
use crate::run::input::{FILE_LIMIT, FileReadError, read_text_file};

/// Which `.env` to load, decided before the flags are fully parsed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EnvFileChoice {
    /// `.env` in the working directory or the nearest parent holding one.
    Search,
    /// `--env-file PATH` (or `LEASH_ENV_FILE`): this file, which must exist.
    Path(PathBuf),
    /// `--no-env-file` (or `LEASH_NO_ENV_FILE`): none; the text says which.
    Off(&'static str),
}

/// What became of `.env`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DotEnvStatus {
    /// This file was loaded.
    Loaded(PathBuf),
    /// None was found.
    NotFound,
    /// Loading was turned off (by the flag or the variable named).
    Off(&'static str),
    /// It could not be loaded: a usage error of every run.
    Failed(String),
}

impl fmt::Display for DotEnvStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DotEnvStatus::Loaded(path) => write!(f, "{} (loaded)", path.display()),
            DotEnvStatus::NotFound => f.write_str("none found"),
            DotEnvStatus::Off(by) => write!(f, "not loaded ({by})"),
            DotEnvStatus::Failed(problem) => write!(f, "not loaded: {problem}"),
        }
    }
}

/// A loaded `.env`: its status and the names it supplied.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DotEnv {
    /// Which file, if any.
    pub status: DotEnvStatus,
    /// The variables it set (those the environment did not already have).
    pub supplied: HashSet<String>,
}

/// A `.env` that could not be loaded: a usage error (exit 2).
#[derive(Debug, thiserror::Error)]
pub enum DotEnvError {
    /// The file could not be read, or is too large.
    #[error("cannot read the env file {path}: {source}")]
    Read {
        /// The file.
        path: String,
        /// Why.
        source: FileReadError,
    },
    /// A line of it is not `NAME=value`.
    #[error("env file {path}: {message} (pass --no-env-file to skip it)")]
    Syntax {
        /// The file.
        path: String,
        /// What dotenvy said.
        message: String,
    },
}

/// Decides from the command line and the process environment (before any
/// `.env` is loaded, so a `.env` cannot choose itself) which `.env` to
/// load. The flag beats the variable; `--no-env-file` beats `--env-file`
/// within a layer. Parsing is best-effort: a bad flag elsewhere is
/// reported by the real parse later.
pub fn env_file_choice(args: &[OsString]) -> EnvFileChoice {
    let run_args: Vec<OsString> = match crate::cli::command_name(args) {
        Some(CommandName::Config) => args
            .iter()
            .take(1)
            .chain(args.iter().skip(2))
            .cloned()
            .collect(),
        Some(_) => return EnvFileChoice::Off("not a run"),
        None => args.to_vec(),
    };
    let Ok(matches) = run_command()
        .ignore_errors(true)
        .try_get_matches_from(&run_args)
    else {
        return EnvFileChoice::Search;
    };
    let source = |id: &str| match matches.value_source(id) {
        Some(ValueSource::CommandLine) => 0,
        Some(ValueSource::EnvVariable) => 1,
        _ => 2,
    };
    // `try_get_one`: after an ignored error clap may not have filled in
    // the defaults.
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

/// The `.env` the search finds: in the working directory or the nearest
/// parent that has one.
fn find_dotenv() -> Option<PathBuf> {
    let cwd = std::env::current_dir().ok()?;
    cwd.ancestors()
        .map(|dir| dir.join(".env"))
        .find(|path| path.is_file())
}

/// Loads the chosen `.env` under the process environment (a variable
/// already set wins) and says which names it supplied. The file is read
/// with the same size cap as every file input.
pub fn load_dotenv(choice: &EnvFileChoice) -> Result<DotEnv, DotEnvError> {
    let path = match choice {
        EnvFileChoice::Off(by) => return Ok(DotEnv::none(DotEnvStatus::Off(by))),
        EnvFileChoice::Path(path) => path.clone(),
        EnvFileChoice::Search => match find_dotenv() {
            Some(path) => path,
            None => return Ok(DotEnv::none(DotEnvStatus::NotFound)),
        },
    };
    let text = read_text_file(&path, FILE_LIMIT).map_err(|source| DotEnvError::Read {
        path: path.display().to_string(),
        source,
    })?;
    let supplied: HashSet<String> = parse_dotenv(&path, &text)?
        .into_iter()
        .map(|(name, _)| name)
        .filter(|name| std::env::var_os(name).is_none())
        .collect();
    // dotenvy sets what is not set yet (the environment wins); the text
    // parsed above, so this cannot fail half-way.
    dotenvy::from_read(text.as_bytes()).map_err(|error| DotEnvError::Syntax {
        path: path.display().to_string(),
        message: error.to_string(),
    })?;
    Ok(DotEnv {
        status: DotEnvStatus::Loaded(std::path::absolute(&path).unwrap_or(path)),
        supplied,
    })
}

/// The `NAME=value` pairs of a `.env` text.
fn parse_dotenv(path: &Path, text: &str) -> Result<Vec<(String, String)>, DotEnvError> {
    dotenvy::from_read_iter(text.as_bytes())
        .collect::<Result<Vec<_>, _>>()
        .map_err(|error| DotEnvError::Syntax {
            path: path.display().to_string(),
            message: error.to_string(),
        })
}

impl DotEnv {
    fn none(status: DotEnvStatus) -> Self {
        DotEnv {
            status,
            supplied: HashSet::new(),
        }
    }
}

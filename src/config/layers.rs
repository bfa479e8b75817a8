//! Where each setting comes from. The layers, highest first: the flag; the
//! environment; `.env` (loaded under the environment, so a real variable
//! wins); the config file; the default.
//!
//! A setting is resolved layer by layer first and only then name by name
//! within a layer: `.env`'s `LEASH_BASE_URL` never beats an exported
//! `OPENAI_BASE_URL` ([`Source::layer`] orders them; `choices` applies it).
//!
//! clap reads flags and `LEASH_*` variables and says which it used
//! (`ArgMatches::value_source`); the config file fills in only what both
//! left at the default, by parsing its values as flags placed before the
//! user's own, so they pass the same validation. Every value keeps its
//! [`Source`] for `leash config`.

use std::collections::{HashMap, HashSet};
use std::ffi::OsString;
use std::fmt;
use std::path::{Path, PathBuf};

use clap::parser::ValueSource;
use clap::{Arg, ArgMatches, Command, FromArgMatches};

use crate::cli::{Cli, run_command};
use crate::config_file::{ConfigFile, ConfigFileError};
use crate::input::{FILE_LIMIT, FileReadError, read_text_file};

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

    /// Whether the value was given by the flag, the environment or `.env`,
    /// the layers above the config file.
    pub fn is_above_file(&self) -> bool {
        matches!(self, Source::Flag | Source::Env(_) | Source::DotEnv(_))
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
    /// The process environment, after [`load_dotenv`] merged `.env` under it.
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

    /// The same environment with `.env`'s status set (for tests).
    pub fn with_dotenv(mut self, status: DotEnvStatus) -> Self {
        self.dotenv = status;
        self
    }

    /// A fixed environment (for tests): `(name, value)` pairs, and the
    /// names among them that came from `.env`.
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
        Some("config") => args
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
mod tests {
    use super::*;
    use std::path::Path;

    fn args(list: &[&str]) -> Vec<OsString> {
        std::iter::once("leash")
            .chain(list.iter().copied())
            .map(OsString::from)
            .collect()
    }

    fn file(text: &str) -> ConfigFile {
        ConfigFile::parse(Path::new("/c/config.toml"), text).unwrap()
    }

    #[test]
    fn the_file_fills_in_only_what_the_command_line_left_at_the_default() {
        let env = Environment::from_pairs(&[], &[]);
        let file = file("model = \"from-file\"\nmax-turns = 9\nstream = true\n");
        let run = parse_run(&args(&["-m", "from-flag", "hi"]), &env, Some(&file)).unwrap();
        assert_eq!(run.cli.model.as_deref(), Some("from-flag"));
        assert_eq!(run.origins.source("model"), Source::Flag);
        assert_eq!(run.cli.max_turns, 9);
        assert_eq!(run.origins.source("max_turns"), Source::File);
        assert!(run.cli.stream);
        assert_eq!(run.origins.source("stream"), Source::File);
        assert_eq!(run.cli.retries, 2);
        assert_eq!(run.origins.source("retries"), Source::Default);
        assert_eq!(run.origins.raw("retries"), Some("2"));
        assert_eq!(run.cli.prompt.as_deref(), Some("hi"));
        assert_eq!(run.origins.source("system"), Source::Unset);
    }

    #[test]
    fn a_prompt_that_looks_like_a_flag_value_stays_the_prompt() {
        let env = Environment::from_pairs(&[], &[]);
        let file = file("system = \"--be terse\"\n");
        let run = parse_run(&args(&["--", "-q"]), &env, Some(&file)).unwrap();
        assert_eq!(run.cli.system.as_deref(), Some("--be terse"));
        assert_eq!(run.cli.prompt.as_deref(), Some("-q"));
        assert!(!run.cli.quiet);
    }

    #[test]
    fn a_flag_beats_a_conflicting_file_value() {
        let env = Environment::from_pairs(&[], &[]);
        let file = file("system-file = \"prompt.md\"\n");
        let run = parse_run(&args(&["-s", "inline", "hi"]), &env, Some(&file)).unwrap();
        assert_eq!(
            crate::choices::choose_system(&run.cli, &run.origins),
            crate::choices::SystemChoice::Text("inline")
        );
    }

    #[test]
    fn a_bad_file_value_is_named_with_its_file_and_key() {
        let env = Environment::from_pairs(&[], &[]);
        let file = file("max-turns = 0\n");
        let error = parse_run(&args(&["hi"]), &env, Some(&file))
            .unwrap_err()
            .to_string();
        assert!(
            error.starts_with("config file /c/config.toml: max-turns: invalid value '0'"),
            "{error}"
        );
        assert!(!error.contains('\n'));
    }

    #[test]
    fn dotenv_variables_are_told_apart() {
        let env = Environment::from_pairs(&[("A", "1"), ("B", "2"), ("C", " ")], &["B"]);
        assert_eq!(
            env.non_empty("A"),
            Some(("1".into(), Source::Env("A".into())))
        );
        assert_eq!(
            env.non_empty("B"),
            Some(("2".into(), Source::DotEnv("B".into())))
        );
        assert_eq!(env.non_empty("C"), None);
        assert_eq!(Source::DotEnv("B".into()).to_string(), ".env B");
    }
}

//! The optional config file, `$XDG_CONFIG_HOME/leash/config.toml` (else
//! `~/.config/leash/config.toml`): the layer below the environment and
//! `.env` and above the defaults.
//!
//! Its keys are the long names of the flags that have a `LEASH_*`
//! variable (`model`, `max-turns`, `stream`, ...), plus the provider
//! variables that are not flags (`api-key`, `openai-api-key`, ...). An
//! unknown key or a value of the wrong kind is refused, so a typo never
//! passes silently. One table is not a flag: `[prices]`, the `--price` of
//! each model by name (`"gpt-4.1" = "2,8,0.5"`), checked here. Nothing here
//! decides precedence; `layers` and `precedence` do.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use clap::CommandFactory;

mod choice;

pub use choice::{ConfigFileChoice, config_file_choice};

use crate::cli::Cli;
use crate::config::input::{FILE_LIMIT, FileReadError, read_text_file};
use crate::policy::cost::Price;
use leash_provider::catalog;

/// Flags that choose the `.env` file and the config file itself, decided
/// before the config file is read; they are not config keys.
const NOT_KEYS: [&str; 5] = ["env-file", "no-env-file", "config", "no-config", "bare"];

/// The keys that stand for a variable rather than a flag (`api-key`,
/// `openai-api-key`, ..., `openai-base-url`, ...), from the provider table.
/// Each is looked up after the environment.
pub fn variable_keys() -> Vec<String> {
    catalog::variables()
        .into_iter()
        .map(catalog::file_key)
        .collect()
}

/// A config file that could not be used: always a usage error (exit 2).
#[derive(Debug, thiserror::Error)]
pub enum ConfigFileError {
    /// It exists but cannot be read.
    #[error("cannot read the config file {path}: {source}")]
    Read {
        /// The file.
        path: String,
        /// Why.
        source: FileReadError,
    },
    /// `--config FILE` (or `LEASH_CONFIG`) names a file that is not there.
    #[error(
        "config file {path} (--config / LEASH_CONFIG) does not exist; \
         fix the path, or pass --no-config to run without one"
    )]
    Missing {
        /// The file.
        path: String,
    },
    /// It is not TOML.
    #[error("config file {path}: line {line}: {message}")]
    Syntax {
        /// The file.
        path: String,
        /// 1-based line of the problem.
        line: usize,
        /// What the TOML parser said.
        message: String,
    },
    /// A key leash does not know.
    #[error(
        "config file {path}: unknown key '{key}'{hint} (keys are the long flag names, \
         e.g. max-turns, and {variables})"
    )]
    UnknownKey {
        /// The file.
        path: String,
        /// The key.
        key: String,
        /// ` (did you mean 'max-turns'?)` or nothing.
        hint: String,
        /// The variable keys, listed.
        variables: String,
    },
    /// A value of the wrong kind, or one clap refused.
    #[error("config file {path}: {key}: {problem}")]
    Value {
        /// The file.
        path: String,
        /// The key.
        key: String,
        /// What is wrong.
        problem: String,
    },
}

/// A loaded config file: every value as the text a flag would take.
#[derive(Debug, Clone, PartialEq)]
pub struct ConfigFile {
    /// Where it was read from.
    pub path: PathBuf,
    values: BTreeMap<String, String>,
    /// `[prices]`: model name → price text, each checked.
    prices: BTreeMap<String, String>,
    /// The keys of repeatable flags (`hook`, `deny-tool`, `allow-tool`),
    /// each value as the text one flag would take.
    repeated: BTreeMap<String, Vec<String>>,
}

/// The table of per-model prices.
const PRICES: &str = "prices";

impl ConfigFile {
    /// Where the config file is looked for: `$XDG_CONFIG_HOME/leash/config.toml`
    /// when that variable holds an absolute path, else
    /// `$HOME/.config/leash/config.toml`; `None` without either.
    pub fn location(env: &dyn Fn(&str) -> Option<String>) -> Option<PathBuf> {
        let xdg = env("XDG_CONFIG_HOME")
            .map(PathBuf::from)
            .filter(|path| path.is_absolute());
        let base = match xdg {
            Some(path) => path,
            None => PathBuf::from(env("HOME").filter(|home| !home.is_empty())?).join(".config"),
        };
        Some(base.join("leash").join("config.toml"))
    }

    /// Loads the file at `path` (at most [`FILE_LIMIT`] bytes); a missing
    /// file is no file (`Ok(None)`).
    pub fn load(path: &Path) -> Result<Option<ConfigFile>, ConfigFileError> {
        match read_text_file(path, FILE_LIMIT) {
            Ok(text) => Self::parse(path, &text).map(Some),
            Err(FileReadError::Io(error)) if error.kind() == std::io::ErrorKind::NotFound => {
                Ok(None)
            }
            Err(source) => Err(ConfigFileError::Read {
                path: path.display().to_string(),
                source,
            }),
        }
    }

    /// Parses and checks the text of a config file.
    pub fn parse(path: &Path, text: &str) -> Result<ConfigFile, ConfigFileError> {
        let shown = path.display().to_string();
        let table: toml::Table = toml::from_str(text).map_err(|error| {
            let span = error.span().unwrap_or(0..0);
            let start = span.start.min(text.len());
            let mut message = error.message().trim().to_owned();
            // The key itself, for a duplicate (the span is its name).
            if let Some(key) = text.get(span.clone()).map(str::trim)
                && message == "duplicate key"
                && !key.is_empty()
                && !key.contains('\n')
            {
                message = format!("duplicate key '{key}' (set once per file)");
            }
            ConfigFileError::Syntax {
                path: shown.clone(),
                line: text
                    .get(..start)
                    .map_or(1, |before| before.matches('\n').count() + 1),
                message,
            }
        })?;
        let flags = flag_keys();
        let command = Cli::command();
        let mut values = BTreeMap::new();
        let mut prices = BTreeMap::new();
        let mut repeated = BTreeMap::new();
        for (key, value) in table {
            if key == PRICES {
                prices = price_table(&shown, value)?;
                continue;
            }
            let value_error = |problem: &str| ConfigFileError::Value {
                path: shown.clone(),
                key: key.clone(),
                problem: problem.to_owned(),
            };
            let text = match command
                .get_arguments()
                .find(|arg| arg.get_long() == Some(key.as_str()))
                .filter(|_| flags.iter().any(|(name, _)| *name == key))
            {
                Some(arg) if matches!(arg.get_action(), clap::ArgAction::Append) => {
                    let (list, expected) = repeated_values(&key, &value);
                    let list = list.ok_or_else(|| value_error(expected))?;
                    repeated.insert(key, list);
                    continue;
                }
                Some(arg) => {
                    let kind = ValueKind::of(arg);
                    kind.text(&value)
                        .ok_or_else(|| value_error(kind.expected()))?
                }
                None if variable_keys().contains(&key) => match value {
                    toml::Value::String(text) => text,
                    _ => return Err(value_error("must be a string")),
                },
                None => return Err(unknown_key(&shown, &key, &flags)),
            };
            values.insert(key, text);
        }
        Ok(ConfigFile {
            path: path.to_owned(),
            values,
            prices,
            repeated,
        })
    }

    /// The `[prices]` entry for `model`, if the file has one.
    pub fn price_for(&self, model: &str) -> Option<&str> {
        self.prices.get(model).map(String::as_str)
    }

    /// The values of a repeatable flag's key, in the file's order (empty
    /// when the file does not set it).
    #[cfg(test)]
    pub fn repeated(&self, key: &str) -> &[String] {
        self.repeated.get(key).map_or(&[], Vec::as_slice)
    }

    /// Every repeatable key the file sets, with its values.
    pub fn repeated_values(&self) -> impl Iterator<Item = (&str, &[String])> {
        self.repeated
            .iter()
            .map(|(key, values)| (key.as_str(), values.as_slice()))
    }

    /// The value of `key`, if the file sets it.
    pub fn get(&self, key: &str) -> Option<&str> {
        self.values.get(key).map(String::as_str)
    }

    /// Every key the file sets, with its value as flag text.
    pub fn values(&self) -> impl Iterator<Item = (&str, &str)> {
        self.values
            .iter()
            .map(|(key, value)| (key.as_str(), value.as_str()))
    }
}

/// The keys that are flags (the long names of the flags with a `LEASH_*`
/// variable), each with whether it is an on/off switch.
pub fn flag_keys() -> Vec<(String, bool)> {
    Cli::command()
        .get_arguments()
        .filter(|arg| arg.get_env().is_some())
        .filter_map(|arg| {
            let long = arg.get_long().filter(|long| !NOT_KEYS.contains(long))?;
            Some((long.to_owned(), !arg.get_action().takes_values()))
        })
        .collect()
}

/// `[prices]`: a table of model name → price string, each a valid `--price`.
fn price_table(
    path: &str,
    value: toml::Value,
) -> Result<BTreeMap<String, String>, ConfigFileError> {
    let error = |key: String, problem: String| ConfigFileError::Value {
        path: path.to_owned(),
        key,
        problem,
    };
    let toml::Value::Table(table) = value else {
        return Err(error(
            PRICES.to_owned(),
            "must be a table of model = \"INPUT,OUTPUT[,CACHED_READ,CACHED_WRITE]\"".to_owned(),
        ));
    };
    let mut prices = BTreeMap::new();
    for (model, price) in table {
        let key = format!("{PRICES}.\"{model}\"");
        let toml::Value::String(text) = price else {
            return Err(error(key, "must be a string such as \"2,8\"".to_owned()));
        };
        Price::parse(&text).map_err(|problem| error(key.clone(), problem.to_string()))?;
        prices.insert(model, text);
    }
    Ok(prices)
}

/// The kind of value a key takes, from its flag's parser.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ValueKind {
    /// `true` or `false`.
    Switch,
    /// A whole number (`max-turns = 8`).
    Integer,
    /// A number (`temperature = 0.2`).
    Number,
    /// A duration as a string, or a number of seconds (`timeout`).
    Duration,
    /// A string or a list of strings (`tools`).
    List,
    /// A string.
    Text,
    /// `true`, `false`, or a word (`allow-exec = "unconfined"`).
    SwitchOrWord,
}

impl ValueKind {
    fn of(arg: &clap::Arg) -> ValueKind {
        use std::any::TypeId;
        let parser = arg.get_value_parser().type_id();
        if !arg.get_action().takes_values() {
            ValueKind::Switch
        } else if parser == TypeId::of::<u32>() || parser == TypeId::of::<u64>() {
            ValueKind::Integer
        } else if parser == TypeId::of::<f32>() || parser == TypeId::of::<f64>() {
            ValueKind::Number
        } else if arg.get_id() == "max_cost" {
            // Parsed by `policy::cost` (exact decimals), written as a number.
            ValueKind::Number
        } else if arg.get_id() == "timeout"
            || arg.get_id() == "hook_timeout"
            || arg.get_id() == "stdin_grace"
            || arg.get_id() == "mcp_timeout"
        {
            ValueKind::Duration
        } else if arg.get_id() == "allow_exec" {
            ValueKind::SwitchOrWord
        } else if arg.get_id() == "tools" {
            ValueKind::List
        } else {
            ValueKind::Text
        }
    }

    fn expected(self) -> &'static str {
        match self {
            ValueKind::Switch => "must be true or false",
            ValueKind::Integer => "must be a whole number, without quotes",
            ValueKind::Number => "must be a number, without quotes",
            ValueKind::Duration => "must be a string such as \"90s\", or a number of seconds",
            ValueKind::List => "must be a list of strings or a string",
            ValueKind::Text => "must be a string",
            ValueKind::SwitchOrWord => "must be true, false or a string such as \"unconfined\"",
        }
    }

    /// The value as the text its flag would take, if it has this kind.
    fn text(self, value: &toml::Value) -> Option<String> {
        use toml::Value as V;
        match (self, value) {
            (ValueKind::Switch | ValueKind::SwitchOrWord, V::Boolean(on)) => Some(on.to_string()),
            (ValueKind::SwitchOrWord, V::String(text)) => Some(text.clone()),
            (ValueKind::Integer, V::Integer(number)) => Some(number.to_string()),
            (ValueKind::Number | ValueKind::Duration, V::Integer(number)) => {
                Some(number.to_string())
            }
            (ValueKind::Number | ValueKind::Duration, V::Float(number)) => Some(number.to_string()),
            (ValueKind::Duration | ValueKind::List | ValueKind::Text, V::String(text)) => {
                Some(text.clone())
            }
            (ValueKind::List, V::Array(items)) => items
                .iter()
                .map(|item| item.as_str().map(str::to_owned))
                .collect::<Option<Vec<_>>>()
                .map(|items| items.join(",")),
            _ => None,
        }
    }
}

/// A repeatable flag's values: a string or a list of strings; `hook` also
/// as a table of events (`before-tool-call = "./policy.sh"` or a list of
/// commands), each becoming `EVENT=COMMAND`. The second item is what the
/// key expects, for the error.
fn repeated_values(key: &str, value: &toml::Value) -> (Option<Vec<String>>, &'static str) {
    use toml::Value as V;
    let strings = |value: &V| match value {
        V::String(text) => Some(vec![text.clone()]),
        V::Array(items) => items
            .iter()
            .map(|item| item.as_str().map(str::to_owned))
            .collect(),
        _ => None,
    };
    if key != "hook" {
        return (strings(value), "must be a string or a list of strings");
    }
    let list = match value {
        V::Table(events) => events
            .iter()
            .map(|(event, commands)| {
                strings(commands).map(|commands| {
                    commands
                        .into_iter()
                        .map(|command| format!("{event}={command}"))
                        .collect::<Vec<_>>()
                })
            })
            .collect::<Option<Vec<_>>>()
            .map(|lists| lists.concat()),
        other => strings(other),
    };
    (
        list,
        "must be a table of events (before-tool-call = \"./policy.sh\", or a list of commands), \
         or a list of \"EVENT=COMMAND\" strings",
    )
}

fn unknown_key(path: &str, key: &str, flags: &[(String, bool)]) -> ConfigFileError {
    let dashed = key.replace('_', "-").to_lowercase();
    let variables = variable_keys();
    let known = flags
        .iter()
        .map(|(name, _)| name)
        .chain(&variables)
        .any(|name| *name == dashed);
    ConfigFileError::UnknownKey {
        path: path.to_owned(),
        key: key.to_owned(),
        hint: if known && dashed != key {
            format!(" (did you mean '{dashed}'?)")
        } else {
            String::new()
        },
        variables: variables.join(", "),
    }
}

#[cfg(test)]
mod tests;

//! The prompt step: the system message (`--system` or `--system-file`,
//! not both) and how stdin is treated.

use std::path::Path;

use crate::cli::Cli;
use crate::config::error::named_by_source;
use crate::config::input::{FILE_LIMIT, StdinMode, read_text_file};
use crate::config::layers::Source;
use crate::config::precedence::{SystemChoice, choose_system};
use crate::config::{ConfigError, Inputs};

/// The system message (empty for none) and the stdin mode.
pub(super) fn resolve(cli: &Cli, inputs: &Inputs<'_>) -> Result<(String, StdinMode), ConfigError> {
    let named = |id: &'static str| named_by_source(inputs, id);
    if inputs.origins.source("system") == Source::Flag
        && inputs.origins.source("system_file") == Source::Flag
    {
        return Err(ConfigError::SystemTwice);
    }
    let system = match choose_system(cli, inputs.origins) {
        SystemChoice::Text(text) => text.to_owned(),
        SystemChoice::File(path) => {
            read_input("--system-file", path).map_err(named("system_file"))?
        }
        SystemChoice::None => String::new(),
    };
    let stdin = if cli.no_stdin {
        StdinMode::Never
    } else if cli.stdin {
        StdinMode::Wait
    } else {
        StdinMode::Auto
    };
    if stdin == StdinMode::Never && cli.prompt.as_deref().is_none_or(|p| p == "-") {
        return Err(ConfigError::NoPrompt);
    }
    Ok((system, stdin))
}

/// Reads a file input, bounded by [`FILE_LIMIT`].
pub(super) fn read_input(flag: &'static str, path: &Path) -> Result<String, ConfigError> {
    read_text_file(path, FILE_LIMIT).map_err(|source| ConfigError::ReadFile {
        flag,
        path: path.display().to_string(),
        source,
    })
}

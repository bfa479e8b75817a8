//! Which config file a run reads, if any: the default location,
//! `--config FILE` (`LEASH_CONFIG`), or none (`--no-config`, `--bare`).
//! Decided from the command line and the real environment only, before
//! any file is read, so neither a config file nor a `.env` can choose it
//! (docs/src/configuration.md "Configuration").

use std::path::PathBuf;

use clap::ArgMatches;
use clap::parser::ValueSource;

use super::{ConfigFile, ConfigFileError};

/// The config file a run reads.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ConfigFileChoice {
    /// The default location (`None`: neither `XDG_CONFIG_HOME` nor `HOME`
    /// is set); a missing file is no file.
    Default(Option<PathBuf>),
    /// `--config FILE` or `LEASH_CONFIG`: this file, which must exist.
    Named(PathBuf),
    /// None: skipped, for the reason given (`--no-config`, `--bare`, or
    /// their variables).
    Skipped(&'static str),
}

/// Decides from a run's `matches` (the command line and the exported
/// variables, as clap read them) which config file it reads; `location`
/// is the default one. A higher layer's choice wins (the flag beats the
/// variable); within a layer, skipping beats `--config`.
pub fn config_file_choice(matches: &ArgMatches, location: Option<PathBuf>) -> ConfigFileChoice {
    let layer = |id: &str| match matches.value_source(id) {
        Some(ValueSource::CommandLine) => 0,
        Some(ValueSource::EnvVariable) => 1,
        _ => 2,
    };
    // `try_get_one`: after an ignored error clap may not have filled in
    // the defaults.
    let on = |id: &str| {
        matches
            .try_get_one::<bool>(id)
            .ok()
            .flatten()
            .is_some_and(|on| *on)
            .then(|| layer(id))
    };
    let skipped = [
        (
            "bare",
            "--bare: flags and the real environment only",
            "LEASH_BARE",
        ),
        ("no_config", "--no-config", "LEASH_NO_CONFIG"),
    ]
    .into_iter()
    .filter_map(|(id, flag, variable)| {
        on(id).map(|layer| (layer, if layer == 0 { flag } else { variable }))
    })
    .min_by_key(|(layer, _)| *layer);
    let named = matches
        .try_get_one::<PathBuf>("config_file")
        .ok()
        .flatten()
        .cloned()
        .map(|path| (layer("config_file"), path));
    match (skipped, named) {
        (Some((off, _)), Some((on, path))) if on < off => ConfigFileChoice::Named(path),
        (Some((_, by)), _) => ConfigFileChoice::Skipped(by),
        (None, Some((_, path))) => ConfigFileChoice::Named(path),
        (None, None) => ConfigFileChoice::Default(location),
    }
}

impl ConfigFileChoice {
    /// Loads the chosen file: a missing default file is no file, a
    /// missing named one an error.
    pub fn load(&self) -> Result<Option<ConfigFile>, ConfigFileError> {
        match self {
            ConfigFileChoice::Default(Some(path)) => ConfigFile::load(path),
            ConfigFileChoice::Named(path) => match ConfigFile::load(path)? {
                Some(file) => Ok(Some(file)),
                None => Err(ConfigFileError::Missing {
                    path: path.display().to_string(),
                }),
            },
            ConfigFileChoice::Default(None) | ConfigFileChoice::Skipped(_) => Ok(None),
        }
    }
}

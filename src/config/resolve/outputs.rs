//! The outputs step: `--transcript` and `--output-last-message` must be
//! creatable before the run starts.

use std::path::Path;

use crate::cli::Cli;
use crate::config::error::named_by_source;
use crate::config::output_file::link_on_path;
use crate::config::{ConfigError, Inputs};

/// Checks both output files, in that order.
pub(super) fn check(cli: &Cli, inputs: &Inputs<'_>) -> Result<(), ConfigError> {
    for (id, flag, path) in [
        ("transcript", "--transcript", &cli.transcript),
        (
            "output_last_message",
            "--output-last-message",
            &cli.output_last_message,
        ),
    ] {
        if let Some(path) = path {
            check_output_path(flag, path).map_err(named_by_source(inputs, id))?;
        }
    }
    Ok(())
}

/// An output file (`--transcript`, `--output-last-message`) must be
/// creatable: not a directory, not a link (docs/src/security.md "Security and limits"),
/// in a directory that exists. Nothing is
/// created here (`leash config` runs this too); an existing regular file
/// is opened for writing without truncating it.
fn check_output_path(flag: &'static str, path: &Path) -> Result<(), ConfigError> {
    let problem = |problem: String| ConfigError::OutputPath {
        flag,
        path: path.display().to_string(),
        problem,
    };
    if let Some(refused) = link_on_path(path) {
        return Err(problem(refused.into()));
    }
    match std::fs::metadata(path) {
        Ok(meta) if meta.is_dir() => Err(problem("it is a directory".into())),
        Ok(meta) if meta.is_file() => std::fs::OpenOptions::new()
            .write(true)
            .open(path)
            .map(|_| ())
            .map_err(|error| problem(error.to_string())),
        // A device or a pipe (`/dev/null`, `>(cat)`): opened by the run.
        Ok(_) => Ok(()),
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => {
            let parent = match path.parent() {
                Some(parent) if !parent.as_os_str().is_empty() => parent,
                _ => Path::new("."),
            };
            match std::fs::metadata(parent) {
                Ok(meta) if meta.is_dir() => Ok(()),
                Ok(_) => Err(problem(format!("{} is not a directory", parent.display()))),
                Err(error) => Err(problem(format!(
                    "its directory {}: {error}",
                    parent.display()
                ))),
            }
        }
        Err(error) => Err(problem(error.to_string())),
    }
}

//! The resume step: `--resume` reads a transcript (capped like every file
//! input), checks it and restores its conversation for the run's wire,
//! before any request (README "Resume"). It never trusts the file beyond
//! what [`crate::render::resume`] checks.

use crate::cli::Cli;
use crate::config::precedence::{SystemChoice, choose_system};
use crate::config::resolve::prompt::read_input;
use crate::config::{ConfigError, Inputs, ProviderConfig};
use crate::render::resume::{Resume, restore};

/// The checked transcript `--resume` names, if it names one.
pub(super) fn resolve(cli: &Cli, provider: &ProviderConfig) -> Result<Option<Resume>, ConfigError> {
    let Some(path) = &cli.resume else {
        return Ok(None);
    };
    let text = read_input("--resume", path)?;
    let restored = restore(&text, provider.wire()).map_err(|source| ConfigError::Resume {
        path: path.display().to_string(),
        source,
    })?;
    Ok(Some(Resume {
        path: path.clone(),
        text,
        restored,
    }))
}

/// The system message: one given (`-s`, `--system-file`, their variables
/// or the config file) wins; else the resumed transcript's. The notices
/// of the restore join the plan's.
pub(super) fn system(
    cli: &Cli,
    inputs: &Inputs<'_>,
    given: String,
    resume: Option<&Resume>,
    notices: &mut Vec<String>,
) -> String {
    let Some(resume) = resume else {
        return given;
    };
    notices.extend(resume.restored.notices.iter().cloned());
    match choose_system(cli, inputs.origins) {
        SystemChoice::None => resume.restored.system.clone(),
        _ => given,
    }
}

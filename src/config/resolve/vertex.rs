//! Vertex AI's own step (docs/src/vertex.md "Google Vertex AI"): the
//! location, the project and the credentials, each from its layer. The
//! credentials file and the project are the operator's: read from the
//! exported environment only, and a `.env` that sets one is refused when
//! the run would use it (a checkout could otherwise point leash at a file
//! of its choosing, or bill another project). A directly given access
//! token and the location come from any layer, as a key and a region do.

use std::path::PathBuf;
use std::sync::Arc;

use super::limits::Bounds;
use crate::cli::{Cli, ProviderName};
use crate::config::dotenv::DotEnvStatus;
use crate::config::error::in_source;
use crate::config::input::read_text_file;
use crate::config::layers::Source;
use crate::config::precedence::{
    check_key_destination, choose_api_key, choose_base_url, choose_model, choose_variable,
};
use crate::config::{ConfigError, Inputs, ProviderConfig};
use leash_protocol::secret::ApiKey;
use leash_provider::HttpSettings;
use leash_provider::vertex::credentials::{Credentials, FILE_LIMIT};
use leash_provider::vertex::is_claude;
use leash_provider::vertex::place::{GoogleCloud, endpoint, valid_name};
use leash_provider::vertex::token::GoogleTokens;

/// The credentials file, as Google's auth libraries read it.
pub const CREDENTIALS: &str = "GOOGLE_APPLICATION_CREDENTIALS";
/// The project: `google-genai`'s name, then `AnthropicVertex`'s.
pub const PROJECTS: [&str; 2] = ["GOOGLE_CLOUD_PROJECT", "ANTHROPIC_VERTEX_PROJECT_ID"];
/// The location: `google-genai`'s name, then `AnthropicVertex`'s.
pub const LOCATIONS: [&str; 2] = ["GOOGLE_CLOUD_LOCATION", "CLOUD_ML_REGION"];

/// An operator's variable: exported, never from a `.env` (one that sets
/// it is refused).
fn operator(inputs: &Inputs<'_>, name: &'static str) -> Result<Option<String>, ConfigError> {
    if let Some(value) = inputs.env.exported(name)
        && !value.trim().is_empty()
    {
        return Ok(Some(value.trim().to_owned()));
    }
    if let DotEnvStatus::Read { path, ignored, .. } = inputs.env.dotenv()
        && ignored.iter().any(|ignored| ignored == name)
    {
        return Err(ConfigError::Vertex(format!(
            ".env {} sets {name}, which a .env may not set (a checkout is not the operator): \
             export {name} instead",
            path.display()
        )));
    }
    Ok(None)
}

/// The location: `GOOGLE_CLOUD_LOCATION`, else `CLOUD_ML_REGION`, else
/// `global` (`google-genai`'s default).
pub fn location(inputs: &Inputs<'_>) -> (String, Source) {
    LOCATIONS
        .iter()
        .find_map(|name| choose_variable(inputs, name))
        .unwrap_or_else(|| ("global".to_owned(), Source::Default))
}

/// The project and its variable, as `leash config` shows it (the
/// credentials file's own is not read there).
pub fn project(inputs: &Inputs<'_>) -> Option<(String, Source)> {
    PROJECTS.iter().find_map(|name| {
        let value = inputs.env.exported(name)?;
        (!value.trim().is_empty()).then(|| (value.trim().to_owned(), Source::Env((*name).into())))
    })
}

/// The credentials file's path, as `leash config` shows it.
pub fn credentials_path(inputs: &Inputs<'_>) -> Option<String> {
    inputs
        .env
        .exported(CREDENTIALS)
        .filter(|value| !value.trim().is_empty())
}

/// The run's Vertex AI provider, and the secrets its credentials hold
/// (for the run's redaction), or what is missing.
pub(super) fn settings(
    cli: &Cli,
    inputs: &Inputs<'_>,
    bounds: &Bounds,
) -> Result<(ProviderConfig, Vec<ApiKey>), ConfigError> {
    let (location, location_source) = location(inputs);
    if !valid_name(&location, false) {
        return Err(ConfigError::Vertex(format!(
            "the location from {location_source} is not a location name (lower-case letters, \
             digits and '-': us-central1, europe-west4, global)"
        )));
    }
    let (token, credentials, secrets) = match choose_api_key(inputs, ProviderName::Vertex) {
        Some((token, source)) => {
            if let Some(character) = token.expose().chars().find(|c| c.is_control()) {
                return Err(ConfigError::KeyControl {
                    origin: source,
                    character: format!("U+{:04X}", u32::from(character)),
                });
            }
            (Some((token, source)), None, Vec::new())
        }
        None => {
            let Some(path) = operator(inputs, CREDENTIALS)? else {
                return Err(ConfigError::MissingKey {
                    var: "GOOGLE_APPLICATION_CREDENTIALS (or GOOGLE_OAUTH_ACCESS_TOKEN)",
                    provider: "vertex",
                    place: super::provider::key_place(inputs),
                });
            };
            let text = read_text_file(&PathBuf::from(&path), FILE_LIMIT).map_err(|err| {
                ConfigError::Vertex(format!("cannot read {CREDENTIALS} {path}: {err}"))
            })?;
            let credentials = Credentials::parse(&text).map_err(|problem| {
                ConfigError::Vertex(format!("{CREDENTIALS} {path} {problem}"))
            })?;
            let secrets = credentials.secrets();
            (None, Some((credentials, text)), secrets)
        }
    };
    let from_file = credentials
        .as_ref()
        .and_then(|(credentials, _)| credentials.project().map(str::to_owned));
    let project = match (
        operator(inputs, PROJECTS[0])?,
        operator(inputs, PROJECTS[1])?,
    ) {
        (Some(project), _) | (None, Some(project)) => project,
        (None, None) => from_file.ok_or(ConfigError::ProviderNeeds {
            provider: "vertex",
            what: "a project: set GOOGLE_CLOUD_PROJECT (or ANTHROPIC_VERTEX_PROJECT_ID)",
        })?,
    };
    if !valid_name(&project, true) {
        return Err(ConfigError::Vertex(
            "the project is not a project id (lower-case letters, digits, '-', and ':' or '.' \
             of a domain-scoped project)"
                .to_owned(),
        ));
    }
    let (base_url, url_source) = choose_base_url(cli, inputs, ProviderName::Vertex);
    let base_url = match url_source {
        Source::Default => endpoint(&location),
        _ => base_url,
    };
    let base_id = match url_source == inputs.origins.source("base_url") {
        true => "base_url",
        false => "google-vertex-base-url",
    };
    reqwest::Url::parse(&base_url)
        .ok()
        .filter(|url| matches!(url.scheme(), "http" | "https"))
        .ok_or_else(|| ConfigError::BaseUrl(base_url.clone()))
        .map_err(in_source(inputs, &url_source, base_id))?;
    let key_source = match &token {
        Some((_, source)) => source.clone(),
        None => Source::Env(CREDENTIALS.into()),
    };
    let trust = cli
        .trust_base_url
        .then(|| inputs.origins.source("trust_base_url"));
    check_key_destination(
        &key_source,
        &base_url,
        &url_source,
        trust.as_ref(),
        &endpoint(&location),
    )?;
    let settings = HttpSettings {
        google: Some(GoogleCloud { project, location }),
        token: credentials.map(|(credentials, text)| {
            Arc::new(GoogleTokens::new(credentials, &text))
                as Arc<dyn leash_provider::token::TokenSource>
        }),
        ..super::http::run_settings(cli, bounds.for_http(), base_url, token.map(|(t, _)| t))
    };
    let provider = match is_claude(&choose_model(cli, ProviderName::Vertex).0) {
        true => ProviderConfig::VertexClaude(settings),
        false => ProviderConfig::VertexGemini(settings),
    };
    Ok((provider, secrets))
}

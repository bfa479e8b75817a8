//! Bedrock's own step (docs/src/bedrock.md "Amazon Bedrock"): the
//! region, the credentials — a Bedrock API key, or access keys to sign
//! with — and the endpoint, each from its layer; a credential goes only to
//! an endpoint it may go to, as a key does.

use super::limits::Bounds;
use crate::cli::{Cli, ProviderName};
use crate::config::error::in_source;
use crate::config::layers::Source;
use crate::config::precedence::{check_key_destination, choose_base_url, choose_variable};
use crate::config::{ConfigError, Inputs};
use leash_protocol::secret::ApiKey;
use leash_provider::HttpSettings;
use leash_provider::bedrock::{AwsAuth, AwsKeys, regional_endpoint};

/// The variables Bedrock reads, as the AWS SDKs name them.
pub const BEARER: &str = "AWS_BEARER_TOKEN_BEDROCK";
/// The access key id.
pub const ACCESS_KEY_ID: &str = "AWS_ACCESS_KEY_ID";
/// The secret access key.
pub const SECRET_ACCESS_KEY: &str = "AWS_SECRET_ACCESS_KEY";
/// The session token of temporary credentials.
pub const SESSION_TOKEN: &str = "AWS_SESSION_TOKEN";

/// The region: `AWS_REGION`, else `AWS_DEFAULT_REGION`.
pub fn region(inputs: &Inputs<'_>) -> Option<(String, Source)> {
    choose_variable(inputs, "AWS_REGION").or_else(|| choose_variable(inputs, "AWS_DEFAULT_REGION"))
}

/// The endpoint: `--base-url`, `AWS_ENDPOINT_URL_BEDROCK_RUNTIME` or the
/// config file's (the base-URL layers), else `AWS_ENDPOINT_URL`, else the
/// region's own.
pub fn endpoint(cli: &Cli, inputs: &Inputs<'_>, region: &str) -> (String, Source) {
    let (url, source) = choose_base_url(cli, inputs, ProviderName::Bedrock);
    if source != Source::Default {
        return (url, source);
    }
    choose_variable(inputs, "AWS_ENDPOINT_URL")
        .unwrap_or_else(|| (regional_endpoint(region), Source::Default))
}

/// The run's Bedrock settings, or what is missing.
pub(super) fn settings(
    cli: &Cli,
    inputs: &Inputs<'_>,
    bounds: &Bounds,
) -> Result<HttpSettings, ConfigError> {
    if cli
        .model
        .as_deref()
        .is_none_or(|model| model.trim().is_empty())
    {
        return Err(ConfigError::ProviderNeeds {
            provider: "bedrock",
            what: "-m MODEL: a model id or inference profile Bedrock serves, e.g. \\
                   us.anthropic.claude-sonnet-4-5-20250929-v1:0",
        });
    }
    let Some((region, _)) = region(inputs) else {
        return Err(ConfigError::ProviderNeeds {
            provider: "bedrock",
            what: "a region: set AWS_REGION (or AWS_DEFAULT_REGION)",
        });
    };
    let bearer = choose_variable(inputs, BEARER);
    let secret = choose_variable(inputs, SECRET_ACCESS_KEY);
    let (credential_source, api_key, keys) = match (bearer, secret) {
        (Some((token, source)), _) => (source, ApiKey::new(token), None),
        (None, Some((secret, source))) => {
            let Some((access_key_id, _)) = choose_variable(inputs, ACCESS_KEY_ID) else {
                return Err(ConfigError::MissingKey {
                    var: ACCESS_KEY_ID,
                    provider: "bedrock",
                    place: super::provider::key_place(inputs),
                });
            };
            let keys = AwsKeys {
                access_key_id,
                secret_access_key: ApiKey::new(secret.clone()),
                session_token: choose_variable(inputs, SESSION_TOKEN)
                    .map(|(token, _)| ApiKey::new(token)),
            };
            (source, ApiKey::new(secret), Some(keys))
        }
        (None, None) => {
            return Err(ConfigError::MissingKey {
                var: "AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (or AWS_BEARER_TOKEN_BEDROCK)",
                provider: "bedrock",
                place: super::provider::key_place(inputs),
            });
        }
    };
    for value in [
        Some(&api_key),
        keys.as_ref().and_then(|k| k.session_token.as_ref()),
    ]
    .into_iter()
    .flatten()
    {
        if let Some(character) = value.expose().chars().find(|c| c.is_control()) {
            return Err(ConfigError::KeyControl {
                origin: credential_source.clone(),
                character: format!("U+{:04X}", u32::from(character)),
            });
        }
    }
    let (base_url, url_source) = endpoint(cli, inputs, &region);
    let base_id = match url_source == inputs.origins.source("base_url") {
        true => "base_url",
        false => "aws-endpoint-url-bedrock-runtime",
    };
    reqwest::Url::parse(&base_url)
        .ok()
        .filter(|url| matches!(url.scheme(), "http" | "https"))
        .ok_or_else(|| ConfigError::BaseUrl(base_url.clone()))
        .map_err(in_source(inputs, &url_source, base_id))?;
    let trust = cli
        .trust_base_url
        .then(|| inputs.origins.source("trust_base_url"));
    check_key_destination(
        &credential_source,
        &base_url,
        &url_source,
        trust.as_ref(),
        &regional_endpoint(&region),
    )?;
    Ok(HttpSettings {
        aws: Some(AwsAuth { region, keys }),
        ..super::http::run_settings(cli, bounds.for_http(), base_url, Some(api_key))
    })
}

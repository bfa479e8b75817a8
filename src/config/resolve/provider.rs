//! The provider step: which provider and API, its endpoint and key (a
//! key goes only to a base URL it may go to), or the faux model's script.

use std::net::IpAddr;

use super::limits::Bounds;
use super::prompt::read_input;
use crate::cli::{ApiName, Cli, ProviderName};
use crate::config::dotenv::DotEnvStatus;
use crate::config::error::{KeyPlace, in_source, named_by_source};
use crate::config::precedence::{
    api_notice, check_key_destination, choose_api, choose_api_key, choose_base_url,
    choose_variable, provider_info,
};
use crate::config::{ConfigError, Inputs, ProviderConfig};
use leash_faux::Script;
use leash_protocol::secret::ApiKey;
use leash_provider::HttpSettings;
use leash_provider::catalog;

/// The provider of the run, and the notices its choice of API gives.
pub(super) fn resolve(
    cli: &Cli,
    inputs: &Inputs<'_>,
    provider_name: ProviderName,
    bounds: &Bounds,
    bedrock: impl FnOnce() -> Result<HttpSettings, ConfigError>,
    vertex: impl FnOnce() -> Result<ProviderConfig, ConfigError>,
) -> Result<(ProviderConfig, Vec<String>), ConfigError> {
    let named = |id: &'static str| named_by_source(inputs, id);
    let (api, _) = choose_api(cli, inputs.origins, provider_name);
    let mut notices: Vec<String> = api_notice(cli, provider_name, api).into_iter().collect();
    notices.extend(thinking_temperature_notice(cli, provider_name));
    let two_apis = matches!(provider_name, ProviderName::Openai | ProviderName::Azure);
    if !two_apis && cli.api.is_some() {
        let provider = match provider_name {
            ProviderName::Faux => "faux",
            http => provider_info(http).name,
        };
        return Err(named("api")(ConfigError::ApiNotOpenAi { provider }));
    }
    let http = |provider| http_settings(cli, inputs, provider, bounds);
    let provider = match provider_name {
        // Without a script: the built-in reply, so a first try needs no key.
        ProviderName::Faux => match cli.faux_script.as_ref() {
            None => ProviderConfig::Faux(Script::builtin()),
            Some(path) => {
                let text = read_input("--faux-script", path).map_err(named("faux_script"))?;
                let script = Script::parse(&text, &path.display().to_string())
                    .map_err(|error| named("faux_script")(error.into()))?;
                ProviderConfig::Faux(script)
            }
        },
        ProviderName::Openai => match api {
            ApiName::Chat => ProviderConfig::OpenAi(http(provider_name)?),
            ApiName::Responses => ProviderConfig::OpenAiResponses(http(provider_name)?),
        },
        ProviderName::Anthropic => ProviderConfig::Anthropic(http(provider_name)?),
        ProviderName::Gemini => ProviderConfig::Gemini(http(provider_name)?),
        // Its own step (`resolve/bedrock.rs`), which the caller hands in.
        ProviderName::Bedrock => ProviderConfig::Bedrock(bedrock()?),
        // Its own step too (`resolve/vertex.rs`): the model picks the publisher.
        ProviderName::Vertex => vertex()?,
        ProviderName::Azure => {
            azure_needs(cli, inputs)?;
            let settings = HttpSettings {
                api_version: choose_variable(inputs, catalog::AZURE_API_VERSION)
                    .map(|(value, _)| value),
                ..http(provider_name)?
            };
            match api {
                ApiName::Chat => ProviderConfig::Azure(settings),
                ApiName::Responses => ProviderConfig::AzureResponses(settings),
            }
        }
    };
    Ok((provider, notices))
}

/// Anthropic refuses a temperature with thinking on, so the request leaves
/// `--temperature` out when a reasoning level is set (docs/src/providers.md "Providers"):
/// said, never silent.
fn thinking_temperature_notice(cli: &Cli, provider: ProviderName) -> Option<String> {
    let thinking = cli.reasoning_effort != crate::cli::ReasoningEffort::Off;
    (provider == ProviderName::Anthropic && thinking && cli.temperature.is_some()).then(|| {
        "--temperature is not sent: Anthropic takes no temperature with thinking on \
         (--reasoning-effort)"
            .to_owned()
    })
}

/// An HTTP provider's settings: its base URL, and its key checked for
/// control characters and for where it may be sent.
fn http_settings(
    cli: &Cli,
    inputs: &Inputs<'_>,
    provider: ProviderName,
    bounds: &Bounds,
) -> Result<HttpSettings, ConfigError> {
    let trust = cli
        .trust_base_url
        .then(|| inputs.origins.source("trust_base_url"));
    let (base_url, url_source) = choose_base_url(cli, inputs, provider);
    let base_file_key = provider_info(provider).base_url_file_key();
    let base_id = match url_source == inputs.origins.source("base_url") {
        true => "base_url",
        false => &*base_file_key,
    };
    let parsed = reqwest::Url::parse(&base_url)
        .ok()
        .filter(|url| matches!(url.scheme(), "http" | "https"))
        .ok_or_else(|| ConfigError::BaseUrl(base_url.clone()))
        .map_err(in_source(inputs, &url_source, base_id))?;
    let api_key = match choose_api_key(inputs, provider) {
        Some((key, key_source)) => {
            if let Some(character) = key.expose().chars().find(|c| c.is_control()) {
                return Err(ConfigError::KeyControl {
                    origin: key_source,
                    character: format!("U+{:04X}", u32::from(character)),
                });
            }
            check_key_destination(
                &key_source,
                &base_url,
                &url_source,
                trust.as_ref(),
                provider_info(provider).default_base_url,
            )?;
            Some(key)
        }
        None => None,
    };
    if api_key.is_none() && !is_loopback(&parsed) {
        let info = provider_info(provider);
        return Err(ConfigError::MissingKey {
            var: info.key_variable,
            provider: info.name,
            place: key_place(inputs),
        });
    }
    Ok(super::http::run_settings(
        cli,
        bounds.for_http(),
        base_url,
        api_key,
    ))
}

/// What Azure needs besides a key: an endpoint the user named (there is
/// no default one) and a deployment (`-m`).
fn azure_needs(cli: &Cli, inputs: &Inputs<'_>) -> Result<(), ConfigError> {
    if choose_base_url(cli, inputs, ProviderName::Azure)
        .0
        .trim()
        .is_empty()
    {
        return Err(ConfigError::ProviderNeeds {
            provider: "azure",
            what: "the resource's endpoint: set AZURE_OPENAI_ENDPOINT \
                   (https://NAME.openai.azure.com) or pass --base-url",
        });
    }
    if cli
        .model
        .as_deref()
        .is_none_or(|model| model.trim().is_empty())
    {
        return Err(ConfigError::ProviderNeeds {
            provider: "azure",
            what: "-m DEPLOYMENT: the name of the deployment to call",
        });
    }
    Ok(())
}

/// Where this run could read a missing key from: a GitHub Actions step
/// (the runner's own `GITHUB_ACTIONS`, never a `.env`'s) is told its
/// `env:` or the Action's input, a run that reads no `.env` the
/// environment alone.
pub(super) fn key_place(inputs: &Inputs<'_>) -> KeyPlace {
    if inputs.env.exported("GITHUB_ACTIONS").as_deref() == Some("true") {
        return KeyPlace::GitHubStep;
    }
    match inputs.env.dotenv() {
        DotEnvStatus::Off(_) => KeyPlace::Env,
        _ => KeyPlace::EnvOrDotEnv,
    }
}

/// Every key value the layers hold, whichever provider runs (see
/// [`RunPlan::known_keys`]).
pub(super) fn known_keys(inputs: &Inputs<'_>) -> Vec<ApiKey> {
    let from_env = catalog::key_variables().filter_map(|name| inputs.env.get(name));
    let from_file = catalog::key_variables().filter_map(|variable| {
        inputs
            .file
            .and_then(|file| file.get(&catalog::file_key(variable)))
            .map(str::to_owned)
    });
    from_env
        .chain(from_file)
        .map(|value| value.trim().to_owned())
        .filter(|value| !value.is_empty())
        .map(ApiKey::new)
        .collect()
}

/// Whether a URL points at this machine (local servers may go keyless).
fn is_loopback(url: &reqwest::Url) -> bool {
    match url.host_str() {
        Some("localhost") => true,
        Some(host) => host
            .trim_start_matches('[')
            .trim_end_matches(']')
            .parse::<IpAddr>()
            .is_ok_and(|ip| ip.is_loopback()),
        None => false,
    }
}

//! What every HTTP provider takes from the run's flags, whoever resolved
//! its endpoint and key (the generic provider step, Bedrock's own).

use serde_json::Value;
use tokio::time::Instant;

use crate::cli::Cli;
use leash_protocol::secret::ApiKey;
use leash_provider::HttpSettings;

/// The settings every HTTP provider takes from the run's flags, for
/// `base_url` and `api_key`.
pub(super) fn run_settings(
    cli: &Cli,
    (deadline, output_schema): (Option<Instant>, Option<Value>),
    base_url: String,
    api_key: Option<ApiKey>,
) -> HttpSettings {
    HttpSettings {
        retries: cli.retries,
        max_tokens: cli.max_tokens,
        temperature: cli.temperature,
        deadline,
        output_schema,
        cache: !cli.no_cache,
        prompt_cache_key: cli.prompt_cache_key.clone(),
        ..HttpSettings::new(base_url, api_key)
    }
}

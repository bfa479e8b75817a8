//! The providers leash can talk to, as one table: each one's name, the
//! variables of its key and base URL, its default base URL and default
//! model. Configuration, the config file's keys, `leash config` and the man
//! page read it; nothing else names a provider's variables.
//!
//! The config-file key of a variable is the variable in lower case with
//! dashes, without `LEASH_` (`OPENAI_API_KEY` → `openai-api-key`,
//! `LEASH_API_KEY` → `api-key`).

/// One provider of the table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProviderInfo {
    /// The provider's name (`--provider`).
    pub name: &'static str,
    /// The variable of its key (`OPENAI_API_KEY`).
    pub key_variable: &'static str,
    /// The variable of its base URL (`OPENAI_BASE_URL`).
    pub base_url_variable: &'static str,
    /// The base URL without `--base-url` or a variable.
    pub default_base_url: &'static str,
    /// The model without `--model`; empty when the provider has none (an
    /// Azure deployment is the user's own name): then `-m` is required.
    pub default_model: &'static str,
    /// The provider's other variables besides its key and base URL (Azure's
    /// `OPENAI_API_VERSION`): read from the environment, a `.env` and the
    /// config file like the base URL.
    pub settings: &'static [&'static str],
    /// Variables read for the key after `key_variable`, in order (Gemini's
    /// `GOOGLE_API_KEY`).
    pub more_key_variables: &'static [&'static str],
}

/// The Chat Completions API.
pub const OPENAI: ProviderInfo = ProviderInfo {
    name: "openai",
    key_variable: "OPENAI_API_KEY",
    base_url_variable: "OPENAI_BASE_URL",
    default_base_url: crate::openai::DEFAULT_BASE_URL,
    default_model: "gpt-4.1-mini",
    settings: &[],
    more_key_variables: &[],
};

/// The Anthropic Messages API.
pub const ANTHROPIC: ProviderInfo = ProviderInfo {
    name: "anthropic",
    key_variable: "ANTHROPIC_API_KEY",
    base_url_variable: "ANTHROPIC_BASE_URL",
    default_base_url: crate::anthropic::DEFAULT_BASE_URL,
    default_model: "claude-sonnet-4-5",
    settings: &[],
    more_key_variables: &[],
};

/// Azure OpenAI: the endpoint of the resource (`https://NAME.openai.azure.com`),
/// `-m` the deployment.
pub const AZURE: ProviderInfo = ProviderInfo {
    name: "azure",
    key_variable: "AZURE_OPENAI_API_KEY",
    base_url_variable: "AZURE_OPENAI_ENDPOINT",
    default_base_url: "",
    default_model: "",
    settings: &[AZURE_API_VERSION],
    more_key_variables: &[],
};

/// Google's own Gemini API (not Vertex AI).
pub const GEMINI: ProviderInfo = ProviderInfo {
    name: "gemini",
    key_variable: "GEMINI_API_KEY",
    base_url_variable: "GOOGLE_GEMINI_BASE_URL",
    default_base_url: crate::gemini::DEFAULT_BASE_URL,
    default_model: "gemini-2.5-flash",
    settings: &[],
    more_key_variables: &["GOOGLE_API_KEY"],
};

/// Azure's `api-version`, under the name the `openai` SDK reads.
pub const AZURE_API_VERSION: &str = "OPENAI_API_VERSION";

/// Amazon Bedrock: a Bedrock API key (`key_variable`), or access keys to
/// sign with; `-m` the model id.
pub const BEDROCK: ProviderInfo = ProviderInfo {
    name: "bedrock",
    key_variable: "AWS_BEARER_TOKEN_BEDROCK",
    base_url_variable: "AWS_ENDPOINT_URL_BEDROCK_RUNTIME",
    default_base_url: "",
    default_model: "",
    settings: &[
        "AWS_ACCESS_KEY_ID",
        "AWS_REGION",
        "AWS_DEFAULT_REGION",
        "AWS_ENDPOINT_URL",
    ],
    more_key_variables: &["AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN"],
};

/// Google Vertex AI: an access token given directly (`key_variable`,
/// the name Google's Terraform provider reads), else one exchanged from
/// `GOOGLE_APPLICATION_CREDENTIALS` (read from the exported environment
/// only, with the project: `config::resolve::vertex`); the location from
/// any layer.
pub const VERTEX: ProviderInfo = ProviderInfo {
    name: "vertex",
    key_variable: "GOOGLE_OAUTH_ACCESS_TOKEN",
    base_url_variable: "GOOGLE_VERTEX_BASE_URL",
    default_base_url: "",
    default_model: "gemini-2.5-flash",
    settings: &["GOOGLE_CLOUD_LOCATION", "CLOUD_ML_REGION"],
    more_key_variables: &[],
};

/// Every provider that speaks HTTP, in the order help texts list them.
pub const PROVIDERS: [ProviderInfo; 6] = [OPENAI, ANTHROPIC, AZURE, GEMINI, BEDROCK, VERTEX];

pub use leash_protocol::secret::ANY_KEY_VARIABLE;

impl ProviderInfo {
    /// The config-file key of the key (`openai-api-key`).
    pub fn key_file_key(&self) -> String {
        file_key(self.key_variable)
    }

    /// The config-file key of the base URL (`openai-base-url`).
    pub fn base_url_file_key(&self) -> String {
        file_key(self.base_url_variable)
    }
}

/// The variables the table names: every key variable, then every base-URL
/// variable, then the providers' other settings (`LEASH_API_KEY`,
/// `OPENAI_API_KEY`, ..., `OPENAI_BASE_URL`, ..., `OPENAI_API_VERSION`, ...).
pub fn variables() -> Vec<&'static str> {
    std::iter::once(ANY_KEY_VARIABLE)
        .chain(key_variables().skip(1))
        .chain(PROVIDERS.iter().map(|provider| provider.base_url_variable))
        .chain(
            PROVIDERS
                .iter()
                .flat_map(|provider| provider.settings.iter().copied()),
        )
        .collect()
}

/// Every variable that may hold a key, whichever provider runs.
pub fn key_variables() -> impl Iterator<Item = &'static str> {
    leash_protocol::secret::KEY_VARIABLES.into_iter()
}

/// A variable's config-file key: without `LEASH_` (as for the flags'
/// variables), lower case, with dashes.
pub fn file_key(variable: &str) -> String {
    let name = variable.strip_prefix("LEASH_").unwrap_or(variable);
    name.to_ascii_lowercase().replace('_', "-")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_gives_the_variables_and_their_file_keys_in_order() {
        assert_eq!(
            variables(),
            [
                "LEASH_API_KEY",
                "OPENAI_API_KEY",
                "ANTHROPIC_API_KEY",
                "AZURE_OPENAI_API_KEY",
                "GEMINI_API_KEY",
                "GOOGLE_API_KEY",
                "AWS_BEARER_TOKEN_BEDROCK",
                "AWS_SECRET_ACCESS_KEY",
                "AWS_SESSION_TOKEN",
                "GOOGLE_OAUTH_ACCESS_TOKEN",
                "OPENAI_BASE_URL",
                "ANTHROPIC_BASE_URL",
                "AZURE_OPENAI_ENDPOINT",
                "GOOGLE_GEMINI_BASE_URL",
                "AWS_ENDPOINT_URL_BEDROCK_RUNTIME",
                "GOOGLE_VERTEX_BASE_URL",
                "OPENAI_API_VERSION",
                "AWS_ACCESS_KEY_ID",
                "AWS_REGION",
                "AWS_DEFAULT_REGION",
                "AWS_ENDPOINT_URL",
                "GOOGLE_CLOUD_LOCATION",
                "CLOUD_ML_REGION",
            ]
        );
        assert_eq!(ANTHROPIC.key_file_key(), "anthropic-api-key");
        assert_eq!(file_key(ANY_KEY_VARIABLE), "api-key");
        assert_eq!(OPENAI.base_url_file_key(), "openai-base-url");
        assert_eq!(OPENAI.default_base_url, "https://api.openai.com/v1");
    }

    #[test]
    fn every_provider_key_variable_is_a_known_key_variable() {
        // The key module's list is what redaction and the children's
        // environments use; a provider whose key is missing from it
        // would leak that key to a hook.
        let table: Vec<&str> = std::iter::once(ANY_KEY_VARIABLE)
            .chain(PROVIDERS.iter().flat_map(|provider| {
                std::iter::once(provider.key_variable)
                    .chain(provider.more_key_variables.iter().copied())
            }))
            .collect();
        assert_eq!(table, leash_protocol::secret::KEY_VARIABLES);
    }
}

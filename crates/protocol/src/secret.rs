//! The key and everything that keeps it from leaving: the key type whose
//! `Debug` and `Display` hide it, the variables that may hold one, and
//! redaction (one key in a provider's message, every known key in a
//! tool's result, in a hook's or MCP server's environment, at the cut
//! edge of a piece). ARCHITECTURE.md "The key never leaves" has the rule;
//! this module is its one home.
//!
//! *Never* prints, logs or formats a key other than as `***`.

mod redact;

pub use redact::{bytes_hold_a_key, holds_a_key, key_set, redact, redact_cut_edges, redact_keys};

/// The key variable of whichever provider runs; it wins over the
/// provider's own within a layer.
pub const ANY_KEY_VARIABLE: &str = "LEASH_API_KEY";

/// Every variable that may hold a key, whichever provider runs: the
/// provider table (`provider::catalog`) names one of these per provider.
pub const KEY_VARIABLES: [&str; 10] = [
    ANY_KEY_VARIABLE,
    "OPENAI_API_KEY",
    "ANTHROPIC_API_KEY",
    "AZURE_OPENAI_API_KEY",
    "GEMINI_API_KEY",
    "GOOGLE_API_KEY",
    "AWS_BEARER_TOKEN_BEDROCK",
    "AWS_SECRET_ACCESS_KEY",
    "AWS_SESSION_TOKEN",
    "GOOGLE_OAUTH_ACCESS_TOKEN",
];

/// An API key. Its `Debug` and `Display` print `***`, so it cannot reach a
/// log, an event or an error message by accident; `expose` is the one way
/// to read it, for the request header.
#[derive(Clone, PartialEq, Eq)]
pub struct ApiKey(String);

impl ApiKey {
    /// Wraps a key.
    pub fn new(key: impl Into<String>) -> Self {
        ApiKey(key.into())
    }

    /// The key itself, for the one header that carries it.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Debug for ApiKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("***")
    }
}

impl std::fmt::Display for ApiKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("***")
    }
}

//! A bearer token got when a request is sent, not when the run is
//! configured: Vertex AI's Google access token, exchanged from the
//! credentials file and cached for its lifetime. The driver asks the
//! source before each request and sends what it gives in the format's
//! key header; it never formats the token but as `***`.

use futures::future::BoxFuture;

use leash_protocol::secret::ApiKey;

/// Where a provider's short-lived bearer token comes from.
pub trait TokenSource: Send + Sync + std::fmt::Debug {
    /// The token to send now (cached while it is fresh), or why there is
    /// none, in words that quote no secret.
    fn token(&self) -> BoxFuture<'static, Result<ApiKey, String>>;
}

//! Providers: the one seam between the loop and a model. A provider turns
//! one request (context + tools) into a stream of [`StreamEvent`]s — the
//! single internal vocabulary every wire format is decoded into — and knows
//! nothing of turns, tools or hooks. The loop assembles the events into an
//! assistant message.
//!
//! A provider must never panic on what a server sends, never let the API key
//! reach an event or an error message, and must stop all I/O as soon as its
//! stream is dropped (that is how abort works).

pub mod anthropic;
pub mod azure;
pub mod bedrock;
pub(crate) mod catalog;
pub(crate) mod content;
pub(crate) mod driver;
pub mod faux;
pub mod gemini;
pub(crate) mod http;
pub mod openai;
pub mod openai_responses;
mod options;
#[cfg(test)]
mod shared_endings_tests;
pub(crate) mod sse;
/// The SSE builders the unit and integration tests share; test builds only.
#[cfg(any(test, feature = "testing"))]
#[doc(hidden)]
pub mod testing;
pub mod token;
pub mod vertex;

use futures::stream::BoxStream;
use serde_json::Value;

use crate::protocol::{Message, StreamEvent, ToolSpec};

pub use options::{RequestOptions, ThinkingLevel};

/// How every error for a reply that did not arrive whole ends, on every
/// provider: a script can tell the case apart whatever the wire format.
pub const INCOMPLETE: &str = "the reply is incomplete";

/// The error of a stream that ended in good order but never said how the
/// reply ended (OpenAI: `[DONE]` without a `finish_reason`; Anthropic:
/// `message_stop` without a `stop_reason`). The same words on every provider.
pub const NO_STOP_REASON: &str = "the stream ended without a stop reason; the reply is incomplete";

/// Everything one provider request needs. Borrowed: providers serialize the
/// body before their stream starts, so nothing is cloned per request.
///
/// **Resolved or whole.** `system`, `messages` and `tools` are the request
/// resolved for a wire: system messages folded into `system` (and, with
/// `Declarations::InTranscript`, into `tools`), custom messages left out.
/// Every built-in provider reads only those, so its wire is what it always
/// was. `transcript` is the same context *unresolved* — as
/// `convert_to_llm` left it, every system message where it stood, custom
/// messages kept — for a provider that wants to map the transcript itself
/// (Pi's stream function gets `{ messages }` alone): with
/// `InTranscript` it says everything the model is to be told, and such a
/// provider may ignore `system` and `tools`. A provider that does not ask
/// never looks at it; it costs nothing (a borrow of what the loop holds).
/// With `Declarations::Beside` the configuration's prompt and tools are
/// not in the transcript: they stay in `system` and `tools`.
#[derive(Debug, Clone, Copy)]
pub struct Request<'a> {
    /// The model to ask.
    pub model: &'a str,
    /// The system message; empty for none.
    pub system: &'a str,
    /// The conversation so far: user, assistant and tool-result messages.
    /// A wire skips system and custom messages: the loop folds system
    /// messages into `system` and `tools` before a request, and a custom
    /// role means nothing to a model (ARCHITECTURE.md §1.2).
    pub messages: &'a [Message],
    /// The tools the model may call.
    pub tools: &'a [ToolSpec],
    /// The whole transcript this request was resolved from, unresolved
    /// (see "Resolved or whole" above): a provider that maps system
    /// messages itself reads it; the built-in ones never do. Empty when
    /// the caller built a request without one.
    ///
    /// ```
    /// use futures::stream::{self, BoxStream, StreamExt};
    /// use leash::protocol::{Message, StopReason, StreamEvent};
    /// use leash::provider::{Provider, Request};
    ///
    /// /// A model that says where the first system message stood.
    /// struct Whole;
    ///
    /// impl Provider for Whole {
    ///     fn name(&self) -> &str {
    ///         "whole"
    ///     }
    ///
    ///     fn stream(&self, request: Request<'_>) -> BoxStream<'static, StreamEvent> {
    ///         let at = request.transcript.iter().position(|m| m.role() == "system");
    ///         let text = format!("system message at {at:?}");
    ///         stream::iter([StreamEvent::Text(text), StreamEvent::Done(StopReason::Stop)]).boxed()
    ///     }
    /// }
    /// # let _ = Whole;
    /// ```
    pub transcript: &'a [Message],
    /// The thinking level and session id (the default asks for neither).
    pub options: RequestOptions<'a>,
}

/// A model the loop can ask. Dropping the returned stream cancels the
/// request at once (the connection is closed, not drained).
///
/// A provider of one's own (a test double, a model leash has no wire
/// format for) yields [`StreamEvent`]s; the loop builds the assistant
/// message from them:
///
/// ```
/// use std::sync::Arc;
///
/// use futures::stream::{self, BoxStream, StreamExt};
/// use leash::agent::{Agent, Declarations, LoopConfig, NoHooks, ToolExecution};
/// use leash::protocol::{Message, StopReason, StreamEvent};
/// use leash::provider::{Provider, Request};
///
/// /// A model that says how long the conversation is.
/// struct Counter;
///
/// impl Provider for Counter {
///     fn name(&self) -> &str {
///         "counter"
///     }
///
///     fn stream(&self, request: Request<'_>) -> BoxStream<'static, StreamEvent> {
///         let text = format!("{} message(s) so far", request.messages.len());
///         stream::iter([StreamEvent::Text(text), StreamEvent::Done(StopReason::Stop)]).boxed()
///     }
/// }
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let config = LoopConfig {
///     model: "counter-1".to_owned(),
///     system: String::new(),
///     tools: Vec::new(),
///     declarations: Declarations::Beside,
///     tool_execution: ToolExecution::Parallel,
///     hooks: Arc::new(NoHooks),
/// };
/// let agent = Agent::new(Arc::new(Counter), config);
/// let added = agent.prompt(vec![Message::user_text("hi")]).await?;
/// let Some(Message::Assistant(reply)) = added.last() else {
///     panic!("the run ends with the model's reply");
/// };
/// assert_eq!(reply.text(), "1 message(s) so far");
/// assert_eq!((reply.provider.as_str(), reply.model.as_str()), ("counter", "counter-1"));
/// # Ok(())
/// # }
/// ```
pub trait Provider: Send + Sync {
    /// The provider's name as it appears in messages (`openai`, `anthropic`, `faux`).
    fn name(&self) -> &str;

    /// Starts one request. The stream ends after `Done` or `Error`; a stream
    /// that ends without either is treated as broken by the loop.
    fn stream(&self, request: Request<'_>) -> BoxStream<'static, StreamEvent>;
}

pub use crate::secret::ApiKey;
pub use driver::{RateGate, RateHint};

/// One HTTP client for many requests to `base_url` (the items of a
/// batch share its connection pool through [`HttpSettings::client`]). It
/// must be used on the runtime that first uses it: a pooled connection
/// belongs to its runtime.
pub fn shared_client(base_url: &str) -> Result<reqwest::Client, String> {
    http::client(http::Tls::for_url(base_url))
}

/// What the HTTP providers share from the configuration.
#[derive(Debug, Clone)]
pub struct HttpSettings {
    /// The API base, e.g. `https://api.openai.com/v1` (a trailing slash is fine).
    pub base_url: String,
    /// The key; `None` only for keyless local servers.
    pub api_key: Option<ApiKey>,
    /// Retries after the first attempt (`--retries`).
    pub retries: u32,
    /// `--max-tokens`.
    pub max_tokens: Option<u32>,
    /// `--temperature`.
    pub temperature: Option<f32>,
    /// When the run's abort timer fires; no retry waits past it.
    pub deadline: Option<tokio::time::Instant>,
    /// `--output-schema`: ask the API for JSON valid against this schema.
    pub output_schema: Option<Value>,
    /// Prompt caching on (the default) or off (`--no-cache`). Anthropic
    /// reads it to place its `cache_control` breakpoints; OpenAI caches by
    /// prefix on its own and cannot be told not to, so its formats ignore it.
    pub cache: bool,
    /// The rate budget this request shares with others (the items of a
    /// batch): it waits at the gate before it is sent, and a refusal
    /// pauses every request that holds the same gate.
    pub gate: Option<std::sync::Arc<RateGate>>,
    /// An HTTP client to share (one connection pool for every item of a
    /// batch, from [`shared_client`]); `None`: the provider builds its own.
    pub client: Option<reqwest::Client>,
    /// `--prompt-cache-key`: sent as `prompt_cache_key` by the OpenAI
    /// formats (it routes requests that share a prefix to the same cache);
    /// Anthropic has no such field.
    pub prompt_cache_key: Option<String>,
    /// Azure OpenAI's `api-version` query parameter (`OPENAI_API_VERSION`);
    /// `None` on every other provider, and on Azure for its default.
    pub api_version: Option<String>,
    /// Amazon Bedrock's region and access keys (`None` on every other
    /// provider); with keys, requests are signed with SigV4 and `api_key`
    /// holds the secret key only so that errors are redacted of it.
    pub aws: Option<bedrock::auth::AwsAuth>,
    /// Vertex AI's project and location (`None` on every other provider).
    pub google: Option<vertex::place::GoogleCloud>,
    /// Where a bearer token is got before each request when the key is
    /// not known up front (Vertex AI's access token, exchanged from a
    /// credentials file); `None`: `api_key` is the key.
    pub token: Option<std::sync::Arc<dyn token::TokenSource>>,
}

impl HttpSettings {
    /// The secrets besides `api_key` that a provider's message could
    /// quote and that are redacted from it like the key: Bedrock's session
    /// token.
    pub fn other_secrets(&self) -> Vec<ApiKey> {
        let session = self
            .aws
            .as_ref()
            .and_then(|aws| aws.keys.as_ref())
            .and_then(|keys| keys.session_token.clone());
        session.into_iter().collect()
    }

    /// The retries of a failed request when the caller says nothing: the
    /// default of `--retries`.
    pub const DEFAULT_RETRIES: u32 = 2;

    /// Settings for the API at `base_url` with `api_key`, everything else
    /// as a run without flags has it: [`Self::DEFAULT_RETRIES`], no
    /// output limit, temperature, deadline, schema or cache key, caching
    /// on. The one place those defaults live; a caller changes a field by
    /// struct update (`HttpSettings { retries: 0, ..HttpSettings::new(…) }`).
    pub fn new(base_url: impl Into<String>, api_key: Option<ApiKey>) -> Self {
        HttpSettings {
            base_url: base_url.into(),
            api_key,
            retries: Self::DEFAULT_RETRIES,
            max_tokens: None,
            temperature: None,
            deadline: None,
            output_schema: None,
            cache: true,
            gate: None,
            client: None,
            prompt_cache_key: None,
            api_version: None,
            aws: None,
            google: None,
            token: None,
        }
    }
}

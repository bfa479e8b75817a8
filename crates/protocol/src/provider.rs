//! The one seam between the loop and a model: a [`Provider`] turns one
//! [`Request`] (context + tools) into a stream of [`StreamEvent`]s — the
//! single vocabulary every wire format is decoded into — and knows nothing
//! of turns, tools or hooks. The wire formats implementing it live in
//! `leash-provider`; the loop (`leash-agent`) sees only this.
//!
//! A provider must never panic on what a server sends, never let the API key
//! reach an event or an error message, and must stop all I/O as soon as its
//! stream is dropped (that is how abort works).

mod options;

use futures::stream::BoxStream;

use crate::{Message, StreamEvent, ToolSpec};

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
    /// use leash_protocol::{Message, StopReason, StreamEvent};
    /// use leash_protocol::provider::{Provider, Request};
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
/// use leash_agent::{Agent, Declarations, LoopConfig, NoHooks, ToolExecution};
/// use leash_protocol::{Message, StopReason, StreamEvent};
/// use leash_protocol::provider::{Provider, Request};
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

//! The stateful wrapper around the pure loop (Pi's `Agent`): it keeps the
//! transcript between runs, the steering and follow-up queues, the event
//! listeners, and the one run that may be in progress.
//!
//! As in Pi, the transcript grows at each `message_end` (ARCHITECTURE.md §1.4), and
//! every listener is awaited, in subscription order, before the loop goes on.
//!
//! It must never start a second run while one is in progress, and an abort
//! must always reach the run in progress.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use futures::future::BoxFuture;
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

use super::agent_loop::{
    ContinueError, LoopConfig, MessageQueues, RunInputs, run_agent_loop, run_agent_loop_continue,
};
use super::lock::lock;
use super::queues::{QueueHandle, QueueMode, Queues, SkipFirstSteering};
use super::state::RunView;
use super::transcript::{Declarations, current_system_message, initial_system_message};
use super::types::{AgentEvent, EventSink};
use leash_protocol::Message;
use leash_protocol::provider::{Provider, RequestOptions, ThinkingLevel};

mod error;
mod state_api;

pub use error::AgentError;

/// A listener called inline with each event.
pub type Listener = Arc<dyn Fn(&AgentEvent) + Send + Sync>;

/// A listener whose future the run awaits before it goes on (Pi's async
/// subscribers). It gets its own copy of the event and the run's
/// cancellation token.
pub type AsyncListener =
    Arc<dyn Fn(AgentEvent, CancellationToken) -> BoxFuture<'static, ()> + Send + Sync>;

/// One subscriber, either kind.
#[derive(Clone)]
enum Subscriber {
    Inline(Listener),
    Async(AsyncListener),
}

struct Shared {
    provider: Arc<dyn Provider>,
    config: Mutex<LoopConfig>,
    thinking: Mutex<ThinkingLevel>,
    session_id: Mutex<Option<String>>,
    transcript: Mutex<Vec<Message>>,
    /// The run's view (streaming message, pending calls, error message).
    view: Mutex<RunView>,
    queues: Arc<Queues>,
    /// Copied on write, so emitting an event costs one reference count.
    listeners: Mutex<Arc<Vec<(u64, Subscriber)>>>,
    next_listener: AtomicU64,
    /// The cancellation token of the run in progress, if any.
    run: Mutex<Option<CancellationToken>>,
    idle: watch::Sender<bool>,
}

/// An agent: a provider, a configuration and a transcript that grows with
/// each prompt. Cheap to clone; clones share everything.
///
/// One prompt over the scripted `faux` model (`crates/agent/examples/embed.rs` adds a
/// tool and a listener):
///
/// ```
/// use std::sync::Arc;
///
/// use leash_agent::{Agent, Declarations, LoopConfig, NoHooks, ToolExecution};
/// use leash_protocol::Message;
/// use leash_faux::{FauxProvider, Script};
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let script = Script::parse(r#"[{"text": "Hello!"}]"#, "inline script")?;
/// let agent = Agent::new(
///     Arc::new(FauxProvider::new(script)),
///     LoopConfig {
///         model: "faux".to_owned(),
///         system: String::new(),
///         tools: Vec::new(),
///         declarations: Declarations::Beside,
///         tool_execution: ToolExecution::Parallel,
///         hooks: Arc::new(NoHooks),
///     },
/// );
/// let added = agent.prompt(vec![Message::user_text("Say hello.")]).await?;
/// let Some(Message::Assistant(reply)) = added.last() else {
///     panic!("the run ends with the model's reply");
/// };
/// assert_eq!(reply.text(), "Hello!");
/// // The transcript keeps the prompt and the reply for the next prompt.
/// assert_eq!(agent.messages().len(), 2);
/// # Ok(())
/// # }
/// ```
#[derive(Clone)]
pub struct Agent {
    shared: Arc<Shared>,
}

/// Removes its listener when dropped or when `unsubscribe` is called.
#[must_use = "dropping the subscription unsubscribes the listener"]
pub struct Subscription {
    shared: std::sync::Weak<Shared>,
    id: u64,
}

impl Subscription {
    /// Stops the listener from receiving further events.
    pub fn unsubscribe(self) {}
}

impl Drop for Subscription {
    fn drop(&mut self) {
        if let Some(shared) = self.shared.upgrade() {
            let mut listeners = lock(&shared.listeners);
            let kept = listeners
                .iter()
                .filter(|(id, _)| *id != self.id)
                .cloned()
                .collect();
            *listeners = Arc::new(kept);
        }
    }
}

impl Agent {
    /// An idle agent with an empty transcript.
    pub fn new(provider: Arc<dyn Provider>, config: LoopConfig) -> Self {
        Agent::with_queues(provider, config, QueueHandle::default())
    }

    /// An idle agent on the process's default provider (Pi's
    /// `getDefaultStreamFn`, read once, now); refused when none is set.
    pub fn with_default_provider(config: LoopConfig) -> Result<Self, AgentError> {
        let provider = super::default_provider().ok_or(AgentError::NoProvider)?;
        Ok(Agent::new(provider, config))
    }

    /// An idle agent on `queues`, made first so its hooks can hold them.
    pub fn with_queues(
        provider: Arc<dyn Provider>,
        config: LoopConfig,
        queues: QueueHandle,
    ) -> Self {
        let (idle, _) = watch::channel(true);
        let (config, transcript) = initial_transcript(config);
        Agent {
            shared: Arc::new(Shared {
                provider,
                config: Mutex::new(config),
                thinking: Mutex::new(ThinkingLevel::Off),
                session_id: Mutex::new(None),
                transcript: Mutex::new(transcript),
                view: Mutex::new(RunView::default()),
                queues: queues.queues,
                listeners: Mutex::new(Arc::new(Vec::new())),
                next_listener: AtomicU64::new(0),
                run: Mutex::new(None),
                idle,
            }),
        }
    }

    /// Runs one prompt to its end and returns the messages it added. Fails
    /// at once, changing nothing, while another run is in progress. Resolves
    /// after every listener has finished with every event of the run.
    pub async fn prompt(&self, messages: Vec<Message>) -> Result<Vec<Message>, AgentError> {
        let (cancel, _finished) = self.start_run()?;
        Ok(self.run(Start::Prompt(messages), false, &cancel).await)
    }

    /// Runs from the transcript as it is, without a new prompt (Pi's
    /// `continue()`; `continue` is a Rust keyword). When the transcript ends
    /// in an assistant message, queued steering (the run then skips its first
    /// steering poll) or else queued follow-ups become the run's prompt, as
    /// in Pi. Refused on an empty transcript, on one ending in an assistant
    /// message with both queues empty, and while a run is in progress.
    pub async fn continue_run(&self) -> Result<Vec<Message>, AgentError> {
        let (cancel, _finished) = self
            .start_run()
            .map_err(|_| AgentError::ContinueWhileRunning)?;
        let ends_with_assistant = {
            let transcript = lock(&self.shared.transcript);
            // Declarations alone are nothing to answer (Pi's rule).
            if transcript.iter().all(|m| matches!(m, Message::System(_))) {
                return Err(ContinueError::NoMessages.into());
            }
            matches!(transcript.last(), Some(Message::Assistant(_)))
        };
        if !ends_with_assistant {
            return Ok(self.run(Start::Continue, false, &cancel).await);
        }
        let steering = self.shared.queues.steering();
        if !steering.is_empty() {
            return Ok(self.run(Start::Prompt(steering), true, &cancel).await);
        }
        let follow_ups = self.shared.queues.follow_ups();
        if !follow_ups.is_empty() {
            return Ok(self.run(Start::Prompt(follow_ups), false, &cancel).await);
        }
        Err(ContinueError::EndsWithAssistant.into())
    }

    /// Empties the transcript, both queues and the error message. Refused
    /// while a run is in progress. With [`Declarations::InTranscript`] the
    /// system messages' sum stays, as one system message (Pi's baseline).
    pub fn reset(&self) -> Result<(), AgentError> {
        let run = lock(&self.shared.run);
        if run.is_some() {
            return Err(AgentError::ResetWhileRunning);
        }
        let mut transcript = lock(&self.shared.transcript);
        let baseline = current_system_message(&transcript).map(Message::System);
        *transcript = baseline.into_iter().collect();
        drop(transcript);
        lock(&self.shared.view).begin();
        self.clear_queues();
        Ok(())
    }

    /// Replaces the transcript with `messages` (an earlier conversation
    /// to continue, `--resume`). Refused while a run is in progress.
    pub fn restore(&self, messages: Vec<Message>) -> Result<(), AgentError> {
        let run = lock(&self.shared.run);
        if run.is_some() {
            return Err(AgentError::AlreadyRunning);
        }
        *lock(&self.shared.transcript) = messages;
        Ok(())
    }

    /// Claims the one run slot; the guard frees it when dropped (also when
    /// the run's future is dropped half-way).
    fn start_run(&self) -> Result<(CancellationToken, RunGuard<'_>), AgentError> {
        let mut run = lock(&self.shared.run);
        if run.is_some() {
            return Err(AgentError::AlreadyRunning);
        }
        let cancel = CancellationToken::new();
        *run = Some(cancel.clone());
        lock(&self.shared.view).begin();
        self.shared.idle.send_replace(false);
        Ok((
            cancel,
            RunGuard {
                shared: &self.shared,
            },
        ))
    }

    async fn run(
        &self,
        start: Start,
        skip_first_steering: bool,
        cancel: &CancellationToken,
    ) -> Vec<Message> {
        let config = lock(&self.shared.config).clone();
        let context = lock(&self.shared.transcript).clone();
        let thinking = *lock(&self.shared.thinking);
        let session_id = lock(&self.shared.session_id).clone();
        let queues = SkipFirstSteering {
            queues: &self.shared.queues,
            skipped: AtomicBool::new(!skip_first_steering),
        };
        let sink = RunSink {
            shared: &self.shared,
            cancel: cancel.clone(),
        };
        let inputs = RunInputs {
            provider: self.shared.provider.as_ref(),
            config: &config,
            queues: &queues,
            cancel,
            emit: &sink,
            options: RequestOptions {
                thinking,
                session_id: session_id.as_deref(),
            },
        };
        match start {
            Start::Prompt(messages) => run_agent_loop(messages, context, inputs).await,
            // The transcript was checked under the run slot; nothing else
            // can change it before the loop reads it.
            Start::Continue => run_agent_loop_continue(context, inputs)
                .await
                .unwrap_or_default(),
        }
    }

    /// Cancels the run in progress, if any: the stream is dropped, running
    /// tools are told to stop, `turn_end` and `agent_end` still follow.
    pub fn abort(&self) {
        if let Some(cancel) = lock(&self.shared.run).as_ref() {
            cancel.cancel();
        }
    }

    /// Whether a run is in progress.
    pub fn is_running(&self) -> bool {
        lock(&self.shared.run).is_some()
    }

    /// Returns when no run is in progress (every listener is awaited by the
    /// run, so they are done too).
    pub async fn wait_for_idle(&self) {
        let mut idle = self.shared.idle.subscribe();
        let _ = idle.wait_for(|idle| *idle).await;
    }

    /// Calls `listener` with every event from now on, until the returned
    /// subscription is dropped.
    pub fn subscribe(
        &self,
        listener: impl Fn(&AgentEvent) + Send + Sync + 'static,
    ) -> Subscription {
        self.add_subscriber(Subscriber::Inline(Arc::new(listener)))
    }

    /// Like [`subscribe`](Self::subscribe) for an async listener: the run
    /// awaits its future before the next listener and before the loop goes
    /// on, so `prompt` resolves only after it finished with `agent_end`.
    pub fn subscribe_async(
        &self,
        listener: impl Fn(AgentEvent, CancellationToken) -> BoxFuture<'static, ()>
        + Send
        + Sync
        + 'static,
    ) -> Subscription {
        self.add_subscriber(Subscriber::Async(Arc::new(listener)))
    }

    fn add_subscriber(&self, subscriber: Subscriber) -> Subscription {
        let id = self.shared.next_listener.fetch_add(1, Ordering::Relaxed);
        let mut listeners = lock(&self.shared.listeners);
        let mut updated = Vec::clone(&listeners);
        updated.push((id, subscriber));
        *listeners = Arc::new(updated);
        Subscription {
            shared: Arc::downgrade(&self.shared),
            id,
        }
    }

    /// Queues a message delivered before the next request of the run.
    pub fn steer(&self, message: Message) {
        lock(&self.shared.queues.steering)
            .messages
            .push_back(message);
    }

    /// Queues a message delivered when the agent would otherwise stop.
    pub fn follow_up(&self, message: Message) {
        lock(&self.shared.queues.follow_up)
            .messages
            .push_back(message);
    }

    /// A handle that can queue messages without holding the agent, for
    /// hooks that must steer the run they belong to.
    pub fn queue_handle(&self) -> QueueHandle {
        QueueHandle {
            queues: Arc::clone(&self.shared.queues),
        }
    }

    /// What the next steering poll would deliver (all of the queue or its
    /// first message, by mode), without taking it.
    pub fn peek_steering(&self) -> Vec<Message> {
        lock(&self.shared.queues.steering).peek()
    }

    /// What the next follow-up poll would deliver, without taking it.
    pub fn peek_follow_ups(&self) -> Vec<Message> {
        lock(&self.shared.queues.follow_up).peek()
    }

    /// Whether either queue holds a message.
    pub fn has_queued_messages(&self) -> bool {
        !lock(&self.shared.queues.steering).messages.is_empty()
            || !lock(&self.shared.queues.follow_up).messages.is_empty()
    }

    /// Drops every queued steering message.
    pub fn clear_steering(&self) {
        lock(&self.shared.queues.steering).messages.clear();
    }

    /// Drops every queued follow-up message.
    pub fn clear_follow_ups(&self) {
        lock(&self.shared.queues.follow_up).messages.clear();
    }

    /// Drops every queued message of both queues.
    pub fn clear_queues(&self) {
        self.clear_steering();
        self.clear_follow_ups();
    }

    /// Sets how the steering queue hands out messages.
    pub fn set_steering_mode(&self, mode: QueueMode) {
        lock(&self.shared.queues.steering).mode = mode;
    }

    /// Sets how the follow-up queue hands out messages.
    pub fn set_follow_up_mode(&self, mode: QueueMode) {
        lock(&self.shared.queues.follow_up).mode = mode;
    }

    /// The conversation so far; during a run, up to the last `message_end`.
    pub fn messages(&self) -> Vec<Message> {
        lock(&self.shared.transcript).clone()
    }
}

/// The agent's starting transcript: with [`Declarations::InTranscript`],
/// the configuration's system prompt and tools become its leading system
/// message (Pi's agent state), and the loop's own `system` is left empty.
fn initial_transcript(mut config: LoopConfig) -> (LoopConfig, Vec<Message>) {
    if config.declarations == Declarations::Beside {
        return (config, Vec::new());
    }
    let specs: Vec<_> = config.tools.iter().map(|tool| tool.spec()).collect();
    let leading = initial_system_message(&std::mem::take(&mut config.system), &specs);
    (config, leading.into_iter().collect())
}

/// How a run starts.
enum Start {
    /// With these messages as the prompt.
    Prompt(Vec<Message>),
    /// From the transcript as it is.
    Continue,
}

/// The agent's side of a run's events: the transcript grows at each
/// `message_end` before any listener sees it (Pi's `processEvents`), then
/// every listener runs, in subscription order, each awaited.
struct RunSink<'a> {
    shared: &'a Shared,
    cancel: CancellationToken,
}

impl EventSink for RunSink<'_> {
    fn emit(&self, event: AgentEvent) -> BoxFuture<'_, ()> {
        if let AgentEvent::MessageEnd { message } = &event {
            lock(&self.shared.transcript).push(message.clone());
        }
        lock(&self.shared.view).observe(&event);
        let listeners = Arc::clone(&lock(&self.shared.listeners));
        if listeners
            .iter()
            .all(|(_, subscriber)| matches!(subscriber, Subscriber::Inline(_)))
        {
            // The common case: nothing to await, no future to allocate.
            for (_, subscriber) in listeners.iter() {
                if let Subscriber::Inline(listener) = subscriber {
                    listener(&event);
                }
            }
            return Box::pin(std::future::ready(()));
        }
        Box::pin(async move {
            for (_, subscriber) in listeners.iter() {
                match subscriber {
                    Subscriber::Inline(listener) => listener(&event),
                    Subscriber::Async(listener) => {
                        listener(event.clone(), self.cancel.clone()).await;
                    }
                }
            }
        })
    }
}

struct RunGuard<'a> {
    shared: &'a Shared,
}

impl Drop for RunGuard<'_> {
    fn drop(&mut self) {
        lock(&self.shared.view).finish();
        *lock(&self.shared.run) = None;
        self.shared.idle.send_replace(true);
    }
}

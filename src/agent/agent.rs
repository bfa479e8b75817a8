//! The stateful wrapper around the pure loop (Pi's `Agent`): it keeps the
//! transcript between runs, the steering and follow-up queues, the event
//! listeners, and the one run that may be in progress.
//!
//! It must never start a second run while one is in progress, and an abort
//! must always reach the run in progress.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

use super::run::{LoopConfig, MessageQueues, RunInputs, run_agent_loop};
use super::types::{AgentEvent, Message};
use crate::provider::Provider;

/// A listener of a run's events.
pub type Listener = Arc<dyn Fn(&AgentEvent) + Send + Sync>;

/// The text of the error a second `prompt` gets while a run is going on.
pub const ALREADY_RUNNING: &str = "Agent is already processing a prompt.";

/// Why `prompt` refused to start.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AgentError {
    /// A run is already in progress; nothing was changed.
    #[error("Agent is already processing a prompt.")]
    AlreadyRunning,
}

/// How a queue hands out its messages when polled.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum QueueMode {
    /// Every queued message at once.
    All,
    /// One message per poll.
    #[default]
    OneAtATime,
}

/// A message queue with its delivery mode.
#[derive(Debug, Default)]
struct Queue {
    messages: VecDeque<Message>,
    mode: QueueMode,
}

impl Queue {
    fn take(&mut self) -> Vec<Message> {
        match self.mode {
            QueueMode::All => self.messages.drain(..).collect(),
            QueueMode::OneAtATime => self.messages.pop_front().into_iter().collect(),
        }
    }
}

#[derive(Default)]
struct Queues {
    steering: Mutex<Queue>,
    follow_up: Mutex<Queue>,
}

impl MessageQueues for Queues {
    fn steering(&self) -> Vec<Message> {
        lock(&self.steering).take()
    }
    fn follow_ups(&self) -> Vec<Message> {
        lock(&self.follow_up).take()
    }
}

struct Shared {
    provider: Arc<dyn Provider>,
    config: Mutex<LoopConfig>,
    transcript: Mutex<Vec<Message>>,
    queues: Arc<Queues>,
    /// Copied on write, so emitting an event costs one reference count.
    listeners: Mutex<Arc<Vec<(u64, Listener)>>>,
    next_listener: AtomicU64,
    /// The cancellation token of the run in progress, if any.
    run: Mutex<Option<CancellationToken>>,
    idle: watch::Sender<bool>,
}

/// An agent: a provider, a configuration and a transcript that grows with
/// each prompt. Cheap to clone; clones share everything.
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
        let (idle, _) = watch::channel(true);
        Agent {
            shared: Arc::new(Shared {
                provider,
                config: Mutex::new(config),
                transcript: Mutex::new(Vec::new()),
                queues: Arc::new(Queues::default()),
                listeners: Mutex::new(Arc::new(Vec::new())),
                next_listener: AtomicU64::new(0),
                run: Mutex::new(None),
                idle,
            }),
        }
    }

    /// Runs one prompt to its end and returns the messages it added. Fails
    /// at once, changing nothing, while another run is in progress.
    pub async fn prompt(&self, messages: Vec<Message>) -> Result<Vec<Message>, AgentError> {
        let cancel = {
            let mut run = lock(&self.shared.run);
            if run.is_some() {
                return Err(AgentError::AlreadyRunning);
            }
            let cancel = CancellationToken::new();
            *run = Some(cancel.clone());
            self.shared.idle.send_replace(false);
            cancel
        };
        // Clears the run even if the future is dropped half-way.
        let _finished = RunGuard {
            shared: &self.shared,
        };
        let config = lock(&self.shared.config).clone();
        let context = lock(&self.shared.transcript).clone();
        let emit = |event: AgentEvent| self.emit(&event);
        let inputs = RunInputs {
            provider: self.shared.provider.as_ref(),
            config: &config,
            queues: self.shared.queues.as_ref(),
            cancel: &cancel,
            emit: &emit,
        };
        let added = run_agent_loop(messages, context, inputs).await;
        lock(&self.shared.transcript).extend(added.iter().cloned());
        Ok(added)
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

    /// Returns when no run is in progress (listeners are called inline, so
    /// they are done too).
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
        let id = self.shared.next_listener.fetch_add(1, Ordering::Relaxed);
        let mut listeners = lock(&self.shared.listeners);
        let mut updated = Vec::clone(&listeners);
        updated.push((id, Arc::new(listener)));
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

    /// Sets how the steering queue hands out messages.
    pub fn set_steering_mode(&self, mode: QueueMode) {
        lock(&self.shared.queues.steering).mode = mode;
    }

    /// Sets how the follow-up queue hands out messages.
    pub fn set_follow_up_mode(&self, mode: QueueMode) {
        lock(&self.shared.queues.follow_up).mode = mode;
    }

    /// The conversation so far.
    pub fn messages(&self) -> Vec<Message> {
        lock(&self.shared.transcript).clone()
    }

    fn emit(&self, event: &AgentEvent) {
        let listeners = Arc::clone(&lock(&self.shared.listeners));
        for (_, listener) in listeners.iter() {
            listener(event);
        }
    }
}

/// Queues messages into an agent's steering and follow-up queues.
#[derive(Clone)]
pub struct QueueHandle {
    queues: Arc<Queues>,
}

impl QueueHandle {
    /// Queues a message delivered before the next request of the run.
    pub fn steer(&self, message: Message) {
        lock(&self.queues.steering).messages.push_back(message);
    }

    /// Whether follow-up messages are waiting.
    pub fn has_follow_ups(&self) -> bool {
        !lock(&self.queues.follow_up).messages.is_empty()
    }
}

struct RunGuard<'a> {
    shared: &'a Shared,
}

impl Drop for RunGuard<'_> {
    fn drop(&mut self) {
        *lock(&self.shared.run) = None;
        self.shared.idle.send_replace(true);
    }
}

/// Locks a mutex, recovering the data if a listener panicked while holding it.
fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

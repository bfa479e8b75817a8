//! The `Agent`'s steering and follow-up queues: each hands out all its
//! messages or one per poll, and the handle hooks hold to steer the run
//! they belong to.
//!
//! A poll must never hand out a message twice or lose one.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use super::agent_loop::MessageQueues;
use super::lock::lock;
use leash_protocol::Message;

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
pub(super) struct Queue {
    pub(super) messages: VecDeque<Message>,
    pub(super) mode: QueueMode,
}

impl Queue {
    /// What the next poll would hand out, without taking it.
    pub(super) fn peek(&self) -> Vec<Message> {
        match self.mode {
            QueueMode::All => self.messages.iter().cloned().collect(),
            QueueMode::OneAtATime => self.messages.front().cloned().into_iter().collect(),
        }
    }

    fn take(&mut self) -> Vec<Message> {
        match self.mode {
            QueueMode::All => self.messages.drain(..).collect(),
            QueueMode::OneAtATime => self.messages.pop_front().into_iter().collect(),
        }
    }
}

#[derive(Default)]
pub(super) struct Queues {
    pub(super) steering: Mutex<Queue>,
    pub(super) follow_up: Mutex<Queue>,
}

impl MessageQueues for Queues {
    fn steering(&self) -> Vec<Message> {
        lock(&self.steering).take()
    }
    fn follow_ups(&self) -> Vec<Message> {
        lock(&self.follow_up).take()
    }
}

/// The agent's queues for a run that already took its steering messages
/// (Pi's `skipInitialSteeringPoll`): the loop's first steering poll is empty.
pub(super) struct SkipFirstSteering<'a> {
    pub(super) queues: &'a Queues,
    pub(super) skipped: AtomicBool,
}

impl MessageQueues for SkipFirstSteering<'_> {
    fn steering(&self) -> Vec<Message> {
        if self.skipped.swap(true, Ordering::SeqCst) {
            self.queues.steering()
        } else {
            Vec::new()
        }
    }
    fn follow_ups(&self) -> Vec<Message> {
        self.queues.follow_ups()
    }
}

/// Queues messages into an agent's steering and follow-up queues. A new
/// one (`default`) is a pair of empty queues for [`Agent::with_queues`](super::Agent::with_queues).
#[derive(Clone, Default)]
pub struct QueueHandle {
    pub(super) queues: Arc<Queues>,
}

impl std::fmt::Debug for QueueHandle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("QueueHandle")
    }
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

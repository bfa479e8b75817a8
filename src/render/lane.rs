//! A writer on a thread of its own: the run hands it work and goes on, so
//! a pipe nobody reads (events on stderr, a transcript on a FIFO) can stall
//! only that thread, never the loop, the abort timer or a signal.
//!
//! Work runs in the order it was handed over. A lane never ends the
//! process and is never joined: whoever needs an answer asks with
//! [`Lane::call`] and decides how long to wait for it.

use std::sync::mpsc::{self, SendError};
use std::sync::{Arc, Mutex, PoisonError};

use tokio::sync::oneshot;

type Work<W> = Box<dyn FnOnce(&mut W) + Send>;

/// A writer `W` owned by a thread of its own. Cheap to clone.
pub struct Lane<W> {
    writer: Arc<Mutex<W>>,
    /// `None` when the thread could not start: work then runs at once.
    work: Option<mpsc::Sender<Work<W>>>,
}

impl<W> Clone for Lane<W> {
    fn clone(&self) -> Self {
        Lane {
            writer: Arc::clone(&self.writer),
            work: self.work.clone(),
        }
    }
}

impl<W: Send + 'static> Lane<W> {
    /// Starts the thread, named `name`, that owns `writer`.
    pub fn new(name: &str, writer: W) -> Self {
        let writer = Arc::new(Mutex::new(writer));
        let (work, queue) = mpsc::channel::<Work<W>>();
        let owned = Arc::clone(&writer);
        let spawned = std::thread::Builder::new()
            .name(name.to_owned())
            .spawn(move || {
                for job in queue {
                    job(&mut owned.lock().unwrap_or_else(PoisonError::into_inner));
                }
            });
        Lane {
            writer,
            work: spawned.ok().map(|_| work),
        }
    }

    /// Hands `job` to the thread; never waits for it.
    pub fn submit(&self, job: impl FnOnce(&mut W) + Send + 'static) {
        let job: Work<W> = Box::new(job);
        let job = match &self.work {
            Some(work) => match work.send(job) {
                Ok(()) => return,
                // The thread is gone (it can only have panicked): do it here.
                Err(SendError(job)) => job,
            },
            None => job,
        };
        job(&mut self.writer.lock().unwrap_or_else(PoisonError::into_inner));
    }

    /// Hands `job` to the thread; its answer arrives once everything handed
    /// over before it is done.
    pub fn call<R: Send + 'static>(
        &self,
        job: impl FnOnce(&mut W) -> R + Send + 'static,
    ) -> oneshot::Receiver<R> {
        let (answer, answered) = oneshot::channel();
        self.submit(move |writer| {
            let _ = answer.send(job(writer));
        });
        answered
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[tokio::test]
    async fn work_runs_in_order_and_a_stuck_writer_never_blocks_the_caller() {
        let lane = Lane::new("test-lane", Vec::new());
        for n in 0..3 {
            lane.submit(move |seen: &mut Vec<u32>| seen.push(n));
        }
        assert_eq!(lane.call(|seen| seen.clone()).await.unwrap(), [0, 1, 2]);
        // A write that never returns (a full pipe) holds only the lane.
        let (release, stuck) = std::sync::mpsc::channel::<()>();
        lane.submit(move |_| {
            let _ = stuck.recv();
        });
        lane.submit(|seen| seen.push(3));
        let answer = lane.call(|seen| seen.len());
        let waited = tokio::time::timeout(Duration::from_millis(100), answer).await;
        assert!(waited.is_err(), "the lane should still be stuck");
        release.send(()).unwrap();
        assert_eq!(lane.call(|seen| seen.len()).await.unwrap(), 4);
    }
}

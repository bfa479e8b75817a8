//! Tools the model may call. A tool declares its name, description and
//! argument schema, and runs with arguments the loop has already validated
//! against that schema.
//!
//! A tool must never panic, must report failure as an error (it becomes an
//! `isError` result the model can read), and must stop promptly when its
//! cancellation token fires.

pub mod list_dir;
pub mod read_file;
pub mod redact;
pub mod sandbox;

use futures::future::BoxFuture;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::protocol::{ToolOutput, ToolSpec};

/// How blocking work started by [`run_blocking`] ended.
#[derive(Debug)]
pub(crate) enum Blocking<T> {
    /// The work returned.
    Done(T),
    /// The cancellation token fired first; the work is left to notice it.
    Cancelled,
    /// The thread could not start or died without an answer.
    Failed(String),
}

/// Runs blocking file-system work on a thread of its own and waits for its
/// answer or for `cancel`, whichever comes first.
///
/// Not tokio's blocking pool: a runtime waits for every thread of that pool
/// when it shuts down, so a single system call that never returns (opening
/// a FIFO that was swapped in between the sandbox's check and its open, a
/// hung network file system) would keep the process alive after the run
/// has ended and reported. A plain thread ends with the process; normally it
/// ends long before, as the work checks the same token as it goes.
pub(crate) async fn run_blocking<T, F>(work: F, cancel: &CancellationToken) -> Blocking<T>
where
    T: Send + 'static,
    F: FnOnce() -> T + Send + 'static,
{
    let (answer, answered) = tokio::sync::oneshot::channel();
    let spawned = std::thread::Builder::new()
        .name("leash-tool".to_owned())
        .spawn(move || {
            let _ = answer.send(work());
        });
    if let Err(error) = spawned {
        return Blocking::Failed(format!("cannot start a thread: {error}"));
    }
    tokio::select! {
        biased;
        () = cancel.cancelled() => Blocking::Cancelled,
        answer = answered => match answer {
            Ok(value) => Blocking::Done(value),
            Err(_) => Blocking::Failed("the tool's thread stopped without an answer".to_owned()),
        },
    }
}

/// A tool's failure; its `Display` text is what the model reads.
pub type ToolError = Box<dyn std::error::Error + Send + Sync>;

/// Where a running tool may report progress (`tool_execution_update`).
/// Cheap to clone; sending never blocks and never fails the tool.
#[derive(Debug, Clone)]
pub struct ToolUpdates {
    index: usize,
    sink: tokio::sync::mpsc::UnboundedSender<(usize, Value)>,
}

impl ToolUpdates {
    /// A sink that tags every update with the call's position in its batch.
    pub fn new(index: usize, sink: tokio::sync::mpsc::UnboundedSender<(usize, Value)>) -> Self {
        ToolUpdates { index, sink }
    }

    /// Reports progress. Ignored once the batch stopped listening.
    pub fn send(&self, partial: Value) {
        let _ = self.sink.send((self.index, partial));
    }
}

/// Something the model can call.
pub trait Tool: Send + Sync {
    /// The name, description and argument schema shown to the model.
    fn spec(&self) -> &ToolSpec;

    /// Whether calls of this tool must not overlap with any other call of
    /// the batch (a batch holding one runs fully sequentially).
    fn sequential(&self) -> bool {
        false
    }

    /// Runs one call. `args` already passed the schema check.
    fn execute<'a>(
        &'a self,
        call_id: &'a str,
        args: Value,
        cancel: CancellationToken,
        updates: ToolUpdates,
    ) -> BoxFuture<'a, Result<ToolOutput, ToolError>>;
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::{Duration, Instant};

    #[test]
    fn work_stuck_in_a_system_call_never_holds_up_the_end_of_the_process() {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap_or_else(|error| panic!("runtime: {error}"));
        let cancel = CancellationToken::new();
        let started = Instant::now();
        let outcome = runtime.block_on(async {
            let trigger = cancel.clone();
            tokio::spawn(async move {
                tokio::time::sleep(Duration::from_millis(50)).await;
                trigger.cancel();
            });
            // Stands for an open() that never returns.
            run_blocking(|| std::thread::sleep(Duration::from_secs(30)), &cancel).await
        });
        assert!(matches!(outcome, Blocking::Cancelled), "{outcome:?}");
        // The runtime shuts down at once: nothing of it waits for the thread.
        drop(runtime);
        assert!(started.elapsed() < Duration::from_secs(5));
    }

    #[tokio::test]
    async fn the_answer_of_the_work_comes_back() {
        let cancel = CancellationToken::new();
        assert!(matches!(
            run_blocking(|| 6 * 7, &cancel).await,
            Blocking::Done(42)
        ));
    }
}

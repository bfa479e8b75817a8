//! One helper for the file tools' blocking work: it runs on a thread of
//! its own, a cancelled call answers at once, and how the work was stopped
//! reads the same for every tool.

use std::sync::{Mutex, PoisonError};
use std::thread::JoinHandle;

use tokio_util::sync::CancellationToken;

/// Threads started and not joined yet. A thread is joined (and so fully
/// ended, its thread-local destructors run) by the next [`add`] or
/// [`join_finished`] that finds it finished: the list stays as short as
/// the number of threads still working.
///
/// [`add`]: ThreadList::add
/// [`join_finished`]: ThreadList::join_finished
struct ThreadList(Mutex<Vec<JoinHandle<()>>>);

impl ThreadList {
    const fn new() -> Self {
        ThreadList(Mutex::new(Vec::new()))
    }

    fn add(&self, thread: JoinHandle<()>) {
        self.join_finished();
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(thread);
    }

    /// Joins the finished threads; the number still running.
    fn join_finished(&self) -> usize {
        let mut threads = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        let (finished, running): (Vec<_>, Vec<_>) =
            threads.drain(..).partition(|thread| thread.is_finished());
        *threads = running;
        let still = threads.len();
        drop(threads);
        for thread in finished {
            let _ = thread.join();
        }
        still
    }
}

/// Every tool thread of the process.
static TOOL_THREADS: ThreadList = ThreadList::new();

/// Joins every tool thread that has finished its work, and says how many
/// are still running. A host that must know no tool thread is alive at
/// its exit (the fuzz targets: LeakSanitizer counts a thread's
/// thread-locals as leaked while it is still ending) calls it after a run
/// until it returns 0. leash itself never waits: a thread stuck in a
/// system call must not hold up the end of the process.
pub fn join_finished_tool_threads() -> usize {
    TOOL_THREADS.join_finished()
}

/// How a tool's blocking work was stopped before it answered. `Display`
/// names the tool, in the words the model reads.
#[derive(Debug, thiserror::Error)]
pub enum Interrupted {
    /// The run was aborted before or while the work ran.
    #[error("{tool} was cancelled")]
    Cancelled {
        /// The tool's name.
        tool: &'static str,
    },
    /// The thread could not start or died without an answer (a bug, not
    /// the model's doing).
    #[error("{tool} failed unexpectedly: {reason}")]
    Failed {
        /// The tool's name.
        tool: &'static str,
        /// What went wrong.
        reason: String,
    },
}

/// Runs one call's blocking `work` for the tool `tool` (see
/// `run_blocking`): refused at once when `cancel` already fired, answered
/// at once when it fires while the work runs. The work gets the same token
/// and is left to notice it at its next step and end by itself.
pub async fn run_blocking_call<T, E, F>(
    tool: &'static str,
    cancel: &CancellationToken,
    work: F,
) -> Result<T, E>
where
    T: Send + 'static,
    E: From<Interrupted> + Send + 'static,
    F: FnOnce(&CancellationToken) -> Result<T, E> + Send + 'static,
{
    if cancel.is_cancelled() {
        return Err(Interrupted::Cancelled { tool }.into());
    }
    let token = cancel.clone();
    match run_blocking(move || work(&token), cancel).await {
        Blocking::Done(result) => result,
        Blocking::Cancelled => Err(Interrupted::Cancelled { tool }.into()),
        Blocking::Failed(reason) => Err(Interrupted::Failed { tool, reason }.into()),
    }
}

/// How blocking work started by [`run_blocking`] ended.
#[derive(Debug)]
enum Blocking<T> {
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
async fn run_blocking<T, F>(work: F, cancel: &CancellationToken) -> Blocking<T>
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
    match spawned {
        Ok(thread) => TOOL_THREADS.add(thread),
        Err(error) => return Blocking::Failed(format!("cannot start a thread: {error}")),
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

    #[test]
    fn finished_threads_are_joined_and_running_ones_counted() {
        let list = ThreadList::new();
        let release = CancellationToken::new();
        let hold = release.clone();
        let ended = std::sync::Arc::new(());
        let mine = std::sync::Arc::clone(&ended);
        list.add(std::thread::spawn(move || {
            let _mine = mine;
            while !hold.is_cancelled() {
                std::thread::sleep(Duration::from_millis(2));
            }
        }));
        list.add(std::thread::spawn(|| ()));
        std::thread::sleep(Duration::from_millis(20));
        assert_eq!(list.join_finished(), 1, "the working thread is counted");
        release.cancel();
        let deadline = Instant::now() + Duration::from_secs(5);
        while list.join_finished() > 0 {
            assert!(Instant::now() < deadline, "the thread never ended");
            std::thread::sleep(Duration::from_millis(2));
        }
        // Joined: the thread is gone with everything it held.
        assert_eq!(std::sync::Arc::strong_count(&ended), 1);
    }

    #[tokio::test]
    async fn the_answer_of_the_work_comes_back() {
        let cancel = CancellationToken::new();
        assert!(matches!(
            run_blocking(|| 6 * 7, &cancel).await,
            Blocking::Done(42)
        ));
    }

    #[tokio::test]
    async fn a_call_words_how_it_was_stopped_with_the_tool_s_name() {
        let cancel = CancellationToken::new();
        let done: Result<u32, Interrupted> = run_blocking_call("probe", &cancel, |_| Ok(7)).await;
        assert_eq!(done.ok(), Some(7));
        cancel.cancel();
        let refused: Result<u32, Interrupted> = run_blocking_call("probe", &cancel, |_| {
            panic!("a cancelled call never starts its work")
        })
        .await;
        assert_eq!(
            refused.err().map(|error| error.to_string()),
            Some("probe was cancelled".to_owned())
        );
        let died: Result<u32, Interrupted> = run_blocking_call(
            "probe",
            &CancellationToken::new(),
            |_| -> Result<u32, Interrupted> { panic!("the thread dies") },
        )
        .await;
        assert_eq!(
            died.err().map(|error| error.to_string()),
            Some(
                "probe failed unexpectedly: the tool's thread stopped without an answer".to_owned()
            )
        );
    }
}

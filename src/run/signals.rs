//! What stops a run from outside: the abort timer, SIGINT, SIGTERM,
//! SIGHUP and stdin's input arriving after the run went on without it,
//! published once as an [`AbortCause`]; and how long the exit still
//! waits for an output once the run was stopped ([`GRACE`]).

use std::time::Duration;

use tokio::sync::{oneshot, watch};
use tokio::time::Instant;

use crate::exit::{Signal, Status};
use crate::run::ending::AbortCause;
use crate::run::input::LateStdin;

/// How long the exit waits for stderr, stdout or the transcript once the
/// timer or a signal stopped the run: long enough for any live reader,
/// short enough that a pipe nobody reads does not hold the exit.
pub const GRACE: Duration = Duration::from_millis(500);

/// The handlers of SIGINT, SIGTERM and SIGHUP, installed: from here on
/// these signals no longer end the process by their default action, they
/// wait to be heard by [`watch_installed`]. A batch installs them once its
/// input is checked, before it starts its MCP servers.
pub struct Listeners {
    interrupt: tokio::signal::unix::Signal,
    terminate: tokio::signal::unix::Signal,
    hangup: tokio::signal::unix::Signal,
}

impl Listeners {
    /// Installs the handlers (inside a runtime's context); `None` when the
    /// system refused one.
    pub fn install() -> Option<Self> {
        use tokio::signal::unix::{SignalKind, signal};
        Some(Listeners {
            interrupt: signal(SignalKind::interrupt()).ok()?,
            terminate: signal(SignalKind::terminate()).ok()?,
            hangup: signal(SignalKind::hangup()).ok()?,
        })
    }
}

/// Waits for the timer, a signal, or stdin's late input once the prompt
/// step hands over the pipe it went on without ([`LateStdin`]), and
/// publishes the cause. A second
/// SIGINT, SIGTERM or SIGHUP while the run is winding down exits at once,
/// with that signal's code.
pub async fn watch_run(
    deadline: Option<Instant>,
    late: oneshot::Receiver<LateStdin>,
    cause: watch::Sender<Option<AbortCause>>,
) {
    watch_installed(Listeners::install(), deadline, late, cause).await;
}

/// [`watch_run`] with handlers installed earlier (`None`: without signal
/// handlers; the timer and stdin still work).
pub async fn watch_installed(
    listeners: Option<Listeners>,
    deadline: Option<Instant>,
    late: oneshot::Receiver<LateStdin>,
    cause: watch::Sender<Option<AbortCause>>,
) {
    let late = async {
        match late.await {
            Ok(mut late) => late.arrived().await,
            Err(_) => std::future::pending().await,
        }
    };
    let timer = async {
        match deadline {
            Some(deadline) => tokio::time::sleep_until(deadline).await,
            None => std::future::pending().await,
        }
    };
    let Some(Listeners {
        mut interrupt,
        mut terminate,
        mut hangup,
    }) = listeners
    else {
        // Without signal handlers the timer and stdin still work.
        let first = tokio::select! {
            () = timer => AbortCause::Timeout,
            () = late => AbortCause::LateStdin,
        };
        cause.send_replace(Some(first));
        return;
    };
    let first = tokio::select! {
        () = timer => AbortCause::Timeout,
        () = late => AbortCause::LateStdin,
        _ = interrupt.recv() => AbortCause::Signal(Signal::Interrupt),
        _ = terminate.recv() => AbortCause::Signal(Signal::Terminate),
        _ = hangup.recv() => AbortCause::Signal(Signal::Hangup),
    };
    cause.send_replace(Some(first));
    let second = tokio::select! {
        _ = interrupt.recv() => Signal::Interrupt,
        _ = terminate.recv() => Signal::Terminate,
        _ = hangup.recv() => Signal::Hangup,
    };
    // This exit skips the one in `run_process`: the children go first,
    // without the grace (the operator asked twice).
    leash_child::kill_every_group();
    leash_tools::sandbox::write::remove_every_temp_file();
    std::process::exit(Status::Interrupted(second).code().into())
}

/// How a wait for an output lane ended.
pub enum Waited<R> {
    /// The lane answered.
    Done(R),
    /// The lane's thread is gone without an answer.
    Lost,
    /// The run was stopped and the lane did not answer within [`GRACE`].
    GaveUp,
}

/// Waits for an output lane's `answer`. A slow reader is waited for as long
/// as it takes; once the timer or a signal fires (or if it already has),
/// [`GRACE`] more at most.
pub async fn wait_for_lane<R>(
    answer: oneshot::Receiver<R>,
    abort: &mut watch::Receiver<Option<AbortCause>>,
) -> Waited<R> {
    let mut answer = answer;
    if abort.borrow().is_none() {
        let stopped = async {
            // Without a sender (no signal handlers, no timer) nothing stops the run.
            if abort.wait_for(Option::is_some).await.is_err() {
                std::future::pending::<()>().await;
            }
        };
        tokio::select! {
            answered = &mut answer => {
                return answered.map_or(Waited::Lost, Waited::Done);
            }
            () = stopped => {}
        }
    }
    match tokio::time::timeout(GRACE, answer).await {
        Ok(Ok(value)) => Waited::Done(value),
        Ok(Err(_)) => Waited::Lost,
        Err(_) => Waited::GaveUp,
    }
}

/// Runs `work`, a blocking read that may wait on a pipe (the batch's
/// input from a FIFO nobody has opened yet), on a thread of its own, and
/// gives up on it when SIGINT, SIGTERM or SIGHUP comes first: start-up
/// before a run's own watcher is stopped by a signal too. `Err` is the
/// signal; the thread is left to the process's exit.
///
/// No handler is installed: the signals are blocked and taken with
/// `sigwait` (the reader thread wakes it with SIGUSR1 when done), then
/// the old mask is restored, so a signal after this still has its
/// default effect until a run's own watcher takes over. After a signal
/// the mask stays as it is: the process is on its way out, and a reader
/// that ends late must not reach it with SIGUSR1.
pub fn unless_signalled<T: Send + 'static>(
    work: impl FnOnce() -> T + Send + 'static,
) -> Result<T, Signal> {
    use nix::sys::pthread::{pthread_kill, pthread_self};
    use nix::sys::signal::{SigSet, SigmaskHow, Signal as Sig};
    let mut waited = SigSet::empty();
    for signal in [Sig::SIGINT, Sig::SIGTERM, Sig::SIGHUP, Sig::SIGUSR1] {
        waited.add(signal);
    }
    let Ok(old_mask) = waited.thread_swap_mask(SigmaskHow::SIG_BLOCK) else {
        return Ok(work());
    };
    let (answer, answered) = std::sync::mpsc::channel();
    let waiter = pthread_self();
    // Taken back to run here if no thread can be started.
    let work = std::sync::Arc::new(std::sync::Mutex::new(Some(work)));
    let handed = std::sync::Arc::clone(&work);
    // The thread inherits the blocked mask: every signal comes to `wait`.
    let spawned = std::thread::Builder::new()
        .name("leash-read-input".to_owned())
        .spawn(move || {
            let work = handed.lock().ok().and_then(|mut work| work.take());
            if let Some(work) = work {
                let _ = answer.send(work());
            }
            let _ = pthread_kill(waiter, Sig::SIGUSR1);
        });
    if spawned.is_err() {
        let _ = old_mask.thread_set_mask();
        let work = work.lock().ok().and_then(|mut work| work.take());
        return match work {
            Some(work) => Ok(work()),
            None => Err(Signal::Interrupt),
        };
    }
    let outcome = loop {
        match waited.wait() {
            Ok(Sig::SIGINT) => break Err(Signal::Interrupt),
            Ok(Sig::SIGTERM) => break Err(Signal::Terminate),
            Ok(Sig::SIGHUP) => break Err(Signal::Hangup),
            // SIGUSR1, ours or anyone's: done only with an answer.
            Ok(_) => match answered.try_recv() {
                Ok(done) => break Ok(done),
                Err(std::sync::mpsc::TryRecvError::Empty) => {}
                Err(std::sync::mpsc::TryRecvError::Disconnected) => {
                    std::panic::panic_any("the input reader thread panicked")
                }
            },
            // No way to wait for a signal: wait for the answer alone.
            Err(_) => match answered.recv() {
                Ok(done) => break Ok(done),
                Err(_) => std::panic::panic_any("the input reader thread panicked"),
            },
        }
    };
    if outcome.is_ok() {
        let _ = old_mask.thread_set_mask();
    }
    outcome
}

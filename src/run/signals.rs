//! What stops a run from outside: the abort timer and SIGINT, SIGTERM,
//! SIGHUP, published once as an [`AbortCause`]; and how long the exit
//! still waits for an output once the run was stopped ([`GRACE`]).

use std::time::Duration;

use tokio::sync::{oneshot, watch};
use tokio::time::Instant;

use crate::exit::{Signal, Status};
use crate::run::ending::AbortCause;

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

/// Waits for the timer or a signal and publishes the cause. A second
/// SIGINT, SIGTERM or SIGHUP while the run is winding down exits at once,
/// with that signal's code.
pub async fn watch_for_aborts(deadline: Option<Instant>, cause: watch::Sender<Option<AbortCause>>) {
    watch_installed(Listeners::install(), deadline, cause).await;
}

/// [`watch_for_aborts`] with handlers installed earlier (`None`: without
/// signal handlers; the timer still works).
pub async fn watch_installed(
    listeners: Option<Listeners>,
    deadline: Option<Instant>,
    cause: watch::Sender<Option<AbortCause>>,
) {
    let Some(Listeners {
        mut interrupt,
        mut terminate,
        mut hangup,
    }) = listeners
    else {
        // Without signal handlers the timer still works.
        if let Some(deadline) = deadline {
            tokio::time::sleep_until(deadline).await;
            cause.send_replace(Some(AbortCause::Timeout));
        }
        return;
    };
    let timer = async {
        match deadline {
            Some(deadline) => tokio::time::sleep_until(deadline).await,
            None => std::future::pending().await,
        }
    };
    let first = tokio::select! {
        _ = timer => AbortCause::Timeout,
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
    crate::child::kill_every_group();
    crate::tools::sandbox::write::remove_every_temp_file();
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

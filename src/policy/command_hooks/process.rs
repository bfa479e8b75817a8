//! One hook process: spawned without a shell through [`leash_child`] (a
//! process group of its own, the hook's environment policy), fed its input
//! on stdin, its stdout and stderr read on threads of their own (each
//! capped), and waited for no longer than its timeout or the run's abort.
//! Whatever way the wait ends — an answer, a timeout, an abort, the future
//! dropped — the whole group is killed (`SIGKILL`), so a hook and anything
//! it started never outlive it, and the leader is reaped by its waiting
//! thread (or by the exit's [`leash_child::stop_every_group`], if the
//! runtime never gets to drop the future).
//!
//! A hook is done when it exited *and* closed its stdout and stderr; one
//! that leaves a background process holding them open runs into its
//! timeout.

use std::io::{self, Write};
use std::process::{Command, ExitStatus, Stdio};
use std::time::Duration;

use tokio::sync::oneshot;
use tokio_util::sync::CancellationToken;

use super::spec::HookSpec;
use leash_child::Stop;
use leash_child::capped::{read_capped, read_capped_and_drain};
use leash_protocol::secret::ApiKey;

/// The most bytes a hook may write to stdout (a replacement of a call's
/// arguments can be as large as the arguments themselves).
pub const STDOUT_LIMIT: usize = 1024 * 1024 + 4096;

/// The most bytes of a hook's stderr kept (the rest is read and dropped).
pub const STDERR_LIMIT: usize = 8 * 1024;

/// What a hook that finished left behind.
#[derive(Debug)]
pub struct Finished {
    /// How it exited.
    pub status: ExitStatus,
    /// Its stdout, at most [`STDOUT_LIMIT`] bytes.
    pub stdout: Vec<u8>,
    /// The start of its stderr, lossily decoded.
    pub stderr: String,
}

/// Why a hook gave no answer.
#[derive(Debug, thiserror::Error)]
pub enum HookRunError {
    /// The program could not be started.
    #[error("could not start: {0}")]
    Spawn(io::Error),
    /// It ran past its timeout and was killed.
    #[error("timed out after {}", humantime::format_duration(*.0))]
    Timeout(Duration),
    /// The run was aborted while it ran; it was killed.
    #[error("stopped: the run was aborted")]
    Aborted,
    /// It wrote more than [`STDOUT_LIMIT`] bytes to stdout.
    #[error("wrote more than {STDOUT_LIMIT} bytes to stdout")]
    TooLarge,
    /// A pipe or the wait failed.
    #[error("lost: {0}")]
    Lost(String),
}

/// Runs `hook` with `input` on its stdin, for at most `timeout`; the run's
/// `cancel` ends the wait at once. Never blocks the async runtime: the
/// pipes and the wait are on plain threads.
pub async fn run(
    hook: &HookSpec,
    input: Vec<u8>,
    timeout: Duration,
    cancel: &CancellationToken,
    keys: &[ApiKey],
    traceparent: Option<&str>,
) -> Result<Finished, HookRunError> {
    let mut command = Command::new(&hook.program);
    command
        .args(&hook.args)
        .env_clear()
        .envs(leash_child::env::for_hook(std::env::vars_os(), keys))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    // Traced: the hook's own span (docs/src/tracing.md), not the caller's.
    if let Some(traceparent) = traceparent {
        command.env("TRACEPARENT", traceparent);
    }
    let (mut child, _group) =
        leash_child::spawn(&mut command, Stop::AtOnce).map_err(HookRunError::Spawn)?;
    let (stdin, stdout, stderr) = (child.stdin.take(), child.stdout.take(), child.stderr.take());
    let (Some(mut stdin), Some(stdout), Some(mut stderr)) = (stdin, stdout, stderr) else {
        return Err(HookRunError::Lost("no pipes".into()));
    };
    // A hook that never reads its input must not stall the writer's caller:
    // the writer is a thread, and EPIPE is ignored.
    spawn("leash-hook-in", move || {
        let _ = stdin.write_all(&input);
    })?;
    let (out_sender, out) = oneshot::channel();
    spawn("leash-hook-out", move || {
        let _ = out_sender.send(read_capped(stdout, STDOUT_LIMIT + 1));
    })?;
    let (err_sender, err) = oneshot::channel();
    spawn("leash-hook-err", move || {
        let _ = err_sender.send(read_capped_and_drain(&mut stderr, STDERR_LIMIT));
    })?;
    let (wait_sender, waited) = oneshot::channel();
    spawn("leash-hook-wait", move || {
        let _ = wait_sender.send(child.wait());
    })?;
    let finished = async {
        let lost = |what: &str| HookRunError::Lost(format!("its {what} reader stopped"));
        let stdout = out.await.map_err(|_| lost("stdout"))?.map_err(lost_io)?;
        if stdout.len() > STDOUT_LIMIT {
            return Err(HookRunError::TooLarge);
        }
        let stderr = err.await.map_err(|_| lost("stderr"))?.map_err(lost_io)?;
        let status = waited.await.map_err(|_| lost("wait"))?.map_err(lost_io)?;
        Ok(Finished {
            status,
            stdout,
            stderr: String::from_utf8_lossy(&stderr).into_owned(),
        })
    };
    tokio::select! {
        finished = finished => finished,
        () = tokio::time::sleep(timeout) => Err(HookRunError::Timeout(timeout)),
        () = cancel.cancelled() => Err(HookRunError::Aborted),
    }
    // `_group` is dropped here: the group is killed whatever happened.
}

fn lost_io(error: io::Error) -> HookRunError {
    HookRunError::Lost(error.to_string())
}

fn spawn(name: &str, work: impl FnOnce() + Send + 'static) -> Result<(), HookRunError> {
    std::thread::Builder::new()
        .name(name.to_owned())
        .spawn(work)
        .map(drop)
        .map_err(lost_io)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Instant;

    fn hook(script: &str) -> HookSpec {
        HookSpec::parse(&format!(
            "before-tool-call=sh -c '{}'",
            script.replace('\'', "'\\''")
        ))
        .unwrap()
    }

    #[tokio::test]
    async fn a_hook_reads_its_input_and_answers() {
        let done = run(
            &hook("cat; echo oops >&2; exit 3"),
            b"{\"a\":1}".to_vec(),
            Duration::from_secs(5),
            &CancellationToken::new(),
            &[],
            None,
        )
        .await
        .unwrap();
        assert_eq!(done.stdout, b"{\"a\":1}");
        assert_eq!(done.stderr, "oops\n");
        assert_eq!(done.status.code(), Some(3));
    }

    #[tokio::test]
    async fn a_hung_hook_is_killed_at_its_timeout_with_its_children() {
        let dir = tempfile::tempdir().unwrap();
        let pid_file = dir.path().join("pid");
        let script = format!("sleep 30 & echo $! > {}; wait", pid_file.display());
        let started = Instant::now();
        let error = run(
            &hook(&script),
            Vec::new(),
            Duration::from_millis(300),
            &CancellationToken::new(),
            &[],
            None,
        )
        .await
        .unwrap_err();
        assert!(matches!(error, HookRunError::Timeout(_)), "{error}");
        assert!(started.elapsed() < Duration::from_secs(3));
        let pid = std::fs::read_to_string(&pid_file).unwrap();
        let proc = std::path::PathBuf::from(format!("/proc/{}", pid.trim()));
        // The grandchild was killed with its group (it may linger as a
        // zombie for a moment until init reaps it).
        let gone = (0..50).any(|_| {
            std::thread::sleep(Duration::from_millis(20));
            std::fs::read_to_string(proc.join("stat")).map_or(true, |stat| stat.contains(") Z"))
        });
        assert!(gone, "sleep {pid} survived its hook");
    }

    #[tokio::test]
    async fn an_abort_ends_the_wait_at_once() {
        let cancel = CancellationToken::new();
        let trigger = cancel.clone();
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(100)).await;
            trigger.cancel();
        });
        let started = Instant::now();
        let error = run(
            &hook("sleep 30"),
            Vec::new(),
            Duration::from_secs(30),
            &cancel,
            &[],
            None,
        )
        .await
        .unwrap_err();
        assert!(matches!(error, HookRunError::Aborted), "{error}");
        assert!(started.elapsed() < Duration::from_secs(3));
    }

    #[tokio::test]
    async fn endless_output_and_missing_programs_are_errors() {
        let error = run(
            &hook("yes"),
            Vec::new(),
            Duration::from_secs(10),
            &CancellationToken::new(),
            &[],
            None,
        )
        .await
        .unwrap_err();
        assert!(matches!(error, HookRunError::TooLarge), "{error}");
        let missing = HookSpec::parse("finish-turn=/nonexistent/hook").unwrap();
        let error = run(
            &missing,
            Vec::new(),
            Duration::from_secs(1),
            &CancellationToken::new(),
            &[],
            None,
        )
        .await
        .unwrap_err();
        assert!(
            error.to_string().starts_with("could not start: "),
            "{error}"
        );
    }
}

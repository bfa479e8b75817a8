//! One `--hook` process asked for its answer: run with its input, its
//! stdout and stderr read with every known key made `***`, and sorted
//! into an answer (exit 0: the JSON on stdout; exit 2: a block) or a
//! problem the chain fails closed on.

use std::time::Duration;

use tokio_util::sync::CancellationToken;

use super::process::{self, HookRunError};
use super::spec::HookSpec;
use super::wire::HookInput;
use leash_protocol::secret::{ApiKey, redact_keys};

/// The most characters of a hook's stderr that become a reason.
pub const REASON_CHARS: usize = 2000;

/// The most characters of a hook's command shown in a message.
const SHOWN_COMMAND_CHARS: usize = 80;

/// A `--hook` with its place among all of them (1 for the first).
#[derive(Debug, Clone)]
pub(in crate::policy) struct Numbered {
    pub number: usize,
    pub spec: HookSpec,
}

impl Numbered {
    /// `hook #2 (before-tool-call=./policy.sh)`.
    pub fn name(&self) -> String {
        let mut command: String = self
            .spec
            .command
            .chars()
            .take(SHOWN_COMMAND_CHARS)
            .collect();
        if self.spec.command.chars().count() > SHOWN_COMMAND_CHARS {
            command.push('…');
        }
        format!("hook #{} ({}={command})", self.number, self.spec.event)
    }
}

/// How one hook process answered, before its JSON is read.
pub(in crate::policy) enum Answer {
    /// Exit 0 with this stdout.
    Stdout(Vec<u8>),
    /// Exit 2: block, with this reason (stderr, trimmed and capped).
    Block(Option<String>),
}

/// Why a hook gave no usable answer.
pub(in crate::policy) enum Problem {
    /// The run was aborted: the decision no longer matters.
    Aborted,
    /// It failed: fail closed.
    Failed(String),
}

/// A hook's stderr as a reason: trimmed, at most [`REASON_CHARS`]
/// characters, `None` when empty.
fn stderr_reason(stderr: &str) -> Option<String> {
    let trimmed = stderr.trim();
    if trimmed.is_empty() {
        return None;
    }
    let mut reason: String = trimmed.chars().take(REASON_CHARS).collect();
    if trimmed.chars().count() > REASON_CHARS {
        reason.push('…');
    }
    Some(reason)
}

/// Runs one hook under `timeout`, `keys` kept from its environment and
/// redacted from its answer; `Err` is the problem, for the chain to fail
/// closed on.
pub(in crate::policy) async fn ask(
    hook: &Numbered,
    input: &HookInput<'_>,
    timeout: Duration,
    cancel: &CancellationToken,
    keys: &[ApiKey],
    traceparent: Option<&str>,
) -> Result<Answer, Problem> {
    let mut finished = process::run(
        &hook.spec,
        input.to_bytes(),
        timeout,
        cancel,
        keys,
        traceparent,
    )
    .await
    .map_err(|error| match error {
        HookRunError::Aborted => Problem::Aborted,
        other => Problem::Failed(other.to_string()),
    })?;
    // Whatever a hook wrote may reach the model and the events: a key
    // in it (read from a file, say) becomes `***`, in JSON strings too.
    if let Ok(text) = std::str::from_utf8(&finished.stdout) {
        finished.stdout = redact_keys(text, keys).into_bytes();
    }
    finished.stderr = redact_keys(&finished.stderr, keys);
    let stderr = stderr_reason(&finished.stderr);
    match finished.status.code() {
        Some(0) => Ok(Answer::Stdout(finished.stdout)),
        Some(2) => Ok(Answer::Block(stderr)),
        code => {
            let status = match code {
                Some(code) => format!("exited with status {code}"),
                None => "was killed by a signal".to_owned(),
            };
            Err(Problem::Failed(match stderr {
                Some(stderr) => format!("{status}: {stderr}"),
                None => status,
            }))
        }
    }
}

//! Why the stateful wrapper refuses a call (ARCHITECTURE.md §1.2,
//! "Refusals"): one variant per refusal, each in Pi 1.6.0's own words, so
//! a host ported from Pi that matches on the text reads the same sentence.

use crate::ContinueError;

/// Why `prompt`, `continue_run` or `reset` refused.
///
/// Each refusal says Pi's sentence; a host matches on the variant:
///
/// ```
/// use leash_agent::{AgentError, ContinueError};
///
/// assert_eq!(
///     AgentError::AlreadyRunning.to_string(),
///     "Agent is already processing a prompt. \
///      Use steer() or followUp() to queue messages, or wait for completion."
/// );
/// // `Agent::continue_run` on an empty transcript says `Agent.continue()`'s
/// // sentence; the loop's own `run_agent_loop_continue` says `agentLoopContinue`'s.
/// let empty = AgentError::CannotContinue(ContinueError::NoMessages);
/// assert_eq!(empty.to_string(), "No messages to continue from");
/// assert_eq!(
///     ContinueError::NoMessages.to_string(),
///     "Cannot continue: no messages in context"
/// );
/// ```
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AgentError {
    /// `prompt` while a run is in progress; nothing was changed (Pi's
    /// words, its hint about `steer()`/`followUp()` included).
    #[error(
        "Agent is already processing a prompt. \
         Use steer() or followUp() to queue messages, or wait for completion."
    )]
    AlreadyRunning,
    /// `reset` while a run is in progress; nothing was changed (Pi's words).
    #[error("Agent is already processing. Wait for completion before resetting.")]
    ResetWhileRunning,
    /// `continue_run` while a run is in progress; nothing was changed (Pi's
    /// words).
    #[error("Agent is already processing. Wait for completion before continuing.")]
    ContinueWhileRunning,
    /// [`Agent::with_default_provider`](crate::Agent::with_default_provider)
    /// found no default provider set.
    #[error("{}", crate::NO_DEFAULT_PROVIDER)]
    NoProvider,
    /// `continue_run` found nothing to continue from.
    #[error("{}", continue_refusal(.0))]
    CannotContinue(#[from] ContinueError),
}

/// `Agent.continue()`'s sentence for a refusal: Pi's wrapper words an
/// empty transcript its own way ("No messages to continue from"), while
/// its loop says "Cannot continue: no messages in context".
fn continue_refusal(error: &ContinueError) -> String {
    match error {
        ContinueError::NoMessages => "No messages to continue from".to_owned(),
        other => other.to_string(),
    }
}

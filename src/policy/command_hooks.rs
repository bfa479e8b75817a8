//! Tool-call hooks programmable from the shell (docs/src/hooks.md "Hooks"): `--hook
//! EVENT=COMMAND` runs a program at `before-tool-call`, `after-tool-call`
//! or `finish-turn`, synchronously, with one JSON object in and one out;
//! `--deny-tool` / `--allow-tool` block calls by pattern. Together with
//! the built-in limits they form one chain behind the loop's hook API
//! ([`leash_agent::AgentHooks`]).
//!
//! `spec` parses the flags, `process` runs one hook process (its group
//! killed at its timeout, on abort and when done), `protocol` is the JSON
//! in and out, `policy` the patterns, `chain` the order and the
//! fail-closed rules.

pub mod answer;
pub mod process;
pub mod spec;
pub mod wire;

use std::time::Duration;

pub use crate::policy::tool_patterns::Policy;
pub use spec::{HookEvent, HookSpec, SpecError, ToolPattern};

/// `--hook-timeout`'s default.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(10);

/// The hooks of a run, as the flags give them.
#[derive(Debug, Clone, PartialEq)]
pub struct HookSettings {
    /// `--hook`, in the order given.
    pub hooks: Vec<HookSpec>,
    /// `--hook-timeout`: the longest one hook process may run.
    pub timeout: Duration,
    /// `--deny-tool` and `--allow-tool`.
    pub policy: Policy,
}

impl Default for HookSettings {
    fn default() -> Self {
        HookSettings {
            hooks: Vec::new(),
            timeout: DEFAULT_TIMEOUT,
            policy: Policy::default(),
        }
    }
}

/// How the hooks decided the end of a run, when they did (for its status).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HookVerdict {
    /// A `finish-turn` hook failed and the run was ended: this reason.
    Failed(String),
    /// A `finish-turn` hook asked for more, but no turn (`budget: false`)
    /// or no token (`budget: true`) was left for it.
    ContinueRefused {
        /// The token budget, not the turn limit, refused it.
        budget: bool,
    },
}

/// A hook that failed, for the event stream (`hook_failed`).
#[derive(Debug, Clone, PartialEq)]
pub struct HookFailure {
    /// `hook #2 (before-tool-call=./policy.sh)`.
    pub hook: String,
    /// The event it ran for.
    pub event: HookEvent,
    /// The call it ran for (tool-call events).
    pub tool_call_id: Option<String>,
    /// What happened and what leash did about it, as the model (for a
    /// tool call) and the user read it.
    pub reason: String,
}

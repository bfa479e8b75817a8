//! The `bash` tool (docs/src/tools.md "The shell: --allow-exec"): one `bash -c`
//! command in the root, offered only with `--allow-exec`. The command runs
//! through `child::shell`: confined by the kernel (Landlock, seccomp),
//! with a rebuilt environment, a process cap, and its whole tree killed
//! when it ends, at its time limit or when the run is cancelled.
//!
//! Its result is the combined output (stdout and stderr interleaved as
//! written), its start and its tail kept past [`MAX_BYTES`] or
//! [`MAX_LINES`] with a note of what was dropped between them, then how it
//! ended and how long it took. A
//! non-zero status is a result the model reads, not an error: the call is
//! an error only when the command could not run at all. What it changed
//! under the root joins the run's [`ChangeLog`].

mod git_guard;
mod snapshot;

use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;
use tokio_util::sync::CancellationToken;

use super::changes::ChangeLog;
use super::sandbox::Sandbox;
use super::{Interrupted, ToolUpdates, TypedTool, run_blocking_call};
use leash_child::shell::{self, Ending, ShellError, ShellSettings};
use leash_child::tail::Cut;
use leash_protocol::{Content, ToolOutput};

/// The most bytes of output a result shows (its tail).
pub const MAX_BYTES: usize = 50 * 1024;
/// The most lines of output a result shows (its tail).
pub const MAX_LINES: usize = 2000;
/// The most bytes of output's start a cut result shows beside the tail:
/// where a compiler's first error is.
pub const HEAD_BYTES: usize = 10 * 1024;
/// The most lines of output's start a cut result shows.
pub const HEAD_LINES: usize = 200;
/// A command's time limit when the call gives none.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(120);
/// The longest time limit a call may ask for (the run's timer still ends
/// it sooner).
pub const MAX_TIMEOUT: Duration = Duration::from_secs(3600);
/// The exit status reported for a command that ran out of time (as
/// `timeout(1)` reports it).
pub const TIMED_OUT_STATUS: i32 = 124;

/// How the commands run, as the operator chose.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExecMode {
    /// Confined by Landlock and seccomp (`--allow-exec`).
    Confined,
    /// Without the kernel's confinement (`--allow-exec=unconfined`).
    Unconfined,
}

/// The arguments of `bash`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct BashArgs {
    /// The command, run with `bash -c` in the root.
    pub command: String,
    /// Seconds before the command and everything it started are killed
    /// (default 120).
    #[serde(default)]
    pub timeout: Option<f64>,
}

/// Why a `bash` call gave no result.
#[derive(Debug, thiserror::Error)]
pub enum BashError {
    /// The command could not be started.
    #[error(transparent)]
    Shell(#[from] ShellError),
    /// The private temporary directory could not be made.
    #[error("cannot make the command's temporary directory: {0}")]
    Temp(String),
    /// A bad time limit.
    #[error("timeout must be a number of seconds above 0, at most {}", MAX_TIMEOUT.as_secs())]
    Timeout,
    /// The run was aborted, or the blocking work died.
    #[error(transparent)]
    Interrupted(#[from] Interrupted),
}

/// A call's `timeout` as the command's time limit: above 0 and at most
/// `MAX_TIMEOUT`, `DEFAULT_TIMEOUT` when absent.
pub fn time_limit(timeout: Option<f64>) -> Result<Duration, BashError> {
    match timeout {
        None => Ok(DEFAULT_TIMEOUT),
        // A positive number too small for a nanosecond (`1e-308`) is no
        // time limit above 0 either.
        Some(seconds) if seconds > 0.0 && seconds <= MAX_TIMEOUT.as_secs_f64() => {
            Some(Duration::from_secs_f64(seconds))
                .filter(|limit| !limit.is_zero())
                .ok_or(BashError::Timeout)
        }
        Some(_) => Err(BashError::Timeout),
    }
}

/// Why commands cannot be confined here, in words for a usage error;
/// `None` when the kernel and the system give everything a confined
/// command needs (Landlock, seccomp, a process cap).
pub fn cannot_confine() -> Option<String> {
    let mut missing: Vec<String> = leash_child::confine::probe()
        .missing()
        .into_iter()
        .collect();
    if let Err(cap) = leash_child::tree::cap_available() {
        missing.push(cap);
    }
    (!missing.is_empty()).then(|| missing.join("; and "))
}

/// The `bash` tool.
#[derive(Debug)]
pub struct Bash {
    sandbox: Arc<Sandbox>,
    changes: Arc<ChangeLog>,
    mode: ExecMode,
    bash: PathBuf,
    /// What the operator lets commands read and see beyond the policy.
    access: leash_child::reach::Access,
    keys: Vec<leash_protocol::secret::ApiKey>,
    /// The Landlock ABI commands are confined with.
    abi: u8,
    /// Whether commands get a private mount namespace.
    private_mounts: bool,
    /// Whether commands get a private network namespace (a loopback).
    private_network: bool,
    /// Files commands must not read (hidden by the private mounts).
    hidden: Vec<PathBuf>,
    /// The run's private temporary directory, made at the first call.
    temp: Mutex<Option<tempfile::TempDir>>,
    /// What each command changed under the root.
    tracker: Arc<Mutex<snapshot::Tracker>>,
}

impl Bash {
    /// A shell over `sandbox`'s root, run by the `bash` binary as `mode`
    /// says, whose commands get leash's allow-listed variables (none
    /// holding one of `keys`), reaching what `access` allows, never
    /// reading `hidden`.
    pub fn new(
        sandbox: Arc<Sandbox>,
        changes: Arc<ChangeLog>,
        (mode, bash, access): (ExecMode, PathBuf, leash_child::reach::Access),
        keys: &[leash_protocol::secret::ApiKey],
        hidden: Vec<PathBuf>,
    ) -> Bash {
        // An orphan of a command becomes leash's, to be swept; no process
        // reads leash's memory or environment through /proc.
        let _ = leash_child::tree::become_subreaper();
        let sandbox_root = &sandbox.root().to_owned();
        Bash {
            sandbox,
            changes,
            mode,
            bash,
            access,
            keys: keys.to_vec(),
            abi: leash_child::confine::probe().abi_in_use(),
            private_mounts: mode == ExecMode::Confined
                && leash_child::confine::private_mounts_available(),
            private_network: mode == ExecMode::Confined
                && leash_child::confine::private_network_available(),
            hidden,
            temp: Mutex::new(None),
            tracker: Arc::new(Mutex::new(snapshot::Tracker::new(sandbox_root))),
        }
    }

    /// The settings of one call: the temporary directory made once.
    fn settings(&self) -> Result<ShellSettings, BashError> {
        let mut temp = self.temp.lock().unwrap_or_else(PoisonError::into_inner);
        if temp.is_none() {
            // 0700: no other user reads what the command writes there.
            let made = tempfile::Builder::new()
                .prefix("leash-shell-")
                .permissions(std::fs::Permissions::from_mode(0o700))
                .tempdir()
                .map_err(|error| BashError::Temp(error.to_string()))?;
            leash_child::tree::remove_at_exit(made.path());
            *temp = Some(made);
        }
        let temp = temp
            .as_ref()
            .map(|dir| dir.path().to_owned())
            .ok_or_else(|| BashError::Temp("gone".to_owned()))?;
        let reach = &self.access.reach;
        let extras = leash_child::env::ShellExtras {
            allow_env: self.access.allow_env.clone(),
            defaults: reach.defaults.clone(),
            cargo_home: reach
                .cargo_home
                .as_ref()
                .and_then(|real| leash_child::reach::private_cargo_home(&temp, real).ok()),
        };
        let env = leash_child::env::for_shell(std::env::vars_os(), &temp, &self.keys, &extras);
        Ok(ShellSettings {
            root: self.sandbox.root().to_owned(),
            temp,
            confined: self.mode == ExecMode::Confined,
            abi: self.abi,
            private_mounts: self.private_mounts,
            private_network: self.private_network,
            hidden: self.hidden.clone(),
            bash: self.bash.clone(),
            env,
            readable: reach.paths(),
        })
    }
}

impl TypedTool for Bash {
    const NAME: &'static str = "bash";
    // One command at a time: each sweeps what it left, and a tree is
    // told from another by who started it.
    const SEQUENTIAL: bool = true;
    type Args = BashArgs;
    type Error = BashError;

    fn description(&self) -> String {
        let confinement = match (self.mode, self.private_network) {
            (ExecMode::Confined, true) => {
                "It may write only under the root and $TMPDIR, read only those and the \
                 system's directories, and has no network but its own loopback (a server \
                 it starts on 127.0.0.1 can be reached by it alone)."
            }
            (ExecMode::Confined, false) => {
                "It may write only under the root and $TMPDIR, read only those and the \
                 system's directories, and has no network, not even a loopback."
            }
            (ExecMode::Unconfined, _) => "It runs without the kernel's confinement.",
        };
        format!(
            "Run a command with `bash -c` in the root and read its output (stdout and stderr \
             interleaved), exit status and duration. {confinement} Nothing it starts outlives \
             it: background processes are killed when it ends. timeout is in seconds (default \
             {}). Output past {} KiB or {MAX_LINES} lines keeps its first {HEAD_LINES} lines (at \
             most {} KiB) and its last part, with a note of what was dropped between them; \
             pipe through head, tail or grep to see other parts.",
            DEFAULT_TIMEOUT.as_secs(),
            MAX_BYTES / 1024,
            HEAD_BYTES / 1024
        )
    }

    async fn call(
        &self,
        args: BashArgs,
        cancel: CancellationToken,
        _updates: ToolUpdates,
    ) -> Result<ToolOutput, BashError> {
        let limit = time_limit(args.timeout)?;
        let settings = self.settings()?;
        let changes = Arc::clone(&self.changes);
        let confined = settings.confined;
        // Without a private mount namespace `.git` is writable: what git
        // obeys is put back after the command, and named.
        let guard_git = confined && !settings.private_mounts;
        let tracker = Arc::clone(&self.tracker);
        run_blocking_call(Self::NAME, &cancel, move |cancel| {
            let mut tracker = tracker.lock().unwrap_or_else(PoisonError::into_inner);
            let begun = tracker.begin();
            let git = guard_git
                .then(|| git_guard::GitGuard::take(&settings.root))
                .flatten();
            let ran = shell::run(
                &settings,
                &args.command,
                limit,
                (MAX_BYTES, HEAD_BYTES),
                cancel,
            );
            let restored = git.map(|git| git.restore()).unwrap_or_default();
            let ran = ran?;
            let mut changed = tracker.end(begun);
            // Root's command ran as the stranger: what it made is the
            // checkout owner's again.
            if let Some(uid) = ran.run_as {
                leash_child::stranger::give_back(&settings.root, &changed, uid);
            }
            for path in &restored {
                if !changed.contains(path) {
                    changed.push(path.clone());
                }
            }
            for path in &changed {
                changes.record(path);
            }
            let cut = ran
                .output
                .cut_ends((MAX_BYTES, MAX_LINES), (HEAD_BYTES, HEAD_LINES));
            let mut result = output(
                &args.command,
                &ran.ending,
                ran.duration,
                &cut,
                confined,
                &changed,
            );
            if !restored.is_empty() {
                append_note(&mut result, &restored_note(&restored));
                result.details["gitRestored"] = json!(restored);
            }
            // A refusal of the sandbox is named, as the operator's to change,
            // in the output's first lines as in its last.
            if let Some(note) = confined
                .then(|| leash_child::reach::refusal_note(&format!("{}{}", cut.head, cut.text)))
                .flatten()
            {
                append_note(&mut result, &note);
            }
            Ok(result)
        })
        .await
    }
}

/// The result: the output's tail, the note of what was dropped, how it
/// ended; `details` the same as data.
fn output(
    command: &str,
    ending: &Ending,
    duration: Duration,
    cut: &Cut,
    confined: bool,
    changed: &[String],
) -> ToolOutput {
    let seconds = format!("{:.1} s", duration.as_secs_f64());
    let mut text = String::new();
    if !cut.head.is_empty() {
        text.push_str(&cut.head);
        text.push_str(&format!(
            "[output cut: lines {}-{} ({} bytes) were dropped; the first {} and the last {} \
             lines are shown]\n",
            cut.head_lines + 1,
            cut.head_lines + cut.dropped_lines,
            cut.dropped_bytes,
            cut.head_lines,
            cut.total_lines - cut.head_lines - cut.dropped_lines
        ));
    } else if cut.dropped_bytes > 0 {
        text.push_str(&format!(
            "[output cut: the first {} lines ({} bytes) were dropped; the last {} lines follow]\n",
            cut.dropped_lines,
            cut.dropped_bytes,
            cut.total_lines - cut.dropped_lines
        ));
    }
    text.push_str(&cut.text);
    if !cut.text.is_empty() && !cut.text.ends_with('\n') {
        text.push('\n');
    }
    if cut.total_bytes == 0 {
        text.push_str("(no output)\n");
    }
    let (status, signal) = match ending {
        Ending::Exited(code) => {
            text.push_str(&format!("[exit {code} · {seconds}]"));
            (Some(*code), None)
        }
        Ending::Signal(number) => {
            let name = signal_name(*number);
            text.push_str(&format!("[killed by signal {number} ({name}) · {seconds}]"));
            (None, Some(name))
        }
        Ending::TimedOut => {
            text.push_str(&format!(
                "[timed out after {seconds}: the command and everything it started were \
                 killed; exit {TIMED_OUT_STATUS}]"
            ));
            (Some(TIMED_OUT_STATUS), None)
        }
    };
    ToolOutput {
        content: vec![Content::text(text)],
        details: json!({
            "command": command,
            "exitCode": status,
            "signal": signal,
            "timedOut": matches!(ending, Ending::TimedOut),
            "durationMs": u64::try_from(duration.as_millis()).unwrap_or(u64::MAX),
            "outputBytes": cut.total_bytes,
            "outputLines": cut.total_lines,
            "droppedBytes": cut.dropped_bytes,
            "droppedLines": cut.dropped_lines,
            "confined": confined,
            "changedFiles": changed,
        }),
        terminate: false,
        usage: None,
    }
}

/// The note that leash put `.git`'s files back: the command may not
/// change what git runs or obeys.
fn restored_note(restored: &[String]) -> String {
    format!(
        "[leash put back {}: a command may not change git's configuration, hooks or \
         info; that is the operator's to do]",
        restored.join(", ")
    )
}

/// A line of leash's own after the result's text.
fn append_note(result: &mut ToolOutput, note: &str) {
    if let Some(Content::Text { text, .. }) = result.content.first_mut() {
        text.push('\n');
        text.push_str(note);
    }
}

fn signal_name(number: i32) -> String {
    nix::sys::signal::Signal::try_from(number).map_or_else(
        |_| format!("signal {number}"),
        |signal| signal.as_str().to_owned(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use leash_child::tail::Tail;

    #[test]
    fn a_time_limit_is_above_zero_and_at_most_the_cap_or_refused() {
        assert_eq!(time_limit(None).ok(), Some(DEFAULT_TIMEOUT));
        assert_eq!(
            time_limit(Some(1.5)).ok(),
            Some(Duration::from_millis(1500))
        );
        assert_eq!(time_limit(Some(3600.0)).ok(), Some(MAX_TIMEOUT));
        // The fuzz target's find (fuzz/regressions/shell_args): a positive
        // number that is 0 ns as a duration.
        for refused in [0.0, -1.0, 1e-308, 1e-10, 3600.5, f64::NAN, f64::INFINITY] {
            assert!(
                matches!(time_limit(Some(refused)), Err(BashError::Timeout)),
                "{refused}"
            );
        }
    }

    #[test]
    fn a_result_says_how_the_command_ended_and_what_was_cut() {
        let mut tail = Tail::with_head(MAX_BYTES, HEAD_BYTES);
        for i in 0..5000 {
            tail.push(format!("{i}\n").as_bytes());
        }
        let cut = tail.cut_ends((MAX_BYTES, MAX_LINES), (HEAD_BYTES, HEAD_LINES));
        let out = output(
            "seq",
            &Ending::Exited(101),
            Duration::from_millis(12_300),
            &cut,
            true,
            &[],
        );
        let text = out.content[0].as_text().unwrap_or_default().to_owned();
        // The first 200 lines, the note, the last 1800.
        assert!(text.starts_with("0\n1\n2\n"), "{text}");
        assert!(
            text.contains("199\n[output cut: lines 201-3200 ("),
            "{text}"
        );
        assert!(
            text.contains("the first 200 and the last 1800 lines are shown]\n3200\n"),
            "{text}"
        );
        assert!(text.ends_with("4999\n[exit 101 · 12.3 s]"), "{text}");
        assert_eq!(out.details["exitCode"], 101);
        let out = output(
            "x",
            &Ending::TimedOut,
            Duration::from_secs(1),
            &Tail::new(10).cut(10, 10),
            true,
            &[],
        );
        assert_eq!(out.details["exitCode"], TIMED_OUT_STATUS);
        assert_eq!(out.details["timedOut"], true);
        let out = output(
            "x",
            &Ending::Signal(9),
            Duration::from_secs(1),
            &Tail::new(10).cut(10, 10),
            true,
            &[],
        );
        assert_eq!(out.details["signal"], "SIGKILL");
    }
}

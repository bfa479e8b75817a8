//! One run of the system `git` binary, started through `leash_child`
//! with git's hardened environment (`leash_child::env::for_git`: no inherited
//! variable but `PATH` and the locale, no system or global config, an
//! empty private `HOME`, no pager, no prompt, no optional locks, no lazy
//! fetch) and no stdin; settings that would run a program forced off on
//! the command line. Its stdout is read up to a cap, its stderr up to a
//! few lines, and its whole process group is killed when the run is
//! cancelled, when its time is up, when the cap is reached, and at the
//! latest when leash exits.

use std::ffi::OsString;
use std::io;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use tokio_util::sync::CancellationToken;

use super::args::GitCommand;
use super::error::{GitError, NAME};
use crate::Interrupted;
use leash_child::capped::{read_capped, read_capped_and_drain};
use leash_child::{Group, Stop};

/// Settings given on every command line (`-c`), which outrank every config
/// file: nothing git could run on its own, no colour, submodules (whose
/// git directories leash does not shadow) ignored.
const FORCED_CONFIG: &[&str] = &[
    "core.fsmonitor=false",
    "core.hooksPath=/dev/null",
    "core.pager=cat",
    "core.attributesFile=/dev/null",
    "credential.helper=",
    "diff.ignoreSubmodules=all",
    "status.submoduleSummary=false",
    "log.showSignature=false",
    "color.ui=false",
    "protocol.allow=never",
    "safe.directory=*",
];

/// How often a waiting call looks at its cancel token and its deadline.
const POLL: Duration = Duration::from_millis(20);
/// How much of git's stderr is kept for an error message.
const STDERR_KEEP: usize = 2048;

/// What one git run gave.
#[derive(Debug)]
pub(super) struct Ran {
    /// Its stdout, at most `cap + 1` bytes.
    pub(super) stdout: Vec<u8>,
    /// Whether stdout went on past `cap` (and git was stopped).
    pub(super) cut: bool,
    /// The start of its stderr.
    pub(super) stderr: Vec<u8>,
    /// Its exit code (`None`: killed, or ended by a signal).
    pub(super) code: Option<i32>,
}

/// Why a git run gave no result.
#[derive(Debug)]
pub(super) enum GitRunError {
    /// The binary could not be started.
    Spawn(io::Error),
    /// The run was cancelled; git was killed.
    Cancelled,
    /// Time ran out; git was killed.
    TimedOut,
}

/// Where and how git runs.
#[derive(Debug, Clone)]
pub(super) struct Invocation<'a> {
    /// The git binary (an absolute path).
    pub(super) git: &'a Path,
    /// The working directory.
    pub(super) cwd: &'a Path,
    /// An empty private directory for `HOME` and `XDG_CONFIG_HOME`.
    pub(super) home: &'a Path,
    /// `GIT_DIR` (the shadow) and `GIT_WORK_TREE`, or `None` for a command
    /// that needs no repository (`git config --file`).
    pub(super) repo: Option<(&'a Path, &'a Path)>,
    /// Stdout beyond this many bytes is cut.
    pub(super) cap: usize,
    /// git is killed after this long.
    pub(super) limit: Duration,
}

/// Runs `git <forced config> <args>` as `how` says.
pub(super) fn run_git(
    how: &Invocation<'_>,
    args: &[OsString],
    cancel: &CancellationToken,
) -> Result<Ran, GitRunError> {
    let mut command = hardened_command(how);
    command.args(args);
    let (mut child, group) =
        leash_child::spawn(&mut command, Stop::AtOnce).map_err(GitRunError::Spawn)?;
    let (tx, rx) = mpsc::channel();
    let stdout = child.stdout.take();
    let stderr = child.stderr.take();
    let cap = how.cap;
    let out_tx = tx.clone();
    std::thread::spawn(move || {
        let bytes = stdout.and_then(|s| read_capped(s, cap + 1).ok());
        let _ = out_tx.send((true, bytes.unwrap_or_default()));
    });
    std::thread::spawn(move || {
        let bytes = stderr.and_then(|s| read_capped_and_drain(s, STDERR_KEEP).ok());
        let _ = tx.send((false, bytes.unwrap_or_default()));
    });
    let started = Instant::now();
    let (mut stdout, mut stderr) = (None, None);
    while stdout.is_none() || stderr.is_none() {
        match rx.recv_timeout(POLL) {
            Ok((true, bytes)) => {
                if bytes.len() > cap {
                    kill(&mut child, &group);
                }
                stdout = Some(bytes);
            }
            Ok((false, bytes)) => stderr = Some(bytes),
            Err(mpsc::RecvTimeoutError::Disconnected) => break,
            Err(mpsc::RecvTimeoutError::Timeout) => {
                if cancel.is_cancelled() {
                    kill(&mut child, &group);
                    return Err(GitRunError::Cancelled);
                }
                if started.elapsed() >= how.limit {
                    kill(&mut child, &group);
                    return Err(GitRunError::TimedOut);
                }
            }
        }
    }
    let status = child.wait().map_err(GitRunError::Spawn)?;
    // Whatever git left behind goes with its group.
    drop(group);
    let stdout = stdout.unwrap_or_default();
    Ok(Ran {
        cut: stdout.len() > cap,
        stdout,
        stderr: stderr.unwrap_or_default(),
        code: status.code(),
    })
}

/// The command with everything but the arguments: the cleared and
/// rebuilt environment, the forced settings, no stdin, piped output.
fn hardened_command(how: &Invocation<'_>) -> Command {
    let mut command = Command::new(how.git);
    command
        .env_clear()
        .envs(leash_child::env::for_git(
            std::env::vars_os(),
            how.home,
            how.repo,
        ))
        .current_dir(how.cwd)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    command.arg("--no-pager");
    for setting in FORCED_CONFIG {
        command.arg("-c").arg(setting);
    }
    command
}

/// The `git` binary on `PATH` (absolute entries only), or `None`.
pub fn find_git() -> Option<PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .filter(|dir| dir.is_absolute())
        .map(|dir| dir.join("git"))
        .find(|candidate| {
            std::fs::metadata(candidate)
                .is_ok_and(|meta| meta.is_file() && meta.permissions().mode() & 0o111 != 0)
        })
}

/// Kills git's whole group (a helper it started too) and reaps git.
fn kill(child: &mut Child, group: &Group) {
    group.signal(nix::sys::signal::Signal::SIGKILL);
    let _ = child.wait();
}

/// A failure to run git as the tool's error.
pub(super) fn run_error(command: GitCommand, error: GitRunError) -> GitError {
    match error {
        GitRunError::Spawn(e) => GitError::Spawn(e.to_string()),
        GitRunError::Cancelled => Interrupted::Cancelled { tool: NAME }.into(),
        GitRunError::TimedOut => GitError::TimedOut {
            command: command.name(),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    /// Running (a zombie waiting for its reaper counts as gone).
    fn alive(pid: &str) -> bool {
        std::fs::read_to_string(format!("/proc/{}/stat", pid.trim())).is_ok_and(|stat| {
            stat.rsplit_once(") ")
                .is_some_and(|(_, rest)| !rest.starts_with('Z'))
        })
    }

    /// A stand-in for git that leaves a helper running (its pid in
    /// `helper`) and waits for it.
    fn git_with_a_helper(dir: &Path) -> (PathBuf, PathBuf) {
        let helper = dir.join("helper.pid");
        let git = dir.join("git");
        std::fs::write(
            &git,
            format!(
                "#!/bin/sh\nsleep 30 &\necho $! > '{}'\nwait\n",
                helper.display()
            ),
        )
        .unwrap();
        std::fs::set_permissions(&git, std::fs::Permissions::from_mode(0o755)).unwrap();
        (git, helper)
    }

    fn assert_helper_gone(helper: &Path) {
        let pid = std::fs::read_to_string(helper).unwrap();
        let gone = (0..100).any(|_| {
            std::thread::sleep(Duration::from_millis(20));
            !alive(&pid)
        });
        assert!(gone, "git's helper {} outlived it", pid.trim());
    }

    #[test]
    fn git_s_whole_group_goes_at_its_time_limit_and_on_cancel() {
        let dir = tempfile::tempdir().unwrap();
        let (git, helper) = git_with_a_helper(dir.path());
        let how = Invocation {
            git: &git,
            cwd: dir.path(),
            home: dir.path(),
            repo: None,
            cap: 1000,
            limit: Duration::from_millis(300),
        };
        let outcome = run_git(&how, &[], &CancellationToken::new());
        assert!(matches!(outcome, Err(GitRunError::TimedOut)), "{outcome:?}");
        assert_helper_gone(&helper);

        std::fs::remove_file(&helper).unwrap();
        let cancel = CancellationToken::new();
        let trigger = cancel.clone();
        std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(300));
            trigger.cancel();
        });
        let how = Invocation {
            limit: Duration::from_secs(60),
            ..how
        };
        let outcome = run_git(&how, &[], &cancel);
        assert!(
            matches!(outcome, Err(GitRunError::Cancelled)),
            "{outcome:?}"
        );
        assert_helper_gone(&helper);
    }
}

//! One run of the system `git` binary with a hardened environment: no
//! inherited variable but `PATH` and the locale, no system or global
//! config, an empty private `HOME`, no pager, no prompt, no optional
//! locks, no lazy fetch, no stdin; settings that would run a program
//! forced off on the command line. Its stdout is read up to a cap, its
//! stderr up to a few lines, and it is killed when the run is cancelled,
//! when its time is up, or when the cap is reached.

use std::ffi::OsString;
use std::io::{self, Read};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use tokio_util::sync::CancellationToken;

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
pub(super) enum RunError {
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
) -> Result<Ran, RunError> {
    let mut command = hardened_command(how);
    command.args(args);
    let mut child = command.spawn().map_err(RunError::Spawn)?;
    let (tx, rx) = mpsc::channel();
    let stdout = child.stdout.take();
    let stderr = child.stderr.take();
    let cap = how.cap;
    let out_tx = tx.clone();
    std::thread::spawn(move || {
        let bytes = stdout.map(|s| read_up_to(s, cap + 1, false));
        let _ = out_tx.send((true, bytes.unwrap_or_default()));
    });
    std::thread::spawn(move || {
        let bytes = stderr.map(|s| read_up_to(s, STDERR_KEEP, true));
        let _ = tx.send((false, bytes.unwrap_or_default()));
    });
    let started = Instant::now();
    let (mut stdout, mut stderr) = (None, None);
    while stdout.is_none() || stderr.is_none() {
        match rx.recv_timeout(POLL) {
            Ok((true, bytes)) => {
                if bytes.len() > cap {
                    kill(&mut child);
                }
                stdout = Some(bytes);
            }
            Ok((false, bytes)) => stderr = Some(bytes),
            Err(mpsc::RecvTimeoutError::Disconnected) => break,
            Err(mpsc::RecvTimeoutError::Timeout) => {
                if cancel.is_cancelled() {
                    kill(&mut child);
                    return Err(RunError::Cancelled);
                }
                if started.elapsed() >= how.limit {
                    kill(&mut child);
                    return Err(RunError::TimedOut);
                }
            }
        }
    }
    let status = child.wait().map_err(RunError::Spawn)?;
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
        .current_dir(how.cwd)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    if let Some(path) = absolute_path_var() {
        command.env("PATH", path);
    }
    for name in ["LANG", "LC_ALL", "LC_MESSAGES", "LC_CTYPE"] {
        if let Some(value) = std::env::var_os(name) {
            command.env(name, value);
        }
    }
    command
        .env("HOME", how.home)
        .env("XDG_CONFIG_HOME", how.home)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_SYSTEM", "/dev/null")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_ATTR_NOSYSTEM", "1")
        .env("GIT_OPTIONAL_LOCKS", "0")
        .env("GIT_TERMINAL_PROMPT", "0")
        .env("GIT_NO_LAZY_FETCH", "1")
        .env("GIT_PAGER", "cat")
        .env("PAGER", "cat")
        .env("GIT_ALLOW_PROTOCOL", "");
    match how.repo {
        Some((git_dir, work_tree)) => {
            command
                .env("GIT_DIR", git_dir)
                .env("GIT_WORK_TREE", work_tree);
        }
        None => {
            command.env("GIT_DIR", how.home.join("no-repository"));
        }
    }
    command.arg("--no-pager");
    for setting in FORCED_CONFIG {
        command.arg("-c").arg(setting);
    }
    command
}

/// `PATH` without its relative entries: a `PATH` holding `.` must not let
/// a `git` (or a helper) inside the repository stand in for the real one.
fn absolute_path_var() -> Option<OsString> {
    let path = std::env::var_os("PATH")?;
    std::env::join_paths(std::env::split_paths(&path).filter(|dir| dir.is_absolute())).ok()
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

/// Reads up to `keep` bytes; with `drain`, reads on to the end (dropping
/// the rest) so the writer never blocks on a full pipe.
fn read_up_to(source: impl Read, keep: usize, drain: bool) -> Vec<u8> {
    let mut kept = Vec::new();
    let mut source = source;
    let _ = (&mut source).take(keep as u64).read_to_end(&mut kept);
    if drain {
        let _ = io::copy(&mut source, &mut io::sink());
    }
    kept
}

fn kill(child: &mut Child) {
    let _ = child.kill();
    let _ = child.wait();
}

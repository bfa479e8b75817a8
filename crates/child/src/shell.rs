//! One `bash -c` command of the shell tool, from the parent's side: the
//! launcher started in a process group of its own with the shell's
//! environment ([`super::env::for_shell`]), stdout and stderr on one pipe
//! (interleaved as written) read as it streams into a capped tail, the
//! command's time limit and the run's cancellation, and the sweep of its
//! whole tree when it ends, whichever way.

use std::io::{self, Read};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex, PoisonError, mpsc};
use std::time::{Duration, Instant};

use tokio_util::sync::CancellationToken;

use super::confine::{Guarded, LAUNCHER, Launch, Spec};
use super::tail::Tail;
use super::tree::{Cap, Tree};
use super::{Stop, spawn};

/// How often a waiting command looks at its deadline and the token.
const POLL: Duration = Duration::from_millis(10);
/// How long the output's reader may go on after the tree was swept (a
/// process stuck in the kernel may hold the pipe).
const DRAIN_PATIENCE: Duration = Duration::from_secs(2);

/// Where and how commands run.
#[derive(Debug, Clone)]
pub struct ShellSettings {
    /// The working directory, the one tree the command may write.
    pub root: PathBuf,
    /// The private temporary directory (`HOME`, `TMPDIR`), writable too.
    pub temp: PathBuf,
    /// Landlock and seccomp on.
    pub confined: bool,
    /// The Landlock ABI to confine with.
    pub abi: u8,
    /// A private mount namespace: `.git` read-only, `hidden` gone,
    /// everything outside the root and `temp` read-only.
    pub private_mounts: bool,
    /// A private network namespace: the loopback the command's own.
    pub private_network: bool,
    /// Files the command must not read.
    pub hidden: Vec<PathBuf>,
    /// The `bash` binary.
    pub bash: PathBuf,
    /// The environment, already rebuilt.
    pub env: Vec<super::env::Variable>,
    /// What it may read beyond the root and the system ([`super::reach`]).
    pub readable: Vec<PathBuf>,
}

/// How a command ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ending {
    /// It exited with this code.
    Exited(i32),
    /// A signal ended it.
    Signal(i32),
    /// Its time limit ran out; the tree was killed.
    TimedOut,
}

/// What one command gave.
#[derive(Debug)]
pub struct Ran {
    /// Its output, stdout and stderr interleaved, the tail kept.
    pub output: Tail,
    /// How it ended.
    pub ending: Ending,
    /// How long it ran.
    pub duration: Duration,
    /// The stranger's uid it ran as (root without a cgroup), if so.
    pub run_as: Option<u32>,
}

/// Why a command gave no result.
#[derive(Debug, thiserror::Error)]
pub enum ShellError {
    /// The launcher could not start.
    #[error("cannot start the command: {0}")]
    Spawn(io::Error),
    /// The run was cancelled; the tree was killed.
    #[error("the command was cancelled")]
    Cancelled,
}

/// The system directories a command may read and run, where present.
pub const READABLE: [&str; 14] = [
    "/usr",
    "/bin",
    "/sbin",
    "/lib",
    "/lib32",
    "/lib64",
    "/libx32",
    "/etc",
    "/opt",
    "/nix",
    "/proc",
    "/dev/zero",
    "/dev/urandom",
    "/sys/devices/system/cpu",
];

/// Device files a command may write as well as read.
const DEVICES: [&str; 2] = ["/dev/null", "/dev/full"];

/// Runs `command` under `settings`, killed with its whole tree at `limit`
/// or when `cancel` fires; `keep` bytes of output's tail and `head` of
/// its start are kept.
pub fn run(
    settings: &ShellSettings,
    command: &str,
    limit: Duration,
    (keep, head): (usize, usize),
    cancel: &CancellationToken,
) -> Result<Ran, ShellError> {
    let tree = Tree::new();
    let spec = spec(settings, &tree);
    let run_as = spec.run_as;
    let exe = std::env::current_exe().map_err(ShellError::Spawn)?;
    let (reader, writer) = io::pipe().map_err(ShellError::Spawn)?;
    let mut launcher = Command::new(exe);
    launcher
        .arg(LAUNCHER)
        .env_clear()
        .envs(settings.env.iter().map(|(k, v)| (k, v)))
        .envs(trusted_root(settings, run_as))
        .current_dir(&settings.root)
        .stdin(Stdio::piped())
        .stdout(writer.try_clone().map_err(ShellError::Spawn)?)
        .stderr(writer);
    let started = Instant::now();
    let spawned = spawn(&mut launcher, Stop::SweepsItself);
    // The parent's copies of the pipe's write end go with the command.
    drop(launcher);
    let (mut child, group) = spawned.map_err(ShellError::Spawn)?;
    tree.started(child.id());
    if let Some(mut stdin) = child.stdin.take() {
        let launch = Launch {
            spec,
            command: command.to_owned(),
        };
        // A supervisor that died first is seen below, as its ending.
        let _ = io::Write::write_all(&mut stdin, &launch.to_bytes());
    }
    let tail = Arc::new(Mutex::new(Tail::with_head(keep, head)));
    let (done_tx, done) = mpsc::channel();
    let sink = Arc::clone(&tail);
    std::thread::spawn(move || {
        read_into(reader, &sink);
        let _ = done_tx.send(());
    });
    let deadline = started + limit;
    let mut timed_out = false;
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break Some(status),
            Ok(None) => {}
            Err(_) => break None,
        }
        if cancel.is_cancelled() || Instant::now() >= deadline {
            timed_out = !cancel.is_cancelled();
            group.signal(nix::sys::signal::Signal::SIGKILL);
            tree.sweep();
            let _ = child.wait();
            if !timed_out {
                return Err(ShellError::Cancelled);
            }
            break None;
        }
        std::thread::sleep(POLL);
    };
    // A command past its limit ran for the limit; the sweep after it is
    // leash's time, not the command's.
    let duration = if timed_out { limit } else { started.elapsed() };
    // Nothing the command started outlives it.
    drop(group);
    tree.sweep();
    drop(tree);
    let _ = done.recv_timeout(DRAIN_PATIENCE);
    let output = std::mem::replace(
        &mut *tail.lock().unwrap_or_else(PoisonError::into_inner),
        Tail::new(0),
    );
    use std::os::unix::process::ExitStatusExt;
    let ending = match (timed_out, status) {
        (true, _) | (false, None) => Ending::TimedOut,
        (false, Some(status)) => match (status.code(), status.signal()) {
            (Some(code), _) => Ending::Exited(code),
            (None, Some(signal)) => Ending::Signal(signal),
            (None, None) => Ending::Exited(-1),
        },
    };
    Ok(Ran {
        output,
        ending,
        duration,
        run_as,
    })
}

/// For a command run as the stranger: git trusts the root, which the
/// stranger does not own (git's `safe.directory`, from the one place a
/// repository cannot set it, the command line's variables).
fn trusted_root(settings: &ShellSettings, run_as: Option<u32>) -> Vec<(String, PathBuf)> {
    match run_as {
        Some(_) => vec![
            ("GIT_CONFIG_COUNT".to_owned(), PathBuf::from("1")),
            (
                "GIT_CONFIG_KEY_0".to_owned(),
                PathBuf::from("safe.directory"),
            ),
            ("GIT_CONFIG_VALUE_0".to_owned(), settings.root.clone()),
        ],
        None => Vec::new(),
    }
}

/// The launcher's instructions for one command.
fn spec(settings: &ShellSettings, tree: &Tree) -> Spec {
    let mut writable = vec![settings.root.clone(), settings.temp.clone()];
    writable.extend(DEVICES.iter().map(PathBuf::from));
    Spec {
        confined: settings.confined,
        abi: settings.abi,
        writable,
        readable: READABLE
            .iter()
            .map(PathBuf::from)
            .chain(settings.readable.iter().cloned())
            .collect(),
        never_readable: super::confine::SYSTEM_SECRETS
            .iter()
            .map(PathBuf::from)
            .collect(),
        cgroup_procs: match tree.cap() {
            Some(Cap::Cgroup(dir)) => Some(dir.join("cgroup.procs")),
            _ => None,
        },
        nproc: match tree.cap() {
            Some(Cap::Rlimit(limit) | Cap::Stranger { limit, .. }) => Some(*limit),
            _ => None,
        },
        run_as: match tree.cap() {
            Some(Cap::Stranger { uid, .. }) if settings.confined => Some(*uid),
            _ => None,
        },
        bash: settings.bash.clone(),
        leash: Guarded::this_process(),
        private_mounts: settings.private_mounts,
        private_network: settings.private_network,
        // `.git` (a directory, or the file naming one) and where it leads,
        // when that is under the root.
        read_only: [settings.root.join(".git")]
            .into_iter()
            .filter_map(|dot_git| dot_git.canonicalize().ok())
            .filter(|git| git.starts_with(&settings.root))
            .collect(),
        hidden: settings.hidden.clone(),
    }
}

/// Reads the pipe to its end into the tail, a buffer at a time: nothing
/// but the tail is ever held.
fn read_into(mut reader: impl Read, tail: &Mutex<Tail>) {
    let mut buffer = vec![0u8; 64 * 1024];
    loop {
        match reader.read(&mut buffer) {
            Ok(0) => return,
            Ok(n) => tail
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .push(&buffer[..n]),
            Err(error) if error.kind() == io::ErrorKind::Interrupted => {}
            Err(_) => return,
        }
    }
}

/// The `bash` on `PATH` (absolute entries only), else `/bin/bash`.
pub fn find_bash(path: Option<&std::ffi::OsStr>) -> Option<PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    let is_program = |candidate: &Path| {
        std::fs::metadata(candidate)
            .is_ok_and(|meta| meta.is_file() && meta.permissions().mode() & 0o111 != 0)
    };
    path.into_iter()
        .flat_map(std::env::split_paths)
        .filter(|dir| dir.is_absolute())
        .map(|dir| dir.join("bash"))
        .chain([PathBuf::from("/bin/bash"), PathBuf::from("/usr/bin/bash")])
        .find(|candidate| is_program(candidate))
}

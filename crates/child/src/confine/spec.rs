//! What the parent hands the supervisor and the supervisor the confiner:
//! the spec of one confined command, the processes it must never reach,
//! and the argv markers that make leash a launcher.

use std::ffi::OsString;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

/// The argv marker that makes leash the supervisor. clap never sees it:
/// `launch_if_asked` takes it first.
pub const LAUNCHER: &str = "--leash-internal-shell-launcher-v2";

/// The argv marker of the confiner the supervisor starts.
pub(super) const CONFINER: &str = "--leash-internal-shell-confiner-v2";

/// The argv marker of the probe that tries a private mount namespace in
/// a child, so leash's own view never changes.
pub(super) const PROBE: &str = "--leash-internal-mount-probe-v1";

/// The argv marker of the probe that tries a private network namespace
/// with its loopback up, in a child.
pub(super) const NETWORK_PROBE: &str = "--leash-internal-network-probe-v1";

/// The exit status of a launcher that could not confine (or start) the
/// command: the shell's own "cannot execute".
pub const CANNOT_CONFINE: u8 = 126;

/// What the launcher does before it becomes `bash -c COMMAND`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Spec {
    /// Landlock and seccomp on (`false`: `--allow-exec=unconfined`).
    pub confined: bool,
    /// The Landlock ABI to confine with (`Support::abi_in_use`).
    pub abi: u8,
    /// The directories the command may write (the root, its temporary
    /// directory); it may read them too.
    pub writable: Vec<PathBuf>,
    /// The system's directories and files it may read and run.
    pub readable: Vec<PathBuf>,
    /// What it may never read, even under a readable grant.
    pub never_readable: Vec<PathBuf>,
    /// The `cgroup.procs` file of the command's own cgroup, joined first.
    pub cgroup_procs: Option<PathBuf>,
    /// `RLIMIT_NPROC` to set (the cap where no cgroup can be had).
    pub nproc: Option<u64>,
    /// The uid (and gid) root's command runs as where `RLIMIT_NPROC` is
    /// the cap (`child::stranger`).
    #[serde(default)]
    pub run_as: Option<u32>,
    /// The `bash` binary.
    pub bash: PathBuf,
    /// A private mount namespace (`mounts.rs`): every mount read-only
    /// but `writable`, `read_only` inside it, `hidden` gone.
    pub private_mounts: bool,
    /// A private network namespace (`network.rs`): the loopback its
    /// own, TCP and UDP sockets allowed in it, nothing outside reachable.
    #[serde(default)]
    pub private_network: bool,
    /// Paths under a writable one the command may only read (`.git`).
    pub read_only: Vec<PathBuf>,
    /// Files the command must not read (the `.env` a key came from).
    pub hidden: Vec<PathBuf>,
    /// leash's own pid and process group: no command may signal them,
    /// change their limits or their priority.
    pub leash: Guarded,
}

/// The processes a command must never reach, whatever the Landlock ABI.
#[derive(Debug, Clone, Copy, Default, Serialize, Deserialize, PartialEq, Eq)]
pub struct Guarded {
    /// leash's pid.
    pub pid: i32,
    /// leash's process group (the operator's whole pipeline).
    pub pgid: i32,
}

impl Guarded {
    /// This process and its group.
    pub fn this_process() -> Guarded {
        let pid = i32::try_from(std::process::id()).unwrap_or(0);
        let pgid = nix::unistd::getpgid(None).map_or(pid, nix::unistd::Pid::as_raw);
        Guarded { pid, pgid }
    }
}

/// What the supervisor reads from its stdin: the spec and the command.
#[derive(Debug, Serialize, Deserialize)]
pub struct Launch {
    /// How to confine.
    pub spec: Spec,
    /// The `bash -c` command.
    pub command: String,
}

impl Launch {
    /// The bytes the parent writes to the supervisor's stdin.
    pub fn to_bytes(&self) -> Vec<u8> {
        serde_json::to_vec(self).unwrap_or_default()
    }
}

pub(super) fn args(marker: &str, spec: &Spec, command: &str) -> Vec<OsString> {
    let spec = serde_json::to_string(spec).unwrap_or_default();
    vec![marker.into(), spec.into(), command.into()]
}

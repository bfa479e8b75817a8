//! The kernel's confinement of a `bash` tool command (docs/src/tools.md
//! "The shell: --allow-exec"). leash cannot run code between `fork` and
//! `exec` (`unsafe_code` is forbidden, and with it `pre_exec`), so it
//! starts itself again, twice:
//!
//! - the *supervisor* (argv `[leash, LAUNCHER]`, its [`Launch`] read from
//!   stdin, so no process listing shows the command twice), never
//!   confined: it closes every descriptor but 0–2, joins the command's
//!   process cap, becomes the subreaper of everything below it, starts
//!   the confiner, and mirrors its ending. If leash itself dies (a
//!   `SIGKILL`, the OOM killer) it kills the whole tree and goes;
//! - the *confiner* (argv `[leash, CONFINER, SPEC, COMMAND]`), which drops
//!   root's dangerous capabilities, applies Landlock (files, TCP, scopes)
//!   and the seccomp filter of `filter.rs`, then `exec`s `bash -c`.
//!
//! Both are handled by [`launch_if_asked`] at the very top of
//! `run_process`, before anything else is read. Any step that fails ends
//! the launch before the command runs: it fails closed.
//!
//! [`probe`] says, in the parent and before any command, what the kernel
//! can confine, so a missing piece is a usage error and not a surprise.

#[cfg(target_os = "linux")]
mod filter;
#[cfg(target_os = "linux")]
mod rules;
/// Elsewhere nothing confines: every probe says so, the launcher refuses.
#[cfg(not(target_os = "linux"))]
mod rules {
    /// Nothing here.
    pub fn probe() -> super::Support {
        super::Support {
            linux: false,
            landlock: 0,
            seccomp: false,
        }
    }
}
mod supervise;

use std::ffi::OsString;
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::ExitCode;

use serde::{Deserialize, Serialize};

pub use rules::probe;

/// The oldest Landlock ABI leash confines with: 3 is the first that
/// handles `truncate`, without which a command could empty any file it can
/// open for reading.
pub const MIN_ABI: u8 = 3;

/// The first Landlock ABI that scopes signals and abstract Unix sockets
/// to the command's own domain; below it seccomp guards leash alone.
pub const SCOPES_ABI: u8 = 6;

/// What this kernel can confine a command with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Support {
    /// Whether this is Linux, the one system leash confines on.
    pub linux: bool,
    /// The Landlock ABI (0: none).
    pub landlock: u8,
    /// Whether seccomp filters are available.
    pub seccomp: bool,
}

impl Support {
    /// What is missing for a confined command, in words; `None` when
    /// nothing is.
    pub fn missing(&self) -> Option<String> {
        if !self.linux {
            return Some(
                "Linux's Landlock and seccomp (leash confines commands on Linux only; it \
                 does not drive macOS's Seatbelt)"
                    .to_owned(),
            );
        }
        let mut missing = Vec::new();
        match self.landlock {
            0 => missing.push(
                "Landlock (Linux 6.2 or newer with `lsm=...,landlock` enabled at boot)".to_owned(),
            ),
            abi if abi < MIN_ABI => missing.push(format!(
                "Landlock ABI {MIN_ABI} or newer (this kernel has ABI {abi}; Linux 6.2 or newer)"
            )),
            _ => {}
        }
        if !self.seccomp {
            missing.push("seccomp filters (CONFIG_SECCOMP_FILTER)".to_owned());
        }
        (!missing.is_empty()).then(|| missing.join(" and "))
    }

    /// The Landlock ABI commands are confined with: the kernel's own, or,
    /// in a debug build only, a lower one named by
    /// [`TEST_ABI_VARIABLE`] in leash's process environment, so the
    /// escape suite proves every rule at every ABI on one kernel. A
    /// release build never reads it, and no `.env` or config file can set
    /// a process variable.
    pub fn abi_in_use(&self) -> u8 {
        let lowered = cfg!(debug_assertions)
            .then(|| std::env::var(TEST_ABI_VARIABLE).ok())
            .flatten()
            .and_then(|text| text.parse::<u8>().ok());
        match lowered {
            Some(abi) => abi.clamp(MIN_ABI, self.landlock.max(MIN_ABI)),
            None => self.landlock,
        }
    }

    /// What a command could still do on this footing that it cannot on
    /// the newest, in one sentence for the start-up line; `None` when
    /// nothing.
    pub fn weaker_footing(abi: u8) -> Option<String> {
        (abi < SCOPES_ABI).then(|| {
            format!(
                "Landlock ABI {abi} (before {SCOPES_ABI}) does not scope signals: a command may \
                 signal other processes of this user (leash and its own tree are guarded by \
                 seccomp)"
            )
        })
    }
}

/// The variable a debug build's tests lower the Landlock ABI with
/// ([`Support::abi_in_use`]). Not `LEASH_*`: no settings layer reads it.
pub const TEST_ABI_VARIABLE: &str = "_LEASH_TEST_LANDLOCK_ABI";

/// The argv marker that makes leash the supervisor. clap never sees it:
/// [`launch_if_asked`] takes it first.
pub const LAUNCHER: &str = "--leash-internal-shell-launcher-v2";

/// The argv marker of the confiner the supervisor starts.
const CONFINER: &str = "--leash-internal-shell-confiner-v2";

/// The exit status of a launcher that could not confine (or start) the
/// command: the shell's own "cannot execute".
pub const CANNOT_CONFINE: u8 = 126;

/// What the launcher does before it becomes `bash -c COMMAND`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Spec {
    /// Landlock and seccomp on (`false`: `--allow-exec=unconfined`).
    pub confined: bool,
    /// The Landlock ABI to confine with ([`Support::abi_in_use`]).
    pub abi: u8,
    /// The directories the command may write (the root, its temporary
    /// directory); it may read them too.
    pub writable: Vec<PathBuf>,
    /// The system's directories and files it may read and run.
    pub readable: Vec<PathBuf>,
    /// The `cgroup.procs` file of the command's own cgroup, joined first.
    pub cgroup_procs: Option<PathBuf>,
    /// `RLIMIT_NPROC` to set (the cap where no cgroup can be had).
    pub nproc: Option<u64>,
    /// The `bash` binary.
    pub bash: PathBuf,
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

fn args(marker: &str, spec: &Spec, command: &str) -> Vec<OsString> {
    let spec = serde_json::to_string(spec).unwrap_or_default();
    vec![marker.into(), spec.into(), command.into()]
}

/// Runs the supervisor or the confiner when `args` asks for one, and
/// never returns then but with the command's ending; `None` for every
/// other command line.
pub fn launch_if_asked(args: &[OsString]) -> Option<ExitCode> {
    let marker = args.get(1)?;
    let supervisor = marker == LAUNCHER;
    if !supervisor && marker != CONFINER {
        return None;
    }
    let parsed = if supervisor {
        read_launch()
    } else {
        match (args.get(2), args.get(3)) {
            (Some(spec), Some(command)) => serde_json::from_str::<Spec>(&spec.to_string_lossy())
                .map(|spec| (spec, command.to_string_lossy().into_owned()))
                .map_err(|error| format!("bad launcher spec: {error}")),
            _ => Err("the confiner needs a spec and a command".to_owned()),
        }
    };
    let outcome = parsed.and_then(|(spec, command)| {
        if supervisor {
            supervise::supervise(&spec, &command)
        } else {
            Err(confine_and_exec(&spec, &command))
        }
    });
    match outcome {
        Ok(code) => Some(code),
        Err(problem) => {
            let _ = std::io::Write::write_all(
                &mut std::io::stderr(),
                format!("leash: cannot run the command: {problem}\n").as_bytes(),
            );
            Some(ExitCode::from(CANNOT_CONFINE))
        }
    }
}

/// The supervisor's [`Launch`], read from its stdin to the end.
fn read_launch() -> Result<(Spec, String), String> {
    let mut bytes = Vec::new();
    std::io::Read::read_to_end(&mut std::io::stdin(), &mut bytes)
        .map_err(|error| format!("cannot read the launch: {error}"))?;
    let launch: Launch =
        serde_json::from_slice(&bytes).map_err(|error| format!("bad launcher spec: {error}"))?;
    Ok((launch.spec, launch.command))
}

/// The confiner: confines this process and becomes `bash -c command`;
/// returns only why it could not.
fn confine_and_exec(spec: &Spec, command: &str) -> String {
    #[cfg(target_os = "linux")]
    if spec.confined {
        let supervisor = nix::unistd::getppid().as_raw();
        if let Err(problem) = rules::confine_self(spec, supervisor) {
            return problem;
        }
    }
    #[cfg(not(target_os = "linux"))]
    if spec.confined {
        return "commands are confined on Linux only".to_owned();
    }
    let error = std::process::Command::new(&spec.bash)
        .arg("-c")
        .arg(command)
        .exec();
    format!("cannot start {}: {error}", spec.bash.display())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_kernel_without_landlock_or_seccomp_is_named_as_missing() {
        let none = Support {
            linux: true,
            landlock: 0,
            seccomp: false,
        };
        let missing = none.missing().unwrap();
        assert!(
            missing.contains("Landlock") && missing.contains("seccomp"),
            "{missing}"
        );
        let old = Support {
            linux: true,
            landlock: 2,
            seccomp: true,
        };
        assert!(old.missing().unwrap().contains("ABI 2"));
        let good = Support {
            linux: true,
            landlock: 3,
            seccomp: true,
        };
        assert_eq!(good.missing(), None);
        let mac = Support {
            linux: false,
            ..good
        };
        assert!(mac.missing().unwrap().contains("Seatbelt"));
    }

    #[test]
    fn only_kernels_before_the_scopes_are_a_weaker_footing() {
        assert!(Support::weaker_footing(4).unwrap().contains("ABI 4"));
        assert!(Support::weaker_footing(5).is_some());
        assert_eq!(Support::weaker_footing(6), None);
        assert_eq!(Support::weaker_footing(7), None);
    }
}

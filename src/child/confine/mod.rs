//! The kernel's confinement of a `bash` tool command (docs/src/tools.md "The shell:
//! --allow-exec"). leash cannot run code between `fork` and `exec`
//! (`unsafe_code` is forbidden, and with it `pre_exec`), so it starts
//! itself again as a *launcher*: argv `[leash, LAUNCHER, SPEC, COMMAND]`,
//! handled by [`launch_if_asked`] at the very top of `run_process`, before
//! anything else is read. The launcher joins the command's process cap,
//! applies Landlock (files, TCP, scopes) and a seccomp filter (no socket
//! but `AF_UNIX`, no `io_uring`, no `ptrace`), then `exec`s `bash -c`.
//! Any step that fails ends the launcher before the command runs: it
//! fails closed.
//!
//! [`probe`] says, in the parent and before any command, what the kernel
//! can confine, so a missing piece is a usage error and not a surprise.

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

    pub(super) fn confine_self(_: &super::Spec) -> Result<(), String> {
        Err("commands are confined on Linux only".to_owned())
    }
}

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
}

/// The argv marker that makes leash the launcher. clap never sees it:
/// [`launch_if_asked`] takes it first.
pub const LAUNCHER: &str = "--leash-internal-shell-launcher-v1";

/// The exit status of a launcher that could not confine (or start) the
/// command: the shell's own "cannot execute".
pub const CANNOT_CONFINE: u8 = 126;

/// What the launcher does before it becomes `bash -c COMMAND`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Spec {
    /// Landlock and seccomp on (`false`: `--allow-exec=unconfined`).
    pub confined: bool,
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
}

/// The launcher's argv for `command` under `spec` (after leash's own
/// path).
pub fn launcher_args(spec: &Spec, command: &str) -> Vec<OsString> {
    let spec = serde_json::to_string(spec).unwrap_or_default();
    vec![LAUNCHER.into(), spec.into(), command.into()]
}

/// Runs the launcher when `args` asks for it, and never returns then but
/// with the exit status of a command that could not be confined; `None`
/// for every other command line.
pub fn launch_if_asked(args: &[OsString]) -> Option<ExitCode> {
    if args.get(1).is_none_or(|marker| marker != LAUNCHER) {
        return None;
    }
    let problem = match (args.get(2), args.get(3)) {
        (Some(spec), Some(command)) => {
            match serde_json::from_str::<Spec>(&spec.to_string_lossy()) {
                Ok(spec) => launch(&spec, command),
                Err(error) => format!("bad launcher spec: {error}"),
            }
        }
        _ => "the launcher needs a spec and a command".to_owned(),
    };
    let _ = std::io::Write::write_all(
        &mut std::io::stderr(),
        format!("leash: cannot run the command: {problem}\n").as_bytes(),
    );
    Some(ExitCode::from(CANNOT_CONFINE))
}

/// Confines this process and becomes `bash -c command`; returns only why
/// it could not.
fn launch(spec: &Spec, command: &OsString) -> String {
    if let Some(procs) = &spec.cgroup_procs
        && let Err(error) = std::fs::write(procs, std::process::id().to_string())
    {
        return format!("cannot join the process cap {}: {error}", procs.display());
    }
    if let Some(limit) = spec.nproc {
        use nix::sys::resource::{Resource, setrlimit};
        if let Err(error) = setrlimit(Resource::RLIMIT_NPROC, limit, limit) {
            return format!("cannot cap the processes: {error}");
        }
    }
    if spec.confined
        && let Err(problem) = rules::confine_self(spec)
    {
        return problem;
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
}

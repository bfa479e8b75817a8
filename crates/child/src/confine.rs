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
//! - the *confiner* (argv `[leash, CONFINER, SPEC, COMMAND]`), which
//!   makes its private network namespace (`network.rs`) and mount view
//!   (`mounts.rs`) where the system allows them, drops root's dangerous
//!   capabilities (or becomes the stranger's uid: `child::stranger`),
//!   applies Landlock (files, TCP, scopes) and the seccomp filter of
//!   `filter.rs`, then `exec`s `bash -c`.
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
mod mounts;
#[cfg(target_os = "linux")]
mod network;
#[cfg(target_os = "linux")]
mod rules;
mod secrets;
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
mod spec;
mod supervise;
mod support;

use std::ffi::OsString;
use std::os::unix::process::CommandExt;
use std::process::ExitCode;

pub use rules::probe;
pub use secrets::SYSTEM_SECRETS;
pub use spec::{CANNOT_CONFINE, Guarded, LAUNCHER, Launch, Spec};
pub use support::{NO_LOOPBACK, Support};

use spec::{CONFINER, NETWORK_PROBE, PROBE};

/// Whether a confined command gets a private mount namespace here
/// (`mounts.rs`), found once by a child that tries one. A debug build's
/// tests turn it off with `support::TEST_NO_MOUNTS_VARIABLE` to prove
/// the path without it.
pub fn private_mounts_available() -> bool {
    static FOUND: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *FOUND.get_or_init(|| {
        if cfg!(debug_assertions) && std::env::var_os(support::TEST_NO_MOUNTS_VARIABLE).is_some() {
            return false;
        }
        probe_in_child(PROBE)
    })
}

/// Whether a confined command gets a private network namespace with its
/// own loopback here (`network.rs`), found once by a child that makes
/// one. A debug build's tests turn it off with
/// `support::TEST_NO_MOUNTS_VARIABLE` too: the footing of a system that
/// gives leash no namespace at all (GitHub's Ubuntu runners).
pub fn private_network_available() -> bool {
    static FOUND: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *FOUND.get_or_init(|| {
        if cfg!(debug_assertions) && std::env::var_os(support::TEST_NO_MOUNTS_VARIABLE).is_some() {
            return false;
        }
        probe_in_child(NETWORK_PROBE)
    })
}

/// Whether leash started again with `marker` exits 0.
fn probe_in_child(marker: &str) -> bool {
    std::env::current_exe().is_ok_and(|exe| {
        std::process::Command::new(exe)
            .arg(marker)
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .status()
            .is_ok_and(|status| status.success())
    })
}

/// Runs the supervisor or the confiner when `args` asks for one, and
/// never returns then but with the command's ending; `None` for every
/// other command line.
pub fn launch_if_asked(args: &[OsString]) -> Option<ExitCode> {
    let marker = args.get(1)?;
    if marker == PROBE {
        #[cfg(target_os = "linux")]
        return Some(ExitCode::from(u8::from(!mounts::can_unshare())));
        #[cfg(not(target_os = "linux"))]
        return Some(ExitCode::from(1));
    }
    if marker == NETWORK_PROBE {
        #[cfg(target_os = "linux")]
        return Some(ExitCode::from(u8::from(
            network::private_network().is_err(),
        )));
        #[cfg(not(target_os = "linux"))]
        return Some(ExitCode::from(1));
    }
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

//! The supervisor: the one process between leash and a confined command,
//! never confined itself. It hands the command only descriptors 0–2,
//! joins the command's process cap, adopts every orphan below it, and
//! outlives the command just long enough to sweep what it left — or, when
//! leash itself dies (`SIGKILL`, the OOM killer), to sweep everything
//! and go, so no command outlives leash whatever ended it.
//!
//! It must never run the command's code, and never exit while a process
//! it started is still alive.

use std::process::{Command, ExitCode};
use std::time::Duration;

use nix::sys::signal::{Signal, kill};
use nix::sys::wait::{WaitPidFlag, WaitStatus, waitpid};
use nix::unistd::{Pid, getppid};

use super::spec::{CANNOT_CONFINE, CONFINER, Spec, args};
use crate::tree;

/// How often the supervisor looks for the command's end and leash's.
const POLL: Duration = Duration::from_millis(10);

/// Starts the confiner for `command` and waits for it; returns its exit
/// code, or raises the signal that ended it.
pub(super) fn supervise(spec: &Spec, command: &str) -> Result<ExitCode, String> {
    close_inherited_descriptors();
    if let Some(procs) = &spec.cgroup_procs {
        std::fs::write(procs, std::process::id().to_string())
            .map_err(|error| format!("cannot join the process cap {}: {error}", procs.display()))?;
    }
    if let Some(limit) = spec.nproc {
        use nix::sys::resource::{Resource, setrlimit};
        setrlimit(Resource::RLIMIT_NPROC, limit, limit)
            .map_err(|error| format!("cannot cap the processes: {error}"))?;
    }
    #[cfg(target_os = "linux")]
    nix::sys::prctl::set_child_subreaper(true)
        .map_err(|error| format!("cannot adopt the command's orphans: {error}"))?;
    let exe = std::env::current_exe().map_err(|error| format!("cannot find leash: {error}"))?;
    let confiner = Command::new(exe)
        .args(args(CONFINER, spec, command))
        .stdin(std::process::Stdio::null())
        .spawn()
        .map_err(|error| format!("cannot start the confiner: {error}"))?;
    let confiner = Pid::from_raw(i32::try_from(confiner.id()).unwrap_or(0));
    let me = i32::try_from(std::process::id()).unwrap_or(0);
    let ended = loop {
        if getppid().as_raw() != spec.leash.pid {
            // leash is gone: nothing of the command may outlive it.
            sweep(me);
            return Ok(ExitCode::from(CANNOT_CONFINE));
        }
        if let Some(status) = reap(confiner) {
            break status;
        }
        std::thread::sleep(POLL);
    };
    sweep(me);
    Ok(mirror(ended))
}

/// Closes every descriptor but stdin, stdout and stderr: a file the
/// operator's shell had open (`7>>log`) or a `--transcript >(…)` pipe
/// never reaches the command.
fn close_inherited_descriptors() {
    let Ok(entries) = std::fs::read_dir("/proc/self/fd") else {
        return;
    };
    let open: Vec<i32> = entries
        .flatten()
        .filter_map(|entry| entry.file_name().to_str()?.parse::<i32>().ok())
        .filter(|fd| *fd > 2)
        .collect();
    for fd in open {
        // The listing's own descriptor is closed already: EBADF.
        let _ = nix::unistd::close(fd);
    }
}

/// Reaps every child that ended (orphans adopted included); the
/// confiner's ending once it came.
fn reap(confiner: Pid) -> Option<WaitStatus> {
    let mut ended = None;
    loop {
        match waitpid(None, Some(WaitPidFlag::WNOHANG)) {
            Ok(WaitStatus::StillAlive) | Err(_) => return ended,
            Ok(status) if status.pid() == Some(confiner) => ended = Some(status),
            Ok(_) => {}
        }
    }
}

/// Kills every process below the supervisor until none is left.
fn sweep(me: i32) {
    for _ in 0..300 {
        let below = tree::descendants(me);
        if below.is_empty() {
            return;
        }
        for pid in below {
            let _ = kill(Pid::from_raw(pid), Signal::SIGKILL);
        }
        while let Ok(status) = waitpid(None, Some(WaitPidFlag::WNOHANG)) {
            if status == WaitStatus::StillAlive {
                break;
            }
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// Ends the supervisor as the command ended: its exit code, or the same
/// signal (no core is written for it).
fn mirror(ended: WaitStatus) -> ExitCode {
    match ended {
        WaitStatus::Exited(_, code) => ExitCode::from(u8::try_from(code).unwrap_or(1)),
        WaitStatus::Signaled(_, signal, _) => {
            use nix::sys::resource::{Resource, setrlimit};
            let _ = setrlimit(Resource::RLIMIT_CORE, 0, 0);
            let _ = nix::sys::signal::raise(signal);
            // A signal this process ignores (SIGPIPE): the shell's number.
            ExitCode::from(128u8.saturating_add(u8::try_from(signal as i32).unwrap_or(0)))
        }
        _ => ExitCode::from(1),
    }
}

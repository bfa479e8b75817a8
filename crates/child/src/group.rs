//! Spawning a child as the leader of a process group of its own, and the
//! process-wide registry of the groups still alive.
//!
//! A child is spawned and registered under one lock, so the exit's
//! `stop_every_group` either sees it or refuses to start it: a thread
//! that spawns `git` while the process is ending cannot slip a child past
//! the exit. An owner that is done with its child drops its [`Group`],
//! which kills the group (`SIGKILL`: whatever the leader left behind) and
//! reaps the leader if it is gone already; a leader the kill has not ended
//! yet stays registered until the exit reaps it.

use std::io;
use std::os::unix::process::CommandExt;
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use nix::errno::Errno;
use nix::sys::signal::{Signal, killpg};
use nix::sys::wait::{WaitPidFlag, WaitStatus, waitpid};
use nix::unistd::Pid;

/// How long a group stopped politely has to exit after `SIGTERM` before
/// it gets `SIGKILL`.
pub const GRACE: Duration = Duration::from_millis(500);

/// How long the exit waits for the leaders to be reaped after `SIGKILL`
/// (only a process stuck in the kernel takes any time at all).
const REAP_PATIENCE: Duration = Duration::from_secs(2);

/// How often a wait for leaders looks again.
const POLL: Duration = Duration::from_millis(5);

/// How a group is stopped when leash exits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stop {
    /// `SIGTERM`, then `SIGKILL` after [`GRACE`]: a server that may tidy
    /// up (a stdio MCP server).
    Politely,
    /// `SIGKILL` at once: work whose result nobody waits for any more (a
    /// hook, `git`).
    AtOnce,
    /// `SIGKILL` at once, as [`Stop::AtOnce`]; but when leash dies
    /// outright the group is left to sweep its own tree (the shell's
    /// supervisor, which adopts the command's orphans and kills them all
    /// when leash is gone), so the watchdog does not list it: killing the
    /// supervisor first would leave its adopted orphans to init.
    SweepsItself,
}

/// One registered group.
struct Live {
    id: u64,
    leader: Pid,
    stop: Stop,
}

#[derive(Default)]
struct Groups {
    live: Vec<Live>,
    next: u64,
    /// Set by the exit: no child starts after it.
    closed: bool,
}

/// A set of live groups; the process has one ([`REGISTRY`]), a test its
/// own. The process's groups are listed with the watchdog too.
struct Registry(Mutex<Groups>, bool);

/// The process's registry.
static REGISTRY: Registry = Registry::new(true);

impl Registry {
    const fn new(watched: bool) -> Self {
        Registry(
            Mutex::new(Groups {
                live: Vec::new(),
                next: 0,
                closed: false,
            }),
            watched,
        )
    }

    fn lock(&self) -> MutexGuard<'_, Groups> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn register<C>(
        &'static self,
        stop: Stop,
        start: impl FnOnce() -> io::Result<(u32, C)>,
    ) -> io::Result<(C, Group)> {
        let mut groups = self.lock();
        if groups.closed {
            return Err(io::Error::other("leash is exiting"));
        }
        let (pid, child) = start()?;
        let leader = Pid::from_raw(i32::try_from(pid).map_err(io::Error::other)?);
        let watched = self.1 && stop != Stop::SweepsItself;
        if watched {
            super::watchdog::watch(leader.as_raw());
        }
        groups.next += 1;
        let id = groups.next;
        groups.live.push(Live { id, leader, stop });
        Ok((
            child,
            Group {
                id,
                leader,
                registry: self,
                watched,
            },
        ))
    }

    fn close(&self) -> Vec<Live> {
        let mut groups = self.lock();
        groups.closed = true;
        std::mem::take(&mut groups.live)
    }

    fn stop_every_group(&self) {
        let live = self.close();
        let polite: Vec<Pid> = live
            .iter()
            .filter(|live| live.stop == Stop::Politely)
            .map(|live| live.leader)
            .collect();
        for leader in &polite {
            let _ = killpg(*leader, Signal::SIGTERM);
        }
        reap_all(&polite, GRACE);
        kill_and_reap(&live);
        if self.1 {
            super::watchdog::release();
        }
    }
}

/// A registered process group; dropping it kills the group.
pub struct Group {
    id: u64,
    leader: Pid,
    registry: &'static Registry,
    /// Listed with the watchdog, so taken off its list when reaped.
    watched: bool,
}

impl std::fmt::Debug for Group {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Group({})", self.leader)
    }
}

impl Group {
    /// Sends `signal` to the whole group; a group that is gone already is
    /// no error.
    pub fn signal(&self, signal: Signal) {
        let _ = killpg(self.leader, signal);
    }
}

impl Drop for Group {
    fn drop(&mut self) {
        self.signal(Signal::SIGKILL);
        // The owner usually reaped the leader already (ECHILD); if the kill
        // has not ended it yet, the exit reaps it.
        if reap(self.leader) {
            self.registry.lock().live.retain(|live| live.id != self.id);
            if self.watched {
                super::watchdog::unwatch(self.leader.as_raw());
            }
        }
    }
}

/// Spawns `command` as the leader of a new process group, registered to be
/// stopped as `stop` says. Refused once leash is exiting.
pub fn spawn(
    command: &mut std::process::Command,
    stop: Stop,
) -> io::Result<(std::process::Child, Group)> {
    spawn_in(&REGISTRY, command, stop)
}

fn spawn_in(
    registry: &'static Registry,
    command: &mut std::process::Command,
    stop: Stop,
) -> io::Result<(std::process::Child, Group)> {
    command.process_group(0);
    registry.register(stop, || {
        let child = command.spawn()?;
        Ok((child.id(), child))
    })
}

/// [`spawn`] for tokio's `Command` (a stdio MCP server, whose pipes the
/// session reads asynchronously).
pub fn spawn_async(
    command: &mut tokio::process::Command,
    stop: Stop,
) -> io::Result<(tokio::process::Child, Group)> {
    command.process_group(0);
    REGISTRY.register(stop, || {
        let child = command.spawn()?;
        let pid = child
            .id()
            .ok_or_else(|| io::Error::other("the child has no pid"))?;
        Ok((pid, child))
    })
}

/// Stops every registered group as `stop_every_group` (the crate's exit)
/// says (the process trees are `tree.rs`'s).
pub(super) fn stop_registered_groups() {
    REGISTRY.stop_every_group();
}

/// The leaders of every group registered now (a hook, an MCP server,
/// `git`, a shell's launcher): the children of leash that are not orphans
/// it adopted.
pub fn leaders() -> Vec<i32> {
    REGISTRY
        .lock()
        .live
        .iter()
        .map(|live| live.leader.as_raw())
        .collect()
}

/// Kills every registered group at once, as
/// [`kill_every_group`](super::kill_every_group) says.
pub(super) fn kill_registered_groups() {
    kill_and_reap(&REGISTRY.close());
}

fn kill_and_reap(live: &[Live]) {
    for live in live {
        let _ = killpg(live.leader, Signal::SIGKILL);
    }
    let leaders: Vec<Pid> = live.iter().map(|live| live.leader).collect();
    reap_all(&leaders, REAP_PATIENCE);
}

/// Waits (at most `patience`) until every leader is reaped.
fn reap_all(leaders: &[Pid], patience: Duration) {
    let now = Instant::now();
    let deadline = now.checked_add(patience).unwrap_or(now);
    let mut waiting: Vec<Pid> = leaders.to_vec();
    loop {
        waiting.retain(|leader| !reap(*leader));
        if waiting.is_empty() || Instant::now() >= deadline {
            return;
        }
        std::thread::sleep(POLL);
    }
}

/// Reaps `leader` if it has exited; `true` when it is no more (reaped now,
/// or by its owner before: `ECHILD`).
fn reap(leader: Pid) -> bool {
    match waitpid(leader, Some(WaitPidFlag::WNOHANG)) {
        Ok(WaitStatus::StillAlive) => false,
        Ok(_) | Err(Errno::ECHILD) => true,
        Err(_) => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{BufRead, BufReader};
    use std::process::Stdio;

    /// Running (a zombie waiting for its reaper counts as gone).
    pub(crate) fn alive(pid: u32) -> bool {
        std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
            stat.rsplit_once(") ")
                .is_some_and(|(_, rest)| !rest.starts_with('Z'))
        })
    }

    fn wait_gone(pid: u32) -> bool {
        (0..250).any(|_| {
            std::thread::sleep(Duration::from_millis(20));
            !alive(pid)
        })
    }

    #[test]
    fn dropping_a_group_kills_what_the_leader_left_behind() {
        let mut command = std::process::Command::new("sh");
        command
            .args(["-c", "sleep 30 & echo $!"])
            .stdout(Stdio::piped());
        let (mut child, group) = spawn(&mut command, Stop::AtOnce).unwrap();
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        let helper: u32 = line.trim().parse().unwrap();
        // The leader exits at once; its helper runs on in the group.
        child.wait().unwrap();
        assert!(alive(helper));
        drop(group);
        assert!(wait_gone(helper), "sleep {helper} outlived its group");
    }

    #[test]
    fn a_group_ignoring_sigterm_is_killed_by_the_exit_and_its_leader_reaped() {
        let mut command = std::process::Command::new("sh");
        command
            .args(["-c", "trap '' TERM; sleep 30 & echo $!; wait"])
            .stdout(Stdio::piped());
        static OWN: Registry = Registry::new(false);
        let (mut child, group) = spawn_in(&OWN, &mut command, Stop::Politely).unwrap();
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        let helper: u32 = line.trim().parse().unwrap();
        let leader = child.id();
        // Its owner forgot it (a task the runtime never ran again).
        std::mem::forget(group);
        std::mem::forget(child);
        let stopped = Instant::now();
        OWN.stop_every_group();
        assert!(stopped.elapsed() < GRACE + Duration::from_secs(1));
        assert!(wait_gone(helper), "sleep {helper} outlived the exit");
        // Reaped: not even a zombie is left of the leader.
        assert!(
            !std::path::Path::new(&format!("/proc/{leader}")).exists(),
            "the leader {leader} was not reaped"
        );
        // Once exiting, nothing starts any more.
        let refused = spawn_in(&OWN, &mut std::process::Command::new("true"), Stop::AtOnce);
        assert!(refused.is_err());
    }
}

//! A shell command's whole process tree: its process cap, and the sweep
//! that ends every process in it — `setsid`, double forks and `nohup`
//! included.
//!
//! The cap is a pids cgroup of the command's own (cgroup v2 with the
//! `pids` controller, or v1's `pids` hierarchy) where one can be made;
//! else `RLIMIT_NPROC`, which the kernel does not enforce for root: for
//! root the command then runs as a stranger's uid (`stranger.rs`). A command's processes are found three ways, all
//! swept: the cgroup's members, the descendants of its launcher, and the
//! orphans leash adopted as the child subreaper
//! ([`become_subreaper`]). [`stop_every_tree`], called by the one exit
//! point, sweeps every tree still registered.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

use nix::sys::signal::{Signal, kill};
use nix::sys::wait::{WaitPidFlag, waitpid};
use nix::unistd::Pid;

use super::group;

/// The most processes (and threads: the kernel counts tasks) one command
/// may have at once: a build runs, a fork bomb is held.
pub const PROCESS_CAP: u64 = 512;

/// How long a sweep goes on killing before it gives up on a process stuck
/// in the kernel.
const SWEEP_PATIENCE: Duration = Duration::from_secs(3);

/// How a command's processes are capped.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Cap {
    /// A cgroup of its own, this directory, with `pids.max` set.
    Cgroup(PathBuf),
    /// `RLIMIT_NPROC` at this many processes of the user.
    Rlimit(u64),
    /// Root without a cgroup: `RLIMIT_NPROC` at this many processes, the
    /// command run as the stranger `uid` (its gid the same number).
    Stranger {
        /// The uid and gid.
        uid: u32,
        /// The limit.
        limit: u64,
    },
}

/// The variable a debug build's tests deny the pids cgroup with, to prove
/// the footing of root in a default container on a machine where root can
/// make one. Not `LEASH_*`: no settings layer reads it.
pub const TEST_NO_CGROUP_VARIABLE: &str = "_LEASH_TEST_NO_CGROUP";

/// One command's tree: its cap and, once started, its launcher.
#[derive(Debug)]
pub struct Tree {
    id: u64,
    cap: Option<Cap>,
}

/// A tree alive: its id, cgroup and launcher.
type Entry = (u64, Option<PathBuf>, Option<i32>);

/// The trees alive.
static TREES: Mutex<Vec<Entry>> = Mutex::new(Vec::new());
static NEXT: AtomicU64 = AtomicU64::new(0);
/// leash's children from before it was the subreaper: the operator's
/// (`exec leash … 2> >(tee log)` makes the `tee` one), never swept.
static OPERATORS: Mutex<Vec<i32>> = Mutex::new(Vec::new());
/// The shells' temporary directories, removed at the exit.
static TEMP_DIRS: Mutex<Vec<PathBuf>> = Mutex::new(Vec::new());

/// Registers a shell's temporary directory, removed with everything in
/// it by [`stop_every_tree`] at the exit (its owner may never be dropped).
pub fn remove_at_exit(dir: &Path) {
    TEMP_DIRS
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .push(dir.to_owned());
}

/// Makes leash the child subreaper (an orphan of a command becomes
/// leash's child, not init's, and so is found and swept) and non-dumpable
/// (no process of the same user may read its memory or environment
/// through `/proc`). Called once a shell is offered.
#[cfg(target_os = "linux")]
pub fn become_subreaper() -> nix::Result<()> {
    static ONCE: std::sync::OnceLock<nix::Result<()>> = std::sync::OnceLock::new();
    *ONCE.get_or_init(subreaper_once)
}

#[cfg(target_os = "linux")]
fn subreaper_once() -> nix::Result<()> {
    let me = i32::try_from(std::process::id()).unwrap_or(0);
    let mut before = OPERATORS.lock().unwrap_or_else(PoisonError::into_inner);
    before.extend(
        process_table()
            .into_iter()
            .filter(|(_, (ppid, _))| *ppid == me)
            .map(|(pid, _)| pid),
    );
    drop(before);
    nix::sys::prctl::set_child_subreaper(true)?;
    nix::sys::prctl::set_dumpable(false)
}

/// Elsewhere there is no subreaper: the sweep follows the launcher's
/// descendants alone.
#[cfg(not(target_os = "linux"))]
pub fn become_subreaper() -> nix::Result<()> {
    Ok(())
}

impl Tree {
    /// A new tree with its cap, if the system gives one.
    pub fn new() -> Tree {
        let id = NEXT.fetch_add(1, Ordering::Relaxed);
        let cap = new_cgroup(id)
            .map(Cap::Cgroup)
            .or_else(|| user_limit().map(Cap::Rlimit))
            .or_else(stranger_limit);
        let cgroup = match &cap {
            Some(Cap::Cgroup(dir)) => Some(dir.clone()),
            _ => None,
        };
        lock().push((id, cgroup, None));
        Tree { id, cap }
    }

    /// Its cap; `None`: this system gives none (root without a writable
    /// pids cgroup, and no free uid to run the command as).
    pub fn cap(&self) -> Option<&Cap> {
        self.cap.as_ref()
    }

    /// Records the launcher, whose descendants the sweep follows.
    pub fn started(&self, launcher: u32) {
        let launcher = i32::try_from(launcher).ok();
        if let Some(entry) = lock().iter_mut().find(|entry| entry.0 == self.id) {
            entry.2 = launcher;
        }
    }

    /// Kills every process of the tree (but never reaps the launcher,
    /// whose owner waits for it), until none is left or the patience runs
    /// out.
    pub fn sweep(&self) {
        let entry = lock().iter().find(|entry| entry.0 == self.id).cloned();
        if let Some((_, cgroup, launcher)) = entry {
            sweep(cgroup.as_deref(), launcher);
        }
    }
}

impl Default for Tree {
    fn default() -> Self {
        Tree::new()
    }
}

impl Drop for Tree {
    fn drop(&mut self) {
        self.sweep();
        let mut trees = lock();
        if let Some(at) = trees.iter().position(|entry| entry.0 == self.id) {
            let (_, cgroup, _) = trees.remove(at);
            if let Some(dir) = cgroup {
                let _ = std::fs::remove_dir(dir);
            }
        }
    }
}

fn lock() -> std::sync::MutexGuard<'static, Vec<Entry>> {
    TREES.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Sweeps every tree still registered and removes its cgroup: the exit
/// point's part (a tool thread the runtime left behind never sweeps).
pub fn stop_every_tree() {
    let trees = std::mem::take(&mut *lock());
    for (_, cgroup, launcher) in trees {
        sweep(cgroup.as_deref(), launcher);
        if let Some(dir) = cgroup {
            let _ = std::fs::remove_dir(dir);
        }
    }
    let temps = std::mem::take(&mut *TEMP_DIRS.lock().unwrap_or_else(PoisonError::into_inner));
    for dir in temps {
        let _ = std::fs::remove_dir_all(dir);
    }
}

/// Whether a command can be capped here, and if not, why.
pub fn cap_available() -> Result<(), String> {
    match Tree::new().cap() {
        Some(_) => Ok(()),
        None => Err(
            "a process cap (a writable pids cgroup: cgroup v2 with the pids controller \
                     or v1's /sys/fs/cgroup/pids; or leash run by a user other than root, \
                     for RLIMIT_NPROC; or, for root, a free uid from 60000 to 65533 to run \
                     commands as)"
                .to_owned(),
        ),
    }
}

/// The stranger's uid root's commands run as here, if they do (no pids
/// cgroup for root).
pub fn stranger_in_use() -> Option<u32> {
    match Tree::new().cap() {
        Some(Cap::Stranger { uid, .. }) => Some(*uid),
        _ => None,
    }
}

fn sweep(cgroup: Option<&Path>, launcher: Option<i32>) {
    let deadline = Instant::now() + SWEEP_PATIENCE;
    loop {
        if let Some(dir) = cgroup {
            // cgroup v2's one-shot kill of every member, where it exists.
            let _ = std::fs::write(dir.join("cgroup.kill"), "1");
        }
        let targets = members(cgroup, launcher);
        if targets.is_empty() || Instant::now() >= deadline {
            return;
        }
        for pid in &targets {
            let _ = kill(Pid::from_raw(*pid), Signal::SIGKILL);
        }
        reap_orphans(launcher);
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// The live processes of a tree: the cgroup's members, the launcher's
/// descendants, and leash's own children that no registered group leads
/// (orphans it adopted as the subreaper).
fn members(cgroup: Option<&Path>, launcher: Option<i32>) -> Vec<i32> {
    let table = process_table();
    let mut found: HashSet<i32> = HashSet::new();
    if let Some(dir) = cgroup
        && let Ok(procs) = std::fs::read_to_string(dir.join("cgroup.procs"))
    {
        found.extend(
            procs
                .lines()
                .filter_map(|line| line.trim().parse::<i32>().ok()),
        );
    }
    let me = i32::try_from(std::process::id()).unwrap_or(0);
    let leaders = not_orphans();
    // The launcher counts while it is leash's child (not a pid reused
    // after its owner reaped it).
    let mut roots: Vec<i32> = launcher
        .filter(|pid| table.get(pid).is_some_and(|(ppid, _)| *ppid == me))
        .into_iter()
        .collect();
    // A tree that never started a command (the start-up probe's) has no
    // orphans to claim.
    if launcher.is_some() {
        roots.extend(
            table
                .iter()
                .filter(|(pid, (ppid, _))| *ppid == me && !leaders.contains(pid))
                .map(|(pid, _)| *pid),
        );
    }
    let mut children: HashMap<i32, Vec<i32>> = HashMap::new();
    for (pid, (ppid, _)) in &table {
        children.entry(*ppid).or_default().push(*pid);
    }
    while let Some(pid) = roots.pop() {
        if found.insert(pid) {
            roots.extend(children.get(&pid).into_iter().flatten());
        }
    }
    // A zombie is dead already; the launcher's owner reaps it.
    found.retain(|pid| table.get(pid).is_some_and(|(_, zombie)| !zombie));
    found.into_iter().collect()
}

/// Every live process below `ancestor` (children, theirs, and so on);
/// the supervisor's sweep, where every orphan below it is its own.
pub fn descendants(ancestor: i32) -> Vec<i32> {
    let table = process_table();
    let mut children: HashMap<i32, Vec<i32>> = HashMap::new();
    for (pid, (ppid, _)) in &table {
        children.entry(*ppid).or_default().push(*pid);
    }
    let mut found = HashSet::new();
    let mut next: Vec<i32> = children.get(&ancestor).cloned().unwrap_or_default();
    while let Some(pid) = next.pop() {
        if found.insert(pid) {
            next.extend(children.get(&pid).into_iter().flatten());
        }
    }
    found.retain(|pid| table.get(pid).is_some_and(|(_, zombie)| !zombie));
    found.into_iter().collect()
}

/// leash's children that are not adopted orphans: the leaders of its
/// registered groups and the operator's own.
fn not_orphans() -> HashSet<i32> {
    let operators = OPERATORS.lock().unwrap_or_else(PoisonError::into_inner);
    group::leaders()
        .into_iter()
        .chain(operators.iter().copied())
        .collect()
}

/// Reaps every adopted orphan that has ended (never the launcher).
fn reap_orphans(launcher: Option<i32>) {
    let me = i32::try_from(std::process::id()).unwrap_or(0);
    let leaders = not_orphans();
    for (pid, (ppid, _)) in process_table() {
        if ppid == me && Some(pid) != launcher && !leaders.contains(&pid) {
            let _ = waitpid(Pid::from_raw(pid), Some(WaitPidFlag::WNOHANG));
        }
    }
}

/// Every process: pid → (parent, is a zombie).
fn process_table() -> HashMap<i32, (i32, bool)> {
    let mut table = HashMap::new();
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return table;
    };
    for entry in entries.flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|n| n.parse::<i32>().ok())
        else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else {
            continue;
        };
        // "pid (comm) S ppid ...": comm may hold anything, ") " ends it.
        if let Some((_, rest)) = stat.rsplit_once(") ") {
            let mut fields = rest.split(' ');
            let state = fields.next().unwrap_or("");
            if let Some(ppid) = fields.next().and_then(|p| p.parse::<i32>().ok()) {
                table.insert(pid, (ppid, state == "Z" || state == "X"));
            }
        }
    }
    table
}

/// A pids cgroup of the command's own, under leash's own cgroup; `None`
/// where none can be made.
fn new_cgroup(id: u64) -> Option<PathBuf> {
    if cfg!(debug_assertions) && std::env::var_os(TEST_NO_CGROUP_VARIABLE).is_some() {
        return None;
    }
    let own = std::fs::read_to_string("/proc/self/cgroup").ok()?;
    let base = own.lines().find_map(|line| {
        let mut parts = line.splitn(3, ':');
        let (_, controllers, path) = (parts.next()?, parts.next()?, parts.next()?);
        let path = path.trim_start_matches('/');
        if controllers.split(',').any(|c| c == "pids") {
            Some(Path::new("/sys/fs/cgroup/pids").join(path))
        } else if controllers.is_empty() && Path::new("/sys/fs/cgroup/cgroup.controllers").exists()
        {
            let base = Path::new("/sys/fs/cgroup").join(path);
            let _ = std::fs::write(base.join("cgroup.subtree_control"), "+pids");
            Some(base)
        } else {
            None
        }
    })?;
    let dir = base.join(format!("leash-{}-{id}", std::process::id()));
    std::fs::create_dir(&dir).ok()?;
    match std::fs::write(dir.join("pids.max"), PROCESS_CAP.to_string()) {
        Ok(()) => Some(dir),
        Err(_) => {
            let _ = std::fs::remove_dir(&dir);
            None
        }
    }
}

/// `RLIMIT_NPROC` for a user other than root: what the user runs now plus
/// the cap.
fn user_limit() -> Option<u64> {
    let uid = nix::unistd::geteuid();
    if uid.is_root() {
        return None;
    }
    Some(running_as(uid.as_raw()) + PROCESS_CAP)
}

/// Root's cap without a cgroup: the command as the stranger, what the
/// stranger runs now (nothing, when it was chosen) plus the cap.
fn stranger_limit() -> Option<Cap> {
    if !nix::unistd::geteuid().is_root() {
        return None;
    }
    let uid = super::stranger::uid()?;
    Some(Cap::Stranger {
        uid,
        limit: running_as(uid) + PROCESS_CAP,
    })
}

/// How many processes `uid` owns now.
fn running_as(uid: u32) -> u64 {
    use std::os::unix::fs::MetadataExt;
    let running = super::stranger::process_dirs()
        .filter(|entry| entry.metadata().is_ok_and(|meta| meta.uid() == uid))
        .count();
    u64::try_from(running).unwrap_or(0)
}

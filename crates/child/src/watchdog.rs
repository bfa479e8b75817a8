//! The groups' watchdog: what kills leash's process groups when leash
//! cannot (docs/src/resume.md "After a kill"). A `SIGKILL` or the OOM
//! killer ends leash before its exit stops its groups, and the kernel
//! offers nothing leash can use without `pre_exec` (`PR_SET_PDEATHSIG`
//! is set in the child, and only reaches the child itself). So the first
//! group leash starts also starts a small `sh` in a process group of its
//! own, reading the groups to watch on a pipe only leash holds (`+PGID`,
//! `-PGID`; `0` at a clean exit). When the pipe ends with leash gone, it
//! kills every group still listed with `SIGKILL` and exits.
//!
//! The shell's supervisor is not listed (`Stop::SweepsItself`): it
//! notices leash's death itself and kills the command's whole tree,
//! orphans it adopted included; killed first, it would leave them to init.
//!
//! It must never hold a group leash no longer owns (a group is taken off
//! the list when its leader is reaped, so a reused number is not killed),
//! and never outlive leash by more than its sweep.

use std::io::Write;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::{Mutex, PoisonError};

/// The watchdog: a set of groups in a shell variable, swept at the pipe's
/// end (`kill` is the shell's own, so no program is looked up).
const SCRIPT: &str = r#"groups=" "
while read -r op pg; do
  case $op in
    +) groups="$groups$pg " ;;
    -) kept=" "; for g in $groups; do [ "$g" = "$pg" ] || kept="$kept$g "; done; groups=$kept ;;
    0) groups=" " ;;
  esac
done
for g in $groups; do kill -s KILL -- "-$g" 2>/dev/null; done
exit 0"#;

/// The running watchdog and the write end of its pipe.
static WATCHDOG: Mutex<Option<(Child, ChildStdin)>> = Mutex::new(None);

/// Lists the group `pgid` with the watchdog, starting it first if it is
/// not running. A watchdog that cannot start or went away is no error:
/// leash's own exit still stops the group.
pub fn watch(pgid: i32) {
    let mut watchdog = WATCHDOG.lock().unwrap_or_else(PoisonError::into_inner);
    if watchdog.is_none() {
        *watchdog = start();
    }
    tell(&mut watchdog, &format!("+ {pgid}\n"));
}

/// Takes the group `pgid` off the list (its leader was reaped).
pub fn unwatch(pgid: i32) {
    let mut watchdog = WATCHDOG.lock().unwrap_or_else(PoisonError::into_inner);
    tell(&mut watchdog, &format!("- {pgid}\n"));
}

/// At leash's exit, once every group is stopped: the list emptied, the
/// pipe closed, the watchdog reaped.
pub fn release() {
    let taken = WATCHDOG
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .take();
    if let Some((mut child, mut pipe)) = taken {
        let _ = pipe.write_all(b"0\n");
        drop(pipe);
        let _ = child.wait();
    }
}

fn start() -> Option<(Child, ChildStdin)> {
    use std::os::unix::process::CommandExt;
    let mut child = Command::new("/bin/sh")
        .args(["-c", SCRIPT])
        .env_clear()
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .current_dir("/")
        // Its own group: a kill of leash's group leaves it to sweep.
        .process_group(0)
        .spawn()
        .ok()?;
    let pipe = child.stdin.take()?;
    Some((child, pipe))
}

fn tell(watchdog: &mut Option<(Child, ChildStdin)>, line: &str) {
    if let Some((_, pipe)) = watchdog.as_mut() {
        let _ = pipe.write_all(line.as_bytes());
    }
}

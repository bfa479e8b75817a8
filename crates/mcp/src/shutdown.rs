//! Stopping stdio servers, whatever ended the run. Each server is started
//! through `leash_child` as the leader of a process group of its own,
//! so `npx` and the `node` it starts, or a server's own helpers, go
//! together: the group gets SIGTERM, then after a short grace SIGKILL, and
//! the leader is reaped.
//!
//! The processes are held here from the moment they are spawned, apart
//! from the MCP sessions that talk to them, so a server that is still
//! starting when the timer or a signal ends the run is stopped too. Should
//! the run never get here (a runtime shut down under a task), the exit's
//! [`leash_child::stop_every_group`] stops them the same way.

use std::process::ExitStatus;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use nix::sys::signal::Signal;
use tokio::process::Child;

use leash_child::Group;

/// How long a server has to exit after SIGTERM before the group gets SIGKILL.
pub const GRACE: Duration = leash_child::group::GRACE;

/// One spawned server process.
struct Spawned {
    name: String,
    child: Child,
    /// Its process group; dropped after `child` (fields drop in order), it
    /// kills what is left of the group and reaps the leader.
    group: Group,
}

/// The stdio servers of a run, stopped together by [`stop_all`](Self::stop_all).
#[derive(Clone, Default)]
pub struct ServerProcesses {
    spawned: Arc<Mutex<Vec<Spawned>>>,
}

impl ServerProcesses {
    fn lock(&self) -> MutexGuard<'_, Vec<Spawned>> {
        self.spawned
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Holds a server process just spawned, with its group.
    pub fn add(&self, name: &str, child: Child, group: Group) {
        self.lock().push(Spawned {
            name: name.to_owned(),
            child,
            group,
        });
    }

    /// How the server `name` exited, waiting at most `patience` for it:
    /// used to say why a server stopped answering.
    pub async fn exit_status(&self, name: &str, patience: Duration) -> Option<ExitStatus> {
        let now = tokio::time::Instant::now();
        let deadline = now.checked_add(patience).unwrap_or(now);
        loop {
            let status = self
                .lock()
                .iter_mut()
                .find(|spawned| spawned.name == name)
                .and_then(|spawned| spawned.child.try_wait().ok().flatten());
            if status.is_some() || tokio::time::Instant::now() >= deadline {
                return status;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// Stops every server's process group: SIGTERM, up to [`GRACE`] for
    /// the leaders to exit, then SIGKILL for whatever is left of each group
    /// (a helper that ignored SIGTERM), and the leaders reaped.
    pub async fn stop_all(&self) {
        let spawned = std::mem::take(&mut *self.lock());
        stop(spawned).await;
    }

    /// Stops the server `name` as [`stop_all`](Self::stop_all) stops every
    /// server (one that broke the protocol: its later calls are errors).
    pub async fn stop(&self, name: &str) {
        let spawned = {
            let mut all = self.lock();
            let (stopped, kept) = std::mem::take(&mut *all)
                .into_iter()
                .partition(|spawned| spawned.name == name);
            *all = kept;
            stopped
        };
        stop(spawned).await;
    }
}

async fn stop(mut spawned: Vec<Spawned>) {
    if spawned.is_empty() {
        return;
    }
    for server in &spawned {
        server.group.signal(Signal::SIGTERM);
    }
    let exited = futures::future::join_all(spawned.iter_mut().map(|server| server.child.wait()));
    let _ = tokio::time::timeout(GRACE, exited).await;
    for server in &spawned {
        server.group.signal(Signal::SIGKILL);
    }
    let reaped = futures::future::join_all(spawned.iter_mut().map(|server| server.child.wait()));
    let _ = tokio::time::timeout(GRACE, reaped).await;
    // Each `Group` is dropped here, after its leader was reaped.
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Running (a zombie waiting for its reaper counts as gone).
    fn alive(pid: u32) -> bool {
        std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
            stat.rsplit_once(") ")
                .is_some_and(|(_, rest)| !rest.starts_with('Z'))
        })
    }

    #[tokio::test]
    async fn the_whole_group_is_stopped_even_a_child_that_ignores_sigterm() {
        let processes = ServerProcesses::default();
        // The leader starts a helper that ignores SIGTERM and prints its pid.
        let mut command = tokio::process::Command::new("sh");
        command
            .args(["-c", "sh -c 'trap \"\" TERM; sleep 30' & echo $!; wait"])
            .stdout(std::process::Stdio::piped());
        let (mut child, group) =
            leash_child::spawn_async(&mut command, leash_child::Stop::Politely).unwrap();
        let mut stdout = child.stdout.take().unwrap();
        processes.add("s", child, group);
        let mut line = String::new();
        {
            use tokio::io::AsyncBufReadExt;
            let mut reader = tokio::io::BufReader::new(&mut stdout);
            reader.read_line(&mut line).await.unwrap();
        }
        let helper: u32 = line.trim().parse().unwrap();
        assert!(alive(helper));
        processes.stop_all().await;
        // The helper was not our child: whoever reaps it, it must be dead.
        let gone = async {
            while alive(helper) {
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        };
        tokio::time::timeout(Duration::from_secs(5), gone)
            .await
            .expect("the helper outlived the stop");
    }
}

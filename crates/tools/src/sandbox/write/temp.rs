//! The temporary files of writes, and the process-wide registry that
//! removes whatever is left of them at exit.
//!
//! A write creates its temporary file, writes it and renames it over the
//! target on a tool thread of its own, which the process does not wait
//! for: the timer (124), a signal (130, 143) or a second signal's immediate
//! exit can end leash in the middle. So each temporary file is created
//! and registered under one lock (with its own handle on the directory
//! that holds it), renamed or removed under the same lock, and
//! [`remove_every_temp_file`] — called at the one exit point next to the
//! child registry's — removes every one still registered and refuses any
//! later one. Whatever the order, either the rename happened (the entry is
//! gone) or the file is removed and the rename fails: no `.leash-write-*`
//! file survives any exit. A `Temp` dropped unrenamed removes its file.
//!
//! Never holds the lock across anything but one `openat`, `renameat` or
//! `unlinkat`, and never removes a name it did not create.

use std::ffi::{OsStr, OsString};
use std::fs::File;
use std::io;
use std::sync::{Mutex, MutexGuard, PoisonError};

use rustix::fs::{AtFlags, Mode, OFlags};
use rustix::io::Errno;

/// How many temporary names are tried before giving up (each clash means
/// a file of that random name already exists).
const TEMP_ATTEMPTS: usize = 8;

/// One registered temporary file: its directory (a handle of its own)
/// and its name there.
struct Entry {
    id: u64,
    dir: File,
    name: OsString,
}

#[derive(Default)]
struct Temps {
    live: Vec<Entry>,
    next: u64,
    /// Set by the exit: no temporary file is created after it.
    closed: bool,
}

/// A set of live temporary files; the process has one ([`REGISTRY`]), a
/// test its own.
pub(super) struct Registry(Mutex<Temps>);

/// The process's temporary files.
static REGISTRY: Registry = Registry::new();

impl Registry {
    pub(super) const fn new() -> Self {
        Registry(Mutex::new(Temps {
            live: Vec::new(),
            next: 0,
            closed: false,
        }))
    }

    fn lock(&self) -> MutexGuard<'_, Temps> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Creates `.leash-write-<16 random hex>.tmp` in `dir` with
    /// `O_EXCL | O_NOFOLLOW` (so it is neither an existing file nor a
    /// planted symlink) and registers it. `private`: `0600` (an existing
    /// file's bits are applied later); else `0666` less the umask.
    pub(super) fn create(&'static self, dir: &File, private: bool) -> io::Result<(Temp, File)> {
        let flags =
            OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC;
        let mode = Mode::from_raw_mode(if private { 0o600 } else { 0o666 });
        let own_dir = dir.try_clone()?;
        let mut last = io::Error::other("no temporary name was tried");
        for _ in 0..TEMP_ATTEMPTS {
            let mut random = [0u8; 8];
            rustix::rand::getrandom(&mut random, rustix::rand::GetRandomFlags::empty())?;
            let hex: String = random.iter().map(|b| format!("{b:02x}")).collect();
            let name = OsString::from(format!(".leash-write-{hex}.tmp"));
            let mut temps = self.lock();
            if temps.closed {
                return Err(io::Error::other("leash is exiting"));
            }
            match rustix::fs::openat(dir, &name, flags, mode) {
                Ok(fd) => {
                    temps.next += 1;
                    let id = temps.next;
                    temps.live.push(Entry {
                        id,
                        dir: own_dir,
                        name: name.clone(),
                    });
                    let temp = Temp { id, registry: self };
                    return Ok((temp, File::from(fd)));
                }
                Err(Errno::EXIST) => last = io::Error::from(Errno::EXIST),
                Err(errno) => return Err(errno.into()),
            }
        }
        Err(last)
    }

    /// Removes `id`'s entry, if still there.
    fn take(temps: &mut Temps, id: u64) -> Option<Entry> {
        let index = temps.live.iter().position(|entry| entry.id == id)?;
        Some(temps.live.swap_remove(index))
    }

    /// Removes every registered file and refuses new ones.
    pub fn remove_all(&self) {
        let mut temps = self.lock();
        temps.closed = true;
        for entry in temps.live.drain(..) {
            let _ = rustix::fs::unlinkat(&entry.dir, &entry.name, AtFlags::empty());
        }
    }
}

/// A registered temporary file: renamed over its target by
/// [`rename_over`](Temp::rename_over), removed when dropped otherwise.
pub(crate) struct Temp {
    id: u64,
    registry: &'static Registry,
}

impl Temp {
    /// A new temporary file in `dir`, registered with the process's
    /// registry (see [`Registry::create`]).
    pub(super) fn create(dir: &File, private: bool) -> io::Result<(Temp, File)> {
        REGISTRY.create(dir, private)
    }

    /// Renames the file over `target` in its directory. Refused when the
    /// exit removed it already (nothing is replaced then).
    pub(super) fn rename_over(self, target: &OsStr) -> io::Result<()> {
        let mut temps = self.registry.lock();
        let Some(entry) = Registry::take(&mut temps, self.id) else {
            return Err(io::Error::other("leash is exiting"));
        };
        match rustix::fs::renameat(&entry.dir, &entry.name, &entry.dir, target) {
            Ok(()) => Ok(()),
            Err(errno) => {
                let _ = rustix::fs::unlinkat(&entry.dir, &entry.name, AtFlags::empty());
                Err(errno.into())
            }
        }
    }
}

impl Drop for Temp {
    fn drop(&mut self) {
        let mut temps = self.registry.lock();
        if let Some(entry) = Registry::take(&mut temps, self.id) {
            let _ = rustix::fs::unlinkat(&entry.dir, &entry.name, AtFlags::empty());
        }
    }
}

impl std::fmt::Debug for Temp {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Temp").field("id", &self.id).finish()
    }
}

/// Removes every temporary file of a write still in progress and refuses
/// any later one: called once, at leash's exit (`run_process`, and the
/// second signal's immediate exit), so none survives a run the timer or a
/// signal ended mid-write.
pub fn remove_every_temp_file() {
    REGISTRY.remove_all();
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;
    use std::io::Write;

    fn temps_in(dir: &std::path::Path) -> Vec<String> {
        std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|name| name.starts_with(".leash-write-"))
            .collect()
    }

    #[test]
    fn the_exit_removes_live_files_and_refuses_later_ones() {
        static OWN: Registry = Registry::new();
        let dir = tempfile::tempdir().unwrap();
        let handle = File::open(dir.path()).unwrap();
        // A write that finished: renamed, nothing left to remove.
        let (done, mut file) = OWN.create(&handle, false).unwrap();
        file.write_all(b"done").unwrap();
        done.rename_over(OsStr::new("done.txt")).unwrap();
        // A write dropped on an error: its file goes at once.
        let (failed, _file) = OWN.create(&handle, false).unwrap();
        drop(failed);
        assert_eq!(temps_in(dir.path()), Vec::<String>::new());
        // Two writes still running when the process exits, their owners
        // forgotten (a thread the process does not wait for).
        let (running, mut file) = OWN.create(&handle, true).unwrap();
        file.write_all(b"half").unwrap();
        let (forgotten, _) = OWN.create(&handle, false).unwrap();
        std::mem::forget(forgotten);
        assert_eq!(temps_in(dir.path()).len(), 2);
        OWN.remove_all();
        assert_eq!(temps_in(dir.path()), Vec::<String>::new());
        // The running write's rename is refused: nothing replaced.
        std::fs::write(dir.path().join("target.txt"), "old").unwrap();
        assert!(running.rename_over(OsStr::new("target.txt")).is_err());
        assert_eq!(
            std::fs::read_to_string(dir.path().join("target.txt")).unwrap(),
            "old"
        );
        // And no new temporary file is made after the exit.
        assert!(OWN.create(&handle, false).is_err());
        assert_eq!(temps_in(dir.path()), Vec::<String>::new());
        assert_eq!(
            std::fs::read_to_string(dir.path().join("done.txt")).unwrap(),
            "done"
        );
    }
}

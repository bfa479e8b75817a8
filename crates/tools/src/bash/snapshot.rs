//! What a command changed under the root: the files' size, time, inode
//! and kind before and after, compared. Git directories are left out (the
//! shell's `git commit` is not a change of the work tree), links are not
//! followed, and a tree past [`MAX_ENTRIES`] is looked at no further.
//!
//! The tree is walked once, at the first command ([`Tracker`]); after
//! that inotify says which paths were touched, and only those are looked
//! at again, so a call costs what its command changed, not the tree's
//! size. Where inotify cannot watch the whole tree (no watches left) or
//! its queue overflowed, the tree is walked before and after instead.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

#[cfg(target_os = "linux")]
use nix::sys::inotify::{AddWatchFlags, InitFlags, Inotify, WatchDescriptor};

/// The most entries one snapshot looks at.
pub(super) const MAX_ENTRIES: usize = 200_000;

/// One file's state.
type State = (u64, i64, i64, u64, u32);

/// The changes of one command, whichever way they are found.
#[derive(Debug)]
pub(super) struct Tracker {
    root: PathBuf,
    watched: Option<Watched>,
}

/// A command's start, as [`Tracker::begin`] left it.
#[derive(Debug)]
pub(super) enum Begun {
    /// The tree is watched: nothing to keep.
    Watched,
    /// The tree as it was, walked.
    Walked(Snapshot),
}

impl Tracker {
    /// A tracker of `root`: its first [`Tracker::begin`] walks the tree.
    pub fn new(root: &Path) -> Tracker {
        Tracker {
            root: root.to_owned(),
            watched: None,
        }
    }

    /// Before a command: what was changed since the last (another tool,
    /// the operator) is taken in, not counted as the command's.
    pub(super) fn begin(&mut self) -> Begun {
        if let Some(watched) = &mut self.watched
            && watched.absorb().is_ok()
        {
            return Begun::Watched;
        }
        self.watched = Watched::new(&self.root);
        match self.watched {
            Some(_) => Begun::Watched,
            None => Begun::Walked(Snapshot::take(&self.root)),
        }
    }

    /// After the command: the files it created, changed or removed.
    pub(super) fn end(&mut self, begun: Begun) -> Vec<String> {
        match (begun, &mut self.watched) {
            (Begun::Watched, Some(watched)) => match watched.absorb() {
                Ok(changed) => changed,
                Err(()) => {
                    // Overflowed: the last known state against a new walk.
                    let before = Snapshot {
                        files: std::mem::take(&mut watched.files),
                    };
                    self.watched = Watched::new(&self.root);
                    let after = Snapshot::take(&self.root);
                    before.changed(&after)
                }
            },
            (Begun::Walked(before), _) => before.changed(&Snapshot::take(&self.root)),
            (Begun::Watched, None) => Vec::new(),
        }
    }
}

/// Elsewhere nothing watches: every command walks the tree twice.
#[cfg(not(target_os = "linux"))]
#[derive(Debug)]
struct Watched {
    files: BTreeMap<String, State>,
}

#[cfg(not(target_os = "linux"))]
impl Watched {
    fn new(_root: &Path) -> Option<Watched> {
        None
    }

    fn absorb(&mut self) -> Result<Vec<String>, ()> {
        Err(())
    }
}

/// A tree under inotify's watch: one watch per directory, and the files'
/// states as last seen.
#[cfg(target_os = "linux")]
#[derive(Debug)]
struct Watched {
    inotify: Inotify,
    root: PathBuf,
    dirs: HashMap<WatchDescriptor, String>,
    files: BTreeMap<String, State>,
}

#[cfg(target_os = "linux")]
fn watch_flags() -> AddWatchFlags {
    AddWatchFlags::IN_CREATE
        | AddWatchFlags::IN_DELETE
        | AddWatchFlags::IN_MODIFY
        | AddWatchFlags::IN_ATTRIB
        | AddWatchFlags::IN_CLOSE_WRITE
        | AddWatchFlags::IN_MOVED_FROM
        | AddWatchFlags::IN_MOVED_TO
        | AddWatchFlags::IN_DONT_FOLLOW
        | AddWatchFlags::IN_ONLYDIR
}

#[cfg(target_os = "linux")]
impl Watched {
    /// Watches every directory under `root` and records every file;
    /// `None` when a watch cannot be had (no inotify, none left).
    fn new(root: &Path) -> Option<Watched> {
        let inotify = Inotify::init(InitFlags::IN_NONBLOCK | InitFlags::IN_CLOEXEC).ok()?;
        let mut watched = Watched {
            inotify,
            root: root.to_owned(),
            dirs: HashMap::new(),
            files: BTreeMap::new(),
        };
        let mut files = BTreeMap::new();
        watched.add_tree(String::new(), &mut files)?;
        watched.files = files;
        Some(watched)
    }

    /// Watches `rel` (a directory, `""` the root, else ending in `/`) and
    /// every directory below it; records their files in `files`.
    fn add_tree(&mut self, rel: String, files: &mut BTreeMap<String, State>) -> Option<()> {
        let mut pending = vec![rel];
        let mut seen = 0usize;
        while let Some(prefix) = pending.pop() {
            let dir = self.root.join(&prefix);
            let wd = self.inotify.add_watch(&dir, watch_flags()).ok()?;
            self.dirs.insert(wd, prefix.clone());
            let Ok(entries) = std::fs::read_dir(&dir) else {
                continue;
            };
            for entry in entries.flatten() {
                seen += 1;
                if seen > MAX_ENTRIES {
                    return None;
                }
                let name = entry.file_name().to_string_lossy().into_owned();
                let Ok(meta) = entry.path().symlink_metadata() else {
                    continue;
                };
                if meta.is_dir() {
                    if name != ".git" {
                        pending.push(format!("{prefix}{name}/"));
                    }
                } else {
                    files.insert(format!("{prefix}{name}"), state(&meta));
                }
            }
        }
        Some(())
    }

    /// Reads every event queued, looks again at the paths they name, and
    /// returns the files whose state differs, sorted; `Err` when the
    /// queue overflowed (or a new directory could not be watched).
    fn absorb(&mut self) -> Result<Vec<String>, ()> {
        let mut touched: BTreeSet<String> = BTreeSet::new();
        loop {
            let events = match self.inotify.read_events() {
                Ok(events) if !events.is_empty() => events,
                Ok(_) | Err(nix::errno::Errno::EAGAIN) => break,
                Err(_) => return Err(()),
            };
            for event in events {
                if event.mask.contains(AddWatchFlags::IN_Q_OVERFLOW) {
                    return Err(());
                }
                if event.mask.contains(AddWatchFlags::IN_IGNORED) {
                    self.dirs.remove(&event.wd);
                    continue;
                }
                let (Some(dir), Some(name)) = (self.dirs.get(&event.wd), &event.name) else {
                    continue;
                };
                let name = name.to_string_lossy();
                if name == ".git" {
                    continue;
                }
                let path = format!("{dir}{name}");
                if event.mask.contains(AddWatchFlags::IN_ISDIR) {
                    let prefix = format!("{path}/");
                    touched.extend(
                        self.files
                            .range(prefix.clone()..)
                            .take_while(|(known, _)| known.starts_with(&prefix))
                            .map(|(known, _)| known.clone()),
                    );
                    if event
                        .mask
                        .intersects(AddWatchFlags::IN_CREATE | AddWatchFlags::IN_MOVED_TO)
                    {
                        let mut found = BTreeMap::new();
                        self.add_tree(prefix, &mut found).ok_or(())?;
                        touched.extend(found.into_keys());
                    }
                } else {
                    touched.insert(path);
                }
            }
        }
        let mut changed = Vec::new();
        for path in touched {
            let now = self
                .root
                .join(&path)
                .symlink_metadata()
                .ok()
                .filter(|meta| !meta.is_dir())
                .map(|meta| state(&meta));
            let was = match now {
                Some(now) => self.files.insert(path.clone(), now),
                None => self.files.remove(&path),
            };
            if was != now {
                changed.push(path);
            }
        }
        Ok(changed)
    }
}

fn state(meta: &std::fs::Metadata) -> State {
    (
        meta.len(),
        meta.mtime(),
        meta.mtime_nsec(),
        meta.ino(),
        meta.mode(),
    )
}

/// The files under a root, by path relative to it.
#[derive(Debug, Default)]
pub(super) struct Snapshot {
    files: BTreeMap<String, State>,
}

impl Snapshot {
    /// The files under `root` now.
    pub(super) fn take(root: &Path) -> Snapshot {
        let mut files = BTreeMap::new();
        let mut pending = vec![(root.to_owned(), String::new())];
        let mut seen = 0usize;
        while let Some((dir, prefix)) = pending.pop() {
            let Ok(entries) = std::fs::read_dir(&dir) else {
                continue;
            };
            for entry in entries.flatten() {
                seen += 1;
                if seen > MAX_ENTRIES {
                    return Snapshot { files };
                }
                let name = entry.file_name().to_string_lossy().into_owned();
                let Ok(meta) = entry.path().symlink_metadata() else {
                    continue;
                };
                let path = format!("{prefix}{name}");
                if meta.is_dir() {
                    if name != ".git" {
                        pending.push((entry.path(), format!("{path}/")));
                    }
                } else {
                    files.insert(path, state(&meta));
                }
            }
        }
        Snapshot { files }
    }

    /// The files created, changed or removed between `self` and `after`,
    /// sorted.
    pub(super) fn changed(&self, after: &Snapshot) -> Vec<String> {
        let mut changed: Vec<String> = after
            .files
            .iter()
            .filter(|(path, state)| self.files.get(*path) != Some(state))
            .map(|(path, _)| path.clone())
            .collect();
        changed.extend(
            self.files
                .keys()
                .filter(|path| !after.files.contains_key(*path))
                .cloned(),
        );
        changed.sort();
        changed
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn created_changed_and_removed_files_are_found_and_git_is_not() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::write(root.join("kept"), "a").unwrap();
        std::fs::write(root.join("edited"), "a").unwrap();
        std::fs::write(root.join("gone"), "a").unwrap();
        std::fs::create_dir(root.join(".git")).unwrap();
        let before = Snapshot::take(root);
        std::fs::write(root.join("edited"), "ab").unwrap();
        std::fs::remove_file(root.join("gone")).unwrap();
        std::fs::create_dir(root.join("sub")).unwrap();
        std::fs::write(root.join("sub/new"), "a").unwrap();
        std::fs::write(root.join(".git/index"), "a").unwrap();
        let after = Snapshot::take(root);
        assert_eq!(before.changed(&after), ["edited", "gone", "sub/new"]);
    }

    #[test]
    fn the_watch_finds_what_the_walk_finds_and_not_what_came_before() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::write(root.join("kept"), "a").unwrap();
        std::fs::write(root.join("edited"), "a").unwrap();
        std::fs::write(root.join("gone"), "a").unwrap();
        std::fs::create_dir_all(root.join("old/deep")).unwrap();
        std::fs::write(root.join("old/deep/file"), "a").unwrap();
        std::fs::create_dir(root.join(".git")).unwrap();
        let mut tracker = Tracker::new(root);
        let begun = tracker.begin();
        assert!(matches!(begun, Begun::Watched), "inotify is there on Linux");
        assert_eq!(tracker.end(begun), Vec::<String>::new());
        // Between commands (edit_file): not the next command's change.
        std::fs::write(root.join("kept"), "between").unwrap();
        let begun = tracker.begin();
        std::fs::write(root.join("edited"), "ab").unwrap();
        std::fs::remove_file(root.join("gone")).unwrap();
        std::fs::create_dir_all(root.join("sub/inner")).unwrap();
        std::fs::write(root.join("sub/inner/new"), "a").unwrap();
        std::fs::rename(root.join("old"), root.join("moved")).unwrap();
        std::fs::write(root.join(".git/index"), "a").unwrap();
        assert_eq!(
            tracker.end(begun),
            [
                "edited",
                "gone",
                "moved/deep/file",
                "old/deep/file",
                "sub/inner/new"
            ]
        );
        let begun = tracker.begin();
        std::fs::write(root.join("moved/deep/file"), "changed").unwrap();
        assert_eq!(tracker.end(begun), ["moved/deep/file"]);
    }
}

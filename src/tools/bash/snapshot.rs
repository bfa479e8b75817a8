//! What a command changed under the root: the files' size, time, inode
//! and kind before and after, compared. Git directories are left out (the
//! shell's `git commit` is not a change of the work tree), links are not
//! followed, and a tree past [`MAX_ENTRIES`] is looked at no further.

use std::collections::BTreeMap;
use std::os::unix::fs::MetadataExt;
use std::path::Path;

/// The most entries one snapshot looks at.
pub(super) const MAX_ENTRIES: usize = 200_000;

/// One file's state.
type State = (u64, i64, i64, u64, u32);

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
                    let state = (
                        meta.len(),
                        meta.mtime(),
                        meta.mtime_nsec(),
                        meta.ino(),
                        meta.mode(),
                    );
                    files.insert(path, state);
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
}

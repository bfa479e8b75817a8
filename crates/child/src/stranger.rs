//! Root without a writable pids cgroup (a default `docker run`): the
//! kernel enforces `RLIMIT_NPROC` for every uid but 0, so a confined
//! command runs as a *stranger* — a uid no account names and no process
//! uses — with the limit set and root's file capabilities kept as
//! ambient ones (docs/src/tools.md "Root in a container").
//!
//! The confiner switches to the uid for good (`setresuid`, no
//! `CAP_SETUID`/`CAP_SETGID`/`CAP_SETPCAP` left in any set or the
//! bounding set, `no_new_privs`): the command cannot become root again,
//! and as another uid it can neither signal nor trace leash. What it
//! made under the root is given back to the root directory's owner after
//! each command ([`give_back`]), so the operator finds the checkout's
//! own owner on its files.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// The uids tried, highest first: below `nobody` (65534) and inside the
/// 65536 ids a rootless or remapped container maps.
const CANDIDATES: std::ops::RangeInclusive<u32> = 60_000..=65_533;

/// The stranger's uid (its gid is the same number), chosen once per
/// leash process; `None` when every candidate is taken.
pub fn uid() -> Option<u32> {
    static CHOSEN: OnceLock<Option<u32>> = OnceLock::new();
    *CHOSEN.get_or_init(|| {
        let running = process_uids();
        CANDIDATES.rev().find(|candidate| {
            !running.contains(candidate)
                && nix::unistd::User::from_uid(nix::unistd::Uid::from_raw(*candidate))
                    .is_ok_and(|user| user.is_none())
                && nix::unistd::Group::from_gid(nix::unistd::Gid::from_raw(*candidate))
                    .is_ok_and(|group| group.is_none())
        })
    })
}

/// Every `/proc/PID` directory this process can see.
pub(super) fn process_dirs() -> impl Iterator<Item = std::fs::DirEntry> {
    std::fs::read_dir("/proc")
        .into_iter()
        .flatten()
        .flatten()
        .filter(|entry| {
            entry
                .file_name()
                .to_str()
                .is_some_and(|name| name.parse::<u32>().is_ok())
        })
}

/// The real uids of every process this one can see.
fn process_uids() -> std::collections::HashSet<u32> {
    process_dirs()
        .filter_map(|entry| std::fs::read_to_string(entry.path().join("status")).ok())
        .filter_map(|status| {
            let line = status.lines().find(|line| line.starts_with("Uid:"))?;
            line.split_whitespace().nth(1)?.parse().ok()
        })
        .collect()
}

/// The first directory on the way to `path` (itself included) that other
/// users may not enter (no `o+x`): the stranger's `access()` fails below
/// it, `CAP_DAC_OVERRIDE` or not — the kernel drops capabilities from
/// `access()` for a uid other than 0 — so a tool that looks for a
/// program that way (gcc for `ld`, Python for itself) does not find it.
pub fn closed_on_the_way(path: &Path) -> Option<PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    path.ancestors()
        .collect::<Vec<_>>()
        .into_iter()
        .rev()
        .find(|dir| {
            std::fs::metadata(dir)
                .is_ok_and(|meta| meta.is_dir() && meta.permissions().mode() & 0o001 == 0)
        })
        .map(Path::to_owned)
}

/// The start-up notice of root's commands run as the stranger `uid`,
/// naming each of `readable` a tool may not find that way.
pub fn notice(uid: u32, readable: &[PathBuf]) -> String {
    let mut closed: Vec<String> = Vec::new();
    for path in readable {
        if let Some(dir) = closed_on_the_way(path) {
            let dir = dir.display().to_string();
            if !closed.contains(&dir) {
                closed.push(dir);
            }
        }
    }
    let mut notice = format!(
        "root without a writable pids cgroup: commands run as uid {uid}, capped by \
         RLIMIT_NPROC, never root again (what they make under the root is given to the \
         root's owner)"
    );
    if !closed.is_empty() {
        notice.push_str(&format!(
            "; {} may not be entered by other users, so a tool that checks access() there \
             (gcc finding ld, Python finding itself) fails: install toolchains where every \
             user may enter (e.g. /usr/local), or pass --allow-exec=unconfined",
            closed.join(", ")
        ));
    }
    notice
}

/// Gives each path of `changed` (relative to `root`) and the directories
/// between it and the root that the stranger `uid` owns to the root
/// directory's owner; links are changed, never followed. Run after the
/// command's whole tree is gone, so nothing moves under it.
pub fn give_back(root: &Path, changed: &[String], uid: u32) {
    use std::os::unix::fs::MetadataExt;
    let Ok(owner) = std::fs::metadata(root) else {
        return;
    };
    let mut seen = std::collections::HashSet::new();
    for path in changed {
        let mut at = Path::new(path.as_str());
        loop {
            if at.as_os_str().is_empty() || !seen.insert(at.to_owned()) {
                break;
            }
            let full = root.join(at);
            if std::fs::symlink_metadata(&full).is_ok_and(|meta| meta.uid() == uid) {
                let _ = std::os::unix::fs::lchown(&full, Some(owner.uid()), Some(owner.gid()));
            }
            match at.parent() {
                Some(parent) => at = parent,
                None => break,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_stranger_is_no_account_and_no_process() {
        let Some(uid) = uid() else {
            return;
        };
        assert!(CANDIDATES.contains(&uid));
        assert!(!process_uids().contains(&uid));
        assert!(
            nix::unistd::User::from_uid(nix::unistd::Uid::from_raw(uid))
                .unwrap()
                .is_none()
        );
    }

    #[test]
    fn a_directory_closed_to_others_is_found_on_the_way_and_named() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let closed = dir.path().join("home");
        std::fs::create_dir_all(closed.join("tool/bin")).unwrap();
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
        std::fs::set_permissions(&closed, std::fs::Permissions::from_mode(0o700)).unwrap();
        let tool = closed.join("tool/bin");
        assert_eq!(closed_on_the_way(&tool), Some(closed.clone()));
        let notice = notice(65_533, &[tool, PathBuf::from("/usr/bin")]);
        assert!(notice.contains("uid 65533"), "{notice}");
        assert!(
            notice.contains(&format!("; {} may not", closed.display())),
            "{notice}"
        );
        std::fs::set_permissions(&closed, std::fs::Permissions::from_mode(0o755)).unwrap();
        assert_eq!(closed_on_the_way(&closed.join("tool/bin")), None);
    }

    #[test]
    fn only_what_the_stranger_owns_is_given_back() {
        if !nix::unistd::geteuid().is_root() {
            return;
        }
        use std::os::unix::fs::MetadataExt;
        let root = tempfile::tempdir().unwrap();
        std::os::unix::fs::chown(root.path(), Some(4242), Some(4343)).unwrap();
        std::fs::create_dir(root.path().join("made")).unwrap();
        std::fs::write(root.path().join("made/file"), "x").unwrap();
        std::fs::write(root.path().join("theirs"), "y").unwrap();
        for path in ["made", "made/file"] {
            std::os::unix::fs::lchown(root.path().join(path), Some(61_000), Some(61_000)).unwrap();
        }
        std::os::unix::fs::lchown(root.path().join("theirs"), Some(7), Some(7)).unwrap();
        let changed = ["made/file".to_owned(), "theirs".to_owned()];
        give_back(root.path(), &changed, 61_000);
        let owner = |path: &str| {
            let meta = std::fs::symlink_metadata(root.path().join(path)).unwrap();
            (meta.uid(), meta.gid())
        };
        assert_eq!(owner("made"), (4242, 4343));
        assert_eq!(owner("made/file"), (4242, 4343));
        assert_eq!(owner("theirs"), (7, 7));
    }
}

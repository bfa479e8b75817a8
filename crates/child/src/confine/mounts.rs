//! The command's private view of the mounts, where the kernel lets leash
//! make one (root with `CAP_SYS_ADMIN`, as codex's bubblewrap path does):
//! every mount read-only but the root and the temporary directory, the
//! root's `.git` read-only inside them, and a `.env` leash took a key
//! from replaced by `/dev/null`. A read-only mount is what holds
//! `chmod`, `chown`, `utimensat` and `setxattr` outside the root, which
//! Landlock has no right for.
//!
//! It runs in the confiner, before Landlock and seccomp, and changes
//! nothing outside the new namespace (every mount is made private
//! first). It must never leave a mount it was asked to make read-only
//! writable: any step that fails ends the launch.

use std::path::{Path, PathBuf};

use nix::mount::{MsFlags, mount};
use nix::sched::{CloneFlags, unshare};

use super::spec::Spec;

/// Whether this process may make a private mount namespace; tried in a
/// child process ([`super::PROBE`]) so leash's own view never changes.
pub(super) fn can_unshare() -> bool {
    unshare(CloneFlags::CLONE_NEWNS).is_ok()
        && mount::<str, str, str, str>(None, "/", None, MsFlags::MS_REC | MsFlags::MS_PRIVATE, None)
            .is_ok()
}

/// Makes the view the module doc describes, for good.
pub(super) fn private_view(spec: &Spec) -> Result<(), String> {
    let fail =
        |what: &str, path: &Path, error: nix::Error| format!("{what} {}: {error}", path.display());
    let cwd = std::env::current_dir().map_err(|error| format!("no working directory: {error}"))?;
    unshare(CloneFlags::CLONE_NEWNS).map_err(|e| fail("unshare for", Path::new("mounts"), e))?;
    mount::<str, str, str, str>(None, "/", None, MsFlags::MS_REC | MsFlags::MS_PRIVATE, None)
        .map_err(|e| fail("cannot make private", Path::new("/"), e))?;
    let writable: Vec<&PathBuf> = spec.writable.iter().filter(|path| path.is_dir()).collect();
    for dir in &writable {
        bind(dir, dir).map_err(|e| fail("cannot bind", dir, e))?;
    }
    for path in &spec.read_only {
        bind(path, path).map_err(|e| fail("cannot bind", path, e))?;
        read_only(path, MsFlags::empty()).map_err(|e| fail("cannot make read-only", path, e))?;
    }
    for file in &spec.hidden {
        bind(Path::new("/dev/null"), file).map_err(|e| fail("cannot hide", file, e))?;
    }
    for (point, flags) in mounts()? {
        let ours = writable.iter().any(|dir| point.starts_with(dir))
            || spec.read_only.iter().any(|path| point.starts_with(path))
            || spec.hidden.contains(&point);
        if ours || flags.contains(MsFlags::MS_RDONLY) {
            continue;
        }
        read_only(&point, flags).map_err(|e| fail("cannot make read-only", &point, e))?;
    }
    // The working directory was entered before the binds: entered again,
    // relative paths go through them.
    std::env::set_current_dir(&cwd)
        .map_err(|error| format!("cannot enter {} again: {error}", cwd.display()))
}

fn bind(from: &Path, to: &Path) -> nix::Result<()> {
    mount::<Path, Path, str, str>(
        Some(from),
        to,
        None,
        MsFlags::MS_BIND | MsFlags::MS_REC,
        None,
    )
}

/// Remounts `point` read-only, keeping its other per-mount flags (a bind
/// remount sets them all: one left out would be cleared).
fn read_only(point: &Path, flags: MsFlags) -> nix::Result<()> {
    mount::<str, Path, str, str>(
        None,
        point,
        None,
        MsFlags::MS_REMOUNT | MsFlags::MS_BIND | MsFlags::MS_RDONLY | flags,
        None,
    )
}

/// Every mount point of this namespace, parents first, with the
/// per-mount flags it has (`/proc/self/mountinfo`'s fifth and sixth
/// fields; spaces and the like are octal escapes).
fn mounts() -> Result<Vec<(PathBuf, MsFlags)>, String> {
    let text = std::fs::read_to_string("/proc/self/mountinfo")
        .map_err(|error| format!("cannot read /proc/self/mountinfo: {error}"))?;
    Ok(text
        .lines()
        .filter_map(|line| {
            let mut fields = line.split(' ').skip(4);
            let point = unescape(fields.next()?);
            let flags = fields
                .next()?
                .split(',')
                .map(|option| match option {
                    "ro" => MsFlags::MS_RDONLY,
                    "nosuid" => MsFlags::MS_NOSUID,
                    "nodev" => MsFlags::MS_NODEV,
                    "noexec" => MsFlags::MS_NOEXEC,
                    "noatime" => MsFlags::MS_NOATIME,
                    "nodiratime" => MsFlags::MS_NODIRATIME,
                    "relatime" => MsFlags::MS_RELATIME,
                    "strictatime" => MsFlags::MS_STRICTATIME,
                    _ => MsFlags::empty(),
                })
                .fold(MsFlags::empty(), |all, flag| all | flag);
            Some((point, flags))
        })
        .collect())
}

/// `\040` and the other octal escapes of a mount point, decoded.
fn unescape(field: &str) -> PathBuf {
    use std::os::unix::ffi::OsStringExt;
    let bytes = field.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut at = 0;
    while at < bytes.len() {
        let octal = bytes.get(at + 1..at + 4).and_then(|digits| {
            std::str::from_utf8(digits)
                .ok()
                .and_then(|digits| u8::from_str_radix(digits, 8).ok())
        });
        match (bytes[at], octal) {
            (b'\\', Some(byte)) => {
                out.push(byte);
                at += 4;
            }
            (byte, _) => {
                out.push(byte);
                at += 1;
            }
        }
    }
    PathBuf::from(std::ffi::OsString::from_vec(out))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_mount_point_with_a_space_is_decoded() {
        assert_eq!(unescape("/mnt/a\\040b"), PathBuf::from("/mnt/a b"));
        assert_eq!(unescape("/plain"), PathBuf::from("/plain"));
        assert_eq!(unescape("/odd\\"), PathBuf::from("/odd\\"));
    }
}

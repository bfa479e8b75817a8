//! Paths no confined command may read, however wide a readable grant
//! above them is: Landlock only allows, so a grant that holds a secret is
//! split into its entries, the secret left out (docs/src/tools.md "What
//! the kernel holds, ABI by ABI").
//!
//! It must never grant through a link: an entry that is a symbolic link
//! is left out of a split grant (reading through it still works where its
//! target is granted on its own).

use std::path::{Path, PathBuf};

/// The system's secrets: password hashes, host keys, sudo rules, TLS
/// private keys. Root keeps `CAP_DAC_OVERRIDE` for builds, and `/etc`
/// is granted for its configuration, so these are left out by name.
pub const SYSTEM_SECRETS: [&str; 9] = [
    "/etc/shadow",
    "/etc/shadow-",
    "/etc/gshadow",
    "/etc/gshadow-",
    "/etc/ssh",
    "/etc/sudoers",
    "/etc/sudoers.d",
    "/etc/ssl/private",
    "/etc/security/opasswd",
];

/// `readable` with every grant that holds one of `never` split into its
/// entries, down to the secret, which is left out.
pub(super) fn without(readable: &[PathBuf], never: &[PathBuf]) -> Vec<PathBuf> {
    let mut granted = Vec::new();
    let mut pending: Vec<PathBuf> = readable.to_vec();
    while let Some(path) = pending.pop() {
        if never.iter().any(|secret| path.starts_with(secret)) {
            continue;
        }
        let holds_one = never.iter().any(|secret| secret.starts_with(&path));
        if holds_one && is_directory(&path) {
            let Ok(entries) = std::fs::read_dir(&path) else {
                continue;
            };
            pending.extend(
                entries
                    .flatten()
                    .filter(|entry| entry.file_type().is_ok_and(|kind| !kind.is_symlink()))
                    .map(|entry| entry.path()),
            );
        } else {
            granted.push(path);
        }
    }
    granted.sort();
    granted
}

fn is_directory(path: &Path) -> bool {
    std::fs::symlink_metadata(path).is_ok_and(|meta| meta.is_dir())
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn a_grant_holding_a_secret_is_split_and_the_secret_left_out() {
        let dir = tempfile::tempdir().unwrap();
        let etc = dir.path().join("etc");
        std::fs::create_dir_all(etc.join("ssh")).unwrap();
        std::fs::create_dir_all(etc.join("ssl/certs")).unwrap();
        std::fs::create_dir_all(etc.join("ssl/private")).unwrap();
        std::fs::write(etc.join("shadow"), "x").unwrap();
        std::fs::write(etc.join("passwd"), "x").unwrap();
        std::os::unix::fs::symlink("/root", etc.join("link")).unwrap();
        let usr = dir.path().join("usr");
        let never = [etc.join("shadow"), etc.join("ssh"), etc.join("ssl/private")];
        let granted = without(&[etc.clone(), usr.clone()], &never);
        assert_eq!(granted, [etc.join("passwd"), etc.join("ssl/certs"), usr]);
    }
}

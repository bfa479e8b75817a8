//! Names a write refuses whatever the directory: files whose name says
//! they hold secrets (dotenv files, private keys, credential stores).
//! Judges the name alone; must never look at the file system.

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

use super::WriteError;
use crate::sandbox::names_dotenv;

/// Which kind of secret a file name says a file holds, if any: a dotenv
/// file (`.env`, `.env.*`), an SSH private key (`id_rsa`, `id_dsa`,
/// `id_ecdsa`, `id_ed25519`, and their `_sk` forms), a key or certificate
/// store (`*.pem`, `*.key`, `*.p12`, `*.pfx`, `*.jks`, `*.keystore`,
/// `*.ppk`), or a credentials file (`.netrc`, `.pgpass`,
/// `.git-credentials`).
pub fn refused_name(name: &OsStr) -> Option<&'static str> {
    let bytes = name.as_bytes();
    if names_dotenv(Path::new(name)) {
        return Some("a dotenv file");
    }
    const SSH_KEYS: [&[u8]; 6] = [
        b"id_rsa",
        b"id_dsa",
        b"id_ecdsa",
        b"id_ed25519",
        b"id_ecdsa_sk",
        b"id_ed25519_sk",
    ];
    if SSH_KEYS.contains(&bytes) {
        return Some("an SSH private key");
    }
    const CREDENTIALS: [&[u8]; 3] = [b".netrc", b".pgpass", b".git-credentials"];
    if CREDENTIALS.contains(&bytes) {
        return Some("a credentials file");
    }
    let extension = Path::new(name)
        .extension()
        .map(|e| e.as_bytes().to_ascii_lowercase());
    const KEY_STORES: [&[u8]; 7] = [b"pem", b"key", b"p12", b"pfx", b"jks", b"keystore", b"ppk"];
    if extension.is_some_and(|e| KEY_STORES.contains(&e.as_slice())) {
        return Some("a private key or certificate store");
    }
    None
}

/// Refuses a name [`refused_name`] names.
pub(super) fn check_name(name: &OsStr, shown: &str) -> Result<(), WriteError> {
    match refused_name(name) {
        Some(kind) => Err(WriteError::Secret {
            path: shown.to_owned(),
            kind,
        }),
        None => Ok(()),
    }
}

//! The files a run writes where the operator said (`--transcript`,
//! `--output-last-message`): never through a link (docs/src/security.md "Security and
//! limits"). The recipes write them inside a checkout, where a
//! pull request could plant a link to `~/.gitconfig`; so the last name
//! is opened with `O_NOFOLLOW`, as the batch's own files are, and a link
//! there is refused. A descriptor the operator's shell names
//! (`/dev/stdout`, `/dev/fd/N` of `>(…)`) is the operator's own and is
//! followed.

use std::fs::File;
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

/// Why an output path that is a link is refused, in words.
pub const LINK_REFUSED: &str =
    "it is a symbolic link, and leash writes no output through one; name the file itself";

/// Whether `path` names one of the process's own descriptors, which are
/// links by nature (`/dev/stdout`, `/dev/stderr`, `/dev/fd/N`,
/// `/proc/self/fd/N`): spelled so by the operator, never found in a
/// checkout.
pub fn names_a_descriptor(path: &Path) -> bool {
    let bytes = path.as_os_str().as_bytes();
    bytes == b"/dev/stdout"
        || bytes == b"/dev/stderr"
        || ["/dev/fd/", "/proc/self/fd/"].iter().any(|dir| {
            bytes
                .strip_prefix(dir.as_bytes())
                .is_some_and(|n| !n.is_empty() && n.iter().all(u8::is_ascii_digit))
        })
}

/// Creates (empties) or appends to an output file, never through a link
/// in its last name (a descriptor path aside); a link is refused with
/// [`LINK_REFUSED`].
pub fn open_output(path: &Path, append: bool) -> io::Result<File> {
    let mut options = File::options();
    if append {
        options.append(true);
    } else {
        options.write(true).create(true).truncate(true);
    }
    if !names_a_descriptor(path) {
        let nofollow = rustix::fs::OFlags::NOFOLLOW.bits();
        options.custom_flags(i32::try_from(nofollow).unwrap_or(0));
    }
    options
        .open(path)
        .map_err(|error| match path.symlink_metadata() {
            Ok(meta) if meta.file_type().is_symlink() => io::Error::other(LINK_REFUSED),
            _ => error,
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_planted_link_is_refused_and_its_target_untouched() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("gitconfig");
        std::fs::write(&target, "[user]\n").unwrap();
        let link = dir.path().join("t.jsonl");
        std::os::unix::fs::symlink(&target, &link).unwrap();
        for append in [false, true] {
            let error = open_output(&link, append).unwrap_err();
            assert_eq!(error.to_string(), LINK_REFUSED);
        }
        assert_eq!(std::fs::read_to_string(&target).unwrap(), "[user]\n");
        let plain = dir.path().join("plain.txt");
        open_output(&plain, false).unwrap();
        assert!(plain.is_file());
    }

    #[test]
    fn only_the_processes_own_descriptors_are_followed() {
        for path in [
            "/dev/stdout",
            "/dev/stderr",
            "/dev/fd/63",
            "/proc/self/fd/1",
        ] {
            assert!(names_a_descriptor(Path::new(path)), "{path}");
        }
        for path in [
            "/dev/fd/",
            "/dev/fd/../x",
            "out/dev/fd/1",
            "/dev/stdout2",
            "t.jsonl",
        ] {
            assert!(!names_a_descriptor(Path::new(path)), "{path}");
        }
    }
}

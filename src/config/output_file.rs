//! The files a run writes where the operator said (`--transcript`,
//! `--output-last-message`): never through a link (docs/src/security.md "Security and
//! limits"). The README's recipes write them inside a checkout, where a
//! pull request could plant a link to `~/.gitconfig`, or a link to a
//! directory (`logs -> ~/.ssh`) above the file. So no name on the way is
//! followed: for a relative path, or an absolute one beneath the working
//! directory, every name is opened without following a link (Linux's
//! `openat2` with `RESOLVE_NO_SYMLINKS`, checked name by name where the
//! kernel lacks it); for another absolute path, the operator's own
//! (`/tmp` may be a link on macOS), the last name. A descriptor the
//! operator's shell names (`/dev/stdout`, `/dev/fd/N` of `>(…)`) is the
//! operator's own and is followed.

use std::fs::File;
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Component, Path, PathBuf};

/// Why an output path that is a link is refused, in words.
pub const LINK_REFUSED: &str =
    "it is a symbolic link, and leash writes no output through one; name the file itself";

/// Why an output path through a linked directory is refused, in words.
pub const DIR_LINK_REFUSED: &str = "a directory on its path is a symbolic link, and leash writes no output through one; name the real directory";

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

/// The part of `path` whose every name must not be a link: the whole of a
/// relative path, the part beneath the working directory `cwd` of an
/// absolute one; `None` for an absolute path elsewhere (only its last
/// name is held).
fn guarded_part(path: &Path, cwd: &Path) -> Option<PathBuf> {
    match path.is_relative() {
        true => Some(path.to_path_buf()),
        false => path.strip_prefix(cwd).ok().map(Path::to_path_buf),
    }
}

/// Why writing to `path` is refused for a link on its way, if it is: the
/// last name a link ([`LINK_REFUSED`]), or a directory beneath the
/// working directory ([`DIR_LINK_REFUSED`]). Checked before the run so
/// the refusal is a usage error; [`open_output`] holds the rule again
/// when it opens.
pub fn link_on_path(path: &Path) -> Option<&'static str> {
    link_on_path_from(path, &std::env::current_dir().ok()?)
}

/// [`link_on_path`] with the working directory given.
fn link_on_path_from(path: &Path, cwd: &Path) -> Option<&'static str> {
    if names_a_descriptor(path) {
        return None;
    }
    if cwd
        .join(path)
        .symlink_metadata()
        .is_ok_and(|meta| meta.file_type().is_symlink())
    {
        return Some(LINK_REFUSED);
    }
    let guarded = guarded_part(path, cwd)?;
    let names: Vec<Component<'_>> = guarded.components().collect();
    let mut walked = cwd.to_path_buf();
    for name in names.iter().take(names.len().saturating_sub(1)) {
        walked.push(name);
        if matches!(name, Component::Normal(_))
            && walked
                .symlink_metadata()
                .is_ok_and(|meta| meta.file_type().is_symlink())
        {
            return Some(DIR_LINK_REFUSED);
        }
    }
    None
}

/// Creates (empties) or appends to an output file, never through a link
/// on its way (see the module's rule); a link is refused with
/// [`LINK_REFUSED`] or [`DIR_LINK_REFUSED`].
pub fn open_output(path: &Path, append: bool) -> io::Result<File> {
    open_output_from(path, &std::env::current_dir()?, append)
}

/// [`open_output`] with the working directory given.
fn open_output_from(path: &Path, cwd: &Path, append: bool) -> io::Result<File> {
    if names_a_descriptor(path) {
        return options(append).open(path);
    }
    let refused = || io::Error::other(link_on_path_from(path, cwd).unwrap_or(DIR_LINK_REFUSED));
    if let Some(guarded) = guarded_part(path, cwd) {
        match open_without_links(cwd, &guarded, append) {
            Some(Ok(file)) => return Ok(file),
            Some(Err(error))
                if error.raw_os_error() == Some(rustix::io::Errno::LOOP.raw_os_error()) =>
            {
                return Err(refused());
            }
            Some(Err(error)) => return Err(error),
            // No `openat2` here: the names are checked one by one.
            None => {
                if let Some(refused) = link_on_path_from(path, cwd) {
                    return Err(io::Error::other(refused));
                }
            }
        }
    }
    let mut options = options(append);
    let nofollow = rustix::fs::OFlags::NOFOLLOW.bits();
    options.custom_flags(i32::try_from(nofollow).unwrap_or(0));
    options
        .open(cwd.join(path))
        .map_err(|error| match cwd.join(path).symlink_metadata() {
            Ok(meta) if meta.file_type().is_symlink() => io::Error::other(LINK_REFUSED),
            _ => error,
        })
}

/// The open options of an output file: emptied, or appended to.
fn options(append: bool) -> std::fs::OpenOptions {
    let mut options = File::options();
    if append {
        options.append(true);
    } else {
        options.write(true).create(true).truncate(true);
    }
    options
}

/// Opens `guarded`, a path beneath `cwd`, with `RESOLVE_NO_SYMLINKS`;
/// `None` where the kernel has no `openat2` (before Linux 5.6, or a
/// filter refusing it).
#[cfg(target_os = "linux")]
fn open_without_links(cwd: &Path, guarded: &Path, append: bool) -> Option<io::Result<File>> {
    use rustix::fs::{Mode, OFlags, ResolveFlags};
    let flags = OFlags::WRONLY
        | OFlags::CLOEXEC
        | match append {
            true => OFlags::APPEND,
            false => OFlags::CREATE | OFlags::TRUNC,
        };
    let dir = match File::open(cwd) {
        Ok(dir) => dir,
        Err(error) => return Some(Err(error)),
    };
    // openat2 refuses a mode without O_CREAT.
    let mode = Mode::from_raw_mode(if append { 0 } else { 0o666 });
    match rustix::fs::openat2(&dir, guarded, flags, mode, ResolveFlags::NO_SYMLINKS) {
        Ok(fd) => Some(Ok(File::from(fd))),
        Err(rustix::io::Errno::NOSYS | rustix::io::Errno::PERM) => None,
        Err(errno) => Some(Err(io::Error::from(errno))),
    }
}

/// Elsewhere there is no `openat2`: the names are checked one by one.
#[cfg(not(target_os = "linux"))]
fn open_without_links(_: &Path, _: &Path, _: bool) -> Option<io::Result<File>> {
    None
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
    fn a_planted_directory_link_is_refused_and_nothing_is_written_through_it() {
        let dir = tempfile::tempdir().unwrap();
        let secret = dir.path().join("home-ssh");
        std::fs::create_dir(&secret).unwrap();
        let checkout = dir.path().join("checkout");
        std::fs::create_dir(&checkout).unwrap();
        std::os::unix::fs::symlink(&secret, checkout.join("logs")).unwrap();
        let through = checkout.join("logs/t.jsonl");
        // Relative, and absolute beneath the working directory: the
        // check and the open refuse alike.
        for path in [Path::new("logs/t.jsonl"), through.as_path()] {
            assert_eq!(
                link_on_path_from(path, &checkout),
                Some(DIR_LINK_REFUSED),
                "{path:?}"
            );
            for append in [false, true] {
                let error = open_output_from(path, &checkout, append).unwrap_err();
                assert_eq!(error.to_string(), DIR_LINK_REFUSED, "{path:?}");
            }
        }
        assert_eq!(std::fs::read_dir(&secret).unwrap().count(), 0);
        // A real directory is written to.
        std::fs::create_dir(checkout.join("out")).unwrap();
        assert_eq!(link_on_path_from(Path::new("out/t.jsonl"), &checkout), None);
        open_output_from(Path::new("out/t.jsonl"), &checkout, false).unwrap();
        assert!(checkout.join("out/t.jsonl").is_file());
        // `..` out of the checkout is not a link; a path elsewhere is the
        // operator's own, held at its last name only.
        assert_eq!(
            link_on_path_from(Path::new("../home-ssh/x"), &checkout),
            None
        );
        let elsewhere = dir.path().join("elsewhere");
        std::os::unix::fs::symlink(&secret, &elsewhere).unwrap();
        assert_eq!(link_on_path_from(&elsewhere.join("x"), &checkout), None);
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

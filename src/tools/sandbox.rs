//! The root sandbox: the one place where a path the model gave is turned
//! into an open file or directory under `--root` (SPEC 2.5).
//!
//! Resolution walks the path one name at a time from the canonical root,
//! following symlinks by hand, so a path that would leave the root is
//! refused before anything outside it is even looked at. The file is then
//! opened once and what was opened is checked against what was resolved
//! (inode, and on Linux the kernel's own path of the descriptor), so a
//! component swapped for a symlink in between is caught.
//!
//! This module must never open, list or read anything outside the root, and
//! never put anything but the model's own path into an error message.

use std::ffi::OsString;
use std::fs::{self, File, Metadata};
use std::io;
use std::os::unix::fs::MetadataExt;
use std::path::{Component, Path, PathBuf};

/// The longest path the model may give, in bytes (Linux's `PATH_MAX`).
pub const MAX_PATH_BYTES: usize = 4096;
/// The longest single name in a path, in bytes (Linux's `NAME_MAX`).
pub const MAX_NAME_BYTES: usize = 255;
/// How many symlinks one resolution may follow before it counts as a loop.
pub const MAX_SYMLINK_HOPS: usize = 40;
/// How much of a model-given path an error message repeats.
const SHOWN_PATH_CHARS: usize = 80;

/// Why a path was refused or could not be opened. `Display` is one line
/// addressed to the model.
#[derive(Debug, thiserror::Error)]
pub enum SandboxError {
    /// The root itself cannot be used (at construction).
    #[error("root directory '{path}' cannot be used: {source}")]
    Root {
        /// The root as given.
        path: String,
        /// Why.
        #[source]
        source: io::Error,
    },
    /// The root is not a directory (at construction).
    #[error("root '{path}' is not a directory")]
    RootNotDirectory {
        /// The root as given.
        path: String,
    },
    /// The root directory was replaced after the sandbox was made.
    #[error("the root directory changed while leash was running; nothing under it can be read")]
    RootChanged,
    /// The model gave an empty path.
    #[error("path is empty; give a path relative to the root, e.g. '.'")]
    Empty,
    /// The path holds a NUL byte.
    #[error("path '{path}' contains a NUL byte; give a plain path relative to the root")]
    NulByte {
        /// The path, shortened and escaped.
        path: String,
    },
    /// The path, or one name in it, is too long.
    #[error(
        "path '{path}' is too long ({len} bytes; at most {MAX_PATH_BYTES} bytes in all and {MAX_NAME_BYTES} per name)"
    )]
    TooLong {
        /// The path, shortened and escaped.
        path: String,
        /// Its length in bytes.
        len: usize,
    },
    /// The path holds a `..` component.
    #[error(
        "path '{path}' is outside the allowed root: '..' is not allowed; give a path relative to the root"
    )]
    ParentDir {
        /// The path, shortened and escaped.
        path: String,
    },
    /// An absolute path that does not lie inside the root.
    #[error("path '{path}' is outside the allowed root; give a path relative to the root")]
    Outside {
        /// The path, shortened and escaped.
        path: String,
    },
    /// A symlink on the way leads out of the root.
    #[error("path '{path}' is outside the allowed root: a symlink on it leads out of the root")]
    SymlinkOutside {
        /// The path, shortened and escaped.
        path: String,
    },
    /// Too many symlinks on the way: almost surely a loop.
    #[error("path '{path}' cannot be resolved: too many levels of symlinks (a symlink loop)")]
    SymlinkLoop {
        /// The path, shortened and escaped.
        path: String,
    },
    /// Nothing by that name (or a name on the way is not a directory).
    #[error("path '{path}' does not exist under the root; use list_dir to see what is there")]
    NotFound {
        /// The path, shortened and escaped.
        path: String,
    },
    /// A FIFO, socket or device: opening or reading it could block or harm.
    #[error(
        "path '{path}' is not a regular file or directory (a FIFO, socket or device); it cannot be read"
    )]
    Special {
        /// The path, shortened and escaped.
        path: String,
    },
    /// A dotenv file (`.env`, `.env.*`): it holds keys, so it is never read.
    #[error(
        "path '{path}' is a dotenv file, which holds secrets; leash's tools never read dotenv files"
    )]
    Dotenv {
        /// The path, shortened and escaped.
        path: String,
    },
    /// What was opened is not what was resolved (a concurrent change).
    #[error("path '{path}' changed while it was being opened; nothing was read")]
    Changed {
        /// The path, shortened and escaped.
        path: String,
    },
    /// Any other I/O failure (permissions, …).
    #[error("cannot open '{path}': {source}")]
    Io {
        /// The path, shortened and escaped.
        path: String,
        /// The operating system's error (it names no path).
        #[source]
        source: io::Error,
    },
}

/// What an opened path is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EntryKind {
    /// A regular file.
    File,
    /// A directory.
    Dir,
}

/// A file or directory under the root, opened and verified.
#[derive(Debug)]
pub struct Opened {
    file: File,
    kind: EntryKind,
    real: PathBuf,
    identity: (u64, u64),
}

impl Opened {
    /// Whether it is a file or a directory.
    pub fn kind(&self) -> EntryKind {
        self.kind
    }

    /// The canonical path it was opened at (inside the root).
    pub fn real_path(&self) -> &Path {
        &self.real
    }

    /// The open handle, for reading a file.
    pub fn into_file(self) -> File {
        self.file
    }

    /// The entries of an opened directory. On Linux they are read through
    /// the open descriptor itself, so a concurrent rename cannot redirect
    /// the listing; elsewhere the path is checked again just before.
    pub fn read_dir(&self) -> io::Result<fs::ReadDir> {
        if let Some(fd_path) = descriptor_path(&self.file) {
            if let Ok(entries) = fs::read_dir(&fd_path) {
                return Ok(entries);
            }
        }
        let now = fs::symlink_metadata(&self.real)?;
        if identity(&now) != self.identity {
            return Err(io::Error::other(
                "the directory changed while it was being listed",
            ));
        }
        fs::read_dir(&self.real)
    }
}

/// The directory the file tools may read, and the resolver for paths in it.
#[derive(Debug, Clone)]
pub struct Sandbox {
    /// Canonical: absolute, no symlinks, no `.`/`..`.
    root: PathBuf,
    /// The root as the operator spelled it, made absolute: an absolute path
    /// under this spelling is inside the root too.
    given: Option<PathBuf>,
    /// Device and inode of the root when the sandbox was made.
    identity: (u64, u64),
}

/// One step of a walk: a name to descend into, or up one level (only
/// symlink targets produce these; the model's own `..` is refused).
enum Step {
    Name(OsString),
    Up,
}

impl Sandbox {
    /// A sandbox rooted at `root`, which must be an existing directory. A
    /// root that is itself a symlink is fine: its target becomes the root.
    pub fn new(root: &Path) -> Result<Sandbox, SandboxError> {
        let shown_root = root.display().to_string();
        let canonical = fs::canonicalize(root).map_err(|source| SandboxError::Root {
            path: shown_root.clone(),
            source,
        })?;
        let meta = fs::metadata(&canonical).map_err(|source| SandboxError::Root {
            path: shown_root.clone(),
            source,
        })?;
        if !meta.is_dir() {
            return Err(SandboxError::RootNotDirectory { path: shown_root });
        }
        let given = if root.is_absolute() {
            Some(root.to_path_buf())
        } else {
            std::env::current_dir().ok().map(|cwd| cwd.join(root))
        };
        Ok(Sandbox {
            root: canonical,
            given,
            identity: identity(&meta),
        })
    }

    /// The canonical root directory.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Resolves a model-given path and opens it, verifying that what was
    /// opened lies inside the root. Only regular files and directories open.
    pub fn open(&self, path: &str) -> Result<Opened, SandboxError> {
        let shown = shown_path(path);
        let real = self.resolve(path)?;
        let before =
            fs::symlink_metadata(&real).map_err(|source| io_error(shown.clone(), source))?;
        let file_type = before.file_type();
        let kind = if file_type.is_dir() {
            EntryKind::Dir
        } else if file_type.is_file() {
            if names_dotenv(Path::new(path)) || names_dotenv(&real) {
                return Err(SandboxError::Dotenv { path: shown });
            }
            EntryKind::File
        } else if file_type.is_symlink() {
            // The walk saw no symlink here a moment ago.
            return Err(SandboxError::Changed { path: shown });
        } else {
            return Err(SandboxError::Special { path: shown });
        };
        let file = File::open(&real).map_err(|source| io_error(shown.clone(), source))?;
        self.verify_opened(&file, &before, shown)?;
        Ok(Opened {
            file,
            kind,
            real,
            identity: identity(&before),
        })
    }

    /// Checks that the handle is the very file the walk resolved (same
    /// device and inode) and, where the kernel can say, that it lives
    /// inside the root: a path component swapped for a symlink between the
    /// walk and the open is caught here, before a byte is read.
    fn verify_opened(
        &self,
        file: &File,
        resolved: &Metadata,
        shown: String,
    ) -> Result<(), SandboxError> {
        let opened = file
            .metadata()
            .map_err(|source| io_error(shown.clone(), source))?;
        if identity(&opened) != identity(resolved) {
            return Err(SandboxError::Changed { path: shown });
        }
        if let Some(opened_at) = descriptor_target(file) {
            if !opened_at.starts_with(&self.root) {
                return Err(SandboxError::Changed { path: shown });
            }
        }
        Ok(())
    }

    /// The canonical path a model-given path names, inside the root, found
    /// without touching anything outside the root. Not opened: use `open`.
    fn resolve(&self, path: &str) -> Result<PathBuf, SandboxError> {
        let relative = self.check_path(path)?;
        self.check_root()?;
        self.walk(path, &relative)
    }

    /// The checks that need no file system: emptiness, NUL, length, `..`,
    /// and an absolute path's prefix. Returns the path relative to the root.
    fn check_path(&self, path: &str) -> Result<PathBuf, SandboxError> {
        if path.is_empty() {
            return Err(SandboxError::Empty);
        }
        if path.contains('\0') {
            return Err(SandboxError::NulByte {
                path: shown_path(path),
            });
        }
        let p = Path::new(path);
        let longest_name = p
            .components()
            .map(|c| c.as_os_str().len())
            .max()
            .unwrap_or(0);
        if path.len() > MAX_PATH_BYTES || longest_name > MAX_NAME_BYTES {
            return Err(SandboxError::TooLong {
                path: shown_path(path),
                len: path.len(),
            });
        }
        if p.components().any(|c| c == Component::ParentDir) {
            return Err(SandboxError::ParentDir {
                path: shown_path(path),
            });
        }
        if p.is_absolute() {
            return self.strip_root(p).ok_or_else(|| SandboxError::Outside {
                path: shown_path(path),
            });
        }
        Ok(p.to_path_buf())
    }

    /// Refuses to go on when the root directory was swapped since `new`.
    fn check_root(&self) -> Result<(), SandboxError> {
        match fs::metadata(&self.root) {
            Ok(meta) if meta.is_dir() && identity(&meta) == self.identity => Ok(()),
            _ => Err(SandboxError::RootChanged),
        }
    }

    /// An absolute path under the root (canonical or as given), made
    /// relative to it. Purely lexical: nothing is looked up.
    fn strip_root(&self, absolute: &Path) -> Option<PathBuf> {
        if let Ok(rest) = absolute.strip_prefix(&self.root) {
            return Some(rest.to_path_buf());
        }
        let given = self.given.as_ref()?;
        absolute.strip_prefix(given).ok().map(Path::to_path_buf)
    }

    /// Follows `relative` from the root one name at a time. Symlinks are
    /// read, never followed by the kernel; a target that leaves the root is
    /// refused before it is looked at.
    fn walk(&self, path: &str, relative: &Path) -> Result<PathBuf, SandboxError> {
        let mut steps: Vec<Step> = Vec::new();
        push_steps(&mut steps, relative).map_err(|()| SandboxError::Outside {
            path: shown_path(path),
        })?;
        let mut current = self.root.clone();
        let mut hops = 0usize;
        while let Some(step) = steps.pop() {
            let name = match step {
                Step::Up => {
                    if current == self.root {
                        return Err(SandboxError::SymlinkOutside {
                            path: shown_path(path),
                        });
                    }
                    current.pop();
                    continue;
                }
                Step::Name(name) => name,
            };
            let candidate = current.join(&name);
            let meta = fs::symlink_metadata(&candidate)
                .map_err(|source| io_error(shown_path(path), source))?;
            if !meta.file_type().is_symlink() {
                current = candidate;
                continue;
            }
            hops += 1;
            if hops > MAX_SYMLINK_HOPS {
                return Err(SandboxError::SymlinkLoop {
                    path: shown_path(path),
                });
            }
            let target =
                fs::read_link(&candidate).map_err(|source| io_error(shown_path(path), source))?;
            let rest = if target.is_absolute() {
                let Some(rest) = self.strip_root(&target) else {
                    return Err(SandboxError::SymlinkOutside {
                        path: shown_path(path),
                    });
                };
                current = self.root.clone();
                rest
            } else {
                target
            };
            push_steps(&mut steps, &rest).map_err(|()| SandboxError::SymlinkOutside {
                path: shown_path(path),
            })?;
        }
        Ok(current)
    }
}

/// Pushes the components of a relative path onto the walk's stack so the
/// first component is popped first. Fails on a root or prefix component.
fn push_steps(steps: &mut Vec<Step>, relative: &Path) -> Result<(), ()> {
    for component in relative.components().rev() {
        match component {
            Component::Normal(name) => steps.push(Step::Name(name.to_os_string())),
            Component::ParentDir => steps.push(Step::Up),
            Component::CurDir => {}
            Component::RootDir | Component::Prefix(_) => return Err(()),
        }
    }
    Ok(())
}

/// Device and inode: what identifies a file regardless of its path.
fn identity(meta: &Metadata) -> (u64, u64) {
    (meta.dev(), meta.ino())
}

/// Maps an I/O error on a path under the root to the model's words.
fn io_error(path: String, source: io::Error) -> SandboxError {
    match source.kind() {
        io::ErrorKind::NotFound | io::ErrorKind::NotADirectory => SandboxError::NotFound { path },
        _ => SandboxError::Io { path, source },
    }
}

/// The magic path of an open descriptor, which reopens exactly that file.
#[cfg(target_os = "linux")]
fn descriptor_path(file: &File) -> Option<PathBuf> {
    use std::os::fd::AsRawFd;
    Some(PathBuf::from(format!("/proc/self/fd/{}", file.as_raw_fd())))
}

#[cfg(not(target_os = "linux"))]
fn descriptor_path(_file: &File) -> Option<PathBuf> {
    None
}

/// Where the kernel says an open descriptor lives, when it can say.
fn descriptor_target(file: &File) -> Option<PathBuf> {
    fs::read_link(descriptor_path(file)?).ok()
}

/// A model-given path as error messages repeat it: control characters
/// escaped, cut after a few dozen characters so a huge path cannot flood
/// the context.
/// Whether a path's last name is a dotenv file's: `.env` or `.env.*`
/// (`.env.local`, `.env.production`). A directory of that name (a Python
/// virtualenv called `.env`) may still be listed; a file never opens.
pub fn names_dotenv(path: &Path) -> bool {
    use std::os::unix::ffi::OsStrExt;
    path.file_name()
        .map(OsStrExt::as_bytes)
        .is_some_and(|name| name == b".env" || name.starts_with(b".env."))
}

pub(crate) fn shown_path(path: &str) -> String {
    let mut out = String::new();
    for (i, c) in path.chars().enumerate() {
        if i == SHOWN_PATH_CHARS {
            out.push('…');
            break;
        }
        if c.is_control() {
            out.extend(c.escape_default());
        } else {
            out.push(c);
        }
    }
    out
}

#[cfg(test)]
#[allow(clippy::unwrap_used)] // a failed setup step should fail the test loudly
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    /// A root with `inside.txt`, `sub/nested.txt`, and next to it (outside)
    /// `outside/secret.txt`.
    struct Fixture {
        _dir: tempfile::TempDir,
        base: PathBuf,
        root: PathBuf,
        sandbox: Sandbox,
    }

    const SECRET: &str = "TOP-SECRET-CONTENT";

    fn fixture() -> Fixture {
        let dir = tempfile::tempdir().unwrap();
        let base = fs::canonicalize(dir.path()).unwrap();
        let root = base.join("root");
        fs::create_dir_all(root.join("sub")).unwrap();
        fs::write(root.join("inside.txt"), "inside\n").unwrap();
        fs::write(root.join("sub/nested.txt"), "nested\n").unwrap();
        fs::create_dir_all(base.join("outside")).unwrap();
        fs::write(base.join("outside/secret.txt"), SECRET).unwrap();
        let sandbox = Sandbox::new(&root).unwrap();
        Fixture {
            _dir: dir,
            base,
            root,
            sandbox,
        }
    }

    fn read(opened: Opened) -> String {
        io::read_to_string(opened.into_file()).unwrap()
    }

    #[test]
    fn plain_relative_paths_open() {
        let f = fixture();
        let opened = f.sandbox.open("inside.txt").unwrap();
        assert_eq!(opened.kind(), EntryKind::File);
        assert_eq!(opened.real_path(), f.root.join("inside.txt"));
        assert_eq!(read(opened), "inside\n");
        assert_eq!(
            read(f.sandbox.open("./sub//nested.txt").unwrap()),
            "nested\n"
        );
        assert_eq!(f.sandbox.open(".").unwrap().kind(), EntryKind::Dir);
        assert_eq!(f.sandbox.open("sub/").unwrap().kind(), EntryKind::Dir);
    }

    #[test]
    fn parent_dir_is_refused_in_any_position() {
        let f = fixture();
        for path in ["../outside/secret.txt", "sub/../inside.txt", "sub/.."] {
            let err = f.sandbox.open(path).unwrap_err();
            assert!(
                matches!(err, SandboxError::ParentDir { .. }),
                "{path}: {err:?}"
            );
        }
        assert_eq!(
            f.sandbox.open("../x").unwrap_err().to_string(),
            "path '../x' is outside the allowed root: '..' is not allowed; give a path relative to the root"
        );
    }

    #[test]
    fn absolute_paths_inside_are_allowed_and_elsewhere_refused() {
        let f = fixture();
        let inside = f.root.join("sub/nested.txt");
        assert_eq!(
            read(f.sandbox.open(inside.to_str().unwrap()).unwrap()),
            "nested\n"
        );
        assert_eq!(
            f.sandbox.open(f.root.to_str().unwrap()).unwrap().kind(),
            EntryKind::Dir
        );
        let outside = f.base.join("outside/secret.txt");
        let err = f.sandbox.open(outside.to_str().unwrap()).unwrap_err();
        assert!(matches!(err, SandboxError::Outside { .. }), "{err:?}");
        assert!(!err.to_string().contains(SECRET));
        let err = f.sandbox.open("/etc/passwd").unwrap_err();
        assert_eq!(
            err.to_string(),
            "path '/etc/passwd' is outside the allowed root; give a path relative to the root"
        );
        // A sibling whose name starts with the root's name is not inside.
        fs::create_dir_all(f.base.join("rootx")).unwrap();
        fs::write(f.base.join("rootx/a.txt"), SECRET).unwrap();
        let sibling = format!("{}x/a.txt", f.root.display());
        assert!(matches!(
            f.sandbox.open(&sibling).unwrap_err(),
            SandboxError::Outside { .. }
        ));
    }

    #[test]
    fn proc_self_environ_is_refused() {
        let f = fixture();
        let err = f.sandbox.open("/proc/self/environ").unwrap_err();
        assert!(matches!(err, SandboxError::Outside { .. }), "{err:?}");
        symlink("/proc/self/environ", f.root.join("env")).unwrap();
        let err = f.sandbox.open("env").unwrap_err();
        assert!(
            matches!(err, SandboxError::SymlinkOutside { .. }),
            "{err:?}"
        );
    }

    #[test]
    fn symlinks_leading_out_are_refused() {
        let f = fixture();
        symlink(f.base.join("outside/secret.txt"), f.root.join("abs_file")).unwrap();
        symlink("../outside/secret.txt", f.root.join("rel_file")).unwrap();
        symlink(f.base.join("outside"), f.root.join("abs_dir")).unwrap();
        symlink("../../outside", f.root.join("sub/rel_dir")).unwrap();
        symlink("/", f.root.join("slash")).unwrap();
        for path in [
            "abs_file",
            "rel_file",
            "abs_dir",
            "abs_dir/secret.txt",
            "sub/rel_dir",
            "sub/rel_dir/secret.txt",
            "slash/etc/passwd",
        ] {
            let err = f.sandbox.open(path).unwrap_err();
            assert!(
                matches!(err, SandboxError::SymlinkOutside { .. }),
                "{path}: {err:?}"
            );
            assert!(!err.to_string().contains(SECRET));
        }
        assert_eq!(
            f.sandbox
                .open("abs_dir/secret.txt")
                .unwrap_err()
                .to_string(),
            "path 'abs_dir/secret.txt' is outside the allowed root: a symlink on it leads out of the root"
        );
    }

    #[test]
    fn a_symlink_to_a_missing_outside_target_says_outside_not_missing() {
        let f = fixture();
        symlink(f.base.join("outside/nope"), f.root.join("dangling_out")).unwrap();
        assert!(matches!(
            f.sandbox.open("dangling_out").unwrap_err(),
            SandboxError::SymlinkOutside { .. }
        ));
        symlink("nope", f.root.join("dangling_in")).unwrap();
        assert!(matches!(
            f.sandbox.open("dangling_in").unwrap_err(),
            SandboxError::NotFound { .. }
        ));
    }

    #[test]
    fn symlinks_inside_the_root_are_followed() {
        let f = fixture();
        symlink("sub/nested.txt", f.root.join("rel_link")).unwrap();
        symlink(f.root.join("inside.txt"), f.root.join("abs_link")).unwrap();
        symlink("../inside.txt", f.root.join("sub/up_link")).unwrap();
        symlink("sub", f.root.join("dir_link")).unwrap();
        symlink("dir_link", f.root.join("chain")).unwrap();
        assert_eq!(read(f.sandbox.open("rel_link").unwrap()), "nested\n");
        assert_eq!(read(f.sandbox.open("abs_link").unwrap()), "inside\n");
        assert_eq!(read(f.sandbox.open("sub/up_link").unwrap()), "inside\n");
        assert_eq!(
            read(f.sandbox.open("dir_link/nested.txt").unwrap()),
            "nested\n"
        );
        let opened = f.sandbox.open("chain/nested.txt").unwrap();
        assert_eq!(opened.real_path(), f.root.join("sub/nested.txt"));
        assert_eq!(f.sandbox.open("chain").unwrap().kind(), EntryKind::Dir);
    }

    #[test]
    fn symlink_loops_are_refused() {
        let f = fixture();
        symlink("loop_b", f.root.join("loop_a")).unwrap();
        symlink("loop_a", f.root.join("loop_b")).unwrap();
        symlink("self", f.root.join("self")).unwrap();
        symlink(".", f.root.join("dot")).unwrap();
        for path in ["loop_a", "loop_b/x", "self"] {
            let err = f.sandbox.open(path).unwrap_err();
            assert!(
                matches!(err, SandboxError::SymlinkLoop { .. }),
                "{path}: {err:?}"
            );
        }
        assert_eq!(
            f.sandbox.open("self").unwrap_err().to_string(),
            "path 'self' cannot be resolved: too many levels of symlinks (a symlink loop)"
        );
        // A link to its own directory is no loop until followed too often.
        assert_eq!(
            read(f.sandbox.open("dot/dot/inside.txt").unwrap()),
            "inside\n"
        );
        let deep = vec!["dot"; MAX_SYMLINK_HOPS + 1].join("/") + "/inside.txt";
        assert!(matches!(
            f.sandbox.open(&deep).unwrap_err(),
            SandboxError::SymlinkLoop { .. }
        ));
    }

    #[test]
    fn nul_bytes_are_refused() {
        let f = fixture();
        let err = f.sandbox.open("inside.txt\0../../etc/passwd").unwrap_err();
        assert!(matches!(err, SandboxError::NulByte { .. }), "{err:?}");
        assert_eq!(
            err.to_string(),
            "path 'inside.txt\\u{0}../../etc/passwd' contains a NUL byte; give a plain path relative to the root"
        );
    }

    #[test]
    fn very_long_paths_are_refused_with_a_short_message() {
        let f = fixture();
        let long = "a/".repeat(5000);
        let err = f.sandbox.open(&long).unwrap_err();
        assert!(
            matches!(err, SandboxError::TooLong { len: 10_000, .. }),
            "{err:?}"
        );
        assert!(err.to_string().len() < 300, "{err}");
        let long_name = "n".repeat(MAX_NAME_BYTES + 1);
        assert!(matches!(
            f.sandbox.open(&long_name).unwrap_err(),
            SandboxError::TooLong { .. }
        ));
        // Just under the limits is an ordinary missing file.
        let ok_name = "n".repeat(MAX_NAME_BYTES);
        assert!(matches!(
            f.sandbox.open(&ok_name).unwrap_err(),
            SandboxError::NotFound { .. }
        ));
    }

    #[test]
    fn missing_paths_and_empty_paths() {
        let f = fixture();
        assert_eq!(
            f.sandbox.open("nope.txt").unwrap_err().to_string(),
            "path 'nope.txt' does not exist under the root; use list_dir to see what is there"
        );
        assert!(matches!(
            f.sandbox.open("inside.txt/more").unwrap_err(),
            SandboxError::NotFound { .. }
        ));
        assert!(matches!(
            f.sandbox.open("").unwrap_err(),
            SandboxError::Empty
        ));
    }

    #[test]
    fn a_root_that_is_a_symlink_resolves_to_its_target() {
        let f = fixture();
        let link = f.base.join("root_link");
        symlink(&f.root, &link).unwrap();
        let sandbox = Sandbox::new(&link).unwrap();
        assert_eq!(sandbox.root(), f.root);
        assert_eq!(read(sandbox.open("inside.txt").unwrap()), "inside\n");
        // Absolute paths under either spelling of the root are inside.
        let via_link = link.join("inside.txt");
        assert_eq!(
            read(sandbox.open(via_link.to_str().unwrap()).unwrap()),
            "inside\n"
        );
        let via_target = f.root.join("inside.txt");
        assert_eq!(
            read(sandbox.open(via_target.to_str().unwrap()).unwrap()),
            "inside\n"
        );
        assert!(matches!(
            sandbox.open("../outside/secret.txt").unwrap_err(),
            SandboxError::ParentDir { .. }
        ));
    }

    #[test]
    fn a_bad_root_is_refused() {
        let f = fixture();
        assert!(matches!(
            Sandbox::new(&f.base.join("missing")).unwrap_err(),
            SandboxError::Root { .. }
        ));
        assert!(matches!(
            Sandbox::new(&f.root.join("inside.txt")).unwrap_err(),
            SandboxError::RootNotDirectory { .. }
        ));
    }

    #[test]
    fn a_replaced_root_is_noticed() {
        let f = fixture();
        fs::rename(&f.root, f.base.join("moved")).unwrap();
        symlink(f.base.join("outside"), &f.root).unwrap();
        assert!(matches!(
            f.sandbox.open("secret.txt").unwrap_err(),
            SandboxError::RootChanged
        ));
    }

    #[test]
    fn fifos_are_refused_without_opening() {
        let f = fixture();
        let status = std::process::Command::new("mkfifo")
            .arg(f.root.join("pipe"))
            .status();
        if !matches!(status, Ok(s) if s.success()) {
            return; // no mkfifo here; nothing to test
        }
        assert!(matches!(
            f.sandbox.open("pipe").unwrap_err(),
            SandboxError::Special { .. }
        ));
    }

    #[test]
    fn directories_list_through_the_open_handle() {
        let f = fixture();
        let opened = f.sandbox.open("sub").unwrap();
        let names: Vec<OsString> = opened
            .read_dir()
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, vec![OsString::from("nested.txt")]);
    }

    #[test]
    fn a_handle_that_is_not_the_resolved_file_is_refused() {
        let f = fixture();
        let inside = fs::symlink_metadata(f.root.join("inside.txt")).unwrap();
        let outside = File::open(f.base.join("outside/secret.txt")).unwrap();
        assert!(matches!(
            f.sandbox
                .verify_opened(&outside, &inside, "inside.txt".into())
                .unwrap_err(),
            SandboxError::Changed { .. }
        ));
        // Same inode, but the kernel places it outside the root (Linux).
        if cfg!(target_os = "linux") {
            let same = fs::symlink_metadata(f.base.join("outside/secret.txt")).unwrap();
            assert!(matches!(
                f.sandbox
                    .verify_opened(&outside, &same, "x".into())
                    .unwrap_err(),
                SandboxError::Changed { .. }
            ));
        }
    }

    /// Another thread keeps swapping a file and a directory under the root
    /// for symlinks that lead out; however the race falls, no open ever
    /// yields the outside content.
    #[test]
    fn swapping_components_for_symlinks_never_leaks() {
        use std::sync::Arc;
        use std::sync::atomic::{AtomicBool, Ordering};
        let f = fixture();
        fs::create_dir_all(f.root.join("d_real")).unwrap();
        fs::write(f.root.join("d_real/secret.txt"), "inside\n").unwrap();
        fs::write(f.root.join("f_real"), "inside\n").unwrap();
        let stop = Arc::new(AtomicBool::new(false));
        let swapper = {
            let stop = Arc::clone(&stop);
            let (root, outside) = (f.root.clone(), f.base.join("outside"));
            std::thread::spawn(move || {
                while !stop.load(Ordering::Relaxed) {
                    let _ = fs::rename(root.join("d_real"), root.join("d"));
                    let _ = fs::rename(root.join("f_real"), root.join("f"));
                    let _ = fs::rename(root.join("d"), root.join("d_real"));
                    let _ = fs::rename(root.join("f"), root.join("f_real"));
                    let _ = symlink(&outside, root.join("d"));
                    let _ = symlink(outside.join("secret.txt"), root.join("f"));
                    let _ = fs::remove_file(root.join("d"));
                    let _ = fs::remove_file(root.join("f"));
                }
            })
        };
        // Without the post-open check this leaks within a fraction of a second.
        let deadline = std::time::Instant::now() + std::time::Duration::from_millis(1000);
        let mut opened = 0;
        while std::time::Instant::now() < deadline {
            for path in ["d/secret.txt", "f"] {
                if let Ok(file) = f.sandbox.open(path) {
                    if let Ok(text) = io::read_to_string(file.into_file()) {
                        assert_eq!(text, "inside\n");
                        opened += 1;
                    }
                }
            }
        }
        stop.store(true, Ordering::Relaxed);
        swapper.join().unwrap();
        assert!(opened > 0 || cfg!(not(target_os = "linux")));
    }

    #[test]
    fn shown_paths_are_short_and_escaped() {
        assert_eq!(shown_path("a\nb"), "a\\nb");
        let long = "x".repeat(500);
        assert_eq!(shown_path(&long), format!("{}…", "x".repeat(80)));
    }
}

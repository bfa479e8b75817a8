//! The root sandbox: the one place where a path the model gave is turned
//! into an open file or directory under `--root` (ARCHITECTURE.md §2.5).
//!
//! Resolution walks the path one name at a time from the canonical root,
//! following symlinks by hand, so a path that would leave the root is
//! refused before anything outside it is even looked at. The file is then
//! opened once and what was opened is checked against what was resolved
//! (inode, and on Linux the kernel's own path of the descriptor), so a
//! component swapped for a symlink in between is caught.
//!
//! Resolution (the walk) is `resolve`'s; opening and verifying is here;
//! writing (a verified directory, a temporary file, a rename) is `write`'s.
//!
//! This module must never open, list or read anything outside the root, and
//! never put anything but the model's own path into an error message.

use std::fs::{self, File, Metadata};
use std::io;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

mod resolve;
pub mod write;

pub use resolve::{Lexical, lexical};

/// The longest path the model may give, in bytes (Linux's `PATH_MAX`).
pub(crate) const MAX_PATH_BYTES: usize = 4096;
/// The longest single name in a path, in bytes (Linux's `NAME_MAX`).
pub(crate) const MAX_NAME_BYTES: usize = 255;
/// How many symlinks one resolution may follow before it counts as a loop.
pub(crate) const MAX_SYMLINK_HOPS: usize = 40;
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
    /// A credentials file the operator's environment names (Vertex AI's
    /// `GOOGLE_APPLICATION_CREDENTIALS`): it holds a key, so it is never read.
    #[error(
        "path '{path}' is a credentials file, which holds secrets; leash's tools never read it"
    )]
    Credentials {
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
        if let Some(fd_path) = descriptor_path(&self.file)
            && let Ok(entries) = fs::read_dir(&fd_path)
        {
            return Ok(entries);
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
    /// Device and inode of the credentials files under the root that
    /// the tools must never read ([`Sandbox::hide`]).
    hidden: Vec<(u64, u64)>,
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
            hidden: Vec::new(),
        })
    }

    /// Hides `file` from the tools when it lies under the root: opening
    /// it, by any path or link, is refused like a dotenv file. Returns
    /// its canonical path when it was hidden.
    pub fn hide(&mut self, file: &Path) -> Option<PathBuf> {
        let real = fs::canonicalize(file).ok()?;
        if !real.starts_with(&self.root) {
            return None;
        }
        let meta = fs::metadata(&real).ok()?;
        self.hidden.push(identity(&meta));
        Some(real)
    }

    /// Whether `meta` is a hidden credentials file's.
    fn is_hidden(&self, meta: &Metadata) -> bool {
        self.hidden.contains(&identity(meta))
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
            if self.is_hidden(&before) {
                return Err(SandboxError::Credentials { path: shown });
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

    /// A path for a tool that names paths rather than opening them (the
    /// `git` tool's pathspecs), relative to the root: resolved as
    /// [`open`](Self::open) resolves it when it exists; when it does not
    /// (a file deleted since a commit), checked by its spelling alone (no
    /// `..`, nothing absolute outside the root). A dotenv file is refused
    /// either way.
    pub(crate) fn locate(&self, path: &str) -> Result<PathBuf, SandboxError> {
        let shown = shown_path(path);
        let relative = match self.resolve(path) {
            Ok(real) => real
                .strip_prefix(&self.root)
                .map(Path::to_path_buf)
                .map_err(|_| SandboxError::Outside {
                    path: shown.clone(),
                })?,
            Err(SandboxError::NotFound { .. }) => self.check_path(path)?,
            Err(error) => return Err(error),
        };
        if names_dotenv(Path::new(path)) || names_dotenv(&relative) {
            return Err(SandboxError::Dotenv { path: shown });
        }
        if fs::metadata(self.root.join(&relative)).is_ok_and(|meta| self.is_hidden(&meta)) {
            return Err(SandboxError::Credentials { path: shown });
        }
        Ok(relative)
    }

    /// Opens a regular file that a walk (which never follows a symlink)
    /// found below a directory [`open`](Self::open) returned: `real` is
    /// canonical and inside the root, `inode` the one its directory entry
    /// gave. Refused like `open` refuses: a dotenv file, anything but a
    /// regular file, a handle that is not the entry the walk saw (a symlink
    /// swapped in since) or that lies outside the root (a directory on the
    /// way swapped for a symlink). One open, one `fstat`, one look at the
    /// descriptor's path: no second walk of the path per file.
    pub(crate) fn open_found(&self, real: &Path, inode: u64) -> Result<File, SandboxError> {
        let shown = shown_path(&real.to_string_lossy());
        if !real.starts_with(&self.root) {
            return Err(SandboxError::Outside { path: shown });
        }
        if names_dotenv(real) {
            return Err(SandboxError::Dotenv { path: shown });
        }
        let file = File::open(real).map_err(|source| io_error(shown.clone(), source))?;
        let opened = file
            .metadata()
            .map_err(|source| io_error(shown.clone(), source))?;
        if !opened.file_type().is_file() {
            return Err(SandboxError::Special { path: shown });
        }
        if opened.ino() != inode {
            return Err(SandboxError::Changed { path: shown });
        }
        if self.is_hidden(&opened) {
            return Err(SandboxError::Credentials { path: shown });
        }
        if let Some(opened_at) = descriptor_target(&file)
            && !opened_at.starts_with(&self.root)
        {
            return Err(SandboxError::Changed { path: shown });
        }
        Ok(file)
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
        if let Some(opened_at) = descriptor_target(file)
            && !opened_at.starts_with(&self.root)
        {
            return Err(SandboxError::Changed { path: shown });
        }
        Ok(())
    }
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
pub fn descriptor_target(file: &File) -> Option<PathBuf> {
    fs::read_link(descriptor_path(file)?).ok()
}

/// Whether a path's last name is a dotenv file's: `.env` or `.env.*`
/// (`.env.local`, `.env.production`). A directory of that name (a Python
/// virtualenv called `.env`) may still be listed; a file never opens.
pub(crate) fn names_dotenv(path: &Path) -> bool {
    use std::os::unix::ffi::OsStrExt;
    path.file_name()
        .map(OsStrExt::as_bytes)
        .is_some_and(|name| name == b".env" || name.starts_with(b".env."))
}

/// Whether any name on a path is `.git`: inside a `.git` directory,
/// whose hooks and config run programs and whose config may hold a
/// token (`actions/checkout`'s header). Judged by the spelling alone.
pub fn under_dot_git(path: &Path) -> bool {
    use std::os::unix::ffi::OsStrExt;
    path.components()
        .any(|component| component.as_os_str().as_bytes() == b".git")
}

/// A model-given path as error messages repeat it: control characters
/// escaped, cut after a few dozen characters so a huge path cannot flood
/// the context.
pub(crate) fn shown_path(path: &str) -> String {
    let mut out = String::new();
    match path.char_indices().nth(SHOWN_PATH_CHARS) {
        Some((cut, _)) => {
            push_escaped(&mut out, &path[..cut]);
            out.push('…');
        }
        None => push_escaped(&mut out, path),
    }
    out
}

/// Appends `text` with its control characters escaped, so a name the
/// model or the file system chose cannot break a one-per-line shape.
pub(crate) fn push_escaped(out: &mut String, text: &str) {
    for c in text.chars() {
        if c.is_control() {
            out.extend(c.escape_default());
        } else {
            out.push(c);
        }
    }
}

#[cfg(test)]
mod tests;

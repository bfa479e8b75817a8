//! Path resolution: a model-given path turned into the canonical path it
//! names under the root, one name at a time, following symlinks by hand so
//! nothing outside the root is ever looked at.

use std::ffi::OsString;
use std::fs;
use std::path::{Component, Path, PathBuf};

use super::{
    MAX_NAME_BYTES, MAX_PATH_BYTES, MAX_SYMLINK_HOPS, Sandbox, SandboxError, identity, io_error,
    shown_path,
};

/// One step of a walk: a name to descend into, or up one level (only
/// symlink targets produce these; the model's own `..` is refused).
enum Step {
    Name(OsString),
    Up,
}

/// What a walk does at a name that does not exist.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Missing {
    /// Fails: the path names nothing.
    Fail,
    /// Takes the rest as spelled: where a write would create it.
    AsSpelled,
}

impl Sandbox {
    /// The canonical path a model-given path names, inside the root, found
    /// without touching anything outside the root. Not opened: use `open`.
    pub(super) fn resolve(&self, path: &str) -> Result<PathBuf, SandboxError> {
        let relative = self.check_path(path)?;
        self.check_root()?;
        self.walk(path, &relative, Missing::Fail)
    }

    /// Where a model-given path leads under the root once its symlinks are
    /// followed (names that do not exist yet taken as spelled), relative to
    /// the root: the file a tool would touch, which `--deny-tool` and
    /// `--allow-tool` judge. `None` when the sandbox would refuse the path.
    pub fn touched(&self, path: &str) -> Option<PathBuf> {
        let relative = self.check_path(path).ok()?;
        let real = self.walk(path, &relative, Missing::AsSpelled).ok()?;
        real.strip_prefix(&self.root).ok().map(Path::to_path_buf)
    }

    /// The checks that need no file system: emptiness, NUL, length, `..`,
    /// and an absolute path's prefix. Returns the path relative to the root.
    pub(super) fn check_path(&self, path: &str) -> Result<PathBuf, SandboxError> {
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
        match self.lexical(path) {
            Lexical::Inside(relative) => Ok(relative),
            Lexical::Outside => Err(SandboxError::Outside {
                path: shown_path(path),
            }),
        }
    }

    /// Where a path points under this root by its spelling alone (see
    /// [`lexical`]): what the resolver starts its walk from, and what
    /// `--deny-tool`/`--allow-tool` patterns judge.
    pub fn lexical(&self, path: &str) -> Lexical {
        lexical(&self.root, self.given.as_deref(), path)
    }

    /// Refuses to go on when the root directory was swapped since `new`.
    pub(super) fn check_root(&self) -> Result<(), SandboxError> {
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
    pub(super) fn walk(
        &self,
        path: &str,
        relative: &Path,
        missing: Missing,
    ) -> Result<PathBuf, SandboxError> {
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
            let meta = match fs::symlink_metadata(&candidate) {
                Ok(meta) => meta,
                Err(source)
                    if missing == Missing::AsSpelled
                        && source.kind() == std::io::ErrorKind::NotFound =>
                {
                    return self.spelled_on(candidate, steps, path);
                }
                Err(source) => return Err(io_error(shown_path(path), source)),
            };
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

    /// The rest of a walk past a name that does not exist: nothing more
    /// to look up, so the remaining steps apply as spelled (an `Up` from a
    /// symlink target still may not leave the root).
    fn spelled_on(
        &self,
        mut current: PathBuf,
        mut steps: Vec<Step>,
        path: &str,
    ) -> Result<PathBuf, SandboxError> {
        while let Some(step) = steps.pop() {
            match step {
                Step::Name(name) => current.push(name),
                Step::Up if current == self.root => {
                    return Err(SandboxError::SymlinkOutside {
                        path: shown_path(path),
                    });
                }
                Step::Up => {
                    current.pop();
                }
            }
        }
        Ok(current)
    }
}

/// Where a path points, judged by its spelling alone (nothing is looked
/// up, so a symlink is not followed).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Lexical {
    /// Inside the root: the path relative to it, with no `.`, `..`, empty
    /// or trailing names (empty for the root itself).
    Inside(PathBuf),
    /// Above the root (too many `..`), or absolute and not under it.
    Outside,
}

/// The one lexical normalisation of a model-given path, shared by the
/// sandbox and the tool patterns so they cannot drift: an absolute path
/// under `root` (canonical) or `given` (as the operator spelled it) is
/// made relative to it; `./`, `//`, `/./` and a trailing `/` go; `..`
/// takes the previous name off, and one with no name left leaves the root
/// (the sandbox refuses every `..` before this anyway).
pub fn lexical(root: &Path, given: Option<&Path>, path: &str) -> Lexical {
    let p = Path::new(path);
    let relative = if p.is_absolute() {
        match p
            .strip_prefix(root)
            .ok()
            .or_else(|| given.and_then(|given| p.strip_prefix(given).ok()))
        {
            Some(rest) => rest,
            None => return Lexical::Outside,
        }
    } else {
        p
    };
    let mut normal = PathBuf::new();
    for component in relative.components() {
        match component {
            Component::Normal(name) => normal.push(name),
            Component::CurDir => {}
            Component::ParentDir => {
                if !normal.pop() {
                    return Lexical::Outside;
                }
            }
            Component::RootDir | Component::Prefix(_) => return Lexical::Outside,
        }
    }
    Lexical::Inside(normal)
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

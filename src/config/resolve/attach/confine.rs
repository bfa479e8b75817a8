//! Which file an `--attach` path may be read from (docs/src/resume.md "Attachments"):
//! the file tools' rules, judged after every link is resolved. A file
//! whose name says it holds secrets (dotenv, private keys, credential
//! stores: the tools' own [`refused_name`]) and anything inside a `.git`
//! directory ([`under_dot_git`]) are refused, whether the path typed or
//! the file it leads to says so; a link that leads out of the directory
//! the path names is refused, and so is a directory inside the working
//! directory that leads out of it (a checkout's `test-results/` linked
//! to `~/.ssh`). A path the operator types outside the working directory
//! stays allowed: the operator decided it.
//!
//! *Never* reads the file: it only decides which real path may be
//! opened (a `--resume`d record goes through it too).

use std::path::{Component, Path, PathBuf};

use leash_tools::sandbox::under_dot_git;
use leash_tools::sandbox::write::refused_name;

/// The real path `path` leads to, if `--attach` may read it; else why
/// not, in one line.
pub(crate) fn confine(path: &Path) -> Result<PathBuf, String> {
    refuse_secret(path)?;
    let cwd = std::env::current_dir().map_err(|error| error.to_string())?;
    let named = lexical(&cwd.join(path));
    let real = std::fs::canonicalize(path).map_err(|error| error.to_string())?;
    refuse_secret(&real)?;
    let dir = named.parent().unwrap_or(Path::new("/"));
    let dir_real = std::fs::canonicalize(dir).map_err(|error| error.to_string())?;
    if !real.starts_with(&dir_real) {
        return Err(format!(
            "a link on it leads out of the directory it names ({}); attach the file itself",
            dir.display()
        ));
    }
    if dir.starts_with(&cwd) {
        let cwd_real = std::fs::canonicalize(&cwd).map_err(|error| error.to_string())?;
        if !dir_real.starts_with(&cwd_real) {
            return Err(format!(
                "its directory {} is a link that leads out of the working directory; \
                 attach the file by the path it really has",
                dir.display()
            ));
        }
    }
    Ok(real)
}

/// Refuses a path whose last name says it holds secrets, or that lies
/// inside a `.git` directory.
fn refuse_secret(path: &Path) -> Result<(), String> {
    if let Some(kind) = path.file_name().and_then(refused_name) {
        return Err(format!(
            "it is {kind}, which holds secrets; leash never attaches one"
        ));
    }
    if under_dot_git(path) {
        return Err(
            "it is inside a .git directory, whose config may hold credentials; leash never \
             attaches from one"
                .into(),
        );
    }
    Ok(())
}

/// `path` (absolute) with `.` and `..` taken out by its spelling: the
/// directories the operator named, before any link is followed.
fn lexical(path: &Path) -> PathBuf {
    let mut normal = PathBuf::new();
    for component in path.components() {
        match component {
            Component::ParentDir => {
                normal.pop();
            }
            Component::CurDir => {}
            other => normal.push(other),
        }
    }
    normal
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)] // a failed setup step should fail the test loudly

    use std::os::unix::fs::symlink;

    use super::*;

    #[test]
    fn secrets_are_refused_by_the_name_typed_or_the_file_reached() {
        let dir = tempfile::tempdir().unwrap();
        let base = std::fs::canonicalize(dir.path()).unwrap();
        std::fs::create_dir_all(base.join("repo/.git")).unwrap();
        std::fs::create_dir_all(base.join("repo/results")).unwrap();
        std::fs::write(base.join("repo/.git/config"), "[http]").unwrap();
        std::fs::write(base.join("repo/.env"), "KEY=1").unwrap();
        std::fs::write(base.join("repo/deploy.pem"), "key").unwrap();
        std::fs::write(base.join("repo/shot.png"), "png").unwrap();
        for (link, target) in [
            ("env.txt", "../.env"),
            ("git.txt", "../.git/config"),
            ("key.txt", "../deploy.pem"),
        ] {
            symlink(target, base.join("repo/results").join(link)).unwrap();
        }
        for (path, said) in [
            ("repo/results/env.txt", "a dotenv file"),
            ("repo/results/key.txt", "a private key or certificate store"),
            ("repo/results/git.txt", "inside a .git directory"),
            ("repo/.env", "a dotenv file"),
            ("repo/.git/config", "inside a .git directory"),
        ] {
            let error = confine(&base.join(path)).unwrap_err();
            assert!(error.contains(said), "{path}: {error}");
        }
        assert_eq!(
            confine(&base.join("repo/results/../shot.png")).unwrap(),
            base.join("repo/shot.png")
        );
    }

    #[test]
    fn a_link_out_of_the_named_directory_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let base = std::fs::canonicalize(dir.path()).unwrap();
        std::fs::create_dir_all(base.join("results/inner")).unwrap();
        std::fs::write(base.join("secret.txt"), "s").unwrap();
        std::fs::write(base.join("results/inner/log.txt"), "log").unwrap();
        symlink("../secret.txt", base.join("results/out.txt")).unwrap();
        symlink("inner/log.txt", base.join("results/in.txt")).unwrap();
        let error = confine(&base.join("results/out.txt")).unwrap_err();
        assert!(
            error.contains("leads out of the directory it names"),
            "{error}"
        );
        assert_eq!(
            confine(&base.join("results/in.txt")).unwrap(),
            base.join("results/inner/log.txt")
        );
    }
}

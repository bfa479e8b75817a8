//! Tests of the writer: confinement, refusals, atomicity, permissions, and
//! a directory swapped for a symlink while writing.
#![allow(clippy::unwrap_used)] // a failed setup step should fail the test loudly

use std::collections::BTreeMap;
use std::fs;
use std::os::unix::fs::{PermissionsExt, symlink};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use tokio_util::sync::CancellationToken;

use super::*;

const SECRET: &str = "OUTSIDE-SECRET";

/// `root/` with `a.txt` and `sub/b.txt`, and `outside/secret.txt` beside it.
struct Fixture {
    _dir: tempfile::TempDir,
    base: PathBuf,
    root: PathBuf,
    sandbox: Sandbox,
}

fn fixture() -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let base = fs::canonicalize(dir.path()).unwrap();
    let root = base.join("root");
    fs::create_dir_all(root.join("sub")).unwrap();
    fs::write(root.join("a.txt"), "a\n").unwrap();
    fs::write(root.join("sub/b.txt"), "b\n").unwrap();
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

/// Every file under `dir` with its bytes (symlinks as their targets).
fn snapshot(dir: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    let mut out = BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(next) = stack.pop() {
        for entry in fs::read_dir(&next).unwrap() {
            let path = entry.unwrap().path();
            let meta = fs::symlink_metadata(&path).unwrap();
            if meta.is_dir() {
                stack.push(path.clone());
                out.insert(path, Vec::new());
            } else if meta.file_type().is_symlink() {
                let target = fs::read_link(&path).unwrap();
                out.insert(path, target.to_string_lossy().as_bytes().to_vec());
            } else {
                out.insert(path.clone(), fs::read(&path).unwrap());
            }
        }
    }
    out
}

fn write(f: &Fixture, path: &str, bytes: &str) -> Result<String, String> {
    let target = f
        .sandbox
        .prepare_write(path, true)
        .map_err(|e| e.to_string())?;
    target
        .commit(&f.sandbox, bytes.as_bytes(), &CancellationToken::new())
        .map_err(|e| e.to_string())?;
    Ok(target.relative().to_owned())
}

fn temp_files(dir: &Path) -> Vec<String> {
    fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|name| name.starts_with(".leash-write-"))
        .collect()
}

#[test]
fn creates_and_replaces_files_and_directories_on_the_way() {
    let f = fixture();
    assert_eq!(write(&f, "new.txt", "new\n").unwrap(), "new.txt");
    assert_eq!(fs::read_to_string(f.root.join("new.txt")).unwrap(), "new\n");
    assert_eq!(write(&f, "./sub/b.txt", "B\n").unwrap(), "sub/b.txt");
    assert_eq!(fs::read_to_string(f.root.join("sub/b.txt")).unwrap(), "B\n");
    assert_eq!(write(&f, "x/y/z.txt", "z\n").unwrap(), "x/y/z.txt");
    assert_eq!(fs::read_to_string(f.root.join("x/y/z.txt")).unwrap(), "z\n");
    let absolute = f.root.join("abs.txt").display().to_string();
    assert_eq!(write(&f, &absolute, "abs\n").unwrap(), "abs.txt");
    assert!(temp_files(&f.root).is_empty() && temp_files(&f.root.join("sub")).is_empty());
}

#[test]
fn an_existing_files_permissions_are_kept() {
    let f = fixture();
    let path = f.root.join("a.txt");
    fs::set_permissions(&path, fs::Permissions::from_mode(0o640)).unwrap();
    write(&f, "a.txt", "A\n").unwrap();
    assert_eq!(
        fs::metadata(&path).unwrap().permissions().mode() & 0o7777,
        0o640
    );
    fs::set_permissions(&path, fs::Permissions::from_mode(0o755)).unwrap();
    write(&f, "a.txt", "#!/bin/sh\n").unwrap();
    assert_eq!(
        fs::metadata(&path).unwrap().permissions().mode() & 0o7777,
        0o755
    );
}

#[test]
fn a_cancelled_write_leaves_the_old_file_and_no_temporary_file() {
    let f = fixture();
    let target = f.sandbox.prepare_write("a.txt", true).unwrap();
    let cancel = CancellationToken::new();
    cancel.cancel();
    let error = target.commit(&f.sandbox, b"never", &cancel).unwrap_err();
    assert!(matches!(error, WriteError::Cancelled { .. }), "{error}");
    assert_eq!(fs::read_to_string(f.root.join("a.txt")).unwrap(), "a\n");
    assert!(temp_files(&f.root).is_empty());
}

#[test]
fn a_failed_rename_leaves_what_was_there_and_no_temporary_file() {
    let f = fixture();
    let target = f.sandbox.prepare_write("a.txt", true).unwrap();
    // The name becomes a non-empty directory between the check and the rename.
    fs::remove_file(f.root.join("a.txt")).unwrap();
    fs::create_dir(f.root.join("a.txt")).unwrap();
    fs::write(f.root.join("a.txt/keep"), "kept").unwrap();
    let error = target
        .commit(&f.sandbox, b"new", &CancellationToken::new())
        .unwrap_err();
    assert!(matches!(error, WriteError::Io { .. }), "{error}");
    assert_eq!(
        fs::read_to_string(f.root.join("a.txt/keep")).unwrap(),
        "kept"
    );
    assert!(temp_files(&f.root).is_empty());
}

#[test]
fn secrets_git_directories_and_special_files_are_refused() {
    let f = fixture();
    fs::create_dir_all(f.root.join(".git/hooks")).unwrap();
    fs::create_dir_all(f.root.join("dotenv_dir/.env")).unwrap();
    symlink(".git", f.root.join("g")).unwrap();
    fs::write(f.root.join("points"), "x").unwrap();
    symlink(".env", f.root.join("to_env")).unwrap();
    fs::write(f.root.join(".env"), "KEY=1").unwrap();
    for (path, says) in [
        (".env", "is a dotenv file"),
        ("sub/.env.local", "is a dotenv file"),
        ("to_env", "is a dotenv file"),
        ("id_rsa", "is an SSH private key"),
        ("sub/id_ed25519", "is an SSH private key"),
        ("server.key", "is a private key or certificate store"),
        ("certs/ca.PEM", "is a private key or certificate store"),
        (".netrc", "is a credentials file"),
        (".git/config", "inside a .git directory"),
        (".git/hooks/pre-commit", "inside a .git directory"),
        ("g/config", "inside a .git directory"),
        ("sub/.git/HEAD", "inside a .git directory"),
        (".", "does not name a file"),
        ("sub/", "does not name a file"),
        ("sub", "is a directory"),
    ] {
        let error = write(&f, path, "x").unwrap_err();
        assert!(error.contains(says), "{path}: {error}");
    }
    assert_eq!(fs::read_to_string(f.root.join(".env")).unwrap(), "KEY=1");
    assert!(
        !f.root.join("certs").exists(),
        "nothing made for a refused path"
    );
    assert_eq!(refused_name(OsStr::new("id_rsa.pub")), None);
    assert_eq!(refused_name(OsStr::new("keys.rs")), None);
    assert_eq!(refused_name(OsStr::new(".envrc")), None);
}

#[test]
fn fifos_are_refused_without_opening() {
    let f = fixture();
    let status = std::process::Command::new("mkfifo")
        .arg(f.root.join("pipe"))
        .status();
    if !status.is_ok_and(|s| s.success()) {
        return; // no mkfifo here; nothing to test
    }
    let error = write(&f, "pipe", "x").unwrap_err();
    assert!(error.contains("not a regular file"), "{error}");
    let meta = fs::symlink_metadata(f.root.join("pipe")).unwrap();
    assert!(!meta.is_file(), "the FIFO is still there");
}

#[test]
fn every_way_out_is_refused_and_nothing_outside_changes() {
    let f = fixture();
    let outside = f.base.join("outside");
    symlink(outside.join("secret.txt"), f.root.join("abs_file")).unwrap();
    symlink("../outside/secret.txt", f.root.join("rel_file")).unwrap();
    symlink(&outside, f.root.join("abs_dir")).unwrap();
    symlink("../../outside", f.root.join("sub/rel_dir")).unwrap();
    symlink("../outside/new.txt", f.root.join("dangling_out")).unwrap();
    symlink("nowhere.txt", f.root.join("dangling_in")).unwrap();
    let before = snapshot(&f.base.join("outside"));
    let absolute_out = outside.join("secret.txt").display().to_string();
    for path in [
        "../outside/secret.txt",
        "sub/../../outside/secret.txt",
        "../outside/new.txt",
        absolute_out.as_str(),
        "/tmp/leash-never-written.txt",
        "abs_file",
        "rel_file",
        "abs_dir/secret.txt",
        "abs_dir/new.txt",
        "abs_dir/deeper/new.txt",
        "sub/rel_dir/new.txt",
        "dangling_out",
        "dangling_in",
        "a.txt\u{0}x",
    ] {
        assert!(write(&f, path, "PWNED").is_err(), "{path} was written");
    }
    assert_eq!(snapshot(&outside), before);
    assert!(!Path::new("/tmp/leash-never-written.txt").exists());
    // A symlink inside the root is followed to the file it names, which
    // is replaced; the link stays a link.
    symlink("sub/b.txt", f.root.join("to_b")).unwrap();
    assert_eq!(write(&f, "to_b", "via link\n").unwrap(), "sub/b.txt");
    assert_eq!(
        fs::read_to_string(f.root.join("sub/b.txt")).unwrap(),
        "via link\n"
    );
    assert!(
        fs::symlink_metadata(f.root.join("to_b"))
            .unwrap()
            .file_type()
            .is_symlink()
    );
}

/// A directory on the way is swapped for a symlink to the outside, over
/// and over, while files are written into it: nothing outside the root is
/// ever created or changed. (The write goes through the directory's
/// descriptor, so a swap after it was opened cannot redirect it; a swap
/// before is refused by the walk or the descriptor's check.)
#[test]
fn a_directory_swapped_for_an_outside_symlink_while_writing_never_escapes() {
    let f = fixture();
    let outside = f.base.join("outside");
    let before = snapshot(&outside);
    let root = f.root.clone();
    let stop = Arc::new(AtomicBool::new(false));
    let swapper = {
        let stop = stop.clone();
        let outside = outside.clone();
        std::thread::spawn(move || {
            while !stop.load(Ordering::Relaxed) {
                let _ = fs::rename(root.join("sub"), root.join("sub_real"));
                let _ = symlink(&outside, root.join("sub"));
                let _ = fs::remove_file(root.join("sub"));
                let _ = fs::rename(root.join("sub_real"), root.join("sub"));
                // A moment as a real directory, so some writes land.
                std::thread::sleep(std::time::Duration::from_micros(100));
            }
        })
    };
    let mut written = 0;
    for i in 0..400 {
        let name = format!("sub/f{}.txt", i % 7);
        if write(&f, &name, "inside").is_ok() {
            written += 1;
        }
        let _ = write(&f, "sub/b.txt", "b2\n");
    }
    stop.store(true, Ordering::Relaxed);
    swapper.join().unwrap();
    assert_eq!(snapshot(&outside), before, "something outside changed");
    assert!(
        written > 0,
        "no write ever got through; the race was not run"
    );
}

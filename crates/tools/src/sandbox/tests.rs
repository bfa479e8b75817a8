//! Tests of the sandbox: resolution, opening and verification.
#![allow(clippy::unwrap_used)] // a failed setup step should fail the test loudly

use super::*;
use std::ffi::OsString;
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
            if let Ok(file) = f.sandbox.open(path)
                && let Ok(text) = io::read_to_string(file.into_file())
            {
                assert_eq!(text, "inside\n");
                opened += 1;
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

#[test]
fn a_hidden_credentials_file_is_refused_by_any_path_or_link() {
    let mut f = fixture();
    fs::write(f.root.join("gha-creds-1.json"), "{\"private_key\": \"k\"}").unwrap();
    symlink(
        f.root.join("gha-creds-1.json"),
        f.root.join("sub/link.json"),
    )
    .unwrap();
    fs::hard_link(f.root.join("gha-creds-1.json"), f.root.join("hard.json")).unwrap();
    // Outside the root: nothing to hide.
    assert_eq!(f.sandbox.hide(&f.base.join("outside/secret.txt")), None);
    assert_eq!(
        f.sandbox.hide(&f.root.join("gha-creds-1.json")),
        Some(f.root.join("gha-creds-1.json"))
    );
    for path in [
        "gha-creds-1.json",
        "sub/link.json",
        "hard.json",
        "./gha-creds-1.json",
    ] {
        let error = f.sandbox.open(path).err();
        assert!(
            matches!(error, Some(SandboxError::Credentials { .. })),
            "{path}: {error:?}"
        );
        assert!(matches!(
            f.sandbox.locate(path),
            Err(SandboxError::Credentials { .. })
        ));
    }
    assert!(read(f.sandbox.open("inside.txt").unwrap()).contains("inside"));
}

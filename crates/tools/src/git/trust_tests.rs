//! Which repositories discovery accepts: the root's own (a submodule's git
//! directory found through its `core.worktree`, a linked worktree through
//! its `gitdir`), never one reached through a link inside `.git`; and how
//! revision arguments split into the ends checked as commits.

use super::*;
use crate::git::repo::core_worktree;
use crate::git::revs::ends;

#[test]
fn the_ends_of_a_revision_are_each_checked() {
    assert_eq!(ends("HEAD"), ["HEAD"]);
    assert_eq!(ends("main..HEAD"), ["main", "HEAD"]);
    assert_eq!(ends("a...b"), ["a", "b"]);
    assert_eq!(ends("main.."), ["main"]);
    assert_eq!(ends("^v1"), ["v1"]);
    assert_eq!(ends("HEAD^!"), ["HEAD"]);
    assert_eq!(ends("HEAD^-2"), ["HEAD"]);
    assert_eq!(ends("HEAD^{tree}"), ["HEAD^{tree}"]);
}

#[test]
fn core_worktree_is_read_as_plain_data() {
    let config = "[core]\n\tbare = false\n[remote \"x\"]\n\tworktree = /no\n\
                  [core]\n\tWorkTree = \"../../../sub\"\n";
    assert_eq!(core_worktree(config), Some(PathBuf::from("../../../sub")));
    assert_eq!(core_worktree("[core]\n\tworktree = a\\\"b\n"), None);
    assert_eq!(core_worktree("[remote \"o\"]\n\tworktree = /x\n"), None);
}

#[tokio::test]
async fn a_submodule_is_shown_through_the_git_dir_that_points_back() {
    let r = repo();
    let other = r.top.parent().unwrap().join("sub-origin");
    fs::create_dir(&other).unwrap();
    sh_git(&other, &["init", "-q"]);
    fs::write(other.join("sub.txt"), "in the submodule\n").unwrap();
    sh_git(&other, &["add", "-A"]);
    sh_git(&other, &["commit", "-q", "-m", "sub commit"]);
    sh_git(
        &r.top,
        &[
            "-c",
            "protocol.file.allow=always",
            "submodule",
            "add",
            "-q",
            other.to_str().unwrap(),
            "sub",
        ],
    );
    let git = tool(&r.top.join("sub"));
    assert!(git.repository().top().ends_with("repo/sub"));
    let log = run(&git, "log", &["--oneline"]).await.unwrap();
    assert!(log.contains("sub commit"), "{log}");
}

#[test]
fn a_link_inside_the_git_directory_is_refused() {
    let r = repo();
    let other = r.top.parent().unwrap().join("other");
    fs::create_dir(&other).unwrap();
    sh_git(&other, &["init", "-q"]);
    let refs = r.top.join(".git/refs/heads");
    fs::remove_dir_all(&refs).unwrap();
    std::os::unix::fs::symlink(other.join(".git/refs/heads"), &refs).unwrap();
    let sandbox = Arc::new(Sandbox::new(&r.top).unwrap());
    let error = Git::for_root(sandbox).unwrap_err();
    assert!(error.is_refusal(), "{error}");
    assert!(error.to_string().contains("is a symbolic link"), "{error}");
}

#[test]
fn a_link_among_the_loose_objects_or_a_fifo_in_the_logs_is_refused() {
    let r = repo();
    let fan_out = r.top.join(".git/objects/ab");
    fs::create_dir_all(&fan_out).unwrap();
    std::os::unix::fs::symlink("/etc/passwd", fan_out.join("cdef")).unwrap();
    let sandbox = Arc::new(Sandbox::new(&r.top).unwrap());
    let error = Git::for_root(Arc::clone(&sandbox)).unwrap_err();
    assert!(error.to_string().contains("is a symbolic link"), "{error}");
    assert!(error.to_string().contains("objects/ab/cdef"), "{error}");

    fs::remove_file(fan_out.join("cdef")).unwrap();
    let fifo = r.top.join(".git/logs/refs/heads/fifo");
    fs::create_dir_all(fifo.parent().unwrap()).unwrap();
    let made = std::process::Command::new("mkfifo").arg(&fifo).status();
    assert!(made.is_ok_and(|status| status.success()), "mkfifo");
    let error = Git::for_root(sandbox).unwrap_err();
    assert!(error.is_refusal(), "{error}");
    assert!(error.to_string().contains("is a FIFO"), "{error}");
}

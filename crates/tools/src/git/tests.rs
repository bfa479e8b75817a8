//! Tests of the `git` tool, through its `execute` as the loop calls it,
//! against real repositories made with the system git.
#![allow(clippy::unwrap_used, clippy::expect_used)] // a failed setup step should fail the test loudly

use std::time::Duration;

use super::args::{Parsed, parse};
use super::repo::shadow_config;
use super::*;
use crate::testing::call;
use crate::{Tool, testing::text_of};
use serde_json::{Value, json};
use std::fs;
use std::path::Path;
use std::process::Command;

/// Runs the system git for a test's setup, with no config but the test's.
fn sh_git(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .args([
            "-c",
            "user.name=Test",
            "-c",
            "user.email=test@example.com",
            "-c",
            "commit.gpgsign=false",
            "-c",
            "init.defaultBranch=main",
        ])
        .args(args)
        .current_dir(dir)
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .output()
        .unwrap();
    assert!(out.status.success(), "git {args:?}: {out:?}");
    String::from_utf8(out.stdout).unwrap()
}

/// A repository with two commits and a change in the work tree:
/// `src/lib.rs` (changed since), `README.md`, `.env` (tracked, changed).
struct Repo {
    _dir: tempfile::TempDir,
    top: PathBuf,
}

fn repo() -> Repo {
    let dir = tempfile::tempdir().unwrap();
    let top = fs::canonicalize(dir.path()).unwrap().join("repo");
    fs::create_dir_all(top.join("src")).unwrap();
    sh_git(&top, &["init", "-q"]);
    fs::write(top.join("src/lib.rs"), "fn one() {}\n").unwrap();
    fs::write(top.join("README.md"), "# readme\n").unwrap();
    fs::write(top.join(".env"), "TOKEN=first\n").unwrap();
    sh_git(&top, &["add", "-A"]);
    sh_git(&top, &["commit", "-q", "-m", "first commit"]);
    fs::write(top.join("src/lib.rs"), "fn one() {}\nfn two() {}\n").unwrap();
    fs::write(top.join(".env"), "TOKEN=second\n").unwrap();
    sh_git(&top, &["commit", "-q", "-am", "second commit"]);
    fs::write(
        top.join("src/lib.rs"),
        "fn one() {}\nfn two() {}\nfn three() {}\n",
    )
    .unwrap();
    fs::write(top.join(".env"), "TOKEN=third-uncommitted\n").unwrap();
    Repo { _dir: dir, top }
}

fn tool(root: &Path) -> Git {
    Git::for_root(Arc::new(Sandbox::new(root).unwrap())).unwrap()
}

async fn run(tool: &Git, command: &str, args: &[&str]) -> Result<String, String> {
    call(tool, json!({"command": command, "args": args}))
        .await
        .map(|out| text_of(&out))
}

fn strings(args: &[&str]) -> Vec<String> {
    args.iter().map(|s| s.to_string()).collect()
}

#[test]
fn harmful_options_are_refused_by_name() {
    for (command, arg) in [
        (GitCommand::Diff, "--output=/tmp/x"),
        (GitCommand::Diff, "--ext-diff"),
        (GitCommand::Diff, "--textconv"),
        (GitCommand::Diff, "--no-index"),
        (GitCommand::Diff, "-O/etc/passwd"),
        (GitCommand::Log, "-c"),
        (GitCommand::Log, "--exec-path=/tmp"),
        (GitCommand::Log, "--show-signature"),
        (GitCommand::Log, "--format=%G?"),
        (GitCommand::Show, "-o"),
        (GitCommand::Blame, "--contents=/etc/passwd"),
        (GitCommand::Status, "--porcelain=v3"),
    ] {
        let error = parse(command, &strings(&[arg])).unwrap_err().to_string();
        assert!(
            error.starts_with(&format!("argument '{arg}' is not allowed")),
            "{error}"
        );
        assert!(!error.contains('\n'), "{error}");
    }
}

#[test]
fn revisions_never_name_a_file_or_an_option() {
    let error = parse(GitCommand::Show, &strings(&["HEAD:src/lib.rs"]))
        .unwrap_err()
        .to_string();
    assert!(error.contains("may not hold ':'"), "{error}");
    let error = parse(GitCommand::Status, &strings(&["HEAD"]))
        .unwrap_err()
        .to_string();
    assert!(error.contains("takes no revision"), "{error}");
    let error = parse(GitCommand::Log, &strings(&["--since", "2024-01-01"]))
        .unwrap_err()
        .to_string();
    assert!(error.contains("--since=VALUE"), "{error}");
    let error = parse(GitCommand::Log, &strings(&["--max-count", "3"]))
        .unwrap_err()
        .to_string();
    assert!(error.contains("--max-count=VALUE"), "{error}");
}

#[test]
fn allowed_arguments_are_sorted_and_joined() {
    assert_eq!(
        parse(
            GitCommand::Log,
            &strings(&["-n", "5", "--oneline", "main..HEAD", "--", "src", "a b"])
        )
        .unwrap(),
        Parsed {
            options: strings(&["-n5", "--oneline"]),
            revisions: strings(&["main..HEAD"]),
            paths: strings(&["src", "a b"]),
        }
    );
    assert_eq!(
        parse(
            GitCommand::Blame,
            &strings(&["-L", "1,2", "HEAD", "--", "f"])
        )
        .unwrap()
        .options,
        strings(&["-L1,2"])
    );
    assert!(parse(GitCommand::Blame, &strings(&["HEAD"])).is_err());
    assert_eq!(
        parse(GitCommand::Status, &strings(&["-sb"]))
            .unwrap()
            .options,
        strings(&["-s", "-b"])
    );
    // Not a bundle when one letter is no flag of its own.
    assert!(parse(GitCommand::Status, &strings(&["-sz"])).is_err());
    assert!(parse(GitCommand::Diff, &strings(&["-U5", "--stat", "--cached"])).is_ok());
}

#[test]
fn the_shadow_config_keeps_only_format_keys() {
    let listed = b"core.repositoryformatversion\n1\0core.fsmonitor\ntouch x\0\
        extensions.objectformat\nsha256\0core.filemode\nfalse\0core.bare\ntrue\0\
        include.path\n/tmp/evil\0extensions.evil\nsh -c x\0diff.external\nx\0\
        core.ignorecase\ntrue; rm\0";
    assert_eq!(
        shadow_config(listed),
        "[core]\n\tbare = false\n\trepositoryformatversion = 1\n\tfilemode = false\n\
         [extensions]\n\tobjectformat = sha256\n"
    );
}

#[tokio::test]
async fn every_view_shows_the_repository() {
    let r = repo();
    let git = tool(&r.top);
    let status = run(&git, "status", &["--short"]).await.unwrap();
    assert_eq!(status, " M src/lib.rs\n");
    let diff = run(&git, "diff", &[]).await.unwrap();
    assert!(diff.contains("+fn three() {}"), "{diff}");
    assert!(
        diff.starts_with("diff --git a/src/lib.rs b/src/lib.rs"),
        "{diff}"
    );
    let log = run(&git, "log", &["--oneline"]).await.unwrap();
    assert!(
        log.contains("second commit") && log.contains("first commit"),
        "{log}"
    );
    let show = run(&git, "show", &["HEAD~1", "--stat"]).await.unwrap();
    assert!(
        show.contains("first commit") && show.contains("src/lib.rs"),
        "{show}"
    );
    let blame = run(&git, "blame", &["-s", "--", "src/lib.rs"])
        .await
        .unwrap();
    assert!(blame.contains("fn two() {}"), "{blame}");
    let staged = run(&git, "diff", &["--cached"]).await.unwrap();
    assert_eq!(staged, "[git diff printed nothing]");
}

#[tokio::test]
async fn dotenv_files_are_left_out_of_every_view() {
    let r = repo();
    let git = tool(&r.top);
    for (command, args) in [
        ("status", vec![]),
        ("diff", vec![]),
        ("log", vec!["-p"]),
        ("show", vec!["HEAD"]),
        ("show", vec!["--stat", "HEAD"]),
    ] {
        let out = run(&git, command, &args).await.unwrap();
        assert!(
            !out.contains("TOKEN") && !out.contains(".env"),
            "{command}: {out}"
        );
    }
    // Every commit is still listed, even one that only touched .env.
    fs::write(r.top.join(".env"), "TOKEN=fourth\n").unwrap();
    sh_git(&r.top, &["commit", "-q", "-m", "only dotenv", "--", ".env"]);
    let log = run(&git, "log", &["--oneline"]).await.unwrap();
    assert_eq!(log.lines().count(), 3, "{log}");
    let error = run(&git, "diff", &["--", ".env"]).await.unwrap_err();
    assert!(error.contains("dotenv"), "{error}");
}

#[tokio::test]
async fn a_root_below_the_top_sees_only_its_own_tree() {
    let r = repo();
    let git = tool(&r.top.join("src"));
    fs::write(r.top.join("README.md"), "# changed outside the root\n").unwrap();
    let diff = run(&git, "diff", &["--stat"]).await.unwrap();
    assert!(
        diff.contains("src/lib.rs") && !diff.contains("README"),
        "{diff}"
    );
    let show = run(&git, "show", &["HEAD~1"]).await.unwrap();
    assert!(
        show.contains("first commit") && !show.contains("readme"),
        "{show}"
    );
    std::os::unix::fs::symlink("/etc", r.top.join("src/etc")).unwrap();
    let error = run(&git, "log", &["--", "etc/passwd"]).await.unwrap_err();
    assert!(
        error.contains("a symlink on it leads out of the root"),
        "{error}"
    );
    for path in ["../README.md", "/etc/passwd"] {
        let error = run(&git, "log", &["--", path]).await.unwrap_err();
        assert!(error.contains("outside the allowed root"), "{error}");
    }
    // A path that no longer exists is still a path (its history).
    fs::remove_file(r.top.join("src/lib.rs")).unwrap();
    let log = run(&git, "log", &["--oneline", "--", "lib.rs"])
        .await
        .unwrap();
    assert_eq!(log.lines().count(), 2, "{log}");
    // Pathspec magic in a model's path is taken literally.
    let log = run(&git, "log", &["--oneline", "--", ":(top)README.md"])
        .await
        .unwrap();
    assert_eq!(log, "[git log printed nothing]");
}

#[tokio::test]
async fn a_long_output_is_cut_with_a_note() {
    let r = repo();
    let big: String = (0..20_000).map(|i| format!("line {i}\n")).collect();
    fs::write(r.top.join("src/lib.rs"), big).unwrap();
    let out = call(&tool(&r.top), json!({"command": "diff"}))
        .await
        .unwrap();
    let text = text_of(&out);
    assert!(text.len() <= MAX_BYTES + 300, "{}", text.len());
    assert!(
        text.contains("[truncated: git diff printed more than 50 KiB"),
        "{}",
        &text[text.len() - 300..]
    );
    assert_eq!(out.details["truncated"], Value::Bool(true));
}

#[tokio::test]
async fn control_characters_in_the_output_are_escaped() {
    let r = repo();
    fs::write(r.top.join("src/lib.rs"), "fn one() {}\n\x1b[31mred\x07\r\n").unwrap();
    let diff = run(&tool(&r.top), "diff", &[]).await.unwrap();
    assert!(diff.contains("+\\u{1b}[31mred\\u{7}\r\n"), "{diff:?}");
}

#[tokio::test]
async fn a_failing_git_is_an_error_naming_the_cause() {
    let r = repo();
    let error = run(&tool(&r.top), "blame", &["--", "no-such-file.rs"])
        .await
        .unwrap_err();
    assert!(
        error.starts_with("git blame failed (exit 128): "),
        "{error}"
    );
    assert!(error.contains("no-such-file.rs"), "{error}");
}

#[test]
fn no_repository_no_tool() {
    let dir = tempfile::tempdir().unwrap();
    let sandbox = Arc::new(Sandbox::new(dir.path()).unwrap());
    let error = Git::for_root(sandbox).unwrap_err();
    assert!(matches!(error, GitUnavailable::NoRepository(_)), "{error}");
    // A root inside a git directory is not in a work tree either.
    let r = repo();
    let inside = Repository::discover(&r.top.join(".git/refs")).unwrap();
    assert_eq!(inside, None);
}

#[tokio::test]
async fn a_linked_worktree_is_shown_through_its_own_shadow() {
    let r = repo();
    let linked = r.top.parent().unwrap().join("linked");
    sh_git(
        &r.top,
        &[
            "worktree",
            "add",
            "-q",
            "-b",
            "side",
            linked.to_str().unwrap(),
        ],
    );
    fs::write(linked.join("README.md"), "# changed in the worktree\n").unwrap();
    let git = tool(&linked);
    assert_eq!(
        run(&git, "status", &["-s"]).await.unwrap(),
        " M README.md\n"
    );
    let log = run(&git, "log", &["--oneline", "-n", "1"]).await.unwrap();
    assert!(log.contains("second commit"), "{log}");
    let status = run(&git, "status", &["-b", "-s"]).await.unwrap();
    assert!(status.starts_with("## side"), "{status}");
}

/// Plants, in the repository's config, a file it includes, a file an
/// `includeIf` names, the worktree config, `.gitattributes` and the hooks,
/// every way a repository can make git run a program; each would create a
/// file in `marks`.
fn plant(top: &Path, marks: &Path) {
    let run = |name: &str| format!("touch {}/{name}; false", marks.display());
    let script = |name: &str| {
        let path = marks.parent().unwrap().join(format!("{name}.sh"));
        fs::write(
            &path,
            format!("#!/bin/sh\ntouch {}/{name}\ncat\n", marks.display()),
        )
        .unwrap();
        let mut perms = fs::metadata(&path).unwrap().permissions();
        std::os::unix::fs::PermissionsExt::set_mode(&mut perms, 0o755);
        fs::set_permissions(&path, perms).unwrap();
        path.display().to_string()
    };
    let dot_git = top.join(".git");
    let included = dot_git.join("included.cfg");
    fs::write(
        &included,
        format!("[core]\n\tfsmonitor = \"{}\"\n", run("included-fsmonitor")),
    )
    .unwrap();
    let conditional = dot_git.join("conditional.cfg");
    fs::write(
        &conditional,
        format!(
            "[diff]\n\texternal = {}\n[core]\n\tpager = \"{}\"\n",
            script("conditional-external"),
            run("conditional-pager")
        ),
    )
    .unwrap();
    let mut config = fs::read_to_string(dot_git.join("config")).unwrap();
    config.push_str(&format!(
        "[core]\n\tfsmonitor = \"{fsmonitor}\"\n\tpager = \"{pager}\"\n\thooksPath = {hooks}\n\
         \tsshCommand = \"{ssh}\"\n\teditor = \"{editor}\"\n\
         [diff]\n\texternal = {external}\n\
         [diff \"evil\"]\n\ttextconv = {textconv}\n\tcommand = {command}\n\
         [filter \"evil\"]\n\tclean = \"{clean}\"\n\tsmudge = \"{smudge}\"\n\tprocess = \"{process}\"\n\
         \trequired = true\n\
         [credential]\n\thelper = \"!{credential}\"\n\
         [alias]\n\tst = \"!{alias}\"\n\
         [gpg]\n\tprogram = {gpg}\n[log]\n\tshowSignature = true\n\
         [include]\n\tpath = {included}\n\
         [includeIf \"gitdir:/\"]\n\tpath = {conditional}\n",
        fsmonitor = run("fsmonitor"),
        pager = run("pager"),
        hooks = dot_git.join("evil-hooks").display(),
        ssh = run("ssh"),
        editor = run("editor"),
        external = script("external"),
        textconv = script("textconv"),
        command = script("diff-command"),
        clean = run("clean"),
        smudge = run("smudge"),
        process = run("process"),
        credential = run("credential"),
        alias = run("alias"),
        gpg = script("gpg"),
        included = included.display(),
        conditional = conditional.display(),
    ));
    fs::write(dot_git.join("config"), config).unwrap();
    fs::write(
        dot_git.join("config.worktree"),
        format!("[core]\n\tfsmonitor = \"{}\"\n", run("worktree-fsmonitor")),
    )
    .unwrap();
    for hooks in [dot_git.join("hooks"), dot_git.join("evil-hooks")] {
        fs::create_dir_all(&hooks).unwrap();
        for hook in [
            "post-checkout",
            "pre-commit",
            "post-index-change",
            "fsmonitor-watchman",
        ] {
            let path = hooks.join(hook);
            fs::write(
                &path,
                format!("#!/bin/sh\ntouch {}/hook-{hook}\n", marks.display()),
            )
            .unwrap();
            let mut perms = fs::metadata(&path).unwrap().permissions();
            std::os::unix::fs::PermissionsExt::set_mode(&mut perms, 0o755);
            fs::set_permissions(&path, perms).unwrap();
        }
    }
    fs::write(top.join(".gitattributes"), "* filter=evil diff=evil\n").unwrap();
}

#[tokio::test]
async fn a_planted_config_runs_nothing() {
    let r = repo();
    let marks = r.top.parent().unwrap().join("marks");
    fs::create_dir(&marks).unwrap();
    plant(&r.top, &marks);
    let git = tool(&r.top);
    let calls: [(&str, &[&str]); 10] = [
        ("status", &[]),
        ("status", &["--porcelain=v2", "--ignored"]),
        ("diff", &[]),
        ("diff", &["HEAD~1", "--stat"]),
        ("diff", &["--cached"]),
        ("log", &["-p", "-n", "2"]),
        ("log", &["--oneline", "--", "src/lib.rs"]),
        ("show", &["HEAD"]),
        ("show", &["--stat", "HEAD~1"]),
        ("blame", &["--", "src/lib.rs"]),
    ];
    for (command, args) in calls {
        let out = run(&git, command, args).await;
        assert!(out.is_ok(), "{command} {args:?}: {out:?}");
    }
    let diff = run(&git, "diff", &[]).await.unwrap();
    assert!(diff.contains("+fn three() {}"), "{diff}");
    let status = run(&git, "status", &["-s"]).await.unwrap();
    assert_eq!(status, " M src/lib.rs\n?? .gitattributes\n");
    let blame = run(&git, "blame", &["-s", "--", "src/lib.rs"])
        .await
        .unwrap();
    assert!(blame.contains("fn three() {}"), "{blame}");
    let ran: Vec<_> = fs::read_dir(&marks).unwrap().collect();
    assert!(ran.is_empty(), "something ran: {ran:?}");

    // The plant works: plain git, run as a user would, runs it.
    let plain = Command::new("git")
        .args(["diff"])
        .current_dir(&r.top)
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .output()
        .unwrap();
    assert!(plain.status.code().is_some());
    assert!(
        fs::read_dir(&marks).unwrap().next().is_some(),
        "the planted config should have run something under plain git"
    );
}

#[tokio::test]
async fn the_schema_names_the_five_commands() {
    let r = repo();
    let spec = tool(&r.top).spec();
    assert_eq!(spec.name, "git");
    assert_eq!(
        spec.parameters["properties"]["command"]["enum"],
        json!(["status", "diff", "log", "show", "blame"])
    );
    assert_eq!(spec.parameters["required"], json!(["command"]));
}

/// A stand-in for git that runs `body` (a shell script).
fn fake_git(dir: &Path, body: &str) -> PathBuf {
    let path = dir.join("fake-git");
    fs::write(&path, format!("#!/bin/sh\n{body}\n")).unwrap();
    let mut perms = fs::metadata(&path).unwrap().permissions();
    std::os::unix::fs::PermissionsExt::set_mode(&mut perms, 0o755);
    fs::set_permissions(&path, perms).unwrap();
    path
}

fn invocation<'a>(git: &'a Path, dir: &'a Path, limit: Duration) -> run::Invocation<'a> {
    run::Invocation {
        git,
        cwd: dir,
        home: dir,
        repo: None,
        cap: 1000,
        limit,
    }
}

#[test]
fn a_cancelled_call_kills_git_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let git = fake_git(dir.path(), "sleep 30");
    let cancel = CancellationToken::new();
    let trigger = cancel.clone();
    std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(100));
        trigger.cancel();
    });
    let started = std::time::Instant::now();
    let how = invocation(&git, dir.path(), Duration::from_secs(60));
    let outcome = run::run_git(&how, &[], &cancel);
    assert!(
        matches!(outcome, Err(run::GitRunError::Cancelled)),
        "{outcome:?}"
    );
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "{:?}",
        started.elapsed()
    );
}

#[test]
fn a_slow_git_is_stopped_at_its_time_limit() {
    let dir = tempfile::tempdir().unwrap();
    let git = fake_git(dir.path(), "sleep 30");
    let started = std::time::Instant::now();
    let how = invocation(&git, dir.path(), Duration::from_millis(200));
    let outcome = run::run_git(&how, &[], &CancellationToken::new());
    assert!(
        matches!(outcome, Err(run::GitRunError::TimedOut)),
        "{outcome:?}"
    );
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "{:?}",
        started.elapsed()
    );
}

#[test]
fn endless_output_stops_git_at_the_cap_and_the_environment_is_bare() {
    let dir = tempfile::tempdir().unwrap();
    let git = fake_git(dir.path(), "env | sort; yes");
    let how = invocation(&git, dir.path(), Duration::from_secs(20));
    let ran = run::run_git(&how, &[], &CancellationToken::new()).unwrap();
    assert!(ran.cut);
    assert_eq!(ran.stdout.len(), 1001);
    let env = String::from_utf8_lossy(&ran.stdout);
    for expected in [
        "GIT_CONFIG_NOSYSTEM=1",
        "GIT_CONFIG_GLOBAL=/dev/null",
        "GIT_OPTIONAL_LOCKS=0",
    ] {
        assert!(env.contains(expected), "{env}");
    }
    assert!(!env.contains("CARGO"), "the environment leaked: {env}");
}

#[path = "trust_tests.rs"]
mod trust;

#[test]
fn the_shadow_index_keeps_the_originals_modification_time() {
    // git re-reads a file whose recorded time is not older than the
    // index's ("racy git"); a copy stamped now would make git trust the
    // stat data of an edit made in the commit's own clock tick and show
    // no change.
    let r = repo();
    let original = r.top.join(".git/index");
    let past = std::time::SystemTime::UNIX_EPOCH + std::time::Duration::from_secs(1_700_000_000);
    fs::File::options()
        .write(true)
        .open(&original)
        .unwrap()
        .set_modified(past)
        .unwrap();
    let repository = super::repo::Repository::discover(&r.top).unwrap().unwrap();
    let scratch = tempfile::tempdir().unwrap();
    let shadow = repository.shadow(scratch.path(), b"").unwrap();
    let copied = fs::metadata(shadow.join("index"))
        .unwrap()
        .modified()
        .unwrap();
    assert_eq!(copied, past);
}

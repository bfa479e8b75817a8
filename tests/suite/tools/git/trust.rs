//! The git tool sees only the repository of the root, read-only
//! (docs/src/tools.md "The git tool", docs/src/security.md "Running on an untrusted checkout"): a special file
//! where discovery reads hangs nothing, a `.git` file or `commondir`
//! leading to another repository leaves git out (a notice, a line in
//! `leash config`, exit 2 when `--tools git` names it), the views leave
//! `.git` byte-identical, a revision must name a commit, and `log
//! --follow` follows a rename.

use crate::support::run::Run;
use std::collections::BTreeMap;
use std::fs;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tempfile::TempDir;

use crate::support::shell::git;

/// A test fails, rather than blocks, when leash hangs: past `limit` the
/// child is killed and the test panics.
fn run_within(cmd: &mut Command, limit: Duration) -> Output {
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let started = Instant::now();
    loop {
        if child.try_wait().unwrap().is_some() {
            return child.wait_with_output().unwrap();
        }
        if started.elapsed() > limit {
            let _ = child.kill();
            let output = child.wait_with_output().unwrap();
            panic!(
                "leash still ran after {limit:?}; stderr: {}",
                String::from_utf8_lossy(&output.stderr)
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// `base/repo` (two commits, `src/lib.rs` changed since), `base/other`: a
/// second repository whose one commit holds [`SECRET`].
struct Setup {
    dir: TempDir,
    top: PathBuf,
    other: PathBuf,
}

const SECRET: &str = "SECRET-OF-THE-OTHER-REPOSITORY";

fn setup() -> Setup {
    let dir = tempfile::tempdir().unwrap();
    let base = fs::canonicalize(dir.path()).unwrap();
    let top = base.join("repo");
    let other = base.join("other");
    fs::create_dir_all(top.join("src")).unwrap();
    fs::create_dir_all(&other).unwrap();
    git(&top, &["init", "-q"]);
    fs::write(top.join("src/lib.rs"), "fn one() {}\n").unwrap();
    fs::write(top.join("README.md"), "# readme\n").unwrap();
    fs::write(top.join(".env"), "TOKEN=dotenv-secret\n").unwrap();
    git(&top, &["add", "-A"]);
    git(&top, &["commit", "-qm", "first"]);
    fs::write(top.join("src/lib.rs"), "fn one() {}\nfn two() {}\n").unwrap();
    git(&top, &["commit", "-qam", "second"]);
    fs::write(
        top.join("src/lib.rs"),
        "fn one() {}\nfn two() {}\nfn three() {}\n",
    )
    .unwrap();
    git(&other, &["init", "-q"]);
    fs::write(other.join("secret.txt"), format!("{SECRET}\n")).unwrap();
    git(&other, &["add", "-A"]);
    git(&other, &["commit", "-qm", &format!("commit {SECRET}")]);
    Setup { dir, top, other }
}

impl Setup {
    fn home(&self) -> PathBuf {
        self.dir.path().join("home")
    }

    /// `leash` in the repository on the faux provider making `calls` (id,
    /// git args) in one turn, with `--events jsonl`.
    fn faux(&self, calls: &[(&str, Value)], extra: &[&str]) -> Command {
        let calls: Vec<Value> = calls
            .iter()
            .map(|(id, args)| json!({"id": id, "name": "git", "arguments": args}))
            .collect();
        let script = self.dir.path().join("script.json");
        fs::write(
            &script,
            json!({"responses": [{"toolCalls": calls}, {"text": "done"}]}).to_string(),
        )
        .unwrap();
        let mut cmd = Run::new().home(self.home()).command();
        cmd.current_dir(&self.top)
            .args(["--provider", "faux", "--faux-script"])
            .arg(script)
            .args(["--no-stdin", "--events", "jsonl", "--timeout", "20s"])
            .args(extra)
            .arg("look");
        cmd
    }

    fn config(&self) -> Command {
        let mut cmd = Run::new().home(self.home()).command();
        cmd.current_dir(&self.top).args([
            "config",
            "--provider",
            "faux",
            "--faux-script",
            concat!(env!("CARGO_MANIFEST_DIR"), "/fixtures/demo.json"),
        ]);
        cmd
    }
}

/// Every `tool_execution_end` of a jsonl event stream: id → (text, error).
fn results(output: &Output) -> BTreeMap<String, (String, bool)> {
    String::from_utf8_lossy(&output.stderr)
        .lines()
        .filter_map(|line| serde_json::from_str::<Value>(line).ok())
        .filter(|event| event["type"] == "tool_execution_end")
        .map(|event| {
            let text = event["result"]["content"][0]["text"]
                .as_str()
                .unwrap_or_default()
                .to_owned();
            let id = event["toolCallId"].as_str().unwrap().to_owned();
            (id, (text, event["isError"] == true))
        })
        .collect()
}

/// The `notice` events' messages.
fn notices(output: &Output) -> Vec<String> {
    String::from_utf8_lossy(&output.stderr)
        .lines()
        .filter_map(|line| serde_json::from_str::<Value>(line).ok())
        .filter(|event| event["type"] == "notice")
        .map(|event| event["message"].as_str().unwrap().to_owned())
        .collect()
}

fn offered_git(output: &Output) -> bool {
    results(output)
        .values()
        .any(|(text, _)| !text.contains("Tool git not found"))
}

fn mkfifo(path: &Path) {
    let _ = fs::remove_file(path);
    let _ = fs::remove_dir_all(path);
    let status = Command::new("mkfifo").arg(path).status().unwrap();
    assert!(status.success());
}

#[test]
fn a_fifo_where_discovery_reads_hangs_neither_a_run_nor_leash_config() {
    for planted in [
        ".git",
        ".git/HEAD",
        ".git/commondir",
        ".git/config",
        ".git/index",
    ] {
        let s = setup();
        mkfifo(&s.top.join(planted));
        let output = run_within(
            s.faux(&[("c1", json!({"command": "status"}))], &[])
                .args(["--timeout", "5s"]),
            Duration::from_secs(15),
        );
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(0), "{planted}: {stderr}");
        assert!(
            !offered_git(&output),
            "{planted}: git was offered: {stderr}"
        );
        let told = notices(&output);
        assert!(
            told.iter()
                .any(|n| n.starts_with("git is left out: ") && n.contains("FIFO")),
            "{planted}: {told:?}"
        );

        let output = run_within(&mut s.config(), Duration::from_secs(15));
        let stdout = String::from_utf8_lossy(&output.stdout);
        assert_eq!(output.status.code(), Some(0), "{planted}: {output:?}");
        assert!(
            stdout.contains("git left out: ") && stdout.contains("FIFO"),
            "{planted}: {stdout}"
        );
    }
}

/// The root's `.git` replaced by a file naming the other repository's.
fn pointing_elsewhere(s: &Setup) {
    fs::remove_dir_all(s.top.join(".git")).unwrap();
    fs::write(
        s.top.join(".git"),
        format!("gitdir: {}\n", s.other.join(".git").display()),
    )
    .unwrap();
}

#[test]
fn a_git_file_naming_another_repository_leaves_git_out() {
    let s = setup();
    pointing_elsewhere(&s);
    let output = run_within(
        &mut s.faux(&[("c1", json!({"command": "log", "args": ["-p"]}))], &[]),
        Duration::from_secs(30),
    );
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    assert!(!stderr.contains(SECRET), "{stderr}");
    assert!(!offered_git(&output), "{stderr}");
    let told = notices(&output);
    assert!(
        told.iter()
            .any(|n| n.starts_with("git is left out: ") && n.contains("does not point back")),
        "{told:?}"
    );

    let output = run_within(&mut s.config(), Duration::from_secs(15));
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(stdout.contains("git left out: "), "{stdout}");
    assert!(stdout.contains("does not point back"), "{stdout}");

    // Named explicitly, it is a usage error that says why.
    let output = run_within(
        &mut s.faux(&[("c1", json!({"command": "log"}))], &["--tools", "git"]),
        Duration::from_secs(15),
    );
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("does not point back"), "{stderr}");
    assert!(!stderr.contains(SECRET), "{stderr}");
}

#[test]
fn a_commondir_or_alternates_leading_to_another_repository_leaves_git_out() {
    let other_objects = |s: &Setup| s.other.join(".git/objects").display().to_string();
    for plant in ["commondir", "alternates"] {
        let s = setup();
        let secret_commit = git(&s.other, &["rev-parse", "HEAD"]);
        match plant {
            "commondir" => {
                fs::write(
                    s.top.join(".git/commondir"),
                    format!("{}\n", s.other.join(".git").display()),
                )
                .unwrap();
            }
            _ => {
                fs::write(
                    s.top.join(".git/objects/info/alternates"),
                    format!("{}\n", other_objects(&s)),
                )
                .unwrap();
            }
        }
        let output = run_within(
            &mut s.faux(
                &[("c1", json!({"command": "show", "args": [secret_commit]}))],
                &[],
            ),
            Duration::from_secs(30),
        );
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(0), "{plant}: {stderr}");
        assert!(!stderr.contains(SECRET), "{plant}: {stderr}");
        assert!(!offered_git(&output), "{plant}: {stderr}");
        assert!(
            notices(&output)
                .iter()
                .any(|n| n.starts_with("git is left out: ")),
            "{plant}: {stderr}"
        );
    }
}

/// Every file, directory and link under `dir`: path → (kind, mode, bytes).
fn snapshot(dir: &Path) -> BTreeMap<PathBuf, (String, u32, Vec<u8>)> {
    let mut out = BTreeMap::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(path) = todo.pop() {
        let meta = fs::symlink_metadata(&path).unwrap();
        let (kind, bytes) = if meta.is_dir() {
            for entry in fs::read_dir(&path).unwrap() {
                todo.push(entry.unwrap().path());
            }
            ("dir", Vec::new())
        } else if meta.file_type().is_symlink() {
            (
                "link",
                fs::read_link(&path)
                    .unwrap()
                    .into_os_string()
                    .into_encoded_bytes(),
            )
        } else {
            ("file", fs::read(&path).unwrap())
        };
        let key = path.strip_prefix(dir).unwrap().to_path_buf();
        out.insert(key, (kind.to_owned(), meta.mode(), bytes));
    }
    out
}

#[test]
fn every_view_leaves_dot_git_byte_identical() {
    let s = setup();
    // Touched files make git want to refresh (and rewrite) the index.
    std::thread::sleep(Duration::from_millis(1100));
    for file in ["README.md", "src/lib.rs"] {
        let path = s.top.join(file);
        let text = fs::read(&path).unwrap();
        fs::write(&path, text).unwrap();
    }
    fs::set_permissions(s.top.join(".git/index"), fs::Permissions::from_mode(0o644)).unwrap();
    let before = snapshot(&s.top.join(".git"));
    let calls = [
        ("status", json!({"command": "status"})),
        (
            "status_s",
            json!({"command": "status", "args": ["-s", "--ignored"]}),
        ),
        ("diff", json!({"command": "diff"})),
        ("diff_stat", json!({"command": "diff", "args": ["--stat"]})),
        (
            "diff_cached",
            json!({"command": "diff", "args": ["--cached"]}),
        ),
        ("diff_head", json!({"command": "diff", "args": ["HEAD"]})),
        ("log", json!({"command": "log", "args": ["-p"]})),
        ("show", json!({"command": "show", "args": ["HEAD"]})),
        (
            "blame",
            json!({"command": "blame", "args": ["--", "src/lib.rs"]}),
        ),
    ];
    let output = run_within(&mut s.faux(&calls, &[]), Duration::from_secs(60));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    let results = results(&output);
    assert_eq!(results.len(), calls.len(), "{stderr}");
    for (id, (text, error)) in &results {
        assert!(!*error, "{id}: {text}");
    }
    assert!(results["diff"].0.contains("+fn three() {}"), "{results:?}");
    let after = snapshot(&s.top.join(".git"));
    let changed: Vec<_> = after
        .iter()
        .filter(|(path, entry)| before.get(*path) != Some(entry))
        .map(|(path, _)| path)
        .chain(before.keys().filter(|path| !after.contains_key(*path)))
        .collect();
    assert!(changed.is_empty(), "views changed .git: {changed:?}");
}

#[test]
fn a_revision_must_name_a_commit() {
    let s = setup();
    let blob = git(&s.top, &["rev-parse", "HEAD:.env"]);
    let tree = git(&s.top, &["rev-parse", "HEAD^{tree}"]);
    // A blob of another repository, copied in as a loose object.
    let other_blob = git(&s.other, &["rev-parse", "HEAD:secret.txt"]);
    let loose = format!("objects/{}/{}", &other_blob[..2], &other_blob[2..]);
    fs::create_dir_all(s.top.join(".git").join(&loose).parent().unwrap()).unwrap();
    fs::copy(
        s.other.join(".git").join(&loose),
        s.top.join(".git").join(&loose),
    )
    .unwrap();
    git(&s.top, &["tag", "blobtag", &blob]);
    let calls = [
        ("blob", json!({"command": "show", "args": [blob]})),
        ("other", json!({"command": "show", "args": [other_blob]})),
        ("tree", json!({"command": "show", "args": [tree]})),
        ("peel", json!({"command": "show", "args": ["HEAD^{tree}"]})),
        ("tag", json!({"command": "show", "args": ["blobtag"]})),
        (
            "diff",
            json!({"command": "diff", "args": [blob, other_blob]}),
        ),
        (
            "range",
            json!({"command": "log", "args": [format!("{tree}..HEAD")]}),
        ),
        (
            "ok",
            json!({"command": "show", "args": ["HEAD~1", "--stat"]}),
        ),
        (
            "ok_range",
            json!({"command": "log", "args": ["--oneline", "HEAD~1..HEAD"]}),
        ),
    ];
    let output = run_within(&mut s.faux(&calls, &[]), Duration::from_secs(60));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    assert!(
        !stderr.contains(SECRET) && !stderr.contains("dotenv-secret"),
        "{stderr}"
    );
    let results = results(&output);
    for id in ["blob", "other", "tree", "peel", "tag", "diff", "range"] {
        let (text, error) = &results[id];
        assert!(*error, "{id}: {text}");
        assert!(text.contains("does not name a commit"), "{id}: {text}");
    }
    assert!(
        !results["ok"].1 && results["ok"].0.contains("first"),
        "{results:?}"
    );
    assert!(
        !results["ok_range"].1 && results["ok_range"].0.contains("second"),
        "{results:?}"
    );
}

#[test]
fn log_follow_follows_a_rename_of_its_one_path() {
    let s = setup();
    git(&s.top, &["mv", "src/lib.rs", "src/core.rs"]);
    git(&s.top, &["commit", "-qm", "rename"]);
    let calls = [
        (
            "follow",
            json!({"command": "log", "args": ["--follow", "--oneline", "--", "src/core.rs"]}),
        ),
        (
            "two",
            json!({"command": "log", "args": ["--follow", "--", "src/core.rs", "README.md"]}),
        ),
        (
            "patch",
            json!({"command": "log", "args": ["--follow", "-p", "--", "src/core.rs"]}),
        ),
    ];
    let output = run_within(&mut s.faux(&calls, &[]), Duration::from_secs(60));
    let stderr = String::from_utf8_lossy(&output.stderr);
    let results = results(&output);
    let (text, error) = &results["follow"];
    assert!(!*error, "{text}");
    assert_eq!(text.lines().count(), 3, "{text}");
    assert!(text.contains("first") && text.contains("rename"), "{text}");
    let (text, error) = &results["two"];
    assert!(
        *error && text.contains("--follow needs exactly one path"),
        "{text}"
    );
    let (text, error) = &results["patch"];
    assert!(*error && text.contains("--follow"), "{text} / {stderr}");
}

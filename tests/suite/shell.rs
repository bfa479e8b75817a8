//! The shell (docs/src/tools.md "The shell: --allow-exec"): the escape suite — one
//! test per rule of the confinement, each through the real binary on the
//! scripted model, each failing if the rule did not hold — and the
//! tool's contract (status, caps, events, patterns, settings).
//!
//! Where the kernel cannot confine (no Landlock, no seccomp, no process
//! cap), `--allow-exec` is a usage error: every test here then says so on
//! stderr, and fails under `CI=true` instead of passing unseen.

mod container;
mod ecosystems;
mod escape;
mod processes;
mod side_doors;
mod tool;
mod toolchains;

use std::path::{Path, PathBuf};

use serde_json::{Value, json};
use tempfile::TempDir;

use crate::support::run::{Outcome, Run, tool_ends};

/// A checkout's parent: `root/` (the root), `beside.txt` next to it,
/// `home/secret.txt` (the operator's `HOME`).
pub struct Parent {
    dir: TempDir,
}

/// What `beside.txt` and `home/secret.txt` hold.
pub const BESIDE: &str = "beside-the-root-3b1f";
pub const HOME_SECRET: &str = "home-secret-9c2e";

impl Parent {
    pub fn new() -> Parent {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("root")).unwrap();
        std::fs::create_dir(dir.path().join("home")).unwrap();
        std::fs::write(dir.path().join("beside.txt"), BESIDE).unwrap();
        std::fs::write(dir.path().join("home/secret.txt"), HOME_SECRET).unwrap();
        Parent { dir }
    }

    /// A path in the box.
    pub fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    /// A run of `commands`, one `bash` call a turn, then the answer
    /// `done`; `--allow-exec`, JSONL events, the JSON result.
    pub fn run(&self, commands: &[Value]) -> Run {
        let mut script: Vec<Value> = commands
            .iter()
            .map(|args| json!({"toolCalls": [{"name": "bash", "arguments": args}]}))
            .collect();
        script.push(json!({"text": "done"}));
        Run::faux(Value::Array(script))
            .home(self.path("home"))
            .current_dir(self.path(""))
            .args(["--root", "root", "--allow-exec", "--events", "jsonl"])
            .args(["--output", "json", "--no-stdin"])
            .prompt("go")
            .args(["--max-turns", &(commands.len() + 1).to_string()])
    }
}

/// One command's arguments.
pub fn command(text: &str) -> Value {
    json!({"command": text})
}

/// Whether the kernel here confines commands. When it cannot, this says
/// so on stderr, and under `CI=true` fails the test: the suite never
/// passes unseen on a kernel where it proves nothing.
pub fn confinable() -> bool {
    let probe = Parent::new();
    let outcome = probe.run(&[]).output();
    if outcome.code() == Some(2) && outcome.stderr().contains("--allow-exec") {
        let why = outcome.last_line();
        assert!(
            std::env::var_os("CI").is_none(),
            "CI=true: this kernel cannot confine the shell, so the escape suite proves \
             nothing: {why}"
        );
        eprintln!("NOT RUN (this kernel cannot confine the shell): {why}");
        return false;
    }
    assert_eq!(outcome.code(), Some(0), "{}", outcome.stderr());
    true
}

/// Each `bash` call's result text, in order.
pub fn texts(outcome: &Outcome) -> Vec<String> {
    tool_ends(&outcome.output)
        .iter()
        .map(|end| {
            end["result"]["content"][0]["text"]
                .as_str()
                .unwrap_or_default()
                .to_owned()
        })
        .collect()
}

/// Each `bash` call's result `details`, in order.
pub fn details(outcome: &Outcome) -> Vec<Value> {
    tool_ends(&outcome.output)
        .iter()
        .map(|end| end["result"]["details"].clone())
        .collect()
}

/// The processes whose command line holds `marker`.
pub fn processes_with(marker: &str) -> Vec<String> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let is_pid = entry
            .file_name()
            .to_str()
            .is_some_and(|n| n.parse::<u32>().is_ok());
        if !is_pid {
            continue;
        }
        let stat = std::fs::read_to_string(entry.path().join("stat")).unwrap_or_default();
        let zombie = stat
            .rsplit_once(") ")
            .is_some_and(|(_, rest)| rest.starts_with('Z'));
        let cmdline = std::fs::read(entry.path().join("cmdline")).unwrap_or_default();
        let cmdline = String::from_utf8_lossy(&cmdline).replace('\0', " ");
        if !zombie && cmdline.contains(marker) {
            found.push(format!(
                "{}: {cmdline}",
                entry.file_name().to_string_lossy()
            ));
        }
    }
    found
}

/// Whether this is root's footing without a cgroup (commands run as a
/// stranger's uid: docs/src/tools.md "Root in a container") and `path`
/// lies where other users may not enter (`/root` is 0700): the docs name
/// it as not working there, and the start-up notice says so, which this
/// checks before the caller leaves its test out.
pub fn closed_to_the_stranger_at(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    if std::env::var_os("_LEASH_TEST_NO_CGROUP").is_none() || !nix::unistd::geteuid().is_root() {
        return false;
    }
    let Some(closed) = path
        .ancestors()
        .collect::<Vec<_>>()
        .into_iter()
        .rev()
        .find(|dir| {
            std::fs::metadata(dir)
                .is_ok_and(|meta| meta.is_dir() && meta.permissions().mode() & 0o001 == 0)
        })
    else {
        return false;
    };
    let outcome = Parent::new().run(&[]).output();
    let stderr = outcome.stderr();
    assert!(
        stderr.contains(&format!(
            "{} may not be entered by other users",
            closed.display()
        )),
        "{stderr}"
    );
    eprintln!(
        "NOT RUN ({} lies under {}, closed to a stranger's uid)",
        path.display(),
        closed.display()
    );
    true
}

/// [`closed_to_the_stranger_at`] for `program` as `PATH` finds it.
pub fn closed_to_the_stranger(program: &str) -> bool {
    std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default())
        .map(|dir| dir.join(program))
        .find(|path| path.exists())
        .is_some_and(|found| closed_to_the_stranger_at(&found))
}

/// `path`'s text, or `None` when it does not exist.
pub fn read(path: &Path) -> Option<String> {
    std::fs::read_to_string(path).ok()
}

//! A temp directory per test, and `leash` (or a bash script calling it)
//! run there through the one launcher ([`super::run::Run`]), isolated from
//! the developer's own setup ([`super::run::isolate`]), with `HOME` and `XDG_CONFIG_HOME` inside the
//! directory, so no real config file is read.

#![allow(dead_code)] // each test file uses part of this

use std::path::{Path, PathBuf};

use assert_cmd::Command;
use serde_json::Value;
use tempfile::TempDir;

use super::run::{Run, stderr, stdout};

/// A temp working directory with its own config home.
pub struct Workspace {
    pub dir: TempDir,
}

impl Workspace {
    pub fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("home/.config")).unwrap();
        Workspace { dir }
    }

    pub fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    /// Writes `text` to `name` (creating directories) and returns its path.
    pub fn write(&self, name: &str, text: &str) -> PathBuf {
        let path = self.path(name);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).unwrap();
        }
        std::fs::write(&path, text).unwrap();
        path
    }

    /// A faux script, as `script.json`.
    pub fn script(&self, script: Value) -> PathBuf {
        self.write("script.json", &script.to_string())
    }

    /// The config file leash reads here.
    pub fn config_file(&self, text: &str) -> PathBuf {
        self.write("home/.config/leash/config.toml", text)
    }

    /// The test's own `HOME` (no developer's config file may change a result).
    pub fn home(&self) -> PathBuf {
        self.path("home")
    }

    /// `leash` in this directory, isolated ([`Run`]).
    pub fn leash(&self) -> Command {
        Command::from_std(self.child())
    }

    /// `leash` as a plain child process (for signals and open pipes),
    /// isolated like [`Workspace::leash`].
    pub fn child(&self) -> std::process::Command {
        Run::new()
            .home(self.home())
            .current_dir(self.dir.path())
            .command()
    }

    /// `leash` on the faux provider with `script`.
    pub fn faux(&self, script: Value) -> Command {
        let path = self.script(script);
        let mut cmd = self.leash();
        cmd.args(["--provider", "faux", "--faux-script"]).arg(path);
        cmd
    }

    /// `script` run as a GitHub Actions `shell: bash` step runs it
    /// (`bash --noprofile --norc -eo pipefail`), with `leash` on the PATH
    /// and isolated like [`Workspace::leash`].
    pub fn bash(&self, script: &str) -> std::process::Command {
        let mut cmd = std::process::Command::new("bash");
        cmd.args(["--noprofile", "--norc", "-eo", "pipefail", "-c", script])
            .current_dir(self.dir.path());
        let home = self.path("home");
        super::run::isolate(&mut cmd, &home, &home.join(".config"));
        let bin = super::run::bin();
        let dir = bin.parent().unwrap();
        let path = std::env::var_os("PATH").unwrap_or_default();
        let mut paths = vec![dir.to_path_buf()];
        paths.extend(std::env::split_paths(&path));
        cmd.env("PATH", std::env::join_paths(paths).unwrap());
        cmd
    }
}

/// Whether `program` is on the PATH (`command -v`). Programs named in
/// `LEASH_TEST_WITHOUT` (comma-separated) count as missing, to exercise the
/// fallbacks: `LEASH_TEST_WITHOUT=jq cargo test --test all recipes`.
pub fn has(program: &str) -> bool {
    if std::env::var("LEASH_TEST_WITHOUT")
        .is_ok_and(|list| list.split(',').any(|name| name.trim() == program))
    {
        return false;
    }
    std::process::Command::new("sh")
        .args(["-c", &format!("command -v {program}")])
        .output()
        .map(|output| output.status.success())
        .unwrap_or(false)
}

/// A tool call block of a faux response.
pub fn tool_call(name: &str, args: Value) -> Value {
    serde_json::json!({ "name": name, "arguments": args })
}

/// The sample file the seed task reads (`fixtures/sample.ts`).
pub fn sample_path() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/sample.ts")
}

/// The sample file the seed task reads, copied into `dir`.
pub fn copy_sample(dir: &Path) {
    std::fs::copy(sample_path(), dir.join("sample.ts")).unwrap();
}

/// A temp directory holding `fixtures/sample.ts`, so `--root fixtures`
/// works and no `.env` of the repository is picked up.
pub fn fixtures_dir() -> TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("fixtures")).unwrap();
    copy_sample(&dir.path().join("fixtures"));
    dir
}

/// Runs the system git in `dir` (created if missing) for a test's setup,
/// with an identity, branch `main` and none of the developer's or the
/// machine's config; its trimmed stdout.
pub fn git(dir: &std::path::Path, args: &[&str]) -> String {
    std::fs::create_dir_all(dir).unwrap();
    let output = std::process::Command::new("git")
        .args(["-c", "user.name=t", "-c", "user.email=t@example.com"])
        .args([
            "-c",
            "init.defaultBranch=main",
            "-c",
            "commit.gpgsign=false",
        ])
        .args(args)
        .current_dir(dir)
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .output()
        .unwrap();
    assert!(output.status.success(), "git {args:?}: {}", stderr(&output));
    stdout(&output).trim().to_owned()
}

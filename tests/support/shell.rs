//! A temp directory per test, and `leash` (or a bash script calling it)
//! run there, isolated from the developer's own setup ([`isolate`]): no
//! `LEASH_*`, `OPENAI_*`, `ANTHROPIC_*` or `NO_COLOR` inherited, and `HOME`
//! and `XDG_CONFIG_HOME` inside the directory, so no real config file is
//! read.

#![allow(dead_code)] // each test file uses part of this

use std::path::{Path, PathBuf};

use assert_cmd::Command;
use serde_json::Value;
use tempfile::TempDir;

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

    /// `leash` in this directory, isolated.
    pub fn leash(&self) -> Command {
        let mut cmd = Command::cargo_bin("leash").unwrap();
        cmd.current_dir(self.dir.path());
        isolate(&mut cmd, &self.path("home"));
        cmd
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
        isolate(&mut cmd, &self.path("home"));
        let bin = leash_bin();
        let dir = bin.parent().unwrap();
        let path = std::env::var_os("PATH").unwrap_or_default();
        let mut paths = vec![dir.to_path_buf()];
        paths.extend(std::env::split_paths(&path));
        cmd.env("PATH", std::env::join_paths(paths).unwrap());
        cmd
    }
}

/// The binary under test.
pub fn leash_bin() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_leash"))
}

/// A command whose environment can be edited: std's and assert_cmd's.
pub trait EnvCommand {
    fn remove_var(&mut self, name: &str);
    fn set_var(&mut self, name: &str, value: &Path);
}

impl EnvCommand for std::process::Command {
    fn remove_var(&mut self, name: &str) {
        self.env_remove(name);
    }
    fn set_var(&mut self, name: &str, value: &Path) {
        self.env(name, value);
    }
}

impl EnvCommand for Command {
    fn remove_var(&mut self, name: &str) {
        self.env_remove(name);
    }
    fn set_var(&mut self, name: &str, value: &Path) {
        self.env(name, value);
    }
}

/// Isolates `cmd` from the developer's setup: none of the variables
/// that change a run (`LEASH_*`, the provider variables, `NO_COLOR`, the
/// TLS roots, ...), and `HOME` and `XDG_CONFIG_HOME` under `home`, so no
/// real config file is read. Every integration test's command goes
/// through this (or [`Workspace::leash`]).
pub fn isolate<C: EnvCommand>(cmd: &mut C, home: &Path) {
    for name in inherited() {
        cmd.remove_var(&name);
    }
    cmd.set_var("HOME", home);
    cmd.set_var("XDG_CONFIG_HOME", &home.join(".config"));
}

/// Variables of the developer's environment that would change a run.
fn inherited() -> Vec<String> {
    std::env::vars_os()
        .filter_map(|(name, _)| name.into_string().ok())
        .filter(|name| {
            name.starts_with("LEASH_")
                || name.starts_with("OPENAI_")
                || name.starts_with("ANTHROPIC_")
                || name.starts_with("GITHUB_")
                || name.starts_with("SSL_CERT_")
                || name.starts_with("XDG_")
                || name == "NO_COLOR"
                || name == "RUST_BACKTRACE"
        })
        .collect()
}

/// Whether `program` is on the PATH (`command -v`). Programs named in
/// `LEASH_TEST_WITHOUT` (comma-separated) count as missing, to exercise the
/// fallbacks: `LEASH_TEST_WITHOUT=jq cargo test --test recipes`.
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

/// The stdout of a finished command, as text.
pub fn stdout(output: &std::process::Output) -> String {
    String::from_utf8(output.stdout.clone()).unwrap()
}

/// The stderr of a finished command, as text.
pub fn stderr(output: &std::process::Output) -> String {
    String::from_utf8(output.stderr.clone()).unwrap()
}

/// The sample file the seed task reads, copied into `dir`.
pub fn copy_sample(dir: &Path) {
    let sample = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/sample.ts");
    std::fs::copy(sample, dir.join("sample.ts")).unwrap();
}

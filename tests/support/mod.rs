//! What every integration test shares: the one way to launch the binary
//! under test ([`leash`]), isolated from the developer's setup
//! ([`isolate`]), and the helpers around it.
//!
//! - [`shell`]: a temp directory per test with its own `HOME` and config
//!   home, `leash` (as `assert_cmd`) and bash steps run there.
//! - [`hostile`]: raw-TCP servers that misbehave, and a workspace for the
//!   hardening tests (`root/`, `outside/`, `--no-stdin`).
//! - [`sse`]: the per-provider SSE builders and mock server helpers, in
//!   the documented wire formats.
//!
//! Test code only; nothing here may talk to a real API.

#![allow(dead_code)] // each test module uses part of this

pub mod hostile;
pub mod shell;
pub mod sse;

use std::path::{Path, PathBuf};
use std::process::Command;

/// The binary under test.
pub fn leash_bin() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_leash"))
}

/// `leash`, isolated ([`isolate`]) with `HOME` at `home` and
/// `XDG_CONFIG_HOME` at `home/.config`. Every test launches the binary
/// through this or [`leash_with_config_home`] (wrapped in
/// `assert_cmd::Command::from_std` where a test asserts with it).
pub fn leash(home: &Path) -> Command {
    leash_with_config_home(home, &home.join(".config"))
}

/// `leash`, isolated, with `HOME` at `home` and `XDG_CONFIG_HOME` at
/// `config_home`.
pub fn leash_with_config_home(home: &Path, config_home: &Path) -> Command {
    let mut cmd = Command::new(leash_bin());
    isolate(&mut cmd, home, config_home);
    cmd
}

/// Isolates `cmd` (leash itself, or a shell that runs it) from the
/// developer's setup: none of the variables that change a run (`LEASH_*`,
/// the provider variables, `NO_COLOR`, the TLS roots, ...), and `HOME` and
/// `XDG_CONFIG_HOME` of the test's own, so no real config file is read.
pub fn isolate(cmd: &mut Command, home: &Path, config_home: &Path) {
    for name in inherited() {
        cmd.env_remove(name);
    }
    cmd.env("HOME", home).env("XDG_CONFIG_HOME", config_home);
}

/// Proxy variables: reqwest honours them, so a developer's proxy would
/// stand between leash and the loopback servers.
const PROXIES: [&str; 4] = ["http_proxy", "https_proxy", "all_proxy", "no_proxy"];

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
                || PROXIES.iter().any(|proxy| name.eq_ignore_ascii_case(proxy))
        })
        .collect()
}

//! Configuration (docs/src/configuration.md "Configuration"): where each setting comes from,
//! what a `.env` may and may not set, the config file, `leash config`, and an
//! untrusted checkout's planted configuration. The real binary, isolated
//! (support/shell.rs); loopback servers record where a key went
//! (support/hostile.rs).

#![allow(clippy::unwrap_used, clippy::expect_used)] // tests may panic on a broken fixture

mod config_file;
mod dotenv_keys;
mod dotenv_policy;
mod file_inputs;
mod flags;
mod hermetic;
mod input_kinds;
mod layers;
mod untrusted_checkout;

use crate::support::hostile;
use crate::support::run::{code, last_line, stderr, stdout};
use crate::support::shell;

use std::process::Stdio;
use std::time::{Duration, Instant};

use hostile::HostileServer;
use serde_json::{Value, json};
use shell::{Workspace, tool_call};

const KEY: &str = "sk-exported-KEY-7c1d";

/// `key = value  # source` of `leash config`, by key (comments included).
fn listed(output: &std::process::Output, key: &str) -> String {
    stdout(output)
        .lines()
        .find(|line| line.starts_with(&format!("{key} ")) || line.starts_with(&format!("# {key} ")))
        .unwrap_or_else(|| panic!("{key} not listed:\n{}", stdout(output)))
        .to_owned()
}

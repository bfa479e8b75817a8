//! The harness itself ([`crate::support::run::Run`]): whatever the developer's
//! environment holds — `LEASH_*`, provider keys and URLs, TLS roots,
//! proxies, `NO_COLOR`, a config file in their `HOME` — a test's `leash`
//! sees none of it.
//!
//! The test process cannot change its own environment (`set_var` is
//! unsafe, and unsafe code is forbidden), so the test runs this binary
//! again with such an environment, filtered to [`probe`], which does the
//! checking.

use crate::support::run::{Run, stderr, stdout};
use crate::support::shell::Workspace;

/// Set only in the environment of the second run of this binary.
const PROBE: &str = "LEASH_HARNESS_PROBE";

/// What a developer's shell might hold, each of which would change a run.
const DEVELOPER_ENV: [(&str, &str); 10] = [
    ("LEASH_MODEL", "from-developer-env"),
    ("LEASH_PROVIDER", "anthropic"),
    ("OPENAI_API_KEY", "sk-from-developer-env"),
    ("OPENAI_BASE_URL", "http://from-developer-env.invalid/v1"),
    ("ANTHROPIC_API_KEY", "sk-ant-from-developer-env"),
    ("SSL_CERT_FILE", "/nonexistent/from-developer-env.pem"),
    ("HTTPS_PROXY", "http://127.0.0.1:9"),
    ("http_proxy", "http://127.0.0.1:9"),
    ("NO_COLOR", "1"),
    ("RUST_BACKTRACE", "1"),
];

#[test]
fn a_developers_variables_and_config_file_never_reach_leash() {
    if std::env::var_os(PROBE).is_some() {
        return; // this is the second run: only the probe checks
    }
    let developer = tempfile::tempdir().unwrap();
    let config = developer.path().join(".config/leash/config.toml");
    std::fs::create_dir_all(config.parent().unwrap()).unwrap();
    std::fs::write(&config, "model = \"from-developer-config\"\n").unwrap();
    let output = std::process::Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "suite::harness::probe", "--nocapture"])
        .env(PROBE, "1")
        .env("HOME", developer.path())
        .env("XDG_CONFIG_HOME", developer.path().join(".config"))
        .envs(DEVELOPER_ENV)
        .output()
        .unwrap();
    let (out, err) = (stdout(&output), stderr(&output));
    assert!(output.status.success(), "{out}\n{err}");
    assert!(out.contains("1 passed"), "the probe did not run:\n{out}");
}

/// Checks, in the second run, that `leash` launched through the harness
/// inherits nothing of [`DEVELOPER_ENV`] and reads its own config home.
#[test]
fn probe() {
    if std::env::var_os(PROBE).is_none() {
        return; // the first run: the test above starts the second
    }
    let ws = Workspace::new();
    let cmd = Run::new().home(ws.home()).command();
    for (name, _) in DEVELOPER_ENV {
        assert!(
            cmd.get_envs()
                .any(|(key, value)| key == name && value.is_none()),
            "{name} is not removed"
        );
    }

    // The test's own key, set on the command, is the one setting from
    // the environment.
    let output = ws
        .leash()
        .env("OPENAI_API_KEY", "sk-the-tests-own")
        .arg("config")
        .output()
        .unwrap();
    let text = stdout(&output);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert!(!text.contains("from-developer"), "{text}");
    let from_env: Vec<&str> = text.lines().filter(|l| l.contains("# env ")).collect();
    assert_eq!(from_env.len(), 1, "{text}");
    assert!(from_env[0].ends_with("# env OPENAI_API_KEY"), "{text}");
    let own = ws.home().join(".config/leash/config.toml");
    assert!(
        text.contains(&format!("# config file: {}", own.display())),
        "{text}"
    );
    assert!(text.contains("model = \"gpt-4.1-mini\""), "{text}");
}

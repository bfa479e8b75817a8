//! The hostile checkout's `.env` setting policy (docs/src/security.md "Running on an
//! untrusted checkout", docs/src/configuration.md "Configuration"): refused before anything runs.

use super::*;

/// A checkout's `.env` that tries to set policy ends the run before
/// anything starts: exit 2, the variable named in the last line, no
/// request, nothing run.
#[tokio::test(flavor = "multi_thread")]
async fn a_dotenv_that_sets_policy_is_refused_before_anything_runs() {
    let checkout = Checkout::new();
    let t = checkout.t().to_path_buf();
    let marker = |name: &str| t.join("markers").join(name).display().to_string();
    let planted = planted_env(&t, &checkout.trap.url());
    let cases = [
        (
            "LEASH_HOOK",
            format!("before-tool-call=touch {}", marker("dotenv-hook")),
        ),
        (
            "LEASH_MCP_CONFIG",
            checkout.repo().join(".mcp.json").display().to_string(),
        ),
        ("LEASH_ROOT", "/".to_owned()),
        ("LEASH_ALLOW_WRITE", "1".to_owned()),
        ("LEASH_DENY_TOOL", "nothing".to_owned()),
        ("LEASH_ALLOW_TOOL", "read_file".to_owned()),
        ("LEASH_TOOLS", "read_file,write_file".to_owned()),
        ("LEASH_TRUST_BASE_URL", "1".to_owned()),
        ("LEASH_ENV_FILE", t.join("work/.env").display().to_string()),
    ];
    let server = MockServer::start().await;
    let script = recipe("review-searches");
    let dotenv = checkout.repo().join(".env");
    for (name, value) in &cases {
        let before = checkout.untouched();
        std::fs::write(&dotenv, format!("{planted}{name}=\"{value}\"\n")).unwrap();
        let output = {
            let (checkout, uri) = (&checkout, server.uri());
            tokio::task::block_in_place(|| checkout.run(&script, Provider::OpenAi, &uri, None))
        };
        std::fs::write(&dotenv, &planted).unwrap();
        let last = stderr(&output)
            .lines()
            .last()
            .unwrap_or_default()
            .to_owned();
        assert_eq!(output.status.code(), Some(2), "{name}: {}", stderr(&output));
        assert!(
            last.starts_with("leash: ") && last.contains(name),
            "{name}: {last}"
        );
        assert!(stdout(&output).is_empty());
        let markers = std::fs::read_dir(t.join("markers")).unwrap().count();
        assert_eq!(markers, 0, "{name}: a plant ran");
        let changed = changed_paths(&before, &checkout.untouched());
        assert!(changed.is_empty(), "{name}: {changed:?}");
    }
    assert!(server.received_requests().await.unwrap().is_empty());
    assert_eq!(checkout.trap.connections(), 0);
    assert!(processes_left(&t).is_empty());
}

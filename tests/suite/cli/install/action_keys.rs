//! The provider key in the Action (docs/src/github-action.md "The key"):
//! taken from the step's `env:` or from the inputs the peers' Actions
//! name (`openai-api-key`, `anthropic-api-key`, claude-code-action's
//! `anthropic_api_key`), masked in the log before anything runs, handed
//! to leash and to nothing else; a missing key is told where a workflow
//! sets it. Run through action/run.sh as action.yml runs it, against a
//! loopback server that records what leash sent.

use super::action::{ActionRun, run_action};
use super::repo_file;
use crate::support::hostile::HostileServer;
use crate::support::run::{stderr, stdout};
use crate::support::shell::Workspace;

/// A server that records each request and answers 400 (not retried).
fn recorder() -> HostileServer {
    HostileServer::always(|_, conn| {
        conn.respond(
            400,
            "application/json",
            br#"{"error":{"message":"recorded","type":"invalid_request_error"}}"#,
        );
    })
}

/// The value of `header` in every request `server` read.
fn sent(server: &HostileServer, header: &str) -> Vec<String> {
    server
        .requests()
        .iter()
        .filter_map(|request| request.header(header))
        .collect()
}

/// Everything of a step that is not the log: its outputs, summary,
/// GITHUB_ENV, GITHUB_PATH and the events file.
fn beyond_the_log(run: &ActionRun) -> String {
    let events = run
        .outputs
        .get("events-file")
        .and_then(|path| std::fs::read_to_string(path).ok())
        .unwrap_or_default();
    let outputs: Vec<&String> = run.outputs.values().collect();
    format!(
        "{outputs:?}\n{}\n{}\n{}\n{events}",
        run.summary, run.env, run.path
    )
}

/// The log's lines (both streams) that hold `text`.
fn log_lines_with(run: &ActionRun, text: &str) -> Vec<String> {
    format!("{}\n{}", stdout(&run.output), stderr(&run.output))
        .lines()
        .filter(|line| line.contains(text))
        .map(str::to_owned)
        .collect()
}

/// The action's run step on `provider` against `server`, with `inputs`.
fn keyed_run(
    ws: &Workspace,
    server: &HostileServer,
    provider: &str,
    inputs: &[(&str, &str)],
) -> ActionRun {
    let args = format!("--base-url {} -t 30s --max-turns 1", server.url());
    let mut env = vec![
        ("INPUT_PROMPT", "hi"),
        ("INPUT_PROVIDER", provider),
        ("INPUT_ARGS", args.as_str()),
    ];
    env.extend_from_slice(inputs);
    run_action(ws, &env)
}

#[test]
fn a_key_input_reaches_leash_masked_and_nowhere_else() {
    let ws = Workspace::new();
    for (input, provider, header, prefix) in [
        ("INPUT_OPENAI_API_KEY", "openai", "authorization", "Bearer "),
        ("INPUT_ANTHROPIC_API_KEY", "anthropic", "x-api-key", ""),
        // claude-code-action's spelling, as a copied workflow sends it.
        (
            "INPUT_ANTHROPIC_API_KEY_ALIAS",
            "anthropic",
            "x-api-key",
            "",
        ),
    ] {
        let key = format!("sk-{provider}-input-key-0123456789");
        let server = recorder();
        let run = keyed_run(&ws, &server, provider, &[(input, &key)]);
        // The request was made with the key: leash had it.
        assert_eq!(
            run.output.status.code(),
            Some(1),
            "{input}: {:?}",
            run.output
        );
        assert_eq!(sent(&server, header), [format!("{prefix}{key}")], "{input}");
        // The first thing the step printed is the mask, and the key is in
        // no other line of the log and nowhere else the step wrote.
        assert_eq!(
            run.commands().first().map(String::as_str),
            Some(format!("::add-mask::{key}").as_str()),
            "{input}"
        );
        assert_eq!(
            log_lines_with(&run, &key),
            [format!("::add-mask::{key}")],
            "{input}"
        );
        assert!(!beyond_the_log(&run).contains(&key), "{input}");
        assert_eq!(
            run.errors(),
            ["::error title=leash exited 1::leash: provider error: HTTP 400 Bad Request: recorded"],
            "{input}"
        );
    }
}

#[test]
fn the_steps_env_still_works_and_an_input_beats_it_with_a_notice() {
    let ws = Workspace::new();
    let (from_env, from_input) = ("sk-from-the-steps-env-000", "sk-from-the-input-111");

    let server = recorder();
    let run = keyed_run(&ws, &server, "openai", &[("OPENAI_API_KEY", from_env)]);
    assert_eq!(run.output.status.code(), Some(1), "{:?}", run.output);
    assert_eq!(
        sent(&server, "authorization"),
        [format!("Bearer {from_env}")]
    );
    assert_eq!(
        log_lines_with(&run, from_env),
        [format!("::add-mask::{from_env}")]
    );

    // A blank input (a secret that is not set is empty) is no key: the
    // step's env stands, and no blank is masked.
    let server = recorder();
    let run = keyed_run(
        &ws,
        &server,
        "openai",
        &[
            ("OPENAI_API_KEY", from_env),
            ("INPUT_OPENAI_API_KEY", " \n"),
        ],
    );
    assert_eq!(run.output.status.code(), Some(1), "{:?}", run.output);
    assert_eq!(
        sent(&server, "authorization"),
        [format!("Bearer {from_env}")]
    );
    let commands = run.commands();
    assert_eq!(commands[0], format!("::add-mask::{from_env}"));
    assert!(
        commands[1..].iter().all(|c| c.starts_with("::error")),
        "{commands:?}"
    );

    let server = recorder();
    let run = keyed_run(
        &ws,
        &server,
        "openai",
        &[
            ("OPENAI_API_KEY", from_env),
            ("INPUT_OPENAI_API_KEY", from_input),
        ],
    );
    assert_eq!(run.output.status.code(), Some(1), "{:?}", run.output);
    assert_eq!(
        sent(&server, "authorization"),
        [format!("Bearer {from_input}")]
    );
    let commands = run.commands();
    assert_eq!(
        commands[..3],
        [
            format!("::add-mask::{from_env}"),
            format!("::add-mask::{from_input}"),
            "::notice::leash action: the openai-api-key input replaces OPENAI_API_KEY from the step's env"
                .to_owned(),
        ],
        "{commands:?}"
    );
    for key in [from_env, from_input] {
        assert_eq!(log_lines_with(&run, key).len(), 1, "{key}");
        assert!(!beyond_the_log(&run).contains(key), "{key}");
    }
}

#[test]
fn the_two_anthropic_spellings_must_agree() {
    let ws = Workspace::new();
    let server = recorder();
    let same = "sk-ant-same-key-2222";
    let run = keyed_run(
        &ws,
        &server,
        "anthropic",
        &[
            ("INPUT_ANTHROPIC_API_KEY", same),
            ("INPUT_ANTHROPIC_API_KEY_ALIAS", same),
        ],
    );
    assert_eq!(run.output.status.code(), Some(1), "{:?}", run.output);
    assert_eq!(sent(&server, "x-api-key"), [same]);

    let run = keyed_run(
        &ws,
        &server,
        "anthropic",
        &[
            ("INPUT_ANTHROPIC_API_KEY", "sk-ant-one-3333"),
            ("INPUT_ANTHROPIC_API_KEY_ALIAS", "sk-ant-two-4444"),
        ],
    );
    assert_eq!(run.output.status.code(), Some(2), "{:?}", run.output);
    assert_eq!(
        run.errors(),
        [
            "::error::leash action: anthropic-api-key and anthropic_api_key hold different keys; set one of them"
        ]
    );
    assert_eq!(server.connections(), 1, "no second run");
    for key in ["sk-ant-one-3333", "sk-ant-two-4444"] {
        assert_eq!(
            log_lines_with(&run, key),
            [format!("::add-mask::{key}")],
            "{key}"
        );
    }
}

#[test]
fn a_key_with_a_line_break_is_masked_line_by_line_and_refused() {
    let ws = Workspace::new();
    let server = recorder();
    let key = "sk-first-line-5555\r\nsk-second-line-6666%0A";
    let run = keyed_run(&ws, &server, "openai", &[("INPUT_OPENAI_API_KEY", key)]);
    // leash refuses a key holding a control character (exit 2), naming
    // the character, never the key.
    assert_eq!(run.output.status.code(), Some(2), "{:?}", run.output);
    assert_eq!(server.connections(), 0);
    let commands = run.commands();
    assert_eq!(
        commands[..3],
        [
            "::add-mask::sk-first-line-5555%0D%0Ask-second-line-6666%250A",
            "::add-mask::sk-first-line-5555",
            "::add-mask::sk-second-line-6666%250A",
        ],
        "{commands:?}"
    );
    for part in ["sk-first-line-5555", "sk-second-line-6666"] {
        let lines = log_lines_with(&run, part);
        assert!(
            lines.iter().all(|line| line.starts_with("::add-mask::")),
            "{lines:?}"
        );
        assert!(!beyond_the_log(&run).contains(part), "{part}");
    }
    let errors = run.errors();
    assert_eq!(errors.len(), 1, "{errors:?}");
    assert!(
        errors[0].contains("holds a control character (U+000D)"),
        "{errors:?}"
    );
}

#[test]
fn a_missing_key_in_an_action_names_the_steps_env_and_the_input() {
    let ws = Workspace::new();
    for (provider, var, input) in [
        ("openai", "OPENAI_API_KEY", "openai-api-key"),
        ("anthropic", "ANTHROPIC_API_KEY", "anthropic-api-key"),
    ] {
        let run = run_action(
            &ws,
            &[
                ("INPUT_PROMPT", "hi"),
                ("INPUT_PROVIDER", provider),
                ("GITHUB_ACTIONS", "true"),
            ],
        );
        assert_eq!(run.output.status.code(), Some(2), "{:?}", run.output);
        assert_eq!(
            run.errors(),
            [format!(
                "::error title=leash exited 2::leash: {var} is not set (needed by --provider {provider}); \
                 in GitHub Actions set it in the step's env: ({var}: ${{{{ secrets.{var} }}}}) \
                 or in the leash Action's {input} input, \
                 or try leash offline without a key: leash --provider faux \"hi\""
            )]
        );
        assert!(!run.summary.contains(".env"), "{}", run.summary);
    }
}

/// Every key variable leash names in `leash --help`, but the one for any
/// provider (LEASH_API_KEY).
fn provider_key_variables() -> Vec<String> {
    let ws = Workspace::new();
    let help = ws.leash().arg("--help").output().unwrap();
    let help = String::from_utf8(help.stdout).unwrap().replace('\n', " ");
    let start = help
        .find("keys in ")
        .expect("--help names the key variables")
        + 8;
    let list = &help[start..start + help[start..].find(';').unwrap()];
    list.split(',')
        .map(str::trim)
        .filter(|name| *name != "LEASH_API_KEY")
        .map(str::to_owned)
        .collect()
}

#[test]
fn every_providers_key_has_the_input_the_missing_key_error_names() {
    let variables = provider_key_variables();
    assert!(
        variables.contains(&"OPENAI_API_KEY".to_owned()),
        "{variables:?}"
    );
    let action = std::fs::read_to_string(repo_file("action.yml")).unwrap();
    let lib = std::fs::read_to_string(repo_file("action/lib.sh")).unwrap();
    for var in variables {
        // The input is the variable as the config file spells it.
        let input = var.to_ascii_lowercase().replace('_', "-");
        assert!(
            action.contains(&format!("\n  {input}:\n")),
            "action.yml has no input {input} for {var}"
        );
        assert!(
            action.contains(&format!("INPUT_{var}: ${{{{ inputs.{input} }}}}")),
            "action.yml does not map the input {input} to INPUT_{var}"
        );
        assert!(
            lib.contains(&format!("mask \"${{{var}:-}}\""))
                && lib.contains(&format!("take_key {var} {input} ")),
            "action/lib.sh does not mask {var} or take the input {input}"
        );
    }
}

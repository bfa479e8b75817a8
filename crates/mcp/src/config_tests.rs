//! MCP server specs from the config file and the flags.

use super::*;

fn vars(name: &str) -> Option<String> {
    (name == "TOKEN").then(|| "t0k".to_owned())
}

fn file(text: &str) -> Result<Vec<ServerSpec>, McpConfigError> {
    parse_file(Path::new("/c/mcp.json"), text, &vars)
}

#[test]
fn both_kinds_of_entry_parse_and_variables_expand() {
    let specs = file(
        r#"{"mcpServers": {
            "fs": {"command": "npx", "args": ["-y", "server", "${HOME:-/h}"], "env": {"A": "${TOKEN}"}},
            "gh": {"type": "http", "url": "https://example.test/mcp", "headers": {"Authorization": "Bearer ${TOKEN}"}}
        }}"#,
    )
    .unwrap();
    assert_eq!(specs.len(), 2);
    assert_eq!(
        specs[0].transport,
        Transport::Stdio {
            command: "npx".into(),
            args: vec!["-y".into(), "server".into(), "/h".into()],
            env: BTreeMap::from([("A".into(), "t0k".into())]),
        }
    );
    assert_eq!(specs[1].name, "gh");
    assert_eq!(
        specs[1].transport.summary(),
        "http: https://example.test/mcp (headers: Authorization)"
    );
    assert!(!specs[1].transport.summary().contains("t0k"));
}

#[test]
fn a_bad_entry_names_the_file_and_the_server() {
    let cases = [
        (
            r#"{"mcpServers": {"a": {}}}"#,
            "server 'a': needs \"command\"",
        ),
        (
            r#"{"mcpServers": {"a": {"command": "x", "url": "http://h"}}}"#,
            "not both",
        ),
        (
            r#"{"mcpServers": {"a": {"command": "x", "cwd": "/"}}}"#,
            "unknown key \"cwd\"",
        ),
        (
            r#"{"mcpServers": {"a": {"url": "ftp://h"}}}"#,
            "http:// or https://",
        ),
        (
            r#"{"mcpServers": {"a": {"url": "http://h", "type": "sse"}}}"#,
            "SSE",
        ),
        (
            r#"{"mcpServers": {"a": {"command": "x", "env": {"K": "${NOPE}"}}}}"#,
            "${NOPE} is not set",
        ),
        (r#"{"mcpServers": {"a b": {"command": "x"}}}"#, "holds ' '"),
        (r#"{"mcpServers": {"a__b": {"command": "x"}}}"#, "separator"),
        (r#"{"servers": {}}"#, "no \"mcpServers\""),
        ("[1", "not JSON"),
    ];
    for (text, expected) in cases {
        let error = file(text).unwrap_err().to_string();
        assert!(error.starts_with("--mcp-config /c/mcp.json: "), "{error}");
        assert!(error.contains(expected), "{text}: {error}");
    }
}

#[test]
fn a_flag_is_split_like_a_shell_line_without_a_shell() {
    let spec = parse_flag("fs=node 'my server.mjs' --root \"$HOME\" ${TOKEN}", &vars).unwrap();
    assert_eq!(
        spec.transport,
        Transport::Stdio {
            command: "node".into(),
            args: vec![
                "my server.mjs".into(),
                "--root".into(),
                "$HOME".into(),
                "t0k".into()
            ],
            env: BTreeMap::new(),
        }
    );
    for (value, expected) in [
        ("fs", "NAME=COMMAND"),
        ("fs=", "no command"),
        ("fs=node 'open", "unclosed quote"),
        ("=node", "empty"),
    ] {
        let error = parse_flag(value, &vars).unwrap_err().to_string();
        assert!(error.contains(expected), "{value}: {error}");
    }
}

#[test]
fn a_name_given_twice_is_refused() {
    let a = parse_flag("a=x", &vars).unwrap();
    let error = merge(vec![a.clone()], vec![a]).unwrap_err().to_string();
    assert!(error.contains("'a' is named twice"), "{error}");
}

#[test]
fn expansion_leaves_a_bare_dollar_alone() {
    assert_eq!(expand("a$b${TOKEN}c", &vars).unwrap(), "a$bt0kc");
    assert!(expand("${TOKEN", &vars).is_err());
    assert!(expand("${A-B}", &vars).is_err());
}

//! `--deny-tool` and `--allow-tool` (docs/src/hooks.md "Hooks"): the stock reason,
//! patterns judged on the normalised path and on where a symlink leads, a
//! replacement that cannot slip past a deny, and the manual's PEM recipes.

use super::*;

#[test]
fn deny_and_allow_patterns_block_with_a_stock_reason() {
    let ws = Workspace::new();
    ws.write("root/keys/server.pem", "-----BEGIN PRIVATE KEY-----\n");
    let (output, _) = faux_run(
        &ws,
        calls_then_done(vec![
            call("read_file", json!({"path": "keys/server.pem"})),
            call("read_file", json!({"path": "sample.ts"})),
            call("list_dir", json!({"path": "keys"})),
        ]),
        &[
            "--deny-tool",
            "read_file(path=**/*.pem)",
            "--deny-tool",
            "list_*",
        ],
    );
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let ends = tool_ends(&output);
    assert_eq!(
        ends[0],
        (
            "blocked: this call of read_file is denied by --deny-tool read_file(path=**/*.pem); \
             do not retry it"
                .to_owned(),
            true
        )
    );
    assert!(!ends[1].1 && ends[1].0.contains("first"));
    assert!(ends[2].1 && ends[2].0.contains("--deny-tool list_*"));
    assert!(!stderr(&output).contains("BEGIN PRIVATE KEY"));

    let (output, _) = faux_run(
        &ws,
        calls_then_done(vec![
            call("read_file", json!({"path": "sample.ts"})),
            call("list_dir", json!({})),
        ]),
        &["--allow-tool", "list_dir"],
    );
    let ends = tool_ends(&output);
    assert!(
        ends[0].1
            && ends[0]
                .0
                .contains("matches no --allow-tool pattern (allowed: list_dir)")
    );
    assert!(!ends[1].1);
}

/// The manual's deny recipe judges the path the tool will open, not its
/// spelling: every other way to write a denied path (`./`, a trailing
/// `/`, `//`, `/./`, the absolute path inside the root) is denied too,
/// and an allow pattern lets a spelled-out allowed path through.
#[test]
fn patterns_judge_the_normalised_path_so_no_spelling_bypasses_them() {
    let ws = Workspace::new();
    ws.write("root/keys/server.pem", "-----BEGIN PRIVATE KEY-----\n");
    ws.write("root/x.pem", "-----BEGIN PRIVATE KEY-----\n");
    ws.write("root/secret/s.txt", "TOP-SECRET-TEXT\n");
    ws.write("root/docs/a.md", "docs\n");
    let root = ws.path("root").display().to_string();
    let denied = [
        "x.pem/".to_owned(),
        "./x.pem".to_owned(),
        "keys//server.pem".to_owned(),
        "keys/./server.pem".to_owned(),
        "./keys/server.pem/".to_owned(),
        format!("{root}/keys/server.pem"),
        format!("{root}//x.pem"),
        "./secret/s.txt".to_owned(),
        "secret//s.txt".to_owned(),
        "secret/./s.txt".to_owned(),
        "secret/s.txt/".to_owned(),
        "./secret/./s.txt".to_owned(),
        format!("{root}/secret/s.txt"),
        format!("{root}/./secret/s.txt"),
    ];
    let mut calls: Vec<Value> = denied
        .iter()
        .map(|path| call("read_file", json!({"path": path})))
        .collect();
    calls.push(call("read_file", json!({"path": "./sample.ts"})));
    calls.push(call(
        "read_file",
        json!({"path": format!("{root}/sample.ts")}),
    ));
    let (output, _) = faux_run(
        &ws,
        calls_then_done(calls),
        &[
            "--deny-tool",
            "read_file(path=**/*.pem)",
            "--deny-tool",
            "read_file(path=secret/**)",
        ],
    );
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let ends = tool_ends(&output);
    assert_eq!(ends.len(), denied.len() + 2);
    for (path, (text, is_error)) in denied.iter().zip(&ends) {
        assert!(
            *is_error && text.contains("is denied by --deny-tool read_file(path="),
            "{path} was not denied: {text}"
        );
    }
    for (text, is_error) in &ends[denied.len()..] {
        assert!(!is_error && text.contains("first"), "{text}");
    }
    let err = stderr(&output);
    assert!(!err.contains("BEGIN PRIVATE KEY") && !err.contains("TOP-SECRET"));

    // Allow patterns see the same normalised path.
    let (output, _) = faux_run(
        &ws,
        calls_then_done(vec![
            call("read_file", json!({"path": "./docs//a.md"})),
            call("read_file", json!({"path": format!("{root}/docs/a.md")})),
            call("read_file", json!({"path": "docs/../secret/s.txt"})),
            call("list_dir", json!({"path": "docs/"})),
        ]),
        &[
            "--allow-tool",
            "read_file(path=docs/**)",
            "--allow-tool",
            "list_dir(path=docs)",
        ],
    );
    let ends = tool_ends(&output);
    assert!(!ends[0].1 && ends[0].0.contains("docs"), "{:?}", ends[0]);
    assert!(!ends[1].1 && ends[1].0.contains("docs"), "{:?}", ends[1]);
    assert!(ends[2].1, "{:?}", ends[2]);
    assert!(!ends[3].1, "{:?}", ends[3]);
    assert!(!stderr(&output).contains("TOP-SECRET"));
}

/// A checkout can plant a symlink inside the root that leads to what a
/// pattern guards: a pattern judges the file the link leads to.
#[test]
fn patterns_judge_where_a_planted_symlink_leads() {
    let ws = Workspace::new();
    ws.write("root/secret/s.txt", "TOP-SECRET-TEXT\n");
    ws.write("root/docs/a.md", "docs\n");
    std::os::unix::fs::symlink("../secret", ws.path("root/docs/notes")).unwrap();
    std::os::unix::fs::symlink("../secret/s.txt", ws.path("root/docs/key.md")).unwrap();
    let through_links = [
        call("read_file", json!({"path": "docs/notes/s.txt"})),
        call("read_file", json!({"path": "docs/key.md"})),
        call("grep", json!({"pattern": "SECRET", "path": "docs/notes"})),
    ];
    let mut calls = through_links.to_vec();
    calls.push(call("read_file", json!({"path": "docs/a.md"})));
    let (output, _) = faux_run(
        &ws,
        calls_then_done(calls),
        &[
            "--deny-tool",
            "read_file(path=secret/**)",
            "--deny-tool",
            "grep(path=secret)",
        ],
    );
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let ends = tool_ends(&output);
    for (text, is_error) in &ends[..through_links.len()] {
        assert!(
            *is_error && text.contains("is denied by --deny-tool"),
            "{text}"
        );
    }
    assert!(!ends[3].1 && ends[3].0.contains("docs"), "{:?}", ends[3]);
    assert!(!stderr(&output).contains("TOP-SECRET"));

    // An allow pattern on docs/ lets through only what lies in docs/.
    let (output, _) = faux_run(
        &ws,
        calls_then_done(vec![
            call("read_file", json!({"path": "docs/notes/s.txt"})),
            call("read_file", json!({"path": "docs/key.md"})),
            call("read_file", json!({"path": "docs/a.md"})),
        ]),
        &["--allow-tool", "read_file(path=docs/**)"],
    );
    let ends = tool_ends(&output);
    assert!(
        ends[0].1 && ends[0].0.contains("matches no --allow-tool"),
        "{:?}",
        ends[0]
    );
    assert!(
        ends[1].1 && ends[1].0.contains("matches no --allow-tool"),
        "{:?}",
        ends[1]
    );
    assert!(!ends[2].1, "{:?}", ends[2]);
    assert!(!stderr(&output).contains("TOP-SECRET"));
}

#[test]
fn a_replacement_cannot_slip_past_a_deny_pattern() {
    let ws = Workspace::new();
    ws.write("root/a.pem", "secret\n");
    let hook = sh_hook(
        &ws,
        "sneak.sh",
        "before-tool-call",
        r#"echo '{"arguments": {"path": "a.pem"}}'"#,
    );
    let (output, _) = faux_run(
        &ws,
        calls_then_done(vec![call("read_file", json!({"path": "sample.ts"}))]),
        &["--deny-tool", "read_file(path=**/*.pem)", "--hook", &hook],
    );
    let ends = tool_ends(&output);
    assert!(
        ends[0].1 && ends[0].0.contains("denied by --deny-tool"),
        "{ends:?}"
    );
}

use crate::support::docs::recipe;

#[test]
fn the_readme_pem_recipes_block_the_key_and_let_the_rest_through() {
    use crate::support::shell;
    let mut recipes = vec!["pem-deny"];
    if shell::has("python3") {
        recipes.push("pem-hook");
    }
    for name in recipes {
        let ws = shell::Workspace::new();
        ws.write("keys/server.pem", "-----BEGIN PRIVATE KEY-----\n");
        ws.write("tls.md", "TLS terminates at the proxy.\n");
        ws.write("policy.py", &recipe("pem-policy"));
        let script = ws.script(calls_then_done(vec![
            call("read_file", json!({"path": "keys/server.pem"})),
            call("read_file", json!({"path": "tls.md"})),
        ]));
        let output = ws
            .bash(&recipe(name))
            .env("LEASH_FAUX_SCRIPT", script)
            .env("LEASH_EVENTS", "jsonl")
            .output()
            .unwrap();
        assert_eq!(output.status.code(), Some(0), "{name}: {}", stderr(&output));
        let ends = tool_ends(&output);
        assert!(ends[0].1, "{name}: {ends:?}");
        assert!(!ends[0].0.contains("PRIVATE KEY"), "{name}: {ends:?}");
        assert!(
            !ends[1].1 && ends[1].0.contains("TLS terminates"),
            "{name}: {ends:?}"
        );
        assert!(!stderr(&output).contains("PRIVATE KEY"), "{name}");
    }
}

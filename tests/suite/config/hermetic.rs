//! Which config file a run reads (docs/src/configuration.md "Configuration"): `--config FILE`
//! (`LEASH_CONFIG`) instead of the default, `--no-config` for none, and
//! `--bare` for a hermetic run — flags and the real environment only, no
//! config file and no `.env` — each said by `leash config`.

use super::*;

/// A broken config file in the default place, and a broken `.env`.
fn broken_setup() -> (Workspace, std::path::PathBuf) {
    let ws = Workspace::new();
    let path = ws.config_file("max-turns = \"eight\"\n");
    std::fs::write(ws.path(".env"), "LEASH_ALLOW_WRITE=1\n").unwrap();
    (ws, path)
}

#[test]
fn a_broken_config_file_fails_the_run_unless_kept_out() {
    let (ws, path) = broken_setup();
    std::fs::remove_file(ws.path(".env")).unwrap();
    let run = |flags: &[&str], env: Option<(&str, &str)>| {
        let mut cmd = ws.faux(json!([{"text": "clean"}]));
        cmd.args(flags).args(["--no-stdin", "hi"]);
        if let Some((name, value)) = env {
            cmd.env(name, value);
        }
        cmd.output().unwrap()
    };
    let broken = run(&[], None);
    assert_eq!(code(&broken), 2);
    assert!(last_line(&broken).contains(&path.display().to_string()));
    for (flags, env) in [
        (&["--no-config"][..], None),
        (&["--bare"], None),
        (&[], Some(("LEASH_NO_CONFIG", "1"))),
        (&[], Some(("LEASH_BARE", "1"))),
    ] {
        let output = run(flags, env);
        assert_eq!(code(&output), 0, "{flags:?} {env:?}: {output:?}");
        assert_eq!(stdout(&output), "clean\n");
    }
}

#[test]
fn bare_also_keeps_the_dot_env_out_and_no_config_does_not() {
    let (ws, _) = broken_setup();
    // The `.env` sets a policy variable: refused when it is read.
    let output = ws
        .faux(json!([{"text": "clean"}]))
        .args(["--no-config", "--no-stdin", "hi"])
        .output()
        .unwrap();
    assert_eq!(code(&output), 2);
    assert!(
        last_line(&output).contains("LEASH_ALLOW_WRITE"),
        "{output:?}"
    );
    let output = ws
        .faux(json!([{"text": "clean"}]))
        .args(["--bare", "--no-stdin", "hi"])
        .output()
        .unwrap();
    assert_eq!(code(&output), 0, "{output:?}");
    assert_eq!(stdout(&output), "clean\n");
}

#[test]
fn config_names_another_file_which_must_exist() {
    let ws = Workspace::new();
    ws.config_file("max-turns = \"eight\"\n");
    let ci = ws.write("ci.toml", "max-turns = 9\n");
    let listing = ws
        .leash()
        .args(["config", "--provider", "faux", "--config"])
        .arg(&ci)
        .output()
        .unwrap();
    assert_eq!(code(&listing), 0, "{listing:?}");
    let text = stdout(&listing);
    assert!(
        text.contains(&format!("# config file: {} (--config)", ci.display())),
        "{text}"
    );
    assert!(text.contains("max-turns = 9"), "{text}");
    let missing = ws
        .leash()
        .args(["--provider", "faux", "--no-stdin", "hi"])
        .env("LEASH_CONFIG", ws.path("none.toml"))
        .output()
        .unwrap();
    assert_eq!(code(&missing), 2);
    assert!(
        last_line(&missing).contains("none.toml (--config / LEASH_CONFIG) does not exist"),
        "{}",
        last_line(&missing)
    );
}

#[test]
fn leash_config_says_which_layers_were_skipped_and_why() {
    let (ws, _) = broken_setup();
    let show = |flags: &[&str]| {
        let output = ws
            .leash()
            .arg("config")
            .args(["--provider", "faux"])
            .args(flags)
            .output()
            .unwrap();
        (code(&output), stdout(&output))
    };
    let (status, text) = show(&["--bare"]);
    assert_eq!(status, 0, "{text}");
    assert!(
        text.contains("# config file: skipped (--bare: flags and the real environment only)"),
        "{text}"
    );
    assert!(
        text.contains("# .env: not read (--bare: flags and the real environment only)"),
        "{text}"
    );
    std::fs::remove_file(ws.path(".env")).unwrap();
    let (status, text) = show(&["--no-config"]);
    assert_eq!(status, 0, "{text}");
    assert!(
        text.contains("# config file: skipped (--no-config)"),
        "{text}"
    );
}

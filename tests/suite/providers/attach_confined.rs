//! `--attach` held to the file tools' rules (docs/src/resume.md "Attachments"): a
//! link a test run left in `test-results/` to a dotenv file, a private
//! key or `.git/config`, a link out of the directory named, and a
//! directory of the checkout linked out of it are refused before any
//! request; a file the operator names outside the working directory is
//! sent.

#![allow(clippy::unwrap_used)] // a failed setup step should fail the test loudly

use std::os::unix::fs::symlink;

use wiremock::MockServer;

use crate::support::run::Run;
use crate::support::sse::{openai, request_bodies, serve_in_order};

const TOKEN: &str = "AUTHORIZATION: basic eC1hY2Nlc3MtdG9rZW46Z2hzX3NlY3JldA==";

#[tokio::test(flavor = "multi_thread")]
async fn links_to_secrets_or_out_of_their_directory_are_refused_before_any_request() {
    let server = MockServer::start().await;
    serve_in_order(
        &server,
        "/v1/chat/completions",
        vec![openai::text_reply(&["seen"])],
    )
    .await;
    let home = tempfile::tempdir().unwrap();
    let checkout = tempfile::tempdir().unwrap();
    let at = |name: &str| checkout.path().join(name);
    std::fs::create_dir_all(at(".git")).unwrap();
    std::fs::create_dir_all(at("test-results")).unwrap();
    std::fs::create_dir_all(home.path().join(".ssh")).unwrap();
    std::fs::write(
        at(".git/config"),
        format!("[http]\n\textraheader = {TOKEN}\n"),
    )
    .unwrap();
    std::fs::write(at(".env"), format!("NOTE={TOKEN}\n")).unwrap();
    let key = home.path().join(".ssh/id_ed25519");
    std::fs::write(&key, TOKEN).unwrap();
    std::fs::write(home.path().join("notes.txt"), TOKEN).unwrap();
    symlink("../.env", at("test-results/env.log")).unwrap();
    symlink("../.git/config", at("test-results/git.log")).unwrap();
    symlink(&key, at("test-results/key.log")).unwrap();
    symlink(home.path().join("notes.txt"), at("test-results/out.log")).unwrap();
    symlink(home.path(), at("linked-results")).unwrap();
    for (path, said) in [
        (
            "test-results/env.log",
            "it is a dotenv file, which holds secrets",
        ),
        ("test-results/git.log", "it is inside a .git directory"),
        (
            "test-results/key.log",
            "it is an SSH private key, which holds secrets",
        ),
        (
            "test-results/out.log",
            "a link on it leads out of the directory it names",
        ),
        (
            "linked-results/notes.txt",
            "is a link that leads out of the working directory",
        ),
    ] {
        let output = Run::openai(&server)
            .current_dir(checkout.path())
            .args(["--no-stdin", "--tools", "none", "--attach", path])
            .prompt("why does the test fail?")
            .output_async()
            .await;
        assert_eq!(output.code(), Some(2), "{path}: {}", output.stderr());
        let last = output.last_line();
        assert!(
            last.starts_with(&format!("leash: --attach {path}: ")) && last.contains(said),
            "{path}: {last}"
        );
        assert!(!output.stderr().contains(TOKEN) && !output.stdout().contains(TOKEN));
    }
    assert!(
        request_bodies(&server).await.is_empty(),
        "something was sent"
    );
    // The operator's own path outside the working directory is sent.
    let typed = home.path().join("notes.txt");
    let output = Run::openai(&server)
        .current_dir(checkout.path())
        .args(["--no-stdin", "--tools", "none", "--attach"])
        .arg(&typed)
        .prompt("read it")
        .output_async()
        .await;
    assert_eq!(output.code(), Some(0), "{}", output.stderr());
    assert_eq!(request_bodies(&server).await.len(), 1);
}

//! `--output-last-message` (docs/src/usage.md "Usage"): the file holds the reply,
//! and only after a success.

use crate::support::run::{code, stderr, stdout};
use crate::support::shell;

use serde_json::{Value, json};
use shell::Workspace;

#[test]
fn the_last_message_file_holds_the_reply_and_only_after_success() {
    let ws = Workspace::new();
    let file = ws.write("answer.md", "a stale answer from yesterday\n");
    let output = ws
        .faux(json!([{"text": "Fresh answer."}]))
        .arg("--output-last-message")
        .arg(&file)
        .args(["--output", "json", "hi"])
        .output()
        .unwrap();
    assert_eq!(code(&output), 0);
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "Fresh answer.\n");
    let result: Value = serde_json::from_str(&stdout(&output)).unwrap();
    assert_eq!(result["reply"], "Fresh answer.");

    std::fs::write(&file, "stale\n").unwrap();
    let output = ws
        .faux(json!([{"text": "half", "error": "boom"}]))
        .env("LEASH_OUTPUT_LAST_MESSAGE", &file)
        .arg("hi")
        .output()
        .unwrap();
    assert_eq!(code(&output), 1);
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "");

    let output = ws
        .faux(json!([{"text": "never"}]))
        .args(["--output-last-message", "no/such/dir/answer.md", "hi"])
        .output()
        .unwrap();
    assert_eq!(code(&output), 2);
    assert!(
        stderr(&output)
            .lines()
            .last()
            .unwrap()
            .starts_with("leash: cannot write --output-last-message no/such/dir/answer.md: "),
        "{output:?}"
    );
}

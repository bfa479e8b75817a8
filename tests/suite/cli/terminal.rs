//! Terminal manners (docs/src/shells.md "Terminal manners"): a piped stderr gets no colour, no
//! progress indicator and no streamed text.

use crate::support::run::{code, stderr, stdout};
use crate::support::shell;

use serde_json::json;
use shell::{Workspace, tool_call};

#[test]
fn a_piped_stderr_gets_no_colour_no_indicator_and_no_stream() {
    let ws = Workspace::new();
    let script = json!([
        {"text": "Looking.", "toolCalls": [tool_call("read_file", json!({"path": "missing"}))], "delayMs": 50},
        {"text": "A streamed answer.", "error": "then it broke", "chunkDelayMs": 10}
    ]);
    let plain = ws.faux(script.clone()).arg("hi").output().unwrap();
    assert_eq!(code(&plain), 1);
    let text = stderr(&plain);
    assert!(!text.contains('\u{1b}') && !text.contains('\r'), "{text:?}");
    // --stream and --color auto change nothing on a pipe, nor do NO_COLOR or TERM.
    for args in [
        vec!["--stream"],
        vec!["--color", "auto"],
        vec!["--color", "never"],
    ] {
        let output = ws
            .faux(script.clone())
            .args(&args)
            .env("TERM", "xterm-256color")
            .arg("hi")
            .output()
            .unwrap();
        let other = stderr(&output);
        // Durations vary: `12ms`, `3 ms`, `(3 ms)`.
        let strip = |s: &str| {
            let words: Vec<&str> = s.split_whitespace().collect();
            words
                .iter()
                .enumerate()
                .filter(|(i, word)| {
                    let number = word
                        .trim_start_matches('(')
                        .starts_with(|c: char| c.is_ascii_digit());
                    let unit = words.get(i + 1).is_some_and(|next| next.starts_with("ms"));
                    !(number && (unit || word.contains("ms")))
                })
                .map(|(_, word)| *word)
                .collect::<Vec<_>>()
                .join(" ")
        };
        assert_eq!(strip(&other), strip(&text), "{args:?}");
    }
    // --color always colours even a pipe, and even with NO_COLOR set.
    let output = ws
        .faux(script)
        .args(["--color", "always", "hi"])
        .env("NO_COLOR", "1")
        .output()
        .unwrap();
    let coloured = stderr(&output);
    assert!(coloured.contains("\u{1b}["), "{coloured:?}");
    assert!(coloured.lines().last().unwrap().contains("leash: "));
    // Stdout holds the reply alone in every case (here: nothing, it failed).
    assert_eq!(stdout(&output), "");
}

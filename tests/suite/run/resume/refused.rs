//! Transcripts `--resume` refuses: cut, re-versioned, unanswered,
//! smuggled, doubled, garbled or headless, each a usage error naming its
//! line with no request sent (docs/src/resume.md "Resume").

use super::*;

/// A faux step that read a file and replied, as transcript lines.
fn faux_transcript(steps: &Steps) -> Vec<String> {
    let script = json!([
        {"toolCalls": [{"id": "call_1", "name": "read_file", "arguments": {"path": "bug.txt"}}]},
        {"text": "found it"}
    ]);
    let t = steps.path("t.jsonl");
    json_of(&step(
        Run::faux(script),
        steps,
        &[Path::new("--transcript"), &t],
        "find",
    ));
    let text = std::fs::read_to_string(&t).unwrap();
    text.lines().map(str::to_owned).collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_corrupted_transcript_is_a_usage_error_naming_its_line() {
    let steps = Steps::new();
    let good = faux_transcript(&steps);
    assert_eq!(good.len(), 5, "{good:?}");
    let joined = |lines: &[String]| lines.iter().map(|l| format!("{l}\n")).collect::<String>();
    let mut version = good.clone();
    version[0] = version[0].replace("\"schemaVersion\":1", "\"schemaVersion\":2");
    let mut unanswered = good.clone();
    unanswered.remove(3);
    let mut smuggled = good.clone();
    smuggled.push(good[3].replace("call_1", "call_9"));
    let mut twice = good.clone();
    twice.insert(4, good[3].clone());
    let mut garbage = good.clone();
    garbage[2] = "{\"role\":\"assistant\",".to_owned();
    let cases = [
        (
            "cut",
            good[0][..20].to_owned(),
            "line 1: the only line is cut off",
        ),
        ("version", joined(&version), "line 1: schema version 2"),
        (
            "unanswered",
            joined(&unanswered),
            "line 3: tool call \"call_1\" (read_file) has no tool result",
        ),
        (
            "smuggled",
            joined(&smuggled),
            "line 6: a tool result for \"call_9\"",
        ),
        (
            "twice",
            joined(&twice),
            "line 5: a tool result for \"call_1\"",
        ),
        ("garbage", joined(&garbage), "line 3: not a transcript line"),
        ("headless", joined(&good[1..]), "line 1: no session line"),
    ];
    let server = MockServer::start().await;
    serve_in_order(
        &server,
        "/v1/chat/completions",
        vec![openai::text_reply(&["no"])],
    )
    .await;
    for (name, text, expected) in cases {
        let bad = steps.path(&format!("{name}.jsonl"));
        std::fs::write(&bad, text).unwrap();
        let outcome = step(
            Run::openai(&server),
            &steps,
            &[Path::new("--resume"), &bad],
            "fix it",
        );
        assert_eq!(outcome.code(), Some(2), "{name}: {}", outcome.stderr());
        let last = usage_message(&outcome);
        assert!(
            last.contains("--resume") && last.contains(expected),
            "{name}: {last}"
        );
        assert_eq!(last.lines().count(), 1);
    }
    assert!(
        request_bodies(&server).await.is_empty(),
        "a request was sent"
    );
    // The good one resumes on another wire (faux carries no thinking).
    let t = steps.path("t.jsonl");
    let resumed = json_of(&step(
        Run::openai(&server),
        &steps,
        &[Path::new("--resume"), &t],
        "fix it",
    ));
    assert_eq!(resumed["restoredTurns"], 2);
    assert_eq!(request_bodies(&server).await.len(), 1);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_bad_transcript_is_reported_before_a_missing_key() {
    // The command line's own problem first: the key only the environment
    // fixes comes last (docs/src/configuration.md "Configuration").
    let steps = Steps::new();
    let good = faux_transcript(&steps);
    let cut = steps.path("cut.jsonl");
    std::fs::write(&cut, &good[0][..20]).unwrap();
    let server = MockServer::start().await;
    for run in [Run::openai(&server), Run::anthropic(&server)] {
        let outcome = step(run.no_key(), &steps, &[Path::new("--resume"), &cut], "fix");
        assert_eq!(outcome.code(), Some(2), "{}", outcome.stderr());
        let last = usage_message(&outcome);
        assert!(
            last.contains("line 1: the only line is cut off") && !last.contains("API_KEY"),
            "{last}"
        );
    }
}

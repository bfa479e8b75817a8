//! No panic, ever (docs/src/security.md "Security and limits"): extreme and malformed flags, hostile faux
//! scripts, and a replay of every input the fuzz targets crashed on
//! (`fuzz/regressions/<target>/`), each through the same path as its
//! target. The fuzz targets themselves run in `make fuzz` only.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::support::hostile;
use crate::support::run::{last_line, stderr};

use std::path::{Path, PathBuf};
use std::sync::Mutex;

use futures::StreamExt;
use hostile::*;
use leash_agent::assistant_stream::stream_assistant_response;
use leash_agent::types::AgentEvent;
use leash_protocol::StopReason;
use leash_protocol::StreamEvent;
use leash_provider::sse;
use leash_provider::{Provider, Request};
use serde_json::json;
use tokio_util::sync::CancellationToken;

// ------------------------------------------------------------ flags

#[test]
fn extreme_and_malformed_flags_never_panic() {
    let ws = Workspace::new();
    let script = ws.script(json!([{"text": "fine"}]));
    let script = script.to_str().unwrap();
    let cases: Vec<Vec<&str>> = vec![
        vec!["--timeout", "18446744073709551615"],
        vec!["--timeout", "99999999999999999999"],
        vec!["--timeout", "584942417355y"],
        vec!["--timeout", "-1"],
        vec!["--timeout", "1e400"],
        vec!["--timeout", ""],
        vec!["--timeout", "0"],
        vec!["--timeout", "1ns"],
        vec!["--max-turns", "0"],
        vec!["--max-turns", "4294967296"],
        vec!["--max-turns", "4294967295"],
        vec!["--max-same-call", "4294967295"],
        vec!["--max-same-call", "0"],
        vec!["--retries", "4294967295"],
        vec!["--max-tokens", "0"],
        vec!["--max-tokens", "-5"],
        vec!["--temperature", "NaN"],
        vec!["--temperature", "inf"],
        vec!["--temperature", "-1e39"],
        vec!["--tools", ""],
        vec!["--tools", ",,,"],
        vec!["--tools", "read_file,read_file"],
        vec!["--tools", "rm"],
        vec!["--root", ""],
        vec!["--root", "/nonexistent/dir"],
        vec!["--root", "/dev/null"],
        vec!["--transcript", "/"],
        vec!["--transcript", "/nonexistent/dir/t.jsonl"],
        vec!["--system-file", "/dev/null"],
        vec!["--system-file", "/"],
        vec!["--system-file", "/nonexistent"],
        vec!["--events", "bogus"],
        vec!["--output", "bogus"],
        vec!["--follow-up", ""],
        vec!["--tool-execution", "both"],
        vec!["--stdin", "--no-stdin"],
        vec!["--provider", "bogus"],
    ];
    for args in cases {
        let (output, _) = run(ws
            .leash()
            .args(["--provider", "faux", "--faux-script", script])
            .args(&args)
            .arg("go"));
        assert_calm(&output);
        let code = output.status.code().unwrap();
        assert!(
            [0, 1, 2, 124].contains(&code),
            "{args:?}: exit {code}: {}",
            stderr(&output)
        );
    }
    // Base URLs for the HTTP providers, and arguments that are not UTF-8.
    for url in [
        "http://[::1",
        "",
        "ftp://127.0.0.1/",
        "http://127.0.0.1:0",
        "http://127.0.0.1:99999",
        "not a url",
    ] {
        for provider in ["openai", "anthropic"] {
            let (output, _) = run(ws.http(provider, url, "k").args(["--retries", "0", "go"]));
            assert_calm(&output);
            let code = output.status.code().unwrap();
            assert!([1, 2].contains(&code), "{provider} {url:?}: exit {code}");
        }
    }
    use std::os::unix::ffi::OsStrExt;
    let (output, _) = run(ws
        .leash()
        .arg("--model")
        .arg(std::ffi::OsStr::from_bytes(b"\xff\xfe"))
        .arg(std::ffi::OsStr::from_bytes(b"prompt \xff")));
    assert_calm(&output);
    assert_eq!(output.status.code(), Some(2));
}

// ------------------------------------------------------------ faux scripts

#[test]
fn hostile_faux_scripts_never_panic() {
    let ws = Workspace::new();
    let deep = "[".repeat(100_000);
    let scripts: Vec<(String, &[i32])> = vec![
        (deep, &[2]),
        ("".into(), &[2]),
        ("\u{feff}[]".into(), &[2]),
        ("[]".into(), &[1]),
        ("{}".into(), &[2]),
        ("null".into(), &[2]),
        ("[{\"text\": 1}]".into(), &[2]),
        ("[{\"delayMs\": -1}]".into(), &[2]),
        ("[{\"delayMs\": 18446744073709551616}]".into(), &[2]),
        (json!([{"text": "x", "usage": {"input": u64::MAX, "output": u64::MAX}}]).to_string(), &[0]),
        (json!([{"text": "x", "delayMs": u64::MAX}]).to_string(), &[124]),
        (json!([{"text": "a b", "chunkDelayMs": u64::MAX}]).to_string(), &[124]),
        (json!([{"toolCalls": [{"name": "read_file", "arguments": {"path": "sample.ts"}, "argumentsRaw": "{}"}]}]).to_string(), &[2]),
        (json!([{"toolCalls": [{"id": "", "name": ""}]}, {"text": "ok"}]).to_string(), &[0]),
        (json!([{"thinking": "\u{0}\u{1}", "text": "\u{7f} \u{10ffff}", "stop": "length"}]).to_string(), &[5]),
        (json!({"responses": [{"stop": "toolUse"}], "repeatLast": true}).to_string(), &[0, 3, 4]),
    ];
    for (text, codes) in scripts {
        let path = ws.write("s.json", &text);
        let (output, _) = run(ws
            .leash()
            .args(["--provider", "faux", "--timeout", "1s", "--faux-script"])
            .arg(&path)
            .arg("go"));
        assert_calm(&output);
        let code = output.status.code().unwrap();
        let shown: String = text.chars().take(80).collect();
        assert!(
            codes.contains(&code),
            "{shown}: exit {code}: {}",
            last_line(&output)
        );
    }
}

// ------------------------------------------------------------ fuzz regressions

/// The inputs a fuzz target crashed on, committed with the fix.
fn regressions(target: &str) -> Vec<(PathBuf, Vec<u8>)> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fuzz/regressions")
        .join(target);
    let mut found: Vec<_> = std::fs::read_dir(&dir)
        .map(|entries| {
            entries
                .flatten()
                .map(|entry| (entry.path(), std::fs::read(entry.path()).unwrap()))
                .collect()
        })
        .unwrap_or_default();
    found.sort();
    found
}

/// A provider that replays one prepared stream.
struct Replay(Mutex<Option<futures::stream::BoxStream<'static, StreamEvent>>>);

impl Provider for Replay {
    fn name(&self) -> &str {
        "replay"
    }
    fn stream(&self, _: Request<'_>) -> futures::stream::BoxStream<'static, StreamEvent> {
        self.0
            .lock()
            .unwrap()
            .take()
            .unwrap_or_else(|| futures::stream::empty().boxed())
    }
}

/// The stream targets' path: the first byte is the chunk size, the rest an
/// SSE body; decoded by `decode` and assembled as the loop does.
async fn replay_stream(
    data: &[u8],
    decode: fn(
        futures::stream::BoxStream<'static, Result<sse::SseEvent, sse::SseError>>,
    ) -> futures::stream::BoxStream<'static, StreamEvent>,
) -> StopReason {
    let (size, body) = data.split_first().unwrap();
    let chunks: Vec<Vec<u8>> = match size {
        0 => vec![body.to_vec()],
        n => body.chunks(usize::from(*n)).map(<[u8]>::to_vec).collect(),
    };
    let events = sse::from_bytes(
        futures::stream::iter(chunks.into_iter().map(Ok::<_, String>)),
        4096,
    );
    let provider = Replay(Mutex::new(Some(decode(events))));
    let request = Request {
        transcript: &[],
        model: "m",
        system: "",
        messages: &[],
        tools: &[],
        options: Default::default(),
    };
    let emit = |_: AgentEvent| {};
    stream_assistant_response(&provider, request, &CancellationToken::new(), &emit)
        .await
        .stop_reason
}

#[tokio::test]
async fn every_input_a_stream_fuzz_target_crashed_on_now_decodes() {
    let openai = regressions("openai_stream");
    assert!(!openai.is_empty(), "the committed regressions are found");
    for (path, data) in openai {
        let stop = replay_stream(&data, |events| leash_provider::openai::decode(events)).await;
        assert_ne!(stop, StopReason::Aborted, "{}", path.display());
    }
    for (path, data) in regressions("anthropic_stream") {
        let stop = replay_stream(&data, |events| leash_provider::anthropic::decode(events)).await;
        assert_ne!(stop, StopReason::Aborted, "{}", path.display());
    }
}

#[test]
fn every_script_the_faux_fuzz_target_crashed_on_now_plays() {
    let ws = Workspace::new();
    for (path, _) in regressions("faux_script") {
        let (output, _) = run(ws
            .leash()
            .args(["--provider", "faux", "--timeout", "2s", "--faux-script"])
            .arg(&path)
            .arg("go"));
        assert_calm(&output);
        assert!(output.status.code().is_some(), "{}", path.display());
    }
}

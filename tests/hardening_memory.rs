//! Bounded memory against hostile streams (docs/src/security.md "Security and limits"), measured as the peak
//! resident memory of the real binary: a 100 MB line, an endless stream of
//! keep-alives, an endless reply, and a huge reply that succeeds.
//!
//! The peak comes from `getrusage(RUSAGE_CHILDREN)`, the largest peak of
//! every child this process has waited for. So this file is a test binary
//! of its own (not in `all.rs`, whose other tests' children would count),
//! it holds one test, and that test runs its scenarios in order of growing
//! bound: a measurement can only overstate a later child, never let one
//! pass that went over.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use support::hostile::*;
use support::run::{last_line, stderr};
use support::sse::openai as openai_support;

const MIB: u64 = 1024;

/// Runs `cmd`, checks it ended calmly with one of `codes`, and returns the
/// peak RSS so far in KiB.
fn measured(cmd: &mut std::process::Command, codes: &[i32], what: &str) -> (u64, String) {
    let (output, _) = run(cmd);
    assert_calm(&output);
    let code = output.status.code().unwrap();
    assert!(
        codes.contains(&code),
        "{what}: exit {code}: {}",
        stderr(&output)
    );
    let peak = peak_rss_of_children_kib();
    eprintln!("{what}: exit {code}, peak RSS {} MiB", peak / MIB);
    (peak, last_line(&output))
}

/// `data: {text delta}\n\n` for a delta of `size` letters.
fn text_chunk(size: usize) -> Vec<u8> {
    let delta = openai_support::text(&"y".repeat(size));
    format!("data: {delta}\n\n").into_bytes()
}

#[test]
fn hostile_streams_stay_within_bounded_memory() {
    let base = |server: &HostileServer| format!("{}/v1", server.url());

    // A line of 100 MB, sent in pieces: the 16 MiB event cap stops it.
    let line = HostileServer::always(|_, conn| {
        if conn.head(200, "text/event-stream", &[]) && conn.send(b"data: ") {
            let piece = vec![b'x'; 64 * 1024];
            for _ in 0..1600 {
                if !conn.send(&piece) {
                    return;
                }
            }
        }
    });
    let ws = Workspace::new();
    let (peak, last) = measured(
        ws.http("openai", &base(&line), "k").arg("q"),
        &[1],
        "100 MB line",
    );
    assert!(last.contains("larger than 16 MiB"), "{last}");
    assert!(peak < 96 * MIB, "100 MB line: peak {} MiB", peak / MIB);

    // Keep-alives without end: the timer ends it, nothing accumulates.
    let keep_alive = HostileServer::always(|_, conn| {
        if conn.head(200, "text/event-stream", &[]) {
            conn.flood(b": keep-alive\n\n");
        }
    });
    let (peak, _) = measured(
        ws.http("openai", &base(&keep_alive), "k")
            .args(["--timeout", "1s", "q"]),
        &[124],
        "endless keep-alives",
    );
    assert!(peak < 96 * MIB, "keep-alives: peak {} MiB", peak / MIB);

    // A huge reply that succeeds: 8 MiB of text, streamed to stdout and
    // as JSON-line deltas to stderr, is held a bounded number of times.
    let reply_bytes: u64 = 8 * 1024 * 1024;
    let chunk = text_chunk(16 * 1024);
    let huge = HostileServer::always(move |_, conn| {
        if !conn.head(200, "text/event-stream", &[]) {
            return;
        }
        for _ in 0..(reply_bytes / (16 * 1024)) {
            if !conn.send(&chunk) {
                return;
            }
        }
        let end = openai_support::body(&[openai_support::finish("stop")], true);
        conn.send(end.as_bytes());
    });
    let dir = ws.path("out");
    std::fs::create_dir_all(&dir).unwrap();
    let (peak, _) = measured(
        ws.http("openai", &base(&huge), "k")
            .args(["--events", "jsonl", "--timeout", "60s", "q"])
            .stdout(std::fs::File::create(dir.join("stdout")).unwrap())
            .stderr(std::fs::File::create(dir.join("stderr")).unwrap()),
        &[0],
        "8 MiB reply",
    );
    let printed = std::fs::metadata(dir.join("stdout")).unwrap().len();
    assert_eq!(printed, reply_bytes + 1, "the whole reply and a newline");
    let reply_mib = reply_bytes / (1024 * 1024);
    assert!(
        peak < (8 * reply_mib + 64) * MIB,
        "8 MiB reply: peak {} MiB",
        peak / MIB
    );

    // A reply without end: the timer ends it (or the 64 MiB
    // response cap, on a fast machine).
    let chunk = text_chunk(16 * 1024);
    let endless = HostileServer::always(move |_, conn| {
        if conn.head(200, "text/event-stream", &[]) {
            conn.flood(&chunk);
        }
    });
    let (peak, last) = measured(
        ws.http("openai", &base(&endless), "k")
            .args(["--events", "none", "--timeout", "1s", "q"]),
        &[1, 124],
        "endless reply",
    );
    assert!(
        last.contains("larger than 64 MiB") || last.contains("timed out"),
        "{last}"
    );
    assert!(peak < 512 * MIB, "endless reply: peak {} MiB", peak / MIB);
}

//! `leash batch` of 10 000 items with traces and metrics on
//! (docs/src/tracing.md "Export: as spans end, bounded by the timeout"):
//! its peak RSS next to the same batch untraced, exported to a loopback
//! OTLP sink that answers every request 200 at once (a collector that
//! keeps up, so the row measures leash's queue, not a slow receiver). A
//! bar: the traced run stays within 8 MiB of the untraced one (the span
//! queue's bound, not the items, decides it), and drops no span.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use crate::fanout::{batch_args, ok_lines, write_input};
use crate::mock::{self, Mock, Reply};
use crate::table::{Row, Target};

/// Items in the batch.
const ITEMS: usize = 10_000;

/// The most the traced batch's peak RSS may exceed the untraced one's.
const EXTRA_MIB: f64 = 8.0;

/// A loopback OTLP/HTTP sink: reads each request and answers 200 with an
/// empty body; counts the requests. Runs until the bench exits.
fn sink() -> (String, Arc<AtomicU64>) {
    let listener = TcpListener::bind("127.0.0.1:0").expect("a loopback listener");
    let endpoint = format!("http://{}", listener.local_addr().expect("its address"));
    let requests = Arc::new(AtomicU64::new(0));
    let counted = Arc::clone(&requests);
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            let counted = Arc::clone(&counted);
            std::thread::spawn(move || {
                let mut writer = stream.try_clone().expect("the stream");
                let mut reader = BufReader::new(stream);
                loop {
                    let mut length = 0usize;
                    let mut line = String::new();
                    // The request line and headers, to the blank line.
                    loop {
                        line.clear();
                        if reader.read_line(&mut line).unwrap_or(0) == 0 {
                            return;
                        }
                        let lower = line.to_ascii_lowercase();
                        if let Some(value) = lower.strip_prefix("content-length:") {
                            length = value.trim().parse().unwrap_or(0);
                        }
                        if line == "\r\n" {
                            break;
                        }
                    }
                    let mut body = vec![0u8; length];
                    if reader.read_exact(&mut body).is_err() {
                        return;
                    }
                    counted.fetch_add(1, Ordering::Relaxed);
                    let answer = b"HTTP/1.1 200 OK\r\ncontent-type: application/x-protobuf\r\ncontent-length: 0\r\n\r\n";
                    if writer.write_all(answer).is_err() {
                        return;
                    }
                }
            });
        }
    });
    (endpoint, requests)
}

/// The rows: the traced batch's peak RSS, its extra over the untraced
/// one (a bar), its wall time and the spans it dropped (a bar: none).
pub fn traced_batch(
    runner: &crate::process::Runner,
    mock: &Mock,
    fixtures: &Path,
    rows: &mut Vec<Row>,
) {
    let dir = tempfile::tempdir().expect("a directory for the input");
    let input = write_input(dir.path(), "traced.jsonl", ITEMS);
    let (endpoint, requests) = sink();
    let run = |env: &[(&str, String)]| {
        mock.set_reply(Reply::Body(Arc::new(mock::text_body(20, "tok "))));
        let args = batch_args(
            mock,
            fixtures,
            &input,
            &["--parallel", "64", "--tools", "none"],
        );
        let run = runner.run_with(&args, env);
        run.expect_code(0, "a batch of 10 000 items");
        assert_eq!(ok_lines(&run.stdout), ITEMS, "every item ok");
        run
    };
    let untraced = run(&[]);
    let traced = run(&[("OTEL_EXPORTER_OTLP_ENDPOINT", endpoint)]);
    let stderr = String::from_utf8_lossy(&traced.stderr);
    // "traces: N spans were dropped: …" when the queue overflowed.
    let dropped: f64 = stderr
        .lines()
        .find_map(|line| {
            line.split("traces: ")
                .nth(1)?
                .split(" spans were dropped")
                .next()?
                .parse()
                .ok()
        })
        .unwrap_or(0.0);
    assert!(
        !stderr.contains("not exported"),
        "the sink took every export: {stderr}"
    );
    let mib = |kib: u64| kib as f64 / 1024.0;
    eprintln!(
        "costs: traced batch of {ITEMS}: {:.1} s, {} export requests",
        traced.wall.as_secs_f64(),
        requests.load(Ordering::Relaxed)
    );
    rows.push(Row::new(
        "batch, 10 000 items, traced: peak RSS",
        "MiB",
        vec![mib(traced.max_rss_kib)],
    ));
    rows.push(
        Row::new(
            "batch, 10 000 items, traced: peak RSS over untraced",
            "MiB",
            vec![mib(traced.max_rss_kib) - mib(untraced.max_rss_kib)],
        )
        .bar(
            Target::AtMost(EXTRA_MIB),
            format!(
                "traced {:.1} MiB, untraced {:.1} MiB",
                mib(traced.max_rss_kib),
                mib(untraced.max_rss_kib)
            ),
        ),
    );
    rows.push(Row::new(
        "batch, 10 000 items, traced: wall",
        "s",
        vec![traced.wall.as_secs_f64()],
    ));
    rows.push(
        Row::new(
            "batch, 10 000 items, traced: spans dropped",
            "spans",
            vec![dropped],
        )
        .bar(Target::AtMost(0.0), "the span queue overflowed"),
    );
}

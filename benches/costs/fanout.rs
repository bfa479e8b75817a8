//! `leash batch` (docs/src/batch.md "Fan-out: leash batch") under a provider's rate
//! limit and at scale. Against the mock limited to R requests in any
//! second (429 + `retry-after` past that; once announcing the limit in
//! `x-ratelimit-limit-requests`, once not), N items that each need one
//! tool round trip (two requests): the wall time over the ideal
//! (requests ÷ R), the items lost, and the share of requests refused once
//! the shared gate knew the limit; then the same items as single `leash`
//! runs through `xargs -P` (wall, 429s, items lost, summed peak RSS).
//! Memory: peak RSS with 64 items in flight, per in-flight item, and with
//! 10 000 items queued behind 64 (the input is streamed).
//!
//! It must never leave the mock limited or delayed for the next section:
//! each measurement starts with `set_reply`, which clears both.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use crate::mock::{self, Limit, Logged, Mock, Reply};
use crate::process::{ChildRun, Runner, parse_report};
use crate::table::{Row, Target};

/// The mock's limit: requests in any one second.
const RATE: u32 = 20;

/// How many items run at once, in the batch and under `xargs -P`.
const PARALLEL: usize = 8;

/// The targets of the issue: within 1.15x the ideal time, under 5 %
/// refused once the limit is known.
const WITHIN_IDEAL: f64 = 1.15;
const REFUSED_SHARE: f64 = 5.0;

/// Every section's rows; `items` per rate-limited run (each two requests).
pub fn fan_out(runner: &Runner, mock: &Mock, fixtures: &Path, items: usize, rows: &mut Vec<Row>) {
    let dir = tempfile::tempdir().expect("a directory for the inputs");
    let input = write_input(dir.path(), "items.jsonl", items);
    for announce in [true, false] {
        rate_limited(runner, mock, fixtures, &input, items, announce, rows);
    }
    single_runs(runner, mock, fixtures, dir.path(), items, rows);
    memory(runner, mock, fixtures, dir.path(), rows);
}

/// `count` plain-text prompts (ids are the line numbers).
pub fn write_input(dir: &Path, name: &str, count: usize) -> PathBuf {
    let path = dir.join(name);
    let mut text = String::with_capacity(count * 40);
    for i in 1..=count {
        text.push_str(&format!("item {i}: read sample.ts and explain it\n"));
    }
    std::fs::write(&path, text).expect("the input written");
    path
}

pub fn batch_args(mock: &Mock, fixtures: &Path, input: &Path, extra: &[&str]) -> Vec<String> {
    let mut args: Vec<String> = ["batch", &input.display().to_string()]
        .iter()
        .map(|s| (*s).to_owned())
        .collect();
    args.extend(
        [
            "--provider",
            "openai",
            "--base-url",
            &mock.base_url(),
            "-m",
            "bench",
            "--root",
            &fixtures.display().to_string(),
        ]
        .iter()
        .map(|s| (*s).to_owned()),
    );
    args.extend(extra.iter().map(|s| (*s).to_owned()));
    args
}

/// The `ok` result lines of a batch's stdout.
pub fn ok_lines(stdout: &[u8]) -> usize {
    String::from_utf8_lossy(stdout)
        .lines()
        .filter(|line| {
            serde_json::from_str::<serde_json::Value>(line)
                .is_ok_and(|value| value["status"] == "ok")
        })
        .count()
}

/// Requests a second (refused ones too) that arrived after `learned`.
fn rate_after(log: &[Logged], learned: Option<std::time::Instant>) -> f64 {
    let Some(learned) = learned else {
        return f64::NAN;
    };
    let after: Vec<&Logged> = log.iter().filter(|l| l.at > learned).collect();
    match (after.first(), after.last()) {
        (Some(first), Some(last)) if after.len() > 1 => {
            (after.len() - 1) as f64 / last.at.duration_since(first.at).as_secs_f64()
        }
        _ => f64::NAN,
    }
}

/// Of the requests that arrived after `learned`, the percentage refused.
fn refused_after(log: &[Logged], learned: Option<std::time::Instant>) -> f64 {
    let Some(learned) = learned else {
        return 0.0;
    };
    let after: Vec<&Logged> = log.iter().filter(|l| l.at > learned).collect();
    let refused = after.iter().filter(|l| l.refused).count();
    if after.is_empty() {
        0.0
    } else {
        refused as f64 * 100.0 / after.len() as f64
    }
}

fn rate_limited(
    runner: &Runner,
    mock: &Mock,
    fixtures: &Path,
    input: &Path,
    items: usize,
    announce: bool,
    rows: &mut Vec<Row>,
) {
    mock.set_reply(Reply::Seed);
    mock.set_limit(Limit {
        per_second: RATE,
        announce,
    });
    let parallel = PARALLEL.to_string();
    let run = runner.run(&batch_args(
        mock,
        fixtures,
        input,
        &["--parallel", &parallel],
    ));
    let log = mock.log();
    let requests = 2 * items;
    let ideal = requests as f64 / f64::from(RATE);
    let lost = items - ok_lines(&run.stdout);
    // The gate knows the limit from the first answer's header; without
    // one, from the first refusal, once that refusal's wait has passed.
    let learned = if announce {
        log.first().map(|first| first.at)
    } else {
        log.iter()
            .find(|l| l.refused)
            .map(|first| first.at + Duration::from_secs(1))
    };
    let refused = log.iter().filter(|l| l.refused).count();
    let label = if announce {
        "limit announced"
    } else {
        "no limit header"
    };
    eprintln!(
        "costs: batch, {label}: exit {:?}, {} requests, {refused} refused, {:.1} s",
        run.code,
        log.len(),
        run.wall.as_secs_f64()
    );
    let name = |what: &str| format!("batch {items}x2 req at {RATE}/s, {label}: {what}");
    rows.push(Row::new(name("wall"), "s", vec![run.wall.as_secs_f64()]));
    rows.push(
        Row::new(
            name("wall / ideal"),
            "x",
            vec![run.wall.as_secs_f64() / ideal],
        )
        .target(Target::AtMost(WITHIN_IDEAL)),
    );
    rows.push(Row::new(name("items lost"), "", vec![lost as f64]).target(Target::AtMost(0.0)));
    rows.push(Row::new(name("429s, all"), "", vec![refused as f64]));
    rows.push(
        Row::new(
            name("refused once learned"),
            "%",
            vec![refused_after(&log, learned)],
        )
        .target(Target::AtMost(REFUSED_SHARE)),
    );
    rows.push(Row::new(
        name("sent once learned"),
        "req/s",
        vec![rate_after(&log, learned)],
    ));
    rows.push(Row::new(
        name("peak RSS"),
        "MiB",
        vec![run.max_rss_kib as f64 / 1024.0],
    ));
}

/// The same items as single runs, `xargs -P` at a time, each in the
/// measuring wrapper writing to its own file.
fn single_runs(
    runner: &Runner,
    mock: &Mock,
    fixtures: &Path,
    dir: &Path,
    items: usize,
    rows: &mut Vec<Row>,
) {
    let xargs = Path::new("/usr/bin/xargs");
    if !xargs.exists() {
        eprintln!("costs: no /usr/bin/xargs, the xargs -P rows are skipped");
        return;
    }
    let out = dir.join("single");
    std::fs::create_dir_all(&out).expect("a directory for the single runs");
    let numbers = dir.join("numbers");
    let list: String = (1..=items).map(|i| format!("{i}\n")).collect();
    std::fs::write(&numbers, list).expect("the item numbers written");
    // `sh -c SCRIPT N`: xargs appends the item's number, which is $0.
    let words = [
        runner.wrapper().display().to_string(),
        crate::process::CHILD_FLAG.to_owned(),
        runner.leash.display().to_string(),
        "--provider".to_owned(),
        "openai".to_owned(),
        "--base-url".to_owned(),
        mock.base_url(),
        "-m".to_owned(),
        "bench".to_owned(),
        "--no-stdin".to_owned(),
        "-q".to_owned(),
        "--root".to_owned(),
        fixtures.display().to_string(),
    ];
    let quoted: Vec<String> = words.iter().map(|word| quote(word)).collect();
    let script = format!(
        "exec {} \"item $0: read sample.ts and explain it\" > {}/$0.out 2>/dev/null",
        quoted.join(" "),
        quote(&out.display().to_string())
    );
    let args: Vec<String> = [
        "-a",
        &numbers.display().to_string(),
        "-P",
        &PARALLEL.to_string(),
        "-n",
        "1",
        "sh",
        "-c",
        &script,
    ]
    .iter()
    .map(|s| (*s).to_owned())
    .collect();

    mock.set_reply(Reply::Seed);
    mock.set_limit(Limit {
        per_second: RATE,
        announce: true,
    });
    let run = runner.run_program(xargs, &args);
    let log = mock.log();
    let refused = log.iter().filter(|l| l.refused).count();
    let mut lost = 0;
    let mut rss_sum = 0.0;
    for i in 1..=items {
        let bytes = std::fs::read(out.join(format!("{i}.out"))).unwrap_or_default();
        let ok = bytes
            .windows(b"\n\x01costs ".len())
            .any(|w| w == b"\n\x01costs ");
        if !ok {
            lost += 1;
            continue;
        }
        let child: ChildRun = parse_report(bytes, Vec::new());
        rss_sum += child.max_rss_kib as f64 / 1024.0;
        if child.code != Some(0) {
            lost += 1;
        }
    }
    eprintln!(
        "costs: xargs -P {PARALLEL}: exit {:?}, {} requests, {refused} refused, {:.1} s",
        run.code,
        log.len(),
        run.wall.as_secs_f64()
    );
    let ideal = (2 * items) as f64 / f64::from(RATE);
    let name = |what: &str| format!("xargs -P {PARALLEL} x {items} single runs: {what}");
    rows.push(Row::new(name("wall"), "s", vec![run.wall.as_secs_f64()]));
    rows.push(Row::new(
        name("wall / ideal"),
        "x",
        vec![run.wall.as_secs_f64() / ideal],
    ));
    rows.push(Row::new(name("items lost"), "", vec![lost as f64]));
    rows.push(Row::new(name("429s, all"), "", vec![refused as f64]));
    rows.push(Row::new(name("summed peak RSS"), "MiB", vec![rss_sum]));
}

/// `word` as one single-quoted shell word.
fn quote(word: &str) -> String {
    format!("'{}'", word.replace('\'', "'\\''"))
}

/// Peak RSS of one item, of 64 in flight at once (each reply held back
/// 500 ms so they overlap), and of 10 000 queued behind 64.
fn memory(runner: &Runner, mock: &Mock, fixtures: &Path, dir: &Path, rows: &mut Vec<Row>) {
    let reply = Reply::Body(Arc::new(mock::text_body(20, "tok ")));
    let peak = |count: usize, parallel: usize, delay: Duration| {
        let input = write_input(dir, &format!("memory-{count}.jsonl"), count);
        mock.set_reply(reply.clone());
        mock.set_delay(delay);
        let parallel = parallel.to_string();
        let run = runner.run(&batch_args(
            mock,
            fixtures,
            &input,
            &["--parallel", &parallel, "--tools", "none"],
        ));
        run.expect_code(0, "a batch without a limit");
        assert_eq!(ok_lines(&run.stdout), count, "every item ok");
        eprintln!(
            "costs: batch of {count}, --parallel {parallel}: {:.1} s",
            run.wall.as_secs_f64()
        );
        (run.max_rss_kib as f64 / 1024.0, run.wall.as_secs_f64())
    };
    let held = Duration::from_millis(500);
    let (one, _) = peak(1, 1, held);
    let (in_flight, _) = peak(64, 64, held);
    let (queued, wall) = peak(10_000, 64, Duration::ZERO);
    rows.push(Row::new("batch, 1 item: peak RSS", "MiB", vec![one]));
    rows.push(Row::new(
        "batch, 64 items in flight: peak RSS",
        "MiB",
        vec![in_flight],
    ));
    rows.push(Row::new(
        "batch, per item in flight (64 vs 1)",
        "KiB",
        vec![(in_flight - one) * 1024.0 / 63.0],
    ));
    rows.push(Row::new(
        "batch, 10 000 items, 64 in flight: peak RSS",
        "MiB",
        vec![queued],
    ));
    rows.push(Row::new(
        "batch, 10 000 items, 64 in flight: wall",
        "s",
        vec![wall],
    ));
}

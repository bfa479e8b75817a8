//! The seed task next to curl: leash's whole run (start-up, two requests,
//! a `read_file` call, the reply) against one curl process sending the
//! same two request bodies over one connection to the same mock, on a
//! quiet machine and with a busy loop on every core (CI runners are
//! shared). The runs interleave (leash, curl, curl, leash, …) so a change
//! in the machine's load reaches both sides alike; the ratio row is the
//! median of each leash run over the curl run next to it.
//!
//! Memory the same way, on the quiet pairs: each leash run's peak RSS over
//! the curl run's next to it, a bar at 1.00 (`table`): leash making the
//! two requests holds no more than curl making them. Without curl the bar
//! has no sample, so it is missed rather than passed unmeasured.
//!
//! It must never leave a busy loop behind: the hogs are killed and reaped
//! when the measurement ends, and also when it panics.

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use crate::mock::{Mock, Reply};
use crate::process::{Runner, openai_args};
use crate::table::{Row, Target, median};

/// The target for both rows: leash at curl's wall.
const AT_CURL: f64 = 1.10;

/// The bar for memory: leash's peak RSS at most curl's.
const RSS_AT_CURL: f64 = 1.00;

/// The memory bar's row.
const RSS_BAR: &str = "seed task / curl, peak RSS, per pair";

/// The seed task and curl, quiet and under load, `runs` pairs each.
pub fn versus_curl(
    runner: &Runner,
    mock: &Mock,
    fixtures: &Path,
    prompt: &str,
    runs: usize,
    rows: &mut Vec<Row>,
) {
    let curl = Path::new("/usr/bin/curl");
    if !curl.exists() {
        eprintln!("costs: no /usr/bin/curl, the rows next to curl are skipped");
        rows.push(Row::new(RSS_BAR, "x", Vec::new()).bar(
            Target::AtMost(RSS_AT_CURL),
            "no /usr/bin/curl to compare with",
        ));
        return;
    }
    let leash_args = openai_args(&mock.base_url(), fixtures, &["-q"], prompt);
    // One run first: its two request bodies are what curl sends.
    mock.set_reply(Reply::Seed);
    runner.run(&leash_args).expect_code(0, "the seed task");
    let bodies = mock.bodies();
    assert_eq!(bodies.len(), 2, "the seed task makes two requests");
    let dir = tempfile::tempdir().expect("a directory for the request bodies");
    let url = format!("{}/chat/completions", mock.base_url());
    let mut curl_args = Vec::new();
    for (i, body) in bodies.iter().enumerate() {
        let file = dir.path().join(format!("request-{i}.json"));
        std::fs::write(&file, body).expect("the request body written");
        if i > 0 {
            curl_args.push("--next".to_owned());
        }
        curl_args.extend(
            [
                "-sS",
                "-o",
                "/dev/null",
                "-H",
                "content-type: application/json",
                "--data-binary",
            ]
            .map(str::to_owned),
        );
        curl_args.push(format!("@{}", file.display()));
        curl_args.push(url.clone());
    }
    let pair = |rows: &mut Vec<Row>, condition: &str, memory: bool| {
        let (mut leash, mut curl_wall) = (Vec::new(), Vec::new());
        let (mut leash_rss, mut curl_rss) = (Vec::new(), Vec::new());
        for i in 0..runs {
            let mut one_leash = || {
                mock.set_reply(Reply::Seed);
                let run = runner.run(&leash_args);
                run.expect_code(0, "the seed task");
                leash.push(run.wall_ms());
                leash_rss.push(run.max_rss_kib as f64 / 1024.0);
            };
            let mut one_curl = || {
                mock.set_reply(Reply::Seed);
                let run = runner.run_program(curl, &curl_args);
                run.expect_code(0, "curl");
                assert_eq!(mock.bodies().len(), 2, "curl made both requests");
                curl_wall.push(run.wall_ms());
                curl_rss.push(run.max_rss_kib as f64 / 1024.0);
            };
            if i % 2 == 0 {
                one_leash();
                one_curl();
            } else {
                one_curl();
                one_leash();
            }
        }
        // Each leash run over the curl run next to it: a change in the
        // machine's load between pairs cancels out.
        let ratios = leash.iter().zip(&curl_wall).map(|(l, c)| l / c).collect();
        rows.push(Row::new(
            format!("seed task, {condition}: wall"),
            "ms",
            leash,
        ));
        rows.push(Row::new(
            format!("curl, same two requests, {condition}: wall"),
            "ms",
            curl_wall,
        ));
        rows.push(
            Row::new(
                format!("seed task / curl, {condition}, per pair"),
                "x",
                ratios,
            )
            .target(Target::AtMost(AT_CURL)),
        );
        if memory {
            memory_rows(rows, condition, &leash_rss, &curl_rss);
        }
    };
    pair(rows, "quiet", true);
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let hogs = Hogs::start(cores);
    // Let the scheduler spread them before the first sample.
    std::thread::sleep(Duration::from_millis(200));
    pair(rows, &format!("{cores} cores busy"), false);
    drop(hogs);
}

/// Both sides' peak RSS and the bar on their ratio, pair by pair.
fn memory_rows(rows: &mut Vec<Row>, condition: &str, leash: &[f64], curl: &[f64]) {
    let ratios = leash.iter().zip(curl).map(|(l, c)| l / c).collect();
    let detail = format!(
        "medians: leash {:.2} MiB, curl {:.2} MiB, {} pairs",
        median(leash),
        median(curl),
        leash.len()
    );
    rows.push(Row::new(
        format!("seed task, {condition}: peak RSS"),
        "MiB",
        leash.to_vec(),
    ));
    rows.push(Row::new(
        format!("curl, same two requests, {condition}: peak RSS"),
        "MiB",
        curl.to_vec(),
    ));
    rows.push(Row::new(RSS_BAR, "x", ratios).bar(Target::AtMost(RSS_AT_CURL), detail));
}

/// Busy loops at normal priority, one per core; killed when dropped.
struct Hogs(Vec<Child>);

impl Hogs {
    fn start(count: usize) -> Hogs {
        Hogs(
            (0..count)
                .map(|_| {
                    Command::new("/bin/sh")
                        .args(["-c", "while :; do :; done"])
                        .stdin(Stdio::null())
                        .stdout(Stdio::null())
                        .stderr(Stdio::null())
                        .spawn()
                        .expect("a busy loop started")
                })
                .collect(),
        )
    }
}

impl Drop for Hogs {
    fn drop(&mut self) {
        for hog in &mut self.0 {
            let _ = hog.kill();
            let _ = hog.wait();
        }
    }
}

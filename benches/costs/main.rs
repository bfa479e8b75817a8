//! `make bench`: what leash costs next to the model, as one table. The
//! release binary is timed as a whole process against a loopback mock
//! OpenAI server (start-up, the seed task, the seed task next to curl on a
//! quiet and on a busy machine, replies of 1k to 1M deltas, the abort
//! timer, the grep tool over a generated 100 MB tree next to `rg`,
//! `leash batch` under a rate limit next to `xargs -P` and its memory, a
//! `bash` call's cost beyond its command on a 100 000-file root, a batch
//! of 10 000 items traced next to untraced);
//! the tool batch and SSE decoding are timed in-process with the library.
//! Needs no network beyond loopback.
//!
//! Four rows are bars (`table`): the seed task's peak RSS next to curl's
//! (per interleaved pair, median at most 1.00), the binary's size (at
//! most 12.0 MiB), and a traced 10 000-item batch's peak RSS over the
//! untraced one (at most 8 MiB) and its dropped spans (none). Missing one prints a `costs: bar missed:` line with its
//! numbers and exits 1, after the whole table.
//!
//! Under `cargo test` (no `--bench` argument) it only says how to run it:
//! it is not part of the test suite. `cargo bench --bench costs -- --quick`
//! takes fewer samples; `-- startup curl deltas abort batch sse grep fanout shell traced` (any
//! of them) runs only those sections; `--serve seed|N` (on the built executable)
//! only serves the mock, for profiling leash by hand.

#![allow(clippy::expect_used, clippy::print_stdout)]

mod curl;
mod fanout;
mod grep;
mod in_process;
mod mock;
mod process;
mod shell;
mod table;
mod traced;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use mock::{Mock, Reply};
use process::{ChildRun, Runner, openai_args};
use table::{Row, Target};

const MIB: f64 = 1024.0 * 1024.0;

/// The release binary's budget, stripped (a bar: the bench fails past it).
const SIZE_BUDGET_MIB: f64 = 12.0;

/// The prompt of the seed task (the `make demo` prompt).
const SEED_PROMPT: &str = "Read sample.ts and explain what first([]) returns, and why.";

/// One streamed text delta in the scaling runs.
const DELTA: &str = "tok ";

/// The sections, in the order they run; naming some runs only those.
const SECTIONS: [&str; 10] = [
    "startup", "curl", "deltas", "abort", "batch", "sse", "grep", "fanout", "shell", "traced",
];

/// How many samples each measurement takes.
struct Runs {
    version: usize,
    seed: usize,
    /// Interleaved pairs of the seed task and curl, per machine state.
    curl: usize,
    /// Per reply size, smallest first.
    deltas: [(usize, usize); 4],
    abort: usize,
    batch: usize,
    sse: usize,
    /// The grep tool over a 100 MB tree (and rg on it).
    grep: usize,
    /// Items of the rate-limited `leash batch` (two requests each).
    fanout: usize,
}

const FULL: Runs = Runs {
    version: 30,
    seed: 20,
    curl: 100,
    deltas: [(1_000, 10), (10_000, 10), (100_000, 5), (1_000_000, 3)],
    abort: 5,
    batch: 5,
    sse: 5,
    grep: 5,
    fanout: 200,
};

const QUICK: Runs = Runs {
    version: 5,
    seed: 5,
    curl: 10,
    deltas: [(1_000, 3), (10_000, 3), (100_000, 2), (1_000_000, 1)],
    abort: 2,
    batch: 2,
    sse: 2,
    grep: 2,
    fanout: 60,
};

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.first().map(String::as_str) == Some(process::CHILD_FLAG) {
        std::process::exit(process::child_main(&args[1..]));
    }
    if let Some(at) = args.iter().position(|arg| arg == "--serve") {
        serve_for_profiling(args.get(at + 1).map_or("seed", String::as_str));
        return;
    }
    if !args.iter().any(|arg| arg == "--bench") {
        println!("costs: not a test; run `make bench` (or `cargo bench --bench costs`)");
        return;
    }
    let runs = if args.iter().any(|arg| arg == "--quick") {
        QUICK
    } else {
        FULL
    };
    // `make bench` points this at the `cargo build --release` binary; a
    // bench build links the lib with the dev-dependencies' features.
    let leash = std::env::var_os("LEASH_BIN")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_BIN_EXE_leash")));
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures");
    let runner = Runner::new(leash.clone()).expect("a working directory");
    let mock = Mock::start().expect("a loopback listener");

    // Section names after `--bench` run only those sections.
    let named: Vec<&str> = args
        .iter()
        .map(String::as_str)
        .filter(|arg| SECTIONS.contains(arg))
        .collect();
    let wanted = |section: &str| named.is_empty() || named.contains(&section);
    let mut rows = Vec::new();
    if wanted("startup") {
        eprintln!("costs: start-up and the seed task…");
        start_up_and_seed(&runner, &mock, &fixtures, &runs, &mut rows);
    }
    if wanted("curl") {
        eprintln!("costs: the seed task next to curl, quiet and with every core busy…");
        curl::versus_curl(&runner, &mock, &fixtures, SEED_PROMPT, runs.curl, &mut rows);
    }
    if wanted("deltas") {
        eprintln!("costs: replies of 1k to 1M deltas…");
        reply_scaling(&runner, &mock, &fixtures, &runs, &mut rows);
    }
    if wanted("abort") {
        eprintln!("costs: abort latency…");
        abort_latency(&runner, &mock, &fixtures, &runs, &mut rows);
    }
    if wanted("batch") {
        eprintln!("costs: tool batches (in-process)…");
        tool_batches(&runs, &mut rows);
    }
    if wanted("sse") {
        eprintln!("costs: SSE decoding (in-process)…");
        sse_decoding(&runs, &mut rows);
        reply_decoding(&runs, &mut rows);
    }
    if wanted("grep") {
        eprintln!("costs: the grep tool over 10k files / 100 MB, next to rg…");
        grep::grep_tree(&runner, runs.grep, &mut rows);
    }
    if wanted("fanout") {
        eprintln!("costs: leash batch under a rate limit, next to xargs -P; its memory…");
        fanout::fan_out(&runner, &mock, &fixtures, runs.fanout, &mut rows);
    }
    if wanted("traced") {
        eprintln!("costs: leash batch of 10 000 items, traced, next to untraced…");
        traced::traced_batch(&runner, &mock, &fixtures, &mut rows);
    }
    if wanted("shell") {
        eprintln!("costs: a bash call's cost beyond its command on a 100k-file root…");
        shell::bash_overhead(&runner, runs.grep, &mut rows);
    }
    let bytes = std::fs::metadata(&leash).map(|m| m.len());
    let size = bytes.as_ref().map_or(f64::NAN, |&bytes| bytes as f64 / MIB);
    let what = match bytes {
        Ok(bytes) => format!("{bytes} bytes: {}", leash.display()),
        Err(error) => format!("{}: {error}", leash.display()),
    };
    rows.push(
        Row::new("release binary size", "MiB", vec![size])
            .bar(Target::AtMost(SIZE_BUDGET_MIB), what),
    );

    let title = format!(
        "leash costs, {} on {}\nbinary: {}",
        table::now_utc(),
        table::machine(),
        leash.display()
    );
    let failed = table::print(&title, &rows);
    let targets = rows.iter().filter(|row| row.has_target()).count();
    println!("{} of {targets} targets met", targets - failed);
    let missed = table::missed_bars(&rows);
    for line in &missed {
        eprintln!("{line}");
    }
    if !missed.is_empty() {
        std::process::exit(1);
    }
}

/// `--serve seed|N`: serves the seed task, or a reply of N deltas, for ten
/// minutes, so a profiler can run leash against it by hand.
fn serve_for_profiling(what: &str) {
    let mock = Mock::start().expect("a loopback listener");
    match what.parse() {
        Ok(deltas) => mock.set_reply(Reply::Body(Arc::new(mock::text_body(deltas, DELTA)))),
        Err(_) => mock.set_reply(Reply::Seed),
    }
    println!("{}", mock.base_url());
    std::thread::sleep(Duration::from_secs(600));
}

fn start_up_and_seed(
    runner: &Runner,
    mock: &Mock,
    fixtures: &Path,
    runs: &Runs,
    rows: &mut Vec<Row>,
) {
    // Warm the page cache so the first sample is not an outlier.
    runner
        .run(&["--version".to_owned()])
        .expect_code(0, "--version");
    let version: Vec<ChildRun> = (0..runs.version)
        .map(|_| runner.run(&["--version".to_owned()]))
        .collect();
    for run in &version {
        run.expect_code(0, "--version");
    }
    rows.push(
        Row::new(
            "leash --version: wall",
            "ms",
            version.iter().map(ChildRun::wall_ms).collect(),
        )
        .target(Target::AtMost(3.0)),
    );

    baselines(runner, mock, runs, rows);

    let args = openai_args(&mock.base_url(), fixtures, &["-q"], SEED_PROMPT);
    let mut first_byte = Vec::new();
    let mut wall = Vec::new();
    let mut rss = Vec::new();
    for i in 0..=runs.seed {
        mock.set_reply(Reply::Seed);
        let run = runner.run(&args);
        run.expect_code(0, "the seed task");
        assert!(
            String::from_utf8_lossy(&run.stdout).contains("undefined"),
            "the seed task's reply is the mock's answer"
        );
        if i == 0 {
            continue; // warm-up
        }
        let arrived = mock.first_byte().expect("a request reached the mock");
        let after = arrived.duration_since(run.spawned_at).unwrap_or_default();
        first_byte.push(after.as_secs_f64() * 1e3);
        wall.push(run.wall_ms());
        rss.push(run.max_rss_kib as f64 / 1024.0);
    }
    rows.push(
        Row::new("start to first request byte", "ms", first_byte).target(Target::AtMost(10.0)),
    );
    rows.push(Row::new("seed task end to end: wall", "ms", wall).target(Target::AtMost(20.0)));
    rows.push(Row::new("seed task end to end: peak RSS", "MiB", rss).target(Target::AtMost(15.0)));
}

/// For scale: the cost of starting any process here, and of `curl`
/// making one request to the same mock (when curl is installed).
fn baselines(runner: &Runner, mock: &Mock, runs: &Runs, rows: &mut Vec<Row>) {
    let floor: Vec<f64> = (0..runs.version)
        .map(|_| runner.run_program(Path::new("/bin/true"), &[]).wall_ms())
        .collect();
    rows.push(Row::new("baseline: /bin/true", "ms", floor));
    let curl = Path::new("/usr/bin/curl");
    if !curl.exists() {
        return;
    }
    let url = format!("{}/chat/completions", mock.base_url());
    let args: Vec<String> = ["-sS", "-o", "/dev/null", "-d", "{}", &url]
        .iter()
        .map(|s| (*s).to_owned())
        .collect();
    mock.set_reply(Reply::Seed);
    let wall: Vec<f64> = (0..runs.version)
        .map(|_| {
            let run = runner.run_program(curl, &args);
            run.expect_code(0, "curl");
            run.wall_ms()
        })
        .collect();
    rows.push(Row::new(
        "baseline: curl, one request to the mock",
        "ms",
        wall,
    ));
}

fn reply_scaling(runner: &Runner, mock: &Mock, fixtures: &Path, runs: &Runs, rows: &mut Vec<Row>) {
    let mut medians = Vec::new();
    for &(deltas, count) in &runs.deltas {
        mock.set_reply(Reply::Body(Arc::new(mock::text_body(deltas, DELTA))));
        let args = openai_args(
            &mock.base_url(),
            fixtures,
            &["-q", "--tools", "none"],
            "stream",
        );
        let mut wall = Vec::new();
        let mut rss = Vec::new();
        for _ in 0..count {
            let run = runner.run(&args);
            run.expect_code(0, "a long reply");
            // The reply, then the one newline the text output ends with.
            assert_eq!(
                run.stdout.len(),
                deltas * DELTA.len() + 1,
                "the whole reply reaches stdout"
            );
            wall.push(run.wall_ms());
            rss.push(run.max_rss_kib as f64 / 1024.0);
        }
        let label = label(deltas);
        let time = Row::new(format!("reply of {label} deltas: wall"), "ms", wall);
        let memory = Row::new(format!("reply of {label} deltas: peak RSS"), "MiB", rss);
        medians.push((deltas, time.median()));
        rows.push(time);
        rows.push(if deltas == 1_000_000 {
            memory.target(Target::AtMost(64.0))
        } else {
            memory
        });
    }
    let time_of = |n: usize| {
        medians
            .iter()
            .find(|(d, _)| *d == n)
            .map_or(f64::NAN, |(_, t)| *t)
    };
    rows.push(
        Row::new(
            "time(100k) / time(10k)",
            "x",
            vec![time_of(100_000) / time_of(10_000)],
        )
        .target(Target::AtMost(12.0)),
    );
    rows.push(
        Row::new(
            "time(1M) / time(100k)",
            "x",
            vec![time_of(1_000_000) / time_of(100_000)],
        )
        .target(Target::AtMost(12.0)),
    );

    // The same 100k reply with every delta rendered as a JSON line.
    let args = openai_args(
        &mock.base_url(),
        fixtures,
        &["--events", "jsonl", "--tools", "none"],
        "stream",
    );
    mock.set_reply(Reply::Body(Arc::new(mock::text_body(100_000, DELTA))));
    let wall = (0..runs.deltas[2].1)
        .map(|_| {
            let run = runner.run(&args);
            run.expect_code(0, "a long reply with JSON events");
            run.wall_ms()
        })
        .collect();
    rows.push(Row::new(
        "reply of 100k deltas, --events jsonl: wall",
        "ms",
        wall,
    ));
}

fn label(deltas: usize) -> String {
    match deltas {
        n if n >= 1_000_000 => format!("{}M", n / 1_000_000),
        n if n >= 1_000 => format!("{}k", n / 1_000),
        n => n.to_string(),
    }
}

fn abort_latency(runner: &Runner, mock: &Mock, fixtures: &Path, runs: &Runs, rows: &mut Vec<Row>) {
    let timeout = Duration::from_secs(1);
    let args = openai_args(
        &mock.base_url(),
        fixtures,
        &["-q", "--timeout", "1s"],
        "stall",
    );
    let mut late = Vec::new();
    for _ in 0..runs.abort {
        mock.set_reply(Reply::Stall);
        let run = runner.run(&args);
        run.expect_code(124, "a stalled stream under --timeout 1s");
        late.push((run.wall.saturating_sub(timeout)).as_secs_f64() * 1e3);
    }
    rows.push(
        Row::new("abort: exit after the 1 s deadline", "ms", late).target(Target::AtMost(50.0)),
    );
}

fn tool_batches(runs: &Runs, rows: &mut Vec<Row>) {
    let runtime = in_process::runtime();
    for calls in [1, 8, 64] {
        let times = (0..runs.batch)
            .map(|_| in_process::tool_batch(&runtime, calls).as_secs_f64() * 1e3)
            .collect();
        rows.push(
            Row::new(
                format!("batch of {calls} parallel 100 ms calls"),
                "ms",
                times,
            )
            .target(Target::AtMost(120.0)),
        );
    }
}

fn sse_decoding(runs: &Runs, rows: &mut Vec<Row>) {
    let runtime = in_process::runtime();
    let body = Arc::new(in_process::sse_body(16 * 1024 * 1024));
    for chunk in [16 * 1024, 256 * 1024] {
        let rates = (0..runs.sse)
            .map(|_| {
                let (time, events) = in_process::sse_decode(&runtime, &body, chunk);
                assert!(events > 0);
                body.len() as f64 / 1e6 / time.as_secs_f64()
            })
            .collect();
        rows.push(
            Row::new(
                format!("SSE decoding, {} KiB reads", chunk / 1024),
                "MB/s",
                rates,
            )
            .target(Target::AtLeast(200.0)),
        );
    }
}

/// The two OpenAI decoders side by side: the same text deltas in each
/// API's realistic wire shape, through SSE framing and the format's
/// decoder (the rows above time the framing alone).
fn reply_decoding(runs: &Runs, rows: &mut Vec<Row>) {
    let runtime = in_process::runtime();
    let chunk = 256 * 1024;
    for (api, name) in [
        (in_process::Api::Chat, "Chat Completions"),
        (in_process::Api::Responses, "Responses"),
    ] {
        let body = Arc::new(in_process::reply_body(api, 16 * 1024 * 1024));
        let rates = (0..runs.sse)
            .map(|_| {
                let (time, events) = in_process::reply_decode(&runtime, api, &body, chunk);
                assert!(events > 0);
                body.len() as f64 / 1e6 / time.as_secs_f64()
            })
            .collect();
        rows.push(
            Row::new(format!("{name} decoder, 256 KiB reads"), "MB/s", rates)
                .target(Target::AtLeast(100.0)),
        );
    }
}

//! Running the release binary as a whole process. Each run goes through a
//! small wrapper — this bench executable started again with
//! [`CHILD_FLAG`] — that spawns leash, waits for it, and reports the wall
//! time and the child's peak RSS from `getrusage(RUSAGE_CHILDREN)`. The
//! wrapper has exactly one child, so that maximum is leash's own.
//!
//! It must never let the caller's configuration reach leash: every run
//! starts in an empty directory with the `LEASH_*`, `OPENAI_*` and
//! `ANTHROPIC_*` variables removed.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use nix::sys::resource::{UsageWho, getrusage};

/// The first argument that turns this executable into the wrapper.
pub const CHILD_FLAG: &str = "--measure-child";

/// Separates leash's stdout from the wrapper's report line.
const MARKER: &[u8] = b"\n\x01costs ";

/// One finished run of leash.
#[derive(Debug)]
pub struct ChildRun {
    /// Wall-clock time just before the spawn (compared with the mock's
    /// first-byte time, which is wall-clock too).
    pub spawned_at: SystemTime,
    /// From spawn to exit.
    pub wall: Duration,
    /// Peak resident set size in KiB.
    pub max_rss_kib: u64,
    /// The exit code; `None` when a signal ended it.
    pub code: Option<i32>,
    /// What leash wrote to stdout.
    pub stdout: Vec<u8>,
    /// What leash wrote to stderr.
    pub stderr: Vec<u8>,
}

impl ChildRun {
    /// Panics with leash's stderr unless it exited with `code`.
    pub fn expect_code(&self, code: i32, what: &str) {
        assert_eq!(
            self.code,
            Some(code),
            "{what}: leash exited with {:?}; stderr:\n{}",
            self.code,
            String::from_utf8_lossy(&self.stderr)
        );
    }

    /// Milliseconds from spawn to exit.
    pub fn wall_ms(&self) -> f64 {
        self.wall.as_secs_f64() * 1e3
    }
}

/// Runs the wrapper: spawns `argv`, waits, prints the report. Returns the
/// wrapper's exit code.
pub fn child_main(argv: &[String]) -> i32 {
    let Some((program, args)) = argv.split_first() else {
        return 2;
    };
    let spawned_at = SystemTime::now();
    let started = Instant::now();
    let status = Command::new(program).args(args).status();
    let wall = started.elapsed();
    let Ok(status) = status else {
        return 3;
    };
    let max_rss_kib = getrusage(UsageWho::RUSAGE_CHILDREN)
        .map_or(0, |usage| u64::try_from(usage.max_rss()).unwrap_or(0));
    let since_epoch = spawned_at.duration_since(UNIX_EPOCH).unwrap_or_default();
    let code = status.code().map_or("signal".to_owned(), |c| c.to_string());
    let mut stdout = std::io::stdout().lock();
    let _ = stdout.write_all(MARKER);
    let _ = writeln!(
        stdout,
        "{} {} {max_rss_kib} {code}",
        since_epoch.as_nanos(),
        wall.as_nanos()
    );
    0
}

/// Where and how leash is run.
pub struct Runner {
    /// The binary under test.
    pub leash: PathBuf,
    /// This executable, started again as the wrapper.
    wrapper: PathBuf,
    /// An empty working directory (no `.env`).
    workdir: tempfile::TempDir,
}

impl Runner {
    /// A runner for `leash`.
    pub fn new(leash: PathBuf) -> std::io::Result<Runner> {
        Ok(Runner {
            leash,
            wrapper: std::env::current_exe()?,
            workdir: tempfile::tempdir()?,
        })
    }

    /// This executable, which [`CHILD_FLAG`] turns into the wrapper (for
    /// runs started by another program, e.g. `xargs -P`).
    pub fn wrapper(&self) -> &Path {
        &self.wrapper
    }

    /// Runs leash once with `args` and stdin closed.
    pub fn run(&self, args: &[String]) -> ChildRun {
        self.run_program(&self.leash, args)
    }

    /// Runs leash once with `args` and the variables `env` besides.
    pub fn run_with(&self, args: &[String], env: &[(&str, String)]) -> ChildRun {
        self.run_command(&self.leash, args, env)
    }

    /// Runs any program the same way (for the baselines).
    pub fn run_program(&self, program: &Path, args: &[String]) -> ChildRun {
        self.run_command(program, args, &[])
    }

    /// Runs `program` under the wrapper; the bench's own `OTEL_*` and
    /// `TRACEPARENT` never reach it (a traced shell would trace every row).
    fn run_command(&self, program: &Path, args: &[String], env: &[(&str, String)]) -> ChildRun {
        let mut command = Command::new(&self.wrapper);
        command
            .arg(CHILD_FLAG)
            .arg(program)
            .args(args)
            .current_dir(self.workdir.path())
            .stdin(Stdio::null());
        for (name, _) in std::env::vars_os() {
            let name = name.to_string_lossy();
            if [
                "LEASH_",
                "OPENAI_",
                "ANTHROPIC_",
                "OTEL_",
                "TRACEPARENT",
                "TRACESTATE",
            ]
            .iter()
            .any(|prefix| name.starts_with(prefix))
            {
                command.env_remove(name.as_ref());
            }
        }
        command.envs(env.iter().map(|(name, value)| (name, value)));
        let output = command.output().expect("the wrapper could not be started");
        parse_report(output.stdout, output.stderr)
    }
}

/// Splits the wrapper's output into leash's stdout and the report.
pub fn parse_report(mut stdout: Vec<u8>, stderr: Vec<u8>) -> ChildRun {
    let at = stdout
        .windows(MARKER.len())
        .rposition(|window| window == MARKER)
        .unwrap_or_else(|| {
            panic!(
                "the wrapper wrote no report; stderr:\n{}",
                String::from_utf8_lossy(&stderr)
            )
        });
    let report = String::from_utf8_lossy(&stdout[at + MARKER.len()..]).into_owned();
    stdout.truncate(at);
    let fields: Vec<&str> = report.split_whitespace().collect();
    let number = |i: usize| -> u64 {
        fields
            .get(i)
            .and_then(|field| field.parse().ok())
            .unwrap_or_else(|| panic!("bad wrapper report {report:?}"))
    };
    ChildRun {
        spawned_at: UNIX_EPOCH + Duration::from_nanos(number(0)),
        wall: Duration::from_nanos(number(1)),
        max_rss_kib: number(2),
        code: fields.get(3).and_then(|code| code.parse().ok()),
        stdout,
        stderr,
    }
}

/// The arguments of a run against the mock at `base_url`, reading files
/// under `root`; `extra` goes before the prompt.
pub fn openai_args(base_url: &str, root: &Path, extra: &[&str], prompt: &str) -> Vec<String> {
    let mut args: Vec<String> = [
        "--provider",
        "openai",
        "--base-url",
        base_url,
        "-m",
        "bench",
        "--no-stdin",
        "--root",
    ]
    .iter()
    .map(|s| (*s).to_owned())
    .collect();
    args.push(root.display().to_string());
    args.extend(extra.iter().map(|s| (*s).to_owned()));
    args.push(prompt.to_owned());
    args
}

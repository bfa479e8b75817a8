//! `leash batch`: many runs in one process (docs/src/batch.md "Fan-out: leash
//! batch"). The input is validated whole before any item runs
//! (`input`), the batch's flags are checked once as a run's, the MCP
//! servers start once, and then up to `--parallel` items run at a time,
//! each one a run through the same plan and job as `leash PROMPT`
//! (`item`). Each item's result is one JSON line (`output`), in input
//! order unless `--unordered`; stderr shows the progress and ends with
//! the `batch_end` summary (`progress`). `merge` joins shards' outputs.
//!
//! *Never* runs a second agent loop or decides an item's status (the
//! run does); it only decides the batch's: `ok`, `batch_failed`, or the
//! signal that stopped it.

pub mod descriptors;
pub mod events;
pub mod input;
pub mod item;
pub mod merge;
pub mod output;
pub mod progress;
pub mod resume;

use std::collections::HashSet;
use std::io::Write;
use std::path::Path;

use futures::StreamExt;
use futures::stream::FuturesUnordered;
use tokio::sync::watch;

use crate::cli::batch::{BatchArgs, BatchInvocation};
use crate::config::file::{ConfigFile, config_file_choice};
use crate::config::layers::Environment;
use crate::exit::{Signal, Status};
use crate::render;
use crate::render::format::{EventsFormat, OutputFormat};
use crate::run::ending::{self, AbortCause};
use crate::run::job::{Shared, Streams, keys_of};
use crate::run::report;
use crate::run::signals::{Listeners, unless_signalled, watch_installed};
use crate::telemetry::{BatchTrace, Tracing};
use events::Protected;
use input::{Source, Validated};
use item::{Base, Context, Finished, Pinned, Transport, root_inside, run_item};
use leash_protocol::trace_context;
use output::{Lines, Order};
use progress::{Progress, Tally};

/// Runs `leash batch …` and returns how the batch ended.
pub fn main(
    batch: BatchInvocation,
    env: &Environment,
    stderr_is_terminal: bool,
    streams: Streams,
) -> Status {
    match batch {
        BatchInvocation::Merge(merge) => merge::run(&merge, streams),
        BatchInvocation::Run(args) => run_batch(&args, env, stderr_is_terminal, streams),
    }
}

/// A signal stopped the batch while its input was read (a pipe nobody
/// wrote to yet): nothing ran; why, then the `batch_end` summary.
fn stopped_reading(signal: Signal, streams: Streams) -> Status {
    let mut stderr = streams.stderr;
    let _ = render::write_reason(
        &mut stderr,
        "stopped by a signal while the batch input was read: no item ran",
    );
    let _ = writeln!(stderr, "{}", Tally::new(0).summary(0));
    let _ = stderr.flush();
    Status::Interrupted(signal)
}

/// A usage error of the batch (exit 2), in words on stderr.
fn refuse(message: String, streams: Streams) -> Status {
    report::report_usage_error(message, EventsFormat::Text, OutputFormat::Text, streams)
}

/// Everything checked before the first item runs; a failure is a usage
/// error and nothing runs.
fn run_batch(
    args: &BatchArgs,
    env: &Environment,
    stderr_is_terminal: bool,
    streams: Streams,
) -> Status {
    // The runtime first; the signal handlers once the input is checked
    // (until then a signal ends the process by its default action, so a
    // read that blocks can never outlive it).
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(error) => {
            let mut stderr = streams.stderr;
            let _ = render::write_reason(
                &mut stderr,
                &format!("cannot start the async runtime: {error}"),
            );
            return Status::Error;
        }
    };
    // `--config`, `--no-config` and `--bare` choose it, as for one run.
    let location = ConfigFile::location(&|name| env.get(name));
    let file = match config_file_choice(&args.matches, location).load() {
        Err(error) => return refuse(error.to_string(), streams),
        Ok(file) => file,
    };
    let mut base = Base {
        run_words: &args.run_words,
        env,
        file: file.as_ref(),
        pinned: None,
        tools: None,
    };
    let probe = match base.plan(None) {
        Ok(plan) => plan,
        Err(message) => return refuse(message, streams),
    };
    base.pinned = Some(Pinned::of(&probe));
    base.tools = Some(
        probe
            .tools
            .as_ref()
            .map_or_else(Vec::new, |tools| tools.names.clone()),
    );
    let root = base
        .root()
        .ok()
        .and_then(|root| std::fs::canonicalize(root).ok());
    let one_runs = [
        ("--transcript", probe.transcript.is_some()),
        ("--output-last-message", probe.output_last_message.is_some()),
        ("--follow-up", !probe.follow_ups.is_empty()),
    ];
    if let Some((flag, _)) = one_runs.iter().find(|(_, given)| *given) {
        return refuse(
            format!(
                "{flag} is a single run's; leash batch writes each item's events with --events-dir"
            ),
            streams,
        );
    }
    if probe.attachments.stdin.is_some() {
        return refuse(
            "--attach - is a single run's; a batch's items cannot share one stdin (attach a file)"
                .to_owned(),
            streams,
        );
    }
    let source = Source::of(args.input.as_deref());
    let spooled = match unless_signalled(move || input::spool(&source)) {
        Ok(spooled) => spooled,
        Err(signal) => return stopped_reading(signal, streams),
    };
    let input_file = args.input.as_deref().filter(|path| *path != Path::new("-"));
    let mut protected = Protected::default();
    if let Some(input) = input_file {
        protected.path(input);
    }
    let (done, lines) = match &args.resume {
        Some(path) => match resume::resume(path, input_file) {
            Ok((done, file)) => {
                if let Ok(meta) = file.metadata() {
                    protected.meta(&meta);
                }
                (done, Lines::new(Box::new(file)))
            }
            Err(error) => {
                return refuse(
                    format!("cannot resume {}: {error}", path.display()),
                    streams,
                );
            }
        },
        None => (HashSet::new(), Lines::new(streams.stdout)),
    };
    // Every line is checked before anything runs: its root inside the
    // batch's, its events file no file it must not replace.
    let keep = |item: &input::Item| -> Result<bool, String> {
        if let Some(item_root) = &item.root {
            root_inside(root.as_deref(), item_root)?;
        }
        if let Some(dir) = &args.events_dir
            && let Some(conflict) = events::conflict(dir, &item.id, &protected)
        {
            return Err(format!("the id {:?}: {conflict}", item.id));
        }
        Ok(args.shard.is_none_or(|shard| shard.takes(item.index)) && !done.contains(&item.id))
    };
    let validated = match spooled.and_then(|spool| input::validate(spool, &keep)) {
        Ok(validated) => validated,
        Err(error) => {
            let streams = Streams {
                stdout: Box::new(std::io::sink()),
                stderr: streams.stderr,
            };
            return refuse(error.to_string(), streams);
        }
    };
    if let Some(dir) = &args.events_dir
        && let Err(error) = std::fs::create_dir_all(dir)
    {
        let streams = Streams {
            stdout: Box::new(std::io::sink()),
            stderr: streams.stderr,
        };
        return refuse(
            format!("cannot create --events-dir {}: {error}", dir.display()),
            streams,
        );
    }
    // From here on a signal is heard, and ends the batch with its code
    // and `batch_end` — also one that comes while the MCP servers start.
    let listeners = {
        let _context = runtime.enter();
        Listeners::install()
    };
    let (parallel, notice) = descriptors::fit_parallel(args.parallel);
    let mut stderr = streams.stderr;
    if let Some(notice) = notice {
        let _ = render::write_reason(&mut stderr, &notice);
    }
    let batch = Batch {
        args,
        parallel,
        base: &base,
        protected: &protected,
        root: root.as_deref(),
        probe: &probe,
        done,
        lines,
        stderr,
        terminal: stderr_is_terminal,
        listeners,
    };
    let status = runtime.block_on(batch.run(validated));
    runtime.shutdown_timeout(std::time::Duration::from_millis(100));
    status
}

/// A checked batch, ready to run.
struct Batch<'a> {
    args: &'a BatchArgs,
    /// How many items run at once: `--parallel`, within the open-file limit.
    parallel: usize,
    base: &'a Base<'a>,
    /// The files no events file may be.
    protected: &'a Protected,
    /// The batch's `--root`, canonical.
    root: Option<&'a Path>,
    /// The batch's own flags as a run's plan: the MCP servers, the budget.
    probe: &'a crate::config::RunPlan,
    /// Ids `--resume` found complete.
    done: HashSet<String>,
    lines: Lines,
    stderr: Box<dyn Write + Send>,
    terminal: bool,
    /// The signal handlers, installed at the batch's first instant.
    listeners: Option<Listeners>,
}

impl Batch<'_> {
    async fn run(mut self, validated: Validated) -> Status {
        let shard = self.args.shard;
        let total = validated.kept;
        let mut items = validated.items();
        let (abort_sender, abort) = watch::channel(None);
        let listeners = self.listeners.take();
        let watcher = tokio::spawn(watch_installed(
            listeners,
            None,
            tokio::sync::oneshot::channel().1,
            abort_sender,
        ));
        let mut abort_changed = abort.clone();
        // The batch's span begins first: its MCP servers start under it.
        let trace = self.begin_trace(total);
        let ambient = trace.as_ref().map(BatchTrace::ambient);
        let (mut servers, shared) = tokio::select! {
            started = trace_context::within(ambient, Shared::start(self.probe)) => started,
            // Stopped while the servers start: dropping the start stops
            // every server it began (each child's group is killed).
            _ = abort_changed.wait_for(Option::is_some) => {
                watcher.abort();
                let cause = *abort.borrow();
                return self.end(&Tally::new(total), total, cause, None);
            }
        };
        let mut shared = match shared {
            Ok(shared) => shared,
            Err(error) => {
                servers.stop().await;
                // A SIGINT to the process group also ends the servers: the
                // signal, not their failure, is why the batch stops.
                let mut abort_changed = abort.clone();
                let heard = tokio::time::timeout(
                    std::time::Duration::from_millis(200),
                    abort_changed.wait_for(Option::is_some),
                );
                if heard.await.is_ok() {
                    watcher.abort();
                    let cause = *abort.borrow();
                    return self.end(&Tally::new(total), total, cause, None);
                }
                watcher.abort();
                let why = error.to_string();
                if let Some(trace) = trace {
                    let (code, status) = (Status::Mcp.code(), Status::Mcp.as_str());
                    self.say(trace.finish(code, status, Some(&why)).await);
                }
                let _ = render::write_reason(&mut self.stderr, &why);
                return Status::Mcp;
            }
        };
        shared.tracing = trace
            .as_ref()
            .map_or(Tracing::Off, |trace| Tracing::Under(trace.parent()));
        let transport = Transport::new(self.probe, self.args.rate, self.args.tpm);
        let context = Context {
            base: self.base,
            shared: &shared,
            transport: &transport,
            events_dir: self.args.events_dir.as_deref(),
            protected: self.protected,
            root: self.root,
        };
        let budget_tokens = self.probe.limits.max_tokens_total;
        let budget_cost = self.probe.limits.max_cost.map(|cost| cost.usd());
        let mut tally = Tally::new(total);
        let mut progress = Progress::new(self.terminal, total);
        let mut order = Order::new(!self.args.unordered);
        let mut running = FuturesUnordered::new();
        let (mut started, mut exhausted, mut unread) = (0u64, false, None);
        let mut ticker = tokio::time::interval(progress::PIPE_EVERY);
        loop {
            let stopped = abort.borrow().is_some();
            let spent = budget_tokens.is_some_and(|limit| tally.tokens >= limit)
                || budget_cost.is_some_and(|limit| tally.cost.unwrap_or(0.0) >= limit);
            while running.len() < self.parallel && !exhausted && !stopped && !spent {
                match items.next() {
                    None => exhausted = true,
                    Some(Err(error)) => {
                        unread = Some(error.to_string());
                        exhausted = true;
                    }
                    Some(Ok(item)) => {
                        let skip = shard.is_some_and(|shard| !shard.takes(item.index))
                            || self.done.contains(&item.id);
                        if !skip {
                            let left = budget_tokens.map(|limit| limit - tally.tokens.min(limit));
                            running.push(run_item(item, started, &context, left));
                            started += 1;
                        }
                    }
                }
            }
            if running.is_empty() {
                break;
            }
            let mut abort_changed = abort.clone();
            tokio::select! {
                Some(finished) = running.next() => {
                    self.finished(finished, &mut tally, &mut order);
                    progress.show(&tally, self.stderr.as_mut());
                }
                _ = abort_changed.changed(), if !stopped => {}
                _ = ticker.tick() => progress.show(&tally, self.stderr.as_mut()),
            }
        }
        for line in order.rest() {
            self.lines.write(&line);
        }
        progress.finish();
        drop(running);
        servers.stop().await;
        watcher.abort();
        let not_started = total.saturating_sub(tally.done());
        let cause = *abort.borrow();
        let (status, why) = self.verdict(&tally, not_started, cause, unread);
        if let Some(trace) = trace {
            let failures = trace.finish(status.code(), status.as_str(), why.as_deref());
            self.say(failures.await);
        }
        self.write_end(&tally, not_started, status, why)
    }

    /// The batch's trace, its root span begun now, when traces are on;
    /// why traces that were asked for are off, said on stderr.
    fn begin_trace(&mut self, items: u64) -> Option<BatchTrace> {
        let shard = self
            .args
            .shard
            .map(|shard| format!("{}/{}", shard.index, shard.count));
        let keys = keys_of(self.probe);
        let parallel = u64::try_from(self.parallel).unwrap_or(u64::MAX);
        let settings = (&self.probe.traces, &self.probe.metrics);
        let (trace, notices) = BatchTrace::start(settings, keys, (items, parallel), shard);
        self.say(notices);
        trace
    }

    /// Lines about the batch's traces and metrics, on stderr.
    fn say(&mut self, lines: Vec<String>) {
        for line in lines {
            let _ = render::write_reason(&mut self.stderr, &line);
        }
    }

    /// Counts `finished` and writes the lines now due.
    fn finished(&mut self, finished: Finished, tally: &mut Tally, order: &mut Order) {
        tally.add(finished.status.as_str(), finished.tokens, finished.cost);
        for line in order.done(finished.position, finished.line) {
            self.lines.write(&line);
        }
    }

    /// The last lines: why (on failure), then the `batch_end` summary.
    fn end(
        &mut self,
        tally: &Tally,
        not_started: u64,
        cause: Option<AbortCause>,
        unread: Option<String>,
    ) -> Status {
        let (status, why) = self.verdict(tally, not_started, cause, unread);
        self.write_end(tally, not_started, status, why)
    }

    /// How the batch ended, and why (on failure).
    fn verdict(
        &self,
        tally: &Tally,
        not_started: u64,
        cause: Option<AbortCause>,
        unread: Option<String>,
    ) -> (Status, Option<String>) {
        let failed = tally.done() - tally.ok() + not_started;
        let (status, why) = match (cause, unread, self.lines.failure()) {
            (Some(cause), _, _) => (
                ending::status_of_abort(Some(cause)),
                Some(format!(
                    "stopped by a signal: {} of {} items done, the rest not started",
                    tally.done(),
                    tally.total
                )),
            ),
            (None, Some(unread), _) => (Status::Error, Some(unread)),
            (None, None, Some(failure)) if !failure.is_empty() => {
                (Status::Error, Some(failure.to_owned()))
            }
            _ if failed > 0 => (
                Status::BatchFailed,
                Some(format!(
                    "{failed} of {} items did not end ok ({})",
                    tally.total,
                    describe_failures(tally, not_started)
                )),
            ),
            _ => (Status::Ok, None),
        };
        (status, why)
    }

    /// Writes why (on failure), then the `batch_end` summary.
    fn write_end(
        &mut self,
        tally: &Tally,
        not_started: u64,
        status: Status,
        why: Option<String>,
    ) -> Status {
        if let Some(why) = why {
            let _ = render::write_reason(&mut self.stderr, &why);
        }
        let _ = writeln!(self.stderr, "{}", tally.summary(not_started));
        let _ = self.stderr.flush();
        status
    }
}

/// `error: 1, timeout: 2, not started: 3`.
fn describe_failures(tally: &Tally, not_started: u64) -> String {
    let mut parts: Vec<String> = tally
        .by_status
        .iter()
        .filter(|(status, _)| **status != "ok")
        .map(|(status, count)| format!("{status}: {count}"))
        .collect();
    if not_started > 0 {
        parts.push(format!(
            "not started: {not_started}, the batch's budget used up"
        ));
    }
    parts.join(", ")
}

//! The one-shot job: build the agent from a [`Config`], run the prompt
//! under the abort timer and signals, show events on stderr and the result
//! on stdout, and return the exit code. `main` only parses and calls this.
//!
//! Whatever happens, the run ends with a report: a `run_end` line (JSONL)
//! or a last stderr line in words on failure, and the result on stdout.
//!
//! Events and the transcript are written on threads of their own
//! ([`Lane`]): a pipe nobody reads never stalls the loop, the timer or a
//! signal, and once the run was stopped the exit waits for such a pipe
//! only [`GRACE`]. A result that could not be written (stdout, the
//! last-message file, the transcript) fails the run; only a reader that
//! went away (EPIPE) is quiet.

use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant as StdInstant};

use tokio::sync::{oneshot, watch};
use tokio::time::Instant;

use crate::agent::types::{AgentEvent, Message, Usage};
use crate::agent::{Agent, LoopConfig, QueueMode};
use crate::cli::{EventsFormat, OutputFormat};
use crate::config::{Config, ProviderConfig, ToolName};
use crate::guards::RunGuards;
use crate::input::{self, InputError};
use crate::outcome::{self, AbortCause, Detail, GuardReport, Signal, Status};
use crate::provider::anthropic::AnthropicProvider;
use crate::provider::faux::FauxProvider;
use crate::provider::openai::OpenAiProvider;
use crate::provider::{HttpSettings, Provider};
use crate::render::lane::Lane;
use crate::render::result::write_result;
use crate::render::text::TextRenderer;
use crate::render::{EventRenderer, RunReport, renderer};
use crate::tools::Tool;
use crate::tools::list_dir::ListDir;
use crate::tools::read_file::ReadFile;
use crate::tools::redact::{Redacted, key_set};
use crate::tools::sandbox::Sandbox;

/// How long the exit waits for stderr, stdout or the transcript once the
/// timer or a signal stopped the run: long enough for any live reader,
/// short enough that a pipe nobody reads does not hold the exit.
pub const GRACE: Duration = Duration::from_millis(500);

/// Where a run writes. The binary passes the process's streams; tests may
/// pass buffers.
pub struct Streams {
    /// The result goes here.
    pub stdout: Box<dyn Write + Send>,
    /// Events and the "why" line go here.
    pub stderr: Box<dyn Write + Send>,
}

impl Streams {
    /// The process's stdout and stderr.
    pub fn process() -> Self {
        Streams {
            stdout: Box::new(std::io::stdout()),
            stderr: Box::new(std::io::stderr()),
        }
    }
}

/// Runs the job described by `config` and returns how it ended.
pub async fn run(config: Config, streams: Streams) -> Status {
    let started = StdInstant::now();
    // A timeout too long for the clock (`--timeout 18446744073709551615`)
    // is no timer at all rather than an overflow panic.
    let deadline = config
        .timeout
        .and_then(|timeout| Instant::now().checked_add(timeout));
    let (abort_sender, abort) = watch::channel(None);
    let watcher = tokio::spawn(watch_for_aborts(deadline, abort_sender));
    let mut job = Job {
        events: Lane::new("leash-events", event_renderer(&config, streams.stderr)),
        config,
        started,
        stdout: Some(streams.stdout),
        last_message: None,
        transcript: None,
        deadline,
    };
    let status = job.execute(abort).await;
    watcher.abort();
    status
}

struct Job {
    config: Config,
    started: StdInstant,
    /// The `--events` renderer, on its own thread.
    events: Lane<Box<dyn EventRenderer>>,
    /// Taken by the final report.
    stdout: Option<Box<dyn Write + Send>>,
    /// `--output-last-message`, created (emptied) before anything else.
    last_message: Option<File>,
    /// `--transcript`, on its own thread.
    transcript: Option<Lane<Transcript>>,
    deadline: Option<Instant>,
}

/// The `--transcript` file: one message per line, each flushed so the file
/// stays whole if the process is killed afterwards. After a failed write
/// nothing more is written; the failure is kept for the final report,
/// unless the reader of a pipe went away.
struct Transcript {
    writer: BufWriter<File>,
    path: PathBuf,
    stopped: bool,
    failure: Option<String>,
}

impl Transcript {
    fn write(&mut self, message: &Message) {
        if self.stopped {
            return;
        }
        let written = serde_json::to_writer(&mut self.writer, message)
            .map_err(io::Error::from)
            .and_then(|()| self.writer.write_all(b"\n"))
            .and_then(|()| self.writer.flush());
        if let Err(error) = written {
            self.stopped = true;
            if !reader_left(&error) {
                self.failure = Some(format!(
                    "cannot write --transcript {}: {error}",
                    self.path.display()
                ));
            }
        }
    }
}

/// The renderer of `--events`, using the terminal as the config allows.
fn event_renderer(config: &Config, stderr: Box<dyn Write + Send>) -> Box<dyn EventRenderer> {
    match config.events {
        EventsFormat::Jsonl => renderer(EventsFormat::Jsonl, stderr),
        format => Box::new(
            TextRenderer::new(stderr, format == EventsFormat::Text)
                .with_terminal(config.terminal, &config.model),
        ),
    }
}

/// How a wait for an output lane ended.
enum Waited<R> {
    /// The lane answered.
    Done(R),
    /// The lane's thread is gone without an answer.
    Lost,
    /// The run was stopped and the lane did not answer within [`GRACE`].
    GaveUp,
}

/// Waits for an output lane's `answer`. A slow reader is waited for as long
/// as it takes; once the timer or a signal fires (or if it already has),
/// [`GRACE`] more at most.
async fn wait_for_lane<R>(
    answer: oneshot::Receiver<R>,
    abort: &mut watch::Receiver<Option<AbortCause>>,
) -> Waited<R> {
    let mut answer = answer;
    if abort.borrow().is_none() {
        let stopped = async {
            // Without a sender (no signal handlers, no timer) nothing stops the run.
            if abort.wait_for(Option::is_some).await.is_err() {
                std::future::pending::<()>().await;
            }
        };
        tokio::select! {
            answered = &mut answer => {
                return answered.map_or(Waited::Lost, Waited::Done);
            }
            () = stopped => {}
        }
    }
    match tokio::time::timeout(GRACE, answer).await {
        Ok(Ok(value)) => Waited::Done(value),
        Ok(Err(_)) => Waited::Lost,
        Err(_) => Waited::GaveUp,
    }
}

impl Job {
    async fn execute(&mut self, mut abort: watch::Receiver<Option<AbortCause>>) -> Status {
        // Emptied first, so a stale reply never passes for this run's.
        if let Some(path) = &self.config.output_last_message {
            match File::create(path) {
                Ok(file) => self.last_message = Some(file),
                Err(error) => {
                    let message = format!(
                        "cannot write --output-last-message {}: {error}",
                        path.display()
                    );
                    let report = self.report_without_run(Status::Usage, Some(message));
                    return self.deliver(report, &mut abort).await;
                }
            }
        }
        // The prompt, with stdin; a signal or the timer may end the wait.
        let read = input::read_prompt(self.config.prompt.clone(), self.config.stdin, self.deadline);
        let prompt = tokio::select! {
            read = read => Ok(read),
            cause = abort.wait_for(Option::is_some) => Err(cause.ok().and_then(|c| *c)),
        };
        let prompt = match prompt {
            Ok(prompt) => prompt,
            Err(cause) => {
                let report = self.report_without_run(outcome::status_of_abort(cause), None);
                return self.deliver(report, &mut abort).await;
            }
        };
        let prompt = match prompt {
            Ok(prompt) => prompt,
            Err(InputError::Timeout) => {
                let report = self.report_without_run(Status::Timeout, None);
                return self.deliver(report, &mut abort).await;
            }
            Err(error) => {
                let report = self.report_without_run(Status::Usage, Some(error.to_string()));
                return self.deliver(report, &mut abort).await;
            }
        };
        if let Some(notice) = prompt.notice.clone() {
            self.events.submit(move |renderer| renderer.notice(&notice));
        }

        let prepared = self
            .provider()
            .and_then(|provider| Ok((provider, self.tools()?)))
            .and_then(|(provider, tools)| Ok((provider, tools, self.open_transcript()?)));
        let (provider, tools, transcript) = match prepared {
            Ok(prepared) => prepared,
            Err(message) => {
                let report = self.report_without_run(Status::Usage, Some(message));
                return self.deliver(report, &mut abort).await;
            }
        };
        self.transcript = transcript;

        let guards = Arc::new(
            RunGuards::new(self.config.max_turns, self.config.max_same_call)
                .with_budget(self.config.max_tokens_total)
                .with_output_schema(self.config.output_schema.clone()),
        );
        let agent = Agent::new(
            provider,
            LoopConfig {
                model: self.config.model.clone(),
                system: self.config.system.clone(),
                tools,
                tool_execution: self.config.tool_execution,
                hooks: guards.clone(),
            },
        );
        guards.attach(agent.queue_handle());
        agent.set_follow_up_mode(QueueMode::OneAtATime);
        for text in &self.config.follow_ups {
            agent.follow_up(Message::user_text(text.clone()));
        }
        // Listeners only hand events over: no write can stall the loop.
        let events = self.events.clone();
        let _events = agent.subscribe(move |event| {
            let event = event.clone();
            events.submit(move |renderer| renderer.event(&event));
        });
        let _transcript = self.transcript.clone().map(|transcript| {
            agent.subscribe(move |event| {
                if let AgentEvent::MessageEnd { message } = event {
                    let message = message.clone();
                    transcript.submit(move |writer| writer.write(&message));
                }
            })
        });

        let run = agent.prompt(vec![Message::user_text(prompt.text)]);
        let aborter = async {
            let cause = abort.wait_for(Option::is_some).await.ok().and_then(|c| *c);
            agent.abort();
            std::future::pending::<Option<AbortCause>>().await;
            cause
        };
        // `run` is polled first so the run exists before any abort lands.
        let messages = tokio::select! {
            biased;
            messages = run => messages.unwrap_or_default(),
            _ = aborter => Vec::new(),
        };
        let cause = *abort.borrow();
        let report = self.report(&messages, cause, guards.report());
        self.deliver(report, &mut abort).await
    }

    /// The report of a run that happened: decides the status and says why.
    fn report(
        &self,
        messages: &[Message],
        cause: Option<AbortCause>,
        guards: GuardReport,
    ) -> RunReport {
        let mut status = outcome::decide_status(messages, cause, guards);
        let last = outcome::final_assistant(messages);
        let reply = last.map(|m| m.text()).unwrap_or_default();
        let mut error_message = last.and_then(|m| m.error_message.clone());
        // The final check of `--output-schema`; the guards already gave the
        // model its one corrective turn.
        let mut output = None;
        if let (Status::Ok, Some(schema)) = (status, &self.config.output_schema) {
            match schema.check(&reply) {
                Ok(value) => output = Some(value),
                Err(problem) => {
                    status = Status::InvalidOutput;
                    error_message = Some(problem.summary());
                }
            }
        }
        let mut usage = Usage::default();
        let mut turns = 0;
        for message in messages {
            if let Message::Assistant(assistant) = message {
                usage.add(&assistant.usage);
                turns += 1;
            }
        }
        let terminate_reason = last_batch_reason(messages);
        let detail = Detail {
            error_message: error_message.as_deref(),
            turns,
            terminate_reason: terminate_reason.as_deref(),
            timeout: self.config.timeout,
            budget: self
                .config
                .max_tokens_total
                .map(|limit| (guards.tokens_used, limit)),
            corrected: guards.corrected,
        };
        let message = outcome::describe(status, &detail);
        RunReport {
            status,
            message,
            reply,
            output,
            stop_reason: last.map(|m| m.stop_reason),
            error_message,
            turns,
            usage,
            duration_ms: self.started.elapsed().as_millis() as u64,
            provider: self.config.provider.name().to_owned(),
            model: self.config.model.clone(),
        }
    }

    /// The report of a run that never started (usage error, or stopped
    /// while reading stdin).
    fn report_without_run(&self, status: Status, error: Option<String>) -> RunReport {
        let detail = Detail {
            error_message: error.as_deref(),
            timeout: self.config.timeout,
            ..Detail::default()
        };
        RunReport {
            status,
            message: outcome::describe(status, &detail),
            reply: String::new(),
            output: None,
            stop_reason: None,
            error_message: error,
            turns: 0,
            usage: Usage::default(),
            duration_ms: self.started.elapsed().as_millis() as u64,
            provider: self.config.provider.name().to_owned(),
            model: self.config.model.clone(),
        }
    }

    /// Writes the end of the run (transcript done, last message, stdout,
    /// the `run_end` / "why" line) and returns the exit code. When the run
    /// was stopped and an output does not take its writes, the exit goes
    /// on without it after [`GRACE`], with the code of what stopped it.
    async fn deliver(
        &mut self,
        report: RunReport,
        abort: &mut watch::Receiver<Option<AbortCause>>,
    ) -> Status {
        let stopped =
            |abort: &watch::Receiver<Option<AbortCause>>| outcome::status_of_abort(*abort.borrow());
        let mut failures = Vec::new();
        if let Some(transcript) = self.transcript.take() {
            match wait_for_lane(transcript.call(|writer| writer.failure.take()), abort).await {
                Waited::Done(failure) => failures.extend(failure),
                Waited::Lost => {}
                Waited::GaveUp => return stopped(abort),
            }
        }
        let status = report.status;
        let output = self.config.output;
        let mut stdout = self.stdout.take().unwrap_or_else(|| Box::new(io::sink()));
        let last_message = self.last_message.take().map(|file| {
            let path = self.config.output_last_message.clone().unwrap_or_default();
            (path, file)
        });
        let done = self.events.call(move |renderer| {
            let mut last_message = last_message;
            let last_message = last_message
                .as_mut()
                .map(|(path, file)| (path.as_path(), file));
            finish_output(
                report,
                failures,
                renderer.as_mut(),
                output,
                &mut stdout,
                last_message,
            )
        });
        match wait_for_lane(done, abort).await {
            Waited::Done(status) => status,
            Waited::Lost => status,
            Waited::GaveUp => stopped(abort),
        }
    }

    fn provider(&self) -> Result<Arc<dyn Provider>, String> {
        Ok(match &self.config.provider {
            ProviderConfig::Faux(script) => Arc::new(FauxProvider::new(script.clone())),
            ProviderConfig::OpenAi(settings) => {
                Arc::new(OpenAiProvider::new(self.run_settings(settings)))
            }
            ProviderConfig::Anthropic(settings) => {
                Arc::new(AnthropicProvider::new(self.run_settings(settings)))
            }
        })
    }

    /// The provider settings of this run: its deadline, its output schema.
    fn run_settings(&self, settings: &HttpSettings) -> HttpSettings {
        HttpSettings {
            deadline: self.deadline,
            output_schema: self
                .config
                .output_schema
                .as_ref()
                .map(|schema| schema.schema().clone()),
            ..settings.clone()
        }
    }

    fn tools(&self) -> Result<Vec<Arc<dyn Tool>>, String> {
        if self.config.tools.is_empty() {
            return Ok(Vec::new());
        }
        let sandbox = Sandbox::new(&self.config.root)
            .map(Arc::new)
            .map_err(|error| format!("invalid --root {}: {error}", self.config.root.display()))?;
        // The run's key and every other key leash knows never reach the
        // context through a tool.
        let run_key = match &self.config.provider {
            ProviderConfig::OpenAi(settings) | ProviderConfig::Anthropic(settings) => {
                settings.api_key.clone()
            }
            ProviderConfig::Faux(_) => None,
        };
        let keys = key_set(run_key.into_iter().chain(self.config.known_keys.clone()));
        Ok(self
            .config
            .tools
            .iter()
            .map(|name| -> Arc<dyn Tool> {
                let tool: Arc<dyn Tool> = match name {
                    ToolName::ReadFile => Arc::new(ReadFile::new(Arc::clone(&sandbox))),
                    ToolName::ListDir => Arc::new(ListDir::new(Arc::clone(&sandbox))),
                };
                Arc::new(Redacted::new(tool, Arc::clone(&keys)))
            })
            .collect())
    }

    fn open_transcript(&self) -> Result<Option<Lane<Transcript>>, String> {
        let Some(path) = &self.config.transcript else {
            return Ok(None);
        };
        let writer = create_transcript(path)?;
        Ok(Some(Lane::new(
            "leash-transcript",
            Transcript {
                writer,
                path: path.clone(),
                stopped: false,
                failure: None,
            },
        )))
    }
}

/// Writes the end of a run: the last-message file, the result on stdout,
/// then the `run_end` / "why" line on stderr. `failures` are writes that
/// already failed (the transcript); with each new one the report changes
/// before anything else is written, so every output tells the same story.
/// Returns how the run ended, after the writes.
fn finish_output(
    mut report: RunReport,
    failures: Vec<String>,
    renderer: &mut dyn EventRenderer,
    output: OutputFormat,
    stdout: &mut dyn Write,
    last_message: Option<(&Path, &mut File)>,
) -> Status {
    for failure in failures {
        write_failed(&mut report, failure, renderer);
    }
    if let Some((path, file)) = last_message
        && let Err(error) = write_result(OutputFormat::Text, &report, file)
        && !reader_left(&error)
    {
        let failure = format!(
            "cannot write --output-last-message {}: {error}",
            path.display()
        );
        write_failed(&mut report, failure, renderer);
    }
    renderer.settle();
    if let Err(error) = write_result(output, &report, stdout)
        && !reader_left(&error)
    {
        write_failed(
            &mut report,
            format!("cannot write the result to stdout: {error}"),
            renderer,
        );
    }
    renderer.run_end(&report);
    report.status
}

/// A reader that went away (`| head -c1`) is not a failure of the run.
fn reader_left(error: &io::Error) -> bool {
    error.kind() == io::ErrorKind::BrokenPipe
}

/// A result could not be written: a run that had succeeded now fails and
/// says so (SPEC 2.1's rule in [`outcome::after_write_failure`]); a run that
/// had failed keeps its reason as the last line, after a notice.
fn write_failed(report: &mut RunReport, failure: String, renderer: &mut dyn EventRenderer) {
    let status = outcome::after_write_failure(report.status);
    if status == report.status {
        renderer.notice(&failure);
        return;
    }
    report.status = status;
    report.message = failure.clone();
    report.error_message = Some(failure);
}

/// Reports a configuration error found before any run could be built
/// (`usage`), in the format the flags asked for.
pub fn report_usage_error(
    message: String,
    events: EventsFormat,
    output: OutputFormat,
    streams: Streams,
) -> Status {
    let report = RunReport {
        status: Status::Usage,
        message: message.clone(),
        reply: String::new(),
        output: None,
        stop_reason: None,
        error_message: Some(message),
        turns: 0,
        usage: Usage::default(),
        duration_ms: 0,
        provider: String::new(),
        model: String::new(),
    };
    let mut stdout = streams.stdout;
    finish_output(
        report,
        Vec::new(),
        renderer(events, streams.stderr).as_mut(),
        output,
        &mut stdout,
        None,
    )
}

fn create_transcript(path: &Path) -> Result<BufWriter<File>, String> {
    File::create(path)
        .map(BufWriter::new)
        .map_err(|error| format!("cannot write --transcript {}: {error}", path.display()))
}

/// The text of the first result of the final batch, when the run ended
/// right after one (why it terminated).
fn last_batch_reason(messages: &[Message]) -> Option<String> {
    let mut reason = None;
    for message in messages.iter().rev() {
        match message {
            Message::ToolResult(result) => reason = Some(result.text()),
            _ => break,
        }
    }
    reason
}

/// Waits for the timer or a signal and publishes the cause. A second
/// SIGINT, SIGTERM or SIGHUP while the run is winding down exits at once.
async fn watch_for_aborts(deadline: Option<Instant>, cause: watch::Sender<Option<AbortCause>>) {
    use tokio::signal::unix::{SignalKind, signal};
    let (Ok(mut interrupt), Ok(mut terminate), Ok(mut hangup)) = (
        signal(SignalKind::interrupt()),
        signal(SignalKind::terminate()),
        signal(SignalKind::hangup()),
    ) else {
        // Without signal handlers the timer still works.
        if let Some(deadline) = deadline {
            tokio::time::sleep_until(deadline).await;
            cause.send_replace(Some(AbortCause::Timeout));
        }
        return;
    };
    let timer = async {
        match deadline {
            Some(deadline) => tokio::time::sleep_until(deadline).await,
            None => std::future::pending().await,
        }
    };
    let first = tokio::select! {
        _ = timer => AbortCause::Timeout,
        _ = interrupt.recv() => AbortCause::Signal(Signal::Interrupt),
        _ = terminate.recv() => AbortCause::Signal(Signal::Terminate),
        _ = hangup.recv() => AbortCause::Signal(Signal::Hangup),
    };
    cause.send_replace(Some(first));
    let second = tokio::select! {
        _ = interrupt.recv() => Signal::Interrupt,
        _ = terminate.recv() => Signal::Terminate,
        _ = hangup.recv() => Signal::Hangup,
    };
    std::process::exit(Status::Interrupted(second).code().into())
}

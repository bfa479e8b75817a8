//! The one-shot job: build the agent from a [`Config`], run the prompt
//! under the abort timer and signals, show events on stderr and the result
//! on stdout, and return the exit code. `main` only parses and calls this.
//!
//! Whatever happens, the run ends with a report: a `run_end` line (JSONL)
//! or a last stderr line in words on failure, and the result on stdout.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::Path;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Instant as StdInstant;

use tokio::sync::watch;
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
use crate::render::result::write_result;
use crate::render::text::TextRenderer;
use crate::render::{EventRenderer, RunReport, renderer};
use crate::tools::Tool;
use crate::tools::list_dir::ListDir;
use crate::tools::read_file::ReadFile;
use crate::tools::sandbox::Sandbox;

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

/// Runs the job described by `config` and returns the process exit code.
pub async fn run(config: Config, streams: Streams) -> u8 {
    let started = StdInstant::now();
    // A timeout too long for the clock (`--timeout 18446744073709551615`)
    // is no timer at all rather than an overflow panic.
    let deadline = config
        .timeout
        .and_then(|timeout| Instant::now().checked_add(timeout));
    let (abort_sender, abort) = watch::channel(None);
    let watcher = tokio::spawn(watch_for_aborts(deadline, abort_sender));
    let mut job = Job {
        renderer: Arc::new(Mutex::new(event_renderer(&config, streams.stderr))),
        config,
        started,
        stdout: streams.stdout,
        last_message: None,
        deadline,
    };
    let code = job.execute(abort).await;
    watcher.abort();
    code
}

struct Job {
    config: Config,
    started: StdInstant,
    renderer: Arc<Mutex<Box<dyn EventRenderer>>>,
    stdout: Box<dyn Write + Send>,
    /// `--output-last-message`, created (emptied) before anything else.
    last_message: Option<File>,
    deadline: Option<Instant>,
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

impl Job {
    async fn execute(&mut self, mut abort: watch::Receiver<Option<AbortCause>>) -> u8 {
        // Emptied first, so a stale reply never passes for this run's.
        if let Some(path) = &self.config.output_last_message {
            match File::create(path) {
                Ok(file) => self.last_message = Some(file),
                Err(error) => {
                    let message = format!(
                        "cannot write --output-last-message {}: {error}",
                        path.display()
                    );
                    return self.finish_without_run(Status::Usage, None, Some(message));
                }
            }
        }
        // The prompt, with stdin; a signal or the timer may end the wait.
        let read = input::read_prompt(self.config.prompt.clone(), self.config.stdin, self.deadline);
        let prompt = tokio::select! {
            read = read => read,
            cause = abort.wait_for(Option::is_some) => {
                let cause = cause.ok().and_then(|c| *c);
                return self.finish_without_run(status_of_abort(cause), cause, None);
            }
        };
        let prompt = match prompt {
            Ok(prompt) => prompt,
            Err(InputError::Timeout) => {
                return self.finish_without_run(Status::Timeout, Some(AbortCause::Timeout), None);
            }
            Err(error) => {
                return self.finish_without_run(Status::Usage, None, Some(error.to_string()));
            }
        };
        if let Some(notice) = &prompt.notice {
            self.with_renderer(|r| r.notice(notice));
        }

        let provider = match self.provider() {
            Ok(provider) => provider,
            Err(message) => return self.finish_without_run(Status::Usage, None, Some(message)),
        };
        let tools = match self.tools() {
            Ok(tools) => tools,
            Err(message) => return self.finish_without_run(Status::Usage, None, Some(message)),
        };
        let transcript = match self.open_transcript() {
            Ok(transcript) => transcript,
            Err(message) => return self.finish_without_run(Status::Usage, None, Some(message)),
        };

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
        let renderer = Arc::clone(&self.renderer);
        let _events = agent.subscribe(move |event| {
            renderer
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .event(event);
        });
        let _transcript = transcript.map(|writer| {
            let writer = Mutex::new(writer);
            agent.subscribe(move |event| {
                if let AgentEvent::MessageEnd { message } = event {
                    let mut writer = writer.lock().unwrap_or_else(PoisonError::into_inner);
                    // Each line is flushed so a transcript stays complete
                    // even if the process is killed afterwards.
                    let _ = serde_json::to_writer(&mut *writer, message);
                    let _ = writer.write_all(b"\n");
                    let _ = writer.flush();
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
        self.finish(&messages, cause, guards.report())
    }

    /// Ends a run that happened: decides the status and reports it.
    fn finish(
        &mut self,
        messages: &[Message],
        cause: Option<AbortCause>,
        guards: GuardReport,
    ) -> u8 {
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
        };
        let message = outcome::describe(status, cause, &detail);
        let report = RunReport {
            status,
            exit_code: outcome::exit_code(status, cause),
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
        };
        self.report(&report)
    }

    /// Ends a run that never started (usage error, or stopped while reading stdin).
    fn finish_without_run(
        &mut self,
        status: Status,
        cause: Option<AbortCause>,
        error: Option<String>,
    ) -> u8 {
        let detail = Detail {
            error_message: error.as_deref(),
            timeout: self.config.timeout,
            ..Detail::default()
        };
        let report = RunReport {
            status,
            exit_code: outcome::exit_code(status, cause),
            message: outcome::describe(status, cause, &detail),
            reply: String::new(),
            output: None,
            stop_reason: None,
            error_message: error,
            turns: 0,
            usage: Usage::default(),
            duration_ms: self.started.elapsed().as_millis() as u64,
            provider: self.config.provider.name().to_owned(),
            model: self.config.model.clone(),
        };
        self.report(&report)
    }

    fn report(&mut self, report: &RunReport) -> u8 {
        let mut renderer = self.renderer.lock().unwrap_or_else(PoisonError::into_inner);
        // Before the end line, so a failure to write it is not the last word.
        if let Some(file) = &mut self.last_message
            && let Err(error) = write_result(OutputFormat::Text, report, file)
        {
            let path = self
                .config
                .output_last_message
                .as_deref()
                .unwrap_or(Path::new(""));
            renderer.notice(&format!(
                "cannot write --output-last-message {}: {error}",
                path.display()
            ));
        }
        deliver(
            report,
            renderer.as_mut(),
            self.config.output,
            &mut self.stdout,
        )
    }

    fn with_renderer(&self, f: impl FnOnce(&mut dyn EventRenderer)) {
        let mut renderer = self.renderer.lock().unwrap_or_else(PoisonError::into_inner);
        f(renderer.as_mut());
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
        Ok(self
            .config
            .tools
            .iter()
            .map(|name| -> Arc<dyn Tool> {
                match name {
                    ToolName::ReadFile => Arc::new(ReadFile::new(Arc::clone(&sandbox))),
                    ToolName::ListDir => Arc::new(ListDir::new(Arc::clone(&sandbox))),
                }
            })
            .collect())
    }

    fn open_transcript(&self) -> Result<Option<BufWriter<File>>, String> {
        let Some(path) = &self.config.transcript else {
            return Ok(None);
        };
        create_transcript(path).map(Some)
    }
}

/// Writes the end of a run: the `run_end` / "why" line on stderr, the
/// result on stdout. Returns the exit code.
fn deliver(
    report: &RunReport,
    renderer: &mut dyn EventRenderer,
    output: OutputFormat,
    stdout: &mut dyn Write,
) -> u8 {
    renderer.run_end(report);
    // A closed stdout (`| head -c1`) is not an error of the run.
    let _ = write_result(output, report, stdout);
    report.exit_code
}

/// Reports a configuration error found before any run could be built
/// (exit 2), in the format the flags asked for.
pub fn report_usage_error(
    message: String,
    events: EventsFormat,
    output: OutputFormat,
    streams: Streams,
) -> u8 {
    let status = Status::Usage;
    let report = RunReport {
        status,
        exit_code: outcome::exit_code(status, None),
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
    deliver(
        &report,
        renderer(events, streams.stderr).as_mut(),
        output,
        &mut stdout,
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

fn status_of_abort(cause: Option<AbortCause>) -> Status {
    match cause {
        Some(AbortCause::Timeout) => Status::Timeout,
        _ => Status::Interrupted,
    }
}

/// Waits for the timer or a signal and publishes the cause. A second
/// SIGINT (or SIGTERM) while the run is winding down exits at once.
async fn watch_for_aborts(deadline: Option<Instant>, cause: watch::Sender<Option<AbortCause>>) {
    use tokio::signal::unix::{SignalKind, signal};
    let (Ok(mut interrupt), Ok(mut terminate)) = (
        signal(SignalKind::interrupt()),
        signal(SignalKind::terminate()),
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
    };
    cause.send_replace(Some(first));
    tokio::select! {
        _ = interrupt.recv() => std::process::exit(130),
        _ = terminate.recv() => std::process::exit(143),
    }
}

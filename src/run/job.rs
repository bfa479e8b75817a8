//! The one-shot job: a [`RunPlan`] in, how the run ended out, in three
//! steps — `prepare` (the outputs, the prompt, the agent with its limits),
//! `run_agent` (the prompt under the abort timer and signals) and the
//! report (`report`, then `deliver` in [`crate::run::report`]: the result
//! on stdout, the events and the "why" line on stderr). `main` only parses
//! and calls [`run`].
//!
//! Whatever happens, the run ends with a report: a `run_end` line (JSONL)
//! or a last stderr line in words on failure, and the result on stdout.
//!
//! Events and the transcript are written on threads of their own
//! ([`Lane`]): a pipe nobody reads never stalls the loop, the timer or a
//! signal, and once the run was stopped the exit waits for such a pipe
//! only [`GRACE`](crate::run::signals::GRACE). A result that could not be
//! written (stdout, the last-message file, the transcript) fails the run;
//! only a reader that went away (EPIPE) is quiet.

use std::fs::File;
use std::io::{self, Write};
use std::path::Path;
use std::sync::Arc;
use std::time::Instant as StdInstant;

use tokio::sync::watch;

use crate::agent::types::AgentEvent;

use crate::agent::{Agent, LoopConfig, QueueHandle, QueueMode, Subscription};
use crate::cli::EventsFormat;
use crate::config::{ProviderConfig, RunPlan, ToolName};
use crate::protocol::Message;
use crate::provider::Provider;
use crate::provider::anthropic::AnthropicProvider;
use crate::provider::faux::FauxProvider;
use crate::provider::openai::OpenAiProvider;
use crate::render::lane::Lane;
use crate::render::text::TextRenderer;
use crate::render::transcript::Transcript;
use crate::render::{EventRenderer, renderer};
use crate::run::input::{self, InputError};
use crate::run::limits::RunLimits;
use crate::run::outcome::{self, AbortCause, LimitReport, Status};
use crate::run::signals::watch_for_aborts;
use crate::tools::Tool;
use crate::tools::find::Find;
use crate::tools::grep::Grep;
use crate::tools::list_dir::ListDir;
use crate::tools::read_file::ReadFile;
use crate::tools::redact::{Redacted, key_set};

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

/// A run the plan allowed that still could not start: a usage error
/// (exit 2) found while preparing it.
#[derive(Debug, thiserror::Error)]
pub enum UsageError {
    /// An output file (`--output-last-message`, `--transcript`) could not
    /// be created.
    #[error("cannot write {flag} {path}: {source}")]
    Create {
        /// The flag that named it.
        flag: &'static str,
        /// The file.
        path: String,
        /// Why.
        source: io::Error,
    },
    /// No usable prompt (empty, unreadable stdin, ...).
    #[error(transparent)]
    Prompt(InputError),
}

/// Why a run never started.
enum NotStarted {
    /// A usage error.
    Usage(UsageError),
    /// The timer or a signal stopped it while stdin was read.
    Stopped(Option<AbortCause>),
}

/// Runs the job `plan` describes and returns how it ended.
pub async fn run(plan: RunPlan, streams: Streams) -> Status {
    let (abort_sender, mut abort) = watch::channel(None);
    let watcher = tokio::spawn(watch_for_aborts(plan.deadline, abort_sender));
    let mut job = Job {
        started: StdInstant::now(),
        events: Lane::new("leash-events", event_renderer(&plan, streams.stderr)),
        plan,
        stdout: Some(streams.stdout),
        last_message: None,
        transcript: None,
    };
    let report = match job.prepare(&mut abort).await {
        Ok(prepared) => {
            let (messages, limits) = job.run_agent(prepared, &mut abort).await;
            let cause = *abort.borrow();
            job.report(&messages, cause, limits)
        }
        Err(NotStarted::Usage(error)) => {
            job.report_without_run(Status::Usage, Some(error.to_string()))
        }
        Err(NotStarted::Stopped(cause)) => {
            job.report_without_run(outcome::status_of_abort(cause), None)
        }
    };
    let status = job.deliver(report, &mut abort).await;
    watcher.abort();
    status
}

pub(super) struct Job {
    pub(super) plan: RunPlan,
    pub(super) started: StdInstant,
    /// The `--events` renderer, on its own thread.
    pub(super) events: Lane<Box<dyn EventRenderer>>,
    /// Taken by the final report.
    pub(super) stdout: Option<Box<dyn Write + Send>>,
    /// `--output-last-message`, created (emptied) before anything else.
    pub(super) last_message: Option<File>,
    /// `--transcript`, on its own thread.
    pub(super) transcript: Option<Lane<Transcript>>,
}

/// A run ready to start: its prompt, and its agent with the limits as hooks
/// and the listeners that hand events to the output lanes.
struct Prepared {
    prompt: String,
    agent: Agent,
    limits: Arc<RunLimits>,
    _listeners: Vec<Subscription>,
}

/// The usage error of an output file `flag` names that could not be created.
fn not_created<'a>(
    flag: &'static str,
    path: &'a Path,
) -> impl FnOnce(io::Error) -> NotStarted + 'a {
    move |source| {
        NotStarted::Usage(UsageError::Create {
            flag,
            path: path.display().to_string(),
            source,
        })
    }
}

/// The renderer of `--events`, using the terminal as the plan allows.
fn event_renderer(plan: &RunPlan, stderr: Box<dyn Write + Send>) -> Box<dyn EventRenderer> {
    match plan.events {
        EventsFormat::Jsonl => renderer(EventsFormat::Jsonl, stderr),
        format => Box::new(
            TextRenderer::new(stderr, format == EventsFormat::Text)
                .with_terminal(plan.terminal, &plan.model),
        ),
    }
}

/// Creates (empties) an output file on a thread of its own, and gives up
/// when the run is stopped first: opening a FIFO that nobody reads blocks
/// in the kernel, and the timer and the signals must still end the run.
/// The thread is a plain one, so it never holds the exit.
async fn create_output(
    path: &Path,
    abort: &mut watch::Receiver<Option<AbortCause>>,
) -> Result<io::Result<File>, NotStarted> {
    let (answer, answered) = tokio::sync::oneshot::channel();
    let owned = path.to_owned();
    let spawned = std::thread::Builder::new()
        .name("leash-create".to_owned())
        .spawn(move || {
            let _ = answer.send(File::create(owned));
        });
    if let Err(error) = spawned {
        return Ok(Err(error));
    }
    tokio::select! {
        created = answered => Ok(created.unwrap_or_else(|_| {
            Err(io::Error::other("the thread creating the file stopped"))
        })),
        cause = abort.wait_for(Option::is_some) => {
            Err(NotStarted::Stopped(cause.ok().and_then(|c| *c)))
        }
    }
}

impl Job {
    /// Creates the output files, reads the prompt (a signal or the timer
    /// may end the wait) and builds the agent.
    async fn prepare(
        &mut self,
        abort: &mut watch::Receiver<Option<AbortCause>>,
    ) -> Result<Prepared, NotStarted> {
        // Emptied first, so a stale reply never passes for this run's.
        if let Some(path) = &self.plan.output_last_message {
            let file = create_output(path, abort).await?;
            self.last_message = Some(file.map_err(not_created("--output-last-message", path))?);
        }
        let read = input::read_prompt(
            self.plan.prompt.clone(),
            self.plan.stdin,
            self.plan.deadline,
        );
        let prompt = tokio::select! {
            read = read => read,
            cause = abort.wait_for(Option::is_some) => {
                return Err(NotStarted::Stopped(cause.ok().and_then(|c| *c)));
            }
        };
        let prompt = match prompt {
            Ok(prompt) => prompt,
            Err(InputError::Timeout) => {
                return Err(NotStarted::Stopped(Some(AbortCause::Timeout)));
            }
            Err(error) => return Err(NotStarted::Usage(UsageError::Prompt(error))),
        };
        if let Some(notice) = prompt.notice.clone() {
            self.events.submit(move |renderer| renderer.notice(&notice));
        }
        if let Some(path) = &self.plan.transcript {
            let file = create_output(path, abort).await?;
            let file = file.map_err(not_created("--transcript", path))?;
            self.transcript = Some(Lane::new("leash-transcript", Transcript::new(file, path)));
        }

        // The queues exist before the agent and its limits, so the limits
        // can steer the run (the `--output-schema` correction) from the start.
        let queues = QueueHandle::default();
        let limits = Arc::new(RunLimits::new(self.plan.limits.clone(), queues.clone()));
        let agent = Agent::with_queues(
            self.provider(),
            LoopConfig {
                model: self.plan.model.clone(),
                system: self.plan.system.clone(),
                tools: self.tools(),
                tool_execution: self.plan.tool_execution,
                hooks: limits.clone(),
            },
            queues,
        );
        agent.set_follow_up_mode(QueueMode::OneAtATime);
        for text in &self.plan.follow_ups {
            agent.follow_up(Message::user_text(text.clone()));
        }
        // Listeners only hand events over: no write can stall the loop.
        let events = self.events.clone();
        let mut listeners = vec![agent.subscribe(move |event| {
            let event = event.clone();
            events.submit(move |renderer| renderer.event(&event));
        })];
        if let Some(transcript) = self.transcript.clone() {
            listeners.push(agent.subscribe(move |event| {
                if let AgentEvent::MessageEnd { message } = event {
                    let message = message.clone();
                    transcript.submit(move |writer| writer.write(&message));
                }
            }));
        }
        Ok(Prepared {
            prompt: prompt.text,
            agent,
            limits,
            _listeners: listeners,
        })
    }

    /// Runs the prompt until it ends or the timer or a signal stops it;
    /// returns the messages it added and what the limits saw.
    async fn run_agent(
        &self,
        prepared: Prepared,
        abort: &mut watch::Receiver<Option<AbortCause>>,
    ) -> (Vec<Message>, LimitReport) {
        let agent = &prepared.agent;
        let run = agent.prompt(vec![Message::user_text(prepared.prompt.clone())]);
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
        (messages, prepared.limits.report())
    }

    fn provider(&self) -> Arc<dyn Provider> {
        match &self.plan.provider {
            ProviderConfig::Faux(script) => Arc::new(FauxProvider::new(script.clone())),
            ProviderConfig::OpenAi(settings) => Arc::new(OpenAiProvider::new(settings.clone())),
            ProviderConfig::Anthropic(settings) => {
                Arc::new(AnthropicProvider::new(settings.clone()))
            }
        }
    }

    /// The file tools, each behind the key redaction: the run's key and
    /// every other key leash knows never reach the context through a tool.
    fn tools(&self) -> Vec<Arc<dyn Tool>> {
        let Some(tools) = &self.plan.tools else {
            return Vec::new();
        };
        let run_key = match &self.plan.provider {
            ProviderConfig::OpenAi(settings) | ProviderConfig::Anthropic(settings) => {
                settings.api_key.clone()
            }
            ProviderConfig::Faux(_) => None,
        };
        let keys = key_set(run_key.into_iter().chain(self.plan.known_keys.clone()));
        tools
            .names
            .iter()
            .filter_map(|name| -> Option<Arc<dyn Tool>> {
                let tool: Arc<dyn Tool> = match name {
                    ToolName::ReadFile => Arc::new(ReadFile::new(Arc::clone(&tools.sandbox))),
                    ToolName::ListDir => Arc::new(ListDir::new(Arc::clone(&tools.sandbox))),
                    ToolName::Grep => Arc::new(Grep::new(Arc::clone(&tools.sandbox))),
                    ToolName::Find => Arc::new(Find::new(Arc::clone(&tools.sandbox))),
                    ToolName::Git => tools.git.clone()?,
                };
                Some(Arc::new(Redacted::new(tool, Arc::clone(&keys))))
            })
            .collect()
    }
}

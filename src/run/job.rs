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
use std::io::Write;
use std::sync::Arc;
use std::time::Instant as StdInstant;

use tokio::sync::watch;

use leash_agent::types::AgentEvent;

use crate::config::{FileTools, RunPlan, ToolName};
use crate::exit::Status;
use crate::policy::chain::HookChain;
use crate::policy::command_hooks::HookVerdict;
use crate::policy::limits::LimitReport;
use crate::policy::limits::RunLimits;
use crate::render::lane::Lane;
use crate::render::transcript::Transcript;
use crate::render::{EventRenderer, Interest};
use crate::run::ending::{self, AbortCause};
use crate::run::input::{self, InputError};
use crate::run::resume;
use crate::run::signals::watch_run;
use leash_agent::{Agent, Declarations, LoopConfig, QueueHandle, QueueMode, Subscription};
use leash_mcp::{McpServers, McpStartError};
use leash_protocol::Message;
use leash_protocol::secret::ApiKey;
use leash_protocol::secret::key_set;
use leash_protocol::trace_context;
use leash_provider::Provider;
use leash_tools::Tool;
use leash_tools::bash::Bash;
use leash_tools::changes::ChangeLog;
use leash_tools::edit_file::EditFile;
use leash_tools::find::Find;
use leash_tools::grep::Grep;
use leash_tools::list_dir::ListDir;
use leash_tools::read_file::ReadFile;
use leash_tools::redact::Redacted;
use leash_tools::write_file::WriteFile;

mod create;
mod not_started;
mod provider;
mod trace;

use create::{create_output, event_renderer, not_created};
use not_started::NotStarted;
pub use not_started::UsageError;

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

/// What a batch starts once and hands to every item's run, instead of
/// each run starting its own (docs/src/batch.md "Fan-out: leash batch").
#[derive(Clone, Default)]
pub struct Shared {
    /// The tools of the MCP servers the batch started; `None`: the run
    /// starts the servers of its plan itself.
    pub mcp_tools: Option<Vec<Arc<dyn Tool>>>,
    /// How the run is traced (a batch's item: under the batch's span).
    pub tracing: crate::telemetry::Tracing,
}

impl Shared {
    /// Starts the MCP servers of `plan` once, for every run that shares
    /// them; the caller stops the returned servers after the last run.
    pub async fn start(plan: &RunPlan) -> (McpServers, Result<Shared, McpStartError>) {
        let mut servers = McpServers::default();
        let started = servers.start(&plan.mcp, &keys_of(plan)).await;
        let shared = started.map(|tools| Shared {
            mcp_tools: Some(tools),
            tracing: Default::default(),
        });
        (servers, shared)
    }
}

/// The run's key and every other key leash knows, longest first.
pub(crate) fn keys_of(plan: &RunPlan) -> Arc<[ApiKey]> {
    let run_key = plan
        .provider
        .http()
        .and_then(|settings| settings.api_key.clone());
    key_set(run_key.into_iter().chain(plan.known_keys.clone()))
}

/// Runs the job `plan` describes and returns how it ended.
pub async fn run(plan: RunPlan, streams: Streams) -> Status {
    run_with(plan, streams, &Shared::default()).await
}

/// [`run`], with the pieces a batch started once for all its runs.
pub async fn run_with(plan: RunPlan, streams: Streams, shared: &Shared) -> Status {
    let (abort_sender, mut abort) = watch::channel(None);
    let (late_stdin, late_watched) = tokio::sync::oneshot::channel();
    let watcher = tokio::spawn(watch_run(plan.deadline, late_watched, abort_sender));
    let renderer = event_renderer(&plan, streams.stderr);
    let mut job = Job {
        started: StdInstant::now(),
        interest: renderer.interest(),
        events: Lane::new("leash-events", renderer),
        plan,
        stdout: Some(streams.stdout),
        last_message: None,
        transcript: None,
        changes: Arc::default(),
        mcp: McpServers::default(),
        late_stdin: Some(late_stdin),
        trace: None,
    };
    job.begin_trace(shared);
    // The run's trace context, for the model requests, the hooks and the
    // MCP servers and calls of the run (none when traces are off).
    let ambient = job.ambient();
    let prepared = trace_context::within(ambient.clone(), job.prepare(&mut abort, shared)).await;
    let report = match prepared {
        Ok(prepared) => {
            let ran = trace_context::within(ambient, job.run_agent(prepared, &mut abort)).await;
            let (messages, limits, verdict) = ran;
            let cause = *abort.borrow();
            job.report(&messages, cause, limits, verdict)
        }
        Err(NotStarted::Usage(error)) => {
            job.report_without_run(Status::Usage, Some(error.to_string()))
        }
        Err(NotStarted::Stopped(cause)) => {
            let late = (cause == Some(AbortCause::LateStdin))
                .then(|| input::late_stdin_line(job.plan.stdin_grace));
            let mut ending = job.report_without_run(ending::status_of_abort(cause), late);
            // Late input keeps even this report off stdout.
            ending.facts.abort = cause;
            ending
        }
        Err(NotStarted::Mcp(error)) => job.report_without_run(Status::Mcp, Some(error.to_string())),
    };
    // Whatever ended the run, no server outlives it.
    job.mcp.stop().await;
    job.end_trace(&report.report).await;
    let status = job.deliver(report, &mut abort).await;
    watcher.abort();
    status
}

pub(super) struct Job {
    pub(super) plan: RunPlan,
    pub(super) started: StdInstant,
    /// The `--events` renderer, on its own thread.
    pub(super) events: Lane<Box<dyn EventRenderer>>,
    /// The agent events that renderer acts on; no other is handed over.
    pub(super) interest: Interest,
    /// Taken by the final report.
    pub(super) stdout: Option<Box<dyn Write + Send>>,
    /// `--output-last-message`, created (emptied) before anything else.
    pub(super) last_message: Option<File>,
    /// `--transcript`, on its own thread.
    pub(super) transcript: Option<Lane<Transcript>>,
    /// The files `write_file` and `edit_file` changed (`changedFiles`).
    pub(super) changes: Arc<ChangeLog>,
    /// The MCP servers, stopped at the end of every run.
    pub(super) mcp: McpServers,
    /// Where the prompt step hands a pipe it went on without, for the
    /// abort watcher to watch for the rest of the run.
    pub(super) late_stdin: Option<tokio::sync::oneshot::Sender<input::LateStdin>>,
    pub(super) trace: Option<crate::telemetry::RunTrace>,
}

/// A run ready to start: its prompt, and its agent with the limits as hooks
/// and the listeners that hand events to the output lanes.
struct Prepared {
    prompt: String,
    attachments: Vec<leash_protocol::Attachment>,
    agent: Agent,
    limits: Arc<RunLimits>,
    chain: Arc<HookChain>,
    _listeners: Vec<Subscription>,
}

impl Job {
    /// Creates the output files, reads the prompt (a signal or the timer
    /// may end the wait) and builds the agent.
    async fn prepare(
        &mut self,
        abort: &mut watch::Receiver<Option<AbortCause>>,
        shared: &Shared,
    ) -> Result<Prepared, NotStarted> {
        // Emptied first, so a stale reply never passes for this run's.
        if let Some(path) = &self.plan.output_last_message {
            let file = create_output(path, false, abort).await?;
            self.last_message = Some(file.map_err(not_created("--output-last-message", path))?);
        }
        for notice in self.plan.notices.clone() {
            self.events.submit(move |renderer| renderer.notice(&notice));
        }
        let read = input::read_prompt(
            self.plan.prompt.clone(),
            self.plan.stdin,
            self.plan.stdin_grace,
            self.plan.deadline,
        );
        let prompt = tokio::select! {
            read = read => read,
            cause = abort.wait_for(Option::is_some) => {
                return Err(NotStarted::Stopped(cause.ok().and_then(|c| *c)));
            }
        };
        let mut prompt = match prompt {
            Ok(prompt) => prompt,
            Err(InputError::Timeout) => {
                return Err(NotStarted::Stopped(Some(AbortCause::Timeout)));
            }
            Err(error) => return Err(NotStarted::Usage(UsageError::Prompt(error))),
        };
        if let Some(notice) = prompt.notice.clone() {
            self.events.submit(move |renderer| renderer.notice(&notice));
        }
        // From here on, input on the pipe the run went on without stops it.
        if let (Some(late), Some(watcher)) = (prompt.late.take(), self.late_stdin.take()) {
            let _ = watcher.send(late);
        }
        let attachments = tokio::select! {
            read = input::attachments(&self.plan.attachments, self.plan.deadline) => read,
            cause = abort.wait_for(Option::is_some) => {
                return Err(NotStarted::Stopped(cause.ok().and_then(|c| *c)));
            }
        };
        let attachments = match attachments {
            Ok(attachments) => attachments,
            Err(InputError::Timeout) => return Err(NotStarted::Stopped(Some(AbortCause::Timeout))),
            Err(error) => return Err(NotStarted::Usage(UsageError::Prompt(error))),
        };
        for notice in self.plan.tools.iter().flat_map(FileTools::notices) {
            self.events.submit(move |renderer| renderer.notice(&notice));
        }
        if let Some(path) = &self.plan.transcript {
            let appends = resume::appends(&self.plan);
            let file = create_output(path, appends, abort).await?;
            let file = file.map_err(not_created("--transcript", path))?;
            let lane = Lane::new("leash-transcript", Transcript::new(file, path));
            resume::start_transcript(&self.plan, appends, &lane);
            self.transcript = Some(lane);
        }

        // Every server starts and lists its tools before the first request,
        // or the run ends (exit 8); the timer and the signals still end the wait.
        let keys = self.keys();
        let mcp_tools = match &shared.mcp_tools {
            Some(tools) => tools.clone(),
            None => self.start_mcp(&keys, abort).await?,
        };
        if let Some(notice) = self.mcp.started(&mcp_tools) {
            self.events.submit(move |renderer| renderer.notice(&notice));
        }

        // The queues exist before the agent and its limits, so the limits
        // can steer the run (the `--output-schema` correction) from the start.
        let queues = QueueHandle::default();
        let limits = Arc::new(RunLimits::new(self.plan.limits.clone(), queues.clone()));
        // The built-in limits first, then the patterns and the shell hooks;
        // a hook that fails says so on the event stream.
        let failures = self.events.clone();
        let chain = Arc::new(
            HookChain::new(
                Arc::clone(&limits),
                self.plan.limits.clone(),
                &self.plan.hooks,
                Arc::new(move |failure| {
                    failures.submit(move |renderer| renderer.hook_failed(&failure));
                }),
                queues.clone(),
            )
            .with_keys(Arc::clone(&keys))
            .with_sandbox(self.plan.tools.as_ref().map(|t| Arc::clone(&t.sandbox)))
            .with_observers(self.trace_observers()),
        );
        let tools = self.tools(mcp_tools, &keys);
        self.trace_offered(&tools);
        let agent = Agent::with_queues(
            self.provider(),
            LoopConfig {
                model: self.plan.model.clone(),
                system: self.plan.system.clone(),
                tools,
                declarations: Declarations::Beside,
                tool_execution: self.plan.tool_execution,
                hooks: chain.clone(),
            },
            queues,
        );
        agent.set_follow_up_mode(QueueMode::OneAtATime);
        // Every request of the run asks for this level; no hook changes it.
        agent.set_thinking_level(self.plan.reasoning_effort);
        if let Some(resume) = &self.plan.resume {
            // A fresh agent is idle: restoring cannot be refused.
            let _ = agent.restore(resume.restored.messages.clone());
            let (turns, path) = (resume.restored.turns, resume.path.clone());
            self.events
                .submit(move |renderer| renderer.resumed(turns, &path));
        }
        for text in &self.plan.follow_ups {
            agent.follow_up(Message::user_text(text.clone()));
        }
        // Listeners only hand events over: no write can stall the loop.
        let (events, interest) = (self.events.clone(), self.interest);
        let mut listeners = vec![agent.subscribe(move |event| {
            if interest.wants(event) {
                let event = event.clone();
                events.submit(move |renderer| renderer.event(&event));
            }
        })];
        listeners.extend(self.trace_listener(&agent));
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
            attachments,
            agent,
            limits,
            chain,
            _listeners: listeners,
        })
    }

    /// Starts the plan's MCP servers (every one lists its tools before the
    /// first request, or the run ends, exit 8); the timer and the signals
    /// still end the wait.
    async fn start_mcp(
        &mut self,
        keys: &Arc<[ApiKey]>,
        abort: &mut watch::Receiver<Option<AbortCause>>,
    ) -> Result<Vec<Arc<dyn Tool>>, NotStarted> {
        tokio::select! {
            started = self.mcp.start(&self.plan.mcp, keys) => started.map_err(NotStarted::Mcp),
            cause = abort.wait_for(Option::is_some) => {
                Err(NotStarted::Stopped(cause.ok().and_then(|c| *c)))
            }
        }
    }

    /// Runs the prompt until it ends or the timer or a signal stops it;
    /// returns the messages it added, what the limits saw and how a
    /// `finish-turn` hook decided the end, if one did.
    async fn run_agent(
        &self,
        prepared: Prepared,
        abort: &mut watch::Receiver<Option<AbortCause>>,
    ) -> (Vec<Message>, LimitReport, Option<HookVerdict>) {
        let agent = &prepared.agent;
        let run = agent.prompt(vec![input::prompt_message(
            prepared.prompt.clone(),
            prepared.attachments.clone(),
        )]);
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
        (messages, prepared.limits.report(), prepared.chain.verdict())
    }

    fn provider(&self) -> Arc<dyn Provider> {
        provider::of(&self.plan.provider)
    }

    /// The run's key and every other key leash knows, longest first.
    fn keys(&self) -> Arc<[ApiKey]> {
        keys_of(&self.plan)
    }

    /// The file tools, then the MCP servers' tools, each behind the key
    /// redaction: the run's key and every other key leash knows never
    /// reach the context through a tool.
    fn tools(&self, mcp_tools: Vec<Arc<dyn Tool>>, keys: &Arc<[ApiKey]>) -> Vec<Arc<dyn Tool>> {
        let redacted = |tool: Arc<dyn Tool>| -> Arc<dyn Tool> {
            Arc::new(Redacted::new(tool, Arc::clone(keys)))
        };
        let file_tools = self.plan.tools.iter().flat_map(|tools| {
            tools
                .names
                .iter()
                .filter_map(|name| -> Option<Arc<dyn Tool>> {
                    Some(match name {
                        ToolName::ReadFile => Arc::new(ReadFile::new(Arc::clone(&tools.sandbox))),
                        ToolName::ListDir => Arc::new(ListDir::new(Arc::clone(&tools.sandbox))),
                        ToolName::Grep => Arc::new(Grep::new(Arc::clone(&tools.sandbox))),
                        ToolName::Find => Arc::new(Find::new(Arc::clone(&tools.sandbox))),
                        ToolName::WriteFile => Arc::new(WriteFile::new(
                            Arc::clone(&tools.sandbox),
                            Arc::clone(&self.changes),
                        )),
                        ToolName::EditFile => Arc::new(EditFile::new(
                            Arc::clone(&tools.sandbox),
                            Arc::clone(&self.changes),
                        )),
                        ToolName::Git => tools.git.clone()?,
                        ToolName::Bash => Arc::new(Bash::new(
                            Arc::clone(&tools.sandbox),
                            Arc::clone(&self.changes),
                            tools.shell.clone()?,
                            keys,
                            tools.shell_hidden.clone(),
                        )),
                    })
                })
        });
        file_tools.chain(mcp_tools).map(redacted).collect()
    }
}

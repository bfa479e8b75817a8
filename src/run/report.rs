//! The end of a run: its report (the status decided once, and why, in
//! words) and the delivery of it — the last-message file, the result on
//! stdout, the `run_end` / "why" line on stderr — in that order, each
//! output telling the same story. A result that could not be written fails
//! a run that had succeeded.

use std::fs::File;
use std::io::{self, Write};
use std::path::Path;

use tokio::sync::watch;

use crate::exit::Status;
use crate::policy::command_hooks::HookVerdict;
use crate::policy::limits::LimitReport;
use crate::render::format::{EventsFormat, OutputFormat};
use crate::render::result::write_result;
use crate::render::transcript::reader_left;
use crate::render::{EventRenderer, RunReport, TurnUsage, renderer};
use crate::run::ending::{self, AbortCause, Detail, Facts, LastReply, SchemaVerdict};
use crate::run::input::late_stdin_line;
use crate::run::job::{Job, Streams};
use crate::run::signals::{Waited, wait_for_lane};
use leash_protocol::{Attachment, Content, Message, Usage};

/// The attachments of the run's prompt (its first user message).
fn prompt_attachments(messages: &[Message]) -> Vec<Attachment> {
    let prompt = messages.iter().find_map(|message| match message {
        Message::User(user) => Some(user),
        _ => None,
    });
    prompt
        .into_iter()
        .flat_map(|user| &user.content)
        .filter_map(|content| match content {
            Content::Attachment(attachment) => Some(attachment.clone()),
            Content::Text { .. } => None,
        })
        .collect()
}

/// A run's report with the facts its status was decided from, so a
/// write that fails later is decided by the same function.
pub(super) struct Ending {
    /// What the outputs say.
    pub report: RunReport,
    /// What the status was decided from.
    pub facts: Facts,
}

impl Job {
    /// The report of a run that happened: gathers the facts, has
    /// [`ending::decide_status`] decide, and says why.
    pub(super) fn report(
        &self,
        messages: &[Message],
        cause: Option<AbortCause>,
        limits: LimitReport,
        verdict: Option<HookVerdict>,
    ) -> Ending {
        let last = ending::final_assistant(messages);
        let reply = last.map(|m| m.text()).unwrap_or_default();
        let checked = self
            .plan
            .limits
            .output_schema
            .as_ref()
            .map(|schema| schema.check(&reply));
        let facts = Facts {
            never_ran: None,
            last_reply: LastReply::of(messages),
            abort: cause,
            limits,
            hook: verdict,
            schema: match &checked {
                None => SchemaVerdict::NotAsked,
                Some(Ok(_)) => SchemaVerdict::Valid,
                Some(Err(_)) => SchemaVerdict::Invalid,
            },
            write_failed: false,
        };
        let status = ending::decide_status(&facts);
        let (output, error_message) = match (status, checked) {
            (Status::Ok, Some(Ok(value))) => (Some(value), None),
            (Status::InvalidOutput, Some(Err(problem))) => (None, Some(problem.summary())),
            _ => (None, None),
        };
        let error_message = error_message.or_else(|| last.and_then(|m| m.error_message.clone()));
        let price = self.plan.limits.price.as_ref();
        let mut usage = Usage::default();
        let mut turn_usage = Vec::new();
        for message in messages {
            if let Message::Assistant(assistant) = message {
                usage.add(&assistant.usage);
                turn_usage.push(TurnUsage::new(assistant.usage, price));
            }
        }
        let turns = u32::try_from(turn_usage.len()).unwrap_or(u32::MAX);
        let cost = price.map(|price| price.cost(&usage));
        let terminate_reason = last_batch_reason(messages);
        let detail = Detail {
            error_message: error_message.as_deref(),
            turns,
            terminate_reason: terminate_reason.as_deref(),
            timeout: self.plan.timeout,
            budget: self
                .plan
                .limits
                .max_tokens_total
                .map(|limit| (limits.tokens_used, limit)),
            cost_budget: match (limits.cost_exhausted, self.plan.limits.max_cost) {
                (true, Some(limit)) => Some((limits.cost_used, limit)),
                _ => None,
            },
            corrected: limits.corrected,
            repeat_blocked: limits.repeat_blocked,
        };
        // A failed `finish-turn` hook's reason says it all; so does input
        // that came too late.
        let message = match (status, &facts.hook) {
            _ if cause == Some(AbortCause::LateStdin) => late_stdin_line(self.plan.stdin_grace),
            (Status::Terminated, Some(HookVerdict::Failed(reason))) => reason.clone(),
            _ => ending::describe(status, &detail),
        };
        // A run the clock or a signal stopped reads "Operation aborted" in
        // its last message (Pi's words for the cut stream); the result's
        // `errorMessage` says why instead, as `message` does
        // (docs/src/events.md "The JSON result").
        let error_message = match status {
            Status::Timeout | Status::Interrupted(_) => Some(message.clone()),
            _ if cause == Some(AbortCause::LateStdin) => Some(message.clone()),
            _ => error_message,
        };
        let report = RunReport {
            status,
            message,
            reply,
            output,
            stop_reason: last.map(|m| m.stop_reason),
            error_message,
            turns,
            usage,
            turn_usage,
            cost,
            duration_ms: self.started.elapsed().as_millis() as u64,
            provider: self.plan.provider.name().to_owned(),
            model: self.plan.model.clone(),
            reasoning_effort: self.plan.recorded_effort(),
            changed_files: self.changes.paths(),
            attachments: prompt_attachments(messages),
            restored_turns: self.plan.resume.as_ref().map(|r| r.restored.turns),
        };
        Ending { report, facts }
    }

    /// The report of a run that never started (usage error, an MCP server
    /// that did not start, or stopped while reading stdin).
    pub(super) fn report_without_run(&self, never_ran: Status, error: Option<String>) -> Ending {
        let facts = Facts {
            never_ran: Some(never_ran),
            ..Facts::default()
        };
        let status = ending::decide_status(&facts);
        let detail = Detail {
            error_message: error.as_deref(),
            timeout: self.plan.timeout,
            ..Detail::default()
        };
        let report = RunReport {
            status,
            message: ending::describe(status, &detail),
            reply: String::new(),
            output: None,
            stop_reason: None,
            error_message: error,
            turns: 0,
            usage: Usage::default(),
            turn_usage: Vec::new(),
            cost: self
                .plan
                .limits
                .price
                .map(|price| price.cost(&Usage::default())),
            duration_ms: self.started.elapsed().as_millis() as u64,
            provider: self.plan.provider.name().to_owned(),
            model: self.plan.model.clone(),
            reasoning_effort: self.plan.recorded_effort(),
            changed_files: self.changes.paths(),
            attachments: Vec::new(),
            restored_turns: self.plan.resume.as_ref().map(|r| r.restored.turns),
        };
        Ending { report, facts }
    }

    /// Writes the end of the run (transcript done, last message, stdout,
    /// the `run_end` / "why" line) and returns the exit code. When the run
    /// was stopped and an output does not take its writes, the exit goes
    /// on without it after [`GRACE`](crate::run::signals::GRACE), with the code of what stopped it.
    pub(super) async fn deliver(
        &mut self,
        ending: Ending,
        abort: &mut watch::Receiver<Option<AbortCause>>,
    ) -> Status {
        let Ending { report, facts } = ending;
        let stopped =
            |abort: &watch::Receiver<Option<AbortCause>>| ending::status_of_abort(*abort.borrow());
        let mut failures = Vec::new();
        if let Some(transcript) = self.transcript.take() {
            match wait_for_lane(transcript.call(|writer| writer.take_failure()), abort).await {
                Waited::Done(failure) => failures.extend(failure),
                Waited::Lost => {}
                Waited::GaveUp => return stopped(abort),
            }
        }
        let status = report.status;
        let output = self.plan.output;
        let late = LateCheck {
            abort: abort.clone(),
            line: late_stdin_line(self.plan.stdin_grace),
        };
        let mut stdout = self.stdout.take().unwrap_or_else(|| Box::new(io::sink()));
        let last_message = self.last_message.take().map(|file| {
            let path = self.plan.output_last_message.clone().unwrap_or_default();
            (path, file)
        });
        let done = self.events.call(move |renderer| {
            let mut last_message = last_message;
            let last_message = last_message
                .as_mut()
                .map(|(path, file)| (path.as_path(), file));
            let outputs = Outputs {
                format: output,
                stdout: &mut stdout,
                last_message,
                late: Some(&late),
            };
            finish_output(report, facts, failures, renderer.as_mut(), outputs)
        });
        match wait_for_lane(done, abort).await {
            Waited::Done(status) => status,
            Waited::Lost => status,
            Waited::GaveUp => stopped(abort),
        }
    }
}

/// Stdin's late input, looked at once more just before the result is
/// written: input that arrives after the answer was computed still keeps
/// it off stdout (docs/src/usage.md "Stdin").
struct LateCheck {
    /// The run's abort state ([`AbortCause::LateStdin`] when it came).
    abort: watch::Receiver<Option<AbortCause>>,
    /// The last line that says so.
    line: String,
}

impl LateCheck {
    /// Whether late input arrived; if so the report becomes the usage
    /// error that says so, with nothing to print.
    /// A run that never started for another reason keeps that reason.
    fn arrived(&self, report: &mut RunReport, facts: &mut Facts) -> bool {
        if facts.abort == Some(AbortCause::LateStdin) {
            return true;
        }
        if facts.never_ran.is_some() || *self.abort.borrow() != Some(AbortCause::LateStdin) {
            return false;
        }
        facts.abort = Some(AbortCause::LateStdin);
        report.status = ending::decide_status(facts);
        report.message = self.line.clone();
        report.output = None;
        true
    }
}

/// Where a run's result goes.
struct Outputs<'a> {
    /// `--output`.
    format: OutputFormat,
    /// The result's stream.
    stdout: &'a mut dyn Write,
    /// `--output-last-message`, if given.
    last_message: Option<(&'a Path, &'a mut File)>,
    /// Stdin's late input, when the run may have gone on without it.
    late: Option<&'a LateCheck>,
}

/// Writes the end of a run: the last-message file, the result on stdout,
/// then the `run_end` / "why" line on stderr. `failures` are writes that
/// already failed (the transcript); with each new one the report changes
/// before anything else is written, so every output tells the same story.
/// Stdin's late input keeps the result off every output.
/// Returns how the run ended, after the writes.
fn finish_output(
    mut report: RunReport,
    mut facts: Facts,
    failures: Vec<String>,
    renderer: &mut dyn EventRenderer,
    outputs: Outputs<'_>,
) -> Status {
    let Outputs {
        format: output,
        stdout,
        last_message,
        late,
    } = outputs;
    let came_late = |report: &mut RunReport, facts: &mut Facts| {
        late.is_some_and(|late| late.arrived(report, facts))
    };
    for failure in failures {
        write_failed(&mut report, &mut facts, failure, renderer);
    }
    if came_late(&mut report, &mut facts) {
        renderer.settle();
        renderer.run_end(&report);
        return report.status;
    }
    // The reply and its newline in one buffer, handed over in one write:
    // a kill leaves the file empty or whole (docs/src/resume.md "After a kill").
    let mut whole = Vec::new();
    if let Some((path, file)) = last_message
        && let Err(error) = write_result(OutputFormat::Text, &report, &mut whole)
            .and_then(|()| file.write_all(&whole))
            .and_then(|()| file.flush())
        && !reader_left(&error)
    {
        let failure = format!(
            "cannot write --output-last-message {}: {error}",
            path.display()
        );
        write_failed(&mut report, &mut facts, failure, renderer);
    }
    renderer.settle();
    if came_late(&mut report, &mut facts) {
        renderer.run_end(&report);
        return report.status;
    }
    if let Err(error) = write_result(output, &report, stdout)
        && !reader_left(&error)
    {
        write_failed(
            &mut report,
            &mut facts,
            format!("cannot write the result to stdout: {error}"),
            renderer,
        );
    }
    renderer.run_end(&report);
    report.status
}

/// A result could not be written: the status is decided again with that
/// fact (ARCHITECTURE.md §2.1: a run that had succeeded now fails and
/// says so; a run that had failed keeps its reason as the last line,
/// after a notice).
fn write_failed(
    report: &mut RunReport,
    facts: &mut Facts,
    failure: String,
    renderer: &mut dyn EventRenderer,
) {
    facts.write_failed = true;
    let status = ending::decide_status(facts);
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
    let facts = Facts {
        never_ran: Some(Status::Usage),
        ..Facts::default()
    };
    let report = RunReport {
        status: ending::decide_status(&facts),
        message: message.clone(),
        reply: String::new(),
        output: None,
        stop_reason: None,
        error_message: Some(message),
        turns: 0,
        usage: Usage::default(),
        turn_usage: Vec::new(),
        cost: None,
        duration_ms: 0,
        provider: String::new(),
        model: String::new(),
        reasoning_effort: None,
        changed_files: Vec::new(),
        attachments: Vec::new(),
        restored_turns: None,
    };
    let mut stdout = streams.stdout;
    finish_output(
        report,
        facts,
        Vec::new(),
        renderer(events, streams.stderr).as_mut(),
        Outputs {
            format: output,
            stdout: &mut stdout,
            last_message: None,
            late: None,
        },
    )
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

//! Where a run's trace is begun, fed and ended (docs/src/tracing.md): the
//! few points of the job that touch [`crate::telemetry`]. With traces off
//! nothing is built and each of these returns at once.

use std::sync::Arc;

use crate::config::RunPlan;
use crate::policy::chain::Observers;
use crate::render::RunReport;
use crate::telemetry::RunTrace;
use crate::telemetry::run_span::RunFacts;
use crate::telemetry::semconv::server_of;
use leash_agent::{Agent, Subscription};
use leash_protocol::ToolSpec;
use leash_protocol::trace_context::Ambient;
use leash_tools::Tool;

use super::{Job, Shared, keys_of};

impl Job {
    /// Begins the run's root span when the plan (or the batch) traces;
    /// says on the events lane why traces that were asked for are off.
    pub(super) fn begin_trace(&mut self, shared: &Shared) {
        let plan = &self.plan;
        let (trace, notices) = RunTrace::begin(
            (&plan.traces, &plan.metrics),
            &shared.tracing,
            keys_of(plan),
            facts(plan),
        );
        self.trace = trace;
        for notice in notices {
            self.events.submit(move |renderer| renderer.notice(&notice));
        }
    }

    /// The run's trace as the code below it asks it (none when off).
    pub(super) fn ambient(&self) -> Option<Arc<dyn Ambient>> {
        self.trace
            .clone()
            .map(|trace| Arc::new(trace) as Arc<dyn Ambient>)
    }

    /// Tells the trace the tools offered (their descriptions).
    pub(super) fn trace_offered(&self, tools: &[Arc<dyn Tool>]) {
        if let Some(trace) = &self.trace {
            let specs: Vec<ToolSpec> = tools.iter().map(|tool| tool.spec()).collect();
            trace.offered(&specs);
        }
    }

    /// The listener that hands the agent's events to the trace.
    pub(super) fn trace_listener(&self, agent: &Agent) -> Option<Subscription> {
        let trace = self.trace.clone()?;
        Some(agent.subscribe(move |event| trace.event(event)))
    }

    /// The trace's watchers of the provider's own events and of each
    /// hook's run; none when traces are off.
    pub(super) fn trace_observers(&self) -> Observers {
        let Some(trace) = self.trace.clone() else {
            return Observers::default();
        };
        let hooks = trace.clone();
        Observers {
            provider: Some(Arc::new(move |event| trace.provider_event(event))),
            hooks: Some(Arc::new(move |run| hooks.hook_ran(run))),
        }
    }

    /// Ends the run's spans with its report and exports them, never past
    /// the run's timer; a failed export is one notice on the events lane,
    /// before the run's last line.
    pub(super) async fn end_trace(&mut self, report: &RunReport) {
        let Some(trace) = self.trace.take() else {
            return;
        };
        let left = self
            .plan
            .deadline
            .map(|deadline| deadline.saturating_duration_since(tokio::time::Instant::now()));
        for failure in trace.finish(report, left).await {
            self.events
                .submit(move |renderer| renderer.notice(&failure));
        }
    }
}

/// A provider's `gen_ai.provider.name` as the GenAI conventions list it
/// (Azure OpenAI, Gemini and Bedrock have names of their own there); the
/// others as leash names them.
fn conventional_name(provider: &str) -> &str {
    match provider {
        "azure" => "azure.ai.openai",
        "gemini" => "gcp.gemini",
        "bedrock" => "aws.bedrock",
        "vertex" => "gcp.vertex_ai",
        other => other,
    }
}

/// What the run's spans say of its requests.
fn facts(plan: &RunPlan) -> RunFacts {
    let settings = plan.provider.http();
    RunFacts {
        provider: conventional_name(plan.provider.name()).to_owned(),
        model: plan.model.clone(),
        server: settings.and_then(|settings| server_of(&settings.base_url)),
        stream: settings.is_some(),
        max_tokens: settings.and_then(|settings| settings.max_tokens),
        temperature: settings.and_then(|settings| settings.temperature),
        json_output: plan.limits.output_schema.is_some(),
        deadline: plan.deadline,
        system: plan.system.clone(),
    }
}

//! [`resolve`]: the plan of a run, in named steps, each in its own file.
//! The steps run in the order their errors are reported, so the first
//! problem a user can fix on the command line comes first and a missing
//! key (which only the environment fixes) last.

pub(super) mod attach;
pub(super) mod bedrock;
pub(super) mod hooks;
pub(super) mod http;
pub(super) mod limits;
pub(super) mod mcp;
pub(super) mod outputs;
pub(super) mod prompt;
pub(super) mod provider;
pub(super) mod resume;
pub(super) mod tools;
pub(super) mod vertex;

use crate::cli::{Cli, ToolExecutionArg};
use crate::config::dotenv::DotEnvStatus;
use crate::config::input::StdinMode;
use crate::config::precedence::{choose_model, choose_provider, choose_wire, decide_terminal};
use crate::config::{ConfigError, Inputs, RunPlan};
use crate::telemetry::TraceSettings;
use crate::telemetry::settings::Signal;
use leash_agent::ToolExecution;

/// Resolves the layered flags into the plan of a run.
pub fn resolve(cli: Cli, inputs: &Inputs<'_>) -> Result<RunPlan, ConfigError> {
    if let DotEnvStatus::Failed(problem) = inputs.env.dotenv() {
        return Err(ConfigError::DotEnv(problem.clone()));
    }
    let (provider_name, _) = choose_provider(&cli, inputs.origins);
    let (model, _) = choose_model(&cli, provider_name);
    let bounds = limits::resolve(&cli, inputs, &model)?;
    let (system, mut stdin) = prompt::resolve(&cli, inputs)?;
    let stdin_grace = limits::parse_stdin_grace(&cli.stdin_grace)
        .map_err(crate::config::error::named_by_source(inputs, "stdin_grace"))?;
    let mut attachments = attach::resolve(&cli, inputs, provider_name)?;
    if attachments.stdin.is_some() {
        // Stdin is the attachment's: the prompt is the argument alone.
        stdin = StdinMode::Never;
    }
    let tools = tools::resolve(&cli, inputs)?;
    outputs::check(&cli, inputs)?;
    let hooks = hooks::resolve(&cli, inputs)?;
    let mcp = mcp::resolve(&cli, inputs)?;
    let wire = choose_wire(&cli, inputs.origins, provider_name);
    let sandbox = tools.as_ref().map(|tools| &tools.sandbox);
    let resume = resume::resolve(&cli, wire, sandbox, &mut attachments)?;
    // The provider last: its missing key is the one error a user cannot fix
    // by correcting the command line, so every argument error comes first.
    let mut known_keys = provider::known_keys(inputs);
    let (provider, mut notices) = provider::resolve(
        &cli,
        inputs,
        provider_name,
        &bounds,
        || bedrock::settings(&cli, inputs, &bounds),
        || {
            let (provider, secrets) = vertex::settings(&cli, inputs, &bounds)?;
            known_keys.extend(secrets);
            Ok(provider)
        },
    )?;
    let system = resume::system(&cli, inputs, system, resume.as_ref(), &mut notices);
    let events = cli.events_format();
    let terminal = decide_terminal(&cli, events, inputs);
    Ok(RunPlan {
        prompt: cli.prompt,
        attachments,
        stdin,
        stdin_grace,
        system,
        provider,
        model,
        reasoning_effort: cli.reasoning_effort.into(),
        timeout: bounds.timeout,
        deadline: bounds.deadline,
        limits: bounds.settings,
        hooks,
        tools,
        tool_execution: match cli.tool_execution {
            ToolExecutionArg::Parallel => ToolExecution::Parallel,
            ToolExecutionArg::Sequential => ToolExecution::Sequential,
        },
        follow_ups: cli.follow_up,
        events,
        output: cli.output,
        transcript: cli.transcript,
        resume,
        output_last_message: cli.output_last_message,
        terminal,
        mcp,
        known_keys,
        notices,
        traces: TraceSettings::from_env(&|name| inputs.env.exported(name)),
        metrics: TraceSettings::read(&|name| inputs.env.exported(name), Signal::Metrics),
    })
}

//! The hooks step: `--hook`, `--hook-timeout`, `--deny-tool` and
//! `--allow-tool`, each error naming where its value came from.

use super::limits::parse_hook_timeout;
use crate::cli::Cli;
use crate::config::error::named_by_source;
use crate::config::{ConfigError, Inputs};
use crate::policy::command_hooks::{HookSettings, HookSpec, Policy, ToolPattern};

/// The hook settings of a run.
pub(super) fn resolve(cli: &Cli, inputs: &Inputs<'_>) -> Result<HookSettings, ConfigError> {
    let named = |id: &'static str| named_by_source(inputs, id);
    let hooks = cli
        .hook
        .iter()
        .map(|value| {
            let spec = HookSpec::parse(value)?;
            spec.check_program(inputs.env.get("PATH").as_deref())?;
            Ok(spec)
        })
        .collect::<Result<_, crate::policy::command_hooks::SpecError>>()
        .map_err(|error| named("hook")(error.into()))?;
    let timeout = parse_hook_timeout(&cli.hook_timeout).map_err(named("hook_timeout"))?;
    let patterns = |id: &'static str, flag: &'static str, values: &[String]| {
        values
            .iter()
            .map(|value| ToolPattern::parse(flag, value).map_err(|error| named(id)(error.into())))
            .collect::<Result<Vec<_>, _>>()
    };
    Ok(HookSettings {
        hooks,
        timeout,
        policy: Policy {
            deny: patterns("deny_tool", "--deny-tool", &cli.deny_tool)?,
            allow: patterns("allow_tool", "--allow-tool", &cli.allow_tool)?,
        },
    })
}

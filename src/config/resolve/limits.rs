//! The limits step: `--timeout` (and the deadline it sets),
//! `--output-schema`, `--price` and `--max-cost`, with the turn, repeat
//! and token limits, as the run's `LimitSettings`.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use tokio::time::Instant;

use super::prompt::read_input;
use crate::cli::Cli;
use crate::config::error::{in_source, named_by_source};
use crate::config::precedence::choose_price;
use crate::config::{ConfigError, Inputs};
use crate::policy::cost::{Cost, Price};
use crate::policy::limits::LimitSettings;
use crate::policy::output_schema::{OutputSchema, SchemaError};

/// What bounds a run: its timer and its limits.
pub(crate) struct Bounds {
    /// The abort timer; `None` = never.
    pub timeout: Option<Duration>,
    /// When the timer fires (`None`: no timer, or one too long for the clock).
    pub deadline: Option<Instant>,
    /// The turn limit, the repeat guard, the budgets, `--output-schema`.
    pub settings: LimitSettings,
}

impl Bounds {
    /// What an HTTP provider's request takes of them: the deadline no
    /// retry waits past, and the `--output-schema` to ask for.
    pub(super) fn for_http(&self) -> (Option<Instant>, Option<serde_json::Value>) {
        let schema = self.settings.output_schema.as_ref();
        (self.deadline, schema.map(|schema| schema.schema().clone()))
    }
}

/// The timer, then the schema, then the price and budget, in that order.
pub(super) fn resolve(cli: &Cli, inputs: &Inputs<'_>, model: &str) -> Result<Bounds, ConfigError> {
    let named = |id: &'static str| named_by_source(inputs, id);
    let timeout = parse_timeout(&cli.timeout).map_err(named("timeout"))?;
    // A timeout too long for the clock (`--timeout 18446744073709551615`)
    // is no timer at all rather than an overflow panic.
    let deadline = timeout.and_then(|timeout| Instant::now().checked_add(timeout));
    let output_schema = match &cli.output_schema {
        Some(path) => Some(Arc::new(load_schema(path).map_err(named("output_schema"))?)),
        None => None,
    };
    let (price, max_cost) = resolve_cost(cli, inputs, model)?;
    Ok(Bounds {
        timeout,
        deadline,
        settings: LimitSettings {
            max_turns: cli.max_turns,
            max_same_call: cli.max_same_call,
            max_tokens_total: cli.max_tokens_total,
            price,
            max_cost,
            output_schema,
        },
    })
}

/// The run's price ([`choose_price`]) and `--max-cost`, which needs one.
fn resolve_cost(
    cli: &Cli,
    inputs: &Inputs<'_>,
    model: &str,
) -> Result<(Option<Price>, Option<Cost>), ConfigError> {
    let price = match choose_price(cli, inputs, model) {
        Some(choice) => {
            let id = match choice.per_model {
                true => format!("prices.\"{model}\""),
                false => "price".to_owned(),
            };
            let price = Price::parse(&choice.text)
                .map_err(ConfigError::from)
                .map_err(in_source(inputs, &choice.source, &id))?;
            Some(price)
        }
        None => None,
    };
    let max_cost = match &cli.max_cost {
        Some(text) => Some(
            Cost::parse_usd(text)
                .map_err(ConfigError::from)
                .map_err(named_by_source(inputs, "max_cost"))?,
        ),
        None => None,
    };
    if max_cost.is_some() && price.is_none() {
        return Err(ConfigError::MaxCostWithoutPrice);
    }
    Ok((price, max_cost))
}

/// `30s`, `2m`, `500ms`, a bare number of seconds (`7`, `0.5`), or `0`
/// for no timer.
pub fn parse_timeout(value: &str) -> Result<Option<Duration>, ConfigError> {
    let trimmed = value.trim();
    let invalid = |reason: String| ConfigError::Timeout {
        value: value.to_owned(),
        reason,
    };
    let duration = if let Ok(seconds) = trimmed.parse::<u64>() {
        Duration::from_secs(seconds)
    } else if trimmed.starts_with(|c: char| c.is_ascii_digit() || c == '.')
        && let Ok(seconds) = trimmed.parse::<f64>()
    {
        Duration::try_from_secs_f64(seconds).map_err(|error| invalid(error.to_string()))?
    } else {
        humantime::parse_duration(trimmed).map_err(|error| invalid(error.to_string()))?
    };
    Ok((!duration.is_zero()).then_some(duration))
}

/// Reads and compiles `--output-schema`, bounded like every file input.
fn load_schema(path: &Path) -> Result<OutputSchema, ConfigError> {
    let text = read_input("--output-schema", path)?;
    let shown = path.display().to_string();
    let schema: serde_json::Value =
        serde_json::from_str(&text).map_err(|error| SchemaError::NotJson {
            path: shown.clone(),
            message: error.to_string(),
        })?;
    Ok(OutputSchema::new(schema, &shown)?)
}

/// `--stdin-grace`: a duration as for `--timeout`, but never zero (a zero
/// grace would race a file's first read; `--no-stdin` never reads stdin).
pub fn parse_stdin_grace(value: &str) -> Result<Duration, ConfigError> {
    let invalid = |reason: String| ConfigError::StdinGrace {
        value: value.to_owned(),
        reason,
    };
    match parse_timeout(value) {
        Ok(Some(duration)) => Ok(duration),
        Ok(None) => Err(invalid(
            "it must be more than 0 (--no-stdin never reads stdin)".into(),
        )),
        Err(ConfigError::Timeout { reason, .. }) => Err(invalid(reason)),
        Err(other) => Err(other),
    }
}

/// `--hook-timeout`: a duration as for `--timeout`, but never zero (a hook
/// always has a timeout).
pub fn parse_hook_timeout(value: &str) -> Result<Duration, ConfigError> {
    let invalid = |reason: String| ConfigError::HookTimeout {
        value: value.to_owned(),
        reason,
    };
    match parse_timeout(value) {
        Ok(Some(duration)) => Ok(duration),
        Ok(None) => Err(invalid(
            "a hook always has a timeout; it must be more than 0".into(),
        )),
        Err(ConfigError::Timeout { reason, .. }) => Err(invalid(reason)),
        Err(other) => Err(other),
    }
}

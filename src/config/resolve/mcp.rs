//! The MCP step: the servers of `--mcp-config` and `--mcp`, and
//! `--mcp-timeout`.

use std::time::Duration;

use super::limits::parse_timeout;
use super::prompt::read_input;
use crate::cli::Cli;
use crate::config::error::named_by_source;
use crate::config::{ConfigError, Inputs};
use leash_mcp::McpPlan;

/// The servers and how long each has to start (`0`: no limit).
pub(super) fn resolve(cli: &Cli, inputs: &Inputs<'_>) -> Result<McpPlan, ConfigError> {
    Ok(McpPlan {
        servers: mcp_servers(cli, inputs)?,
        timeout: match parse_timeout(&cli.mcp_timeout) {
            Ok(Some(timeout)) => timeout,
            Ok(None) => Duration::MAX,
            Err(error) => {
                return Err(named_by_source(inputs, "mcp_timeout")(mcp_timeout_error(
                    error,
                )));
            }
        },
    })
}

/// The servers of `--mcp-config` and `--mcp`, `${VAR}` expanded from the
/// environment (with `.env`).
pub(crate) fn mcp_servers(
    cli: &Cli,
    inputs: &Inputs<'_>,
) -> Result<Vec<leash_mcp::ServerSpec>, ConfigError> {
    let lookup = |name: &str| inputs.env.get(name);
    let from_file = match &cli.mcp_config {
        Some(path) => {
            let text =
                read_input("--mcp-config", path).map_err(named_by_source(inputs, "mcp_config"))?;
            leash_mcp::config::parse_file(path, &text, &lookup)?
        }
        None => Vec::new(),
    };
    let from_flags = cli
        .mcp
        .iter()
        .map(|value| leash_mcp::config::parse_flag(value, &lookup))
        .collect::<Result<Vec<_>, _>>()?;
    Ok(leash_mcp::config::merge(from_file, from_flags)?)
}

/// `--mcp-timeout`'s own words for a bad duration (0 means no limit).
fn mcp_timeout_error(error: ConfigError) -> ConfigError {
    match error {
        ConfigError::Timeout { value, reason } => ConfigError::McpTimeout { value, reason },
        other => other,
    }
}

//! MCP servers: tools from the ecosystem, through the official Rust SDK
//! (`rmcp`, client role). `config` reads which servers a run names
//! (`--mcp-config`, `--mcp`), `start` starts them strictly (every server
//! starts and lists its tools within `--mcp-timeout`, or exit 8), `tool`
//! offers each server tool as an ordinary [`Tool`]
//! named `mcp__NAME__TOOL`, and `shutdown` stops the servers' process
//! groups at every exit.
//!
//! [`McpServers`] is what a run holds: created before any server starts,
//! so whatever ends the run — its answer, an error, the timer, a signal,
//! even while the servers are still starting — [`McpServers::stop`] finds
//! every process that was spawned.

#![warn(missing_docs)]

pub mod config;
pub mod http;
pub mod shutdown;
pub mod start;
pub mod tool;
pub mod witness;

use std::sync::Arc;
use std::time::Duration;

pub use config::{McpConfigError, ServerSpec};
pub use start::McpStartError;

use leash_protocol::secret::ApiKey;
use leash_tools::Tool;
use shutdown::ServerProcesses;
use start::Session;

/// The servers a run names, and how long each has to start.
#[derive(Debug, Clone, Default)]
pub struct McpPlan {
    /// The servers, file first, then `--mcp` flags.
    pub servers: Vec<ServerSpec>,
    /// `--mcp-timeout`.
    pub timeout: Duration,
}

/// A run's MCP servers, from the first spawn to the last reap.
#[derive(Default)]
pub struct McpServers {
    processes: ServerProcesses,
    sessions: Vec<Session>,
}

impl McpServers {
    /// Starts every server of `plan` (none: nothing happens) and returns
    /// their tools. `keys` are the values a server's environment must not
    /// hold. On failure, call [`stop`](Self::stop) as after any run.
    pub async fn start(
        &mut self,
        plan: &McpPlan,
        keys: &[ApiKey],
    ) -> Result<Vec<Arc<dyn Tool>>, McpStartError> {
        if plan.servers.is_empty() {
            return Ok(Vec::new());
        }
        let started = start::start_all(&plan.servers, plan.timeout, keys, &self.processes).await?;
        self.sessions = started.sessions;
        Ok(started.tools)
    }

    /// `MCP servers started: fs (4 tools), gh (1 tool)`, the notice of a
    /// run with servers; `None` without.
    pub fn started(&self, tools: &[Arc<dyn Tool>]) -> Option<String> {
        if self.sessions.is_empty() {
            return None;
        }
        let servers: Vec<String> = self
            .sessions
            .iter()
            .map(|session| {
                let prefix = format!("mcp__{}__", session.name);
                let count = tools
                    .iter()
                    .filter(|tool| tool.spec().name.starts_with(&prefix))
                    .count();
                match count {
                    1 => format!("{} (1 tool)", session.name),
                    n => format!("{} ({n} tools)", session.name),
                }
            })
            .collect();
        Some(format!("MCP servers started: {}", servers.join(", ")))
    }

    /// Stops every server: each session closed (bounded), then every
    /// stdio server's process group terminated and its leader reaped.
    pub async fn stop(&mut self) {
        let closing = std::mem::take(&mut self.sessions)
            .into_iter()
            .map(|session| async move {
                let _ = tokio::time::timeout(shutdown::GRACE, session.service.cancel()).await;
            });
        futures::future::join_all(closing).await;
        self.processes.stop_all().await;
    }
}

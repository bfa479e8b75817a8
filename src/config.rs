//! Flags + environment + `.env` + config file → one validated [`RunPlan`].
//! Every check that can fail before the run starts happens here, so a bad
//! input is a usage error (exit 2) before any request is made.
//!
//! The layers come in as [`Inputs`] (the origin of each parsed flag, an
//! environment, the config file): tests build a config without touching
//! the process environment. The choices that weigh several layers live in
//! `precedence`, shared with `leash config`; [`resolve`] takes the plan in
//! named steps (`resolve/`). The API key is wrapped at once and never
//! formatted.

pub mod dotenv;
mod error;
pub mod file;
pub mod input;
pub mod layers;
pub mod output_file;
mod plan;
pub mod precedence;
mod resolve;
pub mod show;

pub use error::ConfigError;
pub use layers::Inputs;
pub use plan::{AttachPlan, FileTools, ProviderConfig, RunPlan, ToolName};
pub(crate) use resolve::mcp::mcp_servers;
pub use resolve::resolve;

#[cfg(test)]
mod tests;

//! The run's rules, as hooks the loop calls: the turn limit, the repeat
//! guard and the token and cost budgets (`limits`, `cost`), the
//! `--output-schema` check and its corrective turn (`output_schema`), the
//! `--deny-tool`/`--allow-tool` patterns (`tool_patterns`), the `--hook`
//! commands (`command_hooks`) and the one chain that orders them all
//! behind [`leash_agent::AgentHooks`] (`chain`).
//!
//! *Never* writes to stdout or stderr, starts the run or picks an exit
//! code: what a rule saw goes back to the run as a value.

pub mod chain;
pub mod command_hooks;
pub mod cost;
pub mod limits;
pub mod output_schema;
pub mod tool_patterns;

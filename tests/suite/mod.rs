//! The integration tests, one module per part of the contract.

mod anthropic;
mod cli;
mod config_contract;
mod ecosystem;
mod events;
mod git_tool;
mod hardening_contract;
mod hardening_models;
mod hardening_panics;
mod hardening_pipes;
mod hardening_sandbox;
mod hardening_secrets;
mod hardening_servers;
mod hardening_signals;
mod harness;
mod openai;
mod recipes;
mod search_tools;
mod structured;
mod structured_http;
mod tls;
mod wire_fidelity;

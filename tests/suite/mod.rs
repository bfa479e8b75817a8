//! The integration tests, one module per area of the contract (README,
//! ARCHITECTURE.md): every test runs the real binary through the one
//! launcher, [`crate::support::run::Run`].

mod batch;
mod cli;
mod config;
mod events;
mod floors;
mod harness;
mod hooks;
mod mcp;
mod otel;
mod providers;
mod run;
mod shell;
mod tools;

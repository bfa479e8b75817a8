//! What every integration test shares: the one way to launch the binary
//! under test ([`run::Run`], isolated from the developer's setup by
//! [`run::isolate`], read back through [`run::Outcome`]), and the helpers
//! around it.
//!
//! - [`run`]: the launcher and the one set of output helpers.
//! - [`shell`]: a temp directory per test with its own `HOME` and config
//!   home, `leash` (as `assert_cmd`) and bash steps run there.
//! - [`hostile`]: raw-TCP servers that misbehave, and a workspace for the
//!   hardening tests (`root/`, `outside/`, `--no-stdin`).
//! - [`docs`]: the README and the manual's chapters, and the recipes in
//!   them found by marker.
//! - [`sse`]: the per-provider SSE builders and mock server helpers, in
//!   the documented wire formats.
//!
//! Test code only; nothing here may talk to a real API.

#![allow(dead_code)] // each test module uses part of this

pub mod docs;
pub mod hostile;
pub mod otlp;
pub mod run;
pub mod sdk;
pub mod shell;
pub mod sigv4;
pub mod sse;

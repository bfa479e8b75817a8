//! The integration suite: one test binary (as codex's `tests/all.rs` and
//! ripgrep's `tests/`), so the many test files link once. Every test runs
//! the real binary through [`support::run::Run`], isolated from the
//! developer's setup, against loopback servers only.
//!
//! A test gets a binary of its own only where it measures something
//! process-wide: `hardening_memory.rs` reads the peak memory of every
//! child the process has waited for (`getrusage(RUSAGE_CHILDREN)`), which
//! the other tests' children would inflate.

#![allow(clippy::unwrap_used, clippy::expect_used)] // tests may panic on a broken fixture

mod suite;
mod support;

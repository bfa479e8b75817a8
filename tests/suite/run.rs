//! One run, start to end (README "Exit codes", docs/src/output.md "Structured output and
//! budgets", docs/src/security.md "Security and limits"; ARCHITECTURE.md §1.2, §2): the contract on the scripted model, signals and
//! the timer, output pipes, child processes, structured output and the
//! token budget, cost, the repeat guard, no panic, and the key that never
//! leaves. Peak memory is measured in `tests/hardening_memory.rs`, a binary
//! of its own.

mod children;
mod contract;
mod cost;
mod hostile_input;
mod killed;
mod late_stdin;
mod panics;
mod pipes;
mod reply_rule;
mod resume;
mod secrets;
mod signals;
mod structured;
mod structured_http;

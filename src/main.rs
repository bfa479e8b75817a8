//! The `leash` binary: parse, run, exit. Everything else is the library.

use std::process::ExitCode;

fn main() -> ExitCode {
    leash::run_process(std::env::args_os().collect())
}

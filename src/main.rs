//! The `leash` binary: parse, run, exit. Everything else is the library.

use std::ffi::OsString;
use std::io::IsTerminal;
use std::process::ExitCode;

use leash::config::dotenv::{env_file_choice, load_dotenv};
use leash::config::layers::Environment;
use leash::run::job::Streams;

fn main() -> ExitCode {
    let args: Vec<OsString> = std::env::args_os().collect();
    // `.env` first (before any thread), under the environment; remember
    // what it supplied. A `.env` that cannot be loaded fails the run.
    let env = Environment::process(load_dotenv(&env_file_choice(&args)));
    let stderr_is_terminal = std::io::stderr().is_terminal();
    let outcome =
        match leash::cli::commands::main(args, env, stderr_is_terminal, Streams::process()) {
            Ok(outcome) => outcome,
            // `--help` and `--version`: clap prints them.
            Err(shown) => {
                let _ = shown.print();
                leash::cli::commands::shown(&shown)
            }
        };
    ExitCode::from(outcome)
}

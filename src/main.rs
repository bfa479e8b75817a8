//! The `leash` binary: parse, run, exit. Everything else is the library.

use std::io::IsTerminal;
use std::process::ExitCode;

use leash::runner::Streams;
use leash::sources::{Environment, load_dotenv};

fn main() -> ExitCode {
    // `.env` first, under the environment; remember what it supplied.
    let env = Environment::process(load_dotenv());
    let stderr_is_terminal = std::io::stderr().is_terminal();
    match leash::commands::main(
        std::env::args_os().collect(),
        env,
        stderr_is_terminal,
        Streams::process(),
    ) {
        Ok(code) => ExitCode::from(code),
        Err(error) => error.exit(),
    }
}

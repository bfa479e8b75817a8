//! The `leash` binary: parse, run, exit. Everything else is the library.

use std::process::ExitCode;

use clap::Parser;
use leash::cli::{Cli, EventsFormat};
use leash::runner::{self, Streams};

fn main() -> ExitCode {
    // `.env` first; variables already in the environment win.
    let _ = dotenvy::dotenv();
    let cli = Cli::parse();
    let events = if cli.quiet {
        EventsFormat::None
    } else {
        cli.events
    };
    let output = cli.output;
    let lookup = |name: &str| std::env::var(name).ok();
    let code = match leash::config::resolve(cli, &lookup) {
        Err(error) => {
            runner::report_usage_error(error.to_string(), events, output, Streams::process())
        }
        Ok(config) => match tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
        {
            Ok(runtime) => runtime.block_on(runner::run(config, Streams::process())),
            Err(error) => runner::report_usage_error(
                format!("cannot start the async runtime: {error}"),
                events,
                output,
                Streams::process(),
            ),
        },
    };
    ExitCode::from(code)
}

//! What the binary does with its arguments: a run, or one of the commands
//! (`batch`, `config`, `completions`, `man`, `schema`, `help`), recognised only as
//! the very first argument so that any other word is still a prompt.
//!
//! `main` hands over the arguments, the environment and the process's
//! streams, and exits with the code this returns; clap's own outcomes
//! (help, version, a bad flag) come back as a `clap::Error` for `main` to
//! print. Commands print only to the streams they are given.

use std::ffi::OsString;
use std::io::{IsTerminal, Write};

use anyhow::Context;

pub mod man;
pub mod usage;

use crate::cli::{Cli, CommandName, Invocation, PrintCommand, RunArgs, command_tree, run_command};
use crate::config::file::{ConfigFile, ConfigFileChoice, ConfigFileError, config_file_choice};
use crate::config::layers::{Environment, ParseError, ParsedRun, parse_flags, parse_run};
use crate::config::show::{describe, describe_reach, render_settings};
use crate::config::{self, Inputs};
use crate::dispatch::usage::clap_reason;
use crate::exit::{Outcome, Status};
use crate::render;
use crate::render::format::{EventsFormat, OutputFormat};
use crate::render::schema::schema;
use crate::render::transcript::reader_left;
use crate::run::input::InputError;
use crate::run::job::{self, Streams};
use crate::run::report;
use crate::telemetry::TraceSettings;
use crate::telemetry::settings::Signal;

/// Runs what the command line asked for ([`Invocation`], argv read once)
/// and returns how it ended; `--help` and `--version` come back as the
/// `clap::Error` that shows them, for `main` to print (see [`shown`]).
pub fn main(
    invocation: Invocation,
    env: Environment,
    stderr_is_terminal: bool,
    streams: Streams,
) -> Result<Outcome, clap::Error> {
    dispatch(invocation, env, stderr_is_terminal, streams).map(Outcome)
}

/// How a run ends whose `--help` or `--version` clap printed.
pub fn shown(error: &clap::Error) -> Outcome {
    // Help and the version go to stdout; clap's own errors to stderr.
    Outcome(match error.use_stderr() {
        false => Status::Ok,
        true => Status::Usage,
    })
}

fn dispatch(
    invocation: Invocation,
    env: Environment,
    stderr_is_terminal: bool,
    streams: Streams,
) -> Result<Status, clap::Error> {
    match invocation {
        Invocation::Run(run) => run_once(&run, &env, stderr_is_terminal, streams),
        Invocation::Batch(batch) => {
            Ok(crate::batch::main(batch, &env, stderr_is_terminal, streams))
        }
        Invocation::Config(run) => show_config(&run, &env, stderr_is_terminal, streams),
        Invocation::Print(None) => Ok(Status::Ok),
        Invocation::Print(Some(command)) => {
            let (mut stdout, mut stderr) = (streams.stdout, streams.stderr);
            Ok(match print_command(command, &mut stdout) {
                Ok(()) => Status::Ok,
                Err(error) => {
                    // The one line that says why; if stderr is gone
                    // too, the exit code still does.
                    let _ = render::write_reason(&mut stderr, &format!("{error:#}"));
                    Status::Error
                }
            })
        }
        Invocation::Shown(error) => Err(error),
        Invocation::Refused(refused) => Ok(report::report_usage_error(
            clap_reason(&refused.error, &refused.args, &env),
            refused.events,
            refused.output,
            streams,
        )),
    }
}

/// A command line the layered parse refused (a value from the `.env` or
/// the config file clap would not take; argv itself parsed): a usage error
/// in the formats argv asked for. `args` is the whole command line.
fn refuse_layered(
    error: clap::Error,
    run: &RunArgs,
    args: &[OsString],
    env: &Environment,
    streams: Streams,
) -> Status {
    let (events, output) = run.formats();
    report::report_usage_error(clap_reason(&error, args, env), events, output, streams)
}

/// `leash [OPTIONS] [PROMPT]`: one run.
fn run_once(
    run: &RunArgs,
    env: &Environment,
    stderr_is_terminal: bool,
    streams: Streams,
) -> Result<Status, clap::Error> {
    let (file, parsed) = match layered_parse(run, env) {
        Layered::Ok { file, parsed } => (file, parsed),
        Layered::Clap(error) => return Ok(refuse_layered(error, run, &run.words, env, streams)),
        Layered::File { error, parsed } => {
            return Ok(report::report_usage_error(
                error.to_string(),
                parsed.cli.events_format(),
                parsed.cli.output,
                streams,
            ));
        }
    };
    let (events, output) = (parsed.cli.events_format(), parsed.cli.output);
    if nothing_to_ask(&parsed.cli, std::io::stdin().is_terminal()) {
        return Ok(show_usage(events, output, streams));
    }
    let inputs = Inputs {
        origins: &parsed.origins,
        env,
        file: file.as_ref(),
        stderr_is_terminal,
    };
    let config = match config::resolve(parsed.cli, &inputs) {
        Ok(config) => config,
        Err(error) => {
            return Ok(report::report_usage_error(
                error.to_string(),
                events,
                output,
                streams,
            ));
        }
    };
    Ok(
        match tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
        {
            Ok(runtime) => {
                let status = runtime.block_on(job::run(config, streams));
                // A blocking task stuck in a system call must not hold the exit.
                runtime.shutdown_timeout(std::time::Duration::from_millis(100));
                status
            }
            Err(error) => report::report_usage_error(
                format!("cannot start the async runtime: {error}"),
                events,
                output,
                streams,
            ),
        },
    )
}

/// Bare `leash` typed at a terminal: no prompt, stdin a terminal that
/// `--stdin` does not ask to read. The user is looking for the usage, not
/// for the key or the config a run would need first.
pub fn nothing_to_ask(cli: &Cli, stdin_is_terminal: bool) -> bool {
    stdin_is_terminal && !cli.stdin && cli.prompt.as_deref().is_none_or(|prompt| prompt == "-")
}

/// The usage, then the reason as the last line (exit 2, as for any usage
/// error); the usage only among text events, so JSON lines stay JSON.
fn show_usage(events: EventsFormat, output: OutputFormat, mut streams: Streams) -> Status {
    if events == EventsFormat::Text {
        let usage = run_command().render_usage().to_string();
        let _ = render::write_usage(&mut streams.stderr, &usage);
    }
    report::report_usage_error(
        format!("{}; leash -h shows the essentials", InputError::NoPrompt),
        events,
        output,
        streams,
    )
}

/// A run's flags parsed through every layer, or why not.
enum Layered {
    /// Parsed, over this config file.
    Ok {
        file: Option<ConfigFile>,
        parsed: ParsedRun,
    },
    /// The command line itself (or `--help`).
    Clap(clap::Error),
    /// The config file is unusable; `parsed` is without it.
    File {
        error: ConfigFileError,
        parsed: ParsedRun,
    },
}

/// The config file a run's command line and real environment choose.
fn config_choice(run: &RunArgs, env: &Environment) -> ConfigFileChoice {
    config_file_choice(&run.matches, ConfigFile::location(&|name| env.get(name)))
}

fn layered_parse(run: &RunArgs, env: &Environment) -> Layered {
    let without_file = |error: ConfigFileError| match parse_flags(run, env) {
        Ok(parsed) => Layered::File { error, parsed },
        Err(error) => Layered::Clap(error),
    };
    let file = match config_choice(run, env).load() {
        Ok(file) => file,
        Err(error) => return without_file(error),
    };
    match parse_run(run, env, file.as_ref()) {
        Ok(parsed) => Layered::Ok { file, parsed },
        Err(ParseError::Clap(error)) => Layered::Clap(error),
        Err(ParseError::File(error)) => without_file(error),
    }
}

/// `completions`, `man`, `schema`, `help`: text on stdout. A closed
/// stdout (`leash man | head`) is not an error.
/// Prints what a print command asks for. A write that fails is a failure
/// of the command (exit 1, said on stderr) — except a reader that went
/// away (`leash man | head`), which is quiet, as for a run.
fn print_command(command: PrintCommand, stdout: &mut dyn Write) -> anyhow::Result<()> {
    // Rendered whole first: the generators panic on a failed write.
    let mut text: Vec<u8> = Vec::new();
    let what = match command {
        PrintCommand::Completions(shell) => {
            clap_complete::generate(shell, &mut command_tree(), "leash", &mut text);
            "the completions"
        }
        PrintCommand::Man => {
            man::render(&mut text).context("cannot render the man page")?;
            "the man page"
        }
        PrintCommand::Schema(kind) => {
            serde_json::to_writer_pretty(&mut text, &schema(kind))
                .context("cannot render the schema")?;
            text.push(b'\n');
            "the schema"
        }
        PrintCommand::Help(name) => {
            let help = match name {
                Some(name) => {
                    let mut tree = command_tree().bin_name("leash");
                    tree.build();
                    tree.find_subcommand_mut(&name)
                        .map(|command| command.render_help().to_string())
                        .unwrap_or_default()
                }
                None => run_command().render_long_help().to_string(),
            };
            text.extend_from_slice(help.as_bytes());
            "the help"
        }
    };
    match stdout.write_all(&text).and_then(|()| stdout.flush()) {
        Err(error) if !reader_left(&error) => {
            Err(error).with_context(|| format!("cannot write {what} to stdout"))
        }
        _ => Ok(()),
    }
}

/// `leash config [OPTIONS]`: the settings a run with these flags would
/// use, each with its source, as TOML a config file could start from; then
/// the run's checks (exit 2 and the reason if one fails).
fn show_config(
    run: &RunArgs,
    env: &Environment,
    stderr_is_terminal: bool,
    streams: Streams,
) -> Result<Status, clap::Error> {
    let choice = config_choice(run, env);
    let (file, parsed, problem) = match layered_parse(run, env) {
        Layered::Ok { file, parsed } => (file, parsed, None),
        Layered::Clap(error) => {
            // The whole line, `config` in it, as the user typed it.
            let mut args = run.words.clone();
            args.insert(1.min(args.len()), CommandName::Config.name().into());
            return Ok(refuse_layered(error, run, &args, env, streams));
        }
        Layered::File { error, parsed } => (None, parsed, Some(error.to_string())),
    };
    let inputs = Inputs {
        origins: &parsed.origins,
        env,
        file: file.as_ref(),
        stderr_is_terminal,
    };
    let mut text = String::from(
        "# leash config: the settings of a run with these flags, and where each comes from\n\
         # (layer by layer, the first that sets one wins: flag, env, .env, config file, default)\n",
    );
    text.push_str(&match (&choice, &file, &problem) {
        (_, _, Some(problem)) => format!("# config file: not used: {problem}\n"),
        (ConfigFileChoice::Skipped(by), _, None) => format!("# config file: skipped ({by})\n"),
        (ConfigFileChoice::Named(path), _, None) => {
            format!("# config file: {} (--config)\n", path.display())
        }
        (ConfigFileChoice::Default(Some(path)), Some(_), None) => {
            format!("# config file: {}\n", path.display())
        }
        (ConfigFileChoice::Default(Some(path)), None, None) => {
            format!("# config file: {} (not found)\n", path.display())
        }
        (ConfigFileChoice::Default(None), _, None) => {
            "# config file: none (neither XDG_CONFIG_HOME nor HOME is set)\n".into()
        }
    });
    text.push_str(&format!("# .env: {}\n", env.dotenv()));
    // Where traces go: the process environment only, header values withheld.
    for line in TraceSettings::from_env(&|name| env.exported(name)).describe() {
        text.push_str(&format!("# {line}\n"));
    }
    let metrics = TraceSettings::read(&|name| env.exported(name), Signal::Metrics);
    text.push_str(&format!("# {}\n", metrics.describe_metrics()));
    for line in describe_reach(&parsed.cli) {
        text.push_str(&format!("# {line}\n"));
    }
    text.push_str(&render_settings(&describe(&parsed, &inputs)));
    let (mut stdout, mut stderr) = (streams.stdout, streams.stderr);
    let _ = stdout.write_all(text.as_bytes());
    let _ = stdout.flush();
    let failure = problem.or_else(|| {
        config::resolve(parsed.cli.clone(), &inputs)
            .err()
            .map(|error| error.to_string())
    });
    Ok(match failure {
        Some(message) => {
            let _ = render::write_reason(&mut stderr, &message);
            Status::Usage
        }
        None => Status::Ok,
    })
}

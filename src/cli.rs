//! The command line (SPEC 2), declared once with clap's derive: every flag
//! with its help text beside it. Nothing here reads files or decides
//! anything; `config` turns these raw values into a validated run.

use std::path::PathBuf;

use clap::{Parser, ValueEnum};

/// The exit-code table shown by `--help` (SPEC 2.1).
pub const EXIT_CODES_HELP: &str = "\
Exit codes:
    0    ok              the final answer ended normally
    1    error           provider or model error (HTTP error after retries, broken stream)
    2    usage           bad flags or configuration: missing key, unreadable file, unknown provider
    3    turn_limit      --max-turns reached while the model still asked for tools
    4    terminated      the run ended after a terminated tool batch without an answer
    5    length          the final answer was cut off by the output token limit
    6    invalid_output  --output-schema: the reply is not valid after one corrective turn
    7    budget          --max-tokens-total: the run used up its token budget
    124  timeout         the --timeout abort timer fired
    130  interrupted     SIGINT (143 for SIGTERM)

Environment: OPENAI_API_KEY, ANTHROPIC_API_KEY, OPENAI_BASE_URL, ANTHROPIC_BASE_URL,
and LEASH_* for every flag (LEASH_MODEL, LEASH_PROVIDER, LEASH_API_KEY, ...).
A .env file in the working directory is loaded first; real environment variables win.";

/// `leash [OPTIONS] [PROMPT]`: one prompt, one bounded agent run.
#[derive(Debug, Clone, Parser)]
#[command(
    name = "leash",
    version,
    about = "Run one bounded agent run: events to stderr, the reply to stdout, an exit code that says how it ended.",
    after_help = EXIT_CODES_HELP
)]
pub struct Cli {
    /// The user message. Absent or `-`: read from stdin. Piped stdin is appended after it.
    #[arg(value_name = "PROMPT")]
    pub prompt: Option<String>,

    /// The system message.
    #[arg(
        short = 's',
        long,
        env = "LEASH_SYSTEM",
        value_name = "TEXT",
        conflicts_with = "system_file"
    )]
    pub system: Option<String>,

    /// Read the system message from a file.
    #[arg(long, env = "LEASH_SYSTEM_FILE", value_name = "PATH")]
    pub system_file: Option<PathBuf>,

    /// The provider [default: openai; anthropic for claude* models; faux with --faux-script].
    #[arg(long, env = "LEASH_PROVIDER", value_enum)]
    pub provider: Option<ProviderName>,

    /// The model name [default: gpt-4.1-mini, claude-sonnet-4-5 or faux].
    #[arg(short = 'm', long, env = "LEASH_MODEL", value_name = "NAME")]
    pub model: Option<String>,

    /// The API base URL (also OPENAI_BASE_URL / ANTHROPIC_BASE_URL).
    #[arg(long, env = "LEASH_BASE_URL", value_name = "URL")]
    pub base_url: Option<String>,

    /// The script of the faux provider (JSON; see the README).
    #[arg(long, env = "LEASH_FAUX_SCRIPT", value_name = "FILE")]
    pub faux_script: Option<PathBuf>,

    /// Abort the whole run after this long (e.g. 30s, 2m, 500ms); 0 = never.
    #[arg(
        short = 't',
        long,
        env = "LEASH_TIMEOUT",
        value_name = "DURATION",
        default_value = "30s"
    )]
    pub timeout: String,

    /// Stop after N turns if the model still asks for tools (exit 3).
    #[arg(long, env = "LEASH_MAX_TURNS", value_name = "N", default_value_t = 4,
          value_parser = clap::value_parser!(u32).range(1..))]
    pub max_turns: u32,

    /// Block the (N+1)-th identical tool call and end the batch (exit 4).
    #[arg(
        long,
        env = "LEASH_MAX_SAME_CALL",
        value_name = "N",
        default_value_t = 2
    )]
    pub max_same_call: u32,

    /// Tools the model may call, comma-separated, or `none`.
    #[arg(
        long,
        env = "LEASH_TOOLS",
        value_name = "LIST",
        default_value = "read_file,list_dir"
    )]
    pub tools: String,

    /// The directory the file tools may read.
    #[arg(long, env = "LEASH_ROOT", value_name = "DIR", default_value = ".")]
    pub root: PathBuf,

    /// Run a batch's tool calls in parallel or one after another.
    #[arg(long, env = "LEASH_TOOL_EXECUTION", value_enum, default_value_t = ToolExecutionArg::Parallel)]
    pub tool_execution: ToolExecutionArg,

    /// A follow-up message, delivered when the agent would stop (repeatable).
    #[arg(long = "follow-up", value_name = "TEXT")]
    pub follow_up: Vec<String>,

    /// How events are printed on stderr.
    #[arg(long, env = "LEASH_EVENTS", value_enum, default_value_t = EventsFormat::Text)]
    pub events: EventsFormat,

    /// Print no events (same as --events none).
    #[arg(short = 'q', long)]
    pub quiet: bool,

    /// What stdout holds: the reply text, or one JSON result object.
    #[arg(long, env = "LEASH_OUTPUT", value_enum, default_value_t = OutputFormat::Text)]
    pub output: OutputFormat,

    /// The reply must be one JSON value valid against this JSON Schema (exit 6 if not).
    #[arg(long, env = "LEASH_OUTPUT_SCHEMA", value_name = "FILE")]
    pub output_schema: Option<PathBuf>,

    /// Stop before the next request once the run used more than N tokens (exit 7).
    #[arg(long, env = "LEASH_MAX_TOKENS_TOTAL", value_name = "N")]
    pub max_tokens_total: Option<u64>,

    /// Write every message of the run to this file as JSON lines.
    #[arg(long, env = "LEASH_TRANSCRIPT", value_name = "PATH")]
    pub transcript: Option<PathBuf>,

    /// Retries of a failed provider request.
    #[arg(long, env = "LEASH_RETRIES", value_name = "N", default_value_t = 2)]
    pub retries: u32,

    /// The most tokens one reply may have.
    #[arg(long, env = "LEASH_MAX_TOKENS", value_name = "N")]
    pub max_tokens: Option<u32>,

    /// Sampling temperature.
    #[arg(long, env = "LEASH_TEMPERATURE", value_name = "T")]
    pub temperature: Option<f32>,

    /// Wait for stdin without the 1 s grace (bounded by --timeout).
    #[arg(long, conflicts_with = "no_stdin")]
    pub stdin: bool,

    /// Never read stdin.
    #[arg(long)]
    pub no_stdin: bool,
}

/// `--provider`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ProviderName {
    /// The Chat Completions API (OpenAI and compatible servers).
    Openai,
    /// The Anthropic Messages API.
    Anthropic,
    /// The scripted offline model.
    Faux,
}

/// `--tool-execution`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ToolExecutionArg {
    /// Calls of one batch run concurrently.
    Parallel,
    /// Calls run one after another.
    Sequential,
}

/// `--events`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum EventsFormat {
    /// One line per event, for people.
    Text,
    /// One JSON object per line.
    Jsonl,
    /// Nothing but the last line on failure.
    None,
}

/// `--output`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum OutputFormat {
    /// The reply text and nothing else.
    Text,
    /// One JSON result object.
    Json,
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn the_command_is_well_formed() {
        Cli::command().debug_assert();
    }

    #[test]
    fn help_lists_the_exit_codes() {
        let help = Cli::command().render_long_help().to_string();
        for code in ["124  timeout", "130  interrupted", "3    turn_limit"] {
            assert!(help.contains(code), "{code} missing from help");
        }
    }
}

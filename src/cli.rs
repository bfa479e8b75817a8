//! The command line (ARCHITECTURE.md §2), declared once with clap's derive: every flag
//! with its help text beside it. Nothing here reads files or decides
//! anything; `config` turns these raw values into a validated run.
//!
//! Two shapes share one definition. A run is `leash [OPTIONS] [PROMPT]`
//! ([`Cli`], parsed by [`run_command`]). A command (`batch`, `config`,
//! `completions`, `man`, `schema`, `help`) is recognised only as the very
//! first argument ([`command_name`]), so any other word — `leash -q man`,
//! `leash -- man` — is still a prompt. [`command_tree`] joins both for
//! completions and the man page. `argv.rs` is the one parse of a command
//! line into an [`Invocation`].

pub mod argv;
pub mod batch;
pub mod commands;
pub mod help;
pub mod names;
pub mod parser;
pub mod peers;
pub mod values;

pub use argv::{Invocation, RunArgs};
pub use commands::{PrintCommand, command_tree};
pub use names::{COMMANDS, CommandName, command_name};
pub use parser::run_command;
use values::parse_allow_exec;
pub use values::{AllowExec, ApiName, ProviderName, ReasoningEffort, ToolExecutionArg};

use std::path::PathBuf;

use clap::Parser;
use clap::builder::BoolishValueParser;

use crate::cli::help::{COMMANDS_USAGE, commands_help, help_footer, short_help_footer};
use crate::render::format::{ColorChoice, EventsFormat, OutputFormat};

/// `leash [OPTIONS] [PROMPT]`: one prompt, one bounded agent run.
#[derive(Debug, Clone, Parser)]
#[command(
    name = "leash",
    version,
    about = "One bounded agent run: the reply on stdout, events on stderr.",
    long_about = "One bounded agent run: events to stderr, the reply to stdout, an exit code that says how it ended.",
    override_usage = format!("leash [OPTIONS] [PROMPT]\n       {COMMANDS_USAGE}"),
    before_long_help = commands_help(),
    after_help = short_help_footer(),
    after_long_help = help_footer(),
    // A repeated flag: the last one wins, so a wrapper can override.
    args_override_self = true
)]
pub struct Cli {
    /// The user message; none or `-`: stdin (piped stdin is appended).
    #[arg(value_name = "PROMPT")]
    pub prompt: Option<String>,

    /// The prompt as a flag, as `claude -p` and `gemini -p` are typed.
    // Folded into `prompt` once parsed (`fold_prompt_flag`); alone (`-p`)
    // it reads the prompt from stdin, as `claude -p` does.
    #[arg(short = 'p', long = "prompt", value_name = "PROMPT", num_args = 0..=1,
          default_missing_value = "-", conflicts_with = "prompt",
          long_help = "The prompt as a flag (how claude -p and gemini -p are typed); \
                       -p alone reads it from stdin")]
    pub prompt_flag: Option<String>,

    /// The system message.
    // Not a clap conflict: `LEASH_SYSTEM` in the environment with
    // `--system-file` on the command line is layering (the flag wins);
    // both on the command line is refused in `config`. Free text: a
    // value may start with `-` (a Markdown bullet list, docs/src/github-action.md "The GitHub Action").
    #[arg(
        short = 's',
        long,
        env = "LEASH_SYSTEM",
        value_name = "TEXT",
        allow_hyphen_values = true
    )]
    pub system: Option<String>,

    /// Read the system message from a file.
    #[arg(long, env = "LEASH_SYSTEM_FILE", value_name = "PATH")]
    pub system_file: Option<PathBuf>,

    /// Attach a file: an image, a PDF or a text file (repeatable; - = stdin).
    // The kind comes from the bytes; caps per provider (docs/src/resume.md "Attachments").
    #[arg(
        long = "attach",
        env = "LEASH_ATTACH",
        value_name = "PATH",
        help_heading = "Attachments"
    )]
    pub attach: Vec<PathBuf>,

    /// The MIME type of --attach - (required with it).
    #[arg(
        long,
        env = "LEASH_ATTACH_TYPE",
        value_name = "MIME",
        help_heading = "Attachments"
    )]
    pub attach_type: Option<String>,

    /// openai, anthropic or faux [default: from --model, --faux-script].
    #[arg(
        long,
        env = "LEASH_PROVIDER",
        value_enum,
        value_name = "NAME",
        hide_possible_values = true
    )]
    pub provider: Option<ProviderName>,

    /// The model [default: per provider].
    #[arg(
        short = 'm',
        long,
        env = "LEASH_MODEL",
        value_name = "NAME",
        long_help = "The model [default: gpt-4.1-mini, claude-sonnet-4-5, faux]"
    )]
    pub model: Option<String>,

    /// The API base (also OPENAI_BASE_URL, ANTHROPIC_BASE_URL).
    #[arg(long, env = "LEASH_BASE_URL", value_name = "URL")]
    pub base_url: Option<String>,

    /// Send the key to a base URL set in a lower layer than the key.
    #[arg(long, env = "LEASH_TRUST_BASE_URL", value_parser = BoolishValueParser::new())]
    pub trust_base_url: bool,

    /// Load this file instead of searching for .env.
    #[arg(long, env = "LEASH_ENV_FILE", value_name = "PATH")]
    pub env_file: Option<PathBuf>,

    /// Load no .env file.
    #[arg(long, env = "LEASH_NO_ENV_FILE", value_parser = BoolishValueParser::new())]
    pub no_env_file: bool,

    /// Run on the scripted model with this script (see docs/src/providers.md).
    #[arg(long, env = "LEASH_FAUX_SCRIPT", value_name = "FILE")]
    pub faux_script: Option<PathBuf>,

    /// Abort after 90s, 2m, ...; 0 = never.
    #[arg(
        short = 't',
        long,
        env = "LEASH_TIMEOUT",
        value_name = "DURATION",
        default_value = "30s",
        long_help = "Abort the run after 90s, 2m, ...; 0 = never"
    )]
    pub timeout: String,

    /// Exit 3 if turn N still asks for tools.
    #[arg(long, env = "LEASH_MAX_TURNS", value_name = "N", default_value_t = 4,
          value_parser = clap::value_parser!(u32).range(1..))]
    pub max_turns: u32,

    /// Block the (N+1)-th identical tool call (exit 4).
    #[arg(
        long,
        env = "LEASH_MAX_SAME_CALL",
        value_name = "N",
        default_value_t = 2
    )]
    pub max_same_call: u32,

    /// Tools offered, or none [default: the file tools].
    // The default is in the text: the long form names git's rule too.
    #[arg(
        long,
        env = "LEASH_TOOLS",
        value_name = "LIST",
        default_value = "read_file,list_dir,grep,find",
        hide_default_value = true,
        long_help = "Tools offered, or none [default: read_file,list_dir,grep,find, \
                     and git when --root is in a git work tree]"
    )]
    pub tools: String,

    /// The only directory the tools may read.
    #[arg(long, env = "LEASH_ROOT", value_name = "DIR", default_value = ".")]
    pub root: PathBuf,

    /// Offer write_file and edit_file: change files under --root.
    #[arg(long, env = "LEASH_ALLOW_WRITE", value_parser = BoolishValueParser::new(),
          help_heading = "Writing",
          long_help = "Also offer write_file and edit_file: the model may change files under --root")]
    pub allow_write: bool,

    /// Offer bash: run commands in --root, confined by the kernel.
    #[arg(long, env = "LEASH_ALLOW_EXEC", value_name = "MODE", num_args = 0..=1,
          require_equals = true, default_value = "false", default_missing_value = "true",
          hide_default_value = true, value_parser = parse_allow_exec, help_heading = "Writing",
          long_help = "Also offer bash: the model may run commands with bash -c in --root, \
                       confined by the kernel (Landlock, seccomp: writes only under --root and \
                       a private TMPDIR, no network, no process left behind); a usage error \
                       where the kernel cannot confine. --allow-exec=unconfined runs them \
                       without the confinement")]
    pub allow_exec: AllowExec,

    /// Let bash commands read DIR too (repeatable).
    #[arg(
        long = "allow-read",
        env = "LEASH_ALLOW_READ",
        value_name = "DIR",
        help_heading = "Writing",
        long_help = "Let bash commands read (and run) DIR too, beyond --root, the system and the \
                       toolchains the environment points at (repeatable). A directory holding a \
                       secret of the home (~/.ssh, ~/.aws, ...) is granted without it"
    )]
    pub allow_read: Vec<PathBuf>,

    /// Pass the variable NAME to bash commands (repeatable).
    #[arg(
        long = "allow-env",
        env = "LEASH_ALLOW_ENV",
        value_name = "NAME",
        help_heading = "Writing",
        long_help = "Pass the variable NAME, as leash has it, to bash commands (repeatable); \
                       never a key, a token or leash's own settings"
    )]
    pub allow_env: Vec<String>,

    /// How a batch runs: parallel or sequential.
    #[arg(long, env = "LEASH_TOOL_EXECUTION", value_enum, default_value_t = ToolExecutionArg::Parallel,
          value_name = "MODE", hide_possible_values = true)]
    pub tool_execution: ToolExecutionArg,

    /// A message for when the agent would stop (repeatable).
    #[arg(long = "follow-up", value_name = "TEXT")]
    pub follow_up: Vec<String>,

    /// Events on stderr: text, jsonl or none.
    #[arg(long, env = "LEASH_EVENTS", value_enum, default_value_t = EventsFormat::Text,
          value_name = "FORMAT", hide_possible_values = true)]
    pub events: EventsFormat,

    /// No events (--events none).
    #[arg(short = 'q', long)]
    pub quiet: bool,

    /// auto (a TTY, NO_COLOR unset), always or never.
    #[arg(long, env = "LEASH_COLOR", value_enum, default_value_t = ColorChoice::Auto,
          value_name = "WHEN", hide_possible_values = true)]
    pub color: ColorChoice,

    /// Show the reply on stderr as it streams (TTY only).
    #[arg(long, env = "LEASH_STREAM", value_parser = BoolishValueParser::new())]
    pub stream: bool,

    /// The reply as text or json.
    #[arg(long, env = "LEASH_OUTPUT", value_enum, default_value_t = OutputFormat::Text,
          value_name = "FORMAT", hide_possible_values = true,
          long_help = "Stdout: the reply (text) or one object (json)")]
    pub output: OutputFormat,

    /// Also write the reply to FILE (empty after a failure).
    #[arg(long, env = "LEASH_OUTPUT_LAST_MESSAGE", value_name = "FILE")]
    pub output_last_message: Option<PathBuf>,

    /// The reply must be JSON valid against this schema (exit 6).
    #[arg(long, env = "LEASH_OUTPUT_SCHEMA", value_name = "FILE")]
    pub output_schema: Option<PathBuf>,

    /// Stop once the run used more than N tokens (exit 7).
    #[arg(long, env = "LEASH_MAX_TOKENS_TOTAL", value_name = "N")]
    pub max_tokens_total: Option<u64>,

    /// No Anthropic cache breakpoints (OpenAI caches on its own).
    #[arg(long, env = "LEASH_NO_CACHE", value_parser = BoolishValueParser::new(),
          help_heading = "Caching and cost")]
    pub no_cache: bool,

    /// OpenAI's prompt_cache_key: requests sharing it share a cache.
    #[arg(
        long,
        env = "LEASH_PROMPT_CACHE_KEY",
        value_name = "KEY",
        help_heading = "Caching and cost"
    )]
    pub prompt_cache_key: Option<String>,

    /// USD per 1M tokens: in, out, cached read, write [cached: in].
    #[arg(
        long,
        env = "LEASH_PRICE",
        value_name = "IN,OUT[,READ,WRITE]",
        help_heading = "Caching and cost"
    )]
    pub price: Option<String>,

    /// Stop once the run cost more than USD (exit 7; needs --price).
    #[arg(
        long,
        env = "LEASH_MAX_COST",
        value_name = "USD",
        help_heading = "Caching and cost"
    )]
    pub max_cost: Option<String>,

    /// Write every message of the run here as JSON lines.
    #[arg(long, env = "LEASH_TRANSCRIPT", value_name = "PATH")]
    pub transcript: Option<PathBuf>,

    /// Continue the conversation of a --transcript file with PROMPT.
    // No variable: a conversation is per invocation, like the prompt; one
    // left in a job's environment would carry into every later run.
    #[arg(long, value_name = "TRANSCRIPT")]
    pub resume: Option<PathBuf>,

    /// Retries of a failed request.
    #[arg(long, env = "LEASH_RETRIES", value_name = "N", default_value_t = 2)]
    pub retries: u32,

    /// The most tokens one reply may have.
    #[arg(long, env = "LEASH_MAX_TOKENS", value_name = "N")]
    pub max_tokens: Option<u32>,

    /// Sampling temperature.
    #[arg(long, env = "LEASH_TEMPERATURE", value_name = "T")]
    pub temperature: Option<f32>,

    /// off, minimal, low, medium, high or xhigh: how much the model reasons.
    // Each wire's own field (docs/src/usage.md "Usage"); `off` sends none.
    #[arg(long, env = "LEASH_REASONING_EFFORT", value_enum,
          default_value_t = ReasoningEffort::Off, value_name = "LEVEL",
          hide_possible_values = true,
          long_help = "How much the model reasons: off, minimal, low, medium, high or xhigh; \
                       off sends no reasoning option")]
    pub reasoning_effort: ReasoningEffort,

    /// chat (Chat Completions) or responses; OpenAI only [default: responses
    /// for gpt-5* and o1/o3/o4*, else chat].
    // No clap default: the model decides (`precedence::choose_api`).
    #[arg(
        long,
        env = "LEASH_API",
        value_enum,
        value_name = "API",
        hide_possible_values = true,
        help_heading = "Provider API"
    )]
    pub api: Option<ApiName>,

    /// MCP servers from a JSON file: {"mcpServers": {NAME: ...}}.
    #[arg(
        long,
        env = "LEASH_MCP_CONFIG",
        value_name = "FILE",
        help_heading = "MCP servers"
    )]
    pub mcp_config: Option<PathBuf>,

    /// One stdio MCP server, split like a shell line (repeatable).
    #[arg(
        long = "mcp",
        value_name = "NAME=COMMAND [ARGS]",
        help_heading = "MCP servers"
    )]
    pub mcp: Vec<String>,

    /// Start and list tools within this, or exit 8.
    #[arg(
        long,
        env = "LEASH_MCP_TIMEOUT",
        value_name = "DURATION",
        default_value = "10s",
        help_heading = "MCP servers"
    )]
    pub mcp_timeout: String,

    /// Stdin is required: wait without the grace.
    #[arg(long, conflicts_with = "no_stdin")]
    pub stdin: bool,

    /// Never read stdin.
    #[arg(long)]
    pub no_stdin: bool,

    /// How long an open stdin pipe gets for its first byte.
    // Late input after it stops the run (exit 2; docs/src/usage.md "Stdin").
    #[arg(
        long,
        env = "LEASH_STDIN_GRACE",
        value_name = "DURATION",
        default_value = "1s",
        long_help = "How long an open stdin pipe gets for its first byte; input that comes \
                     later stops the run (exit 2)"
    )]
    pub stdin_grace: String,

    /// Read this config file instead of ~/.config/leash/config.toml.
    #[arg(
        long = "config",
        env = "LEASH_CONFIG",
        value_name = "FILE",
        help_heading = "Where settings come from"
    )]
    pub config_file: Option<PathBuf>,

    /// Read no config file.
    #[arg(long, env = "LEASH_NO_CONFIG", value_parser = BoolishValueParser::new(),
          help_heading = "Where settings come from")]
    pub no_config: bool,

    /// Flags and the real environment only: no config file, no .env.
    #[arg(long, env = "LEASH_BARE", value_parser = BoolishValueParser::new(),
          help_heading = "Where settings come from",
          long_help = "A hermetic run for CI: flags and the real environment only, \
                       no config file and no .env")]
    pub bare: bool,

    /// Run COMMAND at before-tool-call, after-tool-call or finish-turn
    // Repeatable, run in the order given (docs/src/hooks.md "Hooks").
    #[arg(
        long = "hook",
        env = "LEASH_HOOK",
        value_name = "EVENT=COMMAND",
        help_heading = "Hooks"
    )]
    pub hook: Vec<String>,

    /// Kill a hook that runs longer (it then fails closed).
    #[arg(
        long,
        env = "LEASH_HOOK_TIMEOUT",
        value_name = "DURATION",
        default_value = "10s",
        help_heading = "Hooks"
    )]
    pub hook_timeout: String,

    /// Block calls matching NAME or NAME(ARG=GLOB) (repeatable).
    #[arg(
        long = "deny-tool",
        env = "LEASH_DENY_TOOL",
        value_name = "PATTERN",
        help_heading = "Hooks"
    )]
    pub deny_tool: Vec<String>,

    /// Block every call matching no such pattern (repeatable).
    #[arg(
        long = "allow-tool",
        env = "LEASH_ALLOW_TOOL",
        value_name = "PATTERN",
        help_heading = "Hooks"
    )]
    pub allow_tool: Vec<String>,
}

impl Cli {
    /// `-p TEXT` is the prompt: the parsed flags carry it as `prompt`
    /// from here on (clap refuses both together).
    pub fn fold_prompt_flag(mut self) -> Self {
        if self.prompt.is_none() {
            self.prompt = self.prompt_flag.take();
        }
        self
    }

    /// `--events`, with `-q` meaning `none`.
    pub fn events_format(&self) -> EventsFormat {
        if self.quiet {
            EventsFormat::None
        } else {
            self.events
        }
    }
}

#[cfg(test)]
mod tests;

//! What can be wrong with a run's configuration, each case a usage error
//! (exit 2), and how an error names the layer its value came from.

use crate::config::Inputs;
use crate::config::input::FileReadError;
use crate::config::layers::Source;
use crate::config::precedence::KeyRedirect;
use crate::policy::cost::CostError;
use crate::policy::output_schema::SchemaError;
use leash_faux::ScriptError;
use leash_provider::catalog::file_key;
use leash_tools::git::GitUnavailable;

/// A configuration problem: always a usage error (exit 2).
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// No key for a provider that needs one.
    #[error(
        "{var} is not set (needed by --provider {provider}); {}, \
         or try leash offline without a key: leash --provider faux \"hi\"",
        place.advice(var)
    )]
    MissingKey {
        /// The variable to set.
        var: &'static str,
        /// The provider.
        provider: &'static str,
        /// Where this run could read it from.
        place: KeyPlace,
    },
    /// A provider's setting other than its key is missing (Azure's
    /// endpoint and deployment).
    #[error("--provider {provider} needs {what}")]
    ProviderNeeds {
        /// The provider.
        provider: &'static str,
        /// What to set, and how.
        what: &'static str,
    },
    /// Vertex AI's credentials, project or location cannot be used (the
    /// file, the variable and what is wrong, never a secret).
    #[error("--provider vertex: {0}")]
    Vertex(String),
    /// The key holds a character no HTTP header may carry.
    #[error(
        "the key from {origin} holds a control character ({character}); \
         check for a stray newline or escape in it"
    )]
    KeyControl {
        /// Where the key came from.
        origin: Source,
        /// The character, as `U+000A` (never the key itself).
        character: String,
    },
    /// The key would go to a base URL the user did not choose.
    #[error(transparent)]
    KeyRedirect(#[from] KeyRedirect),
    /// `--api` with a provider other than OpenAI.
    #[error(
        "--api chooses between the OpenAI APIs (chat, responses); --provider {provider} has one API: leave --api out"
    )]
    ApiNotOpenAi {
        /// The run's provider.
        provider: &'static str,
    },
    /// The script did not load.
    #[error(transparent)]
    Script(#[from] ScriptError),
    /// `--timeout` did not parse.
    #[error(
        "invalid --timeout '{value}': {reason} (examples: 30s, 2m, 500ms, 0.5 for half a second, 0 for none)"
    )]
    Timeout {
        /// What was given.
        value: String,
        /// Why it is wrong.
        reason: String,
    },
    /// `--hook-timeout` did not parse, or is zero.
    #[error("invalid --hook-timeout '{value}': {reason} (examples: 10s, 500ms, 2m)")]
    HookTimeout {
        /// What was given.
        value: String,
        /// Why it is wrong.
        reason: String,
    },
    /// `--stdin-grace` did not parse, or is zero.
    #[error("invalid --stdin-grace '{value}': {reason} (examples: 1s, 3s, 500ms)")]
    StdinGrace {
        /// What was given.
        value: String,
        /// Why it is wrong.
        reason: String,
    },
    /// `--mcp-timeout` did not parse.
    #[error("invalid --mcp-timeout '{value}': {reason} (examples: 10s, 1m, 0 for none)")]
    McpTimeout {
        /// What was given.
        value: String,
        /// Why it is wrong.
        reason: String,
    },
    /// A `--hook`, `--deny-tool` or `--allow-tool` value did not parse.
    #[error(transparent)]
    Hook(#[from] crate::policy::command_hooks::SpecError),
    /// `--tools` named an unknown tool.
    #[error(
        "unknown tool '{0}' in --tools (known: read_file, list_dir, grep, find, git, write_file, edit_file, bash with --allow-exec, or none)"
    )]
    UnknownTool(String),
    /// `--tools` named `bash` without `--allow-exec`, which alone offers it.
    #[error(
        "--tools names bash, which leash offers only with --allow-exec: add --allow-exec \
         (commands run in --root, confined by the kernel)"
    )]
    BashWithoutExec,
    /// `--tools` named `git`, but it cannot be offered for the root.
    #[error(
        "--tools names git, but {0}; drop git from --tools or point --root into a git work tree"
    )]
    GitUnavailable(#[source] GitUnavailable),
    /// `--allow-exec`, but commands cannot be run, or not confined.
    #[error(
        "--allow-exec: {0}; fix that, or pass --allow-exec=unconfined to run commands without \
         the confinement"
    )]
    ExecUnavailable(String),
    /// An `--allow-read` that cannot be granted.
    #[error(transparent)]
    AllowRead(leash_child::reach::ReachError),
    /// An `--allow-env` name a command must never see.
    #[error(
        "--allow-env {0:?}: a command never gets a key, a token or leash's own settings; \
         name another variable"
    )]
    AllowEnv(String),
    /// A file input could not be read (or is too large).
    #[error("cannot read {flag} {path}: {source}")]
    ReadFile {
        /// The flag that named it (`--system-file`).
        flag: &'static str,
        /// The path.
        path: String,
        /// Why.
        source: FileReadError,
    },
    /// An `--attach` file refused: unreadable, too large, of a kind leash
    /// does not take, or past a cap of the provider.
    #[error("--attach {name}: {problem}")]
    Attach {
        /// The path as given.
        name: String,
        /// What is wrong, naming the limit.
        problem: String,
    },
    /// The attachments together break a cap of the provider.
    #[error("--attach: {0}")]
    AttachCap(String),
    /// `--attach -` and `--attach-type` must come together.
    #[error("{0}")]
    AttachStdin(&'static str),
    /// `--system` and `--system-file` both on the command line.
    #[error("--system and --system-file cannot be used together; pass one")]
    SystemTwice,
    /// The base URL is not a URL.
    #[error("invalid base URL '{0}': it must be an http:// or https:// URL")]
    BaseUrl(String),
    /// `--output-schema` is unusable.
    #[error(transparent)]
    OutputSchema(#[from] SchemaError),
    /// A flag with no prompt to go with it.
    #[error("--no-stdin needs a PROMPT argument")]
    NoPrompt,
    /// `--root` is not a readable directory.
    #[error("invalid --root {path}: {problem}")]
    Root {
        /// The path.
        path: String,
        /// What is wrong.
        problem: String,
    },
    /// An output file cannot be written.
    #[error("cannot write {flag} {path}: {problem}")]
    OutputPath {
        /// `--transcript` or `--output-last-message`.
        flag: &'static str,
        /// The path.
        path: String,
        /// What is wrong.
        problem: String,
    },
    /// `--resume` names a transcript that cannot be resumed.
    #[error("cannot --resume {path}: {source}")]
    Resume {
        /// The path.
        path: String,
        /// Why, with the line.
        source: crate::render::resume::ResumeError,
    },
    /// `--price` or `--max-cost` did not parse.
    #[error(transparent)]
    Cost(#[from] CostError),
    /// A cost budget without a price to count the cost by.
    #[error(
        "--max-cost needs a price: pass --price INPUT,OUTPUT (USD per million tokens), \
         or set price or [prices] in the config file"
    )]
    MaxCostWithoutPrice,
    /// `--mcp-config` or `--mcp` is unusable.
    #[error(transparent)]
    Mcp(#[from] leash_mcp::McpConfigError),
    /// The `.env` file could not be loaded.
    #[error("{0}")]
    DotEnv(String),
    /// A value from the config file: the file and the key are named.
    #[error("config file {path}: {key}: {problem}")]
    InFile {
        /// The file.
        path: String,
        /// The key.
        key: String,
        /// What is wrong.
        problem: String,
    },
    /// A value from a variable: the variable is named.
    #[error("{origin}: {problem}")]
    InVariable {
        /// `env NAME` or `.env NAME`.
        origin: Source,
        /// What is wrong.
        problem: String,
    },
}

/// Where a missing key can be set, as the missing-key error says it:
/// only places this run would read (docs/src/configuration.md
/// "Configuration"), so `--bare` is never told to use a `.env` and a
/// GitHub Actions step is never told to commit one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeyPlace {
    /// The environment, or the `.env` in the working directory.
    EnvOrDotEnv,
    /// The environment alone: `--bare` or `--no-env-file` reads no `.env`.
    Env,
    /// A GitHub Actions step (`GITHUB_ACTIONS=true`): the step's `env:`,
    /// or the leash Action's input for the key.
    GitHubStep,
}

impl KeyPlace {
    /// The clause that says where to set `var`.
    pub fn advice(self, var: &str) -> String {
        match self {
            KeyPlace::EnvOrDotEnv => "set it in the environment or in .env".to_owned(),
            KeyPlace::Env => "set it in the environment".to_owned(),
            KeyPlace::GitHubStep => format!(
                "in GitHub Actions set it in the step's env: ({var}: ${{{{ secrets.{var} }}}}) \
                 or in the leash Action's {} input",
                file_key(var)
            ),
        }
    }
}

/// Names where a bad value of the argument `id` came from: the config
/// file and its key, or the variable; a flag names itself already.
pub(super) fn named_by_source<'a>(
    inputs: &'a Inputs<'_>,
    id: &'static str,
) -> impl Fn(ConfigError) -> ConfigError + 'a {
    debug_assert!(
        inputs.origins.knows(id),
        "`{id}` is no flag id of the run's parser"
    );
    move |error| in_source(inputs, &inputs.origins.source(id), id)(error)
}

/// Names `source` in an error about the setting `id` (a clap id, or a
/// config-file key).
pub(super) fn in_source<'a>(
    inputs: &'a Inputs<'_>,
    source: &'a Source,
    id: &'a str,
) -> impl Fn(ConfigError) -> ConfigError + 'a {
    move |error| match source {
        Source::File => ConfigError::InFile {
            path: inputs
                .file
                .map(|file| file.path.display().to_string())
                .unwrap_or_default(),
            key: id.replace('_', "-"),
            problem: error.to_string(),
        },
        Source::Env(_) | Source::DotEnv(_) => ConfigError::InVariable {
            origin: source.clone(),
            problem: error.to_string(),
        },
        _ => error,
    }
}

//! The plan of one run, as `resolve` leaves it: every setting decided and
//! checked, nothing a placeholder for the runner to fill in.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use tokio::time::Instant;

use crate::config::input::StdinMode;
use leash_agent::ToolExecution;
pub mod attach;

use crate::policy::command_hooks::HookSettings;
use crate::policy::limits::LimitSettings;
use crate::render::format::{EventsFormat, OutputFormat, Terminal};
pub use attach::AttachPlan;
use leash_faux::Script;
use leash_mcp::McpPlan;
use leash_protocol::secret::ApiKey;
use leash_provider::{HttpSettings, ThinkingLevel};
use leash_tools::bash::ExecMode;
use leash_tools::git::Git;
use leash_tools::sandbox::Sandbox;

/// The tools leash can give the model.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ToolName {
    /// `read_file`.
    ReadFile,
    /// `list_dir`.
    ListDir,
    /// `grep`.
    Grep,
    /// `find`.
    Find,
    /// `git` (offered by default when the root is in a git work tree).
    Git,
    /// `write_file` (only with `--allow-write` or named in `--tools`).
    WriteFile,
    /// `edit_file` (only with `--allow-write` or named in `--tools`).
    EditFile,
    /// `bash` (only with `--allow-exec`).
    Bash,
}

/// Which provider, with what it needs.
#[derive(Debug, Clone)]
pub enum ProviderConfig {
    /// The scripted model.
    Faux(Script),
    /// Chat Completions.
    OpenAi(HttpSettings),
    /// The OpenAI Responses API (`--api responses`).
    OpenAiResponses(HttpSettings),
    /// Anthropic Messages.
    Anthropic(HttpSettings),
    /// Azure OpenAI's Chat Completions (`base_url` the resource's endpoint).
    Azure(HttpSettings),
    /// Azure OpenAI's Responses API (`--api responses`).
    AzureResponses(HttpSettings),
    /// Google's Gemini API.
    Gemini(HttpSettings),
    /// Amazon Bedrock's ConverseStream.
    Bedrock(HttpSettings),
    /// A Gemini model on Google Vertex AI.
    VertexGemini(HttpSettings),
    /// A Claude model on Google Vertex AI.
    VertexClaude(HttpSettings),
}

impl ProviderConfig {
    /// The wire it sends on, as a transcript's session line names it.
    pub fn wire(&self) -> crate::render::resume::Wire {
        use crate::render::resume::Wire;
        match self {
            ProviderConfig::Faux(_) => Wire::Faux,
            ProviderConfig::OpenAi(_) => Wire::Chat,
            ProviderConfig::OpenAiResponses(_) => Wire::Responses,
            ProviderConfig::Anthropic(_) => Wire::Anthropic,
            ProviderConfig::Azure(_) => Wire::AzureChat,
            ProviderConfig::AzureResponses(_) => Wire::AzureResponses,
            ProviderConfig::Gemini(_) => Wire::Gemini,
            ProviderConfig::Bedrock(_) => Wire::Bedrock,
            ProviderConfig::VertexGemini(_) => Wire::Gemini,
            ProviderConfig::VertexClaude(_) => Wire::Anthropic,
        }
    }

    /// The provider's name as messages carry it.
    pub fn name(&self) -> &'static str {
        match self {
            ProviderConfig::Faux(_) => "faux",
            ProviderConfig::OpenAi(_) | ProviderConfig::OpenAiResponses(_) => "openai",
            ProviderConfig::Anthropic(_) => "anthropic",
            ProviderConfig::Azure(_) | ProviderConfig::AzureResponses(_) => "azure",
            ProviderConfig::Gemini(_) => "gemini",
            ProviderConfig::Bedrock(_) => "bedrock",
            ProviderConfig::VertexGemini(_) | ProviderConfig::VertexClaude(_) => "vertex",
        }
    }

    /// The HTTP settings of a provider that speaks HTTP; `None` for faux.
    pub fn http(&self) -> Option<&HttpSettings> {
        match self {
            ProviderConfig::OpenAi(settings)
            | ProviderConfig::OpenAiResponses(settings)
            | ProviderConfig::Anthropic(settings)
            | ProviderConfig::Azure(settings)
            | ProviderConfig::AzureResponses(settings)
            | ProviderConfig::Gemini(settings)
            | ProviderConfig::Bedrock(settings)
            | ProviderConfig::VertexGemini(settings)
            | ProviderConfig::VertexClaude(settings) => Some(settings),
            ProviderConfig::Faux(_) => None,
        }
    }

    /// [`ProviderConfig::http`], to change.
    pub fn http_mut(&mut self) -> Option<&mut HttpSettings> {
        match self {
            ProviderConfig::OpenAi(settings)
            | ProviderConfig::OpenAiResponses(settings)
            | ProviderConfig::Anthropic(settings)
            | ProviderConfig::Azure(settings)
            | ProviderConfig::AzureResponses(settings)
            | ProviderConfig::Gemini(settings)
            | ProviderConfig::Bedrock(settings)
            | ProviderConfig::VertexGemini(settings)
            | ProviderConfig::VertexClaude(settings) => Some(settings),
            ProviderConfig::Faux(_) => None,
        }
    }
}

/// A run, resolved once from every layer and validated: nothing in it is
/// a placeholder for the runner to fill in.
#[derive(Debug, Clone)]
pub struct RunPlan {
    /// The prompt as given on the command line (`None` or `-`: stdin).
    pub prompt: Option<String>,
    /// The files attached to the prompt (`--attach`), read and checked.
    pub attachments: AttachPlan,
    /// How stdin is treated.
    pub stdin: StdinMode,
    /// How long an open stdin pipe gets for its first byte (`--stdin-grace`).
    pub stdin_grace: std::time::Duration,
    /// The system message (empty for none).
    pub system: String,
    /// The provider, with its endpoint, retry policy and request options
    /// (the deadline and `--output-schema` included).
    pub provider: ProviderConfig,
    /// The model.
    pub model: String,
    /// `--reasoning-effort`: how much the model is asked to reason, sent
    /// on every request in each wire's own field; `Off` sends none.
    pub reasoning_effort: ThinkingLevel,
    /// The abort timer; `None` = never.
    pub timeout: Option<Duration>,
    /// When the abort timer fires: `timeout` from the moment the run was
    /// resolved; `None` for no timer (or one too long for the clock).
    pub deadline: Option<Instant>,
    /// The turn limit, the repeat guard, the budget, `--output-schema`.
    pub limits: LimitSettings,
    /// `--hook`, `--hook-timeout`, `--deny-tool`, `--allow-tool`.
    pub hooks: HookSettings,
    /// The tools offered to the model, with their root; `None` for none.
    pub tools: Option<FileTools>,
    /// Parallel or sequential batches.
    pub tool_execution: ToolExecution,
    /// Follow-up messages, delivered one at a time.
    pub follow_ups: Vec<String>,
    /// How events are shown.
    pub events: EventsFormat,
    /// What stdout holds.
    pub output: OutputFormat,
    /// Where to write the transcript (checked, not yet created).
    pub transcript: Option<PathBuf>,
    /// `--resume`: the conversation the run continues, checked.
    pub resume: Option<crate::render::resume::Resume>,
    /// `--output-last-message`: where the reply is also written (checked,
    /// not yet created).
    pub output_last_message: Option<PathBuf>,
    /// How stderr is used, decided once.
    pub terminal: Terminal,
    /// The MCP servers to start, and how long each has to start.
    pub mcp: McpPlan,
    /// What the user should know before the run starts (an API chosen
    /// against the model's family), shown as notices.
    pub notices: Vec<String>,
    /// Every API key leash knows of (the run's, and the values of
    /// `LEASH_API_KEY`, `OPENAI_API_KEY`, `ANTHROPIC_API_KEY` and the config
    /// file's keys): tool results never show them.
    pub known_keys: Vec<ApiKey>,
    /// Where the run's traces go (the `OTEL_*` variables of the process
    /// environment; never a `.env`'s).
    pub traces: crate::telemetry::TraceSettings,
    /// Where the run's GenAI client metrics go (the same variables, the
    /// metrics' own ones first).
    pub metrics: crate::telemetry::MetricSettings,
}

impl RunPlan {
    /// The level the run records (the result, `run_end`, the transcript's
    /// session line): none for `off`, so a run without
    /// `--reasoning-effort` writes what it always did.
    pub fn recorded_effort(&self) -> Option<ThinkingLevel> {
        (self.reasoning_effort != ThinkingLevel::Off).then_some(self.reasoning_effort)
    }
}

/// The file tools of a run: which ones, and the root they may read (and,
/// with `write_file`/`edit_file`, write).
#[derive(Debug, Clone)]
pub struct FileTools {
    /// The tools, in `--tools` order.
    pub names: Vec<ToolName>,
    /// The root, opened once.
    pub sandbox: Arc<Sandbox>,
    /// The `git` tool, when `names` holds it: the repository around the
    /// root, found once.
    pub git: Option<Arc<Git>>,
    /// Why `git`, which would have joined the default tools, was left out
    /// (the repository around the root is refused): a notice for the run.
    pub git_left_out: Option<String>,
    /// With `--allow-exec`: how commands run, the `bash` binary, and what
    /// they may read and see beyond the fixed policy.
    pub shell: Option<(ExecMode, PathBuf, leash_child::reach::Access)>,
    /// Files a confined command must not read (the `.env` a key came
    /// from), hidden by its private mounts.
    pub shell_hidden: Vec<PathBuf>,
}

impl FileTools {
    /// The notices the run starts with: `git` left out, a shell without
    /// the kernel's confinement, or on a kernel that holds less.
    pub fn notices(&self) -> Vec<String> {
        let unconfined = matches!(self.shell, Some((ExecMode::Unconfined, ..))).then(|| {
            "--allow-exec=unconfined: bash commands run WITHOUT the kernel's confinement \
             (they may read and write any file leash can, use the network, and signal \
             leash)"
                .to_owned()
        });
        let weaker = matches!(self.shell, Some((ExecMode::Confined, ..)))
            .then(|| {
                let abi = leash_child::confine::probe().abi_in_use();
                leash_child::confine::Support::weaker_footing(abi)
            })
            .flatten()
            .map(|footing| format!("--allow-exec: {footing}"));
        let no_mounts = (matches!(self.shell, Some((ExecMode::Confined, ..)))
            && !leash_child::confine::private_mounts_available())
        .then(|| {
            "--allow-exec: this system gives leash no private mount namespace (root with \
             CAP_SYS_ADMIN does): a command may change the mode, owner or times of files it \
             owns outside the root, and .git is put back after each command rather than kept \
             read-only"
                .to_owned()
        });
        let no_loopback = (matches!(self.shell, Some((ExecMode::Confined, ..)))
            && !leash_child::confine::private_network_available())
        .then(|| format!("--allow-exec: {}", leash_child::confine::NO_LOOPBACK));
        let reach = match &self.shell {
            Some((ExecMode::Confined, _, access)) => reach_notices(&access.reach),
            _ => Vec::new(),
        };
        let stranger = match &self.shell {
            Some((ExecMode::Confined, _, access)) => {
                leash_child::tree::stranger_in_use().map(|uid| {
                    let notice = leash_child::stranger::notice(uid, &access.reach.paths());
                    format!("--allow-exec: {notice}")
                })
            }
            _ => None,
        };
        self.git_left_out
            .iter()
            .cloned()
            .chain(unconfined)
            .chain(weaker)
            .chain(no_mounts)
            .chain(no_loopback)
            .chain(stranger)
            .chain(reach)
            .collect()
    }
}

/// What a confined command may read beyond the root and the system, and
/// each path of the environment it may not (with the flag that would
/// allow it), as the run's start-up notices.
pub fn reach_notices(reach: &leash_child::reach::Reach) -> Vec<String> {
    let read = match reach.describe() {
        lines if lines.is_empty() => "nothing more".to_owned(),
        lines => lines.join(", "),
    };
    std::iter::once(format!(
        "--allow-exec: commands may read the root, their TMPDIR, the system's directories and: \
         {read}"
    ))
    .chain(
        reach
            .withheld
            .iter()
            .map(|withheld| format!("--allow-exec: {}", withheld.why)),
    )
    .collect()
}

//! The values the run's flags take that are leash's own words
//! (`--provider`, `--api`, `--reasoning-effort`, `--allow-exec`,
//! `--tool-execution`), each a closed set clap checks before `config`
//! reads it.

use clap::ValueEnum;

use leash_provider::ThinkingLevel;

/// `--provider`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ProviderName {
    /// OpenAI and compatible servers: Chat Completions, or the Responses API
    /// with `--api responses`.
    Openai,
    /// The Anthropic Messages API.
    Anthropic,
    /// Azure OpenAI: `-m` is the deployment; Chat Completions, or the
    /// Responses API with `--api responses`.
    Azure,
    /// Google's own Gemini API (`streamGenerateContent`).
    Gemini,
    /// Amazon Bedrock's ConverseStream: `-m` the model id, SigV4 or a
    /// Bedrock API key.
    Bedrock,
    /// Google Vertex AI: Gemini models, and Claude models (`claude-*`),
    /// with a Google access token.
    Vertex,
    /// The scripted offline model.
    Faux,
}

/// `--api`: which OpenAI API a run speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ApiName {
    /// Chat Completions (`/chat/completions`): OpenAI and every compatible server.
    Chat,
    /// The Responses API (`/responses`), stateless: the newer reasoning models.
    Responses,
}

/// `--reasoning-effort`: the library's [`ThinkingLevel`], as the command
/// line spells it (clap needs a `ValueEnum`; the library's type has none).
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ReasoningEffort {
    /// No reasoning option is sent.
    Off,
    /// The least reasoning a model offers.
    Minimal,
    /// Little reasoning.
    Low,
    /// Some reasoning.
    Medium,
    /// Much reasoning.
    High,
    /// The most a model offers.
    #[value(name = "xhigh")]
    XHigh,
}

impl From<ReasoningEffort> for ThinkingLevel {
    fn from(effort: ReasoningEffort) -> Self {
        match effort {
            ReasoningEffort::Off => ThinkingLevel::Off,
            ReasoningEffort::Minimal => ThinkingLevel::Minimal,
            ReasoningEffort::Low => ThinkingLevel::Low,
            ReasoningEffort::Medium => ThinkingLevel::Medium,
            ReasoningEffort::High => ThinkingLevel::High,
            ReasoningEffort::XHigh => ThinkingLevel::XHigh,
        }
    }
}

/// `--allow-exec`: no shell, a confined one, or one without the kernel's
/// confinement.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AllowExec {
    /// No `bash` tool (the default).
    Off,
    /// `--allow-exec`: confined by Landlock and seccomp.
    Confined,
    /// `--allow-exec=unconfined`.
    Unconfined,
}

/// `true`/`false` in the spellings the other switches take, `confined`,
/// or `unconfined`.
pub(super) fn parse_allow_exec(text: &str) -> Result<AllowExec, String> {
    match text.trim().to_ascii_lowercase().as_str() {
        "true" | "1" | "yes" | "on" | "y" | "confined" => Ok(AllowExec::Confined),
        "false" | "0" | "no" | "off" | "n" | "" => Ok(AllowExec::Off),
        "unconfined" => Ok(AllowExec::Unconfined),
        _ => Err("expected true, false or unconfined".to_owned()),
    }
}

/// `--tool-execution`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ToolExecutionArg {
    /// Calls of one batch run concurrently.
    Parallel,
    /// Calls run one after another.
    Sequential,
}

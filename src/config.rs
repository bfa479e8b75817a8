//! Flags + environment → one validated [`Config`]. Every check that can
//! fail before the run starts happens here, so a bad input is a usage error
//! (exit 2) before any request is made.
//!
//! The environment comes in as a lookup function: tests build a config
//! without touching the process environment. The API key is wrapped at once
//! and never formatted.

use std::net::IpAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use crate::agent::ToolExecution;
use crate::cli::{Cli, EventsFormat, OutputFormat, ProviderName, ToolExecutionArg};
use crate::input::StdinMode;
use crate::output_schema::{OutputSchema, SchemaError};
use crate::provider::faux::{Script, ScriptError};
use crate::provider::{ApiKey, HttpSettings};

/// The default OpenAI model.
pub const DEFAULT_OPENAI_MODEL: &str = "gpt-4.1-mini";
/// The default Anthropic model.
pub const DEFAULT_ANTHROPIC_MODEL: &str = "claude-sonnet-4-5";
/// The default OpenAI base URL.
pub const DEFAULT_OPENAI_BASE: &str = "https://api.openai.com/v1";
/// The default Anthropic base URL.
pub const DEFAULT_ANTHROPIC_BASE: &str = "https://api.anthropic.com";

/// The tools leash can give the model.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ToolName {
    /// `read_file`.
    ReadFile,
    /// `list_dir`.
    ListDir,
}

/// Which provider, with what it needs.
#[derive(Debug, Clone)]
pub enum ProviderConfig {
    /// The scripted model.
    Faux(Script),
    /// Chat Completions.
    OpenAi(HttpSettings),
    /// Anthropic Messages.
    Anthropic(HttpSettings),
}

impl ProviderConfig {
    /// The provider's name as messages carry it.
    pub fn name(&self) -> &'static str {
        match self {
            ProviderConfig::Faux(_) => "faux",
            ProviderConfig::OpenAi(_) => "openai",
            ProviderConfig::Anthropic(_) => "anthropic",
        }
    }
}

/// A validated run configuration.
#[derive(Debug, Clone)]
pub struct Config {
    /// The prompt as given on the command line (`None` or `-`: stdin).
    pub prompt: Option<String>,
    /// How stdin is treated.
    pub stdin: StdinMode,
    /// The system message (empty for none).
    pub system: String,
    /// The provider.
    pub provider: ProviderConfig,
    /// The model.
    pub model: String,
    /// The abort timer; `None` = never.
    pub timeout: Option<Duration>,
    /// `--max-turns`.
    pub max_turns: u32,
    /// `--max-same-call`.
    pub max_same_call: u32,
    /// The tools offered to the model.
    pub tools: Vec<ToolName>,
    /// The root of the file tools.
    pub root: PathBuf,
    /// Parallel or sequential batches.
    pub tool_execution: ToolExecution,
    /// Follow-up messages, delivered one at a time.
    pub follow_ups: Vec<String>,
    /// How events are shown.
    pub events: EventsFormat,
    /// What stdout holds.
    pub output: OutputFormat,
    /// Where to write the transcript.
    pub transcript: Option<PathBuf>,
    /// `--output-schema`, compiled.
    pub output_schema: Option<Arc<OutputSchema>>,
    /// `--max-tokens-total`.
    pub max_tokens_total: Option<u64>,
}

/// A configuration problem: always a usage error (exit 2).
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// No key for a provider that needs one.
    #[error(
        "{var} is not set (needed by --provider {provider}); set it in the environment or in .env"
    )]
    MissingKey {
        /// The variable to set.
        var: &'static str,
        /// The provider.
        provider: &'static str,
    },
    /// `--provider faux` without a script.
    #[error("--provider faux needs --faux-script FILE")]
    MissingScript,
    /// The script did not load.
    #[error(transparent)]
    Script(#[from] ScriptError),
    /// `--timeout` did not parse.
    #[error("invalid --timeout '{value}': {reason} (examples: 30s, 2m, 500ms, 0 for none)")]
    Timeout {
        /// What was given.
        value: String,
        /// Why it is wrong.
        reason: String,
    },
    /// `--tools` named an unknown tool.
    #[error("unknown tool '{0}' in --tools (known: read_file, list_dir, or none)")]
    UnknownTool(String),
    /// `--system-file` could not be read.
    #[error("cannot read --system-file {path}: {source}")]
    SystemFile {
        /// The path.
        path: String,
        /// The I/O error.
        source: std::io::Error,
    },
    /// The base URL is not a URL.
    #[error("invalid base URL '{0}': it must be an http:// or https:// URL")]
    BaseUrl(String),
    /// `--output-schema` is unusable.
    #[error(transparent)]
    OutputSchema(#[from] SchemaError),
    /// A flag with no prompt to go with it.
    #[error("--no-stdin needs a PROMPT argument")]
    NoPrompt,
}

/// Resolves flags and environment into a config. `env` looks up a
/// variable (after `.env` was merged under the real environment).
pub fn resolve(cli: Cli, env: &dyn Fn(&str) -> Option<String>) -> Result<Config, ConfigError> {
    let non_empty = |name: &str| env(name).filter(|value| !value.trim().is_empty());
    let provider_name = choose_provider(&cli);
    let model = cli.model.clone().unwrap_or_else(|| {
        match provider_name {
            ProviderName::Openai => DEFAULT_OPENAI_MODEL,
            ProviderName::Anthropic => DEFAULT_ANTHROPIC_MODEL,
            ProviderName::Faux => "faux",
        }
        .to_owned()
    });
    let timeout = parse_timeout(&cli.timeout)?;
    let http = |key_var: &'static str, base_var: &str, default_base: &str, provider| {
        let base_url = cli
            .base_url
            .clone()
            .or_else(|| non_empty(base_var))
            .unwrap_or_else(|| default_base.to_owned());
        let parsed = reqwest::Url::parse(&base_url)
            .ok()
            .filter(|url| matches!(url.scheme(), "http" | "https"))
            .ok_or_else(|| ConfigError::BaseUrl(base_url.clone()))?;
        let api_key = non_empty("LEASH_API_KEY")
            .or_else(|| non_empty(key_var))
            .map(|key| ApiKey::new(key.trim()));
        if api_key.is_none() && !is_loopback(&parsed) {
            return Err(ConfigError::MissingKey {
                var: key_var,
                provider,
            });
        }
        Ok(HttpSettings {
            base_url,
            api_key,
            retries: cli.retries,
            max_tokens: cli.max_tokens,
            temperature: cli.temperature,
            deadline: None,
            output_schema: None,
        })
    };
    let provider = match provider_name {
        ProviderName::Faux => {
            let path = cli.faux_script.as_ref().ok_or(ConfigError::MissingScript)?;
            ProviderConfig::Faux(Script::load(path)?)
        }
        ProviderName::Openai => ProviderConfig::OpenAi(http(
            "OPENAI_API_KEY",
            "OPENAI_BASE_URL",
            DEFAULT_OPENAI_BASE,
            "openai",
        )?),
        ProviderName::Anthropic => ProviderConfig::Anthropic(http(
            "ANTHROPIC_API_KEY",
            "ANTHROPIC_BASE_URL",
            DEFAULT_ANTHROPIC_BASE,
            "anthropic",
        )?),
    };
    let system = match (&cli.system, &cli.system_file) {
        (Some(text), _) => text.clone(),
        (None, Some(path)) => {
            std::fs::read_to_string(path).map_err(|source| ConfigError::SystemFile {
                path: path.display().to_string(),
                source,
            })?
        }
        (None, None) => String::new(),
    };
    let stdin = if cli.no_stdin {
        StdinMode::Never
    } else if cli.stdin {
        StdinMode::Wait
    } else {
        StdinMode::Auto
    };
    if stdin == StdinMode::Never && cli.prompt.as_deref().is_none_or(|p| p == "-") {
        return Err(ConfigError::NoPrompt);
    }
    let output_schema = match &cli.output_schema {
        Some(path) => Some(Arc::new(OutputSchema::load(path)?)),
        None => None,
    };
    Ok(Config {
        prompt: cli.prompt,
        stdin,
        system,
        provider,
        model,
        timeout,
        max_turns: cli.max_turns,
        max_same_call: cli.max_same_call,
        tools: parse_tools(&cli.tools)?,
        root: cli.root,
        tool_execution: match cli.tool_execution {
            ToolExecutionArg::Parallel => ToolExecution::Parallel,
            ToolExecutionArg::Sequential => ToolExecution::Sequential,
        },
        follow_ups: cli.follow_up,
        events: if cli.quiet {
            EventsFormat::None
        } else {
            cli.events
        },
        output: cli.output,
        transcript: cli.transcript,
        output_schema,
        max_tokens_total: cli.max_tokens_total,
    })
}

/// `--provider`, else a `claude*` model means Anthropic, a faux script
/// means faux, and OpenAI otherwise.
fn choose_provider(cli: &Cli) -> ProviderName {
    if let Some(provider) = cli.provider {
        return provider;
    }
    if cli
        .model
        .as_deref()
        .is_some_and(|model| model.starts_with("claude"))
    {
        return ProviderName::Anthropic;
    }
    if cli.faux_script.is_some() {
        return ProviderName::Faux;
    }
    ProviderName::Openai
}

/// `30s`, `2m`, `500ms`, a bare number of seconds, or `0` for no timer.
pub fn parse_timeout(value: &str) -> Result<Option<Duration>, ConfigError> {
    let trimmed = value.trim();
    let duration = match trimmed.parse::<u64>() {
        Ok(seconds) => Duration::from_secs(seconds),
        Err(_) => humantime::parse_duration(trimmed).map_err(|error| ConfigError::Timeout {
            value: value.to_owned(),
            reason: error.to_string(),
        })?,
    };
    Ok((!duration.is_zero()).then_some(duration))
}

/// `read_file,list_dir`, or `none`.
pub fn parse_tools(list: &str) -> Result<Vec<ToolName>, ConfigError> {
    if list.trim() == "none" {
        return Ok(Vec::new());
    }
    let mut tools = Vec::new();
    for name in list
        .split(',')
        .map(str::trim)
        .filter(|name| !name.is_empty())
    {
        let tool = match name {
            "read_file" => ToolName::ReadFile,
            "list_dir" => ToolName::ListDir,
            other => return Err(ConfigError::UnknownTool(other.to_owned())),
        };
        if !tools.contains(&tool) {
            tools.push(tool);
        }
    }
    Ok(tools)
}

/// Whether a URL points at this machine (local servers may go keyless).
fn is_loopback(url: &reqwest::Url) -> bool {
    match url.host_str() {
        Some("localhost") => true,
        Some(host) => host
            .trim_start_matches('[')
            .trim_end_matches(']')
            .parse::<IpAddr>()
            .is_ok_and(|ip| ip.is_loopback()),
        None => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;
    use std::collections::HashMap;

    fn resolve_with(args: &[&str], vars: &[(&str, &str)]) -> Result<Config, ConfigError> {
        let vars: HashMap<String, String> = vars
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        let mut argv = vec!["leash"];
        argv.extend_from_slice(args);
        let cli = Cli::try_parse_from(argv).unwrap();
        resolve(cli, &|name| vars.get(name).cloned())
    }

    #[test]
    fn timeouts_parse_in_words_numbers_and_zero() {
        assert_eq!(parse_timeout("30s").unwrap(), Some(Duration::from_secs(30)));
        assert_eq!(
            parse_timeout("500ms").unwrap(),
            Some(Duration::from_millis(500))
        );
        assert_eq!(parse_timeout("2m").unwrap(), Some(Duration::from_secs(120)));
        assert_eq!(parse_timeout("7").unwrap(), Some(Duration::from_secs(7)));
        assert_eq!(parse_timeout("0").unwrap(), None);
        assert!(parse_timeout("soon").is_err());
    }

    #[test]
    fn tools_parse_with_none_and_reject_unknown_names() {
        assert_eq!(parse_tools("none").unwrap(), vec![]);
        assert_eq!(
            parse_tools("list_dir, read_file,list_dir").unwrap(),
            vec![ToolName::ListDir, ToolName::ReadFile]
        );
        let error = parse_tools("read_file,bash").unwrap_err();
        assert_eq!(
            error.to_string(),
            "unknown tool 'bash' in --tools (known: read_file, list_dir, or none)"
        );
    }

    #[test]
    fn a_missing_openai_key_is_a_usage_error_naming_the_variable() {
        let error = resolve_with(&["hi"], &[]).unwrap_err();
        assert_eq!(
            error.to_string(),
            "OPENAI_API_KEY is not set (needed by --provider openai); set it in the environment or in .env"
        );
    }

    #[test]
    fn a_loopback_server_may_go_without_a_key() {
        let config = resolve_with(&["--base-url", "http://127.0.0.1:11434/v1", "hi"], &[]).unwrap();
        let ProviderConfig::OpenAi(settings) = config.provider else {
            panic!("not openai");
        };
        assert!(settings.api_key.is_none());
    }

    #[test]
    fn a_claude_model_picks_anthropic_and_its_key() {
        let config = resolve_with(
            &["-m", "claude-haiku-4-5", "hi"],
            &[("ANTHROPIC_API_KEY", "sk-ant-secret")],
        )
        .unwrap();
        let ProviderConfig::Anthropic(settings) = &config.provider else {
            panic!("not anthropic");
        };
        assert_eq!(settings.base_url, DEFAULT_ANTHROPIC_BASE);
        assert_eq!(
            settings.api_key.as_ref().map(ApiKey::expose),
            Some("sk-ant-secret")
        );
        // The key never shows in the config's debug output.
        assert!(!format!("{config:?}").contains("sk-ant-secret"));
    }

    #[test]
    fn base_urls_come_from_the_flag_then_leash_then_the_provider_variable() {
        let vars = [
            ("OPENAI_API_KEY", "k"),
            ("OPENAI_BASE_URL", "http://provider.example/v1"),
        ];
        let config = resolve_with(&["hi"], &vars).unwrap();
        let ProviderConfig::OpenAi(settings) = config.provider else {
            panic!()
        };
        assert_eq!(settings.base_url, "http://provider.example/v1");
        let config = resolve_with(&["--base-url", "http://flag.example", "hi"], &vars).unwrap();
        let ProviderConfig::OpenAi(settings) = config.provider else {
            panic!()
        };
        assert_eq!(settings.base_url, "http://flag.example");
    }

    #[test]
    fn faux_needs_a_script() {
        let error = resolve_with(&["--provider", "faux", "hi"], &[]).unwrap_err();
        assert_eq!(
            error.to_string(),
            "--provider faux needs --faux-script FILE"
        );
    }

    #[test]
    fn quiet_means_no_events() {
        let config = resolve_with(&["-q", "--base-url", "http://localhost:1", "hi"], &[]).unwrap();
        assert_eq!(config.events, EventsFormat::None);
    }
}

//! Flags + environment + `.env` + config file → one validated [`Config`].
//! Every check that can fail before the run starts happens here, so a bad
//! input is a usage error (exit 2) before any request is made.
//!
//! The layers come in as [`Inputs`] (the origin of each parsed flag, an
//! environment, the config file): tests build a config without touching
//! the process environment. The choices that weigh several layers live in
//! `choices`, shared with `leash config`. The API key is wrapped at once
//! and never formatted.

use std::net::IpAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use crate::agent::ToolExecution;
use crate::choices::{
    SystemChoice, choose_api_key, choose_base_url, choose_model, choose_provider, choose_system,
    decide_terminal, provider_variables,
};
use crate::cli::{Cli, EventsFormat, OutputFormat, ProviderName, ToolExecutionArg};
use crate::config_file::ConfigFile;
use crate::input::StdinMode;
use crate::output_schema::{OutputSchema, SchemaError};
use crate::provider::faux::{Script, ScriptError};
use crate::provider::{ApiKey, HttpSettings};
use crate::sources::{Environment, Origins};

/// The default OpenAI model.
pub const DEFAULT_OPENAI_MODEL: &str = "gpt-4.1-mini";
/// The default Anthropic model.
pub const DEFAULT_ANTHROPIC_MODEL: &str = "claude-sonnet-4-5";
/// The default OpenAI base URL (the provider's own, in one place).
pub const DEFAULT_OPENAI_BASE: &str = crate::provider::openai::DEFAULT_BASE_URL;
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
    /// `--output-last-message`: where the reply is also written.
    pub output_last_message: Option<PathBuf>,
    /// How stderr is used, decided once.
    pub terminal: Terminal,
    /// Every API key leash knows of (the run's, and the values of
    /// `LEASH_API_KEY`, `OPENAI_API_KEY`, `ANTHROPIC_API_KEY` and the config
    /// file's keys): tool results never show them.
    pub known_keys: Vec<ApiKey>,
}

/// What stderr may show beyond plain lines, decided once from the flags,
/// the environment and whether stderr is a terminal.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Terminal {
    /// Colour in `--events text`.
    pub color: bool,
    /// A live indicator while waiting for the model (text events, a TTY).
    pub indicator: bool,
    /// `--stream`: reply text shown as it arrives (a TTY, not jsonl).
    pub stream: bool,
}

/// Everything besides the parsed flags that a config is resolved from.
pub struct Inputs<'a> {
    /// Where each parsed flag came from.
    pub origins: &'a Origins,
    /// The environment (with `.env` merged under it).
    pub env: &'a Environment,
    /// The config file, if there is one.
    pub file: Option<&'a ConfigFile>,
    /// Whether stderr is a terminal.
    pub stderr_is_terminal: bool,
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

/// Resolves the layered flags into a config.
pub fn resolve(cli: Cli, inputs: &Inputs<'_>) -> Result<Config, ConfigError> {
    let (provider_name, _) = choose_provider(&cli, inputs.origins);
    let (model, _) = choose_model(&cli, provider_name);
    let timeout = parse_timeout(&cli.timeout)?;
    let http = |provider: ProviderName| {
        let (base_url, _) = choose_base_url(&cli, inputs, provider);
        let parsed = reqwest::Url::parse(&base_url)
            .ok()
            .filter(|url| matches!(url.scheme(), "http" | "https"))
            .ok_or_else(|| ConfigError::BaseUrl(base_url.clone()))?;
        let api_key = choose_api_key(inputs, provider).map(|(key, _)| key);
        if api_key.is_none() && !is_loopback(&parsed) {
            let variables = provider_variables(provider);
            return Err(ConfigError::MissingKey {
                var: variables.key,
                provider: variables.name,
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
        ProviderName::Openai => ProviderConfig::OpenAi(http(provider_name)?),
        ProviderName::Anthropic => ProviderConfig::Anthropic(http(provider_name)?),
    };
    let system = match choose_system(&cli, inputs.origins) {
        SystemChoice::Text(text) => text.to_owned(),
        SystemChoice::File(path) => {
            std::fs::read_to_string(path).map_err(|source| ConfigError::SystemFile {
                path: path.display().to_string(),
                source,
            })?
        }
        SystemChoice::None => String::new(),
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
    let events = cli.events_format();
    let terminal = decide_terminal(&cli, events, inputs);
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
        events,
        output: cli.output,
        transcript: cli.transcript,
        output_schema,
        max_tokens_total: cli.max_tokens_total,
        output_last_message: cli.output_last_message,
        terminal,
        known_keys: known_keys(inputs),
    })
}

/// Every key value the layers hold, whichever provider runs (see
/// [`Config::known_keys`]).
fn known_keys(inputs: &Inputs<'_>) -> Vec<ApiKey> {
    let from_env = ["LEASH_API_KEY", "OPENAI_API_KEY", "ANTHROPIC_API_KEY"]
        .into_iter()
        .filter_map(|name| inputs.env.get(name));
    let from_file = ["api-key", "openai-api-key", "anthropic-api-key"]
        .into_iter()
        .filter_map(|key| {
            inputs
                .file
                .and_then(|file| file.get(key))
                .map(str::to_owned)
        });
    from_env
        .chain(from_file)
        .map(|value| value.trim().to_owned())
        .filter(|value| !value.is_empty())
        .map(ApiKey::new)
        .collect()
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
    use crate::provider::ApiKey;
    use crate::sources::parse_run;
    use std::ffi::OsString;
    use std::path::Path;

    fn resolve_with(args: &[&str], vars: &[(&str, &str)]) -> Result<Config, ConfigError> {
        resolve_layered(args, vars, None, false)
    }

    /// Resolves `args` over the variables `vars` and a config file `file`.
    fn resolve_layered(
        args: &[&str],
        vars: &[(&str, &str)],
        file: Option<&str>,
        stderr_is_terminal: bool,
    ) -> Result<Config, ConfigError> {
        let env = Environment::from_pairs(vars, &[]);
        let file = file.map(|text| ConfigFile::parse(Path::new("/c/config.toml"), text).unwrap());
        let argv: Vec<OsString> = std::iter::once("leash")
            .chain(args.iter().copied())
            .map(OsString::from)
            .collect();
        let run = parse_run(&argv, &env, file.as_ref()).unwrap();
        resolve(
            run.cli,
            &Inputs {
                origins: &run.origins,
                env: &env,
                file: file.as_ref(),
                stderr_is_terminal,
            },
        )
    }

    fn settings(config: &Config) -> &HttpSettings {
        match &config.provider {
            ProviderConfig::OpenAi(settings) | ProviderConfig::Anthropic(settings) => settings,
            ProviderConfig::Faux(_) => panic!("faux has no settings"),
        }
    }

    #[test]
    fn keys_come_from_the_environment_before_the_config_file() {
        let file = "api-key = \"sk-file\"\nopenai-api-key = \"sk-file-openai\"\n";
        let key = |vars: &[(&str, &str)], file: Option<&str>| {
            let config = resolve_layered(&["hi"], vars, file, false).unwrap();
            settings(&config)
                .api_key
                .as_ref()
                .map(|k| k.expose().to_owned())
        };
        let both = [
            ("LEASH_API_KEY", "sk-leash"),
            ("OPENAI_API_KEY", "sk-openai"),
        ];
        assert_eq!(key(&both, Some(file)).as_deref(), Some("sk-leash"));
        assert_eq!(key(&both[1..], Some(file)).as_deref(), Some("sk-openai"));
        assert_eq!(key(&[], Some(file)).as_deref(), Some("sk-file"));
        assert_eq!(
            key(&[], Some("openai-api-key = \"sk-file-openai\"")).as_deref(),
            Some("sk-file-openai")
        );
    }

    #[test]
    fn base_urls_go_flag_then_variable_then_file_then_default() {
        let file = "base-url = \"http://file.example\"\nopenai-base-url = \"http://file-openai.example\"\n";
        let vars = [("OPENAI_API_KEY", "k")];
        let url = |args: &[&str], vars: &[(&str, &str)], file: Option<&str>| {
            settings(&resolve_layered(args, vars, file, false).unwrap())
                .base_url
                .clone()
        };
        let with_var = [vars[0], ("OPENAI_BASE_URL", "http://var.example")];
        assert_eq!(
            url(
                &["--base-url", "http://flag.example", "hi"],
                &with_var,
                Some(file)
            ),
            "http://flag.example"
        );
        assert_eq!(url(&["hi"], &with_var, Some(file)), "http://var.example");
        assert_eq!(url(&["hi"], &vars, Some(file)), "http://file.example");
        assert_eq!(
            url(
                &["hi"],
                &vars,
                Some("openai-base-url = \"http://file-openai.example\"")
            ),
            "http://file-openai.example"
        );
        assert_eq!(url(&["hi"], &vars, None), DEFAULT_OPENAI_BASE);
    }

    #[test]
    fn the_config_file_sets_what_flags_leave_at_the_default() {
        let file =
            "model = \"claude-haiku-4-5\"\nmax-turns = 7\ntimeout = \"2m\"\nevents = \"jsonl\"\n";
        let vars = [("ANTHROPIC_API_KEY", "k")];
        let config =
            resolve_layered(&["--max-turns", "3", "hi"], &vars, Some(file), false).unwrap();
        assert_eq!(config.model, "claude-haiku-4-5");
        assert!(matches!(config.provider, ProviderConfig::Anthropic(_)));
        assert_eq!(config.max_turns, 3);
        assert_eq!(config.timeout, Some(Duration::from_secs(120)));
        assert_eq!(config.events, EventsFormat::Jsonl);
        // -q still means no events.
        let config = resolve_layered(&["-q", "hi"], &vars, Some(file), false).unwrap();
        assert_eq!(config.events, EventsFormat::None);
    }

    #[test]
    fn a_system_file_flag_beats_a_system_text_from_the_config_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("system.md");
        std::fs::write(&path, "from the file").unwrap();
        let args = [
            "--system-file",
            path.to_str().unwrap(),
            "--base-url",
            "http://localhost:1",
            "hi",
        ];
        let config = resolve_layered(&args, &[], Some("system = \"from config\""), false).unwrap();
        assert_eq!(config.system, "from the file");
    }

    #[test]
    fn the_indicator_and_the_stream_need_a_terminal() {
        let local = ["--base-url", "http://localhost:1", "--stream", "hi"];
        let on_tty = resolve_layered(&local, &[], None, true).unwrap().terminal;
        assert_eq!(
            on_tty,
            Terminal {
                color: true,
                indicator: true,
                stream: true
            }
        );
        let piped = resolve_layered(&local, &[], None, false).unwrap().terminal;
        assert_eq!(piped, Terminal::default());
        let no_color = resolve_layered(&local, &[("NO_COLOR", "1")], None, true).unwrap();
        assert!(!no_color.terminal.color && no_color.terminal.indicator);
        let jsonl = [
            "--events",
            "jsonl",
            "--base-url",
            "http://localhost:1",
            "--stream",
            "hi",
        ];
        assert_eq!(
            resolve_layered(&jsonl, &[], None, true).unwrap().terminal,
            Terminal::default()
        );
        let quiet = ["-q", "--base-url", "http://localhost:1", "--stream", "hi"];
        let quiet = resolve_layered(&quiet, &[], None, true).unwrap().terminal;
        assert!(quiet.stream && !quiet.indicator && !quiet.color);
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

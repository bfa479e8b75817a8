//! Flags + environment + `.env` + config file → one validated [`RunPlan`].
//! Every check that can fail before the run starts happens here, so a bad
//! input is a usage error (exit 2) before any request is made.
//!
//! The layers come in as [`Inputs`] (the origin of each parsed flag, an
//! environment, the config file): tests build a config without touching
//! the process environment. The choices that weigh several layers live in
//! `precedence`, shared with `leash config`. The API key is wrapped at once
//! and never formatted.

pub mod dotenv;
mod error;
pub mod file;
pub mod layers;
pub mod precedence;
pub mod show;

pub use error::ConfigError;
use error::{in_source, named_by_source};

use std::net::IpAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use tokio::time::Instant;

use crate::agent::ToolExecution;
use crate::cli::{ApiName, Cli, EventsFormat, OutputFormat, ProviderName, ToolExecutionArg};
use crate::config::dotenv::DotEnvStatus;
use crate::config::file::ConfigFile;
use crate::config::layers::{Environment, Origins, Source};
use crate::config::precedence::{
    SystemChoice, api_notice, check_key_destination, choose_api, choose_api_key, choose_base_url,
    choose_model, choose_price, choose_provider, choose_system, decide_terminal, provider_info,
};
use crate::mcp::McpPlan;
use crate::provider::catalog;
use crate::provider::faux::Script;
use crate::provider::{ApiKey, HttpSettings};
use crate::run::cost::{Cost, Price};
use crate::run::hooks::{HookSettings, HookSpec, Policy, ToolPattern};
use crate::run::input::{FILE_LIMIT, StdinMode, read_text_file};
use crate::run::limits::Limits;
use crate::run::output_schema::{OutputSchema, SchemaError};
use crate::tools::git::Git;
use crate::tools::sandbox::Sandbox;

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
}

impl ProviderConfig {
    /// The provider's name as messages carry it.
    pub fn name(&self) -> &'static str {
        match self {
            ProviderConfig::Faux(_) => "faux",
            ProviderConfig::OpenAi(_) | ProviderConfig::OpenAiResponses(_) => "openai",
            ProviderConfig::Anthropic(_) => "anthropic",
        }
    }
}

/// A run, resolved once from every layer and validated: nothing in it is
/// a placeholder for the runner to fill in.
#[derive(Debug, Clone)]
pub struct RunPlan {
    /// The prompt as given on the command line (`None` or `-`: stdin).
    pub prompt: Option<String>,
    /// How stdin is treated.
    pub stdin: StdinMode,
    /// The system message (empty for none).
    pub system: String,
    /// The provider, with its endpoint, retry policy and request options
    /// (the deadline and `--output-schema` included).
    pub provider: ProviderConfig,
    /// The model.
    pub model: String,
    /// The abort timer; `None` = never.
    pub timeout: Option<Duration>,
    /// When the abort timer fires: `timeout` from the moment the run was
    /// resolved; `None` for no timer (or one too long for the clock).
    pub deadline: Option<Instant>,
    /// The turn limit, the repeat guard, the budget, `--output-schema`.
    pub limits: Limits,
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

/// Resolves the layered flags into the plan of a run.
pub fn resolve(cli: Cli, inputs: &Inputs<'_>) -> Result<RunPlan, ConfigError> {
    if let DotEnvStatus::Failed(problem) = inputs.env.dotenv() {
        return Err(ConfigError::DotEnv(problem.clone()));
    }
    let named = |id: &'static str| named_by_source(inputs, id);
    let (provider_name, _) = choose_provider(&cli, inputs.origins);
    let (model, _) = choose_model(&cli, provider_name);
    let timeout = parse_timeout(&cli.timeout).map_err(named("timeout"))?;
    // A timeout too long for the clock (`--timeout 18446744073709551615`)
    // is no timer at all rather than an overflow panic.
    let deadline = timeout.and_then(|timeout| Instant::now().checked_add(timeout));
    let output_schema = match &cli.output_schema {
        Some(path) => Some(Arc::new(load_schema(path).map_err(named("output_schema"))?)),
        None => None,
    };
    let (price, max_cost) = resolve_cost(&cli, inputs, &model)?;
    let trust = cli
        .trust_base_url
        .then(|| inputs.origins.source("trust_base_url"));
    let http = |provider: ProviderName| {
        let (base_url, url_source) = choose_base_url(&cli, inputs, provider);
        let base_file_key = provider_info(provider).base_url_file_key();
        let base_id = match url_source == inputs.origins.source("base_url") {
            true => "base_url",
            false => &*base_file_key,
        };
        let parsed = reqwest::Url::parse(&base_url)
            .ok()
            .filter(|url| matches!(url.scheme(), "http" | "https"))
            .ok_or_else(|| ConfigError::BaseUrl(base_url.clone()))
            .map_err(in_source(inputs, &url_source, base_id))?;
        let api_key = match choose_api_key(inputs, provider) {
            Some((key, key_source)) => {
                if let Some(character) = key.expose().chars().find(|c| c.is_control()) {
                    return Err(ConfigError::KeyControl {
                        origin: key_source,
                        character: format!("U+{:04X}", u32::from(character)),
                    });
                }
                check_key_destination(
                    &key_source,
                    &base_url,
                    &url_source,
                    trust.as_ref(),
                    provider_info(provider).default_base_url,
                )?;
                Some(key)
            }
            None => None,
        };
        if api_key.is_none() && !is_loopback(&parsed) {
            let info = provider_info(provider);
            return Err(ConfigError::MissingKey {
                var: info.key_variable,
                provider: info.name,
            });
        }
        Ok(HttpSettings {
            retries: cli.retries,
            max_tokens: cli.max_tokens,
            temperature: cli.temperature,
            deadline,
            output_schema: output_schema.as_ref().map(|schema| schema.schema().clone()),
            cache: !cli.no_cache,
            prompt_cache_key: cli.prompt_cache_key.clone(),
            ..HttpSettings::new(base_url, api_key)
        })
    };
    if inputs.origins.source("system") == Source::Flag
        && inputs.origins.source("system_file") == Source::Flag
    {
        return Err(ConfigError::SystemTwice);
    }
    let system = match choose_system(&cli, inputs.origins) {
        SystemChoice::Text(text) => text.to_owned(),
        SystemChoice::File(path) => {
            read_input("--system-file", path).map_err(named("system_file"))?
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
    let mut names = parse_tools(&cli.tools).map_err(named("tools"))?;
    if cli.allow_write {
        for tool in [ToolName::WriteFile, ToolName::EditFile] {
            if !names.contains(&tool) {
                names.push(tool);
            }
        }
    }
    let tools = match names.is_empty() {
        true => None,
        false => Some(
            file_tools(
                names,
                Arc::new(open_root(&cli.root).map_err(named("root"))?),
                inputs.origins.source("tools") == Source::Default,
            )
            .map_err(named("tools"))?,
        ),
    };
    for (id, flag, path) in [
        ("transcript", "--transcript", &cli.transcript),
        (
            "output_last_message",
            "--output-last-message",
            &cli.output_last_message,
        ),
    ] {
        if let Some(path) = path {
            check_output_path(flag, path).map_err(named(id))?;
        }
    }
    let hooks = parse_hooks(&cli, inputs)?;
    let mcp = McpPlan {
        servers: mcp_servers(&cli, inputs)?,
        timeout: match parse_timeout(&cli.mcp_timeout) {
            Ok(Some(timeout)) => timeout,
            Ok(None) => Duration::MAX,
            Err(error) => return Err(named("mcp_timeout")(mcp_timeout_error(error))),
        },
    };
    let (api, _) = choose_api(&cli, inputs.origins, provider_name);
    let notices: Vec<String> = api_notice(&cli, provider_name, api).into_iter().collect();
    // The provider last: its missing key is the one error a user cannot fix
    // by correcting the command line, so every argument error comes first.
    if provider_name != ProviderName::Openai && cli.api.is_some() {
        let provider = match provider_name {
            ProviderName::Faux => "faux",
            http => provider_info(http).name,
        };
        return Err(named("api")(ConfigError::ApiNotOpenAi { provider }));
    }
    let provider = match provider_name {
        ProviderName::Faux => {
            let path = cli.faux_script.as_ref().ok_or(ConfigError::MissingScript)?;
            let text = read_input("--faux-script", path).map_err(named("faux_script"))?;
            let script = Script::parse(&text, &path.display().to_string())
                .map_err(|error| named("faux_script")(error.into()))?;
            ProviderConfig::Faux(script)
        }
        ProviderName::Openai => match api {
            ApiName::Chat => ProviderConfig::OpenAi(http(provider_name)?),
            ApiName::Responses => ProviderConfig::OpenAiResponses(http(provider_name)?),
        },
        ProviderName::Anthropic => ProviderConfig::Anthropic(http(provider_name)?),
    };
    let events = cli.events_format();
    let terminal = decide_terminal(&cli, events, inputs);
    Ok(RunPlan {
        prompt: cli.prompt,
        stdin,
        system,
        provider,
        model,
        timeout,
        deadline,
        limits: Limits {
            max_turns: cli.max_turns,
            max_same_call: cli.max_same_call,
            max_tokens_total: cli.max_tokens_total,
            price,
            max_cost,
            output_schema,
        },
        hooks,
        tools,
        tool_execution: match cli.tool_execution {
            ToolExecutionArg::Parallel => ToolExecution::Parallel,
            ToolExecutionArg::Sequential => ToolExecution::Sequential,
        },
        follow_ups: cli.follow_up,
        events,
        output: cli.output,
        transcript: cli.transcript,
        output_last_message: cli.output_last_message,
        terminal,
        mcp,
        known_keys: known_keys(inputs),
        notices,
    })
}

/// The run's price ([`choose_price`]) and `--max-cost`, which needs one.
fn resolve_cost(
    cli: &Cli,
    inputs: &Inputs<'_>,
    model: &str,
) -> Result<(Option<Price>, Option<Cost>), ConfigError> {
    let price = match choose_price(cli, inputs, model) {
        Some(choice) => {
            let id = match choice.per_model {
                true => format!("prices.\"{model}\""),
                false => "price".to_owned(),
            };
            let price = Price::parse(&choice.text)
                .map_err(ConfigError::from)
                .map_err(in_source(inputs, &choice.source, &id))?;
            Some(price)
        }
        None => None,
    };
    let max_cost = match &cli.max_cost {
        Some(text) => Some(
            Cost::parse_usd(text)
                .map_err(ConfigError::from)
                .map_err(named_by_source(inputs, "max_cost"))?,
        ),
        None => None,
    };
    if max_cost.is_some() && price.is_none() {
        return Err(ConfigError::MaxCostWithoutPrice);
    }
    Ok((price, max_cost))
}

/// `--hook`, `--hook-timeout`, `--deny-tool` and `--allow-tool`, each
/// error naming where its value came from.
fn parse_hooks(cli: &Cli, inputs: &Inputs<'_>) -> Result<HookSettings, ConfigError> {
    let named = |id: &'static str| named_by_source(inputs, id);
    let hooks = cli
        .hook
        .iter()
        .map(|value| {
            let spec = HookSpec::parse(value)?;
            spec.check_program(inputs.env.get("PATH").as_deref())?;
            Ok(spec)
        })
        .collect::<Result<_, crate::run::hooks::SpecError>>()
        .map_err(|error| named("hook")(error.into()))?;
    let timeout = parse_hook_timeout(&cli.hook_timeout).map_err(named("hook_timeout"))?;
    let patterns = |id: &'static str, flag: &'static str, values: &[String]| {
        values
            .iter()
            .map(|value| ToolPattern::parse(flag, value).map_err(|error| named(id)(error.into())))
            .collect::<Result<Vec<_>, _>>()
    };
    Ok(HookSettings {
        hooks,
        timeout,
        policy: Policy {
            deny: patterns("deny_tool", "--deny-tool", &cli.deny_tool)?,
            allow: patterns("allow_tool", "--allow-tool", &cli.allow_tool)?,
        },
    })
}

/// `--hook-timeout`: a duration as for `--timeout`, but never zero (a hook
/// always has a timeout).
pub fn parse_hook_timeout(value: &str) -> Result<Duration, ConfigError> {
    let invalid = |reason: String| ConfigError::HookTimeout {
        value: value.to_owned(),
        reason,
    };
    match parse_timeout(value) {
        Ok(Some(duration)) => Ok(duration),
        Ok(None) => Err(invalid(
            "a hook always has a timeout; it must be more than 0".into(),
        )),
        Err(ConfigError::Timeout { reason, .. }) => Err(invalid(reason)),
        Err(other) => Err(other),
    }
}

/// The servers of `--mcp-config` and `--mcp`, `${VAR}` expanded from the
/// environment (with `.env`).
pub(crate) fn mcp_servers(
    cli: &Cli,
    inputs: &Inputs<'_>,
) -> Result<Vec<crate::mcp::ServerSpec>, ConfigError> {
    let lookup = |name: &str| inputs.env.get(name);
    let from_file = match &cli.mcp_config {
        Some(path) => {
            let text =
                read_input("--mcp-config", path).map_err(named_by_source(inputs, "mcp_config"))?;
            crate::mcp::config::parse_file(path, &text, &lookup)?
        }
        None => Vec::new(),
    };
    let from_flags = cli
        .mcp
        .iter()
        .map(|value| crate::mcp::config::parse_flag(value, &lookup))
        .collect::<Result<Vec<_>, _>>()?;
    Ok(crate::mcp::config::merge(from_file, from_flags)?)
}

/// `--mcp-timeout`'s own words for a bad duration (0 means no limit).
fn mcp_timeout_error(error: ConfigError) -> ConfigError {
    match error {
        ConfigError::Timeout { value, reason } => ConfigError::McpTimeout { value, reason },
        other => other,
    }
}

/// Reads a file input, bounded by [`FILE_LIMIT`].
fn read_input(flag: &'static str, path: &Path) -> Result<String, ConfigError> {
    read_text_file(path, FILE_LIMIT).map_err(|source| ConfigError::ReadFile {
        flag,
        path: path.display().to_string(),
        source,
    })
}

/// Reads and compiles `--output-schema`, bounded like every file input.
fn load_schema(path: &Path) -> Result<OutputSchema, ConfigError> {
    let text = read_input("--output-schema", path)?;
    let shown = path.display().to_string();
    let schema: serde_json::Value =
        serde_json::from_str(&text).map_err(|error| SchemaError::NotJson {
            path: shown.clone(),
            message: error.to_string(),
        })?;
    Ok(OutputSchema::new(schema, &shown)?)
}

/// `--root` must be a directory the tools can open; opened once, here.
fn open_root(root: &Path) -> Result<Sandbox, ConfigError> {
    Sandbox::new(root).map_err(|error| ConfigError::Root {
        path: root.display().to_string(),
        problem: error.to_string(),
    })
}

/// An output file (`--transcript`, `--output-last-message`) must be
/// creatable: not a directory, in a directory that exists. Nothing is
/// created here (`leash config` runs this too); an existing regular file
/// is opened for writing without truncating it.
fn check_output_path(flag: &'static str, path: &Path) -> Result<(), ConfigError> {
    let problem = |problem: String| ConfigError::OutputPath {
        flag,
        path: path.display().to_string(),
        problem,
    };
    match std::fs::metadata(path) {
        Ok(meta) if meta.is_dir() => Err(problem("it is a directory".into())),
        Ok(meta) if meta.is_file() => std::fs::OpenOptions::new()
            .write(true)
            .open(path)
            .map(|_| ())
            .map_err(|error| problem(error.to_string())),
        // A device or a pipe (`/dev/null`, `>(cat)`): opened by the run.
        Ok(_) => Ok(()),
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => {
            let parent = match path.parent() {
                Some(parent) if !parent.as_os_str().is_empty() => parent,
                _ => Path::new("."),
            };
            match std::fs::metadata(parent) {
                Ok(meta) if meta.is_dir() => Ok(()),
                Ok(_) => Err(problem(format!("{} is not a directory", parent.display()))),
                Err(error) => Err(problem(format!(
                    "its directory {}: {error}",
                    parent.display()
                ))),
            }
        }
        Err(error) => Err(problem(error.to_string())),
    }
}

/// Every key value the layers hold, whichever provider runs (see
/// [`RunPlan::known_keys`]).
fn known_keys(inputs: &Inputs<'_>) -> Vec<ApiKey> {
    let from_env = catalog::key_variables().filter_map(|name| inputs.env.get(name));
    let from_file = catalog::key_variables().filter_map(|variable| {
        inputs
            .file
            .and_then(|file| file.get(&catalog::file_key(variable)))
            .map(str::to_owned)
    });
    from_env
        .chain(from_file)
        .map(|value| value.trim().to_owned())
        .filter(|value| !value.is_empty())
        .map(ApiKey::new)
        .collect()
}

/// `30s`, `2m`, `500ms`, a bare number of seconds (`7`, `0.5`), or `0`
/// for no timer.
pub fn parse_timeout(value: &str) -> Result<Option<Duration>, ConfigError> {
    let trimmed = value.trim();
    let invalid = |reason: String| ConfigError::Timeout {
        value: value.to_owned(),
        reason,
    };
    let duration = if let Ok(seconds) = trimmed.parse::<u64>() {
        Duration::from_secs(seconds)
    } else if trimmed.starts_with(|c: char| c.is_ascii_digit() || c == '.')
        && let Ok(seconds) = trimmed.parse::<f64>()
    {
        Duration::try_from_secs_f64(seconds).map_err(|error| invalid(error.to_string()))?
    } else {
        humantime::parse_duration(trimmed).map_err(|error| invalid(error.to_string()))?
    };
    Ok((!duration.is_zero()).then_some(duration))
}

/// The tools named, over the root; with the default list, `git` joins
/// them when the root is in a git work tree. Naming `git` for a root in
/// none (or with no git binary) is a usage error.
fn file_tools(
    mut names: Vec<ToolName>,
    sandbox: Arc<Sandbox>,
    default_list: bool,
) -> Result<FileTools, ConfigError> {
    let named_git = names.contains(&ToolName::Git);
    let mut git_left_out = None;
    let git = match (named_git || default_list).then(|| Git::for_root(Arc::clone(&sandbox))) {
        Some(Ok(git)) => Some(Arc::new(git)),
        Some(Err(error)) if named_git => {
            return Err(ConfigError::GitUnavailable(error));
        }
        Some(Err(error)) => {
            git_left_out = error
                .is_refusal()
                .then(|| format!("git is left out: {error}"));
            None
        }
        None => None,
    };
    if git.is_some() && !named_git {
        names.push(ToolName::Git);
    }
    Ok(FileTools {
        names,
        sandbox,
        git,
        git_left_out,
    })
}

/// `read_file,list_dir,grep,find,git,write_file,edit_file` (any of them),
/// or `none`.
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
            "grep" => ToolName::Grep,
            "find" => ToolName::Find,
            "git" => ToolName::Git,
            "write_file" => ToolName::WriteFile,
            "edit_file" => ToolName::EditFile,
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
mod tests;

//! Flags + environment + `.env` + config file → one validated [`RunPlan`].
//! Every check that can fail before the run starts happens here, so a bad
//! input is a usage error (exit 2) before any request is made.
//!
//! The layers come in as [`Inputs`] (the origin of each parsed flag, an
//! environment, the config file): tests build a config without touching
//! the process environment. The choices that weigh several layers live in
//! `precedence`, shared with `leash config`. The API key is wrapped at once
//! and never formatted.

pub mod file;
pub mod layers;
pub mod precedence;

use std::net::IpAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use tokio::time::Instant;

use crate::agent::ToolExecution;
use crate::choices::{
    KeyRedirect, SystemChoice, check_key_destination, choose_api_key, choose_base_url,
    choose_model, choose_provider, choose_system, decide_terminal, provider_info,
};
use crate::cli::{Cli, EventsFormat, OutputFormat, ProviderName, ToolExecutionArg};
use crate::config_file::ConfigFile;
use crate::input::{FILE_LIMIT, FileReadError, StdinMode, read_text_file};
use crate::output_schema::{OutputSchema, SchemaError};
use crate::provider::catalog;
use crate::provider::faux::{Script, ScriptError};
use crate::provider::{ApiKey, HttpSettings};
use crate::run::limits::Limits;
use crate::sources::{DotEnvStatus, Environment, Origins, Source};
use crate::tools::sandbox::Sandbox;

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
    /// Every API key leash knows of (the run's, and the values of
    /// `LEASH_API_KEY`, `OPENAI_API_KEY`, `ANTHROPIC_API_KEY` and the config
    /// file's keys): tool results never show them.
    pub known_keys: Vec<ApiKey>,
}

/// The file tools of a run: which ones, and the root they may read.
#[derive(Debug, Clone)]
pub struct FileTools {
    /// The tools, in `--tools` order.
    pub names: Vec<ToolName>,
    /// The root, opened once.
    pub sandbox: Arc<Sandbox>,
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
    /// `--provider faux` without a script.
    #[error("--provider faux needs --faux-script FILE")]
    MissingScript,
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
    /// `--tools` named an unknown tool.
    #[error("unknown tool '{0}' in --tools (known: read_file, list_dir, or none)")]
    UnknownTool(String),
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
                check_key_destination(&key_source, &base_url, &url_source, trust.as_ref())?;
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
            base_url,
            api_key,
            retries: cli.retries,
            max_tokens: cli.max_tokens,
            temperature: cli.temperature,
            deadline,
            output_schema: output_schema.as_ref().map(|schema| schema.schema().clone()),
        })
    };
    let provider = match provider_name {
        ProviderName::Faux => {
            let path = cli.faux_script.as_ref().ok_or(ConfigError::MissingScript)?;
            let text = read_input("--faux-script", path).map_err(named("faux_script"))?;
            let script = Script::parse(&text, &path.display().to_string())
                .map_err(|error| named("faux_script")(error.into()))?;
            ProviderConfig::Faux(script)
        }
        ProviderName::Openai => ProviderConfig::OpenAi(http(provider_name)?),
        ProviderName::Anthropic => ProviderConfig::Anthropic(http(provider_name)?),
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
    let names = parse_tools(&cli.tools).map_err(named("tools"))?;
    let tools = match names.is_empty() {
        true => None,
        false => Some(FileTools {
            names,
            sandbox: Arc::new(open_root(&cli.root).map_err(named("root"))?),
        }),
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
            output_schema,
        },
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
        known_keys: known_keys(inputs),
    })
}

/// Names where a bad value of the argument `id` came from: the config
/// file and its key, or the variable; a flag names itself already.
fn named_by_source<'a>(
    inputs: &'a Inputs<'_>,
    id: &'static str,
) -> impl Fn(ConfigError) -> ConfigError + 'a {
    move |error| in_source(inputs, &inputs.origins.source(id), id)(error)
}

/// Names `source` in an error about the setting `id` (a clap id, or a
/// config-file key).
fn in_source<'a>(
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

/// `--root` must be a directory the tools can open (checked again when
/// the run builds its sandbox).
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
/// [`Config::known_keys`]).
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

    fn resolve_with(args: &[&str], vars: &[(&str, &str)]) -> Result<RunPlan, ConfigError> {
        resolve_layered(args, vars, None, false)
    }

    /// Resolves `args` over `vars`, of which `dotenv` came from `.env`.
    fn resolve_dotenv(
        args: &[&str],
        vars: &[(&str, &str)],
        dotenv: &[&str],
        file: Option<&str>,
    ) -> Result<RunPlan, ConfigError> {
        let env = Environment::from_pairs(vars, dotenv);
        resolve_in(args, &env, file, false)
    }

    /// Resolves `args` over the variables `vars` and a config file `file`.
    fn resolve_layered(
        args: &[&str],
        vars: &[(&str, &str)],
        file: Option<&str>,
        stderr_is_terminal: bool,
    ) -> Result<RunPlan, ConfigError> {
        resolve_in(
            args,
            &Environment::from_pairs(vars, &[]),
            file,
            stderr_is_terminal,
        )
    }

    fn resolve_in(
        args: &[&str],
        env: &Environment,
        file: Option<&str>,
        stderr_is_terminal: bool,
    ) -> Result<RunPlan, ConfigError> {
        let file = file.map(|text| ConfigFile::parse(Path::new("/c/config.toml"), text).unwrap());
        let argv: Vec<OsString> = std::iter::once("leash")
            .chain(args.iter().copied())
            .map(OsString::from)
            .collect();
        let run = parse_run(&argv, env, file.as_ref()).unwrap();
        resolve(
            run.cli,
            &Inputs {
                origins: &run.origins,
                env,
                file: file.as_ref(),
                stderr_is_terminal,
            },
        )
    }

    fn settings(config: &RunPlan) -> &HttpSettings {
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
        // The file's base URL gets the environment's key only with its consent.
        let file = "base-url = \"http://file.example\"\nopenai-base-url = \"http://file-openai.example\"\ntrust-base-url = true\n";
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
                Some("openai-base-url = \"http://file-openai.example\"\ntrust-base-url = true")
            ),
            "http://file-openai.example"
        );
        assert_eq!(url(&["hi"], &vars, None), catalog::OPENAI.default_base_url);
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
        assert_eq!(config.limits.max_turns, 3);
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
        assert_eq!(settings.base_url, catalog::ANTHROPIC.default_base_url);
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

    fn key_of(config: &RunPlan) -> Option<String> {
        settings(config)
            .api_key
            .as_ref()
            .map(|k| k.expose().to_owned())
    }

    #[test]
    fn a_dotenv_key_never_beats_an_exported_key_of_another_name() {
        let vars = [("LEASH_API_KEY", "sk-dotenv"), ("OPENAI_API_KEY", "sk-env")];
        let config = resolve_dotenv(&["hi"], &vars, &["LEASH_API_KEY"], None).unwrap();
        assert_eq!(key_of(&config).as_deref(), Some("sk-env"));
        // Within one layer, LEASH_API_KEY still comes first.
        let config = resolve_dotenv(&["hi"], &vars, &[], None).unwrap();
        assert_eq!(key_of(&config).as_deref(), Some("sk-dotenv"));
    }

    #[test]
    fn a_dotenv_base_url_never_beats_an_exported_one_of_another_name() {
        let vars = [
            ("OPENAI_API_KEY", "sk-env"),
            ("OPENAI_BASE_URL", "http://env.example/v1"),
        ];
        // The environment's URL is above a config-file URL, even one set
        // by the flag's own name there.
        let config = resolve_dotenv(
            &["hi"],
            &vars,
            &[],
            Some("base-url = \"http://file.example\""),
        )
        .unwrap();
        assert_eq!(settings(&config).base_url, "http://env.example/v1");
    }

    #[test]
    fn a_key_never_goes_to_a_base_url_from_a_lower_layer() {
        let evil = [
            ("OPENAI_API_KEY", "sk-env"),
            ("OPENAI_BASE_URL", "http://evil.example"),
        ];
        // `.env` supplies the URL, the environment the key: refused.
        let error = resolve_dotenv(&["hi"], &evil, &["OPENAI_BASE_URL"], None).unwrap_err();
        assert_eq!(
            error.to_string(),
            "refusing to send the key from env OPENAI_API_KEY to the base URL http://evil.example \
             from .env OPENAI_BASE_URL: a lower layer than the key's may not redirect it; pass \
             --base-url on the command line, or --trust-base-url to allow it"
        );
        assert!(!error.to_string().contains("sk-env"));
        // The user says so on the command line.
        let config = resolve_dotenv(
            &["--trust-base-url", "hi"],
            &evil,
            &["OPENAI_BASE_URL"],
            None,
        )
        .unwrap();
        assert_eq!(settings(&config).base_url, "http://evil.example");
        // A .env that supplies both sends its own key where it likes.
        let both = ["OPENAI_API_KEY", "OPENAI_BASE_URL"];
        assert!(resolve_dotenv(&["hi"], &evil, &both, None).is_ok());
        // A .env never redirects the config file's key either, even
        // though .env is the higher layer.
        let file_key = [("OPENAI_BASE_URL", "http://evil.example")];
        let error = resolve_dotenv(
            &["hi"],
            &file_key,
            &["OPENAI_BASE_URL"],
            Some("api-key = \"sk-file\""),
        )
        .unwrap_err();
        assert!(matches!(error, ConfigError::KeyRedirect(_)), "{error}");
        // The config file's consent covers the config file's URL only.
        let trusting = "trust-base-url = true\napi-key = \"sk-file\"";
        assert!(resolve_dotenv(&["hi"], &file_key, &["OPENAI_BASE_URL"], Some(trusting)).is_err());
        let file_url = "base-url = \"http://mine.example\"\ntrust-base-url = true";
        assert!(resolve_dotenv(&["hi"], &[("OPENAI_API_KEY", "k")], &[], Some(file_url)).is_ok());
        // The provider's default is never a redirect.
        assert!(resolve_dotenv(&["hi"], &[("OPENAI_API_KEY", "k")], &[], None).is_ok());
    }

    #[test]
    fn a_control_character_in_the_key_is_named_as_such() {
        let error = resolve_with(&["hi"], &[("OPENAI_API_KEY", "sk-a\u{1b}b")]).unwrap_err();
        assert_eq!(
            error.to_string(),
            "the key from env OPENAI_API_KEY holds a control character (U+001B); \
             check for a stray newline or escape in it"
        );
    }

    #[test]
    fn a_bare_number_timeout_is_seconds_even_with_a_fraction() {
        assert_eq!(
            parse_timeout("0.5").unwrap(),
            Some(Duration::from_millis(500))
        );
        assert_eq!(
            parse_timeout("1.25").unwrap(),
            Some(Duration::from_millis(1250))
        );
        assert!(parse_timeout("-1").is_err());
        assert!(parse_timeout("NaN").is_err());
        assert!(parse_timeout("1e400").is_err());
    }

    #[test]
    fn a_bad_config_file_value_names_the_file_and_the_key() {
        let local = ["--base-url", "http://localhost:1", "hi"];
        let error = resolve_layered(&local, &[], Some("timeout = \"forever\""), false)
            .unwrap_err()
            .to_string();
        assert!(
            error.starts_with("config file /c/config.toml: timeout: invalid --timeout 'forever'"),
            "{error}"
        );
        let error = resolve_layered(&local, &[], Some("tools = [\"bash\"]"), false)
            .unwrap_err()
            .to_string();
        assert!(
            error.starts_with("config file /c/config.toml: tools: unknown tool 'bash'"),
            "{error}"
        );
    }

    #[test]
    fn every_file_input_is_bounded() {
        let local = ["--base-url", "http://localhost:1"];
        for flag in ["--system-file", "--output-schema"] {
            let args = [local[0], local[1], flag, "/dev/zero", "hi"];
            let error = resolve_with(&args, &[]).unwrap_err().to_string();
            assert_eq!(
                error,
                format!("cannot read {flag} /dev/zero: it is larger than {FILE_LIMIT} bytes")
            );
        }
        let error = resolve_with(&["--faux-script", "/dev/zero", "hi"], &[])
            .unwrap_err()
            .to_string();
        assert_eq!(
            error,
            format!("cannot read --faux-script /dev/zero: it is larger than {FILE_LIMIT} bytes")
        );
    }

    #[test]
    fn the_root_and_output_paths_are_checked_before_the_run() {
        let local = ["--base-url", "http://localhost:1"];
        let error = resolve_with(&[local[0], local[1], "--root", "/nonexistent", "hi"], &[])
            .unwrap_err()
            .to_string();
        assert!(
            error.starts_with("invalid --root /nonexistent: "),
            "{error}"
        );
        // Without tools the root is not used.
        let args = [
            local[0],
            local[1],
            "--tools",
            "none",
            "--root",
            "/nonexistent",
            "hi",
        ];
        assert!(resolve_with(&args, &[]).is_ok());
        for flag in ["--transcript", "--output-last-message"] {
            let args = [local[0], local[1], flag, "/nonexistent/t.jsonl", "hi"];
            let error = resolve_with(&args, &[]).unwrap_err().to_string();
            assert!(
                error.starts_with(&format!(
                    "cannot write {flag} /nonexistent/t.jsonl: its directory /nonexistent: "
                )),
                "{error}"
            );
            let args = [local[0], local[1], flag, "/tmp", "hi"];
            let error = resolve_with(&args, &[]).unwrap_err().to_string();
            assert_eq!(
                error,
                format!("cannot write {flag} /tmp: it is a directory")
            );
        }
        let dir = tempfile::tempdir().unwrap();
        let kept = dir.path().join("kept.txt");
        std::fs::write(&kept, "old").unwrap();
        let args = [
            local[0],
            local[1],
            "--transcript",
            kept.to_str().unwrap(),
            "hi",
        ];
        assert!(resolve_with(&args, &[]).is_ok());
        // Checking created and truncated nothing.
        assert_eq!(std::fs::read_to_string(&kept).unwrap(), "old");
        let args = [local[0], local[1], "--transcript", "/dev/null", "hi"];
        assert!(resolve_with(&args, &[]).is_ok());
    }

    #[test]
    fn system_and_system_file_on_one_command_line_are_refused() {
        let args = [
            "--base-url",
            "http://localhost:1",
            "-s",
            "x",
            "--system-file",
            "y",
            "hi",
        ];
        let error = resolve_with(&args, &[]).unwrap_err();
        assert!(matches!(error, ConfigError::SystemTwice));
    }

    #[test]
    fn the_plan_is_complete_when_resolved() {
        let dir = tempfile::tempdir().unwrap();
        let schema = dir.path().join("schema.json");
        std::fs::write(&schema, r#"{"type":"object"}"#).unwrap();
        let schema = schema.display().to_string();
        let plan = resolve_with(
            &["--timeout", "30s", "--output-schema", &schema, "hi"],
            &[("OPENAI_API_KEY", "k")],
        )
        .unwrap();
        // The request options hold the deadline and the schema at once: no
        // placeholder is left for the runner to fill in.
        let http = settings(&plan);
        assert!(plan.deadline.is_some());
        assert_eq!(http.deadline, plan.deadline);
        assert_eq!(
            http.output_schema,
            Some(serde_json::json!({"type": "object"}))
        );
        assert!(plan.limits.output_schema.is_some());
        // The file tools come with their root, opened once.
        let tools = plan.tools.as_ref().unwrap();
        assert!(!tools.names.is_empty());
        let plan = resolve_with(
            &["--tools", "none", "--timeout", "0", "hi"],
            &[("OPENAI_API_KEY", "k")],
        )
        .unwrap();
        assert!(plan.tools.is_none() && plan.deadline.is_none());
    }
}

//! `leash config`'s listing: every setting of a run with its value and
//! the layer it came from, as TOML a config file could start from. The
//! choices that weigh several layers are made by `precedence`, as the run
//! makes them, so the listing cannot disagree with the run.

use clap::ValueEnum;

use crate::cli::ProviderName;
use crate::config::Inputs;
use crate::config::file::flag_keys;
use crate::config::layers::{ParsedRun, Source};
use crate::config::precedence::{
    SystemChoice, choose_api, choose_api_key, choose_base_url, choose_model, choose_price,
    choose_provider, choose_system, choose_variable, decide_terminal, provider_info,
};

/// One line of `leash config`.
#[derive(Debug, Clone, PartialEq)]
pub struct Setting {
    /// The config-file key.
    pub key: String,
    /// The value as text; `None` when unset.
    pub value: Option<String>,
    /// Where it came from.
    pub source: Source,
    /// What else to know (overridden, off on a pipe, ...).
    pub note: Option<String>,
    /// The value is a stand-in (`***`) or no config key (an MCP server):
    /// the line is printed as a comment.
    pub secret: bool,
}

/// Whether a run would add `git` to the default `--tools` (as
/// `config::file_tools` decides): the root is in a git work tree and a git
/// binary is on `PATH`; `Err` says why a repository around the root is
/// refused (the run's notice).
fn git_joins_the_default(root: &std::path::Path) -> Result<bool, String> {
    let Ok(sandbox) = leash_tools::sandbox::Sandbox::new(root) else {
        return Ok(false);
    };
    match leash_tools::git::Git::for_root(std::sync::Arc::new(sandbox)) {
        Ok(_) => Ok(true),
        Err(error) if error.is_refusal() => Err(error.to_string()),
        Err(_) => Ok(false),
    }
}

impl Setting {
    fn new(key: &str, value: Option<String>, source: Source) -> Self {
        Setting {
            key: key.to_owned(),
            value,
            source,
            note: None,
            secret: false,
        }
    }

    fn note(mut self, note: impl Into<String>) -> Self {
        self.note = Some(note.into());
        self
    }
}

/// Every setting of a parsed run, in `--help` order, with the choices
/// that weigh several layers made as the run makes them.
pub fn describe(parsed: &ParsedRun, inputs: &Inputs<'_>) -> Vec<Setting> {
    let cli = &parsed.cli;
    let origins = &parsed.origins;
    let (provider, provider_source) = choose_provider(cli, origins);
    let events = cli.events_format();
    let terminal = decide_terminal(cli, events, inputs);
    let system = choose_system(cli, origins);
    let mut settings = Vec::new();
    for (key, _) in flag_keys() {
        let id = key.replace('-', "_");
        let generic = Setting::new(
            &key,
            origins.raw(&id).map(str::to_owned),
            origins.source(&id),
        );
        let setting = match key.as_str() {
            "provider" => {
                Setting::new(&key, Some(provider_name(provider)), provider_source.clone())
            }
            "model" => {
                let (model, is_default) = choose_model(cli, provider);
                let source = match is_default {
                    true => Source::Implied("the provider's default"),
                    false => origins.source("model"),
                };
                Setting::new(&key, Some(model), source)
            }
            "api" => {
                let (api, source) = choose_api(cli, origins, provider);
                let name = api
                    .to_possible_value()
                    .map(|value| value.get_name().to_owned());
                Setting::new(&key, name, source)
            }
            "base-url" if provider == ProviderName::Faux => generic.note("not used by faux"),
            "base-url" if provider == ProviderName::Bedrock => {
                match super::resolve::bedrock::region(inputs) {
                    Some((region, _)) => {
                        let (url, source) = super::resolve::bedrock::endpoint(cli, inputs, &region);
                        Setting::new(&key, Some(url), source)
                    }
                    None => generic.note("the region's endpoint: set AWS_REGION"),
                }
            }
            "base-url" if provider == ProviderName::Vertex => {
                let (url, source) = choose_base_url(cli, inputs, provider);
                match source {
                    Source::Default => {
                        let location = super::resolve::vertex::location(inputs).0;
                        let url = leash_provider::vertex::place::endpoint(&location);
                        Setting::new(&key, Some(url), source).note("the location's endpoint")
                    }
                    _ => Setting::new(&key, Some(url), source),
                }
            }
            "base-url" => {
                let (url, source) = choose_base_url(cli, inputs, provider);
                Setting::new(&key, Some(url), source)
            }
            "system" if matches!(system, SystemChoice::File(_)) && generic.value.is_some() => {
                generic.note("overridden by system-file")
            }
            "system-file" if matches!(system, SystemChoice::Text(_)) && generic.value.is_some() => {
                generic.note("overridden by system")
            }
            "events" if cli.quiet => {
                Setting::new(&key, Some("none".into()), origins.source("quiet")).note("-q")
            }
            "color" => {
                let note = match (terminal.color, events, inputs.stderr_is_terminal) {
                    (true, _, _) => "on",
                    (false, crate::render::format::EventsFormat::Text, false) => {
                        "off: stderr is not a terminal"
                    }
                    (false, crate::render::format::EventsFormat::Text, true) => "off",
                    (false, _, _) => "off: only --events text is coloured",
                };
                generic.note(note)
            }
            "tools" if generic.source == Source::Default => {
                match git_joins_the_default(&cli.root) {
                    Ok(true) => generic.note("and git: the root is in a git work tree"),
                    Ok(false) => generic,
                    Err(why) => generic.note(format!("git left out: {why}")),
                }
            }
            "price" => match choose_price(cli, inputs, &choose_model(cli, provider).0) {
                Some(choice) if choice.per_model => {
                    Setting::new(&key, Some(choice.text), choice.source)
                        .note("the [prices] entry for the model")
                }
                _ => generic,
            },
            "hook" | "deny-tool" | "allow-tool" | "allow-read" | "allow-env" => {
                let read: Vec<String> = cli
                    .allow_read
                    .iter()
                    .map(|path| path.display().to_string())
                    .collect();
                let values = match key.as_str() {
                    "hook" => &cli.hook,
                    "deny-tool" => &cli.deny_tool,
                    "allow-read" => &read,
                    "allow-env" => &cli.allow_env,
                    _ => &cli.allow_tool,
                };
                let list = (!values.is_empty()).then(|| serde_json::json!(values).to_string());
                Setting::new(&key, list, origins.source(&id))
            }
            "stream" if cli.stream && !terminal.stream => {
                generic.note("off: needs a terminal stderr and text or none events")
            }
            _ => generic,
        };
        let after_base_url = key == "base-url";
        let after_mcp_timeout = key == "mcp-timeout";
        settings.push(setting);
        if after_base_url {
            settings.push(api_key_setting(inputs, provider));
            settings.extend(provider_settings(cli, inputs, provider));
            if provider == ProviderName::Vertex {
                settings.extend(vertex_settings(inputs));
            }
        }
        if after_mcp_timeout {
            settings.extend(mcp_settings(cli, inputs));
        }
    }
    settings
}

fn api_key_setting(inputs: &Inputs<'_>, provider: ProviderName) -> Setting {
    if provider == ProviderName::Faux {
        return Setting::new("api-key", None, Source::Unset).note("not needed by faux");
    }
    match choose_api_key(inputs, provider) {
        // The key itself never prints; `ApiKey` displays as `***`, and the
        // line is a comment, so the listing used as a config file never
        // sets the key to `***`.
        Some((key, source)) => Setting {
            secret: true,
            ..Setting::new("api-key", Some(key.to_string()), source)
        },
        None if provider == ProviderName::Vertex => Setting::new("api-key", None, Source::Unset)
            .note("an access token: set GOOGLE_OAUTH_ACCESS_TOKEN, or the credentials file below"),
        None => Setting::new("api-key", None, Source::Unset).note(format!(
            "set LEASH_API_KEY or {}",
            provider_info(provider).key_variable
        )),
    }
}

/// The provider's other settings (`provider::catalog`'s `settings`:
/// Azure's `OPENAI_API_VERSION`), each from its layer or its default.
fn provider_settings(
    cli: &crate::cli::Cli,
    inputs: &Inputs<'_>,
    provider: ProviderName,
) -> Vec<Setting> {
    if provider == ProviderName::Faux {
        return Vec::new();
    }
    let (api, _) = choose_api(cli, inputs.origins, provider);
    provider_info(provider)
        .settings
        .iter()
        .map(|variable| {
            let key = leash_provider::catalog::file_key(variable);
            match choose_variable(inputs, variable) {
                Some((value, source)) => Setting::new(&key, Some(value), source),
                None if *variable == leash_provider::catalog::AZURE_API_VERSION => match api {
                    crate::cli::ApiName::Chat => Setting::new(
                        &key,
                        Some(leash_provider::azure::DEFAULT_API_VERSION.to_owned()),
                        Source::Default,
                    )
                    .note("Azure OpenAI's newest GA api-version"),
                    crate::cli::ApiName::Responses => Setting::new(&key, None, Source::Default)
                        .note("none: the Responses API's v1 route takes no api-version"),
                },
                None => Setting::new(&key, None, Source::Unset),
            }
        })
        .collect()
}

/// Vertex AI's operator-only values (comments: the config file does not
/// take them): the project and the credentials file, from the exported
/// environment.
fn vertex_settings(inputs: &Inputs<'_>) -> Vec<Setting> {
    use super::resolve::vertex;
    let project = match vertex::project(inputs) {
        Some((project, source)) => Setting::new("google-cloud-project", Some(project), source),
        None => Setting::new("google-cloud-project", None, Source::Unset)
            .note("export GOOGLE_CLOUD_PROJECT (else the service account file's)"),
    };
    let credentials = match vertex::credentials_path(inputs) {
        Some(path) => Setting::new(
            "google-application-credentials",
            Some(path),
            Source::Env(vertex::CREDENTIALS.into()),
        ),
        None => Setting::new("google-application-credentials", None, Source::Unset),
    };
    [project, credentials]
        .into_iter()
        .map(|setting| Setting {
            secret: true,
            ..setting
        })
        .collect()
}

/// One line per MCP server a run would start (as comments: a server is
/// not a config key), or the reason the list is unusable.
fn mcp_settings(cli: &crate::cli::Cli, inputs: &Inputs<'_>) -> Vec<Setting> {
    let servers = match super::mcp_servers(cli, inputs) {
        Ok(servers) => servers,
        Err(error) => {
            return vec![
                Setting::new("mcp", None, Source::Unset).note(format!("unusable: {error}")),
            ];
        }
    };
    servers
        .into_iter()
        .map(|server| {
            let source = match server.origin.as_str() {
                "--mcp" => Source::Flag,
                _ => inputs.origins.source("mcp_config"),
            };
            Setting {
                secret: true,
                ..Setting::new(
                    "mcp",
                    Some(format!("{}: {}", server.name, server.transport.summary())),
                    source,
                )
            }
            .note("an MCP server")
        })
        .collect()
}

fn provider_name(provider: ProviderName) -> String {
    provider
        .to_possible_value()
        .map(|value| value.get_name().to_owned())
        .unwrap_or_default()
}

/// The keys of repeatable flags, shown as a list of strings.
const LIST_KEYS: [&str; 5] = ["hook", "deny-tool", "allow-tool", "allow-read", "allow-env"];

/// With `--allow-exec`: what the commands may read beyond the root and
/// the system, and why, and what the environment points at that they may
/// not, as `leash config`'s comment lines.
pub fn describe_reach(cli: &crate::cli::Cli) -> Vec<String> {
    if cli.allow_exec == crate::cli::AllowExec::Off {
        return Vec::new();
    }
    let cwd = std::env::current_dir().unwrap_or_else(|_| std::path::PathBuf::from("/"));
    let Ok(reach) = leash_child::reach::reach(
        &|name| std::env::var_os(name),
        leash_child::reach::user_home(),
        &cli.allow_read,
        &cwd,
    ) else {
        return Vec::new();
    };
    let mut lines = vec![
        "the shell may read: the root, its TMPDIR and the system's directories (/usr, /etc, \
         /opt...)"
            .to_owned(),
    ];
    lines.extend(
        reach
            .describe()
            .into_iter()
            .map(|line| format!("the shell may read: {line}")),
    );
    lines.extend(
        reach
            .withheld
            .iter()
            .map(|withheld| format!("the shell may not read: {}", withheld.why)),
    );
    if cli.allow_exec == crate::cli::AllowExec::Confined {
        if let Some(uid) = leash_child::tree::stranger_in_use() {
            let notice = leash_child::stranger::notice(uid, &reach.paths());
            lines.push(format!("the shell: {notice}"));
        }
        lines.push(if leash_child::confine::private_network_available() {
            "the shell has its own loopback (a private network namespace) and no route out"
                .to_owned()
        } else {
            format!("the shell has {}", leash_child::confine::NO_LOOPBACK)
        });
    }
    lines
}

/// The settings as TOML lines with the source as a comment, aligned. A
/// default is shown commented out, so the listing used as a config file
/// sets only what was chosen: a default of one provider (`api = "chat"`,
/// its base URL) never becomes a setting of the file under another.
pub fn render_settings(settings: &[Setting]) -> String {
    let lines: Vec<(String, String)> = settings
        .iter()
        .map(|setting| {
            let commented = setting.secret || setting.source.layer() == Source::Default.layer();
            let left = match &setting.value {
                Some(value) if commented => {
                    format!("# {} = {}", setting.key, toml_value(value))
                }
                // A repeatable flag's values: already a TOML array.
                Some(value) if LIST_KEYS.contains(&setting.key.as_str()) => {
                    format!("{} = {value}", setting.key)
                }
                Some(value) => format!("{} = {}", setting.key, toml_value(value)),
                None => format!("# {}", setting.key),
            };
            let mut right = format!("# {}", setting.source);
            if let Some(note) = &setting.note {
                right.push_str(&format!(" ({note})"));
            }
            (left, right)
        })
        .collect();
    let width = lines
        .iter()
        .map(|(left, _)| left.chars().count())
        .filter(|width| *width <= 44)
        .max()
        .unwrap_or(0);
    lines
        .into_iter()
        .map(|(left, right)| format!("{left:<width$}  {right}\n"))
        .collect()
}

/// A value as TOML: numbers and booleans bare, anything else a string.
fn toml_value(value: &str) -> String {
    let bare = value == "true"
        || value == "false"
        || value.parse::<i64>().is_ok()
        || (value.parse::<f64>().is_ok_and(f64::is_finite) && value.contains('.'));
    match bare {
        true => value.to_owned(),
        false => serde_json::Value::String(value.to_owned()).to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::file::ConfigFile;
    use crate::config::layers::{Environment, parse_run};
    use std::ffi::OsString;
    use std::path::Path;

    fn describe_with(
        args: &[&str],
        vars: &[(&str, &str)],
        dotenv: &[&str],
        file: Option<&str>,
    ) -> Vec<Setting> {
        let env = Environment::from_pairs(vars, dotenv);
        let file = file.map(|text| ConfigFile::parse(Path::new("/c/config.toml"), text).unwrap());
        let argv: Vec<OsString> = std::iter::once("leash")
            .chain(args.iter().copied())
            .map(OsString::from)
            .collect();
        let parsed = parse_run(
            &crate::cli::RunArgs::parse(argv).unwrap(),
            &env,
            file.as_ref(),
        )
        .unwrap();
        let inputs = Inputs {
            origins: &parsed.origins,
            env: &env,
            file: file.as_ref(),
            stderr_is_terminal: false,
        };
        describe(&parsed, &inputs)
    }

    fn find<'a>(settings: &'a [Setting], key: &str) -> &'a Setting {
        settings.iter().find(|s| s.key == key).unwrap()
    }

    #[test]
    fn every_layer_is_named_and_the_key_is_redacted() {
        let settings = describe_with(
            &["--max-turns", "6"],
            &[("OPENAI_API_KEY", "sk-secret")],
            &["OPENAI_API_KEY"],
            Some("retries = 5\nmodel = \"gpt-x\"\n"),
        );
        assert_eq!(find(&settings, "max-turns").source, Source::Flag);
        assert_eq!(find(&settings, "retries").source, Source::File);
        assert_eq!(find(&settings, "model").value.as_deref(), Some("gpt-x"));
        assert_eq!(find(&settings, "tools").source, Source::Default);
        let key = find(&settings, "api-key");
        assert_eq!(key.value.as_deref(), Some("***"));
        assert_eq!(key.source, Source::DotEnv("OPENAI_API_KEY".into()));
        let text = render_settings(&settings);
        assert!(!text.contains("sk-secret"));
        assert!(text.contains("# api-key = \"***\""), "{text}");
        // The listing is TOML, and used as a config file it sets no key.
        let table: toml::Table = toml::from_str(&text).unwrap();
        assert_eq!(table["max-turns"].as_integer(), Some(6));
        assert!(!table.contains_key("api-key"), "{text}");
    }

    #[test]
    fn derived_choices_say_why() {
        let settings = describe_with(&["--faux-script", "s.json", "-q"], &[], &[], None);
        let provider = find(&settings, "provider");
        assert_eq!(provider.value.as_deref(), Some("faux"));
        assert_eq!(provider.source.to_string(), "default: --faux-script is set");
        assert_eq!(
            find(&settings, "model").source.to_string(),
            "default: the provider's default"
        );
        assert_eq!(find(&settings, "events").value.as_deref(), Some("none"));
        assert_eq!(find(&settings, "api-key").value, None);
    }

    #[test]
    fn the_price_of_the_model_comes_from_prices_below_a_given_price() {
        let file = "price = \"1,2\"\n[prices]\n\"gpt-x\" = \"2,8,0.5\"\n";
        let settings = describe_with(&["-m", "gpt-x"], &[], &[], Some(file));
        let price = find(&settings, "price");
        assert_eq!(price.value.as_deref(), Some("2,8,0.5"));
        assert_eq!(price.source, Source::File);
        assert_eq!(
            price.note.as_deref(),
            Some("the [prices] entry for the model")
        );
        let other = describe_with(&["-m", "gpt-y"], &[], &[], Some(file));
        assert_eq!(find(&other, "price").value.as_deref(), Some("1,2"));
        let flag = describe_with(&["-m", "gpt-x", "--price", "9,9"], &[], &[], Some(file));
        assert_eq!(find(&flag, "price").value.as_deref(), Some("9,9"));
        assert_eq!(find(&flag, "price").source, Source::Flag);
    }

    #[test]
    fn repeatable_flags_list_every_value_as_a_toml_array_a_config_file_takes() {
        let settings = describe_with(
            &[
                "--hook",
                "before-tool-call=sh -c 'exit \"0\"'",
                "--hook",
                "finish-turn=./x,y",
            ],
            &[],
            &[],
            Some("deny-tool = [\"read_file(path=**/*.{pem,key})\"]\n"),
        );
        assert_eq!(find(&settings, "hook").source, Source::Flag);
        assert_eq!(find(&settings, "deny-tool").source, Source::File);
        assert_eq!(find(&settings, "allow-tool").value, None);
        let text = render_settings(&settings);
        let table: toml::Table = toml::from_str(&text).unwrap();
        let again = ConfigFile::parse(Path::new("/c/config.toml"), &text).unwrap();
        assert_eq!(table["hook"].as_array().unwrap().len(), 2, "{text}");
        assert_eq!(
            again.repeated("hook"),
            ["before-tool-call=sh -c 'exit \"0\"'", "finish-turn=./x,y"]
        );
        assert_eq!(
            again.repeated("deny-tool"),
            ["read_file(path=**/*.{pem,key})"]
        );
    }

    #[test]
    fn values_are_toml() {
        assert_eq!(toml_value("4"), "4");
        assert_eq!(toml_value("0.5"), "0.5");
        assert_eq!(toml_value("30s"), "\"30s\"");
        assert_eq!(toml_value("say \"hi\""), "\"say \\\"hi\\\"\"");
        assert_eq!(toml_value("NaN"), "\"NaN\"");
    }

    #[test]
    fn the_default_tools_say_when_git_joins_them() {
        let repo = tempfile::tempdir().unwrap();
        let status = std::process::Command::new("git")
            .args(["init", "-q"])
            .current_dir(repo.path())
            .status()
            .unwrap();
        assert!(status.success());
        let plain = tempfile::tempdir().unwrap();
        let note = |root: &Path, tools: &[&str]| {
            let mut args = vec!["--root", root.to_str().unwrap()];
            args.extend_from_slice(tools);
            find(&describe_with(&args, &[], &[], None), "tools")
                .note
                .clone()
        };
        let joins = Some("and git: the root is in a git work tree".to_owned());
        assert_eq!(note(repo.path(), &[]), joins);
        assert_eq!(note(plain.path(), &[]), None);
        // A list the user chose is shown as chosen.
        assert_eq!(note(repo.path(), &["--tools", "grep"]), None);
    }
}

//! The choices that weigh several layers at once — provider, model, base
//! URL, key, system message, colour — one function each, returning the
//! value with its [`Source`]. `config::resolve` builds the run from them and
//! `leash config` shows them, so the two cannot disagree.
//!
//! Nothing here reads files or the process environment.

use crate::cli::{Cli, ColorChoice, EventsFormat, ProviderName};
use crate::config::{
    DEFAULT_ANTHROPIC_BASE, DEFAULT_ANTHROPIC_MODEL, DEFAULT_OPENAI_BASE, DEFAULT_OPENAI_MODEL,
    Inputs, Terminal,
};
use crate::provider::ApiKey;
use crate::sources::{Origins, Source};

/// A provider's name and variables, each with the config-file key that
/// stands for it.
pub struct ProviderVariables {
    /// The provider's name.
    pub name: &'static str,
    /// The key variable (`OPENAI_API_KEY`).
    pub key: &'static str,
    /// The config-file key of the key (`openai-api-key`).
    pub key_file: &'static str,
    /// The base-URL variable (`OPENAI_BASE_URL`).
    pub base: &'static str,
    /// The config-file key of the base URL (`openai-base-url`).
    pub base_file: &'static str,
    /// The default base URL.
    pub default_base: &'static str,
}

/// The variables of `provider` (the faux model reads none; it is given
/// OpenAI's).
pub fn provider_variables(provider: ProviderName) -> ProviderVariables {
    match provider {
        ProviderName::Anthropic => ProviderVariables {
            name: "anthropic",
            key: "ANTHROPIC_API_KEY",
            key_file: "anthropic-api-key",
            base: "ANTHROPIC_BASE_URL",
            base_file: "anthropic-base-url",
            default_base: DEFAULT_ANTHROPIC_BASE,
        },
        ProviderName::Openai | ProviderName::Faux => ProviderVariables {
            name: "openai",
            key: "OPENAI_API_KEY",
            key_file: "openai-api-key",
            base: "OPENAI_BASE_URL",
            base_file: "openai-base-url",
            default_base: DEFAULT_OPENAI_BASE,
        },
    }
}

/// `--provider` (from any layer), else a `claude*` model means Anthropic,
/// a faux script means faux, and OpenAI otherwise.
pub fn choose_provider(cli: &Cli, origins: &Origins) -> (ProviderName, Source) {
    if let Some(provider) = cli.provider {
        return (provider, origins.source("provider"));
    }
    if cli
        .model
        .as_deref()
        .is_some_and(|model| model.starts_with("claude"))
    {
        return (ProviderName::Anthropic, Source::Implied("a claude* model"));
    }
    if cli.faux_script.is_some() {
        return (ProviderName::Faux, Source::Implied("--faux-script is set"));
    }
    (ProviderName::Openai, Source::Default)
}

/// `--model` (from any layer), else the provider's default model (`true`
/// when it is that default).
pub fn choose_model(cli: &Cli, provider: ProviderName) -> (String, bool) {
    match &cli.model {
        Some(model) => (model.clone(), false),
        None => {
            let model = match provider {
                ProviderName::Openai => DEFAULT_OPENAI_MODEL,
                ProviderName::Anthropic => DEFAULT_ANTHROPIC_MODEL,
                ProviderName::Faux => "faux",
            };
            (model.to_owned(), true)
        }
    }
}

/// The base URL, layer by layer: `--base-url` or `LEASH_BASE_URL`, the
/// provider's variable (`OPENAI_BASE_URL`), the config file's `base-url`,
/// then its `openai-base-url`, then the provider's default.
pub fn choose_base_url(cli: &Cli, inputs: &Inputs<'_>, provider: ProviderName) -> (String, Source) {
    let variables = provider_variables(provider);
    let flag_source = inputs.origins.source("base_url");
    if let Some(url) = &cli.base_url
        && flag_source.is_above_file()
    {
        return (url.clone(), flag_source);
    }
    if let Some(found) = inputs.env.non_empty(variables.base) {
        return found;
    }
    if let Some(url) = &cli.base_url {
        return (url.clone(), flag_source);
    }
    if let Some(url) = inputs.file.and_then(|file| file.get(variables.base_file)) {
        return (url.to_owned(), Source::File);
    }
    (variables.default_base.to_owned(), Source::Default)
}

/// The API key, layer by layer: `LEASH_API_KEY`, the provider's variable
/// (`OPENAI_API_KEY`), then the config file's `api-key`, then its
/// `openai-api-key`.
pub fn choose_api_key(inputs: &Inputs<'_>, provider: ProviderName) -> Option<(ApiKey, Source)> {
    let variables = provider_variables(provider);
    let from_env = inputs
        .env
        .non_empty("LEASH_API_KEY")
        .or_else(|| inputs.env.non_empty(variables.key));
    let found = from_env.or_else(|| {
        let file = inputs.file?;
        ["api-key", variables.key_file]
            .into_iter()
            .find_map(|key| file.get(key).filter(|value| !value.trim().is_empty()))
            .map(|value| (value.to_owned(), Source::File))
    });
    found.map(|(key, source)| (ApiKey::new(key.trim()), source))
}

/// Where the system message comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SystemChoice<'a> {
    /// `--system`.
    Text(&'a str),
    /// `--system-file`.
    File(&'a std::path::Path),
    /// Neither.
    None,
}

/// `--system` or `--system-file`, whichever came from the higher layer
/// (`--system` when both come from the same one).
pub fn choose_system<'a>(cli: &'a Cli, origins: &Origins) -> SystemChoice<'a> {
    let rank = |source: Source| match source {
        Source::Flag => 0,
        Source::Env(_) => 1,
        Source::DotEnv(_) => 2,
        Source::File => 3,
        _ => 4,
    };
    match (&cli.system, &cli.system_file) {
        (Some(text), Some(path)) => {
            if rank(origins.source("system_file")) < rank(origins.source("system")) {
                SystemChoice::File(path)
            } else {
                SystemChoice::Text(text)
            }
        }
        (Some(text), None) => SystemChoice::Text(text),
        (None, Some(path)) => SystemChoice::File(path),
        (None, None) => SystemChoice::None,
    }
}

/// Colour, the indicator and the live stream, from `--color`, `--stream`,
/// `NO_COLOR`, `TERM` and whether stderr is a terminal.
pub fn decide_terminal(cli: &Cli, events: EventsFormat, inputs: &Inputs<'_>) -> Terminal {
    let no_color = inputs.env.get("NO_COLOR");
    let term = inputs.env.get("TERM");
    let live = inputs.stderr_is_terminal && term.as_deref() != Some("dumb");
    Terminal {
        color: events == EventsFormat::Text
            && use_color(
                cli.color,
                no_color.as_deref(),
                term.as_deref(),
                inputs.stderr_is_terminal,
            ),
        indicator: live && events == EventsFormat::Text,
        stream: live && cli.stream && events != EventsFormat::Jsonl,
    }
}

/// The colour rule: `never` and `always` are what they say; `auto` colours
/// only a terminal that is not `dumb`, and only while `NO_COLOR` is unset
/// or empty (no-color.org).
pub fn use_color(
    choice: ColorChoice,
    no_color: Option<&str>,
    term: Option<&str>,
    stderr_is_terminal: bool,
) -> bool {
    match choice {
        ColorChoice::Never => false,
        ColorChoice::Always => true,
        ColorChoice::Auto => {
            stderr_is_terminal && no_color.is_none_or(str::is_empty) && term != Some("dumb")
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn colour_follows_the_flag_no_color_and_the_terminal() {
        use ColorChoice::*;
        assert!(use_color(Auto, None, Some("xterm"), true));
        assert!(!use_color(Auto, None, Some("xterm"), false));
        assert!(!use_color(Auto, Some("1"), Some("xterm"), true));
        assert!(use_color(Auto, Some(""), Some("xterm"), true));
        assert!(!use_color(Auto, None, Some("dumb"), true));
        assert!(use_color(Always, Some("1"), None, false));
        assert!(!use_color(Never, None, None, true));
    }
}

//! The choices that weigh several layers at once — provider, model, base
//! URL, key, system message, colour — one function each, returning the
//! value with its [`Source`]. `config::resolve` builds the run from them and
//! `leash config` shows them, so the two cannot disagree.
//!
//! Nothing here reads files or the process environment.

use crate::cli::{ApiName, Cli, ProviderName};
use crate::config::Inputs;
use crate::config::layers::{Origins, Source};
use crate::render::format::{ColorChoice, EventsFormat, Terminal};
use crate::render::resume::Wire;
use leash_protocol::secret::ApiKey;
use leash_provider::catalog::{self, ProviderInfo};

/// The table line of `provider` (the faux model reads no variables; it
/// is given OpenAI's).
pub fn provider_info(provider: ProviderName) -> &'static ProviderInfo {
    match provider {
        ProviderName::Anthropic => &catalog::ANTHROPIC,
        ProviderName::Azure => &catalog::AZURE,
        ProviderName::Gemini => &catalog::GEMINI,
        ProviderName::Bedrock => &catalog::BEDROCK,
        ProviderName::Vertex => &catalog::VERTEX,
        ProviderName::Openai | ProviderName::Faux => &catalog::OPENAI,
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
                ProviderName::Faux => "faux",
                http => provider_info(http).default_model,
            };
            (model.to_owned(), true)
        }
    }
}

/// Whether OpenAI serves `model` through the Responses API first: the
/// `gpt-5*` family and the o-series reasoning models (`o1`, `o3`, `o4`,
/// with or without a `-suffix`), whose reasoning items only that API
/// carries from turn to turn.
pub fn made_for_responses(model: &str) -> bool {
    let model = model.to_ascii_lowercase();
    model.starts_with("gpt-5")
        || ["o1", "o3", "o4"].iter().any(|family| {
            model
                .strip_prefix(family)
                .is_some_and(|rest| rest.is_empty() || rest.starts_with('-'))
        })
}

/// The reason shown when the model chose the Responses API.
pub const RESPONSES_BY_MODEL: &str = "a gpt-5* or o-series model";

/// `--api` (from any layer), else by the model: the Responses API for an
/// OpenAI run of a model [`made_for_responses`], Chat Completions for any
/// other (which every compatible server speaks).
pub fn choose_api(cli: &Cli, origins: &Origins, provider: ProviderName) -> (ApiName, Source) {
    if let Some(api) = cli.api {
        return (api, origins.source("api"));
    }
    let (model, _) = choose_model(cli, provider);
    match provider == ProviderName::Openai && made_for_responses(&model) {
        true => (ApiName::Responses, Source::Implied(RESPONSES_BY_MODEL)),
        false => (ApiName::Chat, Source::Default),
    }
}

/// The wire a run of `provider` sends on, known before its key is: what
/// the steps that check input against a wire (attachment caps, a resumed
/// transcript) use, so their errors come before a missing key's.
pub fn choose_wire(cli: &Cli, origins: &Origins, provider: ProviderName) -> Wire {
    match provider {
        ProviderName::Faux => Wire::Faux,
        ProviderName::Anthropic => Wire::Anthropic,
        ProviderName::Gemini => Wire::Gemini,
        ProviderName::Bedrock => Wire::Bedrock,
        ProviderName::Vertex => {
            match leash_provider::vertex::is_claude(&choose_model(cli, provider).0) {
                true => Wire::Anthropic,
                false => Wire::Gemini,
            }
        }
        ProviderName::Openai => match choose_api(cli, origins, provider).0 {
            ApiName::Chat => Wire::Chat,
            ApiName::Responses => Wire::Responses,
        },
        ProviderName::Azure => match choose_api(cli, origins, provider).0 {
            ApiName::Chat => Wire::AzureChat,
            ApiName::Responses => Wire::AzureResponses,
        },
    }
}

/// What to tell a user who chose Chat Completions for a model made for the
/// Responses API: the run goes on as asked.
pub fn api_notice(cli: &Cli, provider: ProviderName, api: ApiName) -> Option<String> {
    let (model, _) = choose_model(cli, provider);
    (provider == ProviderName::Openai && api == ApiName::Chat && made_for_responses(&model)).then(
        || {
            format!(
                "{model} runs on Chat Completions as --api chat asks; OpenAI serves it best \
                 through the Responses API: --api responses (the default for this model)"
            )
        },
    )
}

/// Where the run's price came from (see [`choose_price`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PriceChoice {
    /// The price as `--price` takes it.
    pub text: String,
    /// Its layer.
    pub source: Source,
    /// It is the config file's `[prices]` entry for the model.
    pub per_model: bool,
}

/// The price of a run of `model`, layer by layer: `--price` from the
/// flag, the environment or `.env`; then the config file's `[prices]`
/// entry for the model; then the file's top-level `price`. Within the file
/// the entry for the model beats the general price; it never beats a
/// higher layer.
pub fn choose_price(cli: &Cli, inputs: &Inputs<'_>, model: &str) -> Option<PriceChoice> {
    let source = inputs.origins.source("price");
    let given = cli.price.as_ref().map(|text| PriceChoice {
        text: text.clone(),
        source: source.clone(),
        per_model: false,
    });
    if source.layer() < Source::File.layer() {
        return given;
    }
    let per_model = inputs
        .file
        .and_then(|file| file.price_for(model))
        .map(|text| PriceChoice {
            text: text.to_owned(),
            source: Source::File,
            per_model: true,
        });
    per_model.or(given)
}

/// The base URL, layer by layer and then name by name within a layer:
/// `--base-url`; then in the environment `LEASH_BASE_URL`, then the
/// provider's variable (`OPENAI_BASE_URL`); the same two in `.env`; the
/// config file's `base-url`, then its `openai-base-url`; the provider's
/// default. So `.env`'s `LEASH_BASE_URL` never beats an exported
/// `OPENAI_BASE_URL`.
pub fn choose_base_url(cli: &Cli, inputs: &Inputs<'_>, provider: ProviderName) -> (String, Source) {
    let info = provider_info(provider);
    let candidates = [
        cli.base_url
            .clone()
            .map(|url| (url, inputs.origins.source("base_url"))),
        inputs.env.non_empty(info.base_url_variable),
        inputs
            .file
            .and_then(|file| file.get(&info.base_url_file_key()))
            .map(|url| (url.to_owned(), Source::File)),
    ];
    highest_layer(candidates).unwrap_or_else(|| (info.default_base_url.to_owned(), Source::Default))
}

/// The API key, layer by layer and then name by name within a layer: in
/// the environment `LEASH_API_KEY`, then the provider's variable
/// (`OPENAI_API_KEY`); the same two in `.env`; the config file's
/// `api-key`, then its `openai-api-key`.
pub fn choose_api_key(inputs: &Inputs<'_>, provider: ProviderName) -> Option<(ApiKey, Source)> {
    let info = provider_info(provider);
    let from_file = |key: &str| {
        inputs
            .file
            .and_then(|file| file.get(key))
            .filter(|value| !value.trim().is_empty())
            .map(|value| (value.to_owned(), Source::File))
    };
    let more = info.more_key_variables;
    let candidates = [
        inputs.env.non_empty(catalog::ANY_KEY_VARIABLE),
        inputs.env.non_empty(info.key_variable),
        more.iter()
            .find_map(|variable| inputs.env.non_empty(variable)),
        from_file(&catalog::file_key(catalog::ANY_KEY_VARIABLE)),
        from_file(&info.key_file_key()),
        more.iter()
            .find_map(|variable| from_file(&catalog::file_key(variable))),
    ];
    highest_layer(candidates).map(|(key, source)| (ApiKey::new(key.trim()), source))
}

/// One of a provider's other settings (`provider::catalog`'s
/// `settings`, Azure's `OPENAI_API_VERSION`), layer by layer: the
/// environment, `.env`, then the config file's key of the variable.
pub fn choose_variable(inputs: &Inputs<'_>, variable: &str) -> Option<(String, Source)> {
    let candidates = [
        inputs.env.non_empty(variable),
        inputs
            .file
            .and_then(|file| file.get(&catalog::file_key(variable)))
            .filter(|value| !value.trim().is_empty())
            .map(|value| (value.trim().to_owned(), Source::File)),
    ];
    highest_layer(candidates).map(|(value, source)| (value.trim().to_owned(), source))
}

/// The candidate of the highest layer; within a layer, the first listed.
fn highest_layer<const N: usize>(
    candidates: [Option<(String, Source)>; N],
) -> Option<(String, Source)> {
    candidates
        .into_iter()
        .flatten()
        .min_by_key(|(_, source)| source.layer())
}

/// Why the key may not go to the base URL.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "refusing to send the key from {key} to the base URL {url} from {url_source}: \
     a lower layer than the key's may not redirect it; pass --base-url on the command line, \
     or --trust-base-url to allow it"
)]
pub struct KeyRedirect {
    /// Where the key came from.
    pub key: Source,
    /// The base URL.
    pub url: String,
    /// Where the base URL came from.
    pub url_source: Source,
}

/// The rule that a key never goes to a base URL the user did not choose:
/// the base URL must come from the key's layer or a higher one (the
/// provider's default is always fine, from whichever layer names it, so
/// `leash config`'s listing works as a config file), and a `.env` never
/// redirects a key it did not supply. `--trust-base-url` lifts the rule for
/// base URLs of its own layer or below; `.env` cannot give it.
pub fn check_key_destination(
    key: &Source,
    url: &str,
    url_source: &Source,
    trust: Option<&Source>,
    default_url: &str,
) -> Result<(), KeyRedirect> {
    let allowed = match url_source {
        _ if same_url(url, default_url) => true,
        Source::Default | Source::Implied(_) => true,
        Source::DotEnv(_) => matches!(key, Source::DotEnv(_)),
        _ => url_source.layer() <= key.layer(),
    };
    let trusted = trust.is_some_and(|trust| {
        !matches!(trust, Source::DotEnv(_)) && trust.layer() <= url_source.layer()
    });
    match allowed || trusted {
        true => Ok(()),
        false => Err(KeyRedirect {
            key: key.clone(),
            url: url.to_owned(),
            url_source: url_source.clone(),
        }),
    }
}

/// Two spellings of one base URL: the same but for a trailing `/`.
fn same_url(a: &str, b: &str) -> bool {
    a.trim().trim_end_matches('/') == b.trim().trim_end_matches('/')
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
    match (&cli.system, &cli.system_file) {
        (Some(text), Some(path)) => {
            if origins.source("system_file").layer() < origins.source("system").layer() {
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
    fn the_responses_families_are_gpt_5_and_the_o_series() {
        for model in [
            "gpt-5",
            "gpt-5-mini",
            "GPT-5.1",
            "o1",
            "o1-pro",
            "o3-mini",
            "o4-mini",
        ] {
            assert!(made_for_responses(model), "{model}");
        }
        for model in [
            "gpt-4.1-mini",
            "gpt-4o",
            "o2",
            "omni",
            "o3x",
            "qwen3:8b",
            "openai/gpt-5",
        ] {
            assert!(!made_for_responses(model), "{model}");
        }
    }

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

//! One item as one run: the batch's run words, the item's own fields as
//! flags after them and its prompt after `--`, through the same layered
//! parse and [`config::resolve`] as a single run ([`Base::plan`]); then
//! the plan bent to a batch (the result as `--output json`, events to the
//! item's file or nowhere, stdin never read, the batch's budget and
//! transport shared) and run by [`crate::run::job::run_with`]
//! ([`run_item`]).
//!
//! *Never* runs an agent loop of its own: every item is a run.

use std::ffi::OsString;
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use crate::batch::events::{Protected, events_file};
use crate::batch::input::Item;
use crate::cli::RunArgs;
use crate::cli::batch::without_flag;
use crate::config::file::ConfigFile;
use crate::config::input::StdinMode;
use crate::config::layers::{Environment, ParsedRun, parse_run};
use crate::config::{self, Inputs, ProviderConfig, RunPlan, ToolName};
use crate::exit::Status;
use crate::render::format::{EventsFormat, OutputFormat, Terminal};
use crate::run::job::{self, Shared, Streams};
use leash_provider::{HttpSettings, RateGate, shared_client};

/// What every item's plan is made from.
pub struct Base<'a> {
    /// The program name and the batch's run flags.
    pub run_words: &'a [OsString],
    /// The environment, with the `.env` under it.
    pub env: &'a Environment,
    /// The config file, read once for the batch.
    pub file: Option<&'a ConfigFile>,
    /// The batch's provider, once its own flags were checked: an item's
    /// `model` is pinned to it.
    pub pinned: Option<Pinned>,
    /// The tools the batch's own flags give (`None`: not known yet): an
    /// item's `root` in a git work tree does not add `git` to them.
    pub tools: Option<Vec<ToolName>>,
}

/// The provider every item stays with: its name (as `--provider` takes
/// it) and base URL. An item's `model` picks a model of this provider,
/// never another one whose key would then go to this base URL.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pinned {
    name: &'static str,
    base_url: Option<String>,
}

impl Pinned {
    /// The provider `plan` runs on.
    pub fn of(plan: &RunPlan) -> Self {
        Pinned {
            name: plan.provider.name(),
            base_url: plan
                .provider
                .http()
                .map(|settings| settings.base_url.clone()),
        }
    }
}

impl Base<'_> {
    /// The batch's flags parsed as a run's (with a stand-in prompt).
    fn parse(&self, item: Option<&Item>) -> Result<ParsedRun, String> {
        let mut words = match item {
            // An item's `system` replaces a batch's --system-file as it
            // replaces --system (both on one command line are refused).
            Some(Item {
                system: Some(_), ..
            }) => without_flag(self.run_words, "system-file"),
            _ => self.run_words.to_vec(),
        };
        let prompt = match item {
            Some(item) => {
                if let (Some(_), Some(pinned)) = (&item.model, &self.pinned) {
                    words.push(format!("--provider={}", pinned.name).into());
                }
                let fields = [
                    ("system", &item.system),
                    ("root", &item.root),
                    ("model", &item.model),
                ];
                for (flag, value) in fields {
                    if let Some(value) = value {
                        words.push(format!("--{flag}={value}").into());
                    }
                }
                item.prompt.as_str()
            }
            None => "(batch item)",
        };
        words.extend(["--".into(), prompt.into()]);
        let run = RunArgs::parse(words).map_err(|error| one_line(&error.to_string()))?;
        parse_run(&run, self.env, self.file).map_err(|e| one_line(&e.to_string()))
    }

    /// The batch's `--root` (from any layer), as given.
    pub fn root(&self) -> Result<PathBuf, String> {
        Ok(self.parse(None)?.cli.root)
    }

    /// The plan of `item` (`None`: the batch's own flags with a stand-in
    /// prompt, to check them before any item runs), or why there is none.
    pub fn plan(&self, item: Option<&Item>) -> Result<RunPlan, String> {
        let parsed = self.parse(item)?;
        let inputs = Inputs {
            origins: &parsed.origins,
            env: self.env,
            file: self.file,
            stderr_is_terminal: false,
        };
        let mut plan = config::resolve(parsed.cli, &inputs).map_err(|e| e.to_string())?;
        if let Some(pinned) = &self.pinned
            && Pinned::of(&plan) != *pinned
        {
            return Err(format!(
                "the item's model {:?} would leave the batch's provider ({}); \
                 an item picks a model of that provider only",
                plan.model, pinned.name
            ));
        }
        if let (Some(allowed), Some(tools)) = (&self.tools, plan.tools.as_mut()) {
            tools.names.retain(|name| allowed.contains(name));
            if !tools.names.contains(&ToolName::Git) {
                tools.git = None;
            }
        }
        plan.stdin = StdinMode::Never;
        plan.output = OutputFormat::Json;
        plan.terminal = Terminal {
            color: false,
            indicator: false,
            stream: false,
        };
        Ok(plan)
    }
}

/// Whether an item's `root` resolves inside the batch's (canonical)
/// `--root`, following every link: `Err` says why not. A root that does
/// not exist yet is left to the item's own check (a `usage` line).
pub fn root_inside(batch_root: Option<&Path>, root: &str) -> Result<(), String> {
    let resolved = match std::fs::canonicalize(root) {
        Ok(resolved) => resolved,
        Err(error) if error.kind() == io::ErrorKind::NotFound => return Ok(()),
        Err(error) => return Err(format!("`root` {root:?} cannot be resolved: {error}")),
    };
    match batch_root {
        Some(batch_root) if resolved.starts_with(batch_root) => Ok(()),
        Some(batch_root) => Err(format!(
            "`root` {root:?} resolves to {} outside the batch's --root {}; \
             an item's root narrows the batch's, never widens it",
            resolved.display(),
            batch_root.display()
        )),
        None => Err(format!(
            "`root` {root:?} cannot be checked: the batch's --root does not resolve"
        )),
    }
}

/// clap's first line, without its `error: `.
fn one_line(text: &str) -> String {
    let first = text.lines().next().unwrap_or_default();
    first.strip_prefix("error: ").unwrap_or(first).to_owned()
}

/// What the batch shares with each item beyond the plan: the MCP
/// servers' tools, the rate gate and the HTTP client.
pub struct Context<'a> {
    /// Plans come from here.
    pub base: &'a Base<'a>,
    /// Started once for the batch.
    pub shared: &'a Shared,
    /// The rate gate and the client.
    pub transport: &'a Transport,
    /// `--events-dir`.
    pub events_dir: Option<&'a Path>,
    /// The files no events file may be.
    pub protected: &'a Protected,
    /// The batch's `--root`, canonical (`None`: it does not resolve).
    pub root: Option<&'a Path>,
}

/// How one item ended.
pub struct Finished {
    /// Its place in the order the items were started.
    pub position: u64,
    /// How it ended.
    pub status: Status,
    /// Its result line (`None`: a signal stopped it; `--resume` runs it again).
    pub line: Option<String>,
    /// Tokens it used.
    pub tokens: u64,
    /// What it cost (with a price).
    pub cost: Option<f64>,
}

/// Runs `item` as one run, the `position`-th the batch started;
/// `tokens_left` is what remains of the batch's `--max-tokens-total`.
pub async fn run_item(
    item: Item,
    position: u64,
    context: &Context<'_>,
    tokens_left: Option<u64>,
) -> Finished {
    let refused = |message: String| {
        let result = serde_json::json!({
            "status": Status::Usage.as_str(),
            "exitCode": Status::Usage.code(),
            "message": message,
        });
        Finished {
            position,
            status: Status::Usage,
            line: Some(line_of(&item, result.to_string().as_bytes())),
            tokens: 0,
            cost: None,
        }
    };
    // Checked before any item ran; checked again, as a link may have
    // appeared since.
    if let Some(root) = &item.root
        && let Err(message) = root_inside(context.root, root)
    {
        return refused(message);
    }
    let mut plan = match context.base.plan(Some(&item)) {
        Ok(plan) => plan,
        Err(message) => return refused(message),
    };
    if tokens_left.is_some() {
        plan.limits.max_tokens_total = tokens_left;
    }
    share_transport(&mut plan, context.transport);
    let stderr: Box<dyn Write + Send> = match context.events_dir {
        Some(dir) => match events_file(dir, &item.id, context.protected) {
            Ok((_, file)) => {
                plan.events = EventsFormat::Jsonl;
                Box::new(file)
            }
            Err(error) => {
                return refused(format!(
                    "cannot write --events-dir {}: {error}",
                    dir.display()
                ));
            }
        },
        None => {
            plan.events = EventsFormat::None;
            Box::new(io::sink())
        }
    };
    let captured = Captured::default();
    let streams = Streams {
        stdout: Box::new(captured.clone()),
        stderr,
    };
    let shared = Shared {
        tracing: context.shared.tracing.for_item(&item.id),
        ..context.shared.clone()
    };
    let status = job::run_with(plan, streams, &shared).await;
    let result = captured.take();
    let value: serde_json::Value = serde_json::from_slice(&result).unwrap_or_default();
    let tokens = value["usage"]["totalTokens"].as_u64().unwrap_or(0);
    let cost = value["cost"].as_f64();
    Finished {
        position,
        status,
        line: match status {
            Status::Interrupted(_) => None,
            _ => Some(line_of(&item, &result)),
        },
        tokens,
        cost,
    }
}

/// What every item's requests share: one rate gate (`--rate`, `--tpm`,
/// and a refusal's `retry-after` pausing every item), one HTTP client.
pub struct Transport {
    /// The batch's one gate.
    pub gate: Arc<RateGate>,
    /// One connection pool, with the base URL it was made for.
    pub client: Option<(String, reqwest::Client)>,
}

impl Transport {
    /// The gate of `--rate`/`--tpm`, and a client for `plan`'s provider.
    /// Made on the runtime the items run on (a pooled connection belongs
    /// to its runtime).
    pub fn new(plan: &RunPlan, rate: Option<u32>, tpm: Option<u64>) -> Self {
        let client = http_settings(&plan.provider).and_then(|settings| {
            let client = shared_client(&settings.base_url).ok()?;
            Some((settings.base_url.clone(), client))
        });
        Transport {
            gate: RateGate::new(rate, tpm),
            client,
        }
    }
}

fn http_settings(provider: &ProviderConfig) -> Option<&HttpSettings> {
    provider.http()
}

/// Hands the batch's one rate gate and HTTP client to an item's plan, so
/// every item paces and reuses connections together. An item whose own
/// `model` sent it to another base URL keeps a client of its own.
fn share_transport(plan: &mut RunPlan, transport: &Transport) {
    if let Some(settings) = plan.provider.http_mut() {
        settings.gate = Some(Arc::clone(&transport.gate));
        if let Some((base_url, client)) = &transport.client
            && *base_url == settings.base_url
        {
            settings.client = Some(client.clone());
        }
    }
}

/// The item's result line: `{"id":…,"index":…,` then the run's own
/// `--output json` object as it wrote it.
fn line_of(item: &Item, result: &[u8]) -> String {
    let id = serde_json::Value::from(item.id.as_str()).to_string();
    let head = format!("{{\"id\":{id},\"index\":{}", item.index);
    let text = String::from_utf8_lossy(result);
    let body = text.trim();
    match serde_json::from_str::<serde_json::Map<String, serde_json::Value>>(body) {
        Ok(object) if !object.is_empty() => format!("{head},{}", &body[1..]),
        // A result that could not be written whole: its status only.
        _ => format!("{head},\"status\":\"error\",\"exitCode\":1}}"),
    }
}

/// A run's stdout, kept in memory: the one JSON object it writes.
#[derive(Clone, Default)]
struct Captured(Arc<Mutex<Vec<u8>>>);

impl Captured {
    fn take(&self) -> Vec<u8> {
        self.0
            .lock()
            .map(|mut bytes| std::mem::take(&mut *bytes))
            .unwrap_or_default()
    }
}

impl Write for Captured {
    fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
        match self.0.lock() {
            Ok(mut kept) => {
                kept.extend_from_slice(bytes);
                Ok(bytes.len())
            }
            Err(_) => Err(io::Error::other("the result buffer is poisoned")),
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

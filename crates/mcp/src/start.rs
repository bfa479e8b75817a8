//! Starting the servers of a run, strictly: every server is started (in
//! parallel), its MCP session initialized and its tools listed within
//! `--mcp-timeout`, or the run does not start (exit 8) and the error says
//! which server failed and why — the spawn error, its exit status and last
//! stderr line, the timeout, or the protocol error.
//!
//! A stdio server is started through `leash_child`: a process group of
//! its own (see `shutdown`) and the MCP server's environment policy
//! (leash's own environment without the `LEASH_*`, `OPENAI_*` and
//! `ANTHROPIC_*` variables and without any variable holding a key leash
//! knows, plus the config's `env`). Its stdout reaches the session through
//! a reader that refuses a message past [`MAX_MESSAGE_BYTES`] before it is
//! buffered; its stderr is read on a task of its own (so a chatty server
//! never blocks) and only its last line is kept, for the error.

use std::collections::BTreeMap;
use std::process::Stdio;
use std::sync::Arc;
use std::time::Duration;

use rmcp::model::{ClientInfo, Implementation};
use rmcp::service::{RoleClient, RunningService, ServiceExt};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;

use super::config::{ServerSpec, Transport};
use super::http::CappedHttpClient;
use super::shutdown::ServerProcesses;
use super::tool::{McpTool, offered_name};
use super::witness::{MAX_MESSAGE_BYTES, StderrTail, Witness, short};
use leash_child::Stop;
use leash_child::lines::{CappedLines, Overflow};
use leash_protocol::ToolSpec;
use leash_protocol::secret::ApiKey;
use leash_protocol::trace_context::{self, McpNote};
use leash_tools::Tool;

/// Why a server did not start: the run ends with exit 8.
#[derive(Debug, thiserror::Error)]
#[error("MCP server '{server}' {problem}")]
pub struct McpStartError {
    /// The server's name.
    pub server: String,
    /// What went wrong, in words.
    pub problem: String,
}

/// A session with a server that started.
pub struct Session {
    /// The server's name.
    pub name: String,
    /// The rmcp session; dropping or cancelling it closes the connection.
    pub service: RunningService<RoleClient, ClientInfo>,
    /// What explains a call's error: a stdio server's process and
    /// stderr, any server's message past the cap.
    pub witness: Arc<Witness>,
}

/// What starting every server gave: the sessions and their tools, in the
/// order the servers were named.
pub struct Started {
    /// One per server.
    pub sessions: Vec<Session>,
    /// Every server's tools, as the loop sees them.
    pub tools: Vec<Arc<dyn Tool>>,
}

/// Starts every server in parallel, each within `timeout`. On failure the
/// sessions that did start are closed; the processes stay in `processes`
/// for the caller to stop, as after any run.
pub async fn start_all(
    specs: &[ServerSpec],
    timeout: Duration,
    keys: &[ApiKey],
    processes: &ServerProcesses,
) -> Result<Started, McpStartError> {
    let starts = specs
        .iter()
        .map(|spec| start_one(spec, timeout, keys, processes));
    let results = futures::future::join_all(starts).await;
    let mut sessions = Vec::new();
    let mut listed = Vec::new();
    let mut failure = None;
    for result in results {
        match result {
            Ok((session, tools)) => {
                listed.push((
                    specs
                        .iter()
                        .find(|spec| spec.name == session.name)
                        .map(note_of)
                        .unwrap_or_default(),
                    session.name.clone(),
                    session.service.peer().clone(),
                    session.witness.clone(),
                    tools,
                ));
                sessions.push(session);
            }
            Err(error) => {
                failure.get_or_insert(error);
            }
        }
    }
    if let Some(error) = failure {
        return Err(error);
    }
    let mut tools: Vec<Arc<dyn Tool>> = Vec::new();
    let mut names: BTreeMap<String, String> = BTreeMap::new();
    for (note, server, peer, witness, server_tools) in listed {
        let server: Arc<str> = Arc::from(server);
        let fail = |problem: String| McpStartError {
            server: server.to_string(),
            problem,
        };
        for tool in server_tools {
            let name = offered_name(&server, &tool.name).map_err(fail)?;
            if let Some(first) = names.insert(name.clone(), server.to_string()) {
                return Err(fail(format!(
                    "lists the tool '{}' twice (offered as '{name}', first by '{first}')",
                    tool.name
                )));
            }
            let parameters = serde_json::Value::Object((*tool.input_schema).clone());
            if let Err(error) = jsonschema::validator_for(&parameters) {
                return Err(fail(format!(
                    "gives its tool '{}' an input schema that does not compile: {}",
                    tool.name,
                    short(&error.to_string())
                )));
            }
            let spec = ToolSpec {
                name,
                description: tool.description.as_deref().unwrap_or_default().to_owned(),
                parameters,
            };
            tools.push(Arc::new(
                McpTool::new(
                    spec,
                    Arc::clone(&server),
                    tool.name.into_owned(),
                    peer.clone(),
                    witness.clone(),
                )
                .with_note(note.clone()),
            ));
        }
    }
    Ok(Started { sessions, tools })
}

/// How leash introduces itself to a server.
fn client_info() -> ClientInfo {
    ClientInfo {
        client_info: Implementation {
            name: "leash".to_owned(),
            version: env!("CARGO_PKG_VERSION").to_owned(),
            ..Implementation::from_build_env()
        },
        ..ClientInfo::default()
    }
}

type Listed = (Session, Vec<rmcp::model::Tool>);

async fn start_one(
    spec: &ServerSpec,
    timeout: Duration,
    keys: &[ApiKey],
    processes: &ServerProcesses,
) -> Result<Listed, McpStartError> {
    let fail = |problem: String| McpStartError {
        server: spec.name.clone(),
        problem,
    };
    let witness = Arc::new(Witness {
        name: spec.name.clone(),
        is_process: matches!(spec.transport, Transport::Stdio { .. }),
        processes: processes.clone(),
        stderr: StderrTail::default(),
        overflow: Overflow::default(),
        session: Arc::default(),
    });
    // Traced: the start's own span, which a stdio server gets as its
    // TRACEPARENT (docs/src/tracing.md).
    let reserved = trace_context::reserve(None);
    let began = std::time::SystemTime::now();
    let traceparent = reserved.as_ref().map(|span| span.traceparent.as_str());
    let started = tokio::time::timeout(timeout, connect(spec, keys, &witness, traceparent)).await;
    if let Some(reserved) = &reserved {
        let mut note = note_of(spec);
        if let Ok(Ok((session, _))) = &started {
            note.protocol_version = session
                .service
                .peer()
                .peer_info()
                .map(|info| info.protocol_version.to_string());
            note.session_id = witness
                .session
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .clone();
        }
        trace_context::mcp_started(reserved, began, note, !matches!(started, Ok(Ok(_))));
    }
    let mut problem = match started {
        Ok(Ok(listed)) => return Ok(listed),
        Ok(Err(Failure::Spawn(problem))) => return Err(fail(problem)),
        Ok(Err(Failure::Protocol(problem))) => problem,
        // Not the exit: giving up closed the server's stdin, and a server
        // that then exits on end of input did not fail by exiting.
        Err(_) => return Err(fail(start_timed_out(timeout, &witness))),
    };
    if let Some(overflowed) = witness.overflowed().await {
        return Err(fail(overflowed));
    }
    // A process that exited explains a broken handshake best.
    if let Transport::Stdio { .. } = spec.transport
        && let Some(exited) = witness
            .exited("before listing its tools", Duration::from_millis(300))
            .await
    {
        return Err(fail(exited));
    }
    if let Some(line) = witness.stderr.last_line() {
        problem.push_str(&format!("; its last stderr line: {line}"));
    }
    Err(fail(problem))
}

/// Why a start that ran past `timeout` failed: the timeout, and the last
/// line the server wrote on stderr before it, if any.
fn start_timed_out(timeout: Duration, witness: &Witness) -> String {
    let mut problem = format!(
        "did not start and list its tools within --mcp-timeout {}",
        humantime::format_duration(timeout)
    );
    if let Some(line) = witness.stderr.last_line() {
        problem.push_str(&format!("; its last stderr line: {line}"));
    }
    problem
}

enum Failure {
    /// The process could not be started: nothing else to say.
    Spawn(String),
    /// The session failed.
    Protocol(String),
}

/// What the trace says of a server: its name, transport and address.
pub(super) fn note_of(spec: &ServerSpec) -> McpNote {
    match &spec.transport {
        Transport::Stdio { .. } => McpNote {
            server: spec.name.clone(),
            transport: "pipe",
            ..McpNote::default()
        },
        Transport::Http { url, .. } => McpNote {
            server: spec.name.clone(),
            transport: "tcp",
            address: reqwest::Url::parse(url).ok().and_then(|url| {
                let host = url.host_str()?.trim_matches(['[', ']']).to_owned();
                Some((host, url.port_or_known_default()?))
            }),
            ..McpNote::default()
        },
    }
}

async fn connect(
    spec: &ServerSpec,
    keys: &[ApiKey],
    witness: &Arc<Witness>,
    traceparent: Option<&str>,
) -> Result<Listed, Failure> {
    let service = match &spec.transport {
        Transport::Stdio { command, args, env } => {
            let mut child = tokio::process::Command::new(command);
            child
                .args(args)
                .env_clear()
                .envs(leash_child::env::for_mcp_server(
                    std::env::vars_os(),
                    env,
                    keys,
                ))
                .stdin(Stdio::piped())
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .kill_on_drop(true);
            if let Some(traceparent) = traceparent {
                child.env("TRACEPARENT", traceparent);
            }
            let (mut child, group) = leash_child::spawn_async(&mut child, Stop::Politely)
                .map_err(|error| Failure::Spawn(format!("cannot start '{command}': {error}")))?;
            let pipes = (child.stdout.take(), child.stdin.take(), child.stderr.take());
            witness.processes.add(&spec.name, child, group);
            let (Some(stdout), Some(stdin), Some(err)) = pipes else {
                return Err(Failure::Spawn("its pipes could not be opened".to_owned()));
            };
            witness.stderr.follow(err);
            let stdout = CappedLines::new(stdout, MAX_MESSAGE_BYTES, witness.overflow.clone());
            client_info()
                .serve((stdout, stdin))
                .await
                .map_err(|error| Failure::Protocol(handshake_failed(&error.to_string())))?
        }
        Transport::Http { url, headers } => {
            let mut map = reqwest::header::HeaderMap::new();
            for (name, value) in headers {
                // Checked when the config was read.
                if let (Ok(name), Ok(value)) = (
                    reqwest::header::HeaderName::from_bytes(name.as_bytes()),
                    reqwest::header::HeaderValue::from_str(value),
                ) {
                    map.insert(name, value);
                }
            }
            let client = reqwest::Client::builder()
                .default_headers(map)
                .build()
                .map_err(|error| Failure::Spawn(format!("cannot make an HTTP client: {error}")))?;
            let client = CappedHttpClient::new(client, MAX_MESSAGE_BYTES, witness.overflow.clone())
                .with_session(Arc::clone(&witness.session));
            let transport = StreamableHttpClientTransport::with_client(
                client,
                StreamableHttpClientTransportConfig::with_uri(url.as_str()),
            );
            client_info()
                .serve(transport)
                .await
                .map_err(|error| Failure::Protocol(handshake_failed(&error.to_string())))?
        }
    };
    // A reply past the cap never arrives: stop waiting for it at once.
    let tools = tokio::select! {
        listed = service.list_all_tools() => listed.map_err(|error| {
            Failure::Protocol(format!(
                "did not list its tools: {}",
                short(&error.to_string())
            ))
        })?,
        () = witness.overflow() => {
            return Err(Failure::Protocol("sent a message past the cap".to_owned()));
        }
    };
    Ok((
        Session {
            name: spec.name.clone(),
            service,
            witness: Arc::clone(witness),
        },
        tools,
    ))
}

fn handshake_failed(error: &str) -> String {
    // rmcp names its transport's Rust type ("Transport [rmcp::...] error:"):
    // noise for the person reading why a server failed.
    let error = match (error.find(" Transport ["), error.find("] error: ")) {
        (Some(start), Some(end)) if start < end => {
            format!("{} transport error: {}", &error[..start], &error[end + 9..])
        }
        _ => error.to_owned(),
    };
    format!("failed the MCP handshake: {}", short(&error))
}

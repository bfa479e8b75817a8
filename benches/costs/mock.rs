//! A loopback stand-in for an OpenAI Chat Completions server: std
//! `TcpListener` on 127.0.0.1, a thread per connection, HTTP/1.1 with
//! keep-alive, canned SSE bodies. It records when the first byte of each
//! connection arrives, so start-up can be measured up to the first request.
//! Optionally it holds every reply back a while (items in flight) or
//! enforces a request rate limit the way a provider does (429 with
//! `retry-after` past R requests in any second), logging each request.
//!
//! It must only ever listen on loopback and must stop by itself: every
//! connection thread ends when leash closes its socket or after a cap.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::{Arc, Mutex, PoisonError};
use std::thread;
use std::time::{Duration, Instant, SystemTime};

/// How long a stalled response is held open at most.
const STALL_CAP: Duration = Duration::from_secs(10);

/// What the server answers with.
#[derive(Clone)]
pub enum Reply {
    /// The seed task: a `read_file` call first, a text answer once the
    /// request carries a tool result.
    Seed,
    /// The same prepared SSE body for every request.
    Body(Arc<Vec<u8>>),
    /// Headers, then nothing until leash hangs up.
    Stall,
}

/// A provider's request rate limit.
#[derive(Clone, Copy)]
pub struct Limit {
    /// Requests allowed in any one second; the next is refused.
    pub per_second: u32,
    /// Whether every response says the limit in
    /// `x-ratelimit-limit-requests` (per minute), as OpenAI does.
    pub announce: bool,
}

/// One request under a [`Limit`]: when it arrived and whether it was
/// refused.
#[derive(Clone, Copy, Debug)]
pub struct Logged {
    pub at: Instant,
    pub refused: bool,
}

struct State {
    reply: Mutex<Reply>,
    /// Held before every reply.
    delay: Mutex<Duration>,
    limit: Mutex<Option<Limit>>,
    /// Every request while a limit is set.
    log: Mutex<Vec<Logged>>,
    /// Wall-clock time of the first byte of each connection.
    first_bytes: Mutex<Vec<SystemTime>>,
    /// The request bodies, in order (for curl to send the same bytes).
    bodies: Mutex<Vec<Vec<u8>>>,
}

/// A running mock. The accept thread lives as long as the process.
pub struct Mock {
    addr: SocketAddr,
    state: Arc<State>,
}

impl Mock {
    /// Starts listening on an ephemeral loopback port.
    pub fn start() -> std::io::Result<Mock> {
        let listener = TcpListener::bind("127.0.0.1:0")?;
        let addr = listener.local_addr()?;
        let state = Arc::new(State {
            reply: Mutex::new(Reply::Seed),
            delay: Mutex::new(Duration::ZERO),
            limit: Mutex::new(None),
            log: Mutex::new(Vec::new()),
            first_bytes: Mutex::new(Vec::new()),
            bodies: Mutex::new(Vec::new()),
        });
        let accepting = Arc::clone(&state);
        thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let state = Arc::clone(&accepting);
                thread::spawn(move || serve(stream, &state));
            }
        });
        Ok(Mock { addr, state })
    }

    /// The base URL to pass as `--base-url`.
    pub fn base_url(&self) -> String {
        format!("http://{}/v1", self.addr)
    }

    /// Sets the reply and forgets earlier first-byte times, bodies and
    /// the request log; no delay, no limit.
    pub fn set_reply(&self, reply: Reply) {
        *lock(&self.state.reply) = reply;
        *lock(&self.state.delay) = Duration::ZERO;
        *lock(&self.state.limit) = None;
        lock(&self.state.first_bytes).clear();
        lock(&self.state.bodies).clear();
        lock(&self.state.log).clear();
    }

    /// Holds every reply back `delay` (after [`Mock::set_reply`]).
    pub fn set_delay(&self, delay: Duration) {
        *lock(&self.state.delay) = delay;
    }

    /// Enforces `limit` from now on (after [`Mock::set_reply`]).
    pub fn set_limit(&self, limit: Limit) {
        *lock(&self.state.limit) = Some(limit);
    }

    /// The requests since the limit was set, in arrival order.
    pub fn log(&self) -> Vec<Logged> {
        lock(&self.state.log).clone()
    }

    /// The request bodies received since the last `set_reply`, in order.
    pub fn bodies(&self) -> Vec<Vec<u8>> {
        lock(&self.state.bodies).clone()
    }

    /// The earliest first byte since the last `set_reply`.
    pub fn first_byte(&self) -> Option<SystemTime> {
        lock(&self.state.first_bytes).iter().min().copied()
    }
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Serves requests on one connection until the client closes it.
fn serve(stream: TcpStream, state: &State) {
    let _ = stream.set_nodelay(true);
    let Ok(writer) = stream.try_clone() else {
        return;
    };
    let mut writer = writer;
    let mut reader = BufReader::new(stream);
    // Blocks until the first byte; its time is the start-up measurement.
    match reader.fill_buf() {
        Ok(bytes) if !bytes.is_empty() => lock(&state.first_bytes).push(SystemTime::now()),
        _ => return,
    }
    while let Some(body) = read_request(&mut reader) {
        let reply = lock(&state.reply).clone();
        let limit = *lock(&state.limit);
        let announce = limit
            .filter(|limit| limit.announce)
            .map(|limit| limit.per_second * 60);
        if let Some(limit) = limit
            && let Some(wait) = admit(state, limit)
        {
            if refuse(&mut writer, wait, announce).is_err() {
                return;
            }
            continue;
        }
        if matches!(reply, Reply::Seed) {
            lock(&state.bodies).push(body.clone());
        }
        let delay = *lock(&state.delay);
        if !delay.is_zero() {
            thread::sleep(delay);
        }
        let written = match reply {
            Reply::Seed => respond(&mut writer, &seed_body(&body), announce),
            Reply::Body(bytes) => respond(&mut writer, &bytes, announce),
            Reply::Stall => {
                stall(&mut writer, &mut reader);
                return;
            }
        };
        if written.is_err() {
            return;
        }
    }
}

/// Reads one request's head and body; `None` when the connection closed.
fn read_request(reader: &mut BufReader<TcpStream>) -> Option<Vec<u8>> {
    let mut content_length = 0;
    let mut line = String::new();
    loop {
        line.clear();
        if reader.read_line(&mut line).ok()? == 0 {
            return None;
        }
        let trimmed = line.trim_end();
        if trimmed.is_empty() {
            break;
        }
        if let Some((name, value)) = trimmed.split_once(':')
            && name.eq_ignore_ascii_case("content-length")
        {
            content_length = value.trim().parse().ok()?;
        }
    }
    let mut body = vec![0; content_length];
    reader.read_exact(&mut body).ok()?;
    Some(body)
}

/// Logs a request under `limit`; `Some(wait)` when it is refused: the
/// second before it already holds `per_second` admitted requests, and
/// `wait` is when the oldest of them leaves that second.
fn admit(state: &State, limit: Limit) -> Option<Duration> {
    let second = Duration::from_secs(1);
    let mut log = lock(&state.log);
    let now = Instant::now();
    let recent: Vec<Instant> = log
        .iter()
        .rev()
        .take_while(|logged| now.duration_since(logged.at) < second)
        .filter(|logged| !logged.refused)
        .map(|logged| logged.at)
        .collect();
    let refused = recent.len() >= limit.per_second as usize;
    log.push(Logged { at: now, refused });
    let oldest = recent.last().copied().unwrap_or(now);
    refused.then(|| (oldest + second).saturating_duration_since(now))
}

/// A 429 as OpenAI sends it, with `retry-after` in seconds (fractional).
fn refuse(writer: &mut TcpStream, wait: Duration, announce: Option<u32>) -> std::io::Result<()> {
    let body = r#"{"error":{"message":"Rate limit reached for requests","type":"requests","code":"rate_limit_exceeded"}}"#;
    let head = format!(
        "HTTP/1.1 429 Too Many Requests\r\ncontent-type: application/json\r\nretry-after: {:.3}\r\n{}content-length: {}\r\n\r\n",
        wait.as_secs_f64().max(0.001),
        limit_header(announce),
        body.len()
    );
    writer.write_all(head.as_bytes())?;
    writer.write_all(body.as_bytes())?;
    writer.flush()
}

fn limit_header(announce: Option<u32>) -> String {
    announce.map_or_else(String::new, |per_minute| {
        format!("x-ratelimit-limit-requests: {per_minute}\r\n")
    })
}

fn respond(writer: &mut TcpStream, body: &[u8], announce: Option<u32>) -> std::io::Result<()> {
    let head = format!(
        "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n{}content-length: {}\r\n\r\n",
        limit_header(announce),
        body.len()
    );
    writer.write_all(head.as_bytes())?;
    writer.write_all(body)?;
    writer.flush()
}

/// Sends the headers of a streamed body, then holds the connection until
/// the client hangs up (that is the abort being measured) or the cap.
fn stall(writer: &mut TcpStream, reader: &mut BufReader<TcpStream>) {
    let head =
        "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n";
    if writer.write_all(head.as_bytes()).is_err() {
        return;
    }
    let _ = reader.get_ref().set_read_timeout(Some(STALL_CAP));
    let mut sink = [0u8; 1024];
    while let Ok(n) = reader.read(&mut sink) {
        if n == 0 {
            break;
        }
    }
}

/// The seed task's two answers: a `read_file` call, then (once the request
/// carries the tool result) a text answer.
fn seed_body(request: &[u8]) -> Vec<u8> {
    let has_tool_result = request
        .windows(b"\"role\":\"tool\"".len())
        .any(|window| window == b"\"role\":\"tool\"");
    if has_tool_result {
        let mut body = String::new();
        for word in [
            "`first([])` ",
            "returns ",
            "`undefined`: ",
            "`items[0]` ",
            "of an empty array ",
            "is `undefined`.",
        ] {
            body.push_str(&text_chunk(word));
        }
        body.push_str(&finish_chunk("stop"));
        body.into_bytes()
    } else {
        let call = r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"read_file","arguments":"{\"path\":\"sample.ts\"}"}}]}}]}"#;
        format!(
            "{}data: {call}\n\n{}",
            text_chunk("Let me read it."),
            finish_chunk("tool_calls")
        )
        .into_bytes()
    }
}

/// One `data:` event carrying a text delta.
pub fn text_chunk(text: &str) -> String {
    let delta = serde_json::json!({"choices": [{"index": 0, "delta": {"content": text}}]});
    format!("data: {delta}\n\n")
}

/// The last chunk with its finish reason, then `[DONE]`.
pub fn finish_chunk(reason: &str) -> String {
    format!(
        "data: {{\"choices\":[{{\"index\":0,\"delta\":{{}},\"finish_reason\":\"{reason}\"}}]}}\n\ndata: [DONE]\n\n"
    )
}

/// A text reply of `deltas` deltas of `delta` each.
pub fn text_body(deltas: usize, delta: &str) -> Vec<u8> {
    let chunk = text_chunk(delta);
    let finish = finish_chunk("stop");
    let mut body = Vec::with_capacity(chunk.len() * deltas + finish.len());
    for _ in 0..deltas {
        body.extend_from_slice(chunk.as_bytes());
    }
    body.extend_from_slice(finish.as_bytes());
    body
}

//! A loopback stand-in for an OpenAI Chat Completions server: std
//! `TcpListener` on 127.0.0.1, a thread per connection, HTTP/1.1 with
//! keep-alive, canned SSE bodies. It records when the first byte of each
//! connection arrives, so start-up can be measured up to the first request.
//!
//! It must only ever listen on loopback and must stop by itself: every
//! connection thread ends when leash closes its socket or after a cap.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::{Arc, Mutex, PoisonError};
use std::thread;
use std::time::{Duration, SystemTime};

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

struct State {
    reply: Mutex<Reply>,
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

    /// Sets the reply and forgets earlier first-byte times and bodies.
    pub fn set_reply(&self, reply: Reply) {
        *lock(&self.state.reply) = reply;
        lock(&self.state.first_bytes).clear();
        lock(&self.state.bodies).clear();
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
        if matches!(reply, Reply::Seed) {
            lock(&state.bodies).push(body.clone());
        }
        let written = match reply {
            Reply::Seed => respond(&mut writer, &seed_body(&body)),
            Reply::Body(bytes) => respond(&mut writer, &bytes),
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

fn respond(writer: &mut TcpStream, body: &[u8]) -> std::io::Result<()> {
    let head = format!(
        "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncontent-length: {}\r\n\r\n",
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

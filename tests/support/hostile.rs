//! Hostile peers for the hardening tests, and a harness for the real binary
//! among them.
//!
//! [`HostileServer`] is a raw-TCP HTTP server on 127.0.0.1, scripted per
//! test, for what a mock HTTP library cannot do: never answer, send headers
//! and then nothing, stream without end, send a line of 100 MB in chunks
//! (never holding it), send bytes that are not UTF-8, echo the request.
//! Every connection is bounded in time and bytes and ends when the client
//! goes away or the server is dropped; it serves loopback only.
//!
//! [`Workspace`] runs `leash` in a temp directory with no provider
//! variable, `.env` or config file of the caller (through the one
//! launcher, [`super::run::Run`]), and the checks every
//! failure test makes: no panic, no backtrace, never the key.
//!
//! Test code only.

#![allow(dead_code)]

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use super::run::{Run, stderr};

/// The longest any connection of a hostile server lives.
pub const CONNECTION_LIFETIME: Duration = Duration::from_secs(60);

/// The most bytes any connection sends.
pub const CONNECTION_BYTES: u64 = 1 << 30;

/// One request as the server read it.
#[derive(Debug, Clone)]
pub struct RawRequest {
    /// The request line and headers, as sent.
    pub head: String,
    /// The body (by `content-length`).
    pub body: Vec<u8>,
}

impl RawRequest {
    /// A header's value (name matched without case).
    pub fn header(&self, name: &str) -> Option<String> {
        self.head.lines().skip(1).find_map(|line| {
            let (key, value) = line.split_once(':')?;
            key.trim()
                .eq_ignore_ascii_case(name)
                .then(|| value.trim().to_string())
        })
    }

    /// The body as text.
    pub fn body_text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }
}

/// One accepted connection, for a responder to write to.
pub struct Conn {
    stream: TcpStream,
    stop: Arc<AtomicBool>,
    deadline: Instant,
    sent: u64,
}

impl Conn {
    /// Sends `bytes`; false once the client is gone, the server stops, or
    /// the connection's time or byte budget is spent.
    pub fn send(&mut self, bytes: &[u8]) -> bool {
        if self.done() || self.sent + bytes.len() as u64 > CONNECTION_BYTES {
            return false;
        }
        self.sent += bytes.len() as u64;
        self.stream.write_all(bytes).is_ok()
    }

    /// Sends a status line and headers for a body that ends when the
    /// connection closes (no length, no chunking).
    pub fn head(&mut self, status: u16, content_type: &str, extra: &[(&str, &str)]) -> bool {
        let mut head =
            format!("HTTP/1.1 {status} X\r\ncontent-type: {content_type}\r\nconnection: close\r\n");
        for (name, value) in extra {
            head.push_str(&format!("{name}: {value}\r\n"));
        }
        head.push_str("\r\n");
        self.send(head.as_bytes())
    }

    /// A whole response with a length.
    pub fn respond(&mut self, status: u16, content_type: &str, body: &[u8]) -> bool {
        let length = body.len().to_string();
        self.head(status, content_type, &[("content-length", &length)]) && self.send(body)
    }

    /// Keeps the connection open and silent until the client closes it,
    /// the server is dropped, or the connection's lifetime ends.
    pub fn hold(&mut self) {
        let _ = self
            .stream
            .set_read_timeout(Some(Duration::from_millis(50)));
        let mut buf = [0u8; 1024];
        while !self.done() {
            match self.stream.read(&mut buf) {
                Ok(0) => return,
                Ok(_) => {}
                Err(e)
                    if matches!(
                        e.kind(),
                        std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                    ) => {}
                Err(_) => return,
            }
        }
    }

    /// Sends `chunk` again and again until the client goes away or a
    /// budget is spent. Returns the bytes sent.
    pub fn flood(&mut self, chunk: &[u8]) -> u64 {
        let start = self.sent;
        while self.send(chunk) {}
        self.sent - start
    }

    fn done(&self) -> bool {
        self.stop.load(Ordering::Relaxed) || Instant::now() > self.deadline
    }
}

/// What a server does with one connection, after reading its request.
pub type Responder = Arc<dyn Fn(&RawRequest, &mut Conn) + Send + Sync>;

/// Wraps a closure as a [`Responder`].
pub fn responder(f: impl Fn(&RawRequest, &mut Conn) + Send + Sync + 'static) -> Responder {
    Arc::new(f)
}

/// A scripted raw-TCP HTTP server on 127.0.0.1. Connection `n` is answered
/// by responder `n` (the last one answers every later connection).
pub struct HostileServer {
    addr: std::net::SocketAddr,
    stop: Arc<AtomicBool>,
    requests: Arc<Mutex<Vec<RawRequest>>>,
    accepted: Arc<AtomicUsize>,
    acceptor: Option<JoinHandle<()>>,
}

impl HostileServer {
    /// Starts a server answering connections with `responders` in order.
    pub fn start(responders: Vec<Responder>) -> Self {
        assert!(!responders.is_empty(), "a server needs a responder");
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind loopback");
        let addr = listener.local_addr().expect("local address");
        let stop = Arc::new(AtomicBool::new(false));
        let requests = Arc::new(Mutex::new(Vec::new()));
        let accepted = Arc::new(AtomicUsize::new(0));
        let acceptor = {
            let (stop, requests, accepted) = (stop.clone(), requests.clone(), accepted.clone());
            std::thread::spawn(move || {
                for stream in listener.incoming() {
                    if stop.load(Ordering::Relaxed) {
                        return;
                    }
                    let Ok(stream) = stream else { continue };
                    let n = accepted.fetch_add(1, Ordering::SeqCst);
                    let respond = responders[n.min(responders.len() - 1)].clone();
                    let (stop, requests) = (stop.clone(), requests.clone());
                    std::thread::spawn(move || serve(stream, respond, stop, requests));
                }
            })
        };
        HostileServer {
            addr,
            stop,
            requests,
            accepted,
            acceptor: Some(acceptor),
        }
    }

    /// A server answering every connection with `f`.
    pub fn always(f: impl Fn(&RawRequest, &mut Conn) + Send + Sync + 'static) -> Self {
        Self::start(vec![responder(f)])
    }

    /// `http://127.0.0.1:PORT`.
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// The requests read so far.
    pub fn requests(&self) -> Vec<RawRequest> {
        self.requests.lock().map(|r| r.clone()).unwrap_or_default()
    }

    /// How many connections were accepted.
    pub fn connections(&self) -> usize {
        self.accepted.load(Ordering::SeqCst)
    }
}

impl Drop for HostileServer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        // Wakes the acceptor so it sees the flag.
        let _ = TcpStream::connect(self.addr);
        if let Some(acceptor) = self.acceptor.take() {
            let _ = acceptor.join();
        }
    }
}

fn serve(
    mut stream: TcpStream,
    respond: Responder,
    stop: Arc<AtomicBool>,
    requests: Arc<Mutex<Vec<RawRequest>>>,
) {
    if stop.load(Ordering::Relaxed) {
        return;
    }
    let _ = stream.set_read_timeout(Some(Duration::from_secs(10)));
    let Some(request) = read_request(&mut stream) else {
        return;
    };
    if let Ok(mut log) = requests.lock() {
        log.push(request.clone());
    }
    let _ = stream.set_read_timeout(None);
    let mut conn = Conn {
        stream,
        stop,
        deadline: Instant::now() + CONNECTION_LIFETIME,
        sent: 0,
    };
    respond(&request, &mut conn);
    let _ = conn.stream.flush();
    let _ = conn.stream.shutdown(std::net::Shutdown::Both);
}

/// Reads the head and a `content-length` body (bounded at 64 MiB).
fn read_request(stream: &mut TcpStream) -> Option<RawRequest> {
    let mut data = Vec::new();
    let mut buf = [0u8; 16 * 1024];
    let head_end = loop {
        if let Some(end) = data.windows(4).position(|w| w == b"\r\n\r\n") {
            break end + 4;
        }
        let n = stream.read(&mut buf).ok()?;
        if n == 0 || data.len() > 1 << 20 {
            return None;
        }
        data.extend_from_slice(&buf[..n]);
    };
    let head = String::from_utf8_lossy(&data[..head_end]).into_owned();
    let mut request = RawRequest {
        head,
        body: data[head_end..].to_vec(),
    };
    let length: usize = request
        .header("content-length")
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
        .min(64 << 20);
    while request.body.len() < length {
        let n = stream.read(&mut buf).ok()?;
        if n == 0 {
            break;
        }
        request.body.extend_from_slice(&buf[..n]);
    }
    Some(request)
}

// ---------------------------------------------------------------------------
// The binary.

/// A temp working directory for one run of `leash`: `root/` for the file
/// tools (holding `sample.ts`), `outside/` next to it, and room for
/// scripts and transcripts. No `.env`, no config file, no provider
/// variables of the caller.
pub struct Workspace {
    dir: tempfile::TempDir,
}

impl Workspace {
    /// A fresh workspace.
    pub fn new() -> Self {
        let dir = tempfile::tempdir().expect("temp dir");
        std::fs::create_dir_all(dir.path().join("root")).expect("root");
        std::fs::create_dir_all(dir.path().join("outside")).expect("outside");
        std::fs::create_dir_all(dir.path().join("config")).expect("config");
        let sample = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/sample.ts");
        std::fs::copy(sample, dir.path().join("root/sample.ts")).expect("sample");
        Workspace { dir }
    }

    /// The workspace directory (canonical, so paths compare).
    pub fn path(&self, name: &str) -> PathBuf {
        std::fs::canonicalize(self.dir.path())
            .expect("canonical temp dir")
            .join(name)
    }

    /// Writes `text` at `name`, making its directories.
    pub fn write(&self, name: &str, text: impl AsRef<[u8]>) -> PathBuf {
        let path = self.path(name);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).expect("parent dir");
        }
        std::fs::write(&path, text).expect("write");
        path
    }

    /// Writes a faux script and returns its path.
    pub fn script(&self, script: serde_json::Value) -> PathBuf {
        self.write("script.json", script.to_string())
    }

    /// `leash` in this workspace, through the one launcher (`HOME` the
    /// workspace, config home `config/`): root `root/` (`LEASH_ROOT`),
    /// `NO_COLOR`, `--no-stdin`.
    pub fn run(&self) -> Run {
        let home = self.dir.path();
        Run::new()
            .home(home)
            .config_home(home.join("config"))
            .current_dir(home)
            .env("NO_COLOR", "1")
            // As a variable, so a test's own `--root` wins.
            .env("LEASH_ROOT", "root")
            .arg("--no-stdin")
    }

    /// [`Workspace::run`] as a command: no stdin, output and error piped.
    pub fn leash(&self) -> Command {
        piped(self.run().command())
    }

    /// `leash` on the faux provider with `script`.
    pub fn faux(&self, script: serde_json::Value) -> Command {
        let path = self.script(script);
        let mut cmd = self.leash();
        cmd.args(["--provider", "faux", "--faux-script"]).arg(path);
        cmd
    }

    /// [`Workspace::run`] with `--provider NAME --base-url URL -m m` and
    /// `key` in the provider's key variable.
    pub fn http_run(&self, provider: &str, base_url: &str, key: &str) -> Run {
        self.run().on(provider, base_url, "m").key(key)
    }

    /// [`Workspace::http_run`] as a command: no stdin, output and error
    /// piped.
    pub fn http(&self, provider: &str, base_url: &str, key: &str) -> Command {
        piped(self.http_run(provider, base_url, key).command())
    }
}

/// `cmd` with no stdin and its output and error piped.
fn piped(mut cmd: Command) -> Command {
    cmd.stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    cmd
}

/// Runs `cmd` to its end and times it.
pub fn run(cmd: &mut Command) -> (Output, Duration) {
    let started = Instant::now();
    let output = cmd.output().expect("run leash");
    (output, started.elapsed())
}

/// The run ended by itself with an exit code — not killed by a signal — and
/// printed no panic and no backtrace.
pub fn assert_calm(output: &Output) {
    let err = stderr(output);
    assert!(
        output.status.code().is_some(),
        "killed by a signal: {:?}\n{err}",
        output.status
    );
    for marker in [
        "panicked",
        "stack backtrace",
        "RUST_BACKTRACE",
        "Broken pipe",
    ] {
        assert!(!err.contains(marker), "stderr shows {marker:?}:\n{err}");
    }
}

/// `needle` appears nowhere in `haystack` (bytes).
pub fn contains(haystack: &[u8], needle: &str) -> bool {
    haystack
        .windows(needle.len())
        .any(|window| window == needle.as_bytes())
}

/// Every line of `text` is a JSON object.
pub fn assert_jsonl(text: &str, what: &str) -> Vec<serde_json::Value> {
    text.lines()
        .map(|line| {
            serde_json::from_str::<serde_json::Value>(line)
                .unwrap_or_else(|e| panic!("{what}: a line that is not JSON ({e}): {line}"))
        })
        .collect()
}

/// The peak resident memory (KiB) of the largest child this process has
/// waited for. Only meaningful in a test binary whose children are all
/// measured this way (see `hardening_memory.rs`).
pub fn peak_rss_of_children_kib() -> u64 {
    use nix::sys::resource::{UsageWho, getrusage};
    getrusage(UsageWho::RUSAGE_CHILDREN)
        .map(|usage| u64::try_from(usage.max_rss()).unwrap_or(0))
        .unwrap_or(0)
}

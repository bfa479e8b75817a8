//! The OTLP receiver the tracing tests export to: `otlp_receiver.py`, run
//! on the project venv's Python (`make otlp-receiver` installs the pinned
//! `opentelemetry-proto` there; `make test` depends on it), decoding each
//! request with the official definitions. This side starts it on a free
//! loopback port and reads back the spans, the raw requests and the
//! connections it accepted.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

use serde_json::Value;
use tempfile::TempDir;

/// How the receiver answers.
#[derive(Clone, Copy)]
pub enum Mode {
    /// 200, every span decoded and kept.
    Ok,
    /// Accepts, reads the request, never answers.
    Slow,
    /// 503.
    Refuse,
    /// 200, after this many milliseconds.
    Delay(u64),
}

/// A running receiver; stopped when dropped.
pub struct Receiver {
    child: Child,
    port: u16,
    _dir: TempDir,
    out: PathBuf,
}

/// The project venv's Python (`make otlp-receiver`).
pub fn venv_python() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(".tools/venv/bin/python")
}

impl Receiver {
    /// Starts one; fails the test, naming the make target, when the venv
    /// or its `opentelemetry-proto` is missing.
    pub fn start(mode: Mode) -> Receiver {
        let python = venv_python();
        let usable = python.exists()
            && Command::new(&python)
                .args([
                    "-c",
                    "import opentelemetry.proto.collector.trace.v1.trace_service_pb2",
                ])
                .stderr(Stdio::null())
                .status()
                .is_ok_and(|status| status.success());
        assert!(
            usable,
            "the OTLP receiver needs opentelemetry-proto in .tools/venv: run `make otlp-receiver` (make test does)"
        );
        let dir = tempfile::tempdir().expect("receiver dir");
        let out = dir.path().join("spans.jsonl");
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/support/otlp_receiver.py");
        let mode = match mode {
            Mode::Ok => "ok".to_owned(),
            Mode::Slow => "slow".to_owned(),
            Mode::Refuse => "refuse".to_owned(),
            Mode::Delay(ms) => format!("delay:{ms}"),
        };
        let mut child = Command::new(python)
            .arg(script)
            .arg(&out)
            .arg(mode)
            .stdout(Stdio::piped())
            .spawn()
            .expect("start the OTLP receiver");
        let mut line = String::new();
        BufReader::new(child.stdout.take().expect("receiver stdout"))
            .read_line(&mut line)
            .expect("the receiver's port");
        let port = line.trim().parse().expect("a port");
        Receiver {
            child,
            port,
            _dir: dir,
            out,
        }
    }

    /// `OTEL_EXPORTER_OTLP_ENDPOINT` for it.
    pub fn endpoint(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// Every span received, as the receiver decoded it.
    pub fn spans(&self) -> Vec<Value> {
        std::fs::read_to_string(&self.out)
            .unwrap_or_default()
            .lines()
            .map(|line| serde_json::from_str(line).expect("a span line"))
            .collect()
    }

    /// Every metric data point received (`/v1/metrics`), one JSON value
    /// each: name, unit, kind, temporality, attributes, and a histogram's
    /// count, sum, bucket counts and bounds.
    pub fn metrics(&self) -> Vec<Value> {
        std::fs::read_to_string(self.out.with_extension("jsonl.metrics"))
            .unwrap_or_default()
            .lines()
            .map(|line| serde_json::from_str(line).expect("a metric line"))
            .collect()
    }

    /// The file the metric points are written to, one JSON line each.
    pub fn metrics_file(&self) -> PathBuf {
        self.out.with_extension("jsonl.metrics")
    }

    /// The file the spans are written to, one JSON line each.
    pub fn spans_file(&self) -> &Path {
        &self.out
    }

    /// Every byte of every request (request line, headers, body).
    pub fn raw(&self) -> Vec<u8> {
        std::fs::read(self.out.with_extension("jsonl.raw")).unwrap_or_default()
    }

    /// The export requests it received.
    pub fn requests(&self) -> u64 {
        std::fs::read_to_string(self.out.with_extension("jsonl.requests"))
            .ok()
            .and_then(|count| count.trim().parse().ok())
            .unwrap_or(0)
    }

    /// The connections it accepted.
    pub fn connections(&self) -> u64 {
        std::fs::read_to_string(self.out.with_extension("jsonl.connections"))
            .ok()
            .and_then(|count| count.trim().parse().ok())
            .unwrap_or(0)
    }
}

impl Drop for Receiver {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The span named `name`; fails listing the names there are.
pub fn span<'a>(spans: &'a [Value], name: &str) -> &'a Value {
    spans
        .iter()
        .find(|span| span["name"] == name)
        .unwrap_or_else(|| panic!("no span {name:?} in {:?}", names(spans)))
}

/// The spans' names, in the order received.
pub fn names(spans: &[Value]) -> Vec<String> {
    spans
        .iter()
        .map(|span| span["name"].as_str().unwrap_or_default().to_owned())
        .collect()
}

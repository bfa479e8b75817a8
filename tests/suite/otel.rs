//! OpenTelemetry traces (docs/src/tracing.md) through the real binary,
//! exported to a receiver that decodes them with the official
//! `opentelemetry-proto` definitions (tests/support/otlp.rs): the span
//! tree of the seed task, a failed run, `TRACEPARENT`, a batch as one
//! trace, the key in no exported byte, a dead or slow collector, and
//! nothing built or connected when traces are off (`trace`, `collector`);
//! the conventions' values and the exporter's rules one test each
//! (`rules`, `tls`); every emitted attribute read against the conventions'
//! registry (`registry`); the GenAI client metrics beside them, and
//! mutual TLS (`metrics`, `tls`).

mod collector;
mod metrics;
mod registry;
mod rules;
mod tls;
mod trace;

use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use crate::support::otlp::Receiver;
use crate::support::run::Run;

/// The caller's span a CI system hands over.
const TRACEPARENT: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures")
}

/// The seed task (`make demo`'s): one `read_file` call, then the answer.
fn seed_task() -> Run {
    let script: Value =
        serde_json::from_str(&std::fs::read_to_string(fixtures().join("demo.json")).unwrap())
            .unwrap();
    Run::faux(script)
        .arg("--root")
        .arg(fixtures())
        .args(["--system", "Read the exercise file first."])
        .prompt("Read sample.ts and explain what first([]) returns, and why.")
}

/// A run that fails: the model's stream breaks off with an error.
fn failing_run() -> Run {
    Run::faux(json!([{"text": "partial", "error": "scripted failure"}])).prompt("go")
}

fn traced(run: Run, receiver: &Receiver) -> Run {
    run.env("OTEL_EXPORTER_OTLP_ENDPOINT", receiver.endpoint())
}

fn attr<'a>(span: &'a Value, name: &str) -> &'a Value {
    &span["attributes"][name]
}

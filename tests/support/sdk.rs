//! The vendors' own SDKs against the loopback mocks leash is tested
//! against: each `sdk/*.py` script drives one official client (`openai`'s
//! `AzureOpenAI`, `google-genai`, `boto3`) at a mock and prints, as one
//! JSON line, what the client made of the reply. A mock the SDK accepts
//! speaks the real wire, so a leash test against the same mock tests
//! leash against that wire. The SDKs are pinned in the Makefile (`make
//! cloud-sdks`, a prerequisite of `make test`) and live in the project's
//! `.tools/venv`, never the machine's Python.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use serde_json::Value;

fn venv_python() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(".tools/venv/bin/python")
}

/// Runs `tests/support/sdk/{script}.py` with `args` and `env` on the venv's
/// Python (off the async runtime, so the mock keeps answering) and returns
/// its JSON line. Fails the test, naming the make target, when the venv
/// lacks the SDK `module`.
pub async fn run(
    module: &str,
    script: &str,
    args: Vec<String>,
    env: Vec<(String, String)>,
) -> Value {
    let python = venv_python();
    let usable = python.exists()
        && Command::new(&python)
            .args(["-c", &format!("import {module}")])
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|status| status.success());
    assert!(
        usable,
        "the SDK tests need {module} in .tools/venv: run `make cloud-sdks` (make test does)"
    );
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/support/sdk")
        .join(format!("{script}.py"));
    let output = tokio::task::spawn_blocking(move || {
        let mut command = Command::new(python);
        command.arg(path).args(args);
        // Only what the script is given: no developer's cloud settings.
        for (name, _) in std::env::vars() {
            if [
                "AWS_",
                "AZURE_",
                "OPENAI_",
                "GOOGLE_",
                "GEMINI_",
                "ANTHROPIC_",
                "CLOUD_ML_",
            ]
            .iter()
            .any(|prefix| name.starts_with(prefix))
                || name.eq_ignore_ascii_case("http_proxy")
                || name.eq_ignore_ascii_case("https_proxy")
                || name.eq_ignore_ascii_case("all_proxy")
            {
                command.env_remove(name);
            }
        }
        command.envs(env).output()
    })
    .await
    .expect("the SDK's thread")
    .expect("run the SDK script");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "{script}.py failed: {}\n{stdout}",
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_str(stdout.trim())
        .unwrap_or_else(|err| panic!("{script}.py printed {stdout:?}: {err}"))
}

/// A fresh 2048-bit RSA key as PKCS#8 PEM, made by the venv's pinned
/// `cryptography` (a service account's key for the Vertex AI tests).
pub fn rsa_key() -> String {
    let script = "from cryptography.hazmat.primitives.asymmetric import rsa\n\
                  from cryptography.hazmat.primitives import serialization as s\n\
                  k = rsa.generate_private_key(public_exponent=65537, key_size=2048)\n\
                  print(k.private_bytes(s.Encoding.PEM, s.PrivateFormat.PKCS8, s.NoEncryption()).decode(), end='')";
    let output = Command::new(venv_python())
        .args(["-c", script])
        .output()
        .expect("the venv's python: run `make cloud-sdks` (make test does)");
    assert!(
        output.status.success(),
        "cryptography in .tools/venv: run `make cloud-sdks`: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout).expect("a PEM")
}

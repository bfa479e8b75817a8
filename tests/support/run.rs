//! The one launcher: [`Run`] builds a run of the real binary, isolated from
//! the developer's setup ([`isolate`]), against a provider mock
//! ([`Run::openai`], [`Run::responses`], [`Run::anthropic`]), the faux model
//! ([`Run::faux`]) or no provider at all ([`Run::new`]), and [`Outcome`]
//! reads what it printed (the one set of output helpers).
//!
//! Every integration test launches `leash` through here — directly, or
//! through a helper that does ([`super::shell::Workspace`],
//! [`super::hostile::Workspace`]). Nothing here may reach a real API: the
//! provider variables of the caller are never inherited, and every base URL
//! is a loopback server's.

use std::any::Any;
use std::ffi::{OsStr, OsString};
use std::io::Write;
use std::ops::Deref;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;
use tempfile::TempDir;

/// The binary under test. Only the launcher and the helpers that put the
/// binary on a shell's `PATH` use the path itself.
pub fn bin() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_leash"))
}

/// The key a provider run gets unless a test names its own ([`Run::key`]).
pub const TEST_KEY: &str = "sk-leash-test-KEY-0000";

/// A server a provider run can point at: a wiremock server or a raw-TCP
/// hostile one.
pub trait Endpoint {
    /// `http://127.0.0.1:PORT`, without a path.
    fn root(&self) -> String;
}

impl Endpoint for wiremock::MockServer {
    fn root(&self) -> String {
        self.uri()
    }
}

impl Endpoint for super::hostile::HostileServer {
    fn root(&self) -> String {
        self.url()
    }
}

/// One run of the real binary, being described. Without [`Run::home`] it
/// runs in a temp directory of its own holding `fixtures/sample.ts` (its
/// `HOME` and working directory), so `--root fixtures` works and no `.env`
/// or config file of the repository or the developer is read.
pub struct Run {
    first: Option<OsString>,
    dir: Option<TempDir>,
    home: Option<PathBuf>,
    config_home: Option<PathBuf>,
    cwd: Option<PathBuf>,
    provider: Option<(String, String, String)>,
    args: Vec<OsString>,
    prompt: Option<OsString>,
    envs: Vec<(OsString, Option<OsString>)>,
    key_var: Option<&'static str>,
    stdin: Option<Vec<u8>>,
    timeout: Option<Duration>,
    kept: Vec<Box<dyn Any + Send>>,
}

impl Default for Run {
    fn default() -> Self {
        Self::new()
    }
}

impl Run {
    /// `leash` with no provider chosen and no key.
    pub fn new() -> Self {
        Run {
            first: None,
            dir: None,
            home: None,
            config_home: None,
            cwd: None,
            provider: None,
            args: Vec::new(),
            prompt: None,
            envs: Vec::new(),
            key_var: None,
            stdin: None,
            timeout: None,
            kept: Vec::new(),
        }
    }

    /// `leash --provider NAME --base-url URL -m MODEL` with [`TEST_KEY`] in
    /// the provider's key variable.
    pub fn provider(name: &str, base_url: impl Into<String>, model: &str) -> Self {
        Self::new().on(name, base_url, model)
    }

    /// This run on provider `name` at `base_url` with `model`, and
    /// [`TEST_KEY`] in the provider's key variable.
    pub fn on(mut self, name: &str, base_url: impl Into<String>, model: &str) -> Self {
        self.key_var = Some(match name {
            "anthropic" => "ANTHROPIC_API_KEY",
            "azure" => "AZURE_OPENAI_API_KEY",
            "gemini" => "GEMINI_API_KEY",
            "bedrock" => "AWS_SECRET_ACCESS_KEY",
            "vertex" => "GOOGLE_OAUTH_ACCESS_TOKEN",
            _ => "OPENAI_API_KEY",
        });
        self.provider = Some((name.to_owned(), base_url.into(), model.to_owned()));
        self.key(TEST_KEY)
    }

    /// The OpenAI provider (Chat Completions) at `server`'s `/v1`.
    pub fn openai(server: &impl Endpoint) -> Self {
        Self::provider("openai", format!("{}/v1", server.root()), "gpt-test")
    }

    /// The OpenAI provider with `--api responses` at `server`'s `/v1`.
    pub fn responses(server: &impl Endpoint) -> Self {
        Self::openai(server).args(["--api", "responses"])
    }

    /// The Anthropic provider at `server`.
    pub fn anthropic(server: &impl Endpoint) -> Self {
        Self::provider("anthropic", server.root(), "claude-test")
    }

    /// Azure OpenAI at `server` (its endpoint), deployment `dep-1`.
    pub fn azure(server: &impl Endpoint) -> Self {
        Self::provider("azure", server.root(), "dep-1")
    }

    /// Google's Gemini API at `server`, model `gemini-test`.
    pub fn gemini(server: &impl Endpoint) -> Self {
        Self::provider("gemini", server.root(), "gemini-test")
    }

    /// Amazon Bedrock at `server` (its endpoint), a Claude model id, in
    /// `us-east-1` with the access key id `AKIDLEASHTEST`.
    pub fn bedrock(server: &impl Endpoint) -> Self {
        Self::provider(
            "bedrock",
            server.root(),
            "us.anthropic.claude-sonnet-4-5-20250929-v1:0",
        )
        .env("AWS_REGION", "us-east-1")
        .env("AWS_ACCESS_KEY_ID", "AKIDLEASHTEST")
    }

    /// The faux provider playing `script` (written into the run's own
    /// temp directory).
    pub fn faux(script: Value) -> Self {
        let mut run = Self::new();
        let path = run.own_dir().join("script.json");
        std::fs::write(&path, script.to_string()).unwrap();
        run.args(["--provider", "faux", "--faux-script"]).arg(path)
    }

    /// The provider's key variable set to `key`.
    pub fn key(self, key: &str) -> Self {
        let var = self.key_var.expect("a key needs a provider");
        self.env(var, key)
    }

    /// No key in the provider's key variable.
    pub fn no_key(self) -> Self {
        let var = self.key_var.expect("a key needs a provider");
        self.env_remove(var)
    }

    /// The model (`-m`), replacing the constructor's.
    pub fn model(mut self, model: &str) -> Self {
        let provider = self.provider.as_mut().expect("a model needs a provider");
        provider.2 = model.to_owned();
        self
    }

    /// The base URL (`--base-url`), replacing the constructor's.
    pub fn base_url(mut self, url: impl Into<String>) -> Self {
        let provider = self.provider.as_mut().expect("a base URL needs a provider");
        provider.1 = url.into();
        self
    }

    /// A command word (`batch`) as the very first argument, before the
    /// provider's flags: leash recognises a command only there.
    pub fn command_word(mut self, word: impl AsRef<OsStr>) -> Self {
        self.first = Some(word.as_ref().to_owned());
        self
    }

    /// One more argument.
    pub fn arg(mut self, arg: impl AsRef<OsStr>) -> Self {
        self.args.push(arg.as_ref().to_owned());
        self
    }

    /// More arguments, in order.
    pub fn args<I, S>(mut self, args: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        self.args
            .extend(args.into_iter().map(|arg| arg.as_ref().to_owned()));
        self
    }

    /// The prompt, passed after every other argument.
    pub fn prompt(mut self, prompt: impl AsRef<OsStr>) -> Self {
        self.prompt = Some(prompt.as_ref().to_owned());
        self
    }

    /// A variable of the run's environment (after isolation).
    pub fn env(mut self, name: impl AsRef<OsStr>, value: impl AsRef<OsStr>) -> Self {
        self.envs
            .push((name.as_ref().to_owned(), Some(value.as_ref().to_owned())));
        self
    }

    /// Variables of the run's environment, in order.
    pub fn envs<I, K, V>(self, vars: I) -> Self
    where
        I: IntoIterator<Item = (K, V)>,
        K: AsRef<OsStr>,
        V: AsRef<OsStr>,
    {
        vars.into_iter()
            .fold(self, |run, (name, value)| run.env(name, value))
    }

    /// A variable removed from the run's environment.
    pub fn env_remove(mut self, name: impl AsRef<OsStr>) -> Self {
        self.envs.push((name.as_ref().to_owned(), None));
        self
    }

    /// Bytes on the run's stdin (otherwise stdin is empty and closed).
    pub fn stdin(mut self, bytes: impl Into<Vec<u8>>) -> Self {
        self.stdin = Some(bytes.into());
        self
    }

    /// The working directory (by default the run's own temp directory, or
    /// the caller's when [`Run::home`] is given).
    pub fn current_dir(mut self, dir: impl AsRef<Path>) -> Self {
        self.cwd = Some(dir.as_ref().to_owned());
        self
    }

    /// `HOME`, with `XDG_CONFIG_HOME` at `home/.config` unless
    /// [`Run::config_home`] says otherwise.
    pub fn home(mut self, home: impl AsRef<Path>) -> Self {
        self.home = Some(home.as_ref().to_owned());
        self
    }

    /// `XDG_CONFIG_HOME`.
    pub fn config_home(mut self, dir: impl AsRef<Path>) -> Self {
        self.config_home = Some(dir.as_ref().to_owned());
        self
    }

    /// Kills the run and fails the test when it takes longer than `limit`.
    pub fn timeout(mut self, limit: Duration) -> Self {
        self.timeout = Some(limit);
        self
    }

    /// Keeps `guard` (a test's temp directory) alive until the run ends.
    pub fn keep(mut self, guard: impl Any + Send) -> Self {
        self.kept.push(Box::new(guard));
        self
    }

    /// The run's own temp directory (made on first use), holding
    /// `fixtures/sample.ts`.
    fn own_dir(&mut self) -> PathBuf {
        self.dir
            .get_or_insert_with(super::shell::fixtures_dir)
            .path()
            .to_owned()
    }

    /// The prepared command, for the tests that spawn, feed or signal the
    /// process themselves. Keep the `Run` alive while the command runs: it
    /// owns the temp directory the command may run in. Stdio is left as
    /// `Command` sets it, unless [`Run::stdin`] was given (then piped).
    pub fn command(&mut self) -> Command {
        let home = match &self.home {
            Some(home) => home.clone(),
            None => self.own_dir(),
        };
        let config_home = self
            .config_home
            .clone()
            .unwrap_or_else(|| home.join(".config"));
        let mut cmd = Command::new(bin());
        isolate(&mut cmd, &home, &config_home);
        match (&self.cwd, &self.home) {
            (Some(cwd), _) => cmd.current_dir(cwd),
            (None, None) => cmd.current_dir(&home),
            (None, Some(_)) => &mut cmd,
        };
        for (name, value) in &self.envs {
            match value {
                Some(value) => cmd.env(name, value),
                None => cmd.env_remove(name),
            };
        }
        if let Some(word) = &self.first {
            cmd.arg(word);
        }
        if let Some((name, base_url, model)) = &self.provider {
            cmd.args(["--provider", name, "--base-url", base_url, "-m", model]);
        }
        cmd.args(&self.args);
        if let Some(prompt) = &self.prompt {
            cmd.arg(prompt);
        }
        if self.stdin.is_some() {
            cmd.stdin(Stdio::piped());
        }
        cmd
    }

    /// Runs to the end and returns what it printed.
    pub fn output(mut self) -> Outcome {
        let mut cmd = self.command();
        if self.stdin.is_none() {
            cmd.stdin(Stdio::null());
        }
        cmd.stdout(Stdio::piped()).stderr(Stdio::piped());
        let started = Instant::now();
        let mut child = cmd.spawn().expect("spawn leash");
        let feeder = self.stdin.take().map(|bytes| {
            let mut pipe = child.stdin.take().expect("piped stdin");
            // A run may stop reading early; a broken pipe is its choice.
            std::thread::spawn(move || drop(pipe.write_all(&bytes)))
        });
        let output = match self.timeout {
            None => child.wait_with_output().expect("wait for leash"),
            Some(limit) => wait_within(child, limit),
        };
        if let Some(feeder) = feeder {
            let _ = feeder.join();
        }
        drop(self);
        Outcome {
            output,
            elapsed: started.elapsed(),
        }
    }

    /// [`Run::output`] off the async runtime (for `#[tokio::test]`s, whose
    /// mock servers must keep answering while the run waits).
    pub async fn output_async(self) -> Outcome {
        tokio::task::spawn_blocking(move || self.output())
            .await
            .expect("the run's thread")
    }
}

/// Waits for `child` at most `limit`; kills it and fails the test after.
fn wait_within(child: std::process::Child, limit: Duration) -> Output {
    let pid = child.id();
    let (done, waited) = std::sync::mpsc::channel();
    let waiter = std::thread::spawn(move || {
        let output = child.wait_with_output();
        let _ = done.send(());
        output
    });
    if waited.recv_timeout(limit).is_err() {
        let _ = nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(i32::try_from(pid).expect("pid")),
            nix::sys::signal::Signal::SIGKILL,
        );
        let _ = waiter.join();
        panic!("leash ran longer than {limit:?}");
    }
    waiter.join().expect("waiter").expect("wait for leash")
}

/// Isolates `cmd` (leash itself, or a shell that runs it) from the
/// developer's setup: none of the variables that change a run (`LEASH_*`,
/// the provider variables, `NO_COLOR`, the TLS roots, ...), and `HOME` and
/// `XDG_CONFIG_HOME` of the test's own, so no real config file is read.
pub fn isolate(cmd: &mut Command, home: &Path, config_home: &Path) {
    for name in inherited() {
        cmd.env_remove(name);
    }
    cmd.env("HOME", home).env("XDG_CONFIG_HOME", config_home);
}

/// Proxy variables: reqwest honours them, so a developer's proxy would
/// stand between leash and the loopback servers.
const PROXIES: [&str; 4] = ["http_proxy", "https_proxy", "all_proxy", "no_proxy"];

/// Variables of the developer's environment that would change a run.
fn inherited() -> Vec<String> {
    std::env::vars_os()
        .filter_map(|(name, _)| name.into_string().ok())
        .filter(|name| {
            name.starts_with("LEASH_")
                || name.starts_with("OPENAI_")
                || name.starts_with("ANTHROPIC_")
                || name.starts_with("AZURE_")
                || name.starts_with("GEMINI_")
                || name.starts_with("GOOGLE_")
                || name.starts_with("AWS_")
                || name.starts_with("CLOUD_ML_")
                || name.starts_with("GITHUB_")
                || name.starts_with("SSL_CERT_")
                || name.starts_with("XDG_")
                || name == "NO_COLOR"
                || name == "RUST_BACKTRACE"
                || name.starts_with("OTEL_")
                || name == "TRACEPARENT"
                || name == "TRACESTATE"
                || PROXIES.iter().any(|proxy| name.eq_ignore_ascii_case(proxy))
        })
        .collect()
}

/// What a finished run printed, how it ended and how long it took. It
/// derefs to the raw [`Output`].
pub struct Outcome {
    pub output: Output,
    pub elapsed: Duration,
}

impl From<Output> for Outcome {
    /// What a command a test spawned itself printed (no elapsed time).
    fn from(output: Output) -> Outcome {
        Outcome {
            output,
            elapsed: Duration::ZERO,
        }
    }
}

impl Deref for Outcome {
    type Target = Output;

    fn deref(&self) -> &Output {
        &self.output
    }
}

impl Outcome {
    /// Stdout as text.
    pub fn stdout(&self) -> String {
        stdout(&self.output)
    }

    /// Stderr as text.
    pub fn stderr(&self) -> String {
        stderr(&self.output)
    }

    /// Stderr's last line (where the run's ending is reported).
    pub fn last_line(&self) -> String {
        last_line(&self.output)
    }

    /// The exit code (`None` when a signal ended the run).
    pub fn code(&self) -> Option<i32> {
        self.output.status.code()
    }

    /// Stderr's lines as JSON events (`--events jsonl`).
    pub fn events(&self) -> Vec<Value> {
        events(&self.output)
    }

    /// Neither stream holds `key`.
    pub fn assert_key_absent(&self, key: &str) {
        assert_key_absent(&self.output, key);
    }
}

/// The output's stdout as text.
pub fn stdout(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

/// The output's stderr as text.
pub fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

/// The last line of stderr.
pub fn last_line(output: &Output) -> String {
    stderr(output)
        .lines()
        .last()
        .unwrap_or_default()
        .to_string()
}

/// The exit code; fails when a signal ended the run.
pub fn code(output: &Output) -> i32 {
    output.status.code().expect("an exit code, not a signal")
}

/// Every stderr line parsed as one JSON event; fails on a line that is not.
pub fn events(output: &Output) -> Vec<Value> {
    stderr(output)
        .lines()
        .map(|line| {
            serde_json::from_str(line).unwrap_or_else(|e| panic!("not a JSON event ({e}): {line}"))
        })
        .collect()
}

/// The `tool_execution_end` events of a `--events jsonl` run, in order.
pub fn tool_ends(output: &Output) -> Vec<Value> {
    events(output)
        .into_iter()
        .filter(|event| event["type"] == "tool_execution_end")
        .collect()
}

/// Neither stream of `output` holds `key`.
pub fn assert_key_absent(output: &Output, key: &str) {
    assert!(!stdout(output).contains(key), "key on stdout");
    assert!(!stderr(output).contains(key), "key on stderr");
}

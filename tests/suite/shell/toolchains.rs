//! The toolchains a confined command may use, and the secrets it may not
//! read whatever is allowed (docs/src/tools.md "Toolchains"): the real
//! binary on the scripted model, with this machine's real toolchains
//! (rustup and cargo in root's home, pyenv's Python, the system's npm).

use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::json;

use super::{Parent, closed_to_the_stranger, command, confinable, texts};

/// Every never-readable path of a home, as a file to plant a canary in.
const CANARIES: [&str; 23] = [
    ".ssh/id_ed25519",
    ".aws/credentials",
    ".azure/token",
    ".config/gh/hosts.yml",
    ".config/hub",
    ".config/gcloud/credentials.db",
    ".config/git/credentials",
    ".docker/config.json",
    ".git-credentials",
    ".netrc",
    ".npmrc",
    ".yarnrc.yml",
    ".pypirc",
    ".cargo/credentials",
    ".cargo/credentials.toml",
    ".m2/settings.xml",
    ".m2/settings-security.xml",
    ".gradle/gradle.properties",
    ".kube/config",
    ".gnupg/private-keys-v1.d/key",
    ".password-store/token.gpg",
    ".vault-token",
    ".local/share/keyrings/login.keyring",
];

const CANARY: &str = "canary-5ec2e7";

/// Plants a canary in every never-readable path of `home`, and a file
/// beside them that may be read once allowed.
fn plant(home: &Path) {
    for (n, path) in CANARIES.iter().enumerate() {
        let path = home.join(path);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, format!("{CANARY}-{n}\n")).unwrap();
    }
    std::fs::create_dir_all(home.join("bin")).unwrap();
    std::fs::write(home.join("bin/tool"), "tool-in-home-bin\n").unwrap();
    std::fs::create_dir_all(home.join(".config/nvim")).unwrap();
    std::fs::write(home.join(".config/nvim/init.lua"), "nvim-config\n").unwrap();
    std::fs::write(home.join(".cargo/config.toml"), "cargo-config\n").unwrap();
}

#[test]
fn every_secret_of_the_home_stays_unread_with_the_home_on_path_and_allowed() {
    if !confinable() {
        return;
    }
    let parent = Parent::new();
    let home = parent.path("home");
    plant(&home);
    let path = format!(
        "{}:{}:{}",
        home.display(),
        home.join("bin").display(),
        std::env::var("PATH").unwrap()
    );
    let reader = format!(
        "cat {0}/bin/tool {0}/.config/nvim/init.lua; grep -r {CANARY} {0} 2>&1 | head -50; \
         for f in {1}; do cat {0}/$f; done 2>&1; ls -la {0}/.ssh {0}/.aws 2>&1",
        home.display(),
        CANARIES.join(" ")
    );
    let outcome = parent
        .run(&[command(&reader)])
        .env("PATH", &path)
        .args(["--allow-read", &home.display().to_string()])
        .output();
    assert_eq!(outcome.code(), Some(0), "{}", outcome.stderr());
    let text = &texts(&outcome)[0];
    assert!(!text.contains(CANARY), "a secret was read: {text}");
    // The controls: what the home holds beside the secrets is read.
    assert!(text.contains("tool-in-home-bin"), "{text}");
    assert!(text.contains("nvim-config"), "{text}");
    // The home on PATH is withheld, and said so with the flag.
    let stderr = outcome.stderr();
    assert!(
        stderr.contains(&format!(
            "PATH {} is not readable by the shell",
            home.display()
        )) && stderr.contains("--allow-read"),
        "{stderr}"
    );
}

#[test]
fn an_allow_read_of_a_secret_is_a_usage_error_and_a_dotenv_cannot_allow_anything() {
    let parent = Parent::new();
    let home = parent.path("home");
    plant(&home);
    let outcome = parent
        .run(&[])
        .args(["--allow-read", &home.join(".ssh").display().to_string()])
        .output();
    assert_eq!(outcome.code(), Some(2), "{}", outcome.stderr());
    assert!(
        outcome.last_line().contains("never readable"),
        "{}",
        outcome.stderr()
    );
    let outcome = parent
        .run(&[])
        .args(["--allow-env", "GITHUB_TOKEN"])
        .output();
    assert_eq!(outcome.code(), Some(2), "{}", outcome.stderr());
    assert!(
        outcome.last_line().contains("--allow-env"),
        "{}",
        outcome.stderr()
    );
    for planted in ["LEASH_ALLOW_READ=/", "LEASH_ALLOW_ENV=SSH_AUTH_SOCK"] {
        std::fs::write(parent.path(".env"), format!("{planted}\n")).unwrap();
        let outcome = parent.run(&[]).output();
        assert_eq!(outcome.code(), Some(2), "{planted}: {}", outcome.stderr());
        assert!(
            outcome.last_line().contains("which a .env may not set"),
            "{planted}: {}",
            outcome.stderr()
        );
    }
}

/// The version of `name` in leash's own lock file: a crate this machine's
/// cargo registry holds, so the test fetches nothing from the internet.
pub(super) fn locked_version(name: &str) -> String {
    let lock = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/Cargo.lock")).unwrap();
    let at = lock
        .find(&format!("name = \"{name}\"\nversion = \""))
        .unwrap();
    let rest = &lock[at..];
    rest.lines()
        .nth(1)
        .unwrap()
        .split('"')
        .nth(1)
        .unwrap()
        .to_owned()
}

#[test]
fn rust_from_rustup_in_the_home_tests_a_crate_with_a_fetched_dependency() {
    if !confinable()
        || closed_to_the_stranger("cargo")
        || std::process::Command::new("cargo")
            .arg("--version")
            .output()
            .is_err()
    {
        return;
    }
    let parent = Parent::new();
    let root = parent.path("root");
    std::fs::create_dir(root.join("src")).unwrap();
    std::fs::write(
        root.join("Cargo.toml"),
        format!(
            "[package]\nname = \"fixme\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n\
             [dependencies]\nitoa = \"={}\"\n",
            locked_version("itoa")
        ),
    )
    .unwrap();
    std::fs::write(
        root.join("src/lib.rs"),
        "pub fn show(n: u32) -> String { itoa::Buffer::new().format(n).to_owned() }\n\
         #[test]\nfn shows() { assert_eq!(show(42), \"42\"); }\n",
    )
    .unwrap();
    // The step before leash: the dependency fetched into the real cargo
    // home (from its cache: no network).
    let fetched = std::process::Command::new("cargo")
        .args(["fetch", "--offline"])
        .current_dir(&root)
        .output()
        .unwrap();
    assert!(
        fetched.status.success(),
        "{}",
        String::from_utf8_lossy(&fetched.stderr)
    );
    let outcome = parent
        // The whole of cargo's output when it fails (a link error's cause
        // is far above its last lines), its last lines when it passes.
        // One more try when the link alone failed with gcc's "cannot find
        // 'ld'": it does so now and then, at no ABI in particular, where
        // collect2 looks up rustup's `gcc-ld/ld.lld` (an open question,
        // CONTRIBUTING.md "Known flaky tests"); the first log is printed.
        .run(&[json!({
            "command": "cargo test --lib >cargo.log 2>&1; status=$?; \
                        if [ $status -ne 0 ] && grep -q \"cannot find 'ld'\" cargo.log; then \
                          echo '[first try: cannot find ld]'; cargo test --lib >cargo.log 2>&1; status=$?; fi; \
                        if [ $status -eq 0 ]; then tail -4 cargo.log; else cat cargo.log; fi; \
                        exit $status",
            "timeout": 300
        })])
        .timeout(Duration::from_secs(400))
        .output();
    assert_eq!(outcome.code(), Some(0), "{}", outcome.stderr());
    let text = &texts(&outcome)[0];
    assert!(text.contains("test result: ok. 1 passed"), "{text}");
}

#[test]
fn pyenv_python_and_a_venv_built_from_it_in_the_checkout_run() {
    if !confinable()
        || std::env::var_os("PYENV_ROOT").is_none()
        || closed_to_the_stranger("python3")
    {
        return;
    }
    let parent = Parent::new();
    let outcome = parent
        .run(&[command(
            "python3 -m venv .venv && .venv/bin/python -c 'import sys, json; print(\"VENV\", sys.prefix != sys.base_prefix)'",
        )])
        .output();
    assert_eq!(outcome.code(), Some(0), "{}", outcome.stderr());
    let text = &texts(&outcome)[0];
    assert!(text.contains("VENV True"), "{text}");
}

#[test]
fn npm_install_and_pip_install_fail_offline_within_seconds() {
    if !confinable() || closed_to_the_stranger("pip") {
        return;
    }
    let parent = Parent::new();
    std::fs::write(
        parent.path("root/package.json"),
        "{\"name\":\"x\",\"version\":\"1.0.0\"}",
    )
    .unwrap();
    let started = Instant::now();
    let outcome = parent
        .run(&[
            json!({"command": "npm install left-pad-leash-none 2>&1 | tail -5", "timeout": 60}),
            json!({"command": "pip install leash-none-pkg 2>&1 | tail -5", "timeout": 60}),
        ])
        .timeout(Duration::from_secs(120))
        .output();
    assert_eq!(outcome.code(), Some(0), "{}", outcome.stderr());
    let texts = texts(&outcome);
    assert!(
        texts[0].contains("offline") || texts[0].contains("ENOTCACHED"),
        "{}",
        texts[0]
    );
    assert!(texts[1].contains("ERROR"), "{}", texts[1]);
    for text in &texts {
        let seconds: f64 = text
            .rsplit_once("· ")
            .and_then(|(_, rest)| rest.split(' ').next())
            .and_then(|number| number.parse().ok())
            .unwrap_or(f64::MAX);
        assert!(seconds < 15.0, "{text}");
    }
    assert!(started.elapsed() < Duration::from_secs(60));
}

#[test]
fn a_refused_read_and_a_refused_socket_are_named_as_the_sandbox() {
    if !confinable() {
        return;
    }
    let parent = Parent::new();
    let outcome = parent
        .run(&[
            command(&format!("cat {}", parent.path("beside.txt").display())),
            // TEST-NET-1: no route in a private network namespace, no
            // internet socket without one.
            command(
                "python3 -c 'import socket; socket.create_connection((\"192.0.2.1\", 80), timeout=5)'",
            ),
            command("echo fine"),
        ])
        .output();
    assert_eq!(outcome.code(), Some(0), "{}", outcome.stderr());
    let texts = texts(&outcome);
    assert!(
        texts[0].contains("[sandbox: ") && texts[0].contains("--allow-read"),
        "{}",
        texts[0]
    );
    assert!(
        texts[1].contains("[sandbox: ") && texts[1].contains("no network"),
        "{}",
        texts[1]
    );
    assert!(!texts[2].contains("sandbox"), "{}", texts[2]);
}

#[test]
fn a_refusal_in_the_first_lines_of_a_cut_output_is_named_too() {
    if !confinable() {
        return;
    }
    let parent = Parent::new();
    let outcome = parent
        .run(&[command(&format!(
            "cat {} 2>&1; seq 1 5000",
            parent.path("beside.txt").display()
        ))])
        .output();
    assert_eq!(outcome.code(), Some(0), "{}", outcome.stderr());
    let text = &texts(&outcome)[0];
    assert!(
        text.contains("were dropped; the first "),
        "the output was cut: {text}"
    );
    assert!(
        text.contains("[sandbox: ") && text.contains("--allow-read"),
        "{}",
        &text[text.len().saturating_sub(600)..]
    );
}

/// A server on 127.0.0.1 and its client, in one command: what a test
/// suite that starts a local server does.
const LOOPBACK_ROUND_TRIP: &str = "python3 -m http.server 8765 --bind 127.0.0.1 \
     >/dev/null 2>&1 & server=$!; for i in $(seq 50); do sleep 0.1; kill -0 $server || break; \
     python3 -c 'import urllib.request as u; \
     print(\"SERVED\", u.urlopen(\"http://127.0.0.1:8765/\", timeout=2).status)' \
     2>/dev/null && break; done; python3 -c 'import socket; s = socket.socket(); \
     s.bind((\"127.0.0.1\", 0)); s.listen(); print(\"LISTENING\")' 2>&1 | tail -1";

#[test]
fn a_loopback_test_server_answers_inside_and_nothing_outside_is_reached() {
    if !confinable() {
        return;
    }
    let parent = Parent::new();
    let outcome = parent
        .run(&[
            json!({"command": LOOPBACK_ROUND_TRIP, "timeout": 60}),
            command(
                "python3 -c 'import socket; socket.create_connection((\"192.0.2.1\", 80), \
                 timeout=5); print(\"REACHED\")' 2>&1 | tail -1",
            ),
        ])
        .timeout(Duration::from_secs(120))
        .output();
    assert_eq!(outcome.code(), Some(0), "{}", outcome.stderr());
    let texts = texts(&outcome);
    let stderr = outcome.stderr();
    if stderr.contains("--allow-exec: no loopback: this system gives leash no private network") {
        // The footing without a network namespace: no loopback, said at
        // start; the server cannot even listen.
        assert!(!texts[0].contains("SERVED"), "{}", texts[0]);
        assert!(!texts[0].contains("LISTENING"), "{}", texts[0]);
    } else {
        assert!(texts[0].contains("SERVED 200"), "{}", texts[0]);
        assert!(texts[0].contains("LISTENING"), "{}", texts[0]);
    }
    assert!(!texts[1].contains("REACHED"), "{}", texts[1]);
    assert!(
        texts[1].contains("Network is unreachable")
            || texts[1].contains("Address family not supported"),
        "{}",
        texts[1]
    );
}

#[test]
fn leash_config_says_whether_the_shell_has_a_loopback_and_its_uid() {
    let config = |footing: Option<&str>| {
        let mut run = crate::support::run::Run::new()
            .command_word("config")
            .args(["--provider", "faux", "--allow-exec"]);
        if let Some(variable) = footing {
            run = run.env(variable, "1");
        }
        let output = run.output();
        assert_eq!(output.code(), Some(0), "{}", output.stderr());
        output.stdout()
    };
    // Without namespaces (GitHub's runners), said with why.
    let without = config(Some("_LEASH_TEST_NO_PRIVATE_MOUNTS"));
    assert!(
        without.contains(
            "# the shell has no loopback: this system gives leash no private network namespace"
        ),
        "{without}"
    );
    let here = config(None);
    assert!(
        here.contains("# the shell has its own loopback (a private network namespace)")
            || here.contains("# the shell has no loopback: "),
        "{here}"
    );
    // Root without a cgroup: the stranger's uid, named.
    if nix::unistd::geteuid().is_root() {
        let stranger = config(Some("_LEASH_TEST_NO_CGROUP"));
        assert!(
            stranger
                .contains("# the shell: root without a writable pids cgroup: commands run as uid "),
            "{stranger}"
        );
    }
}

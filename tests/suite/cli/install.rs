//! The install script and the GitHub Action (docs/src/install.md "Install" and
//! docs/src/recipes.md "Recipes"), run as real processes: `install.sh` by `sh` against a temp
//! directory standing in for the release (a tarball of the debug leash and
//! its .sha256, fetched over `file://`), here; the action's steps in
//! [`action`] and [`action_batch`].

#![allow(clippy::unwrap_used, clippy::expect_used)] // tests may panic on a broken fixture

mod action;
mod action_batch;
mod action_check;
mod action_keys;
mod action_matrix;
mod action_untrusted;

pub(crate) use action::run_action;

use crate::support::run::{stderr, stdout};
use crate::support::shell::Workspace;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

pub(crate) const VERSION: &str = env!("CARGO_PKG_VERSION");
pub(crate) const TARGET: &str = "x86_64-unknown-linux-gnu";

pub(crate) fn repo_file(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(name)
}

/// `dir` laid out as GitHub serves a release: `download/vVERSION/` holds
/// leash-VERSION-TARGET.tar.gz (the debug leash, stripped to keep the test
/// fast) and its .sha256; `latest/download/leash-version.txt` names it.
pub(crate) fn release(dir: &Path) -> PathBuf {
    let name = format!("leash-{VERSION}-{TARGET}");
    let assets = dir.join(format!("download/v{VERSION}"));
    std::fs::create_dir_all(assets.join(&name)).unwrap();
    std::fs::create_dir_all(dir.join("latest/download")).unwrap();
    std::fs::write(
        dir.join("latest/download/leash-version.txt"),
        format!("v{VERSION}\n"),
    )
    .unwrap();
    let script = r#"
        set -eu
        strip -o "$1/leash" "$BIN" 2>/dev/null || cp "$BIN" "$1/leash"
        tar -cf - "$1" | gzip -1 > "$1.tar.gz"
        sha256sum "$1.tar.gz" > "$1.tar.gz.sha256"
    "#;
    let output = Command::new("sh")
        .args(["-c", script, "sh", &name])
        .env("BIN", crate::support::run::bin())
        .current_dir(&assets)
        .output()
        .unwrap();
    assert!(output.status.success(), "{output:?}");
    assets.join(format!("{name}.tar.gz"))
}

/// `sh install.sh ARGS` with nothing of the caller's environment but PATH,
/// `HOME` in `ws`, the release at `base` and this machine as
/// Linux/x86_64 unless `env` says otherwise.
fn install_sh(ws: &Workspace, base: &Path, args: &[&str], env: &[(&str, &str)]) -> Output {
    Command::new("sh")
        .arg(repo_file("install.sh"))
        .args(args)
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", ws.home())
        .env("LEASH_INSTALL_BASE", format!("file://{}", base.display()))
        .env("LEASH_INSTALL_OS", "Linux")
        .env("LEASH_INSTALL_ARCH", "x86_64")
        .envs(env.iter().copied())
        .current_dir(ws.dir.path())
        .output()
        .unwrap()
}

pub(crate) fn version_of(bin: &Path) -> String {
    let output = Command::new(bin).arg("--version").output().unwrap();
    assert!(output.status.success(), "{output:?}");
    stdout(&output).trim().to_owned()
}

#[test]
fn install_sh_installs_a_checked_release_to_the_directory_asked_for() {
    let ws = Workspace::new();
    let base = ws.path("release");
    release(&base);

    // The latest release, to --to DIR (created).
    let to = ws.path("tools/bin");
    let output = install_sh(&ws, &base, &["--to", to.to_str().unwrap()], &[]);
    assert_eq!(output.status.code(), Some(0), "{output:?}");
    assert_eq!(version_of(&to.join("leash")), format!("leash {VERSION}"));
    assert!(
        stdout(&output).starts_with(&format!("leash v{VERSION} ({TARGET}) installed to ")),
        "{output:?}"
    );
    assert_eq!(stderr(&output), "");

    // A pinned version (the leading v is optional), to ~/.local/bin by
    // default, and again over the binary already there.
    for pin in [format!("v{VERSION}"), VERSION.to_owned()] {
        let output = install_sh(&ws, &base, &["--version", &pin], &[]);
        assert_eq!(output.status.code(), Some(0), "{output:?}");
        let bin = ws.home().join(".local/bin/leash");
        assert_eq!(version_of(&bin), format!("leash {VERSION}"));
        assert!(
            stdout(&output).contains("is not on your PATH"),
            "{output:?}"
        );
    }
    // LEASH_VERSION pins too: a release that does not exist is an error
    // naming the URL.
    let output = install_sh(&ws, &base, &[], &[("LEASH_VERSION", "v9.9.9")]);
    assert_eq!(output.status.code(), Some(1), "{output:?}");
    let err = stderr(&output);
    assert!(err.starts_with("leash: cannot download file://"), "{err}");
    assert!(err.contains("/download/v9.9.9/"), "{err}");
}

#[test]
fn install_sh_refuses_a_download_that_does_not_match_its_checksum() {
    let ws = Workspace::new();
    let base = ws.path("release");
    let archive = release(&base);
    // One byte of the archive changed after its checksum was taken.
    let mut bytes = std::fs::read(&archive).unwrap();
    let last = bytes.len() - 1;
    bytes[last] ^= 0xff;
    std::fs::write(&archive, bytes).unwrap();

    let to = ws.path("bin");
    let output = install_sh(&ws, &base, &["--to", to.to_str().unwrap()], &[]);
    assert_eq!(output.status.code(), Some(1), "{output:?}");
    let err = stderr(&output);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.starts_with(&format!(
            "leash: checksum mismatch for leash-{VERSION}-{TARGET}.tar.gz: expected "
        )),
        "{err}"
    );
    assert!(err.trim_end().ends_with("; nothing installed"), "{err}");
    assert!(!to.exists(), "a refused download created {}", to.display());
    assert_eq!(stdout(&output), "");
}

/// Variables set for one run.
type Env<'a> = &'a [(&'a str, &'a str)];

#[test]
fn install_sh_names_an_os_or_cpu_it_has_no_build_for_and_a_bad_option() {
    let ws = Workspace::new();
    let base = ws.path("release"); // never reached
    let cases: [(Env, &[&str], &str); 6] = [
        (
            &[("LEASH_INSTALL_ARCH", "riscv64")],
            &[],
            "leash: no prebuilt leash for CPU 'riscv64' (x86_64 and aarch64 are built); install from source: cargo install --locked --git ",
        ),
        (
            &[("LEASH_INSTALL_OS", "FreeBSD")],
            &[],
            "leash: no prebuilt leash for OS 'FreeBSD' (Linux and macOS are built); install from source: cargo install --locked --git ",
        ),
        (
            &[],
            &["--sudo", "--bogus"],
            "leash: unknown option '--bogus'",
        ),
        (
            &[],
            &["--version", "main"],
            "leash: 'main' is not a version",
        ),
        // A version becomes a URL and a path: no `/`, no line break.
        (
            &[],
            &["--version", "v1.2.3/../../x"],
            "leash: 'v1.2.3/../../x' is not a version",
        ),
        (
            &[("LEASH_VERSION", "v1.2.3\nx")],
            &[],
            "leash: 'v1.2.3?x' is not a version",
        ),
    ];
    for (env, args, expected) in cases {
        let output = install_sh(&ws, &base, args, env);
        assert_eq!(output.status.code(), Some(2), "{args:?} {output:?}");
        let err = stderr(&output);
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(err.starts_with(expected), "{err}");
        assert!(!ws.home().join(".local").exists());
    }
}

#[test]
fn the_repository_is_named_once_and_everywhere_the_same() {
    let cargo = std::fs::read_to_string(repo_file("Cargo.toml")).unwrap();
    let repository = cargo
        .lines()
        .find_map(|line| line.strip_prefix("repository = \""))
        .and_then(|rest| rest.strip_suffix('"'))
        .expect("Cargo.toml names its repository");
    let install = std::fs::read_to_string(repo_file("install.sh")).unwrap();
    assert!(
        install.contains(&format!("\nREPOSITORY={repository}\n")),
        "install.sh names another repository"
    );
    let readme = std::fs::read_to_string(repo_file("README.md")).unwrap();
    let first_screen: String = readme.lines().take(25).collect::<Vec<_>>().join("\n");
    let raw = repository.replace("https://github.com/", "https://raw.githubusercontent.com/");
    assert!(
        first_screen.contains(&format!("curl -fsSL {raw}/main/install.sh | sh")),
        "{first_screen}"
    );
    assert!(
        first_screen.contains(&format!("cargo install --locked --git {repository}")),
        "{first_screen}"
    );
    assert!(first_screen.contains("make demo") && first_screen.contains("make test"));
    let action = repository.trim_start_matches("https://github.com/");
    assert!(
        readme.contains(&format!("uses: {action}@v{VERSION}")),
        "the README's Actions recipe uses another action"
    );
}

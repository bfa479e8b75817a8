//! The toolchains as developers and runners lay them out, each through
//! the real binary on the scripted model, confined (docs/src/tools.md
//! "Toolchains"): a poetry venv in the home, nvm's Node running
//! `npm test`, rustup and cargo homes outside both the home and the
//! system. Each layout is built from this machine's own toolchains
//! (hard links or copies), so nothing is downloaded.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use serde_json::json;

use super::{Parent, closed_to_the_stranger, confinable, texts};

/// The box opened to other users (tempfile makes it 0700), as a
/// checkout's parent usually is: a footing where commands run as a
/// stranger's uid can then enter it.
fn open_to_others(parent: &Parent) {
    std::fs::set_permissions(parent.path(""), std::fs::Permissions::from_mode(0o755)).unwrap();
}

/// `program`'s real path on `PATH`, if there is one.
fn real_program(program: &str) -> Option<PathBuf> {
    std::env::split_paths(&std::env::var_os("PATH")?)
        .map(|dir| dir.join(program))
        .find(|path| path.is_file())
        .and_then(|path| path.canonicalize().ok())
}

/// `cp -al` (hard links, one file system) else `cp -a`.
fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to.parent().unwrap()).unwrap();
    let linked = Command::new("cp")
        .arg("-al")
        .arg(from)
        .arg(to)
        .status()
        .unwrap();
    if !linked.success() {
        let _ = std::fs::remove_dir_all(to);
        let copied = Command::new("cp")
            .arg("-a")
            .arg(from)
            .arg(to)
            .status()
            .unwrap();
        assert!(copied.success(), "cannot copy {}", from.display());
    }
}

#[test]
fn a_poetry_venv_in_the_home_runs_the_project_s_tests() {
    if !confinable() || closed_to_the_stranger("python3") {
        return;
    }
    let parent = Parent::new();
    open_to_others(&parent);
    // poetry's layout: ~/.cache/pypoetry/virtualenvs/NAME-HASH-pyX.Y,
    // built as poetry builds it (a venv of the operator's Python).
    let venv = parent.path("home/.cache/pypoetry/virtualenvs/fixme-Xy12AbCd-py3");
    let built = Command::new("python3")
        .args(["-m", "venv", "--without-pip"])
        .arg(&venv)
        .output()
        .unwrap();
    assert!(
        built.status.success(),
        "{}",
        String::from_utf8_lossy(&built.stderr)
    );
    std::fs::write(
        parent.path("root/test_answer.py"),
        "import sys, unittest\n\
         class T(unittest.TestCase):\n    \
             def test_in_the_venv(self):\n        \
                 print('PREFIX', sys.prefix)\n        \
                 self.assertNotEqual(sys.prefix, sys.base_prefix)\n",
    )
    .unwrap();
    let python = venv.join("bin/python");
    let outcome = parent
        .run(&[json!({
            "command": format!("{} -m unittest -v 2>&1", python.display()),
            "timeout": 60
        })])
        .output();
    assert_eq!(outcome.code(), Some(0), "{}", outcome.stderr());
    let text = &texts(&outcome)[0];
    assert!(
        text.contains("test_in_the_venv") && text.contains("OK"),
        "{text}"
    );
    assert!(
        text.contains(&format!("PREFIX {}", venv.display())),
        "{text}"
    );
    // The grant is the venv directory of poetry, named as such.
    assert!(
        outcome.stderr().contains("pypoetry/virtualenvs"),
        "{}",
        outcome.stderr()
    );
}

#[test]
fn nvm_s_node_runs_npm_test_and_not_the_system_s_node() {
    let (Some(node), Some(npm_cli)) = (real_program("node"), real_program("npm")) else {
        // `make test` needs them already (make prereqs: the MCP servers).
        assert!(
            std::env::var_os("CI").is_none(),
            "CI=true: no node and npm on PATH"
        );
        eprintln!("NOT RUN (no node and npm on PATH)");
        return;
    };
    if !confinable() {
        return;
    }
    let parent = Parent::new();
    open_to_others(&parent);
    // nvm's layout: $NVM_DIR/versions/node/vX/{bin/node, bin/npm,
    // lib/node_modules/npm}, NVM_DIR left to its default, ~/.nvm.
    let version = Command::new(&node).arg("--version").output().unwrap();
    let version = String::from_utf8_lossy(&version.stdout).trim().to_owned();
    let prefix = parent.path(&format!("home/.nvm/versions/node/{version}"));
    std::fs::create_dir_all(prefix.join("bin")).unwrap();
    if std::fs::hard_link(&node, prefix.join("bin/node")).is_err() {
        std::fs::copy(&node, prefix.join("bin/node")).unwrap();
    }
    // npm-cli.js is in the npm package's bin/.
    let npm_package = npm_cli.parent().unwrap().parent().unwrap();
    copy_tree(npm_package, &prefix.join("lib/node_modules/npm"));
    std::os::unix::fs::symlink(
        "../lib/node_modules/npm/bin/npm-cli.js",
        prefix.join("bin/npm"),
    )
    .unwrap();
    std::fs::write(
        parent.path("root/package.json"),
        r#"{"name": "fixme", "version": "1.0.0", "scripts": {"test": "node test.js"}}"#,
    )
    .unwrap();
    std::fs::write(
        parent.path("root/test.js"),
        "console.log('NODE', process.execPath);\n\
         require('assert').strictEqual(1 + 1, 2);\n\
         console.log('TESTS PASSED');\n",
    )
    .unwrap();
    // nvm puts its bin first; the system's node stays on PATH after it.
    let path = format!(
        "{}:{}",
        prefix.join("bin").display(),
        std::env::var("PATH").unwrap()
    );
    let outcome = parent
        .run(&[json!({"command": "npm test 2>&1 | tail -8", "timeout": 120})])
        .env("PATH", &path)
        .timeout(Duration::from_secs(180))
        .output();
    assert_eq!(outcome.code(), Some(0), "{}", outcome.stderr());
    let text = &texts(&outcome)[0];
    assert!(text.contains("TESTS PASSED"), "{text}");
    assert!(
        text.contains(&format!("NODE {}", prefix.join("bin/node").display())),
        "not nvm's node: {text}"
    );
    assert!(text.contains("[exit 0 "), "{text}");
}

#[test]
fn rust_with_rustup_and_cargo_homes_elsewhere_tests_a_crate_with_a_dependency() {
    let Some(rustup) = real_program("rustup") else {
        eprintln!("NOT RUN (no rustup on PATH: a Rust installed without it)");
        return;
    };
    if !confinable() {
        return;
    }
    let sysroot = Command::new("rustc")
        .args(["--print", "sysroot"])
        .output()
        .unwrap();
    let sysroot = PathBuf::from(String::from_utf8_lossy(&sysroot.stdout).trim());
    let toolchain = sysroot.file_name().unwrap().to_owned();
    let real_cargo_home = real_program("cargo")
        .and_then(|_| std::env::var_os("CARGO_HOME").map(PathBuf::from))
        .unwrap_or_else(|| PathBuf::from(std::env::var_os("HOME").unwrap()).join(".cargo"));
    // Outside the home and the system's directories, on the file system of
    // the build (hard links): what the official image's /usr/local/rustup
    // is, where leash grants nothing by default.
    let elsewhere = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    std::fs::set_permissions(elsewhere.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let rustup_home = elsewhere.path().join("rustup");
    let cargo_home = elsewhere.path().join("cargo");
    for part in ["bin", "lib", "libexec", "etc"] {
        if sysroot.join(part).exists() {
            copy_tree(
                &sysroot.join(part),
                &rustup_home.join("toolchains").join(&toolchain).join(part),
            );
        }
    }
    std::fs::write(
        rustup_home.join("settings.toml"),
        format!(
            "version = \"12\"\ndefault_toolchain = \"{}\"\nprofile = \"minimal\"\n",
            toolchain.to_string_lossy()
        ),
    )
    .unwrap();
    std::fs::create_dir_all(cargo_home.join("bin")).unwrap();
    std::fs::copy(&rustup, cargo_home.join("bin/rustup")).unwrap();
    for proxy in ["cargo", "rustc"] {
        std::os::unix::fs::symlink("rustup", cargo_home.join("bin").join(proxy)).unwrap();
    }
    for part in ["index", "cache"] {
        copy_tree(
            &real_cargo_home.join("registry").join(part),
            &cargo_home.join("registry").join(part),
        );
    }
    let parent = Parent::new();
    open_to_others(&parent);
    let root = parent.path("root");
    std::fs::create_dir(root.join("src")).unwrap();
    std::fs::write(
        root.join("Cargo.toml"),
        format!(
            "[package]\nname = \"fixme\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n\
             [dependencies]\nitoa = \"={}\"\n",
            super::toolchains::locked_version("itoa")
        ),
    )
    .unwrap();
    std::fs::write(
        root.join("src/lib.rs"),
        "pub fn show(n: u32) -> String { itoa::Buffer::new().format(n).to_owned() }\n\
         #[test]\nfn shows() { assert_eq!(show(42), \"42\"); }\n",
    )
    .unwrap();
    // PATH without the machine's own cargo: only the homes elsewhere.
    let path = std::env::split_paths(&std::env::var_os("PATH").unwrap())
        .filter(|dir| !dir.join("cargo").exists() && !dir.join("rustup").exists())
        .fold(cargo_home.join("bin").into_os_string(), |mut path, dir| {
            path.push(":");
            path.push(dir);
            path
        });
    let homes = [
        ("RUSTUP_HOME", rustup_home.as_os_str()),
        ("CARGO_HOME", cargo_home.as_os_str()),
        ("PATH", path.as_os_str()),
    ];
    // The step before leash: the dependency fetched into that cargo home.
    let fetched = Command::new("cargo")
        .args(["fetch", "--offline"])
        .current_dir(&root)
        .envs(homes)
        .output()
        .unwrap();
    assert!(
        fetched.status.success(),
        "{}",
        String::from_utf8_lossy(&fetched.stderr)
    );
    let outcome = parent
        .run(&[json!({"command": "cargo test --lib 2>&1 | tail -4", "timeout": 300})])
        .envs(homes)
        .timeout(Duration::from_secs(400))
        .output();
    assert_eq!(outcome.code(), Some(0), "{}", outcome.stderr());
    let text = &texts(&outcome)[0];
    assert!(text.contains("test result: ok. 1 passed"), "{text}");
    let stderr = outcome.stderr();
    assert!(
        stderr.contains(&format!(
            "{} (RUSTUP_HOME)",
            rustup_home.canonicalize().unwrap().display()
        )),
        "{stderr}"
    );
}

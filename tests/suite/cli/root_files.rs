//! The repository's root holds the project's own files and nothing else
//! (ARCHITECTURE.md "Crates"; CONTRIBUTING.md): a scratch file from a merge,
//! a probe script or a stray notes file is refused here, by name.

use std::collections::BTreeSet;
use std::process::Command;

/// Every name `git ls-files` may show at the root: the build, the
/// sources, the documents, and the files CI and the Action read.
const ROOT: &[&str] = &[
    ".ci",
    ".clusterfuzzlite",
    ".github",
    ".gitignore",
    "ARCHITECTURE.md",
    "CHANGELOG.md",
    "CONTRIBUTING.md",
    "Cargo.lock",
    "Cargo.toml",
    "LICENSE",
    "Makefile",
    "README.md",
    "SECURITY.md",
    "action",
    "action.yml",
    "benches",
    "clippy.toml",
    "crates",
    "docs",
    "fixtures",
    "fuzz",
    "install.sh",
    "src",
    "tests",
];

#[test]
fn the_root_holds_only_the_projects_own_files() {
    let listed = Command::new("git")
        .args(["ls-files", "-z"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("git lists the checkout's files");
    assert!(listed.status.success(), "git ls-files failed");
    let tops: BTreeSet<String> = listed
        .stdout
        .split(|byte| *byte == 0)
        .filter(|path| !path.is_empty())
        .map(|path| {
            let path = String::from_utf8_lossy(path);
            path.split('/').next().unwrap_or_default().to_owned()
        })
        .collect();
    let allowed: BTreeSet<String> = ROOT.iter().map(|name| (*name).to_owned()).collect();
    let stray: Vec<&String> = tops.difference(&allowed).collect();
    assert!(
        stray.is_empty(),
        "not the project's own files, at the root: {stray:?} (move them, or name them in this test)"
    );
    for name in [
        "src",
        "crates",
        "tests",
        "Cargo.toml",
        "README.md",
        "LICENSE",
    ] {
        assert!(tops.contains(name), "{name} is missing from the root");
    }
}

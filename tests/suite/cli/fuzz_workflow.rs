//! A pull request that changes code the fuzz targets build runs
//! ClusterFuzzLite (docs/src/fuzzing.md "The engine"): every source file
//! of every package of the workspace (the fuzz crate builds `leash`, which
//! builds them all), the fuzz crate's own, and both lock files match a
//! `paths:` filter of `cflite_pr.yml`. A crate moved or added outside the
//! filters would silently stop being fuzzed on change.

use std::path::Path;
use std::process::Command;

use serde_json::Value;

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// The `paths:` filters of the workflow's `pull_request` trigger.
fn triggers() -> Vec<String> {
    let workflow = std::fs::read_to_string(root().join(".github/workflows/cflite_pr.yml"))
        .expect("cflite_pr.yml reads");
    workflow
        .lines()
        .skip_while(|line| line.trim() != "paths:")
        .skip(1)
        .map_while(|line| line.trim().strip_prefix("- "))
        .map(|glob| glob.trim_matches('"').to_owned())
        .collect()
}

/// Whether `path` (relative to the root) matches `glob`: the workflow's
/// filters are a file's name or `DIR/**`.
fn matches(glob: &str, path: &str) -> bool {
    match glob.strip_suffix("/**") {
        Some(dir) => path.starts_with(&format!("{dir}/")),
        None => {
            assert!(
                !glob.contains('*'),
                "a filter this test cannot read: {glob}"
            );
            glob == path
        }
    }
}

/// The files of the packages a manifest's workspace holds, as cargo builds
/// them: each package's manifest and every tracked file under the folder
/// of each of its library, binary and build-script targets.
fn workspace_sources(manifest: &str) -> Vec<String> {
    let metadata = Command::new(env!("CARGO"))
        .args([
            "metadata",
            "--format-version",
            "1",
            "--no-deps",
            "--offline",
        ])
        .args(["--manifest-path", manifest])
        .current_dir(root())
        .output()
        .expect("cargo metadata runs");
    assert!(
        metadata.status.success(),
        "cargo metadata: {}",
        String::from_utf8_lossy(&metadata.stderr)
    );
    let metadata: Value = serde_json::from_slice(&metadata.stdout).unwrap();
    let root = root().canonicalize().unwrap();
    let relative = |path: &str| -> String {
        let path = Path::new(path).canonicalize().unwrap();
        let path = path.strip_prefix(&root).unwrap();
        path.to_string_lossy().into_owned()
    };
    let mut files = Vec::new();
    let mut folders = std::collections::BTreeSet::new();
    for package in metadata["packages"].as_array().unwrap() {
        files.push(relative(package["manifest_path"].as_str().unwrap()));
        for target in package["targets"].as_array().unwrap() {
            let built = target["kind"].as_array().unwrap().iter().any(|kind| {
                matches!(
                    kind.as_str(),
                    Some("lib" | "rlib" | "bin" | "proc-macro" | "custom-build")
                )
            });
            if built {
                let src = Path::new(target["src_path"].as_str().unwrap());
                folders.insert(relative(src.parent().unwrap().to_str().unwrap()));
            }
        }
    }
    // One listing for all the folders: the 18 fuzz binaries share one.
    let listed = Command::new("git")
        .args(["ls-files", "-z", "--"])
        .args(&folders)
        .current_dir(&root)
        .output()
        .expect("git lists the folders");
    assert!(listed.status.success(), "git ls-files failed");
    files.extend(
        listed
            .stdout
            .split(|byte| *byte == 0)
            .filter(|path| !path.is_empty())
            .map(|path| String::from_utf8_lossy(path).into_owned()),
    );
    files
}

/// The files cargo builds the fuzz targets from, in this repository.
fn fuzzed_sources() -> Vec<String> {
    let mut files = vec!["Cargo.lock".to_owned(), "fuzz/Cargo.lock".to_owned()];
    files.extend(workspace_sources("Cargo.toml"));
    files.extend(workspace_sources("fuzz/Cargo.toml"));
    files.sort();
    files.dedup();
    files
}

#[test]
fn every_file_the_fuzz_targets_build_from_triggers_the_pull_request_run() {
    let triggers = triggers();
    assert!(
        triggers.iter().any(|glob| glob == "fuzz/**"),
        "the filters were not read: {triggers:?}"
    );
    let sources = fuzzed_sources();
    assert!(
        sources
            .iter()
            .any(|path| path.starts_with("crates/agent/src/")),
        "the workspace's crates were not listed: {sources:?}"
    );
    let missed: Vec<&String> = sources
        .iter()
        .filter(|path| !triggers.iter().any(|glob| matches(glob, path)))
        .collect();
    assert!(
        missed.is_empty(),
        "cflite_pr.yml's paths miss files the fuzz targets build from: {missed:?}"
    );
}

#[test]
fn a_filter_matches_its_folder_and_its_file_only() {
    assert!(matches("crates/**", "crates/agent/src/lib.rs"));
    assert!(!matches("crates/**", "crates.toml"));
    assert!(matches("Cargo.lock", "Cargo.lock"));
    assert!(!matches("Cargo.lock", "fuzz/Cargo.lock"));
}

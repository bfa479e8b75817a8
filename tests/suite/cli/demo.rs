//! `make demo` (README "Quick start"): the seed task's reply alone on
//! stdout, then on stderr where the binary is and the one line that puts
//! it on the PATH, since every recipe after it calls `leash`. Run as
//! written, with `CARGO=true` (the test's leash is built already) and
//! `CARGO_TARGET_DIR` pointing at a directory that holds it.

use std::path::Path;
use std::process::Command;

use crate::support::run::isolate;
use crate::support::shell::has;

#[test]
fn make_demo_ends_by_saying_where_leash_is_and_how_to_put_it_on_the_path() {
    assert!(has("make"), "make demo needs make");
    let target = tempfile::tempdir().unwrap();
    let debug = target.path().join("debug");
    std::fs::create_dir(&debug).unwrap();
    std::os::unix::fs::symlink(crate::support::run::bin(), debug.join("leash")).unwrap();
    let repo = Path::new(env!("CARGO_MANIFEST_DIR"));
    let home = target.path().join("home");
    let mut make = Command::new("make");
    make.args(["-s", "--no-print-directory", "demo", "CARGO=true"])
        .current_dir(repo)
        .env("CARGO_TARGET_DIR", target.path());
    isolate(&mut make, &home, &home.join(".config"));
    // Not the jobserver of a `make test` this runs under.
    for name in ["MAKEFLAGS", "MFLAGS", "MAKELEVEL"] {
        make.env_remove(name);
    }
    let output = make.output().unwrap();
    let stderr = String::from_utf8(output.stderr).unwrap();
    assert_eq!(output.status.code(), Some(0), "{stderr}");

    // stdout: the reply alone, as a pipe after `make -s demo` reads it.
    let script: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(repo.join("fixtures/demo.json")).unwrap())
            .unwrap();
    let reply = script["responses"][1]["text"].as_str().unwrap();
    assert_eq!(
        String::from_utf8(output.stdout).unwrap(),
        format!("{reply}\n")
    );

    // stderr ends with where it is and the line that puts it on the PATH.
    let lines: Vec<&str> = stderr.lines().collect();
    let bin = debug.join("leash");
    let dir = debug.display().to_string();
    assert_eq!(
        lines[lines.len() - 2..],
        [
            format!(
                "make: leash is {}; to type `leash` in this shell, run:",
                bin.display()
            ),
            format!("  export PATH=\"{dir}:$PATH\""),
        ],
        "{stderr}"
    );
    // The line does what it says: after it, `leash` is that binary.
    let found = Command::new("bash")
        .args(["--noprofile", "--norc", "-c"])
        .arg(format!(
            "{}; command -v leash",
            lines[lines.len() - 1].trim()
        ))
        .env("PATH", "/usr/bin:/bin")
        .output()
        .unwrap();
    assert_eq!(
        String::from_utf8(found.stdout).unwrap().trim(),
        bin.display().to_string()
    );
}

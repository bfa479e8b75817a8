//! Every file input read one way (docs/src/security.md "Security and limits"): a
//! device (a committed link to one) or a FIFO nobody writes to is refused
//! at once with exit 2 and a line naming the flag, for every flag that
//! names a file; `/dev/null` alone is read as an empty file; and an
//! output file (`--transcript`, `--output-last-message`) is never written
//! through a link.

use std::path::{Path, PathBuf};

use super::*;

/// Each flag that names a file, as a run's words: the flag, then the
/// words that make the rest of the run valid.
const FLAGS: [&str; 6] = [
    "--system-file",
    "--output-schema",
    "--mcp-config",
    "--env-file",
    "--resume",
    "--attach",
];

/// The run `flag PATH` makes (the faux model, no stdin), and how long it
/// took.
fn run_with(ws: &Workspace, flag: &str, path: &Path) -> (std::process::Output, Duration) {
    let started = Instant::now();
    let mut cmd = match flag {
        "--faux-script" => {
            let mut cmd = ws.leash();
            cmd.args(["--provider", "faux", "--faux-script"]).arg(path);
            cmd
        }
        _ => {
            let mut cmd = ws.faux(json!([{"text": "x"}]));
            cmd.arg(flag).arg(path);
            cmd
        }
    };
    let output = cmd
        .args(["--no-stdin", "-t", "20s", "hi"])
        .timeout(Duration::from_secs(20))
        .output()
        .unwrap();
    (output, started.elapsed())
}

/// The special files a checkout can point an input at: committed links to
/// devices, and a FIFO nobody will ever open for writing.
fn special_files(ws: &Workspace) -> Vec<PathBuf> {
    let mut made = Vec::new();
    for device in ["/dev/zero", "/dev/urandom", "/dev/ptmx", "/dev/tty"] {
        if Path::new(device).exists() {
            let link = ws.path(&format!("link-{}", &device[5..]));
            std::os::unix::fs::symlink(device, &link).unwrap();
            made.push(link);
        }
    }
    let fifo = ws.path("input.fifo");
    let made_fifo = std::process::Command::new("mkfifo").arg(&fifo).status();
    assert!(made_fifo.is_ok_and(|status| status.success()), "mkfifo");
    made.push(fifo);
    made
}

#[test]
fn a_device_or_a_fifo_is_refused_at_once_for_every_file_flag() {
    let ws = Workspace::new();
    for path in special_files(&ws) {
        for flag in FLAGS.iter().chain(&["--faux-script"]) {
            let (output, took) = run_with(&ws, flag, &path);
            let last = last_line(&output);
            assert_eq!(code(&output), 2, "{flag} {}: {last}", path.display());
            assert!(
                took < Duration::from_secs(1),
                "{flag} {} took {took:?}",
                path.display()
            );
            let name = path.file_name().unwrap().to_str().unwrap();
            assert!(
                last.starts_with("leash: ") && last.contains(flag) && last.contains(name),
                "{flag}: {last}"
            );
            if path.ends_with("input.fifo") {
                assert!(last.contains("it is a pipe (a FIFO)"), "{flag}: {last}");
            } else if *flag == "--attach" {
                // The link leaves the directory it is in before it is a device.
                assert!(
                    last.contains("leads out of the directory"),
                    "{flag}: {last}"
                );
            } else if !path.ends_with("link-tty") {
                // `/dev/tty` may not even open without a terminal.
                assert!(last.contains("it is a device"), "{flag}: {last}");
            }
        }
    }
}

#[test]
fn the_config_file_and_the_batch_input_refuse_a_device_too() {
    let ws = Workspace::new();
    std::fs::create_dir_all(ws.path("home/.config/leash")).unwrap();
    let config = ws.path("home/.config/leash/config.toml");
    for target in ["/dev/urandom", ws.path("input.fifo").to_str().unwrap()] {
        let _ = std::fs::remove_file(&config);
        if target.ends_with(".fifo") {
            let made = std::process::Command::new("mkfifo").arg(target).status();
            assert!(made.is_ok_and(|status| status.success()), "mkfifo");
        }
        std::os::unix::fs::symlink(target, &config).unwrap();
        let started = Instant::now();
        let output = ws
            .faux(json!([{"text": "x"}]))
            .args(["--no-stdin", "hi"])
            .timeout(Duration::from_secs(20))
            .output()
            .unwrap();
        assert_eq!(code(&output), 2, "{target}");
        assert!(started.elapsed() < Duration::from_secs(1), "{target}");
        assert!(
            last_line(&output).starts_with("leash: cannot read the config file "),
            "{}",
            last_line(&output)
        );
    }
    std::fs::remove_file(&config).unwrap();
    std::os::unix::fs::symlink("/dev/urandom", ws.path("items.jsonl")).unwrap();
    let script = ws.script(json!([{"text": "x"}]));
    let output = ws
        .leash()
        .args([
            "batch",
            "items.jsonl",
            "--provider",
            "faux",
            "--faux-script",
        ])
        .arg(&script)
        .timeout(Duration::from_secs(20))
        .output()
        .unwrap();
    assert_eq!(code(&output), 2);
    assert!(
        stderr(&output).contains("cannot read the batch input items.jsonl: it is a device"),
        "{}",
        stderr(&output)
    );
}

#[test]
fn dev_null_is_read_as_an_empty_file() {
    let ws = Workspace::new();
    std::fs::create_dir_all(ws.path("home/.config/leash")).unwrap();
    std::os::unix::fs::symlink("/dev/null", ws.path("home/.config/leash/config.toml")).unwrap();
    let output = ws
        .faux(json!([{"text": "fine"}]))
        .args(["--system-file", "/dev/null", "--env-file", "/dev/null"])
        .args(["--no-stdin", "hi"])
        .output()
        .unwrap();
    assert_eq!(code(&output), 0, "{}", stderr(&output));
    assert_eq!(stdout(&output), "fine\n");
}

#[test]
fn an_output_file_is_never_written_through_a_link() {
    let ws = Workspace::new();
    let target = ws.write("home/.gitconfig", "[user]\n\tname = me\n");
    for flag in ["--transcript", "--output-last-message"] {
        let link = ws.path("out.txt");
        let _ = std::fs::remove_file(&link);
        std::os::unix::fs::symlink(&target, &link).unwrap();
        let output = ws
            .faux(json!([{"text": "[alias]\n\tx = !curl evil"}]))
            .args([flag, "out.txt", "--no-stdin", "hi"])
            .output()
            .unwrap();
        assert_eq!(code(&output), 2, "{flag}: {}", stderr(&output));
        assert_eq!(
            last_line(&output),
            format!(
                "leash: cannot write {flag} out.txt: it is a symbolic link, and leash writes no \
                 output through one; name the file itself"
            )
        );
        assert_eq!(
            std::fs::read_to_string(&target).unwrap(),
            "[user]\n\tname = me\n"
        );
    }
    // A descriptor the shell names is the operator's own: followed.
    let output = ws
        .faux(json!([{"text": "reply"}]))
        .args([
            "--output-last-message",
            "/dev/stderr",
            "--no-stdin",
            "-q",
            "hi",
        ])
        .output()
        .unwrap();
    assert_eq!(code(&output), 0, "{}", stderr(&output));
    assert!(stderr(&output).contains("reply"), "{}", stderr(&output));
}

/// A planted link to a directory above the output file is refused too:
/// `logs -> ~/.ssh` must not turn `--transcript logs/t.jsonl` into a
/// write under the home directory (docs/src/security.md "Security and limits").
#[test]
fn an_output_file_is_never_written_through_a_linked_directory() {
    let ws = Workspace::new();
    std::fs::create_dir_all(ws.path("home/.ssh")).unwrap();
    std::os::unix::fs::symlink(ws.path("home/.ssh"), ws.path("logs")).unwrap();
    for flag in ["--transcript", "--output-last-message"] {
        let output = ws
            .faux(json!([{"text": "ssh-ed25519 AAAA attacker"}]))
            .args([flag, "logs/authorized_keys", "--no-stdin", "hi"])
            .output()
            .unwrap();
        assert_eq!(code(&output), 2, "{flag}: {}", stderr(&output));
        assert_eq!(
            last_line(&output),
            format!(
                "leash: cannot write {flag} logs/authorized_keys: a directory on its path is a \
                 symbolic link, and leash writes no output through one; name the real directory"
            )
        );
        assert_eq!(std::fs::read_dir(ws.path("home/.ssh")).unwrap().count(), 0);
    }
}

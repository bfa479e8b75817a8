//! The escape suite's file, network and key rules: each command below
//! succeeds on an unconfined shell (run as root, as CI runs), so each test
//! fails if its rule does not hold.

use std::io::ErrorKind;
use std::net::TcpListener;

use serde_json::json;

use super::{BESIDE, HOME_SECRET, Parent, command, confinable, details, read, texts};

/// Runs `commands` and checks the run ended well and wrote nothing
/// outside; returns their results' texts.
fn run_in(parent: &Parent, commands: &[&str]) -> Vec<String> {
    let commands: Vec<_> = commands.iter().map(|text| command(text)).collect();
    let outcome = parent.run(&commands).output();
    assert_eq!(outcome.code(), Some(0), "{}", outcome.stderr());
    assert_eq!(read(&parent.path("beside.txt")).as_deref(), Some(BESIDE));
    texts(&outcome)
}

#[test]
fn a_write_by_absolute_path_outside_the_root_is_refused() {
    if !confinable() {
        return;
    }
    let parent = Parent::new();
    let target = parent.path("absolute.txt");
    let texts = run_in(
        &parent,
        &[&format!(
            "echo x > {}; echo inside > inside.txt",
            target.display()
        )],
    );
    // Landlock's EACCES, or EROFS where a private mount namespace made
    // everything outside read-only first.
    assert!(
        texts[0].contains("Permission denied") || texts[0].contains("Read-only file system"),
        "{}",
        texts[0]
    );
    assert_eq!(read(&target), None, "written outside the root");
    // The control: the same command writes under the root.
    assert_eq!(
        read(&parent.path("root/inside.txt")).as_deref(),
        Some("inside\n")
    );
}

#[test]
fn a_write_through_dot_dot_is_refused() {
    if !confinable() {
        return;
    }
    let parent = Parent::new();
    run_in(
        &parent,
        &["echo x > ../dotdot.txt; echo y >> ../beside.txt"],
    );
    assert_eq!(read(&parent.path("dotdot.txt")), None);
}

#[test]
fn a_write_through_a_symlink_out_of_the_root_is_refused() {
    if !confinable() {
        return;
    }
    let parent = Parent::new();
    let texts = run_in(
        &parent,
        &["ln -s .. up && echo x > up/linked.txt; echo y >> up/beside.txt; ls -l up"],
    );
    assert!(
        texts[0].contains("up -> .."),
        "the link was made: {}",
        texts[0]
    );
    assert_eq!(read(&parent.path("linked.txt")), None);
}

#[test]
fn a_hard_link_to_a_file_outside_cannot_be_made_or_written() {
    if !confinable() {
        return;
    }
    let parent = Parent::new();
    let texts = run_in(
        &parent,
        &["ln ../beside.txt hard.txt; echo changed >> hard.txt"],
    );
    assert!(
        texts[0].contains("ln: failed") || texts[0].contains("Permission denied"),
        "{}",
        texts[0]
    );
}

#[test]
fn a_write_through_proc_self_cwd_is_refused() {
    if !confinable() {
        return;
    }
    let parent = Parent::new();
    run_in(
        &parent,
        &["echo x > /proc/self/cwd/../procwd.txt; echo ok > /proc/self/cwd/in.txt"],
    );
    assert_eq!(read(&parent.path("procwd.txt")), None);
    assert_eq!(read(&parent.path("root/in.txt")).as_deref(), Some("ok\n"));
}

#[test]
fn home_and_a_file_beside_the_root_cannot_be_read() {
    if !confinable() {
        return;
    }
    let parent = Parent::new();
    let home = parent.path("home");
    let texts = run_in(
        &parent,
        &[&format!(
            "cat {}/secret.txt; ls {}; cat ../beside.txt; echo \"HOME=$HOME\"",
            home.display(),
            home.display()
        )],
    );
    assert!(!texts[0].contains(HOME_SECRET), "{}", texts[0]);
    assert!(!texts[0].contains(BESIDE), "{}", texts[0]);
    assert_eq!(
        texts[0].matches("Permission denied").count(),
        3,
        "{}",
        texts[0]
    );
    // HOME is the private temporary directory, not the operator's.
    assert!(
        !texts[0].contains(&format!("HOME={}", home.display())),
        "{}",
        texts[0]
    );
}

#[test]
fn a_loopback_listener_sees_no_connection() {
    if !confinable() {
        return;
    }
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let parent = Parent::new();
    let texts = run_in(
        &parent,
        &[&format!(
            "exec 3<>/dev/tcp/127.0.0.1/{port} && echo CONNECTED; \
             command -v curl >/dev/null && curl -sS -m 2 http://127.0.0.1:{port}/ ; true"
        )],
    );
    assert!(!texts[0].contains("CONNECTED"), "{}", texts[0]);
    listener.set_nonblocking(true).unwrap();
    match listener.accept() {
        Err(error) if error.kind() == ErrorKind::WouldBlock => {}
        other => panic!("the listener saw a connection: {other:?}"),
    }
}

#[test]
fn the_key_and_leash_settings_are_in_no_child_environment() {
    if !confinable() {
        return;
    }
    let parent = Parent::new();
    let commands = [command(
        "env; echo ---; cat /proc/$PPID/environ | tr '\\0' '\\n'; echo ---; \
         cat /proc/$PPID/mem | head -c 1 | wc -c",
    )];
    let outcome = parent
        .run(&commands)
        .env("OPENAI_API_KEY", "sk-shell-KEY-4d5e")
        .env("LEASH_TOOL_EXECUTION", "parallel")
        .env("MY_TOKEN", "tok-7f8a")
        .output();
    assert_eq!(outcome.code(), Some(0), "{}", outcome.stderr());
    let text = &texts(&outcome)[0];
    for name in ["OPENAI_API_KEY", "LEASH_", "MY_TOKEN", "tok-7f8a", "***"] {
        assert!(!text.contains(name), "{name} reached the command: {text}");
    }
    assert!(text.contains("environ: Permission denied"), "{text}");
    assert!(text.contains("mem: Permission denied"), "{text}");
    outcome.assert_key_absent("sk-shell-KEY-4d5e");
    assert_eq!(details(&outcome)[0]["confined"], json!(true));
}

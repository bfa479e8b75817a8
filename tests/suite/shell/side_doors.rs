//! The escape suite's side doors (docs/src/tools.md "What the kernel
//! holds, ABI by ABI"): each rule tried at every Landlock ABI from
//! leash's floor to this kernel's, by lowering the ABI a debug build
//! confines with through the process variable no checkout can set. Each
//! command below succeeds on an unconfined shell run as root, so each
//! test fails if its rule does not hold at some ABI.

use std::io::ErrorKind;
use std::os::unix::net::UnixListener;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::{Parent, command, confinable, details, processes_with, texts};
use crate::support::run::{Outcome, Run};

/// The variable a debug build lowers its Landlock ABI with.
const TEST_ABI: &str = "_LEASH_TEST_LANDLOCK_ABI";

/// Every ABI the escape suite proves each rule at: leash's floor (3),
/// GitHub's runners (4), the first with scopes (6), and up; a level past
/// this kernel's is clamped to it by leash.
const ABIS: [u8; 5] = [3, 4, 5, 6, 7];

/// `commands` at `abi`, one `bash` call a turn; the run must end well.
fn run_at(parent: &Parent, abi: u8, commands: &[&str]) -> Outcome {
    let commands: Vec<Value> = commands.iter().map(|text| command(text)).collect();
    let outcome = parent
        .run(&commands)
        .env(TEST_ABI, abi.to_string())
        .timeout(Duration::from_secs(60))
        .output();
    assert_eq!(
        outcome.code(),
        Some(0),
        "ABI {abi}: the run did not end well: {}",
        outcome.stderr()
    );
    outcome
}

/// The Perl line that connects to the Unix socket `path` and says so.
fn connect_unix(path: &str) -> String {
    format!(
        "perl -MIO::Socket::UNIX -e '$s = IO::Socket::UNIX->new(Peer => \"{path}\") \
         or die \"refused: $!\\n\"; print $s \"hello\\n\"; print \"CONNECTED\\n\"'"
    )
}

#[test]
fn a_unix_socket_outside_the_root_cannot_be_reached_at_any_abi() {
    if !confinable() {
        return;
    }
    let parent = Parent::new();
    // A stand-in for /var/run/docker.sock, in a directory beside the root.
    std::fs::create_dir(parent.path("run")).unwrap();
    let path = parent.path("run/docker.sock");
    let listener = UnixListener::bind(&path).unwrap();
    listener.set_nonblocking(true).unwrap();
    use std::os::linux::net::SocketAddrExt;
    let name = format!("leash-escape-{}", std::process::id());
    let address = std::os::unix::net::SocketAddr::from_abstract_name(name.as_bytes()).unwrap();
    let abstract_listener = UnixListener::bind_addr(&address).unwrap();
    abstract_listener.set_nonblocking(true).unwrap();
    let pair = "perl -MSocket -e 'socketpair(my $a, my $b, AF_UNIX, SOCK_STREAM, PF_UNSPEC) \
                or die \"no pair: $!\\n\"; print \"PAIR\\n\"'";
    for abi in ABIS {
        let outcome = run_at(
            &parent,
            abi,
            &[&format!(
                "{}; {}; {pair}",
                connect_unix(&path.display().to_string()),
                connect_unix(&format!("\\0{name}"))
            )],
        );
        let text = &texts(&outcome)[0];
        assert!(!text.contains("CONNECTED"), "ABI {abi}: {text}");
        assert_eq!(text.matches("refused").count(), 2, "ABI {abi}: {text}");
        // The control: a connected pair (jobservers, runtimes) still works.
        assert!(text.contains("PAIR"), "ABI {abi}: {text}");
        for (what, listener) in [("pathname", &listener), ("abstract", &abstract_listener)] {
            match listener.accept() {
                Err(error) if error.kind() == ErrorKind::WouldBlock => {}
                other => panic!("ABI {abi}: the {what} socket saw a connection: {other:?}"),
            }
        }
    }
}

/// `run`'s command started by `bash -c PRELUDE; exec leash …`, so leash
/// inherits what the prelude set up (descriptors, a sibling process).
fn wrapped(run: &mut Run, prelude: &str) -> Command {
    let leash = run.command();
    let mut shell = Command::new("bash");
    shell
        .arg("-c")
        .arg(format!("{prelude}\nexec \"$@\""))
        .arg("bash")
        .arg(leash.get_program())
        .args(leash.get_args())
        .stdin(Stdio::null());
    if let Some(dir) = leash.get_current_dir() {
        shell.current_dir(dir);
    }
    shell.env_clear();
    for (name, value) in std::env::vars_os() {
        shell.env(name, value);
    }
    for (name, value) in leash.get_envs() {
        match value {
            Some(value) => shell.env(name, value),
            None => shell.env_remove(name),
        };
    }
    shell
}

#[test]
fn only_stdin_stdout_and_stderr_reach_the_command() {
    if !confinable() {
        return;
    }
    let parent = Parent::new();
    let log = parent.path("operator.log");
    std::fs::write(&log, "before\n").unwrap();
    let mut run = parent.run(&[command(
        "ls /proc/self/fd | tr '\\n' ' '; echo; echo forged >&7 && echo WROTE7; \
         echo forged >&9 && echo WROTE9",
    )]);
    let output = wrapped(
        &mut run,
        &format!("exec 7>>'{}'; exec 9> >(cat >/dev/null)", log.display()),
    )
    .output()
    .unwrap();
    let outcome = Outcome::from(output);
    assert_eq!(outcome.code(), Some(0), "{}", outcome.stderr());
    let text = &texts(&outcome)[0];
    assert!(!text.contains("WROTE"), "{text}");
    // ls's own listing descriptor is the one past 2.
    assert!(text.starts_with("0 1 2 3 \n"), "{text}");
    assert_eq!(std::fs::read_to_string(&log).unwrap(), "before\n");
}

#[test]
fn system_v_ipc_is_refused_and_nothing_of_it_outlives_the_run() {
    if !confinable() {
        return;
    }
    let count = || {
        let out = Command::new("ipcs")
            .args(["-m", "-q", "-s"])
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .filter(|line| line.starts_with("0x"))
            .count()
    };
    let before = count();
    let parent = Parent::new();
    for abi in ABIS {
        let outcome = run_at(
            &parent,
            abi,
            &[
                "ipcmk -M 4096 && echo MADE-SHM; ipcmk -Q && echo MADE-QUEUE; \
               ipcmk -S 1 && echo MADE-SEM; true",
            ],
        );
        let text = &texts(&outcome)[0];
        assert!(!text.contains("MADE"), "ABI {abi}: {text}");
    }
    assert_eq!(count(), before, "a System V object outlived the run");
}

#[test]
fn leash_its_group_and_the_supervisor_are_out_of_reach_at_any_abi() {
    if !confinable() {
        return;
    }
    let parent = Parent::new();
    // bash's parent is the supervisor; the supervisor's is leash.
    let probes = "S=$PPID; L=$(awk '{print $4}' /proc/$S/stat); G=$(awk '{print $5}' /proc/$L/stat); \
        echo \"leash=$L group=$G\"; \
        kill -0 $L && echo REACHED-SIGNAL-LEASH; kill -0 -- -$G && echo REACHED-SIGNAL-GROUP; \
        kill -0 $S && echo REACHED-SIGNAL-SUPERVISOR; kill -CONT -1 && echo REACHED-SIGNAL-ALL; \
        prlimit --pid $L --fsize=0:0 && echo REACHED-LIMITED; prlimit --pid $L --nofile=3:3 && echo REACHED-NOFILE; \
        renice -n 5 -p $L && echo REACHED-RENICED; taskset -p 1 $L && echo REACHED-PINNED; \
        perl -e 'syscall(234, $ARGV[0], $ARGV[0], 0) == 0 and print \"REACHED-TGKILL\\n\"; \
                 syscall(200, $ARGV[0], 0) == 0 and print \"REACHED-TKILL\\n\"; \
                 my $fd = syscall(434, $ARGV[0], 0); $fd >= 0 and print \"REACHED-PIDFD\\n\"; \
                 use Fcntl; sysopen(my $d, \"/proc/$ARGV[0]\", O_RDONLY|O_DIRECTORY) or die; \
                 syscall(424, fileno($d), 0, 0, 0) == 0 and print \"REACHED-PROCFD-SIGNAL\\n\"' $L; \
        true";
    for abi in ABIS {
        let outcome = run_at(&parent, abi, &[probes]);
        let text = &texts(&outcome)[0];
        assert!(text.contains("leash="), "ABI {abi}: {text}");
        for reached in [
            "REACHED-SIGNAL-LEASH",
            "REACHED-SIGNAL-GROUP",
            "REACHED-SIGNAL-SUPERVISOR",
            "REACHED-SIGNAL-ALL",
            "REACHED-LIMITED",
            "REACHED-NOFILE",
            "REACHED-RENICED",
            "REACHED-PINNED",
            "REACHED-TGKILL",
            "REACHED-TKILL",
            "REACHED-PIDFD",
            "REACHED-PROCFD-SIGNAL",
        ] {
            assert!(!text.contains(reached), "ABI {abi}: {reached}: {text}");
        }
        // leash wrote its whole result after every probe (no RLIMIT_FSIZE).
        assert!(outcome.stdout().contains("\"reply\":\"done\""), "ABI {abi}");
    }
}

#[test]
fn no_namespace_can_be_made_by_clone_clone3_or_unshare() {
    if !confinable() {
        return;
    }
    let parent = Parent::new();
    // CLONE_NEWUSER | CLONE_NEWNET | SIGCHLD; a child that got through
    // leaves at once.
    let probes = "perl -MPOSIX -e 'my $r = syscall(56, 0x10000000 | 0x40000000 | 17, 0, 0, 0, 0); \
                  POSIX::_exit(0) if $r == 0; print \"CLONED\\n\" if $r > 0; \
                  my $s = syscall(435, 0, 0); print \"clone3: \", ($!+0 == 38 ? \"ENOSYS\" : \"other $!\"), \"\\n\"'; \
                  unshare -Urn true && echo UNSHARED; true";
    for abi in ABIS {
        let outcome = run_at(&parent, abi, &[probes]);
        let text = &texts(&outcome)[0];
        assert!(!text.contains("CLONED"), "ABI {abi}: {text}");
        assert!(!text.contains("UNSHARED"), "ABI {abi}: {text}");
        assert!(text.contains("clone3: ENOSYS"), "ABI {abi}: {text}");
    }
}

#[test]
fn the_private_temporary_directory_is_the_command_s_alone() {
    if !confinable() {
        return;
    }
    let parent = Parent::new();
    let outcome = run_at(&parent, 7, &["stat -c %a \"$TMPDIR\""]);
    assert!(
        texts(&outcome)[0].starts_with("700\n"),
        "{:?}",
        texts(&outcome)
    );
}

#[test]
fn a_null_timeout_is_the_default() {
    if !confinable() {
        return;
    }
    let parent = Parent::new();
    let outcome = parent
        .run(&[json!({"command": "echo fine", "timeout": null})])
        .output();
    assert_eq!(outcome.code(), Some(0), "{}", outcome.stderr());
    assert!(
        texts(&outcome)[0].starts_with("fine\n"),
        "{:?}",
        texts(&outcome)
    );
    assert_eq!(details(&outcome)[0]["exitCode"], json!(0));
}

#[test]
fn a_child_leash_had_before_the_shell_is_not_swept() {
    if !confinable() {
        return;
    }
    let parent = Parent::new();
    let marker = format!("sleep 7{}", std::process::id() % 1000 + 1000);
    let mut run = parent.run(&[command("echo ran")]);
    // The operator's `exec leash … 2> >(tee log)`: a process leash did
    // not start is its child from the first instant.
    let output = wrapped(&mut run, &format!("{marker} >/dev/null 2>&1 &"))
        .output()
        .unwrap();
    let outcome = Outcome::from(output);
    assert_eq!(outcome.code(), Some(0), "{}", outcome.stderr());
    let alive = processes_with(&marker);
    for line in &alive {
        let pid = line.split(':').next().unwrap().parse::<i32>().unwrap();
        let _ = nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(pid),
            nix::sys::signal::Signal::SIGKILL,
        );
    }
    assert_eq!(
        alive.len(),
        1,
        "the operator's process was swept: {alive:?}"
    );
}

#[test]
fn sigkill_of_leash_takes_the_command_s_whole_tree_with_it() {
    if !confinable() {
        return;
    }
    let parent = Parent::new();
    let marker = format!("sleep 8{}", std::process::id() % 1000 + 1000);
    let mut run = parent.run(&[command(&format!(
        "setsid {marker} & ({marker} &); {marker}"
    ))]);
    let mut leash = run.command();
    let mut child = leash
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let started = Instant::now();
    while processes_with(&marker).len() < 3 {
        assert!(
            started.elapsed() < Duration::from_secs(20),
            "the command never started: {:?}",
            processes_with(&marker)
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    child.kill().unwrap();
    child.wait().unwrap();
    let killed = Instant::now();
    while !processes_with(&marker).is_empty() {
        assert!(
            killed.elapsed() < Duration::from_secs(5),
            "the command's tree outlived leash: {:?}",
            processes_with(&marker)
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    drop(run);
}

/// The variable a debug build denies the private mount namespace with.
const NO_MOUNTS: &str = "_LEASH_TEST_NO_PRIVATE_MOUNTS";

/// A root that is a git repository with a `.env` holding the key.
fn repository_with_a_key(parent: &Parent) {
    let root = parent.path("root");
    let git = Command::new("git")
        .args(["init", "-q"])
        .current_dir(&root)
        .status()
        .unwrap();
    assert!(git.success());
    std::fs::write(root.join(".env"), "OPENAI_API_KEY=sk-dotenv-KEY-5e6f\n").unwrap();
}

#[test]
fn git_the_key_file_and_attributes_outside_are_out_of_reach_with_private_mounts() {
    if !confinable() {
        return;
    }
    let parent = Parent::new();
    repository_with_a_key(&parent);
    let outside = parent.path("beside.txt");
    let probes = "rev .env; sed 's/./& /g' .env; echo planted > .git/hooks/pre-commit && echo WROTE-HOOK; \
        git config core.fsmonitor 'touch /tmp/pwned' && echo WROTE-CONFIG; \
        chmod 777 ../beside.txt && echo CHMOD-OUTSIDE; touch -d 2001-01-01 ../beside.txt && echo TOUCH-OUTSIDE; \
        echo in > inside.sh && chmod +x inside.sh && echo INSIDE-OK; true";
    for abi in [4, 7] {
        let commands = [command(probes)];
        let outcome = parent
            .run(&commands)
            .current_dir(parent.path("root"))
            .args(["--root", "."])
            .env(TEST_ABI, abi.to_string())
            .timeout(Duration::from_secs(60))
            .output();
        if outcome.stderr().contains("no private mount namespace") {
            eprintln!(
                "NOT RUN (no private mount namespace here): {}",
                outcome.last_line()
            );
            return;
        }
        assert_eq!(outcome.code(), Some(0), "ABI {abi}: {}", outcome.stderr());
        let text = &texts(&outcome)[0];
        assert!(
            !text.contains("5e6f") && !text.contains("f6e5"),
            "ABI {abi}: {text}"
        );
        for reached in [
            "WROTE-HOOK",
            "WROTE-CONFIG",
            "CHMOD-OUTSIDE",
            "TOUCH-OUTSIDE",
        ] {
            assert!(!text.contains(reached), "ABI {abi}: {reached}: {text}");
        }
        assert!(text.contains("INSIDE-OK"), "ABI {abi}: {text}");
        outcome.assert_key_absent("sk-dotenv-KEY-5e6f");
        let mode = std::fs::metadata(&outside).unwrap();
        use std::os::unix::fs::PermissionsExt;
        assert_eq!(mode.permissions().mode() & 0o777, 0o644, "ABI {abi}");
        assert!(!parent.path("root/.git/hooks/pre-commit").exists());
    }
}

#[test]
fn without_private_mounts_a_key_in_the_root_s_env_refuses_the_shell() {
    if !confinable() {
        return;
    }
    let parent = Parent::new();
    repository_with_a_key(&parent);
    let outcome = parent
        .run(&[command("rev .env")])
        .current_dir(parent.path("root"))
        .args(["--root", "."])
        .env(NO_MOUNTS, "1")
        .output();
    assert_eq!(outcome.code(), Some(2), "{}", outcome.stderr());
    let line = outcome.last_line();
    assert!(
        line.contains(".env") && line.contains("export the key"),
        "{line}"
    );
    outcome.assert_key_absent("sk-dotenv-KEY-5e6f");
    assert!(tool_ends_of(&outcome).is_empty());
}

fn tool_ends_of(outcome: &Outcome) -> Vec<Value> {
    crate::support::run::tool_ends(&outcome.output)
}

#[test]
fn without_private_mounts_git_s_hooks_and_config_are_put_back_and_named() {
    if !confinable() {
        return;
    }
    let parent = Parent::new();
    repository_with_a_key(&parent);
    std::fs::remove_file(parent.path("root/.env")).unwrap();
    let config_before = std::fs::read_to_string(parent.path("root/.git/config")).unwrap();
    let outcome = parent
        .run(&[command(
            "echo planted > .git/hooks/pre-commit; git config core.fsmonitor 'touch /tmp/pwned'; \
             echo ok > file.txt",
        )])
        .current_dir(parent.path("root"))
        .args(["--root", "."])
        .env(NO_MOUNTS, "1")
        .output();
    assert_eq!(outcome.code(), Some(0), "{}", outcome.stderr());
    assert!(
        outcome.stderr().contains("no private mount namespace"),
        "the weaker footing is said: {}",
        outcome.stderr()
    );
    assert!(!parent.path("root/.git/hooks/pre-commit").exists());
    assert_eq!(
        std::fs::read_to_string(parent.path("root/.git/config")).unwrap(),
        config_before
    );
    let details = &details(&outcome)[0];
    assert_eq!(
        details["gitRestored"],
        json!([".git/config", ".git/hooks/pre-commit"]),
        "{details}"
    );
    let changed = details["changedFiles"].as_array().unwrap();
    assert!(
        changed.contains(&json!(".git/hooks/pre-commit")),
        "{details}"
    );
    assert!(changed.contains(&json!("file.txt")), "{details}");
    assert!(
        texts(&outcome)[0].contains("leash put back"),
        "{:?}",
        texts(&outcome)
    );
}

#[test]
fn the_system_s_secrets_stay_unread_under_the_etc_grant() {
    if !confinable() {
        return;
    }
    let parent = Parent::new();
    let probes = "for f in /etc/shadow /etc/gshadow /etc/sudoers; do \
                  [ -e $f ] && { head -c 1 $f >/dev/null 2>&1 && echo READ-$f || echo denied-$f; }; done; \
                  ls /etc/ssh >/dev/null 2>&1 && echo LISTED-ssh; \
                  head -c 5 /etc/passwd; echo; true";
    for abi in ABIS {
        let outcome = run_at(&parent, abi, &[probes]);
        let text = &texts(&outcome)[0];
        assert!(
            !text.contains("READ-") && !text.contains("LISTED-"),
            "ABI {abi}: {text}"
        );
        if std::path::Path::new("/etc/shadow").exists() {
            assert!(text.contains("denied-/etc/shadow"), "ABI {abi}: {text}");
        }
        // The control: the rest of /etc is still there.
        assert!(text.contains("root:"), "ABI {abi}: {text}");
    }
}

#[test]
fn a_kernel_before_the_scopes_is_said_at_start_and_the_newest_is_not() {
    if !confinable() {
        return;
    }
    let parent = Parent::new();
    let said = "does not scope signals: a command may signal other processes of this user";
    let low = run_at(&parent, 4, &["true"]);
    assert!(low.stderr().contains(said), "{}", low.stderr());
    assert!(low.stderr().contains("Landlock ABI 4"), "{}", low.stderr());
    let high = run_at(&parent, 7, &["true"]);
    assert!(!high.stderr().contains(said), "{}", high.stderr());
}

#[test]
fn a_link_planted_in_git_mid_run_is_refused_by_the_next_git_call() {
    if !confinable() {
        return;
    }
    let parent = Parent::new();
    let git = |dir: &std::path::Path, args: &[&str]| {
        let status = Command::new("git")
            .args([
                "-c",
                "user.name=t",
                "-c",
                "user.email=t@t",
                "-c",
                "commit.gpgsign=false",
            ])
            .args(args)
            .current_dir(dir)
            .stdout(Stdio::null())
            .status()
            .unwrap();
        assert!(status.success(), "git {args:?}");
    };
    let root = parent.path("root");
    git(&root, &["init", "-q"]);
    std::fs::write(root.join("mine.txt"), "mine\n").unwrap();
    git(&root, &["add", "."]);
    git(&root, &["commit", "-qm", "mine"]);
    let other = parent.path("other");
    std::fs::create_dir(&other).unwrap();
    git(&other, &["init", "-q"]);
    std::fs::write(other.join("theirs.txt"), "other-secret-4b1d\n").unwrap();
    git(&other, &["add", "."]);
    git(&other, &["commit", "-qm", "theirs"]);
    // The command cannot list the other repository: the test names its
    // object directories for it.
    let objects: Vec<String> = std::fs::read_dir(other.join(".git/objects"))
        .unwrap()
        .flatten()
        .map(|entry| entry.file_name().to_string_lossy().into_owned())
        .filter(|name| name.len() == 2)
        .map(|name| {
            format!(
                "ln -s {} .git/objects/{name} 2>/dev/null;",
                other.join(".git/objects").join(&name).display()
            )
        })
        .collect();
    let plant = format!(
        "ln -s {} .git/refs/planted; {} ls .git/refs",
        other.join(".git/refs/heads").display(),
        objects.join(" ")
    );
    let script = json!([
        {"toolCalls": [{"name": "bash", "arguments": {"command": plant}}]},
        {"toolCalls": [{"name": "git", "arguments": {"command": "log", "args": ["--all", "-p"]}}]},
        {"text": "done"}
    ]);
    let outcome = Run::faux(script)
        .home(parent.path("home"))
        .current_dir(&root)
        .args([
            "--root",
            ".",
            "--allow-exec",
            "--tools",
            "git",
            "--events",
            "jsonl",
        ])
        .args(["--output", "json", "--no-stdin", "--max-turns", "3"])
        .env(NO_MOUNTS, "1")
        .prompt("go")
        .timeout(Duration::from_secs(60))
        .output();
    assert_eq!(outcome.code(), Some(0), "{}", outcome.stderr());
    let ends = crate::support::run::tool_ends(&outcome.output);
    let planted = ends[0]["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_default();
    assert!(planted.contains("planted"), "the link was made: {planted}");
    assert_eq!(ends[1]["isError"], json!(true), "{}", ends[1]);
    assert!(!outcome.stderr().contains("other-secret-4b1d"));
    assert!(!outcome.stdout().contains("other-secret-4b1d"));
}

#[test]
fn no_set_id_bit_can_be_given_to_a_file_at_any_abi() {
    if !confinable() {
        return;
    }
    let parent = Parent::new();
    // Each way a program gives a file a set-ID bit: the chmod family by
    // path and by descriptor, a creating open with the bit in its mode,
    // mknod of a regular file, install -m; then a plain chmod as control.
    let probes = "cp /bin/true su-copy; cp /bin/true sg-copy; \
                  chmod u+s su-copy && echo CHMOD-SUID; chmod g+s sg-copy && echo CHMOD-SGID; \
                  perl -e 'open(my $f, \"<\", \"su-copy\"); chmod(04755, $f) and print \"FCHMOD\\n\"'; \
                  python3 -c 'import os; os.close(os.open(\"made\", os.O_CREAT | os.O_WRONLY, 0o4755)); print(\"OPEN-CREAT\")'; \
                  python3 -c 'import os, stat; os.mknod(\"node\", stat.S_IFREG | 0o4755); print(\"MKNOD\")'; \
                  install -m 4755 /bin/true installed && echo INSTALL; \
                  chmod 755 sg-copy && echo PLAIN-CHMOD; \
                  for f in su-copy sg-copy made node installed; do [ -e $f ] && stat -c \"MODE $f %a\" $f; done; true";
    for abi in ABIS {
        let outcome = run_at(&parent, abi, &[probes]);
        let text = &texts(&outcome)[0];
        for made in [
            "CHMOD-SUID",
            "CHMOD-SGID",
            "FCHMOD",
            "OPEN-CREAT",
            "MKNOD",
            "INSTALL",
        ] {
            assert!(!text.contains(made), "ABI {abi}: {made}: {text}");
        }
        assert!(text.contains("PLAIN-CHMOD"), "ABI {abi}: {text}");
        for line in text.lines().filter(|line| line.starts_with("MODE ")) {
            let mode = line.rsplit(' ').next().unwrap_or_default();
            assert!(mode.len() <= 3, "ABI {abi}: a set-ID bit: {line}");
        }
        for file in ["su-copy", "sg-copy", "made", "node", "installed"] {
            let _ = std::fs::remove_file(parent.path(&format!("root/{file}")));
        }
    }
}

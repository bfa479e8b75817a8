//! The escape suite's process and time rules: nothing a command starts
//! outlives it, the run's timer ends the whole tree, a fork bomb is held.

use std::time::Duration;

use serde_json::json;

use super::{Parent, command, confinable, processes_with, texts};

#[test]
fn a_setsid_sleeper_and_a_double_forked_one_are_gone_when_the_command_ends() {
    if !confinable() {
        return;
    }
    let parent = Parent::new();
    let outcome = parent
        .run(&[
            command(
                "setsid sleep 3131 & (sleep 3132 &); nohup sleep 3133 >/dev/null 2>&1 & \
                 setsid -f sleep 3134; sleep 0.2; pgrep -c -f 'sleep 313[1-4]'",
            ),
            command("pgrep -f 'sleep 313[1-4]' || echo none-left"),
        ])
        .output();
    assert_eq!(outcome.code(), Some(0), "{}", outcome.stderr());
    let texts = texts(&outcome);
    assert!(
        texts[0].starts_with("4\n"),
        "all four were running: {}",
        texts[0]
    );
    assert!(texts[1].starts_with("none-left"), "{}", texts[1]);
    assert_eq!(processes_with("sleep 313"), Vec::<String>::new());
}

#[test]
fn a_command_past_the_run_s_timer_ends_with_124_and_leaves_nothing() {
    if !confinable() {
        return;
    }
    let parent = Parent::new();
    let outcome = parent
        .run(&[json!({"command": "setsid sleep 3141 & sleep 3142", "timeout": 600})])
        .args(["--timeout", "2s"])
        .timeout(Duration::from_secs(30))
        .output();
    assert_eq!(outcome.code(), Some(124), "{}", outcome.stderr());
    assert!(
        outcome.elapsed < Duration::from_secs(10),
        "{:?}",
        outcome.elapsed
    );
    assert_eq!(processes_with("sleep 314"), Vec::<String>::new());
}

#[test]
fn a_command_past_its_own_timeout_is_killed_whole_and_the_run_goes_on() {
    if !confinable() {
        return;
    }
    let parent = Parent::new();
    let outcome = parent
        .run(&[json!({"command": "setsid sleep 3161 & sleep 3162", "timeout": 1})])
        .output();
    assert_eq!(outcome.code(), Some(0), "{}", outcome.stderr());
    let text = &texts(&outcome)[0];
    assert!(text.contains("timed out after 1.0 s"), "{text}");
    assert!(text.contains("exit 124"), "{text}");
    assert_eq!(processes_with("sleep 316"), Vec::<String>::new());
}

#[test]
fn a_fork_bomb_is_held_and_the_run_ends() {
    if !confinable() {
        return;
    }
    let parent = Parent::new();
    let outcome = parent
        .run(&[
            json!({"command": "bomb_3151() { bomb_3151 | bomb_3151 & }; bomb_3151; sleep 2; \
                   echo still-here", "timeout": 20}),
            command("echo next-command"),
        ])
        .timeout(Duration::from_secs(120))
        .output();
    assert_eq!(outcome.code(), Some(0), "{}", outcome.stderr());
    let texts = texts(&outcome);
    assert!(
        texts[0].contains("Resource temporarily unavailable"),
        "the cap was not hit: {}",
        &texts[0][texts[0].len().saturating_sub(500)..]
    );
    assert!(texts[1].contains("next-command"), "{}", texts[1]);
    assert_eq!(processes_with("bomb_3151"), Vec::<String>::new());
}

use super::*;
use clap::{Command, CommandFactory, ValueEnum};
use leash_provider::ThinkingLevel;
use std::ffi::OsString;

#[test]
fn the_commands_are_well_formed() {
    Cli::command().debug_assert();
    run_command().debug_assert();
    command_tree().debug_assert();
}

#[test]
fn only_an_exact_first_argument_is_a_command() {
    let args = |list: &[&str]| list.iter().map(OsString::from).collect::<Vec<_>>();
    assert_eq!(
        command_name(&args(&["leash", "man"])).map(CommandName::name),
        Some("man")
    );
    assert_eq!(
        command_name(&args(&["leash", "config", "-m", "x"])).map(CommandName::name),
        Some("config")
    );
    assert_eq!(command_name(&args(&["leash", "-q", "man"])), None);
    assert_eq!(command_name(&args(&["leash", "--", "man"])), None);
    assert_eq!(command_name(&args(&["leash", "man page"])), None);
    assert_eq!(command_name(&args(&["leash"])), None);
}

#[test]
fn help_lists_every_command_of_the_tree() {
    let help = run_command().render_long_help().to_string();
    let tree = command_tree();
    let names: Vec<&str> = tree.get_subcommands().map(Command::get_name).collect();
    assert_eq!(names, COMMANDS.map(|(command, _, _)| command.name()));
    for name in names {
        assert!(
            help.contains(&format!("\n  {name} ")),
            "{name} missing from help"
        );
    }
}

#[test]
fn every_variable_is_leash_and_the_flag_name() {
    let command = Cli::command();
    let mut without: Vec<&str> = Vec::new();
    for arg in command.get_arguments() {
        let Some(env) = arg.get_env() else {
            without.push(arg.get_id().as_str());
            continue;
        };
        let long = arg.get_long().unwrap();
        assert_eq!(
            env.to_str().unwrap(),
            format!("LEASH_{}", long.to_uppercase().replace('-', "_"))
        );
    }
    // As the footer of --help says.
    assert_eq!(
        without,
        [
            "prompt",
            "prompt_flag",
            "follow_up",
            "quiet",
            "resume",
            "mcp",
            "stdin",
            "no_stdin"
        ]
    );
}

/// The manual's rule for the environment layer names the same exceptions
/// (docs/src/configuration.md "Configuration"): a flag that gains or loses
/// its variable fails here until the sentence says so.
#[test]
fn the_manual_names_every_flag_without_a_variable() {
    let page = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/src/configuration.md"),
    )
    .unwrap();
    let start = page.find("for every flag but").unwrap();
    let rule = &page[start..start + page[start..].find("(`LEASH_MODEL`").unwrap()];
    let named: Vec<&str> = rule.split('`').skip(1).step_by(2).collect();
    let command = Cli::command();
    let mut without: Vec<String> = command
        .get_arguments()
        .filter(|arg| arg.get_env().is_none() && !arg.is_positional())
        .map(|arg| match arg.get_short() {
            Some(short) if matches!(short, 'p' | 'q') => format!("-{short}"),
            _ => format!("--{}", arg.get_long().unwrap()),
        })
        .collect();
    without.sort();
    let mut named: Vec<String> = named.into_iter().map(str::to_owned).collect();
    named.sort();
    assert_eq!(named, without, "the rule reads: {rule}");
}

#[test]
fn short_help_is_the_essential_flags_one_line_each() {
    let mut command = run_command().term_width(80);
    command.build();
    let help = command.render_help().to_string();
    assert!(!help.contains("[env:"), "{help}");
    assert!(help.lines().count() <= 23, "{help}");
    for arg in command.get_arguments() {
        let Some(long) = arg.get_long() else {
            continue;
        };
        // A flag's own line starts with it (after its short form).
        let flag = format!("--{long}");
        let shown = help.lines().any(|line| {
            let line = line.trim_start();
            let line = match line.starts_with("--") {
                true => line,
                false => line.split_once(", ").map_or(line, |(_, rest)| rest),
            };
            line.split_whitespace().next() == Some(flag.as_str())
        });
        let essential = crate::cli::help::ESSENTIAL_FLAGS.contains(&arg.get_id().as_str());
        assert_eq!(
            shown,
            essential || ["help", "version"].contains(&long),
            "--{long}"
        );
        if let (true, Some(about)) = (shown, arg.get_help()) {
            let about = about.to_string();
            assert!(
                help.lines()
                    .any(|line| line.contains(&format!("--{long}")) && line.contains(&about)),
                "--{long} is not one line:\n{help}"
            );
        }
    }
}

#[test]
fn help_lists_the_exit_codes() {
    let help = run_command().render_long_help().to_string();
    for code in [
        "124  timeout",
        "130  interrupted     SIGINT (143 for SIGTERM, 129 for SIGHUP)",
        "3    turn_limit",
    ] {
        assert!(help.contains(code), "{code} missing from help");
    }
}

#[test]
fn every_thinking_level_is_a_reasoning_effort_spelled_as_the_library_does() {
    // Exhaustive: a level the library adds does not compile here until the
    // flag takes it too.
    fn spelled(level: ThinkingLevel) -> ReasoningEffort {
        match level {
            ThinkingLevel::Off => ReasoningEffort::Off,
            ThinkingLevel::Minimal => ReasoningEffort::Minimal,
            ThinkingLevel::Low => ReasoningEffort::Low,
            ThinkingLevel::Medium => ReasoningEffort::Medium,
            ThinkingLevel::High => ReasoningEffort::High,
            ThinkingLevel::XHigh => ReasoningEffort::XHigh,
        }
    }
    for effort in ReasoningEffort::value_variants() {
        let level = ThinkingLevel::from(*effort);
        assert_eq!(spelled(level), *effort);
        let value = effort.to_possible_value().unwrap();
        assert_eq!(value.get_name(), level.as_str());
    }
    // What a result may record: every level but `off`.
    let recorded: Vec<ThinkingLevel> = ReasoningEffort::value_variants()
        .iter()
        .map(|effort| ThinkingLevel::from(*effort))
        .filter(|level| *level != ThinkingLevel::Off)
        .collect();
    assert_eq!(recorded, crate::render::RECORDED_LEVELS);
}

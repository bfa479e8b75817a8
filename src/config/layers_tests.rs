use super::*;
use std::path::Path;

fn args(list: &[&str]) -> Vec<OsString> {
    std::iter::once("leash")
        .chain(list.iter().copied())
        .map(OsString::from)
        .collect()
}

fn file(text: &str) -> ConfigFile {
    ConfigFile::parse(Path::new("/c/config.toml"), text).unwrap()
}

#[test]
fn the_file_fills_in_only_what_the_command_line_left_at_the_default() {
    let env = Environment::from_pairs(&[], &[]);
    let file = file("model = \"from-file\"\nmax-turns = 9\nstream = true\n");
    let run = parse_run(
        &RunArgs::parse(args(&["-m", "from-flag", "hi"])).unwrap(),
        &env,
        Some(&file),
    )
    .unwrap();
    assert_eq!(run.cli.model.as_deref(), Some("from-flag"));
    assert_eq!(run.origins.source("model"), Source::Flag);
    assert_eq!(run.cli.max_turns, 9);
    assert_eq!(run.origins.source("max_turns"), Source::File);
    assert!(run.cli.stream);
    assert_eq!(run.origins.source("stream"), Source::File);
    assert_eq!(run.cli.retries, 2);
    assert_eq!(run.origins.source("retries"), Source::Default);
    assert_eq!(run.origins.raw("retries"), Some("2"));
    assert_eq!(run.cli.prompt.as_deref(), Some("hi"));
    assert_eq!(run.origins.source("system"), Source::Unset);
}

#[test]
fn a_prompt_that_looks_like_a_flag_value_stays_the_prompt() {
    let env = Environment::from_pairs(&[], &[]);
    let file = file("system = \"--be terse\"\n");
    let run = parse_run(
        &RunArgs::parse(args(&["--", "-q"])).unwrap(),
        &env,
        Some(&file),
    )
    .unwrap();
    assert_eq!(run.cli.system.as_deref(), Some("--be terse"));
    assert_eq!(run.cli.prompt.as_deref(), Some("-q"));
    assert!(!run.cli.quiet);
}

#[test]
fn a_flag_beats_a_conflicting_file_value() {
    let env = Environment::from_pairs(&[], &[]);
    let file = file("system-file = \"prompt.md\"\n");
    let run = parse_run(
        &RunArgs::parse(args(&["-s", "inline", "hi"])).unwrap(),
        &env,
        Some(&file),
    )
    .unwrap();
    assert_eq!(
        crate::config::precedence::choose_system(&run.cli, &run.origins),
        crate::config::precedence::SystemChoice::Text("inline")
    );
}

#[test]
fn a_bad_file_value_is_named_with_its_file_and_key() {
    let env = Environment::from_pairs(&[], &[]);
    let file = file("max-turns = 0\n");
    let error = parse_run(&RunArgs::parse(args(&["hi"])).unwrap(), &env, Some(&file))
        .unwrap_err()
        .to_string();
    assert!(
        error.starts_with("config file /c/config.toml: max-turns: invalid value '0'"),
        "{error}"
    );
    assert!(!error.contains('\n'));
}

#[test]
fn dotenv_variables_are_told_apart() {
    let env = Environment::from_pairs(&[("A", "1"), ("B", "2"), ("C", " ")], &["B"]);
    assert_eq!(
        env.non_empty("A"),
        Some(("1".into(), Source::Env("A".into())))
    );
    assert_eq!(
        env.non_empty("B"),
        Some(("2".into(), Source::DotEnv("B".into())))
    );
    assert_eq!(env.non_empty("C"), None);
    assert_eq!(Source::DotEnv("B".into()).to_string(), ".env B");
}

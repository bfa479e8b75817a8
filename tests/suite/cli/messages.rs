//! A refused command line says which knob to turn: the variable and its
//! layer for a bad value from the environment, clap's whole message (the
//! missing argument and its values), and quotes for a prompt of several
//! words.

use super::{last_line, workspace};

fn refused(args: &[&str], env: &[(&str, &str)]) -> String {
    let ws = workspace();
    let mut cmd = ws.child();
    cmd.args(args).stdin(std::process::Stdio::null());
    for (name, value) in env {
        cmd.env(name, value);
    }
    let output = cmd.output().unwrap();
    assert_eq!(output.status.code(), Some(2), "{output:?}");
    assert!(output.stdout.is_empty(), "{output:?}");
    last_line(&output)
}

#[test]
fn a_bad_value_from_the_environment_names_the_variable_and_its_layer() {
    let line = refused(&["--provider", "faux", "go"], &[("LEASH_MAX_TURNS", "abc")]);
    assert!(
        line.starts_with("leash: env LEASH_MAX_TURNS: invalid value 'abc' for '--max-turns <N>'"),
        "{line}"
    );
    let line = refused(&["go"], &[("LEASH_PROVIDER", "mistral")]);
    assert!(
        line.starts_with("leash: env LEASH_PROVIDER: invalid value 'mistral'"),
        "{line}"
    );
    assert!(
        line.contains("openai, anthropic, azure, gemini, bedrock, vertex, faux"),
        "{line}"
    );
    // The same value on the command line is the flag's.
    let line = refused(&["--max-turns", "abc", "go"], &[]);
    assert!(
        line.starts_with("leash: invalid value 'abc' for '--max-turns <N>'"),
        "{line}"
    );
    // The flag wins over the variable: a bad variable under a good flag is
    // never reached, and a bad flag over a good variable is the flag's.
    let line = refused(&["--max-turns", "abc", "go"], &[("LEASH_MAX_TURNS", "3")]);
    assert!(!line.contains("LEASH_MAX_TURNS"), "{line}");
}

#[test]
fn a_missing_command_argument_is_named_with_its_values() {
    let line = refused(&["schema"], &[]);
    assert!(line.contains("<KIND>"), "{line}");
    assert!(line.contains("events, result"), "{line}");
    let line = refused(&["completions"], &[]);
    assert!(line.contains("<SHELL>"), "{line}");
    assert!(line.contains("bash"), "{line}");
}

#[test]
fn an_unquoted_prompt_of_several_words_is_told_to_quote_it() {
    let line = refused(&["what", "does", "x", "do"], &[]);
    assert!(line.contains("quote"), "{line}");
    assert!(line.contains("\"what does x do\""), "{line}");
    assert!(!line.contains("-- does"), "{line}");
    // Flags in between are no part of the prompt.
    let line = refused(&["-q", "what", "does", "--max-turns", "3", "x"], &[]);
    assert!(line.contains("\"what does x\""), "{line}");
}

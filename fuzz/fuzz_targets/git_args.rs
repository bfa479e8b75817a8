//! The git tool's argument whitelist on any argument list: no panic; every
//! refusal is one line; what passes keeps its shape — options start with
//! `-` and are never one git would run or write with, revisions never
//! start with `-` nor hold `:` (REV:PATH) or NUL, each revision's ends
//! are non-empty pieces of it, `blame` and `log --follow` have exactly
//! one path.
//!
//! Input: the first byte picks the command, the rest is the arguments,
//! one per line.

#![no_main]

use leash_tools::git::GitCommand;
use leash_tools::git::whitelist::sort_args;
use libfuzzer_sys::fuzz_target;

const COMMANDS: [GitCommand; 5] = [
    GitCommand::Status,
    GitCommand::Diff,
    GitCommand::Log,
    GitCommand::Show,
    GitCommand::Blame,
];

/// Options that write a file, read one outside the root or run a program.
const NEVER: [&str; 8] = [
    "--output",
    "--ext-diff",
    "--textconv",
    "--no-index",
    "--exec-path",
    "--contents",
    "--show-signature",
    "-c",
];

fuzz_target!(|data: &[u8]| {
    let Some((&pick, rest)) = data.split_first() else {
        return;
    };
    let command = COMMANDS[usize::from(pick) % COMMANDS.len()];
    let text = String::from_utf8_lossy(rest);
    let args: Vec<String> = if text.is_empty() {
        Vec::new()
    } else {
        text.split('\n').map(str::to_owned).collect()
    };
    match sort_args(command, &args) {
        Err(error) => assert!(!error.to_string().contains('\n'), "{error}"),
        Ok(sorted) => {
            for option in &sorted.options {
                assert!(option.starts_with('-'), "option {option:?}");
                assert!(
                    !NEVER
                        .iter()
                        .any(|bad| option == bad || option.starts_with(&format!("{bad}="))),
                    "{option:?} passed"
                );
            }
            assert_eq!(sorted.ends.len(), sorted.revisions.len());
            for (rev, ends) in sorted.revisions.iter().zip(&sorted.ends) {
                assert!(!rev.starts_with('-') || rev == "-", "revision {rev:?}");
                assert!(
                    !rev.contains(':') && !rev.contains('\0'),
                    "revision {rev:?}"
                );
                assert!(command != GitCommand::Status, "status took {rev:?}");
                for end in ends {
                    assert!(
                        !end.is_empty() && rev.contains(end.as_str()),
                        "{rev:?} → {end:?}"
                    );
                }
            }
            let follows = sorted.options.iter().any(|o| o == "--follow");
            if command == GitCommand::Blame || follows {
                assert_eq!(sorted.paths.len(), 1, "{command:?} {args:?}");
            }
            assert!(sorted.paths.iter().all(|p| !p.contains('\0')));
        }
    }
});

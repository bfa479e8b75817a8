//! The model's `args` checked against a whitelist and sorted into options,
//! revisions and paths. Anything not on the list (`--output`, `--ext-diff`,
//! `-c`, `--exec-path`, `--textconv`, `--no-index`, `-O`, …) is refused
//! with a one-line error naming it: git's option set is large, grows with
//! every release, and holds options that write files, read files outside
//! the root or run programs, so only a small set known to be harmless is
//! passed on.

use schemars::JsonSchema;
use serde::Deserialize;

use super::GitError;
use super::limits::{MAX_ARG_BYTES, MAX_ARGS};
use crate::sandbox::shown_path;

/// The views the `git` tool offers; nothing else of git is reachable.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
#[schemars(inline)]
pub enum GitCommand {
    // No doc comments on the variants: with them the schema would be a
    // `oneOf` of constants instead of a plain `enum` of the five names.
    #[allow(missing_docs)]
    Status,
    #[allow(missing_docs)]
    Diff,
    #[allow(missing_docs)]
    Log,
    #[allow(missing_docs)]
    Show,
    #[allow(missing_docs)]
    Blame,
}

impl GitCommand {
    /// The git subcommand.
    pub fn name(self) -> &'static str {
        match self {
            GitCommand::Status => "status",
            GitCommand::Diff => "diff",
            GitCommand::Log => "log",
            GitCommand::Show => "show",
            GitCommand::Blame => "blame",
        }
    }

    /// Whether the command shows diffs (so takes diff options and the
    /// guards against external diff programs).
    pub(super) fn shows_diffs(self) -> bool {
        matches!(self, GitCommand::Diff | GitCommand::Log | GitCommand::Show)
    }
}

/// Options that shape a diff (`diff`, `log`, `show`).
const DIFF_FLAGS: &[&str] = &[
    "--stat",
    "--numstat",
    "--shortstat",
    "--name-only",
    "--name-status",
    "--summary",
    "--compact-summary",
    "--raw",
    "-p",
    "--patch",
    "-s",
    "--no-patch",
    "-M",
    "--find-renames",
    "--no-renames",
    "-w",
    "--ignore-all-space",
    "-b",
    "--ignore-space-change",
    "--ignore-space-at-eol",
    "--ignore-blank-lines",
    "--patience",
    "--histogram",
    "--minimal",
    "-R",
    "-W",
    "--function-context",
    "--word-diff",
    "--pickaxe-regex",
    "--pickaxe-all",
];

/// `diff` only: which two trees are compared.
const DIFF_ONLY_FLAGS: &[&str] = &["--cached", "--staged", "--merge-base"];

/// `log` only: which commits, in what order and shape.
const LOG_FLAGS: &[&str] = &[
    "--oneline",
    "--abbrev-commit",
    "--no-merges",
    "--merges",
    "--first-parent",
    "--reverse",
    "--graph",
    "--decorate",
    "--no-decorate",
    "--follow",
    "--all",
    "--branches",
    "--tags",
    "-i",
    "--regexp-ignore-case",
    "--all-match",
    "--date-order",
    "--topo-order",
];

/// `show` only.
const SHOW_FLAGS: &[&str] = &[
    "--oneline",
    "--abbrev-commit",
    "--decorate",
    "--no-decorate",
];

/// `status`.
const STATUS_FLAGS: &[&str] = &[
    "-s",
    "--short",
    "-b",
    "--branch",
    "--long",
    "--porcelain",
    "--porcelain=v1",
    "--porcelain=v2",
    "-uno",
    "-unormal",
    "-uall",
    "--untracked-files=no",
    "--untracked-files=normal",
    "--untracked-files=all",
    "--ignored",
];

/// `blame`.
const BLAME_FLAGS: &[&str] = &[
    "-w",
    "-M",
    "-C",
    "-s",
    "-e",
    "--show-email",
    "-l",
    "-t",
    "-f",
    "--show-name",
    "-n",
    "--show-number",
    "--porcelain",
    "--line-porcelain",
    "--root",
];

/// git's own formats for `--pretty`/`--format` (no `format:` strings:
/// some placeholders verify signatures, which runs a program).
const PRETTY_FORMATS: &[&str] = &[
    "oneline",
    "short",
    "medium",
    "full",
    "fuller",
    "reference",
    "raw",
];

/// `log`'s options that take a value, given as `--name=VALUE`.
const LOG_VALUED: &[&str] = &[
    "--since",
    "--until",
    "--after",
    "--before",
    "--author",
    "--committer",
    "--grep",
];

/// What a value must look like.
#[derive(Clone, Copy)]
enum Value {
    /// A count: ASCII digits.
    Count,
    /// Any text (a date, a name, a pattern, a line range).
    Text,
    /// `--diff-filter`: status letters.
    Filter,
    /// One of [`PRETTY_FORMATS`].
    Pretty,
}

impl Value {
    fn accepts(self, value: &str) -> bool {
        match self {
            Value::Count => {
                !value.is_empty() && value.len() <= 9 && value.bytes().all(|b| b.is_ascii_digit())
            }
            Value::Text => !value.is_empty(),
            Value::Filter => {
                !value.is_empty() && value.bytes().all(|b| b"ACDMRTUXBacdmrtuxb*".contains(&b))
            }
            Value::Pretty => PRETTY_FORMATS.contains(&value),
        }
    }
}

/// The model's arguments, sorted and checked (paths not yet resolved).
#[derive(Debug, Default, PartialEq)]
pub(super) struct Parsed {
    /// Whitelisted options, each one argument (`-n 5` became `-n5`).
    pub(super) options: Vec<String>,
    /// Revisions and ranges.
    pub(super) revisions: Vec<String>,
    /// Paths as the model gave them (after `--`).
    pub(super) paths: Vec<String>,
}

/// Sorts `args` for `command`: options (whitelisted), revisions (no
/// leading `-`, no `:`), and after `--` paths.
pub(super) fn parse(command: GitCommand, args: &[String]) -> Result<Parsed, GitError> {
    if args.len() > MAX_ARGS {
        return Err(GitError::TooManyArgs { count: args.len() });
    }
    let mut parsed = Parsed::default();
    let mut rest = args.iter();
    while let Some(arg) = rest.next() {
        check_plain(arg)?;
        if arg == "--" {
            for path in rest.by_ref() {
                check_plain(path)?;
                parsed.paths.push(path.clone());
            }
            break;
        }
        if arg.starts_with('-') && arg != "-" {
            let option = match takes_separate_value(command, arg) {
                true => {
                    let value = rest.next().ok_or_else(|| GitError::MissingValue {
                        arg: shown_path(arg),
                    })?;
                    check_plain(value)?;
                    format!("{arg}{value}")
                }
                false => arg.clone(),
            };
            if let Some(flags) = bundled_flags(command, &option) {
                parsed.options.extend(flags);
                continue;
            }
            check_option(command, &option, arg)?;
            parsed.options.push(option);
            continue;
        }
        check_revision(command, arg)?;
        parsed.revisions.push(arg.clone());
    }
    check_counts(command, &parsed)?;
    Ok(parsed)
}

/// No NUL byte, no huge argument.
fn check_plain(arg: &str) -> Result<(), GitError> {
    if arg.contains('\0') || arg.len() > MAX_ARG_BYTES {
        return Err(GitError::Refused {
            arg: shown_path(arg),
            why: format!("an argument must hold no NUL byte and at most {MAX_ARG_BYTES} bytes"),
        });
    }
    Ok(())
}

/// `-n 5` (log) and `-L 10,20` (blame): the value is the next argument.
fn takes_separate_value(command: GitCommand, arg: &str) -> bool {
    matches!(
        (command, arg),
        (GitCommand::Log, "-n") | (GitCommand::Blame, "-L")
    )
}

/// `-sb` as `-s -b`, when it is not an allowed option itself and every
/// letter is an allowed flag of its own.
fn bundled_flags(command: GitCommand, option: &str) -> Option<Vec<String>> {
    let letters = option.strip_prefix('-')?;
    if letters.len() < 2 || letters.starts_with('-') || option_allowed(command, option) {
        return None;
    }
    let flags: Vec<String> = letters.chars().map(|c| format!("-{c}")).collect();
    flags
        .iter()
        .all(|flag| option_allowed(command, flag))
        .then_some(flags)
}

/// Whether `option` (as joined) is on `command`'s list; `given` is what
/// the model wrote, for the error.
fn check_option(command: GitCommand, option: &str, given: &str) -> Result<(), GitError> {
    if option_allowed(command, option) {
        return Ok(());
    }
    let takes_joined_value = ["1", "x", "oneline"]
        .iter()
        .any(|probe| option_allowed(command, &format!("{option}={probe}")));
    let hint = if !option.contains('=') && takes_joined_value {
        format!("give its value joined, as {option}=VALUE")
    } else {
        format!(
            "git {} accepts only a few read-only options; see the tool's description",
            command.name()
        )
    };
    Err(GitError::Refused {
        arg: shown_path(given),
        why: hint,
    })
}

fn option_allowed(command: GitCommand, option: &str) -> bool {
    use GitCommand::{Blame, Diff, Log, Show, Status};
    let flags: &[&[&str]] = match command {
        Status => &[STATUS_FLAGS],
        Diff => &[DIFF_FLAGS, DIFF_ONLY_FLAGS],
        Log => &[DIFF_FLAGS, LOG_FLAGS],
        Show => &[DIFF_FLAGS, SHOW_FLAGS],
        Blame => &[BLAME_FLAGS],
    };
    if flags.iter().any(|list| list.contains(&option)) {
        return true;
    }
    let mut valued: Vec<(&str, Value)> = Vec::new();
    if command.shows_diffs() {
        valued.extend([
            ("-U", Value::Count),
            ("--unified=", Value::Count),
            ("--diff-filter=", Value::Filter),
            ("-S", Value::Text),
            ("-G", Value::Text),
        ]);
    }
    match command {
        Log => {
            valued.extend([
                ("-n", Value::Count),
                ("--max-count=", Value::Count),
                ("--skip=", Value::Count),
                ("--pretty=", Value::Pretty),
                ("--format=", Value::Pretty),
            ]);
            valued.extend(LOG_VALUED.iter().map(|name| (*name, Value::Text)));
        }
        Show => valued.extend([("--pretty=", Value::Pretty), ("--format=", Value::Pretty)]),
        Blame => valued.push(("-L", Value::Text)),
        Status | Diff => {}
    }
    valued.iter().any(|(prefix, value)| {
        let value_part = if prefix.starts_with("--") && !prefix.ends_with('=') {
            option.strip_prefix(&format!("{prefix}="))
        } else {
            option.strip_prefix(prefix)
        };
        value_part.is_some_and(|v| value.accepts(v))
    })
}

/// A revision or range: never an option, never `REV:PATH` (which would
/// read a file by a path the sandbox never saw) or `:/text`.
fn check_revision(command: GitCommand, rev: &str) -> Result<(), GitError> {
    if command == GitCommand::Status {
        return Err(GitError::Refused {
            arg: shown_path(rev),
            why: "git status takes no revision; give paths after '--'".to_owned(),
        });
    }
    if rev.contains(':') {
        return Err(GitError::Refused {
            arg: shown_path(rev),
            why: "a revision may not hold ':' (REV:PATH reads a file; use read_file, or \
                  git show REV -- PATH for its change)"
                .to_owned(),
        });
    }
    if rev.is_empty() {
        return Err(GitError::Refused {
            arg: String::new(),
            why: "an empty revision".to_owned(),
        });
    }
    Ok(())
}

/// Options that print a file's text (a patch): with `--follow`, whose one
/// path may have been renamed from a dotenv file, they are refused.
const PATCH_OPTIONS: &[&str] = &[
    "-p",
    "--patch",
    "-W",
    "--function-context",
    "--word-diff",
    "-U",
    "--unified=",
];

/// `log --follow` takes exactly one path and shows no patch: git follows
/// one pathspec only, so the dotenv exclusions cannot be added.
fn check_follow(parsed: &Parsed) -> Result<(), GitError> {
    if !parsed.options.iter().any(|o| o == "--follow") {
        return Ok(());
    }
    if parsed.paths.len() != 1 {
        return Err(GitError::Refused {
            arg: "--follow".to_owned(),
            why: "--follow needs exactly one path after '--' (e.g. [\"--follow\", \"--\", \"src/lib.rs\"])"
                .to_owned(),
        });
    }
    let patch = parsed.options.iter().find(|o| {
        PATCH_OPTIONS.iter().any(|p| {
            o.as_str() == *p
                || (p.len() == 2 && o.starts_with(p))
                || (p.ends_with('=') && o.starts_with(p))
        })
    });
    match patch {
        Some(option) => Err(GitError::Refused {
            arg: shown_path(option),
            why: "--follow shows no patch (its path may have been renamed from a dotenv \
                  file); use --stat or --name-status, then git show REV -- PATH"
                .to_owned(),
        }),
        None => Ok(()),
    }
}

/// `blame` takes one path and at most one revision; `log --follow` one
/// path.
fn check_counts(command: GitCommand, parsed: &Parsed) -> Result<(), GitError> {
    if command == GitCommand::Log {
        return check_follow(parsed);
    }
    if command != GitCommand::Blame {
        return Ok(());
    }
    if parsed.paths.len() != 1 {
        return Err(GitError::BlameOnePath);
    }
    if parsed.revisions.len() > 1 {
        return Err(GitError::Refused {
            arg: shown_path(&parsed.revisions[1]),
            why: "git blame takes at most one revision".to_owned(),
        });
    }
    Ok(())
}

//! What the command line says about hooks, parsed once in `config`: a
//! `--hook EVENT=COMMAND` (the command split shell-style, never run by a
//! shell) and a `--deny-tool` / `--allow-tool` pattern (a tool-name glob
//! with an optional argument glob). A value that does not parse is a usage
//! error with a one-line message.

use std::fmt;

use globset::{Glob, GlobBuilder, GlobMatcher};
use serde_json::Value;

/// The loop events a shell hook can be attached to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HookEvent {
    /// Before a validated call runs: run it, run it with other arguments,
    /// or block it.
    BeforeToolCall,
    /// After a call ran: replace fields of its result.
    AfterToolCall,
    /// When a turn is over: end the run or ask for one more request.
    FinishTurn,
}

impl HookEvent {
    /// Every event, in the order the help lists them.
    pub const ALL: [HookEvent; 3] = [
        HookEvent::BeforeToolCall,
        HookEvent::AfterToolCall,
        HookEvent::FinishTurn,
    ];

    /// The event's name on the command line and in the hook's input.
    pub fn as_str(self) -> &'static str {
        match self {
            HookEvent::BeforeToolCall => "before-tool-call",
            HookEvent::AfterToolCall => "after-tool-call",
            HookEvent::FinishTurn => "finish-turn",
        }
    }

    /// The event named `name`.
    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|event| event.as_str() == name)
    }
}

impl fmt::Display for HookEvent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One `--hook`: the event, and the program with its arguments.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HookSpec {
    /// When it runs.
    pub event: HookEvent,
    /// The program (looked up in `PATH` when it has no `/`).
    pub program: String,
    /// Its arguments.
    pub args: Vec<String>,
    /// The command as the user wrote it, for messages.
    pub command: String,
}

/// A `--hook`, `--deny-tool` or `--allow-tool` value that does not parse.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SpecError {
    /// `--hook` without `EVENT=`.
    #[error(
        "invalid --hook '{0}': expected EVENT=COMMAND, EVENT one of before-tool-call, \
         after-tool-call, finish-turn"
    )]
    NoEvent(String),
    /// An event leash does not know.
    #[error(
        "invalid --hook '{value}': unknown event '{event}' (known: before-tool-call, \
         after-tool-call, finish-turn)"
    )]
    UnknownEvent {
        /// The whole value.
        value: String,
        /// The event as given.
        event: String,
    },
    /// The command is empty or its quotes do not close.
    #[error("invalid --hook '{value}': {problem}")]
    Command {
        /// The whole value.
        value: String,
        /// What is wrong.
        problem: &'static str,
    },
    /// The program is not there: a hook that could never run is refused
    /// before the run rather than blocking every call of it.
    #[error("invalid --hook '{value}': {problem}")]
    Program {
        /// The whole value.
        value: String,
        /// What is wrong.
        problem: String,
    },
    /// A tool pattern that does not parse.
    #[error("invalid {flag} '{value}': {problem}")]
    Pattern {
        /// `--deny-tool` or `--allow-tool`.
        flag: &'static str,
        /// The pattern as given.
        value: String,
        /// What is wrong.
        problem: String,
    },
}

impl HookSpec {
    /// Parses `EVENT=COMMAND`. The command is split like a POSIX shell
    /// splits words (quotes and backslashes), but no shell runs it: write
    /// `sh -c '...'` for pipes, variables or redirections.
    pub fn parse(value: &str) -> Result<Self, SpecError> {
        let (event, command) = value
            .split_once('=')
            .ok_or_else(|| SpecError::NoEvent(value.to_owned()))?;
        let event = HookEvent::from_name(event.trim()).ok_or_else(|| SpecError::UnknownEvent {
            value: value.to_owned(),
            event: event.trim().to_owned(),
        })?;
        let problem = |problem| SpecError::Command {
            value: value.to_owned(),
            problem,
        };
        let mut words = shlex::split(command)
            .ok_or_else(|| problem("the command's quotes or escapes do not close"))?
            .into_iter();
        let program = words
            .next()
            .filter(|program| !program.is_empty())
            .ok_or_else(|| problem("the command is empty"))?;
        Ok(HookSpec {
            event,
            program,
            args: words.collect(),
            command: command.trim().to_owned(),
        })
    }
}

impl HookSpec {
    /// Checks that the program can be started: a path (with a `/`) must be
    /// an executable file, a bare name must be one in a directory of
    /// `path` (the `PATH` variable).
    pub fn check_program(&self, path: Option<&str>) -> Result<(), SpecError> {
        use std::os::unix::fs::PermissionsExt;
        let executable = |file: &std::path::Path| {
            file.metadata()
                .is_ok_and(|meta| meta.is_file() && meta.permissions().mode() & 0o111 != 0)
        };
        let (found, problem) = if self.program.contains('/') {
            (
                executable(std::path::Path::new(&self.program)),
                format!("{} is not an executable file", self.program),
            )
        } else {
            (
                path.is_some_and(|path| {
                    std::env::split_paths(path).any(|dir| executable(&dir.join(&self.program)))
                }),
                format!("{} was not found in PATH", self.program),
            )
        };
        match found {
            true => Ok(()),
            false => Err(SpecError::Program {
                value: format!("{}={}", self.event, self.command),
                problem,
            }),
        }
    }
}

/// `--deny-tool` / `--allow-tool`: a tool name glob (`grep`, `mcp__*`) and
/// an optional glob over one string argument (`read_file(path=**/*.pem)`).
#[derive(Debug, Clone)]
pub struct ToolPattern {
    /// The pattern as given, for the block reason.
    pub text: String,
    name: GlobMatcher,
    argument: Option<(String, GlobMatcher)>,
}

impl PartialEq for ToolPattern {
    fn eq(&self, other: &Self) -> bool {
        self.text == other.text
    }
}

impl ToolPattern {
    /// Parses `NAME` or `NAME(ARG=GLOB)`; `flag` names the flag in errors.
    ///
    /// In the argument glob `*` and `?` stop at `/` and `**` crosses
    /// directories (as in `.gitignore`), so `**/*.pem` matches `a.pem` and
    /// `keys/a.pem`; `{pem,key}` is an alternation.
    pub fn parse(flag: &'static str, value: &str) -> Result<Self, SpecError> {
        let problem = |problem: String| SpecError::Pattern {
            flag,
            value: value.to_owned(),
            problem,
        };
        let text = value.trim();
        let (name, argument) = match text.split_once('(') {
            None => (text, None),
            Some((name, rest)) => {
                let inner = rest
                    .strip_suffix(')')
                    .ok_or_else(|| problem("expected NAME or NAME(ARG=GLOB)".into()))?;
                // `bash(GLOB)` is `bash(command=GLOB)`: the command line.
                let (key, glob) = match inner.split_once('=') {
                    Some(pair) => pair,
                    None if name.trim() == "bash" => ("command", inner),
                    None => {
                        return Err(problem(
                            "expected NAME(ARG=GLOB), e.g. read_file(path=**/*.pem)".into(),
                        ));
                    }
                };
                let key = key.trim();
                if key.is_empty()
                    || !key
                        .chars()
                        .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
                {
                    return Err(problem(format!("'{key}' is not an argument name")));
                }
                // A command line is no path: there `*` crosses `/`.
                let glob = GlobBuilder::new(glob)
                    .literal_separator(key != "command")
                    .build()
                    .map_err(|error| problem(error.kind().to_string()))?;
                (name, Some((key.to_owned(), glob.compile_matcher())))
            }
        };
        let name = name.trim();
        if name.is_empty() {
            return Err(problem("the tool name is empty".into()));
        }
        let name = Glob::new(name).map_err(|error| problem(error.kind().to_string()))?;
        Ok(ToolPattern {
            text: text.to_owned(),
            name: name.compile_matcher(),
            argument,
        })
    }

    /// Whether a call of `tool` with `args` matches: the name matches and,
    /// with an argument glob, the argument is a string that matches it.
    #[cfg(test)]
    pub fn matches(&self, tool: &str, args: &Value) -> bool {
        self.matches_by(tool, args, |glob, _, value| glob.is_match(value))
    }

    /// [`matches`](Self::matches), with the argument judged by `judge(glob,
    /// key, value)` — the policy's rule for other spellings of the same
    /// value (a file tool's path, normalised or followed through symlinks).
    pub fn matches_by(
        &self,
        tool: &str,
        args: &Value,
        judge: impl Fn(&GlobMatcher, &str, &str) -> bool,
    ) -> bool {
        if !self.name.is_match(tool) {
            return false;
        }
        match &self.argument {
            None => true,
            Some((key, glob)) => args
                .get(key)
                .and_then(Value::as_str)
                .is_some_and(|value| judge(glob, key, value)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_bash_pattern_judges_the_whole_command_line() {
        let pattern = ToolPattern::parse("--deny-tool", "bash(git push*)").unwrap();
        assert!(pattern.matches("bash", &json!({"command": "git push https://x/y main"})));
        assert!(!pattern.matches("bash", &json!({"command": "git status"})));
        assert!(ToolPattern::parse("--deny-tool", "read_file(x)").is_err());
    }

    #[test]
    fn a_hook_is_an_event_and_a_command_split_without_a_shell() {
        let hook = HookSpec::parse("before-tool-call=sh -c 'echo \"$1\" | wc -c' x").unwrap();
        assert_eq!(hook.event, HookEvent::BeforeToolCall);
        assert_eq!(hook.program, "sh");
        assert_eq!(hook.args, ["-c", "echo \"$1\" | wc -c", "x"]);
        let hook = HookSpec::parse("finish-turn=./gate.py --strict").unwrap();
        assert_eq!(
            (hook.event, hook.program.as_str()),
            (HookEvent::FinishTurn, "./gate.py")
        );
        assert_eq!(hook.command, "./gate.py --strict");
        // `=` inside the command stays in the command.
        let hook = HookSpec::parse("after-tool-call=env A=1 ./h").unwrap();
        assert_eq!(hook.args, ["A=1", "./h"]);
    }

    #[test]
    fn bad_hooks_are_one_line_usage_errors() {
        let cases = [
            ("./policy.sh", "expected EVENT=COMMAND"),
            ("before_tool_call=./x", "unknown event 'before_tool_call'"),
            ("finish-turn=", "the command is empty"),
            ("finish-turn=  ", "the command is empty"),
            ("finish-turn=sh -c 'oops", "quotes or escapes do not close"),
        ];
        for (value, expected) in cases {
            let error = HookSpec::parse(value).unwrap_err().to_string();
            assert!(error.contains(expected), "{value}: {error}");
            assert!(!error.contains('\n'), "{error}");
        }
    }

    #[test]
    fn a_hook_program_must_be_there() {
        let path = Some("/nonexistent:/bin:/usr/bin");
        let found = HookSpec::parse("finish-turn=sh -c 'exit 0'").unwrap();
        assert_eq!(found.check_program(path), Ok(()));
        let missing = HookSpec::parse("finish-turn=no-such-hook-program --x").unwrap();
        assert_eq!(
            missing.check_program(path).unwrap_err().to_string(),
            "invalid --hook 'finish-turn=no-such-hook-program --x': \
             no-such-hook-program was not found in PATH"
        );
        assert!(missing.check_program(None).is_err());
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("hook.sh");
        std::fs::write(&file, "#!/bin/sh\n").unwrap();
        let spec = HookSpec::parse(&format!("finish-turn={}", file.display())).unwrap();
        let error = spec.check_program(path).unwrap_err().to_string();
        assert!(
            error.ends_with("hook.sh is not an executable file"),
            "{error}"
        );
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o755)).unwrap();
        assert_eq!(spec.check_program(path), Ok(()));
        let dir_spec = HookSpec::parse(&format!("finish-turn={}", dir.path().display())).unwrap();
        assert!(dir_spec.check_program(path).is_err());
    }

    #[test]
    fn tool_patterns_match_names_and_one_argument() {
        let pem = ToolPattern::parse("--deny-tool", "read_file(path=**/*.pem)").unwrap();
        assert!(pem.matches("read_file", &json!({"path": "a.pem"})));
        assert!(pem.matches("read_file", &json!({"path": "keys/deep/a.pem"})));
        assert!(pem.matches("read_file", &json!({"path": "./a.pem"})));
        assert!(!pem.matches("read_file", &json!({"path": "a.pem.txt"})));
        assert!(!pem.matches("read_file", &json!({"path": 5})));
        assert!(!pem.matches("read_file", &json!({})));
        assert!(!pem.matches("grep", &json!({"path": "a.pem"})));
        let mcp = ToolPattern::parse("--allow-tool", "mcp__*").unwrap();
        assert!(mcp.matches("mcp__github__search", &json!({})));
        assert!(!mcp.matches("read_file", &json!({})));
        let one = ToolPattern::parse("--deny-tool", " grep ").unwrap();
        assert!(one.matches("grep", &json!({"pattern": "x"})));
        assert!(!one.matches("grep2", &json!({})));
        let alt = ToolPattern::parse("--deny-tool", "*(path=*.{pem,key})").unwrap();
        assert!(alt.matches("list_dir", &json!({"path": "x.key"})));
        assert!(!alt.matches("list_dir", &json!({"path": "d/x.key"})));
    }

    #[test]
    fn bad_patterns_are_one_line_usage_errors() {
        for value in [
            "",
            "read_file(path=*.pem",
            "read_file(*.pem)",
            "read_file(=*.pem)",
            "read_file(pa th=*)",
            "read_file(path=[)",
            "(path=*)",
        ] {
            let error = ToolPattern::parse("--deny-tool", value)
                .unwrap_err()
                .to_string();
            assert!(error.starts_with("invalid --deny-tool '"), "{error}");
            assert!(!error.contains('\n'), "{error}");
        }
    }
}

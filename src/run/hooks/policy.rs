//! `--deny-tool` and `--allow-tool`: the declarative shorthand of a
//! `before-tool-call` hook, blocking with a stock reason and no process.
//!
//! A pattern judges what the tool will touch, not how the model spelled
//! it: a path argument of a built-in file tool also matches in the form
//! the sandbox itself resolves it from ([`crate::tools::sandbox::lexical`]:
//! root-relative, no `./`, `//`, `/./` or trailing `/`), so `./secret/s.txt`,
//! `x.pem/` or the absolute path inside the root cannot slip past
//! `read_file(path=secret/**)` or `read_file(path=**/*.pem)`. The spelling
//! as given matches too, so normalising never makes a pattern block less.
//! Must never judge a path by anything but that one shared normalisation.

use std::path::Path;

use serde_json::Value;

use super::spec::ToolPattern;
use crate::tools::sandbox::{Lexical, Sandbox, lexical};

/// The arguments of the built-in tools that name a path under the root
/// (each tool's argument struct: `path` for all six).
const PATH_ARGUMENTS: [(&str, &str); 6] = [
    ("read_file", "path"),
    ("list_dir", "path"),
    ("grep", "path"),
    ("find", "path"),
    ("write_file", "path"),
    ("edit_file", "path"),
];

/// The deny and allow patterns of a run.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Policy {
    /// A call matching any of these is blocked.
    pub deny: Vec<ToolPattern>,
    /// When not empty, a call matching none of these is blocked.
    pub allow: Vec<ToolPattern>,
}

impl Policy {
    /// The reason a call of `tool` with `args` is blocked, or `None` when
    /// it may run. Deny wins over allow. `root` is the file tools' sandbox
    /// (`None` when no file tool is offered): an absolute path is made
    /// relative to it.
    pub fn check(&self, tool: &str, args: &Value, root: Option<&Sandbox>) -> Option<String> {
        let matches = |p: &ToolPattern| {
            p.matches_any_form(tool, args, |key, value| normalised(root, tool, key, value))
        };
        if let Some(pattern) = self.deny.iter().find(|p| matches(p)) {
            return Some(format!(
                "blocked: this call of {tool} is denied by --deny-tool {}; do not retry it",
                pattern.text
            ));
        }
        if !self.allow.is_empty() && !self.allow.iter().any(matches) {
            let allowed: Vec<&str> = self.allow.iter().map(|p| p.text.as_str()).collect();
            return Some(format!(
                "blocked: this call of {tool} matches no --allow-tool pattern (allowed: {}); \
                 do not retry it",
                allowed.join(", ")
            ));
        }
        None
    }
}

/// The normalised form of `value` when it is a path argument of a built-in
/// file tool that lies inside the root by its spelling (`.` for the root
/// itself); `None` for any other argument, and for a path above or outside
/// the root (the sandbox refuses those whatever a pattern says).
pub fn normalised(root: Option<&Sandbox>, tool: &str, key: &str, value: &str) -> Option<String> {
    if !PATH_ARGUMENTS.contains(&(tool, key)) {
        return None;
    }
    let form = match root {
        Some(sandbox) => sandbox.lexical(value),
        // No file tool is offered: only a relative path has a form.
        None if Path::new(value).is_absolute() => return None,
        None => lexical(Path::new(""), None, value),
    };
    match form {
        Lexical::Inside(path) if path.as_os_str().is_empty() => Some(".".to_owned()),
        Lexical::Inside(path) => path.to_str().map(str::to_owned),
        Lexical::Outside => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn patterns(flag: &'static str, list: &[&str]) -> Vec<ToolPattern> {
        list.iter()
            .map(|p| ToolPattern::parse(flag, p).unwrap())
            .collect()
    }

    #[test]
    fn deny_wins_and_allow_blocks_everything_else() {
        let policy = Policy {
            deny: patterns("--deny-tool", &["read_file(path=**/*.pem)"]),
            allow: patterns("--allow-tool", &["read_file", "list_dir(path=docs/**)"]),
        };
        assert_eq!(
            policy.check("read_file", &json!({"path": "a.txt"}), None),
            None
        );
        assert_eq!(
            policy.check("read_file", &json!({"path": "k/a.pem"}), None),
            Some(
                "blocked: this call of read_file is denied by --deny-tool \
                 read_file(path=**/*.pem); do not retry it"
                    .into()
            )
        );
        assert_eq!(
            policy.check("list_dir", &json!({"path": "docs/x"}), None),
            None
        );
        let refused = policy
            .check("list_dir", &json!({"path": "src"}), None)
            .unwrap();
        assert!(
            refused.contains(
                "matches no --allow-tool pattern (allowed: read_file, list_dir(path=docs/**))"
            ),
            "{refused}"
        );
        assert!(policy.check("grep", &json!({}), None).is_some());
        assert_eq!(Policy::default().check("grep", &json!({}), None), None);
    }

    #[test]
    fn path_arguments_are_judged_in_the_sandboxs_own_form() {
        let dir = tempfile::tempdir().unwrap();
        let sandbox = Sandbox::new(dir.path()).unwrap();
        let root = sandbox.root().display().to_string();
        let form = |value: &str| normalised(Some(&sandbox), "read_file", "path", value);
        for (value, expected) in [
            ("secret/s.txt", Some("secret/s.txt")),
            ("./secret/s.txt", Some("secret/s.txt")),
            ("secret//s.txt", Some("secret/s.txt")),
            ("secret/./s.txt/", Some("secret/s.txt")),
            ("x.pem/", Some("x.pem")),
            (".", Some(".")),
            ("./", Some(".")),
            ("a/../b", Some("b")),
            ("../b", None),
            ("/etc/passwd", None),
        ] {
            assert_eq!(form(value).as_deref(), expected, "{value}");
        }
        assert_eq!(form(&format!("{root}/k/a.pem")).as_deref(), Some("k/a.pem"));
        assert_eq!(form(&root).as_deref(), Some("."));
        // Only the file tools' path arguments; no root, no absolute form.
        assert_eq!(
            normalised(Some(&sandbox), "read_file", "pattern", "./x"),
            None
        );
        assert_eq!(
            normalised(Some(&sandbox), "mcp__fs__read", "path", "./x"),
            None
        );
        assert_eq!(
            normalised(None, "grep", "path", "./x/").as_deref(),
            Some("x")
        );
        assert_eq!(normalised(None, "grep", "path", "/x"), None);
        let policy = Policy {
            deny: patterns("--deny-tool", &["read_file(path=secret/**)"]),
            allow: Vec::new(),
        };
        let args = json!({"path": format!("{root}/./secret//s.txt")});
        assert!(policy.check("read_file", &args, Some(&sandbox)).is_some());
    }
}

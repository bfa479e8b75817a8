//! `--deny-tool` and `--allow-tool`: the declarative shorthand of a
//! `before-tool-call` hook, blocking with a stock reason and no process.
//!
//! A pattern judges what the tool will touch, not how the model spelled
//! it. A path argument of a built-in file tool has, besides its spelling,
//! the form the sandbox resolves it from ([`leash_tools::sandbox::lexical`]:
//! root-relative, no `./`, `//`, `/./` or trailing `/`) and the file it
//! leads to once symlinks inside the root are followed
//! ([`Sandbox::touched`] of that form: for a spelling the sandbox refuses,
//! such as any `..`, the file its form would lead to). A deny pattern
//! blocks when it matches any of the three, so `./secret/s.txt`, `x.pem/`,
//! the absolute path inside the root, a planted `docs/notes -> ../secret`
//! or `x/../docs/notes/s.txt` cannot slip past `read_file(path=secret/**)`
//! (the model is told the pattern denies the file, not invited by a `..`
//! refusal to retry without it); an allow pattern lets a call through only
//! when it matches the file touched, so a link inside `docs/` does not
//! widen `read_file(path=docs/**)`. Must never judge a path by anything
//! but the sandbox's own normalisation and resolution.

use std::path::Path;

use serde_json::Value;

use super::command_hooks::spec::ToolPattern;
use leash_tools::sandbox::{Lexical, Sandbox, lexical};

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
        let denied = |p: &&ToolPattern| {
            p.matches_by(tool, args, |glob, key, value| {
                let (form, file) = forms(root, tool, key, value);
                glob.is_match(value)
                    || form.is_some_and(|form| glob.is_match(form))
                    || file.is_some_and(|file| glob.is_match(file))
            })
        };
        let allowed = |p: &ToolPattern| {
            p.matches_by(tool, args, |glob, key, value| {
                match forms(root, tool, key, value) {
                    (_, Some(file)) => glob.is_match(file),
                    (form, None) => {
                        glob.is_match(value) || form.is_some_and(|form| glob.is_match(form))
                    }
                }
            })
        };
        if let Some(pattern) = self.deny.iter().find(denied) {
            return Some(format!(
                "blocked: this call of {tool} is denied by --deny-tool {}; do not retry it",
                pattern.text
            ));
        }
        if !self.allow.is_empty() && !self.allow.iter().any(allowed) {
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

/// A path argument's normalised form and the file that form leads to.
/// The file is the form's, not the spelling's: the sandbox resolves a
/// path it accepts from its form, and a spelling it refuses (any `..`)
/// is judged by where its form would lead, so the model hears what the
/// pattern says of that file rather than a `..` refusal to retry past.
fn forms(
    root: Option<&Sandbox>,
    tool: &str,
    key: &str,
    value: &str,
) -> (Option<String>, Option<String>) {
    let form = normalised(root, tool, key, value);
    let file = form
        .as_deref()
        .and_then(|form| touched(root, tool, key, form));
    (form, file)
}

/// The file a path argument of a built-in file tool leads to under the
/// root, symlinks followed (`.` for the root itself); `None` for any other
/// argument, without a root, or for a path the sandbox refuses.
pub fn touched(root: Option<&Sandbox>, tool: &str, key: &str, value: &str) -> Option<String> {
    if !PATH_ARGUMENTS.contains(&(tool, key)) {
        return None;
    }
    let file = root?.touched(value)?;
    match file.as_os_str().is_empty() {
        true => Some(".".to_owned()),
        false => file.to_str().map(str::to_owned),
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

    /// A root with `secret/s.txt`, `docs/` and a link planted in it,
    /// `docs/notes -> ../secret`.
    fn planted() -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("secret")).unwrap();
        std::fs::create_dir_all(dir.path().join("docs")).unwrap();
        std::fs::write(dir.path().join("secret/s.txt"), "x").unwrap();
        std::os::unix::fs::symlink("../secret", dir.path().join("docs/notes")).unwrap();
        dir
    }

    #[test]
    fn a_path_is_also_judged_by_the_file_its_symlinks_lead_to() {
        let dir = planted();
        std::os::unix::fs::symlink("/etc", dir.path().join("docs/etc")).unwrap();
        let sandbox = Sandbox::new(dir.path()).unwrap();
        let file = |value: &str| touched(Some(&sandbox), "write_file", "path", value);
        assert_eq!(file("docs/notes/s.txt").as_deref(), Some("secret/s.txt"));
        // A file a write would create is where it would be created.
        assert_eq!(
            file("./docs/notes/new/n.txt").as_deref(),
            Some("secret/new/n.txt")
        );
        assert_eq!(file("docs").as_deref(), Some("docs"));
        assert_eq!(file("."), Some(".".to_owned()));
        // Refused by the sandbox, or no path argument: no file.
        assert_eq!(file("docs/etc/passwd"), None);
        assert_eq!(file("../x"), None);
        assert_eq!(touched(Some(&sandbox), "grep", "pattern", "docs"), None);
        assert_eq!(touched(None, "read_file", "path", "docs"), None);
    }

    #[test]
    fn a_spelling_the_sandbox_refuses_is_denied_by_where_its_form_leads() {
        let dir = planted();
        std::os::unix::fs::symlink(".", dir.path().join("dot")).unwrap();
        let sandbox = Sandbox::new(dir.path()).unwrap();
        let denies = |glob: &str, path: &str| {
            let pattern = format!("read_file(path={glob})");
            let policy = Policy {
                deny: patterns("--deny-tool", &[&pattern]),
                allow: Vec::new(),
            };
            policy
                .check("read_file", &json!({ "path": path }), Some(&sandbox))
                .is_some()
        };
        // `nowhere/..` cannot be walked, so the spelling touches no file;
        // its form, `docs/notes/s.txt`, leads into `secret/`.
        assert!(denies("secret/**", "docs/notes/s.txt"));
        assert!(denies("secret/**", "nowhere/../docs/notes/s.txt"));
        // The fuzz target tool_policy's find: `dot` leads to the root, `.`.
        assert!(denies("*.", "dot"));
        assert!(denies("*.", "a/../dot"));
        assert!(denies("*.", "\t.\n\t/../dot"));
        // Nothing the form does not lead to.
        assert!(!denies("secret/**", "nowhere/../docs/s.txt"));
        // An allow pattern judges such a spelling by that file too.
        let allow = Policy {
            deny: Vec::new(),
            allow: patterns("--allow-tool", &["read_file(path=docs/**)"]),
        };
        let allows = |path: &str| {
            allow
                .check("read_file", &json!({ "path": path }), Some(&sandbox))
                .is_none()
        };
        assert!(allows("docs/x.txt"));
        assert!(!allows("docs/../secret/s.txt"));
        assert!(!allows("docs/notes/../../secret/s.txt"));
    }
}

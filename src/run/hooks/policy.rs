//! `--deny-tool` and `--allow-tool`: the declarative shorthand of a
//! `before-tool-call` hook, blocking with a stock reason and no process.

use serde_json::Value;

use super::spec::ToolPattern;

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
    /// it may run. Deny wins over allow.
    pub fn check(&self, tool: &str, args: &Value) -> Option<String> {
        if let Some(pattern) = self.deny.iter().find(|p| p.matches(tool, args)) {
            return Some(format!(
                "blocked: this call of {tool} is denied by --deny-tool {}; do not retry it",
                pattern.text
            ));
        }
        if !self.allow.is_empty() && !self.allow.iter().any(|p| p.matches(tool, args)) {
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
        assert_eq!(policy.check("read_file", &json!({"path": "a.txt"})), None);
        assert_eq!(
            policy.check("read_file", &json!({"path": "k/a.pem"})),
            Some(
                "blocked: this call of read_file is denied by --deny-tool \
                 read_file(path=**/*.pem); do not retry it"
                    .into()
            )
        );
        assert_eq!(policy.check("list_dir", &json!({"path": "docs/x"})), None);
        let refused = policy.check("list_dir", &json!({"path": "src"})).unwrap();
        assert!(
            refused.contains(
                "matches no --allow-tool pattern (allowed: read_file, list_dir(path=docs/**))"
            ),
            "{refused}"
        );
        assert!(policy.check("grep", &json!({})).is_some());
        assert_eq!(Policy::default().check("grep", &json!({})), None);
    }
}

//! The key never leaves through a tool: every result a tool gives (its
//! text, its details, its error) has every key leash knows replaced by
//! `***` before it enters the context, so a file under `--root` that holds
//! a key cannot carry it into the events, the transcript or a request.
//!
//! The replacement is the providers' own ([`crate::provider::http::redact`]),
//! applied per key, longest first so a key that contains another is
//! replaced whole.
//!
//! A tool that shows a piece of a line (`read_file` inside a line longer
//! than its cut, a `git` output cut at its cap) says so in its details
//! (`"cutPiece": true`); then a key cut in two at the piece's edge must not
//! show half of itself either, so the start of a key at the end of a line
//! and the end of a key at the start of a line are hidden too.

use std::sync::Arc;

use futures::future::BoxFuture;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use super::{Tool, ToolError, ToolUpdates};
use crate::protocol::{Content, ToolOutput, ToolSpec};
use crate::provider::ApiKey;
use crate::provider::http::redact;

/// A tool whose results never hold a known key.
pub struct Redacted {
    inner: Arc<dyn Tool>,
    keys: Arc<[ApiKey]>,
}

impl Redacted {
    /// Wraps `inner`; `keys` are every key to hide (empty ones are skipped).
    pub fn new(inner: Arc<dyn Tool>, keys: Arc<[ApiKey]>) -> Self {
        Redacted { inner, keys }
    }
}

/// The keys to hide, in the order [`redact_keys`] needs: no empty key, no
/// repeat, longest first.
pub fn key_set(keys: impl IntoIterator<Item = ApiKey>) -> Arc<[ApiKey]> {
    let mut keys: Vec<ApiKey> = keys
        .into_iter()
        .filter(|key| !key.expose().is_empty())
        .collect();
    keys.sort_by(|a, b| (b.expose().len(), b.expose()).cmp(&(a.expose().len(), a.expose())));
    keys.dedup_by(|a, b| a.expose() == b.expose());
    keys.into()
}

/// Whether `text` holds one of `keys` (an empty key never matches): a
/// variable that must not reach a hook's or an MCP server's environment.
pub fn holds_a_key(text: &str, keys: &[ApiKey]) -> bool {
    keys.iter()
        .any(|key| !key.expose().is_empty() && text.contains(key.expose()))
}

/// `text` with every one of `keys` (as [`key_set`] orders them) replaced.
pub fn redact_keys(text: &str, keys: &[ApiKey]) -> String {
    let mut text = text.to_owned();
    for key in keys {
        if text.contains(key.expose()) {
            text = redact(&text, Some(key));
        }
    }
    text
}

/// The shortest key whose cut pieces are hidden: a shorter key's pieces
/// are too short to tell from ordinary text.
const CUT_KEY_CHARS: usize = 8;
/// The shortest piece of a key hidden at a line's edge.
const CUT_PIECE_CHARS: usize = 4;

/// For a text that is a cut piece: at the end of each line, the longest
/// start of a key (of at least [`CUT_PIECE_CHARS`] characters, keys of at
/// least [`CUT_KEY_CHARS`]) is replaced by `***`; at the start of each
/// line, the longest end of a key. Whole keys are [`redact_keys`]'s.
pub fn redact_cut_edges(text: &str, keys: &[ApiKey]) -> String {
    let keys: Vec<&str> = keys
        .iter()
        .map(ApiKey::expose)
        .filter(|key| key.chars().count() >= CUT_KEY_CHARS)
        .collect();
    if keys.is_empty() {
        return text.to_owned();
    }
    let mut out = String::with_capacity(text.len());
    for line in text.split_inclusive('\n') {
        let body = line.trim_end_matches(['\n', '\r']);
        let ending = &line[body.len()..];
        let head = keys
            .iter()
            .filter_map(|key| key_end_at_start(body, key))
            .max()
            .unwrap_or(0);
        let rest = &body[head..];
        let tail = keys
            .iter()
            .filter_map(|key| key_start_at_end(rest, key))
            .max()
            .unwrap_or(0);
        if head > 0 {
            out.push_str("***");
        }
        out.push_str(&rest[..rest.len() - tail]);
        if tail > 0 {
            out.push_str("***");
        }
        out.push_str(ending);
    }
    out
}

/// The byte length of the longest proper end of `key` that `line` starts
/// with, if it is long enough to hide.
fn key_end_at_start(line: &str, key: &str) -> Option<usize> {
    key.char_indices()
        .skip(1)
        .map(|(at, _)| &key[at..])
        .find(|end| line.starts_with(end))
        .filter(|end| end.chars().count() >= CUT_PIECE_CHARS)
        .map(str::len)
}

/// The byte length of the longest proper start of `key` that `line` ends
/// with, if it is long enough to hide.
fn key_start_at_end(line: &str, key: &str) -> Option<usize> {
    key.char_indices()
        .rev()
        .map(|(at, _)| &key[..at])
        .find(|start| !start.is_empty() && line.ends_with(start))
        .filter(|start| start.chars().count() >= CUT_PIECE_CHARS)
        .map(str::len)
}

fn redact_value(value: &mut Value, keys: &[ApiKey]) {
    match value {
        Value::String(text) => *text = redact_keys(text, keys),
        Value::Array(items) => items.iter_mut().for_each(|item| redact_value(item, keys)),
        Value::Object(map) => map.values_mut().for_each(|item| redact_value(item, keys)),
        _ => {}
    }
}

impl Tool for Redacted {
    fn spec(&self) -> ToolSpec {
        self.inner.spec()
    }

    fn sequential(&self) -> bool {
        self.inner.sequential()
    }

    fn execute<'a>(
        &'a self,
        call_id: &'a str,
        args: Value,
        cancel: CancellationToken,
        updates: ToolUpdates,
    ) -> BoxFuture<'a, Result<ToolOutput, ToolError>> {
        Box::pin(async move {
            let keys = &self.keys;
            match self.inner.execute(call_id, args, cancel, updates).await {
                Ok(mut output) => {
                    let cut_piece = output.details["cutPiece"] == Value::Bool(true);
                    for content in &mut output.content {
                        let Content::Text { text } = content;
                        *text = redact_keys(text, keys);
                        if cut_piece {
                            *text = redact_cut_edges(text, keys);
                        }
                    }
                    redact_value(&mut output.details, keys);
                    Ok(output)
                }
                Err(error) => Err(redact_keys(&error.to_string(), keys).into()),
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tools::testing::call;
    use serde_json::json;

    struct Leaky;

    impl Tool for Leaky {
        fn spec(&self) -> ToolSpec {
            unreachable!()
        }

        fn execute<'a>(
            &'a self,
            _call_id: &'a str,
            args: Value,
            _cancel: CancellationToken,
            _updates: ToolUpdates,
        ) -> BoxFuture<'a, Result<ToolOutput, ToolError>> {
            Box::pin(async move {
                let text = args["text"].as_str().unwrap_or_default().to_owned();
                if args["fail"] == true {
                    return Err(text.into());
                }
                Ok(ToolOutput {
                    content: vec![Content::text(text.clone())],
                    details: json!({"nested": [text], "cutPiece": args["cut"] == true}),
                    terminate: false,
                })
            })
        }
    }

    #[tokio::test]
    async fn every_known_key_is_replaced_in_text_details_and_errors() {
        let keys = key_set([
            ApiKey::new("sk-run-key-123456"),
            ApiKey::new("sk-ant-other-9876"),
            ApiKey::new(""),
            ApiKey::new("sk-run-key-123456"),
            ApiKey::new("sk-run-key-123456-longer"),
        ]);
        assert_eq!(keys.len(), 3);
        let tool = Redacted::new(Arc::new(Leaky), keys);
        let text = "A=sk-run-key-123456\nB=sk-ant-other-9876\nC=sk-run-key-123456-longer\n";
        let output = call(&tool, json!({"text": text})).await.unwrap();
        let Content::Text { text: shown } = &output.content[0];
        assert_eq!(shown, "A=***\nB=***\nC=***\n");
        assert_eq!(
            output.details,
            json!({"nested": ["A=***\nB=***\nC=***\n"], "cutPiece": false})
        );
        let error = call(&tool, json!({"text": text, "fail": true}))
            .await
            .unwrap_err();
        assert_eq!(error, "A=***\nB=***\nC=***\n");
    }

    #[tokio::test]
    async fn a_key_cut_at_a_piece_edge_shows_neither_half() {
        let keys = key_set([ApiKey::new("sk-run-key-123456"), ApiKey::new("short7k")]);
        let tool = Redacted::new(Arc::new(Leaky), keys);
        let shown = |output: ToolOutput| {
            let Content::Text { text } = &output.content[0];
            text.clone()
        };
        let end = "aaaa sk-run-key-12\n\n[truncated: …]";
        let start = "3456 and on\nsk-\nshort7";
        let out = call(&tool, json!({"text": end, "cut": true}))
            .await
            .unwrap();
        assert_eq!(shown(out), "aaaa ***\n\n[truncated: …]");
        let out = call(&tool, json!({"text": start, "cut": true}))
            .await
            .unwrap();
        // "sk-" (under 4 chars) and "short7" (of a key under 8) stay.
        assert_eq!(shown(out), "*** and on\nsk-\nshort7");
        // A whole piece is left alone when the tool cut nothing.
        let out = call(&tool, json!({"text": end})).await.unwrap();
        assert_eq!(shown(out), end);
    }

    #[tokio::test]
    async fn read_file_pieces_of_a_line_never_show_a_cut_key() {
        use crate::tools::read_file::{MAX_BYTES, ReadFile};
        use crate::tools::sandbox::Sandbox;
        use crate::tools::testing::tree;
        let key = "sk-proj-abcdefghijklmnopqrstuvwxyz0123456789";
        let tree = tree("x", "x");
        let line = format!("{}{key}{}", "a".repeat(MAX_BYTES - 20), "b".repeat(100));
        std::fs::write(tree.root.join("long.txt"), line).unwrap();
        let read_file = ReadFile::new(Arc::new(Sandbox::new(&tree.root).unwrap()));
        let tool = Redacted::new(Arc::new(read_file), key_set([ApiKey::new(key)]));
        let first = call(&tool, json!({"path": "long.txt"})).await.unwrap();
        let Content::Text { text: first } = &first.content[0];
        let second = call(&tool, json!({"path": "long.txt", "byte_offset": MAX_BYTES}))
            .await
            .unwrap();
        let Content::Text { text: second } = &second.content[0];
        assert!(
            first.contains("a***\n\n[truncated"),
            "{}",
            &first[MAX_BYTES - 40..]
        );
        assert!(second.starts_with("***bbb"), "{}", &second[..40]);
        assert!(!first.contains("sk-proj") && !second.contains("xyz0123"));
    }
}

//! The key never leaves through a tool: every result a tool gives (its
//! text, its details, its error) has every key leash knows replaced by
//! `***` before it enters the context, so a file under `--root` that holds
//! a key cannot carry it into the events, the transcript or a request.
//!
//! This file is only the wrapper; the redaction itself is
//! `leash_protocol::secret`'s, the one home of the key. A tool that shows a piece
//! of a line (`read_file` inside a line longer than its cut, a `git` output
//! cut at its cap) says so in its details (`"cutPiece": true`); then the
//! key halves at the piece's edges are hidden too.

use std::sync::Arc;

use futures::future::BoxFuture;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use super::{Tool, ToolError, ToolUpdates};
use leash_protocol::secret::{ApiKey, bytes_hold_a_key, redact_cut_edges, redact_keys};
use leash_protocol::{Content, ToolOutput, ToolSpec};

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

fn redact_value(value: &mut Value, keys: &[ApiKey]) {
    match value {
        Value::String(text) => *text = redact_keys(text, keys),
        Value::Array(items) => items.iter_mut().for_each(|item| redact_value(item, keys)),
        Value::Object(map) => map.values_mut().for_each(|item| redact_value(item, keys)),
        _ => {}
    }
}

/// One block without a key: text redacted; an attachment whose bytes hold
/// a key (an image's metadata can hold any text) withheld whole, since
/// its bytes cannot be cut without breaking the file.
fn redact_content(content: &mut Content, keys: &[ApiKey], cut_piece: bool) {
    match content {
        Content::Text { text } => {
            *text = redact_keys(text, keys);
            if cut_piece {
                *text = redact_cut_edges(text, keys);
            }
        }
        Content::Attachment(attachment) if bytes_hold_a_key(&attachment.data, keys) => {
            *content = Content::text(format!(
                "[{} withheld: its bytes hold an API key]",
                redact_keys(&attachment.name, keys)
            ));
        }
        Content::Attachment(attachment) => {
            attachment.name = redact_keys(&attachment.name, keys);
        }
    }
}

impl Tool for Redacted {
    fn spec(&self) -> ToolSpec {
        self.inner.spec()
    }

    fn sequential(&self) -> bool {
        self.inner.sequential()
    }

    fn prepare_arguments(&self, args: Value) -> Value {
        self.inner.prepare_arguments(args)
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
                        redact_content(content, keys, cut_piece);
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
    use crate::testing::call;
    use leash_protocol::secret::key_set;
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
                    usage: None,
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
        let shown = output.content[0].as_text().unwrap();
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
        let shown = |output: ToolOutput| output.content[0].as_text().unwrap().to_owned();
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
        use crate::read_file::{MAX_BYTES, ReadFile};
        use crate::sandbox::Sandbox;
        use crate::testing::tree;
        let key = "sk-proj-abcdefghijklmnopqrstuvwxyz0123456789";
        let tree = tree("x", "x");
        let line = format!("{}{key}{}", "a".repeat(MAX_BYTES - 20), "b".repeat(100));
        std::fs::write(tree.root.join("long.txt"), line).unwrap();
        let read_file = ReadFile::new(Arc::new(Sandbox::new(&tree.root).unwrap()));
        let tool = Redacted::new(Arc::new(read_file), key_set([ApiKey::new(key)]));
        let first = call(&tool, json!({"path": "long.txt"})).await.unwrap();
        let first = first.content[0].as_text().unwrap();
        let second = call(&tool, json!({"path": "long.txt", "byte_offset": MAX_BYTES}))
            .await
            .unwrap();
        let second = second.content[0].as_text().unwrap();
        assert!(
            first.contains("a***\n\n[truncated"),
            "{}",
            &first[MAX_BYTES - 40..]
        );
        assert!(second.starts_with("***bbb"), "{}", &second[..40]);
        assert!(!first.contains("sk-proj") && !second.contains("xyz0123"));
    }

    #[tokio::test]
    async fn an_image_whose_bytes_hold_a_key_is_withheld() {
        use crate::read_file::ReadFile;
        use crate::sandbox::Sandbox;
        use crate::testing::tree;
        use leash_media::testing::png_of;
        let key = "sk-proj-abcdefghijklmnopqrstuvwxyz0123456789";
        let tree = tree("x", "x");
        let mut leaky = png_of(2, 2);
        leaky.extend_from_slice(format!("tEXtComment\0{key}").as_bytes());
        std::fs::write(tree.root.join("leaky.png"), leaky).unwrap();
        std::fs::write(tree.root.join("clean.png"), png_of(2, 2)).unwrap();
        let read_file = ReadFile::new(Arc::new(Sandbox::new(&tree.root).unwrap()));
        let tool = Redacted::new(Arc::new(read_file), key_set([ApiKey::new(key)]));
        let out = call(&tool, json!({"path": "leaky.png"})).await.unwrap();
        assert_eq!(
            out.content[1].as_text(),
            Some("[leaky.png withheld: its bytes hold an API key]")
        );
        let out = call(&tool, json!({"path": "clean.png"})).await.unwrap();
        assert!(matches!(out.content[1], Content::Attachment(_)));
    }
}

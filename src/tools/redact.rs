//! The key never leaves through a tool: every result a tool gives (its
//! text, its details, its error) has every key leash knows replaced by
//! `***` before it enters the context, so a file under `--root` that holds
//! a key cannot carry it into the events, the transcript or a request.
//!
//! The replacement is the providers' own ([`crate::provider::http::redact`]),
//! applied per key, longest first so a key that contains another is
//! replaced whole.

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
                    for content in &mut output.content {
                        let Content::Text { text } = content;
                        *text = redact_keys(text, keys);
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
                    details: json!({"nested": [text]}),
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
        assert_eq!(output.details, json!({"nested": ["A=***\nB=***\nC=***\n"]}));
        let error = call(&tool, json!({"text": text, "fail": true}))
            .await
            .unwrap_err();
        assert_eq!(error, "A=***\nB=***\nC=***\n");
    }
}

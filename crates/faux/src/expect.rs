//! A scripted reply's `expect`: what its request must hold — so far the
//! attachments that reached the model, by name, type, size and SHA-256 —
//! checked before the reply plays, an error that says what differs if not.
//!
//! Never looks at an attachment's bytes, only at its record.

use serde::Deserialize;

use leash_protocol::provider::Request;
use leash_protocol::{Attachment, Content, Message};

/// What a scripted reply expects of its request.
#[derive(Debug, Clone, PartialEq, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Expectation {
    /// Every attachment of the request (user messages and tool results, in
    /// order), each matched on the fields given; none more.
    #[serde(default)]
    pub attachments: Option<Vec<ExpectedAttachment>>,
}

/// One attachment as a script expects it; a field left out matches any.
#[derive(Debug, Clone, PartialEq, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ExpectedAttachment {
    /// Its name.
    #[serde(default)]
    pub name: Option<String>,
    /// Its MIME type.
    #[serde(default)]
    pub media_type: Option<String>,
    /// Its size in bytes.
    #[serde(default)]
    pub size: Option<u64>,
    /// The SHA-256 of its bytes, lowercase hex.
    #[serde(default)]
    pub sha256: Option<String>,
}

impl ExpectedAttachment {
    /// What differs between this and `actual`, if anything.
    fn mismatch(&self, actual: &Attachment) -> Option<String> {
        let differs = |field: &str, want: &dyn std::fmt::Display, got: &dyn std::fmt::Display| {
            Some(format!("{field} {got}, expected {want}"))
        };
        if let Some(name) = self.name.as_ref().filter(|n| **n != actual.name) {
            return differs("name", name, &actual.name);
        }
        if let Some(kind) = self
            .media_type
            .as_ref()
            .filter(|k| *k != actual.media_type.mime())
        {
            return differs("mediaType", kind, &actual.media_type.mime());
        }
        if let Some(size) = self.size.filter(|s| *s != actual.size) {
            return differs("size", &size, &actual.size);
        }
        if let Some(hash) = self.sha256.as_ref().filter(|h| **h != actual.sha256) {
            return differs("sha256", hash, &actual.sha256);
        }
        None
    }
}

/// Whether the request meets the reply's expectation: `None` if it does,
/// else the error that says what differs.
pub(super) fn unmet(expect: &Expectation, request: &Request<'_>, number: usize) -> Option<String> {
    let expected = expect.attachments.as_ref()?;
    let actual: Vec<&Attachment> = request
        .messages
        .iter()
        .flat_map(|message| match message {
            Message::User(user) => user.content.as_slice(),
            Message::ToolResult(result) => result.content.as_slice(),
            Message::Assistant(_) | Message::System(_) | Message::Custom(_) => &[],
        })
        .filter_map(|content| match content {
            Content::Attachment(attachment) => Some(attachment),
            Content::Text { .. } => None,
        })
        .collect();
    let problem = if actual.len() != expected.len() {
        Some(format!(
            "{} attachments, expected {}",
            actual.len(),
            expected.len()
        ))
    } else {
        expected
            .iter()
            .zip(&actual)
            .enumerate()
            .find_map(|(index, (want, got))| {
                want.mismatch(got)
                    .map(|problem| format!("attachment {}: {problem}", index + 1))
            })
    };
    problem.map(|problem| {
        format!("the faux script's expectation failed on request {number}: {problem}")
    })
}

#[cfg(test)]
mod tests {
    use super::super::*;
    use futures::StreamExt;
    use leash_protocol::Attachment;

    #[tokio::test]
    async fn an_expectation_checks_the_attachments_that_reached_it() {
        use leash_protocol::{MediaType, UserMessage};
        let script = Script::parse(
            r#"[{"text": "seen", "expect": {"attachments": [{"name": "a.png", "mediaType": "image/png", "sha256": "ab"}]}},
                {"text": "seen", "expect": {"attachments": [{"sha256": "cd"}]}},
                {"text": "seen", "expect": {"attachments": []}}]"#,
            "s",
        )
        .unwrap();
        let provider = FauxProvider::new(script);
        let messages = vec![Message::User(UserMessage {
            content: vec![
                Content::text("look"),
                Content::Attachment(Attachment {
                    name: "a.png".into(),
                    media_type: MediaType::Png,
                    size: 3,
                    sha256: "ab".into(),
                    data: vec![1, 2, 3].into(),
                }),
            ],
            timestamp: 0,
        })];
        let request = || Request {
            transcript: &[],
            model: "faux",
            system: "",
            messages: &messages,
            tools: &[],
            options: Default::default(),
        };
        let events: Vec<_> = provider.stream(request()).collect().await;
        assert_eq!(events.last(), Some(&StreamEvent::Done(StopReason::Stop)));
        let events: Vec<_> = provider.stream(request()).collect().await;
        assert_eq!(
            events,
            vec![StreamEvent::Error(
                "the faux script's expectation failed on request 2: attachment 1: sha256 ab, expected cd".into()
            )]
        );
        let events: Vec<_> = provider.stream(request()).collect().await;
        assert_eq!(
            events,
            vec![StreamEvent::Error(
                "the faux script's expectation failed on request 3: 1 attachments, expected 0"
                    .into()
            )]
        );
    }
}

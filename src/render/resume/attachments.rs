//! The attachments of a resumed conversation (docs/src/resume.md "Resume"). A
//! transcript records an attachment by name, type, size and SHA-256, never
//! its bytes: resuming re-reads each one by its name and sends it only if
//! it is the file the earlier run saw, byte for byte.
//!
//! The hash is what makes this safe against a transcript written by
//! someone else: naming a file (a secret outside the checkout) gets it sent
//! only to whoever already knew its SHA-256, that is, its bytes. The reading
//! itself is the caller's ([`Reread`]), with the rules of the place the
//! bytes first came from: an `--attach` file as `--attach` reads it, a
//! `read_file` image through the sandbox.

use super::error::{ResumeError, at};

use leash_protocol::{Attachment, Content, Message};

/// Where a recorded attachment first came from, which says how it may be
/// read again.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Origin {
    /// `--attach` on an earlier step: a user message's.
    Attach,
    /// A `read_file` result's image.
    ReadFile,
}

/// An attachment of the restored conversation, still without its bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Recorded {
    /// The transcript line that holds it (1-based).
    pub line: usize,
    /// Its message in [`Restored::messages`].
    pub message: usize,
    /// Its block in that message's content.
    pub block: usize,
    /// How it may be read again.
    pub origin: Origin,
}

/// The name `--attach -` records: stdin's bytes are gone after its run.
pub const STDIN: &str = "-";

/// Reads an attachment again by the name it was recorded under. A file
/// whose size is not the record's is not read: a transcript's records,
/// checked against the caps, bound what resuming reads.
pub trait Reread {
    /// An `--attach` file, with `--attach`'s rules and the resuming wire's
    /// caps.
    fn attached(&self, record: &Attachment) -> Result<Attachment, RereadError>;
    /// A `read_file` image, through the sandbox.
    fn read_by_tool(&self, record: &Attachment) -> Result<Attachment, RereadError>;
}

/// Why an attachment was not read again. Never shown: the refusal says
/// only "missing or changed" (docs/src/resume.md "Resume").
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RereadError {
    /// Its file's size is not the record's.
    Resized,
    /// It cannot be read (gone, not a regular file, refused), in one line.
    Unreadable(String),
}

/// Where the attachments of `message` (on `line`, at `index`) are, if it
/// may hold any: only a user message (from `--attach`) and a `read_file`
/// result do. Any other is refused: the transcript holds what no run wrote.
pub(super) fn record(
    message: &Message,
    line: usize,
    index: usize,
    found: &mut Vec<Recorded>,
) -> Result<(), ResumeError> {
    let (content, origin) = match message {
        Message::User(user) => (&user.content, Origin::Attach),
        Message::ToolResult(result) => (&result.content, Origin::ReadFile),
        Message::Assistant(_) | Message::System(_) | Message::Custom(_) => return Ok(()),
    };
    for (block, content) in content.iter().enumerate() {
        let Content::Attachment(attachment) = content else {
            continue;
        };
        if let Message::ToolResult(result) = message
            && (result.tool_name != "read_file" || result.is_error)
        {
            return Err(at(
                line,
                format!(
                    "a {} result holds the attachment {:?}; only a read_file result holds one",
                    result.tool_name, attachment.name
                ),
            ));
        }
        found.push(Recorded {
            line,
            message: index,
            block,
            origin,
        });
    }
    Ok(())
}

/// Every recorded attachment of `messages` read again and given its
/// bytes: [`Restored::reattach`](super::Restored::reattach).
pub(super) fn reattach(
    messages: &mut [Message],
    attachments: &[Recorded],
    reread: &impl Reread,
) -> Result<(), ResumeError> {
    for recorded in attachments {
        let Some(Content::Attachment(attachment)) = content_mut(messages, recorded) else {
            continue;
        };
        let line = recorded.line;
        let name = &attachment.name;
        if recorded.origin == Origin::Attach && name == STDIN {
            return Err(at(
                line,
                "it holds an attachment read from stdin (--attach -), whose bytes no \
                 transcript keeps; it cannot be resumed",
            ));
        }
        let fresh = match recorded.origin {
            Origin::Attach => reread.attached(attachment),
            Origin::ReadFile => reread.read_by_tool(attachment),
        };
        // Whatever went wrong, the refusal says only that: a size, a
        // hash or a reason would tell a crafted record's author about
        // a file of this machine.
        let fresh = fresh.map_err(|_| missing_or_changed(line, name))?;
        if (fresh.media_type, fresh.size, fresh.sha256.as_str())
            != (
                attachment.media_type,
                attachment.size,
                attachment.sha256.as_str(),
            )
        {
            return Err(missing_or_changed(line, name));
        }
        // The name stays as recorded (a text block names its file):
        // the request repeats the earlier one exactly.
        attachment.data = fresh.data;
    }
    Ok(())
}

/// The attachments `messages` hold:
/// [`Restored::attachments`](super::Restored::attachments).
pub(super) fn attachments_of(messages: &[Message]) -> impl Iterator<Item = &Attachment> {
    messages.iter().flat_map(|message| {
        let content: &[Content] = match message {
            Message::User(user) => &user.content,
            Message::ToolResult(result) => &result.content,
            _ => &[],
        };
        content.iter().filter_map(|block| match block {
            Content::Attachment(attachment) => Some(attachment),
            Content::Text { .. } => None,
        })
    })
}

/// The one refusal of a recorded attachment not read again: gone,
/// changed, or refused by `--attach`'s rules, without saying which.
fn missing_or_changed(line: usize, name: &str) -> ResumeError {
    at(
        line,
        format!(
            "the attachment {name:?} is missing or changed since it was recorded: resuming \
             sends only the bytes the run saw, from a file --attach may read"
        ),
    )
}

fn content_mut<'a>(messages: &'a mut [Message], at: &Recorded) -> Option<&'a mut Content> {
    match messages.get_mut(at.message)? {
        Message::User(user) => user.content.get_mut(at.block),
        Message::ToolResult(result) => result.content.get_mut(at.block),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)] // a failed setup step should fail the test loudly

    use std::collections::HashMap;

    use serde_json::{Value, json};

    use super::*;
    use crate::render::resume::{Restored, Wire, restore};
    use leash_media::testing::{padded, png_of};
    use leash_protocol::MediaType;

    /// Files by name, as each reader would find them.
    #[derive(Default)]
    struct Files {
        attached: HashMap<String, Vec<u8>>,
        by_tool: HashMap<String, Vec<u8>>,
    }

    fn read(
        files: &HashMap<String, Vec<u8>>,
        record: &Attachment,
    ) -> Result<Attachment, RereadError> {
        let bytes = files
            .get(&record.name)
            .ok_or(RereadError::Unreadable("No such file or directory".into()))?;
        if bytes.len() as u64 != record.size {
            return Err(RereadError::Resized);
        }
        leash_media::attachment(&record.name, bytes.clone(), None)
            .map_err(|e| RereadError::Unreadable(e.to_string()))
    }

    impl Reread for Files {
        fn attached(&self, record: &Attachment) -> Result<Attachment, RereadError> {
            read(&self.attached, record)
        }
        fn read_by_tool(&self, record: &Attachment) -> Result<Attachment, RereadError> {
            read(&self.by_tool, record)
        }
    }

    /// The record a transcript holds of `bytes` named `name`.
    fn record_of(name: &str, bytes: &[u8]) -> Value {
        let made = leash_media::attachment(name, bytes.to_vec(), None).unwrap();
        serde_json::to_value(Content::Attachment(made)).unwrap()
    }

    /// A faux step: a prompt with `attached`, a read_file call whose
    /// result holds `read` (or a `tool` result), and a reply.
    fn transcript(attached: Value, tool: &str, read: Value) -> String {
        let lines = [
            json!({"role": "session", "schemaVersion": 1, "provider": "faux", "api": "faux",
                   "model": "m", "system": ""}),
            json!({"role": "user", "timestamp": 1,
                   "content": [{"type": "text", "text": "look"}, attached]}),
            json!({"role": "assistant", "provider": "faux", "model": "m", "timestamp": 2,
                   "stopReason": "toolUse",
                   "usage": {"input": 1, "output": 1, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 2},
                   "content": [{"type": "toolCall", "id": "c1", "name": tool, "arguments": {}}]}),
            json!({"role": "toolResult", "toolCallId": "c1", "toolName": tool, "isError": false,
                   "timestamp": 3, "content": [{"type": "text", "text": "Read image"}, read]}),
        ];
        lines.iter().map(|line| format!("{line}\n")).collect()
    }

    fn data(restored: &Restored) -> Vec<(String, Vec<u8>)> {
        restored
            .attachments()
            .map(|a| (a.name.clone(), a.data.to_vec()))
            .collect()
    }

    #[test]
    fn each_attachment_is_read_again_by_where_it_came_from() {
        let shot = png_of(4, 4);
        let diagram = png_of(8, 2);
        let text = transcript(
            record_of("shot.png", &shot),
            "read_file",
            record_of("docs/diagram.png", &diagram),
        );
        let mut restored = restore(&text, Wire::Faux).unwrap();
        assert_eq!(
            restored
                .attachments
                .iter()
                .map(|r| (r.line, r.message, r.block, r.origin))
                .collect::<Vec<_>>(),
            [(2, 0, 1, Origin::Attach), (4, 2, 1, Origin::ReadFile)]
        );
        // Read back, a record holds no bytes.
        assert!(data(&restored).iter().all(|(_, bytes)| bytes.is_empty()));
        let mut files = Files::default();
        files.attached.insert("shot.png".into(), shot.clone());
        files
            .by_tool
            .insert("docs/diagram.png".into(), diagram.clone());
        restored.reattach(&files).unwrap();
        assert_eq!(
            data(&restored),
            [
                ("shot.png".to_owned(), shot),
                ("docs/diagram.png".to_owned(), diagram)
            ]
        );
    }

    #[test]
    fn a_changed_gone_or_misplaced_file_is_refused_naming_its_line_only() {
        let shot = png_of(4, 4);
        let diagram = png_of(8, 2);
        let text = transcript(
            record_of("shot.png", &shot),
            "read_file",
            record_of("diagram.png", &diagram),
        );
        let refused = |files: &Files| {
            let mut restored = restore(&text, Wire::Faux).unwrap();
            restored.reattach(files).unwrap_err().to_string()
        };
        let said = |line: usize, name: &str| {
            format!(
                "line {line}: the attachment {name:?} is missing or changed since it was \
                 recorded: resuming sends only the bytes the run saw, from a file --attach may read"
            )
        };
        // Another file of the same size, another size, none: the same
        // words, with neither its size nor its hash.
        let mut files = Files::default();
        files.attached.insert("shot.png".into(), png_of(4, 5));
        assert_eq!(refused(&files), said(2, "shot.png"));
        files
            .attached
            .insert("shot.png".into(), padded(png_of(4, 4), 100));
        assert_eq!(refused(&files), said(2, "shot.png"));
        files.attached.insert("shot.png".into(), shot);
        assert_eq!(refused(&files), said(4, "diagram.png"));
        // The same bytes under the other reader's name do not count.
        files.attached.insert("diagram.png".into(), diagram);
        assert_eq!(refused(&files), said(4, "diagram.png"));
    }

    #[test]
    fn stdin_and_another_tools_attachment_cannot_be_resumed() {
        let png = png_of(4, 4);
        let from_stdin = transcript(
            record_of(STDIN, &png),
            "read_file",
            json!({"type": "text", "text": ""}),
        );
        let mut restored = restore(&from_stdin, Wire::Faux).unwrap();
        let mut files = Files::default();
        files.attached.insert(STDIN.into(), png.clone());
        assert_eq!(
            restored.reattach(&files).unwrap_err().to_string(),
            "line 2: it holds an attachment read from stdin (--attach -), whose bytes no \
             transcript keeps; it cannot be resumed"
        );
        let smuggled = transcript(
            json!({"type": "text", "text": ""}),
            "grep",
            record_of("x.png", &png),
        );
        assert_eq!(
            restore(&smuggled, Wire::Faux).unwrap_err().to_string(),
            "line 4: a grep result holds the attachment \"x.png\"; only a read_file result holds one"
        );
    }

    #[test]
    fn a_hostile_hash_is_never_shown() {
        let png = png_of(4, 4);
        let mut record = record_of("shot.png", &png);
        record["sha256"] = json!("\u{1b}[31mred\u{1b}[0m and more and more");
        record["mediaType"] = json!(MediaType::Png);
        let text = transcript(record, "read_file", json!({"type": "text", "text": ""}));
        let mut restored = restore(&text, Wire::Faux).unwrap();
        let mut files = Files::default();
        files.attached.insert("shot.png".into(), png);
        let error = restored.reattach(&files).unwrap_err().to_string();
        assert!(
            !error.contains('\u{1b}') && !error.contains("red"),
            "{error}"
        );
        assert!(
            !error.contains("SHA-256") && !error.contains("bytes,"),
            "{error}"
        );
    }
}

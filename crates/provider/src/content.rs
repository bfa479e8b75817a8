//! An attachment in the forms the wires share: its bytes as base64 or as
//! a `data:` URL, a text file as a text block that names it, and the note
//! that stands for an image where a wire cannot carry one.
//!
//! Never sends a byte of an attachment the caller did not hand over, and
//! never lets a file's name break out of the line that names it.

use base64::Engine;

use leash_protocol::Attachment;

/// The bytes as standard base64, with padding.
pub(crate) fn base64(attachment: &Attachment) -> String {
    base64::engine::general_purpose::STANDARD.encode(&attachment.data)
}

/// `data:MIME;base64,...`, the form both OpenAI APIs take inline files in.
pub(crate) fn data_url(attachment: &Attachment) -> String {
    format!(
        "data:{};base64,{}",
        attachment.media_type.mime(),
        base64(attachment)
    )
}

/// A text file as the model reads it: fenced in a `<file>` element that
/// names it, so it tells the file from the prompt around it. The name is
/// quoted as JSON would quote it: a quote or a line break in it stays
/// inside the attribute.
pub(crate) fn file_text(attachment: &Attachment) -> String {
    let name = serde_json::to_string(&attachment.name).unwrap_or_default();
    let text = attachment.text();
    let text = text.strip_suffix('\n').unwrap_or(&text);
    format!("<file name={name}>\n{text}\n</file>")
}

/// What Chat Completions shows for an attachment a tool returned: that
/// API's tool messages hold text only.
pub(crate) fn not_shown_note(attachment: &Attachment) -> String {
    format!(
        "[{} ({}, {} bytes) not shown: a tool result on this API (Chat Completions) holds text only]",
        attachment.name,
        attachment.media_type.mime(),
        attachment.size
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use leash_protocol::MediaType;

    fn text_file(name: &str, text: &str) -> Attachment {
        Attachment {
            name: name.into(),
            media_type: MediaType::Text,
            size: text.len() as u64,
            sha256: String::new(),
            data: text.as_bytes().into(),
        }
    }

    #[test]
    fn a_text_file_is_fenced_and_named() {
        assert_eq!(
            file_text(&text_file("logs/ci.log", "line 1\nline 2\n")),
            "<file name=\"logs/ci.log\">\nline 1\nline 2\n</file>"
        );
        // A hostile name stays one quoted attribute.
        assert_eq!(
            file_text(&text_file("a\">\n</file>", "x")),
            "<file name=\"a\\\">\\n</file>\">\nx\n</file>"
        );
    }

    #[test]
    fn a_data_url_carries_the_type_and_base64() {
        let mut file = text_file("a", "hi");
        file.media_type = MediaType::Png;
        assert_eq!(data_url(&file), "data:image/png;base64,aGk=");
    }
}

//! An attachment as the transcript holds it: the kind of its bytes
//! (`MediaType`) and its record — name, size, SHA-256 — beside the bytes,
//! which are never serialized.

use serde::{Deserialize, Serialize};

/// What kind of file an attachment is, found from its bytes (never its
/// name): the kinds every wire leash speaks can carry in some form.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, schemars::JsonSchema)]
pub enum MediaType {
    /// A PNG image.
    #[serde(rename = "image/png")]
    Png,
    /// A JPEG image.
    #[serde(rename = "image/jpeg")]
    Jpeg,
    /// A GIF image.
    #[serde(rename = "image/gif")]
    Gif,
    /// A WebP image.
    #[serde(rename = "image/webp")]
    Webp,
    /// A PDF document.
    #[serde(rename = "application/pdf")]
    Pdf,
    /// UTF-8 text without NUL bytes.
    #[serde(rename = "text/plain")]
    Text,
}

impl MediaType {
    /// Every kind, in the order messages list them.
    pub const ALL: [MediaType; 6] = [
        MediaType::Png,
        MediaType::Jpeg,
        MediaType::Gif,
        MediaType::Webp,
        MediaType::Pdf,
        MediaType::Text,
    ];

    /// The MIME type, as the wires and the records spell it.
    pub fn mime(self) -> &'static str {
        match self {
            MediaType::Png => "image/png",
            MediaType::Jpeg => "image/jpeg",
            MediaType::Gif => "image/gif",
            MediaType::Webp => "image/webp",
            MediaType::Pdf => "application/pdf",
            MediaType::Text => "text/plain",
        }
    }

    /// The kind a MIME type names, if leash knows it.
    pub fn from_mime(mime: &str) -> Option<MediaType> {
        MediaType::ALL.into_iter().find(|kind| kind.mime() == mime)
    }

    /// Whether it is an image.
    pub fn is_image(self) -> bool {
        matches!(
            self,
            MediaType::Png | MediaType::Jpeg | MediaType::Gif | MediaType::Webp
        )
    }
}

/// A file as the model gets it: its bytes, with the record that stands
/// for them wherever the conversation is written down (name, type, size,
/// SHA-256 — never the bytes, which would bloat a transcript and copy
/// whatever the file holds into every log).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Attachment {
    /// The name it was given by (the path as passed, `-` for stdin).
    pub name: String,
    /// What its bytes are.
    pub media_type: MediaType,
    /// Its size in bytes.
    pub size: u64,
    /// The SHA-256 of its bytes, lowercase hex.
    pub sha256: String,
    /// The bytes, shared (messages are cloned for every event). Never
    /// serialized: a record read back holds none.
    #[serde(skip)]
    #[schemars(skip)]
    pub data: std::sync::Arc<[u8]>,
}

impl Attachment {
    /// The bytes as text, for a text attachment (checked UTF-8 when it
    /// was made; lossy only for a record read back with other bytes).
    pub fn text(&self) -> std::borrow::Cow<'_, str> {
        String::from_utf8_lossy(&self.data)
    }
}

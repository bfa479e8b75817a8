//! Attachments (docs/src/resume.md "Attachments"): a file's bytes made into an
//! [`Attachment`] — its kind found from the bytes ([`sniff`]), its SHA-256
//! taken — and the caps each wire's provider documents ([`limits`]),
//! checked before any request.
//!
//! It never reads a file, never trusts a name or an extension, and never
//! decodes an image: the kind and the dimensions come from header bytes.

#![warn(missing_docs)]

pub mod limits;
pub mod pdf;
pub mod sniff;
#[cfg(any(test, feature = "testing"))]
pub mod testing;

use std::sync::Arc;

use leash_protocol::{Attachment, MediaType};

/// Why bytes could not become an attachment.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MediaError {
    /// Neither an image leash knows, a PDF nor UTF-8 text.
    #[error(
        "it is not a PNG, JPEG, GIF or WebP image, a PDF or UTF-8 text (found by its bytes, not its name)"
    )]
    Unknown,
    /// `--attach-type` said one kind and the bytes are another.
    #[error("--attach-type says {declared}, but its bytes are {}", found.map_or("none of the kinds leash takes", MediaType::mime))]
    NotDeclared {
        /// What `--attach-type` said.
        declared: &'static str,
        /// What the bytes are.
        found: Option<MediaType>,
    },
}

/// `bytes` as an attachment named `name`: the kind from the bytes (and
/// when `declared`, the same kind), the size and the SHA-256.
pub fn attachment(
    name: impl Into<String>,
    bytes: Vec<u8>,
    declared: Option<MediaType>,
) -> Result<Attachment, MediaError> {
    let found = sniff::sniff(&bytes);
    let media_type = match (declared, found) {
        (Some(declared), found) if found != Some(declared) => {
            return Err(MediaError::NotDeclared {
                declared: declared.mime(),
                found,
            });
        }
        (_, Some(found)) => found,
        (_, None) => return Err(MediaError::Unknown),
    };
    Ok(Attachment {
        name: name.into(),
        media_type,
        size: bytes.len() as u64,
        sha256: sha256_hex(&bytes),
        data: Arc::from(bytes),
    })
}

/// The SHA-256 of `bytes`, lowercase hex: how a record names the bytes it
/// stands for.
pub fn sha256_hex(bytes: &[u8]) -> String {
    use std::fmt::Write;
    let digest = ring::digest::digest(&ring::digest::SHA256, bytes);
    let mut hex = String::with_capacity(64);
    for byte in digest.as_ref() {
        let _ = write!(hex, "{byte:02x}");
    }
    hex
}

/// How many bytes `size` bytes take as base64.
pub fn base64_len(size: u64) -> u64 {
    size.div_ceil(3).saturating_mul(4)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::png_of;

    #[test]
    fn an_attachment_is_its_kind_size_and_hash() {
        let made = attachment("notes.md", b"abc".to_vec(), None).unwrap();
        assert_eq!(made.media_type, MediaType::Text);
        assert_eq!(made.size, 3);
        assert_eq!(
            made.sha256,
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
        assert_eq!(&*made.data, b"abc");
    }

    #[test]
    fn a_declared_type_must_be_what_the_bytes_are() {
        let png = png_of(1, 1);
        assert!(attachment("-", png.clone(), Some(MediaType::Png)).is_ok());
        assert_eq!(
            attachment("-", png, Some(MediaType::Pdf)).unwrap_err(),
            MediaError::NotDeclared {
                declared: "application/pdf",
                found: Some(MediaType::Png)
            }
        );
        assert_eq!(
            attachment("x.png", vec![0, 1, 2], None).unwrap_err(),
            MediaError::Unknown
        );
    }

    #[test]
    fn the_record_holds_no_bytes() {
        let made = attachment("shot.png", png_of(2, 2), None).unwrap();
        let json = serde_json::to_value(leash_protocol::Content::Attachment(made)).unwrap();
        assert_eq!(
            json,
            serde_json::json!({
                "type": "attachment",
                "name": "shot.png",
                "mediaType": "image/png",
                "size": 33,
                "sha256": sha256_hex(&png_of(2, 2)),
            })
        );
    }
}

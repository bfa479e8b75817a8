//! The caps on attachments each provider documents (docs/src/resume.md "Attachments"
//! lists them with their sources), and the one check of a request's
//! attachments against them, made before any request is sent.
//!
//! Never rounds a documented limit up: where a page gives MB, it is read as
//! 10^6 bytes, and where a limit is on the base64 text, the raw cap is
//! three quarters of it.

use crate::{base64_len, pdf, sniff};
use leash_protocol::{Attachment, MediaType};

/// The most bytes of one text attachment: the cap of every other file leash
/// is given (`--system-file`, stdin), so text that fits one way fits the other.
pub const TEXT_BYTES: u64 = 16 * 1024 * 1024;

/// Which wire's caps apply.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Wire {
    /// Anthropic Messages.
    Anthropic,
    /// OpenAI Chat Completions.
    ChatCompletions,
    /// OpenAI Responses.
    Responses,
    /// Google's Gemini API.
    Gemini,
    /// Amazon Bedrock's Converse.
    Bedrock,
    /// The scripted model: the strictest of all, so a script that passes
    /// offline passes on every wire.
    Faux,
}

/// The caps of one wire.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Caps {
    /// The API's name in messages.
    pub api: &'static str,
    /// The most bytes of one image.
    pub image_bytes: u64,
    /// The longest side of an image, in pixels (`u32::MAX`: none stated).
    pub image_side: u32,
    /// With more than this many images in one request, `many_side` applies.
    pub many_images: usize,
    /// The longest side with more than `many_images` images.
    pub many_side: u32,
    /// The most images and PDFs in one request.
    pub media_count: usize,
    /// The most bytes of one PDF.
    pub pdf_bytes: u64,
    /// The most pages of PDF in one request.
    pub pdf_pages: u64,
    /// Whether an animated GIF is taken.
    pub animated_gif: bool,
    /// The most bytes of one text file.
    pub text_bytes: u64,
    /// The most bytes all attachments may take as sent (binary as base64,
    /// text as it is) in one request.
    pub request_bytes: u64,
}

/// Anthropic: an image at most 5 MB as base64 (so 3.75 MB raw) and
/// 8000×8000 px, 2000×2000 px with more than 20 images; at most 100 images
/// (and PDFs) a request; 100 pages of PDF; a request body at most 32 MB,
/// which a PDF's base64 must fit in (docs: "Vision", "PDF support").
pub const ANTHROPIC: Caps = Caps {
    api: "anthropic",
    image_bytes: 3_750_000,
    image_side: 8000,
    many_images: 20,
    many_side: 2000,
    media_count: 100,
    pdf_bytes: 32_000_000,
    pdf_pages: 100,
    animated_gif: true,
    text_bytes: TEXT_BYTES,
    request_bytes: 32_000_000,
};

/// OpenAI (both APIs): images up to 50 MB of payload per request and 500
/// images, a GIF only if not animated; PDFs up to 100 pages and 32 MB of
/// content per request (docs: "Images and vision", "File inputs"). No dimension is stated: larger images are
/// scaled down by the server.
pub const OPENAI_CHAT: Caps = Caps {
    api: "openai (chat)",
    image_bytes: 50_000_000 / 4 * 3,
    image_side: u32::MAX,
    many_images: usize::MAX,
    many_side: u32::MAX,
    media_count: 500,
    pdf_bytes: 32_000_000,
    pdf_pages: 100,
    animated_gif: false,
    text_bytes: TEXT_BYTES,
    request_bytes: 50_000_000,
};

/// The Responses API: the same documented caps as Chat Completions.
pub const OPENAI_RESPONSES: Caps = Caps {
    api: "openai (responses)",
    ..OPENAI_CHAT
};

/// Gemini: everything inline in one request of at most 20 MB (base64
/// included); up to 3600 images and 1000 pages of PDF a request; no GIF
/// among its image types (docs: "Image understanding", "Document
/// understanding"). No dimension is stated: the server scales.
pub const GEMINI: Caps = Caps {
    api: "gemini",
    image_bytes: 20_000_000 / 4 * 3,
    image_side: u32::MAX,
    many_images: usize::MAX,
    many_side: u32::MAX,
    media_count: 3600,
    pdf_bytes: 20_000_000 / 4 * 3,
    pdf_pages: 1000,
    animated_gif: false,
    text_bytes: TEXT_BYTES,
    request_bytes: 20_000_000,
};

/// Bedrock's Converse: an image at most 3.75 MB and 8000 px a side, at
/// most 20 images and 5 documents of 4.5 MB each a request (docs:
/// "ImageBlock", "DocumentBlock"); the PDF pages as Anthropic's.
pub const BEDROCK: Caps = Caps {
    api: "bedrock",
    image_bytes: 3_750_000,
    image_side: 8000,
    many_images: 20,
    many_side: 2000,
    media_count: 20,
    pdf_bytes: 4_500_000,
    pdf_pages: 100,
    animated_gif: true,
    text_bytes: TEXT_BYTES,
    request_bytes: 20_000_000,
};

/// The strictest of all, for the scripted model.
pub const FAUX: Caps = Caps {
    api: "faux (the strictest caps of every provider)",
    animated_gif: false,
    ..ANTHROPIC
};

/// The strictest caps of every provider: what a tool that does not know
/// the run's provider (`read_file` on an image) holds a file to.
pub fn strictest() -> &'static Caps {
    &FAUX
}

impl Wire {
    /// The caps that apply on this wire.
    pub fn caps(self) -> &'static Caps {
        match self {
            Wire::Anthropic => &ANTHROPIC,
            Wire::ChatCompletions => &OPENAI_CHAT,
            Wire::Responses => &OPENAI_RESPONSES,
            Wire::Gemini => &GEMINI,
            Wire::Bedrock => &BEDROCK,
            Wire::Faux => &FAUX,
        }
    }
}

impl Caps {
    /// The most bytes of one file of `kind`.
    pub fn file_bytes(&self, kind: MediaType) -> u64 {
        match kind {
            MediaType::Pdf => self.pdf_bytes,
            MediaType::Text => self.text_bytes,
            _ => self.image_bytes,
        }
    }

    /// The most bytes any one file may have, whatever it turns out to be:
    /// how far a file is read before it is refused unseen.
    pub fn largest_file(&self) -> u64 {
        MediaType::ALL
            .into_iter()
            .map(|kind| self.file_bytes(kind))
            .max()
            .unwrap_or(0)
    }
}

/// Why the attachments of a request break a cap; `Display` names the file
/// (when one file is to blame), the limit and the API.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CapError {
    /// One file is larger than its kind may be.
    #[error("{name}: {size} bytes; {api} takes {kind} of at most {limit} bytes")]
    FileTooLarge {
        /// The attachment's name.
        name: String,
        /// Its size.
        size: u64,
        /// `an image`, `a PDF` or `a text file`.
        kind: &'static str,
        /// The cap.
        limit: u64,
        /// The API.
        api: &'static str,
    },
    /// An image is larger than its wire takes, in pixels.
    #[error(
        "{name}: the image is {width}×{height} px; {api} takes images of at most {side}×{side} px{many}"
    )]
    TooManyPixels {
        /// The attachment's name.
        name: String,
        /// Its width.
        width: u32,
        /// Its height.
        height: u32,
        /// The longest side allowed.
        side: u32,
        /// Why a smaller side applies, if it does.
        many: String,
        /// The API.
        api: &'static str,
    },
    /// An animated GIF where only a still one is taken.
    #[error("{name}: an animated GIF; {api} takes only non-animated GIFs")]
    AnimatedGif {
        /// The attachment's name.
        name: String,
        /// The API.
        api: &'static str,
    },
    /// An image whose header gives no dimensions.
    #[error("{name}: its {kind} header is cut short or malformed (no width and height in it)")]
    NoDimensions {
        /// The attachment's name.
        name: String,
        /// Its MIME type.
        kind: &'static str,
    },
    /// Too many images and PDFs in one request.
    #[error("{count} images and PDFs; {api} takes at most {limit} in one request")]
    TooMany {
        /// How many there are.
        count: usize,
        /// The cap.
        limit: usize,
        /// The API.
        api: &'static str,
    },
    /// The PDFs together have more pages than one request may.
    #[error(
        "the PDFs come to {pages} pages (from their page trees); {api} takes at most {limit} in one request"
    )]
    TooManyPages {
        /// How many pages their page trees state.
        pages: u64,
        /// The cap.
        limit: u64,
        /// The API.
        api: &'static str,
    },
    /// Together the attachments are larger than one request may be.
    #[error(
        "the attachments come to {size} bytes as sent (base64 for images and PDFs); {api} takes at most {limit} in one request"
    )]
    RequestTooLarge {
        /// What they take as sent.
        size: u64,
        /// The cap.
        limit: u64,
        /// The API.
        api: &'static str,
    },
}

/// The name of a kind in messages.
fn kind_name(kind: MediaType) -> &'static str {
    match kind {
        MediaType::Pdf => "a PDF",
        MediaType::Text => "a text file",
        _ => "an image",
    }
}

/// Checks one request's attachments against `caps`: each file's size and
/// (for an image) dimensions, then the count and the total as sent.
pub fn check(attachments: &[Attachment], caps: &Caps) -> Result<(), CapError> {
    let images = attachments
        .iter()
        .filter(|a| a.media_type.is_image())
        .count();
    let (side, many) = if images > caps.many_images {
        (
            caps.many_side,
            format!(
                " when a request holds more than {} images (this one holds {images})",
                caps.many_images
            ),
        )
    } else {
        (caps.image_side, String::new())
    };
    for attachment in attachments {
        check_file(attachment, caps, side, &many)?;
    }
    let pages = attachments
        .iter()
        .filter(|a| a.media_type == MediaType::Pdf)
        .filter_map(|a| pdf::page_count(&a.data))
        .fold(0u64, u64::saturating_add);
    if pages > caps.pdf_pages {
        return Err(CapError::TooManyPages {
            pages,
            limit: caps.pdf_pages,
            api: caps.api,
        });
    }
    check_totals(attachments, caps)
}

/// The caps a request's attachments meet by their records alone (type and
/// size, not bytes): how many, and how large as sent. What `--resume`
/// checks before it reads a transcript's attachments again.
pub fn check_totals(attachments: &[Attachment], caps: &Caps) -> Result<(), CapError> {
    let count = attachments
        .iter()
        .filter(|a| a.media_type != MediaType::Text)
        .count();
    if count > caps.media_count {
        return Err(CapError::TooMany {
            count,
            limit: caps.media_count,
            api: caps.api,
        });
    }
    let size = attachments
        .iter()
        .map(|a| match a.media_type {
            MediaType::Text => a.size,
            _ => base64_len(a.size),
        })
        .fold(0u64, u64::saturating_add);
    if size > caps.request_bytes {
        return Err(CapError::RequestTooLarge {
            size,
            limit: caps.request_bytes,
            api: caps.api,
        });
    }
    Ok(())
}

/// One file's own caps: its size, and an image's dimensions.
fn check_file(attachment: &Attachment, caps: &Caps, side: u32, many: &str) -> Result<(), CapError> {
    let kind = attachment.media_type;
    let limit = caps.file_bytes(kind);
    if attachment.size > limit {
        return Err(CapError::FileTooLarge {
            name: attachment.name.clone(),
            size: attachment.size,
            kind: kind_name(kind),
            limit,
            api: caps.api,
        });
    }
    if kind.is_image() {
        let Some((width, height)) = sniff::dimensions(kind, &attachment.data) else {
            return Err(CapError::NoDimensions {
                name: attachment.name.clone(),
                kind: kind.mime(),
            });
        };
        if kind == MediaType::Gif && !caps.animated_gif && sniff::is_animated_gif(&attachment.data)
        {
            return Err(CapError::AnimatedGif {
                name: attachment.name.clone(),
                api: caps.api,
            });
        }
        if width.max(height) > side {
            return Err(CapError::TooManyPixels {
                name: attachment.name.clone(),
                width,
                height,
                side,
                many: many.to_owned(),
                api: caps.api,
            });
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::attachment;
    use crate::testing::*;

    fn file(name: &str, bytes: Vec<u8>) -> Attachment {
        attachment(name, bytes, None).unwrap()
    }

    #[test]
    fn an_image_past_the_size_cap_is_refused_by_name() {
        let big = file("big.png", padded(png_of(10, 10), 3_750_001));
        let error = check(&[big], &ANTHROPIC).unwrap_err();
        assert_eq!(
            error.to_string(),
            "big.png: 3750001 bytes; anthropic takes an image of at most 3750000 bytes"
        );
        let fits = file("ok.png", padded(png_of(10, 10), 3_750_000));
        assert_eq!(check(&[fits], &ANTHROPIC), Ok(()));
    }

    #[test]
    fn dimensions_are_capped_and_tighter_with_many_images() {
        let wide = file("wide.gif", gif_of(8001, 10));
        assert!(matches!(
            check(std::slice::from_ref(&wide), &ANTHROPIC),
            Err(CapError::TooManyPixels { side: 8000, .. })
        ));
        // OpenAI states no dimension: the server scales it down.
        assert_eq!(check(&[wide], &OPENAI_CHAT), Ok(()));
        let mid = file("mid.png", png_of(2001, 10));
        let mut many = vec![mid.clone()];
        assert_eq!(check(&many, &ANTHROPIC), Ok(()));
        many.extend((0..20).map(|i| file(&format!("{i}.png"), png_of(5, 5))));
        let error = check(&many, &ANTHROPIC).unwrap_err().to_string();
        assert!(error.starts_with("mid.png: the image is 2001×10 px; anthropic takes images of at most 2000×2000 px when a request holds more than 20 images (this one holds 21)"), "{error}");
    }

    #[test]
    fn count_and_request_size_are_capped() {
        let many: Vec<_> = (0..101)
            .map(|i| file(&format!("{i}.png"), png_of(5, 5)))
            .collect();
        assert!(matches!(
            check(&many, &ANTHROPIC),
            Err(CapError::TooMany {
                count: 101,
                limit: 100,
                ..
            })
        ));
        // Two PDFs of 15 MB each fit one by one, not together as base64.
        let pdfs = vec![
            file("a.pdf", padded(pdf(), 15_000_000)),
            file("b.pdf", padded(pdf(), 15_000_000)),
        ];
        assert!(matches!(
            check(&pdfs, &ANTHROPIC),
            Err(CapError::RequestTooLarge {
                size: 40_000_000,
                ..
            })
        ));
    }

    #[test]
    fn an_animated_gif_is_refused_where_only_stills_are_taken() {
        let animated = file("spin.gif", gif_frames_of(2));
        assert_eq!(
            check(std::slice::from_ref(&animated), &OPENAI_RESPONSES)
                .unwrap_err()
                .to_string(),
            "spin.gif: an animated GIF; openai (responses) takes only non-animated GIFs"
        );
        assert_eq!(check(&[animated], &ANTHROPIC), Ok(()));
        assert_eq!(
            check(&[file("still.gif", gif_frames_of(1))], &OPENAI_CHAT),
            Ok(())
        );
    }

    #[test]
    fn pdf_pages_are_counted_over_the_request() {
        let hundred = file("a.pdf", pdf_of_pages(100));
        assert_eq!(check(std::slice::from_ref(&hundred), &ANTHROPIC), Ok(()));
        let one_more = vec![hundred, file("b.pdf", pdf_of_pages(1))];
        assert_eq!(
            check(&one_more, &OPENAI_CHAT).unwrap_err().to_string(),
            "the PDFs come to 101 pages (from their page trees); openai (chat) takes at most 100 in one request"
        );
    }

    #[test]
    fn an_image_without_readable_dimensions_is_refused() {
        let cut = file("cut.png", png_of(5, 5)[..14].to_vec());
        assert!(matches!(
            check(&[cut], &ANTHROPIC),
            Err(CapError::NoDimensions { .. })
        ));
    }

    #[test]
    fn faux_is_the_strictest() {
        for caps in [&ANTHROPIC, &OPENAI_CHAT, &OPENAI_RESPONSES] {
            assert!(FAUX.image_bytes <= caps.image_bytes);
            assert!(FAUX.image_side <= caps.image_side);
            assert!(FAUX.media_count <= caps.media_count);
            assert!(FAUX.pdf_bytes <= caps.pdf_bytes);
            assert!(FAUX.pdf_pages <= caps.pdf_pages);
            assert!(!FAUX.animated_gif || caps.animated_gif);
            assert!(FAUX.request_bytes <= caps.request_bytes);
        }
    }
}

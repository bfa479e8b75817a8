//! What a file's bytes are, from its first bytes (magic numbers), and an
//! image's size in pixels, read from its header — no decoder: leash never
//! decodes a picture, it only reads the few header bytes every format puts
//! its dimensions in.
//!
//! Never trusts a name or an extension, never reads past the slice it is
//! given, never panics on a short or hostile header: a header it cannot
//! read gives no dimensions, which the caps refuse.

use leash_protocol::MediaType;

/// The kind of file `bytes` hold: an image (PNG, JPEG, GIF, WebP) or a PDF
/// by its magic number, else text when it is UTF-8 without a NUL byte;
/// `None` for anything else (any other binary).
pub fn sniff(bytes: &[u8]) -> Option<MediaType> {
    if bytes.starts_with(b"\x89PNG\r\n\x1a\n") {
        Some(MediaType::Png)
    } else if bytes.starts_with(&[0xFF, 0xD8, 0xFF]) {
        Some(MediaType::Jpeg)
    } else if bytes.starts_with(b"GIF87a") || bytes.starts_with(b"GIF89a") {
        Some(MediaType::Gif)
    } else if bytes.len() >= 12 && &bytes[..4] == b"RIFF" && &bytes[8..12] == b"WEBP" {
        Some(MediaType::Webp)
    } else if bytes.starts_with(b"%PDF-") {
        Some(MediaType::Pdf)
    } else if !bytes.contains(&0) && std::str::from_utf8(bytes).is_ok() {
        Some(MediaType::Text)
    } else {
        None
    }
}

/// An image's width and height in pixels, from its header; `None` when
/// the header is cut short or malformed (or `kind` is not an image).
pub fn dimensions(kind: MediaType, bytes: &[u8]) -> Option<(u32, u32)> {
    match kind {
        MediaType::Png => png(bytes),
        MediaType::Jpeg => jpeg(bytes),
        MediaType::Gif => gif(bytes),
        MediaType::Webp => webp(bytes),
        MediaType::Pdf | MediaType::Text => None,
    }
}

/// Whether a GIF holds more than one frame (an animation), walked block
/// by block; a GIF cut short counts the frames it has.
pub fn is_animated_gif(bytes: &[u8]) -> bool {
    gif_frames(bytes) > 1
}

fn gif_frames(bytes: &[u8]) -> usize {
    // The global colour table, if any, follows the logical screen.
    let table = |packed: u8| {
        if packed & 0x80 != 0 {
            3usize << ((packed & 7) + 1)
        } else {
            0
        }
    };
    let Some(&packed) = bytes.get(10) else {
        return 0;
    };
    let mut at = 13 + table(packed);
    let mut frames = 0;
    // Skips data sub-blocks (a size byte, that many bytes) to their end.
    let sub_blocks = |mut at: usize| -> Option<usize> {
        loop {
            let size = usize::from(*bytes.get(at)?);
            at += 1;
            if size == 0 {
                return Some(at);
            }
            at += size;
        }
    };
    loop {
        let next = match bytes.get(at) {
            Some(0x21) => sub_blocks(at + 2),
            Some(0x2C) => {
                frames += 1;
                if frames > 1 {
                    return frames;
                }
                let Some(&local) = bytes.get(at + 9) else {
                    return frames;
                };
                // Descriptor, local table, LZW code size, then the data.
                sub_blocks(at + 10 + table(local) + 1)
            }
            _ => None,
        };
        match next {
            Some(next) => at = next,
            None => return frames,
        }
    }
}

fn be16(bytes: &[u8], at: usize) -> Option<u32> {
    let b = bytes.get(at..at.checked_add(2)?)?;
    Some(u32::from(u16::from_be_bytes([b[0], b[1]])))
}

fn le16(bytes: &[u8], at: usize) -> Option<u32> {
    let b = bytes.get(at..at.checked_add(2)?)?;
    Some(u32::from(u16::from_le_bytes([b[0], b[1]])))
}

fn be32(bytes: &[u8], at: usize) -> Option<u32> {
    let b = bytes.get(at..at.checked_add(4)?)?;
    Some(u32::from_be_bytes([b[0], b[1], b[2], b[3]]))
}

fn le24(bytes: &[u8], at: usize) -> Option<u32> {
    let b = bytes.get(at..at.checked_add(3)?)?;
    Some(u32::from(b[0]) | u32::from(b[1]) << 8 | u32::from(b[2]) << 16)
}

/// PNG: the first chunk must be `IHDR`; width and height are its first
/// two big-endian words.
fn png(bytes: &[u8]) -> Option<(u32, u32)> {
    if bytes.get(12..16)? != b"IHDR" {
        return None;
    }
    Some((be32(bytes, 16)?, be32(bytes, 20)?))
}

/// GIF: the logical screen's width and height, little-endian, after the
/// six-byte signature.
fn gif(bytes: &[u8]) -> Option<(u32, u32)> {
    Some((le16(bytes, 6)?, le16(bytes, 8)?))
}

/// JPEG: walk the marker segments to the first start-of-frame (SOF0–SOF15
/// but DHT `C4`, JPG `C8` and DAC `CC`), which holds height then width.
fn jpeg(bytes: &[u8]) -> Option<(u32, u32)> {
    let mut at = 2;
    loop {
        // Fill bytes (0xFF) may pad before a marker.
        while *bytes.get(at)? == 0xFF && *bytes.get(at + 1)? == 0xFF {
            at += 1;
        }
        if *bytes.get(at)? != 0xFF {
            return None;
        }
        let marker = *bytes.get(at + 1)?;
        match marker {
            // Markers without a length.
            0xD0..=0xD9 | 0x01 => {
                at += 2;
                continue;
            }
            0xC0..=0xCF if !matches!(marker, 0xC4 | 0xC8 | 0xCC) => {
                let height = be16(bytes, at + 5)?;
                let width = be16(bytes, at + 7)?;
                return Some((width, height));
            }
            _ => {
                let length = be16(bytes, at + 2)? as usize;
                if length < 2 {
                    return None;
                }
                at = at.checked_add(2 + length)?;
            }
        }
    }
}

/// WebP: the first chunk after `WEBP` says which format — lossy `VP8 `
/// (14-bit sizes after the frame tag and start code), lossless `VP8L`
/// (14-bit sizes minus one, packed after the signature byte) or extended
/// `VP8X` (the canvas, 24-bit sizes minus one).
fn webp(bytes: &[u8]) -> Option<(u32, u32)> {
    match bytes.get(12..16)? {
        b"VP8 " => {
            if bytes.get(23..26)? != [0x9D, 0x01, 0x2A] {
                return None;
            }
            Some((le16(bytes, 26)? & 0x3FFF, le16(bytes, 28)? & 0x3FFF))
        }
        b"VP8L" => {
            if *bytes.get(20)? != 0x2F {
                return None;
            }
            let b = bytes.get(21..25)?;
            let bits = u32::from_le_bytes([b[0], b[1], b[2], b[3]]);
            Some(((bits & 0x3FFF) + 1, ((bits >> 14) & 0x3FFF) + 1))
        }
        b"VP8X" => Some((le24(bytes, 24)? + 1, le24(bytes, 27)? + 1)),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::*;

    #[test]
    fn each_kind_is_known_by_its_bytes_not_its_name() {
        assert_eq!(sniff(&png_of(3, 2)), Some(MediaType::Png));
        assert_eq!(sniff(&jpeg_of(3, 2)), Some(MediaType::Jpeg));
        assert_eq!(sniff(&gif_of(3, 2)), Some(MediaType::Gif));
        assert_eq!(sniff(&webp_vp8x_of(3, 2)), Some(MediaType::Webp));
        assert_eq!(
            sniff(b"%PDF-1.7\n%\xE2\xE3\xCF\xD3\n"),
            Some(MediaType::Pdf)
        );
        assert_eq!(sniff("héllo\n".as_bytes()), Some(MediaType::Text));
        assert_eq!(sniff(b""), Some(MediaType::Text));
        // A NUL byte, or bytes that are not UTF-8: some other binary.
        assert_eq!(sniff(b"text\0more"), None);
        assert_eq!(sniff(b"\xC3\x28"), None);
        assert_eq!(sniff(b"\x7FELF\x02\x01\x01\x00"), None);
    }

    #[test]
    fn dimensions_come_from_each_header() {
        assert_eq!(
            dimensions(MediaType::Png, &png_of(640, 480)),
            Some((640, 480))
        );
        assert_eq!(
            dimensions(MediaType::Gif, &gif_of(300, 20)),
            Some((300, 20))
        );
        assert_eq!(
            dimensions(MediaType::Jpeg, &jpeg_of(1024, 768)),
            Some((1024, 768))
        );
        assert_eq!(
            dimensions(MediaType::Webp, &webp_vp8x_of(9000, 10)),
            Some((9000, 10))
        );
        assert_eq!(
            dimensions(MediaType::Webp, &webp_vp8_of(400, 300)),
            Some((400, 300))
        );
        assert_eq!(
            dimensions(MediaType::Webp, &webp_vp8l_of(16, 9)),
            Some((16, 9))
        );
    }

    #[test]
    fn an_animated_gif_is_told_from_a_still_one() {
        assert!(!is_animated_gif(&gif_of(3, 2)));
        assert!(!is_animated_gif(&gif_frames_of(1)));
        assert!(is_animated_gif(&gif_frames_of(2)));
        // Cut anywhere, or hostile: no panic.
        let two = gif_frames_of(2);
        for cut in 0..two.len() {
            let _ = is_animated_gif(&two[..cut]);
        }
        assert!(!is_animated_gif(b"GIF89a\x01\0\x01\0\xff\0\0"));
    }

    #[test]
    fn a_cut_or_hostile_header_gives_no_dimensions_and_no_panic() {
        for kind in [
            MediaType::Png,
            MediaType::Jpeg,
            MediaType::Gif,
            MediaType::Webp,
        ] {
            let whole = match kind {
                MediaType::Png => png_of(5, 5),
                MediaType::Jpeg => jpeg_of(5, 5),
                MediaType::Gif => gif_of(5, 5),
                _ => webp_vp8x_of(5, 5),
            };
            for cut in 0..whole.len().min(40) {
                let _ = dimensions(kind, &whole[..cut]);
            }
        }
        // A JPEG segment claiming a length that runs off the end.
        assert_eq!(
            dimensions(MediaType::Jpeg, &[0xFF, 0xD8, 0xFF, 0xE0, 0xFF, 0xFF]),
            None
        );
        // A JPEG segment of length 0 cannot loop forever.
        assert_eq!(
            dimensions(MediaType::Jpeg, &[0xFF, 0xD8, 0xFF, 0xE0, 0x00, 0x00]),
            None
        );
    }
}

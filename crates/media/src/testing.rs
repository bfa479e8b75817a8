//! Minimal files of each kind with chosen dimensions, for the tests (unit
//! and, through the `testing` feature, integration): only the header bytes
//! leash reads, padded with zeros to a chosen size. Not decodable images,
//! and never built into a binary that ships.

/// A PNG signature and `IHDR` chunk naming `width`×`height`.
pub fn png_of(width: u32, height: u32) -> Vec<u8> {
    let mut bytes = b"\x89PNG\r\n\x1a\n\0\0\0\x0dIHDR".to_vec();
    bytes.extend_from_slice(&width.to_be_bytes());
    bytes.extend_from_slice(&height.to_be_bytes());
    bytes.extend_from_slice(&[8, 6, 0, 0, 0, 0, 0, 0, 0]);
    bytes
}

/// A JPEG with an APP0 segment, then a baseline start-of-frame.
pub fn jpeg_of(width: u16, height: u16) -> Vec<u8> {
    let mut bytes = vec![0xFF, 0xD8, 0xFF, 0xE0, 0x00, 0x04, b'J', b'F'];
    bytes.extend_from_slice(&[0xFF, 0xC0, 0x00, 0x11, 0x08]);
    bytes.extend_from_slice(&height.to_be_bytes());
    bytes.extend_from_slice(&width.to_be_bytes());
    bytes.extend_from_slice(&[0x03, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xFF, 0xD9]);
    bytes
}

/// A GIF89a logical screen of `width`×`height`.
pub fn gif_of(width: u16, height: u16) -> Vec<u8> {
    let mut bytes = b"GIF89a".to_vec();
    bytes.extend_from_slice(&width.to_le_bytes());
    bytes.extend_from_slice(&height.to_le_bytes());
    bytes.extend_from_slice(&[0, 0, 0, 0x3B]);
    bytes
}

fn riff(chunk: &[u8; 4], body: &[u8]) -> Vec<u8> {
    let mut bytes = b"RIFF".to_vec();
    let size = u32::try_from(4 + 8 + body.len()).unwrap_or(u32::MAX);
    bytes.extend_from_slice(&size.to_le_bytes());
    bytes.extend_from_slice(b"WEBP");
    bytes.extend_from_slice(chunk);
    let chunk_size = u32::try_from(body.len()).unwrap_or(u32::MAX);
    bytes.extend_from_slice(&chunk_size.to_le_bytes());
    bytes.extend_from_slice(body);
    bytes
}

/// An extended WebP (`VP8X`) canvas of `width`×`height` (each at most 2^24).
pub fn webp_vp8x_of(width: u32, height: u32) -> Vec<u8> {
    let mut body = vec![0u8; 4];
    body.extend_from_slice(&(width - 1).to_le_bytes()[..3]);
    body.extend_from_slice(&(height - 1).to_le_bytes()[..3]);
    riff(b"VP8X", &body)
}

/// A lossy WebP (`VP8 `) frame of `width`×`height` (each below 2^14).
pub fn webp_vp8_of(width: u16, height: u16) -> Vec<u8> {
    let mut body = vec![0, 0, 0, 0x9D, 0x01, 0x2A];
    body.extend_from_slice(&width.to_le_bytes());
    body.extend_from_slice(&height.to_le_bytes());
    riff(b"VP8 ", &body)
}

/// A lossless WebP (`VP8L`) of `width`×`height` (each at most 2^14).
pub fn webp_vp8l_of(width: u32, height: u32) -> Vec<u8> {
    let bits = (width - 1) | (height - 1) << 14;
    let mut body = vec![0x2F];
    body.extend_from_slice(&bits.to_le_bytes());
    riff(b"VP8L", &body)
}

/// `bytes` padded with zeros to `size` bytes (a big file of the same kind).
pub fn padded(mut bytes: Vec<u8>, size: usize) -> Vec<u8> {
    if bytes.len() < size {
        bytes.resize(size, 0);
    }
    bytes
}

/// The smallest PDF leash takes for one: its header and an end marker.
pub fn pdf() -> Vec<u8> {
    b"%PDF-1.4\n1 0 obj << /Type /Catalog >> endobj\ntrailer << /Root 1 0 R >>\n%%EOF\n".to_vec()
}

/// A PDF whose page tree says it has `pages` pages (the page objects
/// themselves left out: leash reads only the tree's count).
pub fn pdf_of_pages(pages: u64) -> Vec<u8> {
    format!(
        "%PDF-1.4\n1 0 obj\n<< /Type /Catalog /Pages 2 0 R >>\nendobj\n\
         2 0 obj\n<< /Type /Pages /Kids [] /Count {pages} >>\nendobj\n\
         trailer << /Root 1 0 R >>\n%%EOF\n"
    )
    .into_bytes()
}

/// A 1×1 GIF89a with `frames` frames (each a one-pixel image with its own
/// graphic control extension), as an animation is made.
pub fn gif_frames_of(frames: usize) -> Vec<u8> {
    // Header, a 1×1 screen with a two-colour global table.
    let mut bytes = b"GIF89a\x01\0\x01\0\x80\0\0\0\0\0\xff\xff\xff".to_vec();
    // NETSCAPE2.0 looping extension.
    bytes.extend_from_slice(b"\x21\xff\x0bNETSCAPE2.0\x03\x01\0\0\0");
    for _ in 0..frames {
        bytes.extend_from_slice(b"\x21\xf9\x04\0\x0a\0\0\0");
        bytes.extend_from_slice(b"\x2c\0\0\0\0\x01\0\x01\0\0\x02\x02\x44\x01\0");
    }
    bytes.push(0x3B);
    bytes
}

//! `read_file` on an image: the file whole, as an attachment, within the
//! strictest caps any provider states for one image (the tool does not
//! know the run's provider). Never reads past that cap plus one byte.

use std::io::Read;

use serde_json::json;

use super::ReadFileError;
use leash_media::{limits, sniff};
use leash_protocol::{Attachment, Content, ToolOutput};

/// An image, whole: read up to the strictest cap any provider states for
/// one image (one byte past it tells it is too large), its dimensions
/// checked, returned as a line that says what it is and the image itself.
pub(super) fn read_image(
    path: &str,
    shown: String,
    head: Vec<u8>,
    file: std::fs::File,
) -> Result<ToolOutput, ReadFileError> {
    let image = image_attachment(path, &shown, head, file)?;
    let (width, height) = sniff::dimensions(image.media_type, &image.data).unwrap_or_default();
    let details = json!({
        "path": path,
        "mediaType": image.media_type,
        "size": image.size,
        "sha256": image.sha256,
        "width": width,
        "height": height,
    });
    let line = format!(
        "Read image file {shown} [{}, {width}×{height} px, {} bytes]",
        image.media_type.mime(),
        image.size
    );
    Ok(ToolOutput {
        content: vec![Content::text(line), Content::Attachment(image)],
        details,
        terminate: false,
        usage: None,
    })
}

/// The image `file` holds (`head` already read from it), within the
/// strictest caps: what a call returns and what `--resume` reads again.
pub(super) fn image_attachment(
    path: &str,
    shown: &str,
    head: Vec<u8>,
    file: std::fs::File,
) -> Result<Attachment, ReadFileError> {
    let caps = limits::strictest();
    let rest = caps
        .image_bytes
        .saturating_add(1)
        .saturating_sub(head.len() as u64);
    let mut bytes = head;
    file.take(rest)
        .read_to_end(&mut bytes)
        .map_err(|source| ReadFileError::Io {
            path: shown.to_owned(),
            source,
        })?;
    let refused = |problem: String| ReadFileError::Image {
        path: shown.to_owned(),
        problem,
    };
    if bytes.len() as u64 > caps.image_bytes {
        return Err(refused(format!(
            "it is larger than {} bytes, the most read_file shows of an image",
            caps.image_bytes
        )));
    }
    let image =
        leash_media::attachment(path, bytes, None).map_err(|error| refused(error.to_string()))?;
    limits::check(std::slice::from_ref(&image), caps)
        .map_err(|error| refused(error.to_string()))?;
    Ok(image)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)] // a failed setup step should fail the test loudly

    use std::sync::Arc;

    use serde_json::json;

    use crate::read_file::ReadFile;
    use crate::sandbox::Sandbox;
    use crate::testing::{Fixture, tree};
    use leash_protocol::Content;

    fn fixture() -> Fixture<ReadFile> {
        let tree = tree("x.txt", "x");
        let tool = ReadFile::new(Arc::new(Sandbox::new(&tree.root).unwrap()));
        Fixture { tree, tool }
    }

    #[tokio::test]
    async fn an_image_is_returned_whole_as_an_attachment() {
        use leash_media::testing::png_of;
        use leash_protocol::MediaType;
        let f = fixture();
        // Known by its bytes: the name says nothing.
        let png = png_of(640, 480);
        f.write("shot.dat", &png);
        let output = f.call_output(json!({"path": "shot.dat"})).await.unwrap();
        assert_eq!(
            output.content[0].as_text(),
            Some("Read image file shot.dat [image/png, 640×480 px, 33 bytes]")
        );
        let Content::Attachment(image) = &output.content[1] else {
            panic!("{:?}", output.content)
        };
        assert_eq!(
            (image.media_type, &*image.data, image.name.as_str()),
            (MediaType::Png, png.as_slice(), "shot.dat")
        );
        assert_eq!(output.details["sha256"], image.sha256.as_str());
        // A text file named like an image is read as text.
        f.write("fake.png", "not an image\n");
        assert_eq!(
            f.call(json!({"path": "fake.png"})).await.unwrap(),
            "not an image\n"
        );
    }

    #[tokio::test]
    async fn an_image_past_the_strictest_caps_is_refused_with_the_limit() {
        use leash_media::testing::{gif_of, padded, png_of};
        let f = fixture();
        f.write("big.png", padded(png_of(10, 10), 3_750_001));
        assert_eq!(
            f.call(json!({"path": "big.png"})).await.unwrap_err(),
            "'big.png' is an image leash cannot show: it is larger than 3750000 bytes, the most read_file shows of an image"
        );
        f.write("wide.gif", gif_of(9000, 10));
        let error = f.call(json!({"path": "wide.gif"})).await.unwrap_err();
        assert!(
            error.starts_with(
                "'wide.gif' is an image leash cannot show: wide.gif: the image is 9000×10 px"
            ),
            "{error}"
        );
    }
}

//! The renderer `--events` asks for, picked in one place; above the
//! renderers and the trait they share.

use std::io::Write;

use super::EventRenderer;
use super::format::EventsFormat;
use super::jsonl::JsonlRenderer;
use super::text::TextRenderer;

/// The renderer for `--events`.
pub fn renderer(format: EventsFormat, out: Box<dyn Write + Send>) -> Box<dyn EventRenderer> {
    match format {
        EventsFormat::Text => Box::new(TextRenderer::new(out, true)),
        EventsFormat::None => Box::new(TextRenderer::new(out, false)),
        EventsFormat::Jsonl => Box::new(JsonlRenderer::new(out)),
    }
}

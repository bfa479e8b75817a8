//! What a Responses stream sends, read leniently into structs: each
//! event's `data`, the output items, the response of a terminal event and
//! its usage. Only the fields the decoder reads; every one optional.
//!
//! It must never fail on a field it does not need, and never re-encode an
//! item: a reasoning item's text goes back byte for byte.

use serde::Deserialize;
use serde_json::value::RawValue;

use crate::http;
use leash_protocol::StreamEvent;

/// One event's `data`, read leniently: each event type uses a few of
/// these fields; the rest (`sequence_number`, `item_id`, `logprobs`, ...)
/// are not needed.
#[derive(Debug, Deserialize)]
pub(super) struct WireEvent<'a> {
    #[serde(rename = "type", default)]
    pub(super) kind: Option<String>,
    #[serde(default)]
    pub(super) output_index: Option<usize>,
    #[serde(default)]
    pub(super) summary_index: Option<usize>,
    #[serde(default)]
    pub(super) delta: Option<String>,
    /// `response.function_call_arguments.done`: the whole argument JSON.
    #[serde(default)]
    pub(super) arguments: Option<String>,
    /// `response.output_item.added` / `.done`: the item, kept raw so a
    /// reasoning item goes back byte for byte.
    #[serde(default, borrow)]
    pub(super) item: Option<&'a RawValue>,
    /// The terminal events: the response as it ended.
    #[serde(default)]
    pub(super) response: Option<WireResponse>,
    /// The `error` event's text.
    #[serde(default)]
    pub(super) message: Option<String>,
    #[serde(default)]
    pub(super) code: Option<String>,
    /// A proxy's `{"error": {...}}` in place of an event: ends the stream.
    #[serde(default)]
    pub(super) error: Option<serde::de::IgnoredAny>,
}

/// One output item (`output_item.added` / `.done`).
#[derive(Debug, Default, Deserialize)]
pub(super) struct WireItem {
    #[serde(rename = "type", default)]
    pub(super) kind: Option<String>,
    /// A `function_call`'s id, which its `function_call_output` answers.
    #[serde(default)]
    pub(super) call_id: Option<String>,
    #[serde(default)]
    pub(super) name: Option<String>,
    #[serde(default)]
    pub(super) arguments: Option<String>,
    /// A `reasoning` item's encrypted chain (with
    /// `include: ["reasoning.encrypted_content"]`).
    #[serde(default)]
    pub(super) encrypted_content: Option<String>,
    /// A `reasoning` item's summary parts.
    #[serde(default)]
    pub(super) summary: Option<Vec<WirePart>>,
    /// A `message` item's content parts.
    #[serde(default)]
    pub(super) content: Option<Vec<WirePart>>,
}

/// A summary part (`summary_text`) or a content part (`output_text`,
/// `refusal`).
#[derive(Debug, Deserialize)]
pub(super) struct WirePart {
    #[serde(default)]
    pub(super) text: Option<String>,
    #[serde(default)]
    pub(super) refusal: Option<String>,
}

/// The response object of a terminal event.
#[derive(Debug, Default, Deserialize)]
pub(super) struct WireResponse {
    /// `completed`, `failed`, `incomplete`, `cancelled`, …: what the
    /// response itself says, which a terminal event's name may not.
    #[serde(default)]
    pub(super) status: Option<String>,
    #[serde(default)]
    pub(super) usage: Option<WireUsage>,
    #[serde(default)]
    pub(super) incomplete_details: Option<IncompleteDetails>,
    #[serde(default)]
    pub(super) error: Option<WireError>,
}

#[derive(Debug, Deserialize)]
pub(super) struct IncompleteDetails {
    #[serde(default)]
    pub(super) reason: Option<String>,
}

#[derive(Debug, Deserialize)]
pub(super) struct WireError {
    #[serde(default)]
    pub(super) code: Option<String>,
    #[serde(default)]
    pub(super) message: Option<String>,
}

/// `usage` of a terminal event. `output_tokens` already counts the
/// reasoning tokens (`output_tokens_details.reasoning_tokens`), which
/// [`Usage`](leash_protocol::Usage) has no field of their own for: they are in `output`.
#[derive(Debug, Deserialize)]
pub(super) struct WireUsage {
    #[serde(default)]
    pub(super) input_tokens: Option<u64>,
    #[serde(default)]
    pub(super) output_tokens: Option<u64>,
    #[serde(default)]
    pub(super) input_tokens_details: Option<InputTokensDetails>,
}

#[derive(Debug, Deserialize)]
pub(super) struct InputTokensDetails {
    #[serde(default)]
    pub(super) cached_tokens: Option<u64>,
}

/// The `item` of an `output_item` event.
pub(super) fn parse_item(raw: Option<&RawValue>) -> Result<WireItem, StreamEvent> {
    let Some(raw) = raw else {
        return Ok(WireItem::default());
    };
    serde_json::from_str(raw.get()).map_err(|err| {
        StreamEvent::Error(format!(
            "the provider sent an output item of an unexpected shape ({err}): {}",
            http::snippet(raw.get())
        ))
    })
}

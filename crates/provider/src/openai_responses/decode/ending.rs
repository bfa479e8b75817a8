//! How a Responses stream ends: a terminal event judged by the response's
//! own status, an incomplete reply's reason, the server's error in the
//! words every wire uses, and the usage a terminal event reports.
//!
//! It must never call a failed or cut reply complete.

use crate::driver::provider_error;
use crate::{INCOMPLETE, http};
use leash_protocol::{StopReason, StreamEvent, Usage};

use super::wire::{WireResponse, WireUsage};

/// A terminal event, judged by the response's own `status` first and
/// by the event's name where the status says nothing else: a
/// `response.completed` whose response `failed` is the server's error,
/// not an answer, and one that is `incomplete` is cut like
/// `response.incomplete`. `stop` is how a completed reply ended.
pub(super) fn terminal(
    kind: &str,
    response: Option<&WireResponse>,
    data: &str,
    stop: StopReason,
    out: &mut Vec<StreamEvent>,
) {
    let status = response.and_then(|r| r.status.as_deref());
    if kind == "response.failed" || status == Some("failed") {
        let error = response.and_then(|r| r.error.as_ref());
        let message = error.and_then(|e| e.message.as_deref());
        let code = error.and_then(|e| e.code.as_deref());
        out.push(mid_stream_error(message, code, data));
        return;
    }
    if let Some(usage) = response.and_then(|r| r.usage.as_ref()).and_then(usage) {
        out.push(StreamEvent::Usage(usage));
    }
    let incomplete_event =
        kind == "response.incomplete" && matches!(status, None | Some("incomplete" | "completed"));
    if incomplete_event || status == Some("incomplete") {
        out.push(incomplete(response));
        return;
    }
    match status {
        None | Some("completed") => out.push(StreamEvent::Done(stop)),
        Some(other) => out.push(StreamEvent::Error(format!(
            "the response ended with status '{}' ({kind}); {INCOMPLETE}",
            http::snippet(other)
        ))),
    }
}

/// `response.incomplete`: the output limit is `length`; any other reason
/// (`content_filter`) is an error that names it.
fn incomplete(response: Option<&WireResponse>) -> StreamEvent {
    let reason = response
        .and_then(|r| r.incomplete_details.as_ref())
        .and_then(|details| details.reason.as_deref());
    match reason {
        Some("max_output_tokens") => StreamEvent::Done(StopReason::Length),
        Some("content_filter") => StreamEvent::Error(
            "the provider's content filter stopped the reply (response.incomplete: content_filter)"
                .to_owned(),
        ),
        Some(reason) => StreamEvent::Error(format!(
            "the response ended incomplete ({}); {INCOMPLETE}",
            http::snippet(reason)
        )),
        None => StreamEvent::Error(format!(
            "the response ended incomplete without a reason; {INCOMPLETE}"
        )),
    }
}

/// `response.failed` and `error`: the server's message in the words the
/// other formats use; the event's text when it has no message.
pub(super) fn mid_stream_error(
    message: Option<&str>,
    code: Option<&str>,
    data: &str,
) -> StreamEvent {
    let message = message
        .map(str::trim)
        .filter(|message| !message.is_empty())
        .map(str::to_owned)
        .or_else(|| http::provider_error_message(data))
        .unwrap_or_else(|| http::snippet(data));
    match code.filter(|code| !code.is_empty()) {
        Some(code) => provider_error(&format!("{message} ({code})")),
        None => provider_error(&message),
    }
}

/// The usage of a terminal event: cached input apart from the rest.
/// `None` for an all-zero report.
fn usage(wire: &WireUsage) -> Option<Usage> {
    let input = wire.input_tokens.unwrap_or(0);
    let output = wire.output_tokens.unwrap_or(0);
    let cached = wire
        .input_tokens_details
        .as_ref()
        .and_then(|details| details.cached_tokens)
        .unwrap_or(0);
    if input == 0 && output == 0 {
        return None;
    }
    Some(
        Usage {
            input: input.saturating_sub(cached),
            output,
            cache_read: cached.min(input),
            cache_write: 0,
            total_tokens: 0,
            cost: None,
        }
        .with_total(),
    )
}

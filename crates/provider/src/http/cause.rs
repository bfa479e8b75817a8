//! The one reading of a failed request's error chain: its innermost cause
//! says what happened, the outer layers only where. Shared by the HTTP
//! client and the SSE stream, below both.

/// The innermost cause of an error, which says what actually happened
/// ("Connection refused (os error 111)"); the outer layers only say where.
pub(crate) fn root_cause(err: &(dyn std::error::Error + 'static)) -> String {
    let mut cause = err;
    while let Some(inner) = cause.source() {
        cause = inner;
    }
    cause.to_string()
}

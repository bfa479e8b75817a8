//! The address and the key header.

use super::*;

#[test]
fn the_model_goes_into_the_path_and_alt_sse_into_the_query() {
    assert_eq!(
        model_url("", "gemini-2.5-flash"),
        "https://generativelanguage.googleapis.com/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse"
    );
    assert_eq!(
        model_url("http://127.0.0.1:9/", "models/g"),
        "http://127.0.0.1:9/v1beta/models/g:streamGenerateContent?alt=sse"
    );
    // A hostile model name stays one segment and adds no query.
    assert_eq!(
        model_url("http://h", "../x?key=1#f"),
        "http://h/v1beta/models/..%2Fx%3Fkey=1%23f:streamGenerateContent?alt=sse"
    );
    assert_eq!(
        GenerateContent::key_header("k"),
        ("x-goog-api-key", "k".to_owned())
    );
}

//! Redaction of one key and of the known keys.

use super::*;
use pretty_assertions::assert_eq;

#[test]
fn redaction_replaces_every_occurrence() {
    let key = ApiKey::new("sk-secret-123");
    assert_eq!(
        redact("bad key sk-secret-123 (sk-secret-123)", Some(&key)),
        "bad key *** (***)"
    );
    assert_eq!(redact("nothing here", Some(&key)), "nothing here");
    assert_eq!(redact("sk-secret-123", None), "sk-secret-123");
    assert_eq!(redact("text", Some(&ApiKey::new(""))), "text");
}

#[test]
fn a_short_key_is_redacted_only_as_a_whole_token() {
    let key = ApiKey::new("test");
    assert_eq!(
        redact(
            "HTTP 401: invalid key test; the latest test-suite (test)",
            Some(&key)
        ),
        "HTTP 401: invalid key ***; the latest test-suite (***)"
    );
    assert_eq!(redact("test", Some(&key)), "***");
    assert_eq!(redact("key=test&x=1", Some(&key)), "key=***&x=1");
    assert_eq!(redact("testtest", Some(&key)), "testtest");
    let x = ApiKey::new("x");
    assert_eq!(
        redact("could not connect to http://127.0.0.1:9/v1: x", Some(&x)),
        "could not connect to http://127.0.0.1:9/v1: ***"
    );
    assert_eq!(
        redact("max tokens exceeded", Some(&x)),
        "max tokens exceeded"
    );
    // No letter or digit: nothing a redaction could protect.
    assert_eq!(redact("a - b", Some(&ApiKey::new("-"))), "a - b");
    assert_eq!(redact("a b", Some(&ApiKey::new(" "))), "a b");
    // Eight characters and more: every occurrence, inside words too.
    let long = ApiKey::new("abcdefgh");
    assert_eq!(redact("xabcdefghx", Some(&long)), "x***x");
    // Multi-byte neighbours are read as characters.
    assert_eq!(redact("ékeyé key", Some(&ApiKey::new("key"))), "ékeyé ***");
}

//! Redaction: a key replaced by `***` in text that leaves leash.

use std::sync::Arc;

use super::ApiKey;

/// Keys at least this long are redacted wherever they occur; shorter ones
/// only where they stand as a whole token (see [`redact`]).
pub const SHORT_KEY_CHARS: usize = 8;

/// `text` with the key replaced by `***`, so a server that echoes the key
/// (in an error body, a URL) cannot leak it.
///
/// A real key is long and random, so every occurrence is replaced. A key
/// shorter than `SHORT_KEY_CHARS` characters (a local server's `x` or
/// `test`) would otherwise turn "text" into "***" and "latest" into
/// "la***" all over a message: such a key is replaced only where it
/// stands as a whole token, not inside a longer word (neighbours that
/// are letters, digits, `-` or `_` make it part of one), and one made of
/// no letter or digit at all is left alone. A short key is no secret
/// worth the name; it still never appears on its own.
pub fn redact(text: &str, key: Option<&ApiKey>) -> String {
    let Some(secret) = key.map(ApiKey::expose).filter(|secret| !secret.is_empty()) else {
        return text.to_string();
    };
    if secret.chars().count() >= SHORT_KEY_CHARS {
        return text.replace(secret, "***");
    }
    if !secret.chars().any(char::is_alphanumeric) {
        return text.to_string();
    }
    let mut out = String::with_capacity(text.len());
    let mut copied = 0;
    for (at, _) in text.match_indices(secret) {
        let end = at + secret.len();
        let before = text[..at].chars().next_back();
        let after = text[end..].chars().next();
        if !before.is_some_and(is_token_char) && !after.is_some_and(is_token_char) {
            out.push_str(&text[copied..at]);
            out.push_str("***");
            copied = end;
        }
    }
    out.push_str(&text[copied..]);
    out
}

/// A character that continues a word or a key (`sk-ab_12`), for telling a
/// short key on its own from one inside a longer token.
fn is_token_char(c: char) -> bool {
    c.is_alphanumeric() || c == '-' || c == '_'
}

/// The keys to hide, in the order [`redact_keys`] needs: no empty key, no
/// repeat, longest first.
pub fn key_set(keys: impl IntoIterator<Item = ApiKey>) -> Arc<[ApiKey]> {
    let mut keys: Vec<ApiKey> = keys
        .into_iter()
        .filter(|key| !key.expose().is_empty())
        .collect();
    keys.sort_by(|a, b| (b.expose().len(), b.expose()).cmp(&(a.expose().len(), a.expose())));
    keys.dedup_by(|a, b| a.expose() == b.expose());
    keys.into()
}

/// Whether `text` holds one of `keys` (an empty key never matches): a
/// variable that must not reach a hook's or an MCP server's environment.
pub fn holds_a_key(text: &str, keys: &[ApiKey]) -> bool {
    keys.iter()
        .any(|key| !key.expose().is_empty() && text.contains(key.expose()))
}

/// Whether raw `bytes` (an image a tool read) hold one of `keys`: such a
/// file cannot be redacted without breaking it, so it is not sent at all.
pub fn bytes_hold_a_key(bytes: &[u8], keys: &[ApiKey]) -> bool {
    keys.iter().any(|key| {
        let key = key.expose().as_bytes();
        !key.is_empty() && bytes.windows(key.len()).any(|window| window == key)
    })
}

/// `text` with every one of `keys` (as [`key_set`] orders them) replaced.
pub fn redact_keys(text: &str, keys: &[ApiKey]) -> String {
    let mut text = text.to_owned();
    for key in keys {
        if text.contains(key.expose()) {
            text = redact(&text, Some(key));
        }
    }
    text
}

/// The shortest key whose cut pieces are hidden: a shorter key's pieces
/// are too short to tell from ordinary text.
const CUT_KEY_CHARS: usize = 8;
/// The shortest piece of a key hidden at a line's edge.
const CUT_PIECE_CHARS: usize = 4;

/// For a text that is a cut piece: at the end of each line, the longest
/// start of a key (of at least `CUT_PIECE_CHARS` characters, keys of at
/// least `CUT_KEY_CHARS`) is replaced by `***`; at the start of each
/// line, the longest end of a key. Whole keys are [`redact_keys`]'s.
pub fn redact_cut_edges(text: &str, keys: &[ApiKey]) -> String {
    let keys: Vec<&str> = keys
        .iter()
        .map(ApiKey::expose)
        .filter(|key| key.chars().count() >= CUT_KEY_CHARS)
        .collect();
    if keys.is_empty() {
        return text.to_owned();
    }
    let mut out = String::with_capacity(text.len());
    for line in text.split_inclusive('\n') {
        let body = line.trim_end_matches(['\n', '\r']);
        let ending = &line[body.len()..];
        let head = keys
            .iter()
            .filter_map(|key| key_end_at_start(body, key))
            .max()
            .unwrap_or(0);
        let rest = &body[head..];
        let tail = keys
            .iter()
            .filter_map(|key| key_start_at_end(rest, key))
            .max()
            .unwrap_or(0);
        if head > 0 {
            out.push_str("***");
        }
        out.push_str(&rest[..rest.len() - tail]);
        if tail > 0 {
            out.push_str("***");
        }
        out.push_str(ending);
    }
    out
}

/// The byte length of the longest proper end of `key` that `line` starts
/// with, if it is long enough to hide.
fn key_end_at_start(line: &str, key: &str) -> Option<usize> {
    key.char_indices()
        .skip(1)
        .map(|(at, _)| &key[at..])
        .find(|end| line.starts_with(end))
        .filter(|end| end.chars().count() >= CUT_PIECE_CHARS)
        .map(str::len)
}

/// The byte length of the longest proper start of `key` that `line` ends
/// with, if it is long enough to hide.
fn key_start_at_end(line: &str, key: &str) -> Option<usize> {
    key.char_indices()
        .rev()
        .map(|(at, _)| &key[..at])
        .find(|start| !start.is_empty() && line.ends_with(start))
        .filter(|start| start.chars().count() >= CUT_PIECE_CHARS)
        .map(str::len)
}

#[cfg(test)]
#[path = "redact_tests.rs"]
mod tests;

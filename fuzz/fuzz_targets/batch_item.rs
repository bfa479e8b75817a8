//! One line of a batch's input (docs/src/batch.md "Input") on any bytes:
//! no panic; an item's id is 1 to 200 bytes without control characters
//! and its prompt is not blank; and its events file name is one harmless
//! name — `[A-Za-z0-9._%~-]` only, no leading dot, at most 240 bytes —
//! that no other id shares (the input's second line is the other id).

#![no_main]

use leash::internals::batch::{file_name, parse_line};
use libfuzzer_sys::fuzz_target;

fn check_name(id: &str) -> String {
    let name = file_name(id);
    assert!(!name.is_empty() && name.len() <= 240, "{name:?}");
    assert!(!name.starts_with('.'), "{name:?}");
    assert!(
        name.bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-' | b'%' | b'~')),
        "{name:?}"
    );
    name
}

fuzz_target!(|data: &[u8]| {
    let mut lines = data.splitn(2, |byte| *byte == b'\n');
    let first = lines.next().unwrap_or_default();
    let second = lines.next().unwrap_or_default();
    let mut ids = Vec::new();
    for (number, line) in [(1, first), (2, second)] {
        if let Ok(Some(item)) = parse_line(number, number - 1, line) {
            assert!(!item.id.is_empty() && item.id.len() <= 200, "{:?}", item.id);
            assert!(!item.id.chars().any(char::is_control), "{:?}", item.id);
            assert!(!item.prompt.trim().is_empty(), "{:?}", item.prompt);
            assert_eq!(item.index, number - 1);
            ids.push(item.id);
        }
    }
    // Any two ids the input allows, as names of one directory.
    let mut other = String::from_utf8_lossy(second).into_owned();
    other.truncate(other.floor_char_boundary(200));
    let first_id = ids
        .first()
        .cloned()
        .unwrap_or_else(|| String::from_utf8_lossy(first).into_owned());
    if !first_id.is_empty() && !other.is_empty() && first_id != other {
        assert_ne!(
            check_name(&first_id),
            check_name(&other),
            "{first_id:?} and {other:?}"
        );
    }
    for id in &ids {
        check_name(id);
    }
});

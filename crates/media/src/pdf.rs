//! How many pages a PDF says it has, read from its page tree without a
//! PDF parser: the largest `/Count` of a `/Type /Pages` object found in
//! the file's uncompressed bytes (the root of the page tree counts every
//! page). A page tree kept in a compressed object stream is not seen:
//! then the count is unknown and the provider is the judge.
//!
//! Never fails and never panics on hostile bytes: at worst it knows
//! nothing.

/// How far from a `/Type /Pages` its object's ends are looked for: a page
/// tree node with thousands of kids still fits.
const WINDOW: usize = 256 * 1024;

/// The page count the PDF's page tree states, if one is found.
pub fn page_count(bytes: &[u8]) -> Option<u64> {
    let mut best: Option<u64> = None;
    let mut from = 0;
    while let Some(at) = find(&bytes[from..], b"/Type").map(|i| from + i) {
        from = at + 5;
        let rest = skip_space(&bytes[from..]);
        let is_pages = rest.starts_with(b"/Pages") && rest.get(6).is_none_or(|c| is_delimiter(*c));
        if !is_pages {
            continue;
        }
        // The object around it, from its `obj` to its `endobj`, looked
        // for no further than WINDOW either way; the scan goes on after
        // it, so hostile bytes cost a linear pass, never a quadratic one.
        let low = at.saturating_sub(WINDOW);
        let high = at.saturating_add(WINDOW).min(bytes.len());
        let start = rfind(&bytes[low..at], b"obj").map_or(low, |i| low + i + 3);
        let end = find(&bytes[at..high], b"endobj").map_or(high, |i| at + i);
        if let Some(count) = count_in(&bytes[start..end]) {
            best = Some(best.map_or(count, |b| b.max(count)));
        }
        from = from.max(end);
    }
    best
}

/// The number after `/Count` in one object's bytes.
fn count_in(object: &[u8]) -> Option<u64> {
    let at = find(object, b"/Count")?;
    let rest = skip_space(&object[at + 6..]);
    let digits: Vec<u8> = rest
        .iter()
        .take_while(|c| c.is_ascii_digit())
        .take(12)
        .copied()
        .collect();
    std::str::from_utf8(&digits).ok()?.parse().ok()
}

fn skip_space(bytes: &[u8]) -> &[u8] {
    let n = bytes
        .iter()
        .take_while(|c| matches!(c, b' ' | b'\t' | b'\r' | b'\n' | b'\x0c' | b'\0'))
        .count();
    &bytes[n..]
}

fn is_delimiter(c: u8) -> bool {
    matches!(
        c,
        b' ' | b'\t'
            | b'\r'
            | b'\n'
            | b'\x0c'
            | b'\0'
            | b'/'
            | b'>'
            | b'<'
            | b'['
            | b']'
            | b'('
            | b')'
    )
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

fn rfind(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).rposition(|w| w == needle)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::pdf_of_pages;

    #[test]
    fn the_page_tree_root_gives_the_count() {
        assert_eq!(page_count(&pdf_of_pages(3)), Some(3));
        assert_eq!(page_count(&pdf_of_pages(250)), Some(250));
        // Nested page trees: the root's count is the largest.
        let nested = b"%PDF-1.4\n1 0 obj <</Type /Pages /Kids [2 0 R] /Count 120>> endobj\n\
            2 0 obj <</Type/Pages/Parent 1 0 R/Count 20/Kids[]>> endobj\n\
            3 0 obj <</Type /Page /Parent 2 0 R>> endobj\n";
        assert_eq!(page_count(nested), Some(120));
    }

    #[test]
    fn a_single_page_or_an_outline_is_not_a_page_tree() {
        let no_tree = b"%PDF-1.4\n1 0 obj <</Type /Page /Count 999>> endobj\n\
            2 0 obj <</Type /Outlines /Count 500>> endobj\n";
        assert_eq!(page_count(no_tree), None);
        // A compressed page tree is not seen: unknown, not zero.
        assert_eq!(
            page_count(b"%PDF-1.5\n1 0 obj <</Type /ObjStm>> stream\nx\xff\nendstream endobj"),
            None
        );
    }

    #[test]
    fn hostile_bytes_give_nothing_and_no_panic() {
        for bytes in [
            &b"/Type"[..],
            b"/Type /Pages",
            b"/Type /Pages /Count",
            b"/Type /Pages /Count 99999999999999999999999",
            b"endobj /Type /Pages obj /Count 7",
        ] {
            let _ = page_count(bytes);
        }
        // Many page-tree markers and no object ends: still one pass. 2.6 MB
        // keeps a linear scan far below the bound on a loaded debug build,
        // while a pass per marker (200 000² steps) would blow it.
        let hostile = b"/Type /Pages ".repeat(200_000);
        let started = std::time::Instant::now();
        assert_eq!(page_count(&hostile), None);
        assert!(started.elapsed() < std::time::Duration::from_secs(5));
    }
}

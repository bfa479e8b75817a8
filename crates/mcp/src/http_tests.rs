use super::{EventSizer, TooLarge};

fn fed(cap: usize, chunks: &[&[u8]]) -> Result<(), TooLarge> {
    let mut sizer = EventSizer::new(cap);
    chunks.iter().try_for_each(|chunk| sizer.feed(chunk))
}

#[test]
fn an_event_of_exactly_the_cap_passes_and_one_byte_more_does_not() {
    assert_eq!(fed(10, &[b"data: 1234\n\n"]), Ok(()));
    assert_eq!(fed(10, &[b"data: 12345\n\n"]), Err(TooLarge));
}

#[test]
fn the_lines_of_one_event_add_up_and_only_a_blank_line_ends_it() {
    // 6 + 6 bytes of lines in one event: past 10, whatever the terminator.
    for terminator in ["\n", "\r\n", "\r"] {
        let event = format!("data:a{terminator}data:b{terminator}");
        assert_eq!(
            fed(10, &[event.as_bytes()]),
            Err(TooLarge),
            "{terminator:?}"
        );
    }
    // The same lines as two events fit.
    for terminator in ["\n", "\r\n", "\r"] {
        let events = format!("data:a{terminator}{terminator}data:b{terminator}{terminator}");
        assert_eq!(fed(10, &[events.as_bytes()]), Ok(()), "{terminator:?}");
    }
}

#[test]
fn a_crlf_split_between_chunks_is_one_terminator() {
    // "\r" | "\n" is one line end, not a blank line: the event goes on.
    assert_eq!(fed(10, &[b"data:a\r", b"\ndata:b"]), Err(TooLarge));
    // "\r\n" | "\r\n" is a blank line: a new event starts.
    assert_eq!(fed(10, &[b"data:a\r\n", b"\r\ndata:b"]), Ok(()));
}

#[test]
fn an_endless_line_is_refused_as_soon_as_it_passes_the_cap() {
    let mut sizer = EventSizer::new(1024);
    let chunk = [b'x'; 100];
    let fed_before_refusal = (0..100).take_while(|_| sizer.feed(&chunk).is_ok()).count();
    assert_eq!(fed_before_refusal, 10);
}

#[test]
fn many_small_events_never_add_up() {
    let mut sizer = EventSizer::new(16);
    for _ in 0..10_000 {
        assert_eq!(sizer.feed(b"data: {\"id\":1}\n\n"), Ok(()));
    }
}

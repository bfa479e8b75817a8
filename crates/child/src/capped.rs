//! Reading a child's output up to a cap, on a plain thread (a hook's or
//! `git`'s pipes): the caller says how much it keeps, nothing past that is
//! ever buffered.

use std::io::{self, Read};

/// Reads `reader` to its end or to `keep` bytes, whichever comes first; a
/// caller that asks for one byte more than it accepts learns that the
/// child went on past its cap.
pub fn read_capped(reader: impl Read, keep: usize) -> io::Result<Vec<u8>> {
    let mut kept = Vec::new();
    reader
        .take(u64::try_from(keep).unwrap_or(u64::MAX))
        .read_to_end(&mut kept)?;
    Ok(kept)
}

/// Reads up to `keep` bytes, then reads on to the end and drops the rest,
/// so a chatty child never blocks on a full pipe (stderr, kept only for an
/// error message: a pipe that fails after the kept part loses nothing).
pub fn read_capped_and_drain(mut reader: impl Read, keep: usize) -> io::Result<Vec<u8>> {
    let kept = read_capped(&mut reader, keep)?;
    let _ = io::copy(&mut reader, &mut io::sink());
    Ok(kept)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cap_keeps_the_start_and_a_drain_reads_to_the_end() {
        let text = b"0123456789".repeat(10);
        assert_eq!(read_capped(&text[..], 11).unwrap(), &text[..11]);
        assert_eq!(read_capped(&text[..], 1000).unwrap(), text);
        let mut source = &text[..];
        assert_eq!(read_capped_and_drain(&mut source, 3).unwrap(), b"012");
        assert!(source.is_empty(), "the rest was not read");
    }
}

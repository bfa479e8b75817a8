//! `leash batch merge [--input INPUT.jsonl] SHARD.jsonl…`: the lines of
//! every shard's output, in input order (by `index`), on stdout — or
//! nothing and exit 1 when an id is repeated, an index is missing, or
//! (with `--input`) an input id is absent or an unknown one is present;
//! the last line names them.
//!
//! *Never* writes a partial merge: every check passes before the first line;
//! never trusts a shard: lines are capped, and what is missing is counted
//! with checked arithmetic, nothing sized from an `index`.

use std::collections::{BTreeMap, HashSet};
use std::fs::File;
use std::io::{self, BufRead, BufReader, Read, Write};

use crate::batch::input::{self, Source};
use crate::cli::batch::MergeArgs;
use crate::exit::Status;
use crate::render;
use crate::render::transcript::reader_left;
use crate::run::job::Streams;

/// The most ids a failure names; the rest are counted.
const NAMED: usize = 20;

/// The longest shard line read: a result holds a reply (at most 64 MiB,
/// escaped) and its run's fields.
pub const MAX_RESULT_LINE_BYTES: u64 = 160 * 1024 * 1024;

/// Merges the shards `merge` names onto `streams.stdout`.
pub fn run(merge: &MergeArgs, streams: Streams) -> Status {
    let (mut stdout, mut stderr) = (streams.stdout, streams.stderr);
    match merged(merge) {
        Ok(lines) => {
            let mut text = String::new();
            for line in lines.values() {
                text.push_str(line);
                text.push('\n');
            }
            match stdout
                .write_all(text.as_bytes())
                .and_then(|()| stdout.flush())
            {
                Err(error) if !reader_left(&error) => {
                    let _ = render::write_reason(
                        &mut stderr,
                        &format!("cannot write the merge to stdout: {error}"),
                    );
                    Status::Error
                }
                _ => Status::Ok,
            }
        }
        Err(problem) => {
            let _ = render::write_reason(&mut stderr, &format!("batch merge: {problem}"));
            Status::Error
        }
    }
}

/// Every shard's lines by index, or what is wrong with them.
fn merged(merge: &MergeArgs) -> Result<BTreeMap<u64, String>, String> {
    let mut lines = BTreeMap::new();
    let mut ids = HashSet::new();
    let mut repeated = Vec::new();
    for path in &merge.shards {
        let file = File::open(path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
        let mut reader = BufReader::new(file);
        let mut number = 0u64;
        while let Some(line) = next_line(&mut reader, MAX_RESULT_LINE_BYTES)
            .map_err(|e| format!("cannot read {} line {}: {e}", path.display(), number + 1))?
        {
            number += 1;
            if line.trim().is_empty() {
                continue;
            }
            let value: serde_json::Value = serde_json::from_str(&line)
                .map_err(|e| format!("{} line {number}: not a result line: {e}", path.display()))?;
            let (Some(id), Some(index)) = (value["id"].as_str(), value["index"].as_u64()) else {
                return Err(format!(
                    "{} line {number}: a result line needs its \"id\" and \"index\"",
                    path.display()
                ));
            };
            if !ids.insert(id.to_owned()) || lines.contains_key(&index) {
                repeated.push(id.to_owned());
                continue;
            }
            lines.insert(index, line);
        }
    }
    let mut problems = Vec::new();
    if !repeated.is_empty() {
        problems.push(format!("repeated ids: {}", named(&repeated)));
    }
    match &merge.input {
        Some(path) => {
            let validated = input::spool(&Source::of(Some(path)))
                .and_then(|spool| input::validate(spool, &|_| Ok(true)))
                .map_err(|error| error.to_string())?;
            let mut missing: Vec<String> = validated.ids.difference(&ids).cloned().collect();
            let mut unknown: Vec<String> = ids.difference(&validated.ids).cloned().collect();
            missing.sort();
            unknown.sort();
            if !missing.is_empty() {
                problems.push(format!("missing ids: {}", named(&missing)));
            }
            if !unknown.is_empty() {
                problems.push(format!("ids not in the input: {}", named(&unknown)));
            }
        }
        None => {
            let (shown, count) = missing_indexes(&lines);
            if count > 0 {
                problems.push(format!("missing indexes: {}", listed(&shown, count)));
            }
        }
    }
    match problems.is_empty() {
        true => Ok(lines),
        false => Err(problems.join("; ")),
    }
}

/// The next line of a shard (its newline taken off), at most `cap`
/// bytes ([`MAX_RESULT_LINE_BYTES`]): a shard comes from another host
/// and is read as untrusted bytes.
fn next_line(reader: &mut impl BufRead, cap: u64) -> io::Result<Option<String>> {
    let mut bytes = Vec::new();
    let read = reader
        .take(cap.saturating_add(1))
        .read_until(b'\n', &mut bytes)?;
    if read == 0 {
        return Ok(None);
    }
    if bytes.len() as u64 > cap {
        return Err(io::Error::other(format!(
            "the line is longer than {cap} bytes"
        )));
    }
    if bytes.last() == Some(&b'\n') {
        bytes.pop();
    }
    String::from_utf8(bytes)
        .map(Some)
        .map_err(|_| io::Error::other("the line is not UTF-8 text"))
}

/// The indexes below the highest that no line has: the first [`NAMED`]
/// of them, and how many in all. Counted from the gaps between the lines
/// present (in `u128`, so an index of `u64::MAX` neither wraps nor sizes
/// anything): a hostile index costs nothing.
fn missing_indexes(lines: &BTreeMap<u64, String>) -> (Vec<String>, u128) {
    let (mut shown, mut count, mut expected) = (Vec::new(), 0u128, 0u128);
    for index in lines.keys().map(|index| u128::from(*index)) {
        if index > expected {
            count += index - expected;
            let mut at = expected;
            while at < index && shown.len() < NAMED {
                shown.push(at.to_string());
                at += 1;
            }
        }
        expected = index + 1;
    }
    (shown, count)
}

/// `a, b, c` — at most [`NAMED`], then how many more.
fn named(ids: &[String]) -> String {
    let shown: Vec<String> = ids.iter().take(NAMED).map(|id| format!("{id:?}")).collect();
    listed(&shown, ids.len() as u128)
}

/// `shown` (already quoted or bare) out of `count` in all.
fn listed(shown: &[String], count: u128) -> String {
    let more = count.saturating_sub(shown.len() as u128);
    match more > 0 {
        true => format!("{} and {more} more", shown.join(", ")),
        false => shown.join(", "),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn missing_indexes_are_counted_from_the_gaps_without_wrapping() {
        let of = |indexes: &[u64]| {
            let lines = indexes
                .iter()
                .map(|index| (*index, String::new()))
                .collect();
            missing_indexes(&lines)
        };
        assert_eq!(of(&[0, 1, 2]), (vec![], 0));
        assert_eq!(of(&[0, 3]), (vec!["1".into(), "2".into()], 2));
        let (shown, count) = of(&[0, u64::MAX]);
        assert_eq!((shown.len(), count), (NAMED, u128::from(u64::MAX) - 1));
        let (shown, count) = of(&[u64::MAX]);
        assert_eq!((shown[0].as_str(), count), ("0", u128::from(u64::MAX)));
        assert_eq!(
            listed(&shown, count),
            format!(
                "{} and {} more",
                shown.join(", "),
                u128::from(u64::MAX) - NAMED as u128
            )
        );
    }

    #[test]
    fn a_shard_line_past_the_cap_is_refused() {
        let mut reader = io::Cursor::new(b"0123456789\n".to_vec());
        assert!(next_line(&mut reader, 8).is_err());
        let mut reader = io::Cursor::new(b"a\nb".to_vec());
        assert_eq!(next_line(&mut reader, 8).unwrap().as_deref(), Some("a"));
        assert_eq!(next_line(&mut reader, 8).unwrap().as_deref(), Some("b"));
        assert_eq!(next_line(&mut reader, 8).unwrap(), None);
    }
}

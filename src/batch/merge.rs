//! `leash batch merge [--input INPUT.jsonl] SHARD.jsonl…`: the lines of
//! every shard's output, in input order (by `index`), on stdout — or
//! nothing and exit 1 when an id is repeated, an index is missing, or
//! (with `--input`) an input id is absent or an unknown one is present;
//! the last line names them.
//!
//! *Never* writes a partial merge: every check passes before the first line.

use std::collections::{BTreeMap, HashSet};
use std::fs::File;
use std::io::{BufRead, BufReader, Write};

use crate::batch::input::{self, Source};
use crate::cli::batch::MergeArgs;
use crate::exit::Status;
use crate::render;
use crate::render::transcript::reader_left;
use crate::run::job::Streams;

/// The most ids a failure names; the rest are counted.
const NAMED: usize = 20;

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
        for (number, line) in BufReader::new(file).lines().enumerate() {
            let line = line.map_err(|e| format!("cannot read {}: {e}", path.display()))?;
            if line.trim().is_empty() {
                continue;
            }
            let value: serde_json::Value = serde_json::from_str(&line).map_err(|e| {
                format!(
                    "{} line {}: not a result line: {e}",
                    path.display(),
                    number + 1
                )
            })?;
            let (Some(id), Some(index)) = (value["id"].as_str(), value["index"].as_u64()) else {
                return Err(format!(
                    "{} line {}: a result line needs its \"id\" and \"index\"",
                    path.display(),
                    number + 1
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
                .and_then(|spool| input::validate(spool, &|_| true))
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
            let last = lines.keys().next_back().copied();
            let missing: Vec<String> = (0..last.map_or(0, |last| last + 1))
                .filter(|index| !lines.contains_key(index))
                .map(|index| index.to_string())
                .collect();
            if !missing.is_empty() {
                problems.push(format!("missing indexes: {}", named(&missing)));
            }
        }
    }
    match problems.is_empty() {
        true => Ok(lines),
        false => Err(problems.join("; ")),
    }
}

/// `a, b, c` — at most [`NAMED`], then how many more.
fn named(ids: &[String]) -> String {
    let shown: Vec<String> = ids.iter().take(NAMED).map(|id| format!("{id:?}")).collect();
    match ids.len() > NAMED {
        true => format!("{} and {} more", shown.join(", "), ids.len() - NAMED),
        false => shown.join(", "),
    }
}

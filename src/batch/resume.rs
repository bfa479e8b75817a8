//! `--resume OUT`: the results file a batch appends to, and the ids it
//! already holds. OUT is opened once, without following a link or
//! blocking on a FIFO, with `O_APPEND` (every line lands at the end,
//! whole, whoever else appends), and locked (`flock`, held until the
//! batch exits): a second live copy on the same OUT — a replacement pod
//! while the old one still terminates, a requeued task — is refused
//! before it reads or cuts anything. Every complete line must be a
//! result line, and OUT must not be the batch's input: a wrong path
//! (`package.json`, the items) is refused, never cut.
//!
//! *Never* changes OUT beyond cutting a partial result line at its end
//! and appending whole lines.

use std::collections::HashSet;
use std::fs::{File, OpenOptions};
use std::io::{self, BufRead, BufReader, Read};
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::Path;

use rustix::fs::{FlockOperation, OFlags, flock};

use super::merge::MAX_RESULT_LINE_BYTES;

/// Why OUT cannot be resumed.
#[derive(Debug, thiserror::Error)]
pub enum ResumeError {
    /// Another live batch holds OUT's lock.
    #[error(
        "another leash batch is writing to it (its lock is held); \
         wait for that batch to end or stop it, then resume"
    )]
    Locked,
    /// OUT is the batch's own input.
    #[error("it is the batch's input; --resume takes the file the results go to")]
    IsInput,
    /// Not a regular file.
    #[error("it is not a regular file")]
    NotAFile,
    /// A line that no batch wrote.
    #[error("line {line} is not a result line of leash batch ({problem}); it is left as it is")]
    NotResults {
        /// Its number, from 1.
        line: u64,
        /// What is wrong with it.
        problem: &'static str,
    },
    /// Opening, locking, reading or cutting failed.
    #[error("{0}")]
    Io(#[from] io::Error),
}

/// OUT opened to append and locked, with the ids of its complete lines.
/// A last line without its newline (a write cut short) is cut off first
/// when it begins as a result line does; a missing OUT is created.
/// `input`: the batch's input file, which OUT must not be.
pub fn resume(path: &Path, input: Option<&Path>) -> Result<(HashSet<String>, File), ResumeError> {
    let flags = OFlags::NOFOLLOW | OFlags::NONBLOCK;
    let file = OpenOptions::new()
        .read(true)
        .append(true)
        .create(true)
        .mode(0o644)
        .custom_flags(i32::try_from(flags.bits()).unwrap_or(0))
        .open(path)?;
    let meta = file.metadata()?;
    if !meta.file_type().is_file() {
        return Err(ResumeError::NotAFile);
    }
    if let Some(input) = input.and_then(|input| std::fs::metadata(input).ok())
        && (input.dev(), input.ino()) == (meta.dev(), meta.ino())
    {
        return Err(ResumeError::IsInput);
    }
    flock(&file, FlockOperation::NonBlockingLockExclusive).map_err(|error| {
        match error == rustix::io::Errno::WOULDBLOCK {
            true => ResumeError::Locked,
            false => ResumeError::Io(error.into()),
        }
    })?;
    let (done, complete) = complete_lines(&file)?;
    if complete < meta.len() {
        file.set_len(complete)?;
    }
    Ok((done, file))
}

/// The ids of `file`'s complete result lines and where they end; a
/// partial last line is accepted only as the start of a result line.
fn complete_lines(file: &File) -> Result<(HashSet<String>, u64), ResumeError> {
    let mut done = HashSet::new();
    let mut complete: u64 = 0;
    let mut reader = BufReader::new(file);
    let mut line = Vec::new();
    for number in 1.. {
        line.clear();
        let read = (&mut reader)
            .take(MAX_RESULT_LINE_BYTES + 1)
            .read_until(b'\n', &mut line)?;
        if read == 0 {
            break;
        }
        let not = |problem| ResumeError::NotResults {
            line: number,
            problem,
        };
        if line.last() != Some(&b'\n') {
            // A write cut short: only ever the start of one of ours.
            if read as u64 > MAX_RESULT_LINE_BYTES || !line.starts_with(b"{\"id\":") {
                return Err(not("an unfinished last line that no batch began"));
            }
            break;
        }
        let value: serde_json::Value =
            serde_json::from_slice(&line).map_err(|_| not("not a JSON object"))?;
        let (Some(id), Some(_), Some(_)) = (
            value.get("id").and_then(serde_json::Value::as_str),
            value.get("index").and_then(serde_json::Value::as_u64),
            value.get("status").and_then(serde_json::Value::as_str),
        ) else {
            return Err(not("no \"id\", \"index\" and \"status\""));
        };
        done.insert(id.to_owned());
        complete += read as u64;
    }
    Ok((done, complete))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    #[test]
    fn resume_cuts_a_partial_last_line() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("out.jsonl");
        let a = "{\"id\":\"a\",\"index\":0,\"status\":\"ok\"}\n";
        let b = "{\"id\":\"b\",\"index\":1,\"status\":\"error\"}\n";
        std::fs::write(&path, format!("{a}{b}{{\"id\":\"c\",\"st")).unwrap();
        let (done, mut file) = resume(&path, None).unwrap();
        assert_eq!(done.len(), 2);
        assert!(done.contains("a") && done.contains("b"));
        file.write_all(b"{\"id\":\"c\"}\n").unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        assert_eq!(text, format!("{a}{b}{{\"id\":\"c\"}}\n"));
    }

    #[test]
    fn a_second_copy_is_refused_while_the_first_holds_the_lock() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("out.jsonl");
        let first = resume(&path, None).unwrap();
        assert!(matches!(resume(&path, None), Err(ResumeError::Locked)));
        drop(first);
        assert!(resume(&path, None).is_ok());
    }

    #[test]
    fn a_file_that_holds_no_results_is_left_alone() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("package.json");
        for text in [
            "{\n  \"name\": \"x\"\n}",
            "{\"id\":\"a\",\"prompt\":\"p\"}\n",
            "hello",
        ] {
            std::fs::write(&path, text).unwrap();
            let error = resume(&path, None).unwrap_err();
            assert!(matches!(error, ResumeError::NotResults { .. }), "{error}");
            assert_eq!(std::fs::read_to_string(&path).unwrap(), text);
        }
        std::fs::write(&path, "").unwrap();
        assert!(matches!(
            resume(&path, Some(&path)),
            Err(ResumeError::IsInput)
        ));
    }
}

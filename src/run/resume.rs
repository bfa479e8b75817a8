//! A run's side of `--resume` (docs/src/resume.md "Resume"): whether `--transcript`
//! appends to the resumed file or starts a new one holding the whole
//! conversation, and the session line that starts this run's part. It
//! never writes a restored message itself: a new file gets the checked
//! lines of the old one, byte for byte.

use std::path::Path;

use crate::config::RunPlan;
use crate::render::lane::Lane;
use crate::render::transcript::{ResumedFrom, SessionLine, TRANSCRIPT_VERSION, Transcript};

/// Whether `--transcript` is the file `--resume` read: then this run's
/// lines are appended to it (a chain of steps builds one transcript).
pub fn appends(plan: &RunPlan) -> bool {
    match (&plan.transcript, &plan.resume) {
        (Some(transcript), Some(resume)) => same_file(transcript, &resume.path),
        _ => false,
    }
}

fn same_file(a: &Path, b: &Path) -> bool {
    match (std::fs::canonicalize(a), std::fs::canonicalize(b)) {
        (Ok(a), Ok(b)) => a == b,
        _ => a == b,
    }
}

/// Starts the run's part of the transcript: a new file first gets the
/// resumed conversation's lines; then the session line.
pub fn start_transcript(plan: &RunPlan, appended: bool, lane: &Lane<Transcript>) {
    match plan.resume.as_ref() {
        Some(resume) if !appended => {
            let text = resume.text.clone();
            lane.submit(move |writer| writer.copy(&text));
        }
        Some(resume) => {
            let (read, whole) = (resume.read_bytes, resume.text.len() as u64);
            lane.submit(move |writer| writer.mend(read, whole));
        }
        None => {}
    }
    let wire = plan.provider.wire();
    let session = SessionLine {
        schema_version: TRANSCRIPT_VERSION,
        provider: wire.provider().to_owned(),
        api: wire.as_str().to_owned(),
        model: plan.model.clone(),
        system: plan.system.clone(),
        reasoning_effort: plan.recorded_effort(),
        resumed: plan.resume.as_ref().map(|resume| ResumedFrom {
            path: resume.path.display().to_string(),
            lines: resume.restored.lines,
            turns: resume.restored.turns,
        }),
    };
    lane.submit(move |writer| writer.write_session(&session));
}

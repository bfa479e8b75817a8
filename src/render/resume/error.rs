//! Why a transcript cannot be resumed, and the one constructor of a
//! refusal that names its line; below the restore and its attachments.

/// Why a transcript cannot be resumed: a usage error naming its line.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ResumeError {
    /// A line is not what `--transcript` writes.
    #[error("line {line}: {problem}")]
    Line {
        /// 1-based.
        line: usize,
        /// What is wrong with it.
        problem: String,
    },
    /// The conversation's attachments (with the run's new ones) break a
    /// cap of one request: every request of the run holds them all.
    #[error("its attachments, with the run's new ones: {0}")]
    Caps(String),
    /// The transcript cannot be carried faithfully to the wire asked for.
    #[error("line {line}: {problem}; resume it with the provider and API that wrote it")]
    Unfaithful {
        /// 1-based.
        line: usize,
        /// Why.
        problem: String,
    },
}

pub(super) fn at(line: usize, problem: impl Into<String>) -> ResumeError {
    ResumeError::Line {
        line,
        problem: problem.into(),
    }
}

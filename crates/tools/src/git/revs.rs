//! Every revision the model gives must name a commit (or a tag of one):
//! each end of a range is resolved in the shadow with `git rev-parse
//! --verify END^{commit}` before the view runs. A bare blob or tree id
//! (or `REV^{tree}`, a tag of a blob) would otherwise let `show` or `diff`
//! print any object in the store, whatever its path: a dotenv file from
//! history, or a file the sandbox would refuse.
//!
//! It must never let a revision through that git does not resolve to a
//! commit.

use std::ffi::OsString;

use tokio_util::sync::CancellationToken;

use super::run::{Invocation, run_git};
use super::{GitCommand, GitError, run_error};

/// The ends of a revision argument: `A..B` and `A...B` give `A` and `B`
/// (an empty end is `HEAD`, left out), `^A` gives `A`, and `A^!`, `A^@`,
/// `A^-` or `A^-N` give `A`.
pub(super) fn ends(rev: &str) -> Vec<&str> {
    let rev = rev.strip_prefix('^').unwrap_or(rev);
    let parts: Vec<&str> = match rev.split_once("...") {
        Some((a, b)) => vec![a, b],
        None => match rev.split_once("..") {
            Some((a, b)) => vec![a, b],
            None => vec![rev],
        },
    };
    parts
        .into_iter()
        .map(strip_parent_shorthand)
        .filter(|end| !end.is_empty())
        .collect()
}

/// `A^!`, `A^@`, `A^-`, `A^-N` → `A`.
fn strip_parent_shorthand(end: &str) -> &str {
    if let Some(base) = end.strip_suffix("^!").or_else(|| end.strip_suffix("^@")) {
        return base;
    }
    match end.rsplit_once("^-") {
        Some((base, n)) if n.bytes().all(|b| b.is_ascii_digit()) => base,
        _ => end,
    }
}

/// Refuses the first of `revisions` with an end that is not a commit.
pub(super) fn check_commits(
    command: GitCommand,
    how: &Invocation<'_>,
    revisions: &[String],
    cancel: &CancellationToken,
) -> Result<(), GitError> {
    for rev in revisions {
        for end in ends(rev) {
            if end.starts_with('-') || !is_commit(command, how, end, cancel)? {
                return Err(GitError::NotACommit {
                    rev: crate::sandbox::shown_path(rev),
                });
            }
        }
    }
    Ok(())
}

fn is_commit(
    command: GitCommand,
    how: &Invocation<'_>,
    end: &str,
    cancel: &CancellationToken,
) -> Result<bool, GitError> {
    let argv: Vec<OsString> = vec![
        "rev-parse".into(),
        "--verify".into(),
        "--quiet".into(),
        format!("{end}^{{commit}}").into(),
    ];
    let ran = run_git(how, &argv, cancel).map_err(|e| run_error(command, e))?;
    Ok(ran.code == Some(0))
}

//! `--parallel` within the open-file limit: each running item holds a few
//! descriptors (its events file, a connection, the root, a tool's file),
//! so `--parallel 1024` under the usual `ulimit -n 1024` would fail items
//! with "too many open files" — a failure `--resume` would not retry. The
//! soft limit is raised to the hard one first; what still does not fit is
//! run fewer at a time, and said once on stderr.
//!
//! *Never* charges an item for the machine's limit.

use rustix::process::{Resource, getrlimit, setrlimit};

/// Descriptors counted for each running item.
pub const PER_ITEM: u64 = 8;

/// Descriptors kept for the batch itself (stdio, the runtime, the input,
/// the results file, the MCP servers' pipes).
pub const RESERVED: u64 = 64;

/// How many items may run at once: `parallel`, or fewer when the open-file
/// limit (raised as far as the hard limit allows) holds fewer; with the
/// notice to show when it had to be fewer.
pub fn fit_parallel(parallel: usize) -> (usize, Option<String>) {
    let mut limit = getrlimit(Resource::Nofile);
    let wanted = (parallel as u64)
        .saturating_mul(PER_ITEM)
        .saturating_add(RESERVED);
    if let Some(soft) = limit.current
        && soft < wanted
    {
        let raised = limit.maximum.map_or(wanted, |hard| hard.min(wanted));
        if raised > soft {
            limit.current = Some(raised);
            if setrlimit(Resource::Nofile, limit).is_err() {
                limit.current = Some(soft);
            }
        }
    }
    let fits = fitting(parallel, limit.current);
    let notice = (fits < parallel).then(|| {
        format!(
            "--parallel {parallel} needs more open files than the limit ({}) allows; \
             running {fits} at a time",
            limit.current.unwrap_or_default()
        )
    });
    (fits, notice)
}

/// `parallel`, or as many items as `soft` descriptors hold (at least one).
fn fitting(parallel: usize, soft: Option<u64>) -> usize {
    let Some(soft) = soft else {
        return parallel;
    };
    let room = soft.saturating_sub(RESERVED) / PER_ITEM;
    usize::try_from(room)
        .unwrap_or(usize::MAX)
        .clamp(1, parallel.max(1))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn items_are_fitted_within_the_soft_limit() {
        assert_eq!(fitting(1024, Some(1024)), 120);
        assert_eq!(fitting(4, Some(1024)), 4);
        assert_eq!(fitting(16, Some(10)), 1);
        assert_eq!(fitting(1024, None), 1024);
        assert_eq!(fitting(1024, Some(u64::MAX)), 1024);
    }
}

//! The one-shot job: prepare → run → report (`job`), the signals and the
//! timer (`signals`), the prompt and stdin (`input`), and how the run
//! ended (`ending`: the status from every fact, then the last line). The
//! run's rules as loop hooks are [`crate::policy`]'s; the exit codes are
//! [`crate::exit`]'s.

pub mod ending;
pub mod input;
pub mod job;
pub mod report;
pub mod resume;
pub mod signals;

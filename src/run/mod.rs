//! One run of the command line: the job (prepare → run → report), the
//! prompt and stdin, the run's limits and shell hooks as loop hooks, `--output-schema`, and
//! how the run ended (the status and its exit code).

pub mod cost;
pub mod hooks;
pub mod input;
pub mod job;
pub mod limits;
pub mod outcome;
pub mod output_schema;
pub mod report;
pub mod signals;

//! The run's output files (`--output-last-message`, `--transcript`),
//! created before anything else is written, on a thread of their own so a
//! FIFO nobody reads never holds the timer or a signal; and the
//! renderer of the events lane on stderr.

use std::fs::File;
use std::io::{self, Write};
use std::path::Path;

use tokio::sync::watch;

use super::not_started::{NotStarted, UsageError};
use crate::config::RunPlan;
use crate::render::EventRenderer;
use crate::render::format::EventsFormat;
use crate::render::jsonl::JsonlRenderer;
use crate::render::text::TextRenderer;
use crate::run::ending::AbortCause;

/// The usage error of an output file `flag` names that could not be created.
pub(super) fn not_created<'a>(
    flag: &'static str,
    path: &'a Path,
) -> impl FnOnce(io::Error) -> NotStarted + 'a {
    move |source| {
        NotStarted::Usage(UsageError::Create {
            flag,
            path: path.display().to_string(),
            source,
        })
    }
}

/// Creates (empties) an output file on a thread of its own, and gives up
/// when the run is stopped first: opening a FIFO that nobody reads blocks
/// in the kernel, and the timer and the signals must still end the run.
/// The thread is a plain one, so it never holds the exit.
pub(super) async fn create_output(
    path: &Path,
    append: bool,
    abort: &mut watch::Receiver<Option<AbortCause>>,
) -> Result<io::Result<File>, NotStarted> {
    let (answer, answered) = tokio::sync::oneshot::channel();
    let owned = path.to_owned();
    let spawned = std::thread::Builder::new()
        .name("leash-create".to_owned())
        .spawn(move || {
            let _ = answer.send(crate::config::output_file::open_output(&owned, append));
        });
    if let Err(error) = spawned {
        return Ok(Err(error));
    }
    tokio::select! {
        created = answered => Ok(created.unwrap_or_else(|_| {
            Err(io::Error::other("the thread creating the file stopped"))
        })),
        cause = abort.wait_for(Option::is_some) => {
            Err(NotStarted::Stopped(cause.ok().and_then(|c| *c)))
        }
    }
}

/// The renderer of `--events`, using the terminal as the plan allows.
pub(super) fn event_renderer(
    plan: &RunPlan,
    stderr: Box<dyn Write + Send>,
) -> Box<dyn EventRenderer> {
    match plan.events {
        EventsFormat::Jsonl => Box::new(JsonlRenderer::new(stderr).with_price(plan.limits.price)),
        format => Box::new(
            TextRenderer::new(stderr, format == EventsFormat::Text)
                .with_terminal(plan.terminal, &plan.model)
                .with_price(plan.limits.price),
        ),
    }
}

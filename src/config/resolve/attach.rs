//! The attachments step (docs/src/resume.md "Attachments"): every `--attach` file read
//! up to the largest cap its provider allows, its kind found from its bytes,
//! and the whole set checked against that provider's caps — before
//! anything is sent. `--attach -` is only planned here (stdin is read by
//! the run, and checked by the same caps before the first request).
//!
//! An attachment is input like the prompt, but it is often a file a
//! checkout produced (a log, a screenshot): so a known API key in a text
//! file is replaced by `***` before it is sent, as in a tool's result, and
//! an image or a PDF whose bytes hold one is refused, since its bytes
//! cannot be redacted. The record (size, SHA-256) stays the file's. And
//! a checkout's file is held to the file tools' rules on secrets and
//! links (`confine`), read through the one reader of file inputs.

use std::path::Path;

use crate::cli::{Cli, ProviderName};
use crate::config::ConfigError;
use crate::config::Inputs;
use crate::config::input::{Accept, FileReadError, NotAFile, Opened, open_input};
use crate::config::plan::attach::{AttachPlan, without_keys};
use crate::config::precedence::choose_wire;
use leash_media::MediaError;
use leash_media::limits::{self, Caps, Wire};
use leash_protocol::{Attachment, MediaType};
use leash_tools::sandbox::descriptor_target;

mod confine;

use confine::confine;

/// Reads and checks every `--attach`.
pub(super) fn resolve(
    cli: &Cli,
    inputs: &Inputs<'_>,
    provider: ProviderName,
) -> Result<AttachPlan, ConfigError> {
    let stdin_at = cli.attach.iter().position(|path| path.as_os_str() == "-");
    let declared = match (&cli.attach_type, stdin_at) {
        (Some(mime), Some(_)) => {
            Some(
                MediaType::from_mime(mime).ok_or_else(|| ConfigError::Attach {
                    name: "-".into(),
                    problem: format!(
                        "--attach-type {mime} is not one leash takes (one of: {})",
                        MediaType::ALL.map(MediaType::mime).join(", ")
                    ),
                })?,
            )
        }
        (None, Some(_)) => {
            return Err(ConfigError::AttachStdin(
                "--attach - needs --attach-type MIME (image/png, image/jpeg, image/gif, image/webp, application/pdf or text/plain)",
            ));
        }
        (Some(_), None) => {
            return Err(ConfigError::AttachStdin(
                "--attach-type names the type of --attach - only; a file's type comes from its bytes",
            ));
        }
        (None, None) => None,
    };
    if cli.attach.iter().filter(|p| p.as_os_str() == "-").count() > 1 {
        return Err(ConfigError::AttachStdin("--attach - may be given once"));
    }
    if stdin_at.is_some() && (cli.no_stdin || cli.stdin) {
        return Err(ConfigError::AttachStdin(
            "--attach - makes stdin the attachment; leave out --stdin and --no-stdin",
        ));
    }
    if stdin_at.is_some() && cli.prompt.as_deref().is_none_or(|p| p == "-") {
        return Err(ConfigError::AttachStdin(
            "--attach - reads stdin, so the prompt must be the PROMPT argument",
        ));
    }
    // Known with no `--attach` too: a `--resume`d conversation's
    // attachments are read again by the same rules.
    let caps = Wire::from(choose_wire(cli, inputs.origins, provider)).caps();
    let keys = super::provider::known_keys(inputs);
    let mut files = Vec::with_capacity(cli.attach.len());
    for path in cli.attach.iter().filter(|p| p.as_os_str() != "-") {
        let file = read_attachment(path, caps)?;
        let file = without_keys(file, &keys).map_err(|problem| ConfigError::Attach {
            name: path.display().to_string(),
            problem,
        })?;
        files.push(file);
    }
    let plan = AttachPlan {
        files,
        stdin: stdin_at.zip(declared),
        caps: Some(caps),
        keys,
        restored: Vec::new(),
    };
    if plan.stdin.is_none() {
        limits::check(&plan.files, caps)
            .map_err(|error| ConfigError::AttachCap(error.to_string()))?;
    }
    Ok(plan)
}

/// One file, read up to the largest file `caps` allow (one byte past it
/// tells a file that is too large, which is never read whole).
fn read_attachment(path: &Path, caps: &Caps) -> Result<Attachment, ConfigError> {
    read_confined(path, caps, None).map_err(|problem| ConfigError::Attach {
        name: path.display().to_string(),
        problem,
    })
}

/// Reads the file `path` leads to, if [`confine`] lets `--attach` read it:
/// through the one reader of file inputs (a regular file, or `/dev/null`
/// as empty; never waiting on a FIFO or a device), up to the largest file
/// `caps` allow, and only at `size` bytes when that is given (a resumed
/// record's size, checked on the descriptor before anything is read).
pub(super) fn read_confined(
    path: &Path,
    caps: &Caps,
    size: Option<u64>,
) -> Result<Attachment, String> {
    let limit = caps.largest_file();
    let real = confine(path)?;
    let opened = open_input(&real, Accept::File).map_err(|error| match error {
        FileReadError::NotAFile(kind @ (NotAFile::Pipe | NotAFile::Device | NotAFile::Socket)) => {
            let what = match kind {
                NotAFile::Pipe => "a pipe (a FIFO)",
                NotAFile::Device => "a device",
                _ => "a socket",
            };
            format!(
                "it is {what}, not a regular file; pipe a stream with --attach - and --attach-type"
            )
        }
        other => other.to_string(),
    })?;
    if let Opened::File(file) = &opened {
        // The file opened is the one judged (no link swapped in since).
        if descriptor_target(file).is_some_and(|opened| opened != real) {
            return Err("it changed while it was opened".into());
        }
        let found = file.metadata().map_err(|error| error.to_string())?.len();
        if size.is_some_and(|size| size != found) {
            return Err("its size is not the recorded one".into());
        }
    }
    let bytes = opened.read_to_limit(limit).map_err(|error| match error {
        FileReadError::TooLarge { .. } => format!(
            "larger than {limit} bytes, the most {} takes of any file",
            caps.api
        ),
        other => other.to_string(),
    })?;
    leash_media::attachment(path.display().to_string(), bytes, None)
        .map_err(|error: MediaError| error.to_string())
}

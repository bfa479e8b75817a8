//! The resume step: `--resume` reads a transcript (capped like every file
//! input), checks it and restores its conversation for the run's wire,
//! then reads its attachments again, before any request
//! (docs/src/resume.md "Resume"). It never trusts the file beyond what
//! [`crate::render::resume`] checks: an attachment is sent only when the
//! file named has the recorded SHA-256, read by the rules of where it
//! first came from.

use std::path::Path;
use std::sync::Arc;

use crate::cli::Cli;
use crate::config::plan::attach::{AttachPlan, without_keys};
use crate::config::precedence::{SystemChoice, choose_system};
use crate::config::resolve::attach::read_confined;
use crate::config::resolve::prompt::read_input;
use crate::config::resolve::tools::open_root;
use crate::config::{ConfigError, Inputs};
use crate::render::resume::{Reread, RereadError, Restored, Resume, ResumeError, Wire, restore};
use leash_media::limits::{self, Caps};
use leash_protocol::Attachment;
use leash_protocol::secret::{ApiKey, bytes_hold_a_key};
use leash_tools::read_file::open_image;
use leash_tools::sandbox::Sandbox;

/// The checked transcript `--resume` names, if it names one, with its
/// attachments read again; they and the run's new ones are checked
/// together against the wire's caps for one request, since every request
/// of the run holds them all.
pub(super) fn resolve(
    cli: &Cli,
    wire: Wire,
    sandbox: Option<&Arc<Sandbox>>,
    attachments: &mut AttachPlan,
) -> Result<Option<Resume>, ConfigError> {
    let Some(path) = &cli.resume else {
        return Ok(None);
    };
    let refused = |source| ConfigError::Resume {
        path: path.display().to_string(),
        source,
    };
    let text = read_input("--resume", path)?;
    let mut restored = restore(&text, wire).map_err(refused)?;
    if let (false, Some(caps)) = (restored.attachments.is_empty(), attachments.caps) {
        // Without file tools the root is still where read_file read.
        let opened;
        let sandbox = match sandbox {
            Some(sandbox) => sandbox,
            None => {
                opened = Arc::new(open_root(&cli.root)?);
                &opened
            }
        };
        // The records bound what is read: a file is read only at its
        // recorded size, and the records must fit one request first.
        let records: Vec<Attachment> = restored.attachments().cloned().collect();
        limits::check_totals(&records, caps)
            .map_err(|error| refused(ResumeError::Caps(error.to_string())))?;
        let files = FileReread {
            caps,
            keys: &attachments.keys,
            sandbox,
        };
        restored.reattach(&files).map_err(refused)?;
        attachments.restored = restored.attachments().cloned().collect();
        if attachments.stdin.is_none() {
            let all: Vec<Attachment> = attachments
                .restored
                .iter()
                .chain(&attachments.files)
                .cloned()
                .collect();
            limits::check(&all, caps)
                .map_err(|error| refused(ResumeError::Caps(error.to_string())))?;
        }
    }
    Ok(Some(Resume {
        path: path.clone(),
        read_bytes: u64::try_from(text.len()).unwrap_or(u64::MAX),
        text: Restored::whole_lines(&text),
        restored,
    }))
}

/// The system message: one given (`-s`, `--system-file`, their variables
/// or the config file) wins; else the resumed transcript's. The notices
/// of the restore join the plan's.
pub(super) fn system(
    cli: &Cli,
    inputs: &Inputs<'_>,
    given: String,
    resume: Option<&Resume>,
    notices: &mut Vec<String>,
) -> String {
    let Some(resume) = resume else {
        return given;
    };
    notices.extend(resume.restored.notices.iter().cloned());
    match choose_system(cli, inputs.origins) {
        SystemChoice::None => resume.restored.system.clone(),
        _ => given,
    }
}

/// Reads recorded attachments again from the files they name.
struct FileReread<'a> {
    caps: &'static Caps,
    keys: &'a [ApiKey],
    sandbox: &'a Sandbox,
}

impl Reread for FileReread<'_> {
    /// As `--attach` reads it: confined by its rules (no secret file,
    /// no link out of the directory named), read only at the recorded
    /// size, the key rule of docs/src/resume.md "Attachments" too.
    fn attached(&self, record: &Attachment) -> Result<Attachment, RereadError> {
        let path = Path::new(&record.name);
        let file =
            read_confined(path, self.caps, Some(record.size)).map_err(RereadError::Unreadable)?;
        without_keys(file, self.keys).map_err(RereadError::Unreadable)
    }

    /// As `read_file` read it, under the root; an image whose bytes hold a
    /// key was never sent (the tool withheld it), so it is not now.
    fn read_by_tool(&self, record: &Attachment) -> Result<Attachment, RereadError> {
        let unreadable = |error: &dyn std::fmt::Display| RereadError::Unreadable(error.to_string());
        let file = open_image(self.sandbox, &record.name).map_err(|e| unreadable(&e))?;
        let size = file.size().map_err(|e| unreadable(&e))?;
        if size != record.size {
            return Err(RereadError::Resized);
        }
        let image = file.read().map_err(|e| unreadable(&e))?;
        if bytes_hold_a_key(&image.data, self.keys) {
            return Err(RereadError::Unreadable(
                "its bytes hold an API key leash knows".into(),
            ));
        }
        Ok(image)
    }
}

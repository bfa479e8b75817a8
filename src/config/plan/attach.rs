//! What the run attaches to its prompt, as the plan holds it: the files
//! read and checked, where stdin's bytes go, and the check of the whole
//! against the wire's caps once stdin has been read.

use leash_media::limits::{self, Caps};
use leash_protocol::secret::{ApiKey, bytes_hold_a_key, holds_a_key, redact_keys};
use leash_protocol::{Attachment, MediaType};

use crate::config::ConfigError;

/// The name `--attach -` goes by in records and messages: the argument
/// as given, as for a file, and one `--resume` knows it cannot read again.
pub const STDIN_NAME: &str = crate::render::resume::STDIN;

/// What the run attaches to its prompt.
#[derive(Debug, Clone, Default)]
pub struct AttachPlan {
    /// The files, read and checked, in the order given.
    pub files: Vec<Attachment>,
    /// `--attach -`: where in the order stdin goes, and the type
    /// `--attach-type` declared for it.
    pub stdin: Option<(usize, MediaType)>,
    /// The caps of the run's wire, for stdin's bytes and a resumed
    /// conversation's attachments (`None` only in a plan made by hand).
    pub caps: Option<&'static Caps>,
    /// Every key leash knows, kept out of stdin's bytes too.
    pub keys: Vec<ApiKey>,
    /// The attachments of a `--resume`d conversation, read again: every
    /// request holds them too, so the caps count them with the new ones.
    pub restored: Vec<Attachment>,
}

impl AttachPlan {
    /// The attachments in order, with stdin's bytes (already read) in its
    /// place, checked against the caps as one request's.
    pub fn with_stdin(&self, bytes: Option<Vec<u8>>) -> Result<Vec<Attachment>, ConfigError> {
        let mut all = self.files.clone();
        if let (Some((at, declared)), Some(bytes)) = (self.stdin, bytes) {
            let refused = |problem: String| ConfigError::Attach {
                name: "-".into(),
                problem,
            };
            let stdin = leash_media::attachment(STDIN_NAME, bytes, Some(declared))
                .map_err(|error| refused(error.to_string()))?;
            let stdin = without_keys(stdin, &self.keys).map_err(refused)?;
            all.insert(at.min(all.len()), stdin);
        }
        if let Some(caps) = self.caps {
            let request: Vec<Attachment> = self.restored.iter().chain(&all).cloned().collect();
            limits::check(&request, caps)
                .map_err(|error| ConfigError::AttachCap(error.to_string()))?;
        }
        Ok(all)
    }

    /// The most bytes stdin may give for `--attach -`.
    pub fn stdin_limit(&self) -> u64 {
        match (self.stdin, self.caps) {
            (Some((_, kind)), Some(caps)) => caps.file_bytes(kind),
            _ => 0,
        }
    }
}

/// The attachment with no known key in what is sent: a text file's keys
/// replaced by `***`; an image or a PDF holding one refused.
pub(in crate::config) fn without_keys(
    mut attachment: Attachment,
    keys: &[ApiKey],
) -> Result<Attachment, String> {
    if attachment.media_type == MediaType::Text {
        let text = attachment.text();
        if holds_a_key(&text, keys) {
            let redacted = redact_keys(&text, keys);
            attachment.data = redacted.into_bytes().into();
        }
        return Ok(attachment);
    }
    if bytes_hold_a_key(&attachment.data, keys) {
        return Err("its bytes hold an API key leash knows, and an image or a PDF cannot be redacted: it is not sent".into());
    }
    Ok(attachment)
}

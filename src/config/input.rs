//! What leash reads besides argv, as settings: the files the flags name,
//! read up to a limit and never grown without bound (an endless
//! `/dev/zero` included), and how stdin is to be treated (read by
//! `run::input`).

use std::io::Read;

/// How stdin is treated (`--stdin`, `--no-stdin`, or neither).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum StdinMode {
    /// Read a non-terminal stdin, with a grace for an open pipe.
    #[default]
    Auto,
    /// Wait for stdin without a grace (bounded by the deadline).
    Wait,
    /// Never read it.
    Never,
}

/// The most leash reads of a file it is given (`--system-file`,
/// `--output-schema`, `--faux-script`, `--env-file`, the config file): also
/// the stdin cap, so a prompt or script that fits one way fits the other.
pub const FILE_LIMIT: u64 = 16 * 1024 * 1024;

/// Why a file input could not be read.
#[derive(Debug, thiserror::Error)]
pub enum FileReadError {
    /// It could not be opened or read.
    #[error("{0}")]
    Io(#[from] std::io::Error),
    /// It is larger than [`FILE_LIMIT`] (or endless, like `/dev/zero`).
    #[error("it is larger than {limit} bytes")]
    TooLarge {
        /// The limit in bytes.
        limit: u64,
    },
    /// It is not UTF-8 text.
    #[error("it is not UTF-8 text")]
    NotUtf8,
}

/// Reads a text file of at most `limit` bytes. A longer (or endless)
/// file is refused after reading one byte past the limit, never grown
/// without bound.
pub fn read_text_file(path: &std::path::Path, limit: u64) -> Result<String, FileReadError> {
    let file = std::fs::File::open(path)?;
    let mut bytes = Vec::new();
    file.take(limit.saturating_add(1)).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > limit {
        return Err(FileReadError::TooLarge { limit });
    }
    String::from_utf8(bytes).map_err(|_| FileReadError::NotUtf8)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_input_is_read_only_up_to_its_limit() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f.txt");
        std::fs::write(&path, "12345").unwrap();
        assert_eq!(read_text_file(&path, 5).unwrap(), "12345");
        assert!(matches!(
            read_text_file(&path, 4),
            Err(FileReadError::TooLarge { limit: 4 })
        ));
        // An endless file ends at the limit.
        assert!(matches!(
            read_text_file(std::path::Path::new("/dev/zero"), 1024),
            Err(FileReadError::TooLarge { .. })
        ));
        assert!(matches!(
            read_text_file(&dir.path().join("none"), 4),
            Err(FileReadError::Io(_))
        ));
    }
}

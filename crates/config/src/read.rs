//! Reading a file a person named, within a size limit. The size a file system reports is not
//! enough: a device (`/dev/zero`), a FIFO or a `/proc` file reports 0 and may never end, so
//! at most one byte past the limit is ever read.

use std::fmt;
use std::io::Read;
use std::path::Path;

/// Why a file could not be read as text.
#[derive(Debug)]
pub enum ReadError {
    Io(std::io::Error),
    /// More than `limit` bytes; `size` when the file system knew it up front.
    TooLarge {
        size: Option<u64>,
        limit: u64,
    },
    NotUtf8,
}

impl fmt::Display for ReadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ReadError::Io(e) => write!(f, "cannot read the file: {e}"),
            ReadError::TooLarge {
                size: Some(size),
                limit,
            } => write!(f, "the file is {size} bytes; the limit is {limit}"),
            ReadError::TooLarge { size: None, limit } => write!(
                f,
                "the file is larger than the limit of {limit} bytes (it may not end: a device \
                 or a pipe is not a config file)"
            ),
            ReadError::NotUtf8 => f.write_str("the file is not UTF-8 text"),
        }
    }
}

impl std::error::Error for ReadError {}

/// The text of `path`, refused when it holds more than `limit` bytes or is not UTF-8.
pub fn read_text(path: &Path, limit: u64) -> Result<String, ReadError> {
    let file = std::fs::File::open(path).map_err(ReadError::Io)?;
    if let Ok(meta) = file.metadata()
        && meta.len() > limit
    {
        return Err(ReadError::TooLarge {
            size: Some(meta.len()),
            limit,
        });
    }
    let mut bytes = Vec::new();
    file.take(limit.saturating_add(1))
        .read_to_end(&mut bytes)
        .map_err(ReadError::Io)?;
    if bytes.len() as u64 > limit {
        return Err(ReadError::TooLarge { size: None, limit });
    }
    String::from_utf8(bytes).map_err(|_| ReadError::NotUtf8)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_endless_file_is_refused_after_the_limit() {
        let e = read_text(Path::new("/dev/zero"), 1024).unwrap_err();
        assert!(
            matches!(
                e,
                ReadError::TooLarge {
                    size: None,
                    limit: 1024
                }
            ),
            "{e:?}"
        );
        assert!(e.to_string().contains("limit of 1024 bytes"), "{e}");
    }

    #[test]
    fn a_file_at_the_limit_is_read() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a.yaml");
        std::fs::write(&path, "x".repeat(10)).unwrap();
        assert_eq!(read_text(&path, 10).unwrap().len(), 10);
        let e = read_text(&path, 9).unwrap_err();
        assert_eq!(e.to_string(), "the file is 10 bytes; the limit is 9");
    }
}

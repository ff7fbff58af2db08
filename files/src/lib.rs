//! Files at paths a user or a caller names: the one writer every binary uses
//! (atomic, never following a planted link, never replacing what is not a
//! regular file) and the one bounded reader (regular files only, a size cap,
//! no blocking open or read, a deadline).
//!
//! Architecture invariant: nothing here panics on any path or file content,
//! and no call can wait on a file longer than the deadline it is given.

mod read;
mod write;

use std::path::PathBuf;

pub use read::{READ_DEADLINE, open_regular, read_regular, read_regular_within};
pub use write::{WriteOptions, open_append, write_atomic};

/// Why a file could not be written or read. Each says the path first, on
/// one line.
#[derive(Debug, thiserror::Error)]
pub enum FileError {
    /// Something other than a regular file is there (a link, a folder, a
    /// device, a FIFO, a socket): never written through, never read.
    #[error("{}: is a {kind}, not a regular file", path.display())]
    NotRegular { path: PathBuf, kind: &'static str },
    /// [`WriteOptions::create_only`] and the file exists.
    #[error("{}: already exists", path.display())]
    Exists { path: PathBuf },
    #[error("{}: {size_bytes} bytes or more, over the {limit_bytes}-byte limit", path.display())]
    TooLarge {
        path: PathBuf,
        size_bytes: u64,
        limit_bytes: u64,
    },
    /// The read did not finish within its deadline (a file that streams, or
    /// a file system that hangs).
    #[error("{}: not read within {} ms", path.display(), deadline_ms)]
    Stalled { path: PathBuf, deadline_ms: u64 },
    #[error("{}: {source}", path.display())]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
}

impl FileError {
    fn io(path: &std::path::Path, source: std::io::Error) -> FileError {
        FileError::Io {
            path: path.to_owned(),
            source,
        }
    }

    /// The underlying I/O error's kind, when there is one (`NotFound` for a
    /// file that is not there).
    pub fn io_kind(&self) -> Option<std::io::ErrorKind> {
        match self {
            FileError::Io { source, .. } => Some(source.kind()),
            _ => None,
        }
    }
}

/// What a file type is called in an error.
fn kind_name(file_type: std::fs::FileType) -> &'static str {
    use std::os::unix::fs::FileTypeExt;
    if file_type.is_symlink() {
        "symbolic link"
    } else if file_type.is_dir() {
        "folder"
    } else if file_type.is_fifo() {
        "FIFO"
    } else if file_type.is_socket() {
        "socket"
    } else if file_type.is_char_device() {
        "character device"
    } else if file_type.is_block_device() {
        "block device"
    } else {
        "special file"
    }
}

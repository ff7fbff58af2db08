//! The one bounded reader: a file named by a user or a caller is opened
//! without blocking (`O_NONBLOCK`: a FIFO's open would wait for a writer),
//! must be a regular file by the handle's own type, is read to at most its
//! cap + 1 bytes, and never for longer than a deadline (`/proc/kmsg` is a
//! "regular" file whose read blocks).

use std::fs::OpenOptions;
use std::io::Read;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;
use std::time::Duration;

use crate::{FileError, kind_name};

/// How long [`read_regular_within`] waits for a read by default: files
/// named on a command line are small and local, and a read taking longer
/// than this is stuck.
pub const READ_DEADLINE: Duration = Duration::from_secs(10);

/// Reads the regular file at `path`, at most `cap_bytes` of it (a larger file
/// is refused, without being read whole). Blocking, but never waiting on
/// the file's other end: call it off async threads, or use
/// [`read_regular_within`] for a deadline.
pub fn read_regular(path: &Path, cap_bytes: u64) -> Result<Vec<u8>, FileError> {
    let (file, metadata) = open_regular(path)?;
    if metadata.len() > cap_bytes {
        return Err(FileError::TooLarge {
            path: path.to_owned(),
            size_bytes: metadata.len(),
            limit_bytes: cap_bytes,
        });
    }
    let expected = usize::try_from(metadata.len()).unwrap_or(0);
    let mut bytes = Vec::with_capacity(expected);
    file.take(cap_bytes.saturating_add(1))
        .read_to_end(&mut bytes)
        .map_err(|error| match error.kind() {
            // A "regular" file that has nothing yet and would block
            // (`/proc/kmsg`) streams rather than holds.
            std::io::ErrorKind::WouldBlock => FileError::NotRegular {
                path: path.to_owned(),
                kind: "stream",
            },
            _ => FileError::io(path, error),
        })?;
    if bytes.len() as u64 > cap_bytes {
        return Err(FileError::TooLarge {
            path: path.to_owned(),
            size_bytes: bytes.len() as u64,
            limit_bytes: cap_bytes,
        });
    }
    Ok(bytes)
}

/// Opens the regular file at `path` for reading, without blocking on its
/// open (a FIFO's would wait for a writer) and judged by the handle's own
/// type; with its metadata (its mode, for a caller that checks it).
pub fn open_regular(path: &Path) -> Result<(std::fs::File, std::fs::Metadata), FileError> {
    let file = OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_CLOEXEC)
        .open(path)
        .map_err(|error| FileError::io(path, error))?;
    let metadata = file
        .metadata()
        .map_err(|error| FileError::io(path, error))?;
    if !metadata.file_type().is_file() {
        return Err(FileError::NotRegular {
            path: path.to_owned(),
            kind: kind_name(metadata.file_type()),
        });
    }
    Ok((file, metadata))
}

/// [`read_regular`] on a thread of its own, given up after `deadline`: a read
/// stuck in the kernel (a hung network file system, a file that blocks
/// despite `O_NONBLOCK`) leaves that thread behind, never its caller, and
/// never keeps the process from exiting.
pub fn read_regular_within(
    path: &Path,
    cap_bytes: u64,
    deadline: Duration,
) -> Result<Vec<u8>, FileError> {
    let (sender, receiver) = std::sync::mpsc::sync_channel(1);
    let owned = path.to_owned();
    let spawned = std::thread::Builder::new()
        .name("bounded-read".to_owned())
        .spawn(move || {
            let _ = sender.send(read_regular(&owned, cap_bytes));
        });
    if let Err(error) = spawned {
        return Err(FileError::io(path, error));
    }
    receiver.recv_timeout(deadline).unwrap_or_else(|_| {
        Err(FileError::Stalled {
            path: path.to_owned(),
            deadline_ms: u64::try_from(deadline.as_millis()).unwrap_or(u64::MAX),
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_small_regular_files_and_refuses_large_ones() {
        let folder = tempfile::tempdir().expect("tempdir");
        let path = folder.path().join("f");
        std::fs::write(&path, b"hello").expect("write");
        assert_eq!(read_regular(&path, 5).expect("read"), b"hello");
        let error = read_regular(&path, 4).expect_err("too large");
        assert!(matches!(error, FileError::TooLarge { .. }), "{error}");
    }

    /// A FIFO with no writer would block an ordinary open forever.
    #[test]
    fn refuses_a_fifo_without_blocking() {
        let folder = tempfile::tempdir().expect("tempdir");
        let fifo = folder.path().join("fifo");
        let made = std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .expect("mkfifo runs");
        assert!(made.success());
        let error = read_regular_within(&fifo, 100, Duration::from_secs(5)).expect_err("fifo");
        assert!(
            matches!(error, FileError::NotRegular { kind: "FIFO", .. }),
            "{error}"
        );
    }

    #[test]
    fn refuses_devices_and_folders() {
        let error = read_regular(Path::new("/dev/zero"), 100).expect_err("device");
        assert!(
            matches!(
                error,
                FileError::NotRegular {
                    kind: "character device",
                    ..
                }
            ),
            "{error}"
        );
        let folder = tempfile::tempdir().expect("tempdir");
        let error = read_regular(folder.path(), 100).expect_err("folder");
        assert!(
            matches!(error, FileError::NotRegular { kind: "folder", .. }),
            "{error}"
        );
    }

    #[test]
    fn a_missing_file_says_so() {
        let folder = tempfile::tempdir().expect("tempdir");
        let error = read_regular(&folder.path().join("nope"), 10).expect_err("missing");
        assert_eq!(error.io_kind(), Some(std::io::ErrorKind::NotFound));
    }
}

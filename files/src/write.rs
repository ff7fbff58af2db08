//! The one writer: a temporary file made fresh (`O_EXCL | O_NOFOLLOW`) under a
//! random name in the target's folder, synced, then renamed over the target
//! (or linked to it, when the target must not exist yet), and the folder
//! synced after. A target that exists and is not a regular file is refused.

use std::fs::OpenOptions;
use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use crate::{FileError, kind_name};

/// How a file is written.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WriteOptions {
    /// Permission bits of a new file (before the umask).
    pub mode: u32,
    /// Refuse to write when the target exists (a signing key is never
    /// replaced); otherwise a regular file there is replaced atomically.
    pub create_only: bool,
}

impl WriteOptions {
    /// Replaces a regular file, readable by others (replays, tables).
    pub const PUBLIC: WriteOptions = WriteOptions {
        mode: 0o644,
        create_only: false,
    };
    /// Replaces a regular file, readable by its owner only (transcripts).
    pub const PRIVATE: WriteOptions = WriteOptions {
        mode: 0o600,
        create_only: false,
    };
    /// A new file readable by its owner only (keys): an existing one is an error.
    pub const PRIVATE_NEW: WriteOptions = WriteOptions {
        mode: 0o600,
        create_only: true,
    };
}

/// How many random temporary names are tried before giving up (each try
/// fails only if a file of that exact name appeared meanwhile).
const TEMPORARY_NAME_TRIES: usize = 8;

/// The longest part of the target's name kept in the temporary name, in
/// bytes, so the temporary name stays within the 255-byte limit of a name.
const TEMPORARY_STEM_BYTES: usize = 200;

/// Writes `bytes` to `path` atomically: a reader sees the old file or the new
/// one, never half of it, and a crash leaves no partial target. Never follows
/// a symbolic link at the target or at the temporary name, and never
/// replaces a target that is not a regular file (a device, a FIFO, a folder,
/// a link).
pub fn write_atomic(path: &Path, bytes: &[u8], options: WriteOptions) -> Result<(), FileError> {
    let Some(name) = path.file_name() else {
        return Err(FileError::io(
            path,
            std::io::Error::new(std::io::ErrorKind::InvalidInput, "names no file"),
        ));
    };
    let folder = match path.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => parent,
        _ => Path::new("."),
    };
    check_target(path, options)?;
    let (temporary, mut file) = create_temporary(folder, &name.to_string_lossy(), options.mode)
        .map_err(|error| FileError::io(path, error))?;
    let written = file.write_all(bytes).and_then(|()| file.sync_all());
    drop(file);
    let placed = written.and_then(|()| {
        if options.create_only {
            // A link fails when the target exists, where a rename would
            // replace it; the temporary name goes after.
            std::fs::hard_link(&temporary, path)
        } else {
            std::fs::rename(&temporary, path)
        }
    });
    if options.create_only || placed.is_err() {
        let _ = std::fs::remove_file(&temporary);
    }
    if let Err(error) = placed {
        if options.create_only && error.kind() == std::io::ErrorKind::AlreadyExists {
            return Err(FileError::Exists {
                path: path.to_owned(),
            });
        }
        return Err(FileError::io(path, error));
    }
    sync_folder(folder).map_err(|error| FileError::io(path, error))
}

/// Opens `path` to append to it (created, owner-and-group readable, when
/// missing): never through a link, and only a regular file. For logs that
/// grow line by line (a tournament's results), which cannot be replaced
/// atomically at each line.
pub fn open_append(path: &Path) -> Result<std::fs::File, FileError> {
    let file = OpenOptions::new()
        .append(true)
        .create(true)
        .mode(0o644)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_CLOEXEC)
        .open(path)
        .map_err(|error| match error.raw_os_error() {
            // O_NOFOLLOW on a link: ELOOP.
            Some(libc::ELOOP) => FileError::NotRegular {
                path: path.to_owned(),
                kind: "symbolic link",
            },
            _ => FileError::io(path, error),
        })?;
    let metadata = file
        .metadata()
        .map_err(|error| FileError::io(path, error))?;
    if !metadata.file_type().is_file() {
        return Err(FileError::NotRegular {
            path: path.to_owned(),
            kind: kind_name(metadata.file_type()),
        });
    }
    Ok(file)
}

/// Refuses a target that exists and is not a regular file (`lstat`: a link
/// is judged as a link, never as what it points to), or that exists at all
/// when it must be new.
fn check_target(path: &Path, options: WriteOptions) -> Result<(), FileError> {
    match std::fs::symlink_metadata(path) {
        Ok(metadata) if !metadata.file_type().is_file() => Err(FileError::NotRegular {
            path: path.to_owned(),
            kind: kind_name(metadata.file_type()),
        }),
        Ok(_) if options.create_only => Err(FileError::Exists {
            path: path.to_owned(),
        }),
        Ok(_) => Ok(()),
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(error) => Err(FileError::io(path, error)),
    }
}

/// A fresh file `.<stem>.<random>.tmp` in `folder`, created exclusively and
/// never through a link.
fn create_temporary(
    folder: &Path,
    name: &str,
    mode: u32,
) -> std::io::Result<(PathBuf, std::fs::File)> {
    let mut stem_end = name.len().min(TEMPORARY_STEM_BYTES);
    while !name.is_char_boundary(stem_end) {
        stem_end -= 1;
    }
    let stem = &name[..stem_end];
    let mut last_error = None;
    for _ in 0..TEMPORARY_NAME_TRIES {
        let mut random = [0u8; 8];
        getrandom::fill(&mut random).map_err(|error| {
            std::io::Error::other(format!("no randomness for a temporary name: {error}"))
        })?;
        let suffix: String = random.iter().map(|byte| format!("{byte:02x}")).collect();
        let temporary = folder.join(format!(".{stem}.{suffix}.tmp"));
        let opened = OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(mode)
            .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
            .open(&temporary);
        match opened {
            Ok(file) => return Ok((temporary, file)),
            Err(error) if error.kind() == std::io::ErrorKind::AlreadyExists => {
                last_error = Some(error);
            }
            Err(error) => return Err(error),
        }
    }
    Err(last_error.unwrap_or_else(|| std::io::Error::other("no free temporary name")))
}

/// Makes the rename durable. A file system that cannot sync a folder
/// (`EINVAL`) has nothing to make durable that way.
fn sync_folder(folder: &Path) -> std::io::Result<()> {
    let handle = std::fs::File::open(folder)?;
    match handle.sync_all() {
        Err(error) if error.raw_os_error() == Some(libc::EINVAL) => Ok(()),
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn leftovers(folder: &Path) -> Vec<String> {
        std::fs::read_dir(folder)
            .expect("folder")
            .map(|entry| {
                entry
                    .expect("entry")
                    .file_name()
                    .to_string_lossy()
                    .into_owned()
            })
            .filter(|name| name.ends_with(".tmp"))
            .collect()
    }

    #[test]
    fn writes_and_replaces_a_regular_file() {
        let folder = tempfile::tempdir().expect("tempdir");
        let path = folder.path().join("out.json");
        write_atomic(&path, b"one", WriteOptions::PUBLIC).expect("first");
        write_atomic(&path, b"two", WriteOptions::PUBLIC).expect("second");
        assert_eq!(std::fs::read(&path).expect("read"), b"two");
        assert!(leftovers(folder.path()).is_empty());
    }

    #[test]
    fn private_files_are_owner_only_and_new_files_are_never_replaced() {
        let folder = tempfile::tempdir().expect("tempdir");
        let path = folder.path().join("key");
        write_atomic(&path, b"secret", WriteOptions::PRIVATE_NEW).expect("new");
        let mode = std::fs::metadata(&path).expect("meta").permissions().mode();
        assert_eq!(mode & 0o077, 0, "mode {mode:o}");
        let again = write_atomic(&path, b"other", WriteOptions::PRIVATE_NEW);
        assert!(matches!(again, Err(FileError::Exists { .. })), "{again:?}");
        assert_eq!(std::fs::read(&path).expect("read"), b"secret");
        assert!(leftovers(folder.path()).is_empty());
    }

    /// A link planted at the target is neither followed nor replaced, and
    /// what it points to is untouched.
    #[test]
    fn refuses_a_link_at_the_target() {
        let folder = tempfile::tempdir().expect("tempdir");
        let victim = folder.path().join("victim");
        std::fs::write(&victim, b"precious").expect("victim");
        let path = folder.path().join("out.json");
        std::os::unix::fs::symlink(&victim, &path).expect("link");
        let error = write_atomic(&path, b"evil", WriteOptions::PUBLIC).expect_err("a link");
        assert!(
            error
                .to_string()
                .contains("is a symbolic link, not a regular file"),
            "{error}"
        );
        assert_eq!(std::fs::read(&victim).expect("victim"), b"precious");
        assert!(
            std::fs::symlink_metadata(&path)
                .expect("still there")
                .file_type()
                .is_symlink()
        );
    }

    #[test]
    fn refuses_folders_and_fifos_at_the_target() {
        let folder = tempfile::tempdir().expect("tempdir");
        let sub = folder.path().join("sub");
        std::fs::create_dir(&sub).expect("sub");
        let error = write_atomic(&sub, b"x", WriteOptions::PUBLIC).expect_err("folder");
        assert!(
            matches!(error, FileError::NotRegular { kind: "folder", .. }),
            "{error}"
        );
        let fifo = folder.path().join("fifo");
        let made = std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .expect("mkfifo runs");
        assert!(made.success());
        let error = write_atomic(&fifo, b"x", WriteOptions::PUBLIC).expect_err("fifo");
        assert!(
            matches!(error, FileError::NotRegular { kind: "FIFO", .. }),
            "{error}"
        );
        assert!(leftovers(folder.path()).is_empty());
    }

    #[test]
    fn appends_only_to_regular_files_never_through_links() {
        let folder = tempfile::tempdir().expect("tempdir");
        let path = folder.path().join("results.jsonl");
        {
            use std::io::Write;
            let mut file = open_append(&path).expect("created");
            file.write_all(b"one\n").expect("write");
            let mut again = open_append(&path).expect("reopened");
            again.write_all(b"two\n").expect("write");
        }
        assert_eq!(std::fs::read(&path).expect("read"), b"one\ntwo\n");
        let victim = folder.path().join("victim");
        std::fs::write(&victim, b"precious").expect("victim");
        let link = folder.path().join("link.jsonl");
        std::os::unix::fs::symlink(&victim, &link).expect("link");
        let error = open_append(&link).expect_err("a link");
        assert!(matches!(error, FileError::NotRegular { .. }), "{error}");
        assert_eq!(std::fs::read(&victim).expect("victim"), b"precious");
    }

    #[test]
    fn a_missing_folder_is_one_line() {
        let folder = tempfile::tempdir().expect("tempdir");
        let path = folder.path().join("missing/out.json");
        let error = write_atomic(&path, b"x", WriteOptions::PUBLIC).expect_err("no folder");
        assert!(!error.to_string().contains('\n'));
        assert_eq!(error.io_kind(), Some(std::io::ErrorKind::NotFound));
    }

    /// A long target name still gets a temporary name within the limit.
    #[test]
    fn long_names_fit() {
        let folder = tempfile::tempdir().expect("tempdir");
        let path = folder.path().join("é".repeat(120));
        write_atomic(&path, b"x", WriteOptions::PUBLIC).expect("written");
        assert_eq!(std::fs::read(&path).expect("read"), b"x");
    }
}

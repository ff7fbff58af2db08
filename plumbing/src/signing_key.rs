//! Where a binary finds the key that signs replays: the flag, else
//! `$DUEL_SIGNING_KEY_FILE`, else the user's data folder; created (mode 0600)
//! when missing, and said so once on stderr.

use std::path::{Path, PathBuf};

use duel_replays::{SigningKey, load_or_create_signing_key, public_key_text};

use crate::PlumbingError;

/// The environment variable naming the signing key file.
pub const SIGNING_KEY_ENV: &str = "DUEL_SIGNING_KEY_FILE";

/// The key file: `flag`, else `$DUEL_SIGNING_KEY_FILE` when set and not empty,
/// else `$XDG_DATA_HOME/duel/signing.key` or `~/.local/share/duel/signing.key`.
pub fn path(flag: Option<&Path>) -> Result<PathBuf, PlumbingError> {
    if let Some(path) = flag {
        return Ok(path.to_owned());
    }
    if let Some(path) = std::env::var_os(SIGNING_KEY_ENV).filter(|value| !value.is_empty()) {
        return Ok(PathBuf::from(path));
    }
    duel_replays::default_signing_key_path().ok_or_else(|| {
        PlumbingError::NoKeyPath(format!(
            "no home folder: give --signing-key PATH or set {SIGNING_KEY_ENV}"
        ))
    })
}

/// Loads the key at [`path`]`(flag)`, creating it if missing; a created key
/// is announced on stderr as `<binary>: created a new signing key at …`.
pub fn load(flag: Option<&Path>, binary: &str) -> Result<SigningKey, PlumbingError> {
    let path = path(flag)?;
    let (key, created) = load_or_create_signing_key(&path)?;
    if created {
        eprintln!(
            "{binary}: created a new signing key at {} (public key {})",
            path.display(),
            public_key_text(&key.verifying_key())
        );
    }
    Ok(key)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_flag_wins_and_a_key_is_created_once() {
        let folder = tempfile::tempdir().expect("temporary folder");
        let file = folder.path().join("signing.key");
        assert_eq!(path(Some(&file)).expect("path"), file);
        let created = load(Some(&file), "test").expect("created");
        let loaded = load(Some(&file), "test").expect("loaded");
        assert_eq!(created.verifying_key(), loaded.verifying_key());
    }
}

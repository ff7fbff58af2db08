//! Replay signatures: the canonical bytes a signature covers, signing with the
//! referee's ed25519 key, checking a signature, and the key files.
//!
//! The signature travels inside the replay as the optional top-level field
//! `"signature": {"alg": "ed25519", "key": "<base64 public key>", "sig": "<base64>"}`.
//! It covers the replay's *canonical bytes*: the replay JSON with the top-level
//! `signature` member removed, in the JSON Canonicalization Scheme of RFC 8785
//! (JCS), so anyone can check a signature with an off-the-shelf JCS library.
//! For the replays this project writes (ASCII keys, integers below 2^53) JCS is
//! byte for byte the form signatures covered before JCS was named here, so
//! every replay signed earlier still verifies (tested against the golden files).
//! Computing the form from the parsed JSON (not from this crate's structs) makes
//! a signature cover fields a newer writer added that this reader does not know.

use std::io::Read;
use std::path::{Path, PathBuf};

use base64::Engine;
use base64::engine::general_purpose::STANDARD as BASE64;
use ed25519_dalek::{Signer, SigningKey, VerifyingKey};
use serde::Deserialize;

use crate::error::ReplayError;
use crate::format::{Replay, ReplaySignature};
use crate::limits::MAX_KEY_FILE_BYTES;

/// The one signature algorithm of `duel-replay/1`.
pub const SIGNATURE_ALG: &str = "ed25519";

/// Why a signature check failed. A verdict about the replay, not an I/O error.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum SignatureFailure {
    #[error("the replay is not signed")]
    Unsigned,
    #[error("signature algorithm {0:?} is not {SIGNATURE_ALG:?}")]
    UnknownAlgorithm(String),
    #[error("malformed signature: {0}")]
    Malformed(String),
    #[error("signed by key {found}, not by the expected key {expected}")]
    WrongKey { found: String, expected: String },
    #[error("the signature does not match the replay's content (key {key})")]
    Mismatch { key: String },
}

/// What a successful check established.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SignatureStatus {
    /// No signature, and none was required.
    Unsigned,
    /// Signed by this key (base64), and the signature holds.
    Valid { key: String },
}

/// The public key as it is published: standard base64 of its 32 bytes.
pub fn public_key_text(key: &VerifyingKey) -> String {
    BASE64.encode(key.as_bytes())
}

/// Parses a published public key: base64 of 32 bytes, or the JSON the service
/// publishes (`{"alg": "ed25519", "key": "…"}`).
pub fn parse_public_key(text: &str) -> Result<VerifyingKey, ReplayError> {
    let text = text.trim();
    let key_text = if text.starts_with('{') {
        let published: PublishedKey = serde_json::from_str(text)
            .map_err(|error| ReplayError::Key(format!("malformed public key JSON: {error}")))?;
        if published.alg != SIGNATURE_ALG {
            return Err(ReplayError::Key(format!(
                "public key algorithm {:?} is not {SIGNATURE_ALG:?}",
                published.alg
            )));
        }
        published.key
    } else {
        text.to_owned()
    };
    decode_public_key(&key_text).map_err(ReplayError::Key)
}

#[derive(Deserialize)]
struct PublishedKey {
    alg: String,
    key: String,
}

fn decode_public_key(text: &str) -> Result<VerifyingKey, String> {
    let bytes = BASE64
        .decode(text.trim())
        .map_err(|error| format!("public key is not base64: {error}"))?;
    let bytes: [u8; 32] = bytes
        .try_into()
        .map_err(|bytes: Vec<u8>| format!("public key is {} bytes, not 32", bytes.len()))?;
    VerifyingKey::from_bytes(&bytes)
        .map_err(|_| "public key is not a valid ed25519 point".to_owned())
}

/// The bytes a signature covers (see the module docs), from replay JSON bytes.
pub fn canonical_bytes(json: &[u8]) -> Result<Vec<u8>, ReplayError> {
    let value: serde_json::Value =
        serde_json::from_slice(json).map_err(|error| ReplayError::Malformed(error.to_string()))?;
    canonical_bytes_of_value(value)
}

fn canonical_bytes_of_value(value: serde_json::Value) -> Result<Vec<u8>, ReplayError> {
    let serde_json::Value::Object(mut object) = value else {
        return Err(ReplayError::Malformed("expected a JSON object".to_owned()));
    };
    object.remove("signature");
    serde_json_canonicalizer::to_vec(&object)
        .map_err(|error| ReplayError::Malformed(format!("cannot canonicalise: {error}")))
}

/// Signs the replay in place with `key`, replacing any earlier signature.
///
/// The canonical bytes come straight from the struct (JCS sorts every
/// object's members as it writes them), not through a `serde_json::Value`
/// and a copy of it: the same bytes as [`canonical_bytes`] of the replay's
/// JSON (tested), for a fraction of the allocations, on every ranked match.
///
/// Refused, naming the field, when an integer of the replay is over
/// 2^53 − 1: RFC 8785 could not bind it.
pub fn sign(replay: &mut Replay, key: &SigningKey) -> Result<(), ReplayError> {
    replay.check_integers()?;
    replay.signature = None;
    let canonical = serde_json_canonicalizer::to_vec(&*replay)
        .expect("a Replay serializes to a JSON object of strings, integers and arrays");
    let signature = key.sign(&canonical);
    replay.signature = Some(ReplaySignature {
        alg: SIGNATURE_ALG.to_owned(),
        key: public_key_text(&key.verifying_key()),
        sig: BASE64.encode(signature.to_bytes()),
    });
    Ok(())
}

/// Checks the signature of replay JSON bytes as they were received (so that
/// fields this reader does not know are covered too). With `expected`, the
/// replay must be signed, and by that key.
pub fn check_signature(
    json: &[u8],
    expected: Option<&VerifyingKey>,
) -> Result<Result<SignatureStatus, SignatureFailure>, ReplayError> {
    let value: serde_json::Value =
        serde_json::from_slice(json).map_err(|error| ReplayError::Malformed(error.to_string()))?;
    crate::integers::check_integers(&value)?;
    let signature = match value.get("signature") {
        None | Some(serde_json::Value::Null) => {
            return Ok(match expected {
                Some(_) => Err(SignatureFailure::Unsigned),
                None => Ok(SignatureStatus::Unsigned),
            });
        }
        Some(member) => match ReplaySignature::deserialize(member) {
            Ok(signature) => signature,
            Err(error) => return Ok(Err(SignatureFailure::Malformed(error.to_string()))),
        },
    };
    let canonical = canonical_bytes_of_value(value)?;
    Ok(check_parsed(&signature, &canonical, expected))
}

fn check_parsed(
    signature: &ReplaySignature,
    canonical: &[u8],
    expected: Option<&VerifyingKey>,
) -> Result<SignatureStatus, SignatureFailure> {
    if signature.alg != SIGNATURE_ALG {
        return Err(SignatureFailure::UnknownAlgorithm(signature.alg.clone()));
    }
    let key = decode_public_key(&signature.key).map_err(SignatureFailure::Malformed)?;
    if let Some(expected) = expected
        && expected != &key
    {
        return Err(SignatureFailure::WrongKey {
            found: signature.key.clone(),
            expected: public_key_text(expected),
        });
    }
    let bytes = BASE64
        .decode(&signature.sig)
        .map_err(|error| SignatureFailure::Malformed(format!("sig is not base64: {error}")))?;
    let bytes: [u8; 64] = bytes.try_into().map_err(|bytes: Vec<u8>| {
        SignatureFailure::Malformed(format!("sig is {} bytes, not 64", bytes.len()))
    })?;
    let parsed = ed25519_dalek::Signature::from_bytes(&bytes);
    key.verify_strict(canonical, &parsed)
        .map_err(|_| SignatureFailure::Mismatch {
            key: signature.key.clone(),
        })?;
    Ok(SignatureStatus::Valid {
        key: signature.key.clone(),
    })
}

/// A fresh signing key from the operating system's randomness.
pub fn generate_signing_key() -> Result<SigningKey, ReplayError> {
    let mut seed = [0u8; 32];
    getrandom::fill(&mut seed)
        .map_err(|error| ReplayError::Key(format!("no randomness for a new key: {error}")))?;
    Ok(SigningKey::from_bytes(&seed))
}

/// Loads the signing key at `path`, or creates one there (mode 0600, parent
/// folders created) if the file does not exist. A key file readable by group or
/// others is refused. The file holds the standard base64 of the 32-byte secret
/// seed and a newline. The returned flag says whether the key was created.
pub fn load_or_create_signing_key(path: &Path) -> Result<(SigningKey, bool), ReplayError> {
    match load_signing_key(path) {
        Ok(key) => Ok((key, false)),
        Err(KeyLoad::Missing) => create_signing_key(path).map(|key| (key, true)),
        Err(KeyLoad::Failed(error)) => Err(error),
    }
}

enum KeyLoad {
    Missing,
    Failed(ReplayError),
}

fn key_error(path: &Path, detail: impl std::fmt::Display) -> ReplayError {
    ReplayError::Key(format!("signing key {}: {detail}", path.display()))
}

fn load_signing_key(path: &Path) -> Result<SigningKey, KeyLoad> {
    // A regular file only, opened without blocking (never a FIFO or a device).
    let file = match duel_files::open_regular(path) {
        Ok((file, _)) => file,
        Err(error) if error.io_kind() == Some(std::io::ErrorKind::NotFound) => {
            return Err(KeyLoad::Missing);
        }
        Err(error) => {
            return Err(KeyLoad::Failed(ReplayError::Key(format!(
                "signing key {error}"
            ))));
        }
    };
    check_private_mode(path, &file).map_err(KeyLoad::Failed)?;
    let mut text = String::new();
    file.take(MAX_KEY_FILE_BYTES)
        .read_to_string(&mut text)
        .map_err(|error| KeyLoad::Failed(key_error(path, error)))?;
    let bytes = BASE64
        .decode(text.trim())
        .map_err(|_| KeyLoad::Failed(key_error(path, "is not base64 of a 32-byte seed")))?;
    let seed: [u8; 32] = bytes
        .try_into()
        .map_err(|_| KeyLoad::Failed(key_error(path, "is not base64 of a 32-byte seed")))?;
    Ok(SigningKey::from_bytes(&seed))
}

#[cfg(unix)]
fn check_private_mode(path: &Path, file: &std::fs::File) -> Result<(), ReplayError> {
    use std::os::unix::fs::PermissionsExt;
    let mode = file
        .metadata()
        .map_err(|error| key_error(path, error))?
        .permissions()
        .mode();
    if mode & 0o077 != 0 {
        return Err(key_error(
            path,
            format!(
                "is readable by others (mode {:o}); run chmod 600 on it",
                mode & 0o777
            ),
        ));
    }
    Ok(())
}

#[cfg(not(unix))]
fn check_private_mode(_path: &Path, _file: &std::fs::File) -> Result<(), ReplayError> {
    Ok(())
}

fn create_signing_key(path: &Path) -> Result<SigningKey, ReplayError> {
    if let Some(parent) = path
        .parent()
        .filter(|parent| !parent.as_os_str().is_empty())
    {
        std::fs::create_dir_all(parent).map_err(|error| key_error(path, error))?;
    }
    let key = generate_signing_key()?;
    let text = format!("{}\n", BASE64.encode(key.to_bytes()));
    // Owner-only and never over an existing key (two processes creating one
    // at once: the second fails rather than replacing the first's key).
    duel_files::write_atomic(path, text.as_bytes(), duel_files::WriteOptions::PRIVATE_NEW)
        .map_err(|error| ReplayError::Key(format!("signing key {error}")))?;
    Ok(key)
}

/// Where the referee keeps its key when no path is given:
/// `$XDG_DATA_HOME/duel/signing.key`, else `$HOME/.local/share/duel/signing.key`.
pub fn default_signing_key_path() -> Option<PathBuf> {
    let data_home = std::env::var_os("XDG_DATA_HOME")
        .filter(|value| !value.is_empty())
        .map(PathBuf::from)
        .or_else(|| {
            std::env::var_os("HOME")
                .filter(|value| !value.is_empty())
                .map(|home| PathBuf::from(home).join(".local/share"))
        })?;
    Some(data_home.join("duel").join("signing.key"))
}

#[cfg(test)]
mod tests {
    use super::*;

    const FIXTURE: &str = include_str!("../tests/fixtures/random-vs-counter.json");

    fn key(byte: u8) -> SigningKey {
        SigningKey::from_bytes(&[byte; 32])
    }

    fn signed_fixture(signer: &SigningKey) -> Vec<u8> {
        let mut replay = Replay::from_slice(FIXTURE.as_bytes()).expect("fixture parses");
        sign(&mut replay, signer).expect("signs");
        replay.to_json_pretty().into_bytes()
    }

    /// Signed before the canonical form was named RFC 8785, by a script outside
    /// this crate (Python's `json.dumps(sort_keys=True, separators=(",", ":"))`
    /// and the `cryptography` package, key seed `[7; 32]`): it must still verify.
    const SIGNED_BEFORE_JCS: &str = include_str!("../tests/fixtures/random-vs-counter.signed.json");

    #[test]
    fn replays_signed_before_jcs_still_verify() {
        let status = check_signature(SIGNED_BEFORE_JCS.as_bytes(), Some(&key(7).verifying_key()))
            .expect("parses")
            .expect("verifies");
        assert_eq!(
            status,
            SignatureStatus::Valid {
                key: "6kpsY+KcUgq+9VB7Ey7F+ZVHdq6+vnuSQh7qaRRG0iw=".to_owned()
            }
        );
        // And this crate's own signature of the same replay is the same bytes.
        let mut replay = Replay::from_slice(SIGNED_BEFORE_JCS.as_bytes()).expect("parses");
        let theirs = replay.signature.clone();
        sign(&mut replay, &key(7)).expect("signs");
        assert_eq!(replay.signature, theirs);
    }

    #[test]
    fn signing_covers_the_canonical_bytes_of_the_replays_json() {
        // `sign` writes JCS from the struct, checks compute it from the
        // parsed JSON: every kind of member must come out the same both ways.
        let mut replay = Replay::from_slice(FIXTURE.as_bytes()).expect("fixture parses");
        replay.seed = crate::limits::JSON_INTEGER_MAX; // the largest a signature binds
        replay.season = Some("winter \"ü\" \u{1f600}\u{e000}".to_owned());
        let side = &mut replay.rounds[0].exchanges[0].a;
        side.set_notes(
            Some("trap: \\ unreachable\u{7}".to_owned()),
            vec!["say \"hi\"".to_owned(), "é\u{e000}".to_owned()],
        );
        side.log_truncated = true;
        side.restarted = true;
        side.latency_us = Some(17);
        side.set_calls(
            vec![crate::CallRecord {
                model: "alpha \u{e000}".to_owned(),
                prompt_tokens: 0,
                completion_tokens: 0,
                outcome: crate::CallOutcome::Invalid,
            }],
            Some("ab".repeat(32)),
        );
        replay.models = vec![crate::ModelPrice {
            name: "alpha".to_owned(),
            input_usd_per_mtok: serde_json::Number::from_f64(0.15),
            output_usd_per_mtok: serde_json::Number::from_f64(1e-7),
        }];
        let signer = key(3);
        sign(&mut replay, &signer).expect("signs");
        let json = replay.to_json_pretty();
        let status =
            check_signature(json.as_bytes(), Some(&signer.verifying_key())).expect("parses");
        assert_eq!(
            status,
            Ok(SignatureStatus::Valid {
                key: public_key_text(&signer.verifying_key())
            })
        );
        replay.signature = None;
        assert_eq!(
            serde_json_canonicalizer::to_vec(&replay).expect("serializes"),
            canonical_bytes(json.as_bytes()).expect("canonical")
        );
    }

    /// RFC 8785 writes 2^53 and 2^53 + 1 alike: such a replay is refused,
    /// to sign and to verify, naming the field.
    #[test]
    fn integers_past_2_53_are_refused_to_sign_and_to_verify() {
        let mut replay = Replay::from_slice(FIXTURE.as_bytes()).expect("fixture parses");
        replay.seed = crate::limits::JSON_INTEGER_MAX + 1;
        let error = sign(&mut replay, &key(3)).expect_err("unbindable");
        assert!(
            error.to_string().starts_with("seed is 9007199254740992"),
            "{error}"
        );
        replay.seed = 1;
        replay.rounds[0].exchanges[1].b.latency_ms = u64::MAX;
        let error = sign(&mut replay, &key(3)).expect_err("unbindable");
        assert!(
            error
                .to_string()
                .starts_with("rounds[0].exchanges[1].b.latency_ms is 18446744073709551615"),
            "{error}"
        );
        replay.rounds[0].exchanges[1].b.latency_ms = 1;
        sign(&mut replay, &key(3)).expect("signs");
        let json = replay
            .to_json_pretty()
            .replace("\"seed\": 1,", "\"seed\": 9007199254740993,");
        let error = check_signature(json.as_bytes(), None).expect_err("refused");
        assert!(
            error.to_string().starts_with("seed is 9007199254740993"),
            "{error}"
        );
        assert!(Replay::from_slice(json.as_bytes()).is_err());
    }

    #[test]
    fn canonical_form_is_rfc8785() {
        // Keys sorted by UTF-16 code units (here they differ from UTF-8 order),
        // numbers in their shortest ECMAScript form.
        let canonical = canonical_bytes(
            "{\"\u{e000}\": 1, \"\u{1f600}\": 2, \"n\": 1.0e2, \"f\": 0.5}".as_bytes(),
        )
        .expect("object");
        assert_eq!(
            String::from_utf8(canonical).expect("utf-8"),
            "{\"f\":0.5,\"n\":100,\"\u{1f600}\":2,\"\u{e000}\":1}"
        );
    }

    #[test]
    fn canonical_bytes_ignore_layout_and_key_order_but_not_values() {
        let a = canonical_bytes(
            br#"{"b": [1, {"y": "\u00e9", "x": 2}], "a": true, "signature": {"alg": "x"}}"#,
        )
        .expect("object");
        let b = canonical_bytes(br#"{"a":true,"b":[1,{"x":2,"y":"\u00e9"}]}"#).expect("object");
        assert_eq!(a, b);
        assert_eq!(
            String::from_utf8(a).expect("utf-8"),
            r#"{"a":true,"b":[1,{"x":2,"y":"é"}]}"#
        );
        let c = canonical_bytes(br#"{"a":true,"b":[1,{"x":3,"y":"\u00e9"}]}"#).expect("object");
        assert_ne!(b, c);
        assert!(canonical_bytes(b"[1]").is_err());
    }

    #[test]
    fn a_signed_replay_checks_with_and_without_the_expected_key() {
        let signer = key(7);
        let bytes = signed_fixture(&signer);
        let status = check_signature(&bytes, None)
            .expect("parses")
            .expect("valid");
        assert_eq!(
            status,
            SignatureStatus::Valid {
                key: public_key_text(&signer.verifying_key())
            }
        );
        let status = check_signature(&bytes, Some(&signer.verifying_key())).expect("parses");
        assert!(status.is_ok(), "{status:?}");
        // Re-indenting the file does not break the signature.
        let value: serde_json::Value = serde_json::from_slice(&bytes).expect("json");
        let compact = serde_json::to_vec(&value).expect("json");
        assert!(check_signature(&compact, None).expect("parses").is_ok());
    }

    #[test]
    fn unknown_fields_are_covered_by_the_signature() {
        let signer = key(7);
        let bytes = signed_fixture(&signer);
        let mut value: serde_json::Value = serde_json::from_slice(&bytes).expect("json");
        value["season"] = serde_json::json!("2026-winter");
        let added = serde_json::to_vec(&value).expect("json");
        let verdict = check_signature(&added, None).expect("parses");
        assert!(
            matches!(verdict, Err(SignatureFailure::Mismatch { .. })),
            "{verdict:?}"
        );
    }

    #[test]
    fn another_key_is_refused_when_a_key_is_expected() {
        let bytes = signed_fixture(&key(7));
        let expected = key(8).verifying_key();
        let verdict = check_signature(&bytes, Some(&expected)).expect("parses");
        assert!(
            matches!(verdict, Err(SignatureFailure::WrongKey { .. })),
            "{verdict:?}"
        );
        let unsigned = check_signature(FIXTURE.as_bytes(), Some(&expected)).expect("parses");
        assert_eq!(unsigned, Err(SignatureFailure::Unsigned));
        assert_eq!(
            check_signature(FIXTURE.as_bytes(), None).expect("parses"),
            Ok(SignatureStatus::Unsigned)
        );
    }

    #[test]
    fn a_key_swapped_into_the_signature_does_not_verify() {
        let bytes = signed_fixture(&key(7));
        let mut value: serde_json::Value = serde_json::from_slice(&bytes).expect("json");
        value["signature"]["key"] = serde_json::json!(public_key_text(&key(8).verifying_key()));
        let swapped = serde_json::to_vec(&value).expect("json");
        let verdict = check_signature(&swapped, None).expect("parses");
        assert!(
            matches!(verdict, Err(SignatureFailure::Mismatch { .. })),
            "{verdict:?}"
        );
        value["signature"]["sig"] = serde_json::json!("not base64!");
        let broken = serde_json::to_vec(&value).expect("json");
        let verdict = check_signature(&broken, None).expect("parses");
        assert!(
            matches!(verdict, Err(SignatureFailure::Malformed(_))),
            "{verdict:?}"
        );
    }

    #[test]
    fn public_keys_parse_from_base64_or_the_published_json() {
        let public = key(9).verifying_key();
        let text = public_key_text(&public);
        assert_eq!(parse_public_key(&text).expect("base64"), public);
        let published = format!(r#"{{"alg": "ed25519", "key": "{text}"}}"#);
        assert_eq!(parse_public_key(&published).expect("json"), public);
        assert!(parse_public_key("AAAA").is_err());
        assert!(parse_public_key(r#"{"alg": "rsa", "key": "AAAA"}"#).is_err());
    }

    #[cfg(unix)]
    #[test]
    fn key_files_are_created_private_and_loaded_again() {
        use std::os::unix::fs::PermissionsExt;
        let folder = tempfile::tempdir().expect("temp dir");
        let path = folder.path().join("keys/signing.key");
        let (created, was_created) = load_or_create_signing_key(&path).expect("created");
        assert!(was_created);
        let mode = std::fs::metadata(&path)
            .expect("exists")
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600);
        let (loaded, was_created) = load_or_create_signing_key(&path).expect("loaded");
        assert!(!was_created);
        assert_eq!(loaded.to_bytes(), created.to_bytes());
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).expect("chmod");
        let error = load_or_create_signing_key(&path).expect_err("refused");
        assert!(error.to_string().contains("readable by others"), "{error}");
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).expect("chmod");
        std::fs::write(&path, "not a key\n").expect("write");
        let error = load_or_create_signing_key(&path).expect_err("refused");
        assert!(error.to_string().contains("32-byte seed"), "{error}");
    }
}

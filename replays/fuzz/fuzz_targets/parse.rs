//! Fuzzes everything that reads untrusted replay bytes: the parser, the rules
//! verifier on whatever parses, and the signature check. None may panic.

#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|bytes: &[u8]| {
    if let Ok(replay) = duel_replays::Replay::from_slice(bytes) {
        let _ = duel_replays::verify(&replay);
        let _ = replay.to_json_pretty();
    }
    let _ = duel_replays::canonical_bytes(bytes);
    let _ = duel_replays::check_signature(bytes, None);
});

//! Fuzzes the o200k counter (`duel_referee::tokens`) with adversarial text:
//! the input's text as it is, and grown into the shapes that broke
//! tiktoken-rs (long runs of one character, of whitespace, huge pieces of
//! mixed scripts) up to the gateway's prompt bound. Never a panic; the count
//! is at least the bytes' lower bound; a bounded count agrees with the whole
//! count; a cut keeps a prefix of at most the cap.

#![no_main]

use duel_referee::tokens::{Count, count, count_within, cut, min_tokens};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|bytes: &[u8]| {
    let Some((&shape, rest)) = bytes.split_first() else {
        return;
    };
    let seed = String::from_utf8_lossy(rest);
    if seed.is_empty() {
        return;
    }
    // The shape byte picks how far the input is grown: as it is, or repeated
    // up to 512 KiB (a run of one character when the input is one).
    let text = match shape % 4 {
        0 => seed.into_owned(),
        1 => seed.repeat((4 * 1024 / seed.len()).max(1)),
        2 => seed.repeat((64 * 1024 / seed.len()).max(1)),
        _ => seed.repeat((duel_referee::limits::MAX_PROMPT_BYTES / seed.len()).max(1)),
    };
    let tokens = count(&text);
    assert!(min_tokens(text.len()) <= tokens, "{} bytes, {tokens} tokens", text.len());
    assert_eq!(count_within(&text, tokens, &|| false), Count::Tokens(tokens));
    if tokens > 0 {
        assert_eq!(count_within(&text, tokens - 1, &|| false), Count::OverLimit);
    }
    let cap = u64::from(shape) % (tokens + 1);
    let (kept, kept_tokens) = cut(text.clone(), cap);
    assert!(kept_tokens <= cap);
    assert!(text.starts_with(&kept));
    assert_eq!(count(&kept), kept_tokens);
});

//! The o200k counter (`duel_referee::tokens`) against tiktoken-rs, the
//! reference it replaced: the same count on every text whose pre-tokenizer
//! pieces are at most the longest token (all text a model is sent in
//! practice), and on the adversarial shapes that broke tiktoken-rs a count
//! in linear time, no panic, and never fewer tokens than the bytes allow.

// Tests: a failed unwrap is a failed assertion.
#![allow(clippy::unwrap_used)]

use duel_referee::tokens::{Count, MAX_TOKEN_BYTES, count, count_within, cut, min_tokens};
use proptest::prelude::*;

fn reference(text: &str) -> u64 {
    tiktoken_rs::o200k_base_singleton()
        .encode_ordinary(text)
        .len() as u64
}

/// A run of one kind of character, at most 16 of them (so at most 64
/// bytes: no pre-tokenizer piece can reach 128 bytes).
fn run() -> impl Strategy<Value = String> {
    prop_oneof![
        "[a-z]{1,16}",
        "[A-Z]{1,16}",
        "[A-Z][a-z]{1,15}",
        "[0-9]{1,16}",
        "[\u{4e00}-\u{9fff}]{1,16}",
        "[\u{00c0}-\u{017f}]{1,16}",
        "[\u{0600}-\u{06ff}]{1,16}",
        "[\u{1f300}-\u{1f5ff}]{1,8}",
        "[!-/:-@\\[-`{-~]{1,16}",
        "'(s|t|re|ve|m|ll|d|S|LL)",
        "[ \t\n\r]{1,16}",
        "<\\|endoftext\\|>",
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2_000))]

    /// Every text made of runs of at most 16 characters, each followed by
    /// a separator, is counted exactly as tiktoken counts it.
    #[test]
    fn agrees_with_tiktoken_where_pieces_are_short(
        runs in proptest::collection::vec((run(), prop_oneof![Just(" "), Just("\n"), Just(", "), Just(""), Just("  ")]), 0..40)
    ) {
        let text: String = runs
            .iter()
            .flat_map(|(run, separator)| [run.as_str(), separator])
            .collect();
        prop_assert_eq!(count(&text), reference(&text), "{:?}", text);
    }

    /// A bounded count agrees with the whole count, and a cut keeps a
    /// prefix of at most the cap.
    #[test]
    fn bounded_counts_and_cuts_agree_with_the_count(text in "\\PC{0,300}", cap in 0u64..60) {
        let tokens = count(&text);
        prop_assert!(min_tokens(text.len()) <= tokens);
        prop_assert_eq!(count_within(&text, tokens, &|| false), Count::Tokens(tokens));
        if tokens > 0 {
            prop_assert_eq!(count_within(&text, tokens - 1, &|| false), Count::OverLimit);
        }
        let (kept, kept_tokens) = cut(text.clone(), cap);
        prop_assert!(kept_tokens <= cap);
        prop_assert!(text.starts_with(&kept));
        prop_assert_eq!(count(&kept), kept_tokens);
        if tokens <= cap {
            prop_assert_eq!(kept, text);
        }
    }
}

/// The shapes that took tiktoken-rs seconds and hundreds of megabytes, or
/// overflowed its stack (a million spaces), at the gateway's prompt bound:
/// counted, never fewer tokens than bytes / 128, and, up to the longest
/// token, exactly as tiktoken counts them.
#[test]
fn adversarial_runs_are_counted_in_slices() {
    for unit in ["a", " ", "\n", "-", "=", "9", "é", "日", "🙂", "\r\n", "ab"] {
        let short = unit.repeat(MAX_TOKEN_BYTES / unit.len());
        assert_eq!(
            count(&short),
            reference(&short),
            "{unit:?} x {}",
            short.len()
        );
        let long = unit.repeat(512 * 1024 / unit.len());
        let tokens = count(&long);
        assert!(min_tokens(long.len()) <= tokens, "{unit:?}");
        assert!(tokens <= long.len() as u64, "{unit:?}");
    }
    assert_eq!(count(&" ".repeat(1_000_000)), 1_000_000_u64.div_ceil(128));
}

//! Counting `o200k_base` tokens (RULES "Token budget", D-7) in time linear in
//! the text for every input: the encoding's pre-tokenizer splits the text
//! into pieces, each piece is byte-pair encoded, and a piece longer than the
//! longest token ([`MAX_TOKEN_BYTES`]) is counted in slices of at most that
//! many bytes. Up to that length the count is tiktoken's own; past it, BPE
//! of one piece grows worse than linearly with its length (4 MiB of one
//! letter took tiktoken-rs 2.1 s and 235 MB), so the rule is ours and
//! documented in docs/RULES.md. A count can stop at a limit (a prompt that
//! cannot fit is not counted to its end) and between slices when it is
//! cancelled (its decision ended).
//!
//! Built on GitHub's `bpe-openai`: its pre-tokenizer is a linear-time regex
//! automaton (tiktoken-rs's backtracking one overflowed its stack on
//! 1,000,000 spaces and panicked), and its byte-pair encoder gives
//! tiktoken's tokens for every piece.

use std::ops::ControlFlow;

use bpe_openai::Tokenizer;

/// The longest `o200k_base` token, in bytes (a fact of the encoding's table,
/// checked by a test). A text of n bytes has at least n / 128 tokens, so a
/// prompt can be refused on its bytes alone when even that many do not fit.
pub const MAX_TOKEN_BYTES: usize = 128;

/// A count looks whether it was cancelled after about this many bytes
/// (~0.5 ms of counting at the slowest inputs measured, docs/perf/grpc.md).
const CANCEL_CHECK_BYTES: usize = 16 * 1024;

fn tokenizer() -> &'static Tokenizer {
    bpe_openai::o200k_base()
}

/// Loads the encoding's tables now (~40 ms), so the first metered call of a
/// match does not pay for them. The match host calls it once.
pub fn warm_up() {
    let _ = count("warm up");
}

/// The fewest tokens a text of `bytes` bytes can have.
pub fn min_tokens(bytes: usize) -> u64 {
    bytes.div_ceil(MAX_TOKEN_BYTES) as u64
}

/// How a bounded count ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Count {
    /// The text's tokens, at most the limit.
    Tokens(u64),
    /// The text has more tokens than the limit; counting stopped there.
    OverLimit,
    /// Cancelled before the end; nothing is known.
    Cancelled,
}

/// Tokens of `text`. Special-token text (`<|endoftext|>`) is counted as
/// plain text: bot input never gets special meaning.
pub fn count(text: &str) -> u64 {
    let mut tokens = 0u64;
    for_each_slice(text, |slice| {
        tokens += slice_tokens(slice);
        ControlFlow::Continue(())
    });
    tokens
}

/// Tokens of `text` when they are at most `limit_tokens`; stops counting
/// once they are more, or when `cancelled` says so (asked every
/// [`CANCEL_CHECK_BYTES`] or so).
pub fn count_within(text: &str, limit_tokens: u64, cancelled: &dyn Fn() -> bool) -> Count {
    let mut tokens = 0u64;
    let mut since_check_bytes = 0usize;
    let mut outcome = None;
    for_each_slice(text, |slice| {
        since_check_bytes += slice.len();
        if since_check_bytes >= CANCEL_CHECK_BYTES {
            since_check_bytes = 0;
            if cancelled() {
                outcome = Some(Count::Cancelled);
                return ControlFlow::Break(());
            }
        }
        tokens += slice_tokens(slice);
        if tokens > limit_tokens {
            outcome = Some(Count::OverLimit);
            return ControlFlow::Break(());
        }
        ControlFlow::Continue(())
    });
    outcome.unwrap_or(Count::Tokens(tokens))
}

/// `text` cut to at most `cap_tokens` tokens (a model with another tokenizer
/// can run over the cap as we count it), and its tokens. The work is in
/// proportion to what is kept, not to the whole text.
pub fn cut(text: String, cap_tokens: u64) -> (String, u64) {
    let mut tokens = 0u64;
    let mut at = 0usize;
    let mut end = None;
    for_each_slice(&text, |slice| {
        let slice_tokens = slice_tokens(slice);
        if tokens + slice_tokens > cap_tokens {
            // Keep as many of this slice's tokens as fit: their bytes.
            let keep = usize::try_from(cap_tokens - tokens).unwrap_or(usize::MAX);
            let bpe = &tokenizer().bpe;
            let kept_bytes: usize = bpe
                .encode_via_backtracking(slice)
                .iter()
                .take(keep)
                .map(|&token| bpe.token_len(token))
                .sum();
            end = Some(at + kept_bytes);
            return ControlFlow::Break(());
        }
        tokens += slice_tokens;
        at += slice.len();
        ControlFlow::Continue(())
    });
    let Some(mut end) = end else {
        return (text, tokens);
    };
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    let mut kept = text;
    kept.truncate(end);
    // Counted again on its own, the kept text can split differently at
    // its new end; drop characters until it fits.
    loop {
        let tokens = count(&kept);
        if tokens <= cap_tokens {
            return (kept, tokens);
        }
        kept.pop();
    }
}

/// Tokens of one slice (at most [`MAX_TOKEN_BYTES`] bytes, or a piece).
fn slice_tokens(slice: &[u8]) -> u64 {
    tokenizer().bpe.count(slice) as u64
}

/// Calls `f` with every slice of `text` in order: the pre-tokenizer's
/// pieces, those longer than [`MAX_TOKEN_BYTES`] cut into slices of at most
/// that many bytes, each ending on a character boundary.
fn for_each_slice(text: &str, mut f: impl FnMut(&[u8]) -> ControlFlow<()>) {
    let mut covered_bytes = 0usize;
    for piece in tokenizer().split(text) {
        covered_bytes += piece.len();
        if slices(piece, &mut f).is_break() {
            return;
        }
    }
    // The pre-tokenizer's pattern matches at every character, so its pieces
    // cover the text; were a rest ever left, it is counted as one piece,
    // never dropped (no text goes uncounted).
    if let Some(rest) = text.get(covered_bytes..)
        && !rest.is_empty()
    {
        let _ = slices(rest, &mut f);
    }
}

fn slices(piece: &str, f: &mut impl FnMut(&[u8]) -> ControlFlow<()>) -> ControlFlow<()> {
    let mut rest = piece;
    while rest.len() > MAX_TOKEN_BYTES {
        let mut end = MAX_TOKEN_BYTES;
        while !rest.is_char_boundary(end) {
            end -= 1;
        }
        let (slice, after) = rest.split_at(end);
        f(slice.as_bytes())?;
        rest = after;
    }
    if rest.is_empty() {
        return ControlFlow::Continue(());
    }
    f(rest.as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_known_texts() {
        assert_eq!(count(""), 0);
        assert_eq!(count("hello world"), 2);
        assert_eq!(count("<|endoftext|>"), count("<|endoftext|>x") - 1);
    }

    /// No token of the table is longer than [`MAX_TOKEN_BYTES`], and one is
    /// that long: the bound is the table's own.
    #[test]
    fn the_longest_token_is_max_token_bytes() {
        let bpe = &tokenizer().bpe;
        let longest = (0..bpe.num_tokens())
            .map(|token| bpe.token_len(token as u32))
            .max();
        assert_eq!(longest, Some(MAX_TOKEN_BYTES));
    }

    #[test]
    fn slices_end_on_character_boundaries_and_cover_the_piece() {
        for piece in [
            "",
            "a",
            &"é".repeat(200),
            &"a".repeat(300),
            &"日本".repeat(100),
        ] {
            let mut seen = Vec::new();
            let _ = slices(piece, &mut |slice| {
                assert!(slice.len() <= MAX_TOKEN_BYTES);
                assert!(std::str::from_utf8(slice).is_ok());
                seen.extend_from_slice(slice);
                ControlFlow::Continue(())
            });
            assert_eq!(seen, piece.as_bytes());
        }
    }

    #[test]
    fn a_bounded_count_stops_at_its_limit_and_when_cancelled() {
        let text = "word ".repeat(10_000);
        let tokens = count(&text);
        assert_eq!(
            count_within(&text, tokens, &|| false),
            Count::Tokens(tokens)
        );
        assert_eq!(count_within(&text, tokens - 1, &|| false), Count::OverLimit);
        assert_eq!(count_within(&text, u64::MAX, &|| true), Count::Cancelled);
        assert_eq!(count_within("short", u64::MAX, &|| true), Count::Tokens(1));
    }

    #[test]
    fn the_byte_bound_never_exceeds_the_count() {
        for text in [
            "",
            "a",
            &"=".repeat(10_000),
            &" ".repeat(10_000),
            &"a".repeat(10_000),
            "hello world",
        ] {
            assert!(min_tokens(text.len()) <= count(text), "{text:.20}");
        }
    }

    #[test]
    fn cuts_long_completions_to_the_cap() {
        let text = "one two three four five six seven eight nine ten".to_owned();
        let full = count(&text);
        let (cut_text, tokens) = cut(text.clone(), 3);
        assert_eq!(tokens, 3);
        assert!(text.starts_with(&cut_text));
        assert_eq!(cut(text.clone(), full), (text, full));
        assert_eq!(cut("héllo wörld ✓✓✓".to_owned(), 0), (String::new(), 0));
        let long = "a".repeat(100_000);
        let (kept, tokens) = cut(long.clone(), 7);
        assert_eq!(tokens, 7);
        assert!(long.starts_with(&kept) && !kept.is_empty());
    }
}

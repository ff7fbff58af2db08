//! Why a run of a ranked match failed, in words its owners may read: the
//! worker records the cause of each failed run on the match
//! (`matches.last_failure`), and the void after the last run names it. Owners
//! read it on the match page, in its JSON twin and in `ladder matches`, so it
//! is one line of at most [`MAX_RUN_FAILURE_CHARS`] characters, and whatever
//! names a place on the server (a path, an object-store URL, a database
//! address) or could be a secret is left out: the operator's log keeps the
//! whole error.

use crate::limits::MAX_RUN_FAILURE_CHARS;
use crate::text::is_hidden_control;

/// What stands in for a path or a URL of the server.
const HIDDEN_PATH: &str = "[path]";

/// What stands in for a word that may hold a secret (a ladder token, `user@host`).
const HIDDEN_WORD: &str = "[hidden]";

/// The cause of a run that failed `during` a step (`publishing the replay`),
/// from the error's text: `"{during} failed: {detail}"`, public as
/// [`public_line`] makes it.
pub fn public_cause(during: &str, detail: &str) -> String {
    public_line(&format!("{during} failed: {detail}"))
}

/// `text` as owners may read it: its first line only, control and
/// bidirectional characters as spaces, runs of blanks as one, every word
/// that holds a `/` or a `\` (a path, a URL) as `[path]` and every word that
/// could hold a secret (`dlt_…`, `user@host`) as `[hidden]`, cut to
/// [`MAX_RUN_FAILURE_CHARS`] characters ending in `…`.
pub fn public_line(text: &str) -> String {
    let first = text.lines().next().unwrap_or_default();
    let spaced: String = first
        .chars()
        .map(|c| if is_hidden_control(c) { ' ' } else { c })
        .collect();
    let words: Vec<String> = spaced.split_whitespace().map(public_word).collect();
    cut(&words.join(" "), MAX_RUN_FAILURE_CHARS)
}

/// One word: itself, or what stands in for it, with the punctuation around it
/// kept so the sentence still reads (`/srv/x:` becomes `[path]:`).
fn public_word(word: &str) -> String {
    const AROUND: &[char] = &['(', ')', '[', ']', '"', '\'', ':', ';', ',', '.', '`'];
    let core = word.trim_matches(AROUND);
    let hidden = if core.contains(['/', '\\']) {
        HIDDEN_PATH
    } else if core.contains('@') || core.to_ascii_lowercase().contains("dlt_") {
        HIDDEN_WORD
    } else {
        return word.to_owned();
    };
    let start = word.len() - word.trim_start_matches(AROUND).len();
    let end = word.trim_end_matches(AROUND).len().max(start);
    format!("{}{hidden}{}", &word[..start], &word[end..])
}

/// `text` cut to `most` characters, the last of them `…` when cut.
fn cut(text: &str, most: usize) -> String {
    if text.chars().count() <= most {
        return text.to_owned();
    }
    let mut kept: String = text.chars().take(most.saturating_sub(1)).collect();
    kept.truncate(kept.trim_end().len());
    kept.push('…');
    kept
}

/// The note of a match voided at its claim number `claim` after `runs` runs
/// without a result, naming the last run's cause when a worker recorded one.
pub fn void_note(claim: i64, runs: i64, last_failure: Option<&str>) -> String {
    let voided = format!("voided at claim {claim} after {runs} runs without a result");
    match last_failure
        .map(str::trim)
        .filter(|cause| !cause.is_empty())
    {
        Some(cause) => format!("{voided}; the last run failed: {cause}"),
        None => voided,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn causes_are_one_public_line() {
        let table = [
            (
                "publishing the replay",
                "replay is 18909236 bytes, more than the 16777216-byte limit",
                "publishing the replay failed: replay is 18909236 bytes, more than the 16777216-byte limit",
            ),
            (
                "publishing the replay",
                "replay store: cannot write /var/tmp/x/replays/.tmp/17-3: Not a directory (os error 20)",
                "publishing the replay failed: replay store: cannot write [path]: Not a directory (os error 20)",
            ),
            (
                "publishing the replay",
                "publishing the replay to s3://bucket/prefix took more than 15000 ms",
                "publishing the replay failed: publishing the replay to [path] took more than 15000 ms",
            ),
            (
                "preparing the match",
                "cannot reach (postgres://ladder:secret@db:5432/ladder)\nsecond line",
                "preparing the match failed: cannot reach ([path])",
            ),
            (
                "settling",
                "token dlt_abcdef refused for root@example.org.",
                "settling failed: token [hidden] refused for [hidden].",
            ),
            (
                "publishing the replay",
                "bad\u{1b}[31m name \u{202e}txt.exe\t\tend",
                "publishing the replay failed: bad [31m name txt.exe end",
            ),
        ];
        for (during, detail, expected) in table {
            assert_eq!(public_cause(during, detail), expected, "{detail:?}");
        }
    }

    #[test]
    fn causes_are_bounded() {
        let long = public_cause("publishing the replay", &"é".repeat(10_000));
        assert_eq!(long.chars().count(), MAX_RUN_FAILURE_CHARS);
        assert!(long.ends_with('…'), "{long}");
        assert!(!long.contains('\n'));
        assert_eq!(public_line(""), "");
        assert_eq!(public_line("/"), "[path]");
        assert_eq!(public_line("\"/x\","), "\"[path]\",");
    }

    #[test]
    fn a_void_names_the_last_cause() {
        assert_eq!(
            void_note(3, 2, None),
            "voided at claim 3 after 2 runs without a result"
        );
        assert_eq!(void_note(3, 2, Some("  ")), void_note(3, 2, None));
        assert_eq!(
            void_note(
                3,
                2,
                Some("publishing the replay failed: replay is 5 bytes")
            ),
            "voided at claim 3 after 2 runs without a result; the last run failed: \
             publishing the replay failed: replay is 5 bytes"
        );
    }
}

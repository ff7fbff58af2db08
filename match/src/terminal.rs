//! Text from outside (replays, servers, bots, models) on its way to a
//! terminal: no control character is ever printed as it is, so nothing a
//! replay or a server sends can move the cursor, retitle the window or
//! smuggle an escape sequence (C0, DEL and the C1 range, which holds the
//! one-byte CSI 0x9b); nor a bidirectional control, which would reorder what
//! is shown around it (U+202E shows `exe.txt` for `txt.exe`). Both binaries
//! print through these. The ladder refuses the same characters in what
//! owners write (`duel_ladder_core::text`).

/// The bidirectional formatting characters: the embeddings and overrides
/// (U+202A–U+202E), the isolates (U+2066–U+2069), and the marks (U+200E,
/// U+200F, U+061C).
pub fn is_bidi_control(c: char) -> bool {
    matches!(
        c,
        '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}' | '\u{200E}' | '\u{200F}' | '\u{061C}'
    )
}

/// A character never printed as it is: a control or a bidirectional control.
pub fn is_hidden(c: char) -> bool {
    c.is_control() || is_bidi_control(c)
}

/// `text` with every control and bidirectional character shown as `�`: for
/// one line.
pub fn safe(text: &str) -> String {
    text.chars()
        .map(|c| if is_hidden(c) { '\u{fffd}' } else { c })
        .collect()
}

/// [`safe`], keeping line ends (`\n`): for a rendering of several lines.
pub fn safe_lines(text: &str) -> String {
    text.chars()
        .map(|c| {
            if is_hidden(c) && c != '\n' {
                '\u{fffd}'
            } else {
                c
            }
        })
        .collect()
}

/// An error and its causes on one line, `what: why: …`, each cause once: a
/// message that already quotes its cause (as the typed errors of this
/// workspace do) is not followed by it again. Not yet made safe: print it
/// through [`safe`].
pub fn error_line(error: &(dyn std::error::Error + 'static)) -> String {
    let mut line = error.to_string();
    let mut cause = error.source();
    while let Some(next) = cause {
        let text = next.to_string();
        if !line.contains(&text) {
            line.push_str(": ");
            line.push_str(&text);
        }
        cause = next.source();
    }
    line
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each cause once, in order: a message that quotes its cause is not
    /// followed by it again; one that does not is.
    #[test]
    fn error_line_names_each_cause_once() {
        let quoting = crate::MatchError::BotFile {
            path: "bots/a.wasm".into(),
            reason: crate::BotFileReason::Io(std::io::Error::other("permission denied")),
        };
        assert_eq!(
            error_line(&quoting),
            "cannot read bot bots/a.wasm: permission denied"
        );
        #[derive(Debug, thiserror::Error)]
        #[error("opening the store")]
        struct Opening(#[source] std::io::Error);
        let plain = Opening(std::io::Error::other("disk full"));
        assert_eq!(error_line(&plain), "opening the store: disk full");
    }

    #[test]
    fn escapes_never_pass() {
        let hostile = "a\u{1b}]0;pwned\u{7}b\u{9b}31mc\u{7f}d\r\ne";
        assert_eq!(safe(hostile), "a�]0;pwned�b�31mc�d��e");
        assert_eq!(safe_lines(hostile), "a�]0;pwned�b�31mc�d�\ne");
        assert_eq!(safe("plain café ✓"), "plain café ✓");
    }

    #[test]
    fn bidirectional_controls_never_pass() {
        let hostile = "report\u{202e}fdp.exe \u{202a}a\u{202b}b\u{202c}c\u{202d}d \
            \u{2066}e\u{2067}f\u{2068}g\u{2069}h \u{200e}i\u{200f}j\u{061c}k";
        let shown = safe(hostile);
        assert!(!shown.chars().any(is_bidi_control), "{shown}");
        assert_eq!(shown.matches('\u{fffd}').count(), 12, "{shown}");
        assert!(!safe_lines(hostile).chars().any(is_bidi_control));
        // Right-to-left text itself is text.
        assert_eq!(safe("שלום مرحبا"), "שלום مرحبا");
    }
}

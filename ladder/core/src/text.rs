//! Characters that must never reach a page or a terminal as they are from
//! text an owner, a bot or a model controls: control characters (C0, DEL,
//! C1, which holds the one-byte CSI) and the bidirectional controls, which
//! reorder what is shown around them (U+202E makes `exe.txt` of `txt.exe`).
//! The referee's `terminal` module keeps the same list for what it prints.

/// The bidirectional formatting characters: the embeddings and overrides
/// (U+202A–U+202E), the isolates (U+2066–U+2069), and the marks (U+200E
/// left-to-right, U+200F right-to-left, U+061C the Arabic letter mark).
pub fn is_bidi_control(c: char) -> bool {
    matches!(
        c,
        '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}' | '\u{200E}' | '\u{200F}' | '\u{061C}'
    )
}

/// A control character or a bidirectional control: refused in text an owner
/// writes, replaced in text shown from a bot or a model.
pub fn is_hidden_control(c: char) -> bool {
    c.is_control() || is_bidi_control(c)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bidi_and_control_characters() {
        let hidden = [
            '\u{0}', '\n', '\u{1b}', '\u{7f}', '\u{9b}', '\u{202A}', '\u{202B}', '\u{202C}',
            '\u{202D}', '\u{202E}', '\u{2066}', '\u{2067}', '\u{2068}', '\u{2069}', '\u{200E}',
            '\u{200F}', '\u{061C}',
        ];
        for c in hidden {
            assert!(is_hidden_control(c), "U+{:04X}", c as u32);
        }
        for c in ['a', 'é', '✓', 'ש', '\u{200D}', '\u{2065}', '\u{2029}', ' '] {
            assert!(!is_bidi_control(c), "U+{:04X}", c as u32);
        }
        assert!(!is_hidden_control('ש'), "right-to-left letters are text");
    }
}

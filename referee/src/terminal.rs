//! Text from outside (replays, servers, bots) on its way to a terminal: no
//! control character is ever printed as it is, so nothing a replay or a
//! server sends can move the cursor, retitle the window or smuggle an escape
//! sequence (C0, DEL and the C1 range, which holds the one-byte CSI 0x9b).
//! Both binaries print through these.

/// `text` with every control character shown as `�`: for one line.
pub fn safe(text: &str) -> String {
    text.chars()
        .map(|c| if c.is_control() { '\u{fffd}' } else { c })
        .collect()
}

/// [`safe`], keeping line ends (`\n`): for a rendering of several lines.
pub fn safe_lines(text: &str) -> String {
    text.chars()
        .map(|c| {
            if c.is_control() && c != '\n' {
                '\u{fffd}'
            } else {
                c
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_never_pass() {
        let hostile = "a\u{1b}]0;pwned\u{7}b\u{9b}31mc\u{7f}d\r\ne";
        assert_eq!(safe(hostile), "a�]0;pwned�b�31mc�d��e");
        assert_eq!(safe_lines(hostile), "a�]0;pwned�b�31mc�d�\ne");
        assert_eq!(safe("plain café ✓"), "plain café ✓");
    }
}

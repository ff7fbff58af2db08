//! A bot's public profile: the description, author and source link its owner
//! sets (`ladder bot edit`) and the site shows. Plain text, length-limited,
//! without control or bidirectional characters (crate::text: U+202E would
//! reorder the page and a terminal around it); the link is an `http(s)` URL
//! that a URL parser reads (a valid port, a host), with nothing a page could
//! mistake for markup. The site escapes all of it again.

use crate::error::{CoreError, Result};
use crate::limits::{MAX_BOT_AUTHOR_CHARS, MAX_BOT_DESCRIPTION_CHARS, MAX_SOURCE_URL_BYTES};
use crate::text::is_bidi_control;

/// What the site shows of a bot beside its record; `None` where unset.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct BotProfile {
    pub description: Option<String>,
    pub author: Option<String>,
    pub source_url: Option<String>,
}

/// A change to a profile: `None` leaves a field as it is, an empty string
/// clears it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ProfileEdit {
    pub description: Option<String>,
    pub author: Option<String>,
    pub source_url: Option<String>,
}

impl ProfileEdit {
    pub fn is_empty(&self) -> bool {
        self.description.is_none() && self.author.is_none() && self.source_url.is_none()
    }

    /// The edit with surrounding whitespace trimmed, checked: a field that is
    /// too long, holds a control character, or (the link) is not an
    /// `http(s)` URL with a host is refused with a line naming it.
    pub fn checked(&self) -> Result<ProfileEdit> {
        if self.is_empty() {
            return Err(CoreError::Invalid(
                "nothing to change: give a description, an author or a source URL".to_owned(),
            ));
        }
        let trimmed = |field: &Option<String>| field.as_deref().map(|text| text.trim().to_owned());
        let edit = ProfileEdit {
            description: trimmed(&self.description),
            author: trimmed(&self.author),
            source_url: trimmed(&self.source_url),
        };
        if let Some(text) = &edit.description {
            check_text("description", text, MAX_BOT_DESCRIPTION_CHARS)?;
        }
        if let Some(text) = &edit.author {
            check_text("author", text, MAX_BOT_AUTHOR_CHARS)?;
        }
        if let Some(url) = &edit.source_url
            && !url.is_empty()
        {
            check_source_url(url)?;
        }
        Ok(edit)
    }
}

fn check_text(what: &str, text: &str, most_chars: usize) -> Result<()> {
    if text.chars().count() > most_chars {
        return Err(CoreError::Invalid(format!(
            "the {what} is longer than {most_chars} characters"
        )));
    }
    if text.chars().any(char::is_control) {
        return Err(CoreError::Invalid(format!(
            "the {what} holds a control character (line breaks and tabs included)"
        )));
    }
    if let Some(bidi) = text.chars().find(|c| is_bidi_control(*c)) {
        return Err(CoreError::Invalid(format!(
            "the {what} holds U+{:04X}, a bidirectional control that reorders the text around it",
            u32::from(bidi)
        )));
    }
    Ok(())
}

/// A source link: `http://` or `https://`, a host, then printable ASCII
/// without spaces, quotes, angle brackets or backslashes; no `user@` part,
/// which would make the link read as another host; and a URL the WHATWG
/// parser (the `url` crate, as browsers) reads: a port from 0 to 65535, a
/// valid host, well-formed escapes.
pub fn check_source_url(url: &str) -> Result<()> {
    let invalid = |why: &str| {
        Err(CoreError::Invalid(format!(
            "the source URL {:?} {why}",
            url.chars().take(64).collect::<String>()
        )))
    };
    if url.len() > MAX_SOURCE_URL_BYTES {
        return invalid(&format!("is longer than {MAX_SOURCE_URL_BYTES} bytes"));
    }
    let lower = url.to_ascii_lowercase();
    let Some(rest) = lower
        .strip_prefix("https://")
        .or_else(|| lower.strip_prefix("http://"))
    else {
        return invalid("must start with https:// or http://");
    };
    if !url
        .bytes()
        .all(|byte| byte.is_ascii_graphic() && !b"\"'<>\\`".contains(&byte))
    {
        return invalid("may hold only printable ASCII without spaces, quotes, <, > or \\");
    }
    let authority = rest.split(['/', '?', '#']).next().unwrap_or_default();
    if authority.contains('@') {
        return invalid("may not name a user (user@host)");
    }
    let host = authority
        .rsplit_once(':')
        .map_or(authority, |(host, _)| host);
    if host.is_empty() {
        return invalid("has no host");
    }
    match url::Url::parse(url) {
        Ok(parsed) if parsed.host().is_some() => Ok(()),
        Ok(_) => invalid("has no host"),
        Err(error) => invalid(&format!("is not a valid URL: {error}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn source_urls() {
        let table = [
            ("https://github.com/alice/counter", true),
            ("http://127.0.0.1:8080/bot.py", true),
            ("HTTPS://Example.org/x?y=1#z", true),
            ("https://[::1]:9/x", true),
            ("ftp://example.org/x", false),
            ("javascript:alert(1)", false),
            ("https://", false),
            ("https://:80/x", false),
            ("https://user@example.org/", false),
            ("https://example.org/a b", false),
            ("https://example.org/\"onmouseover=", false),
            ("https://example.org/<script>", false),
            ("https://exämple.org/", false),
            // What a URL parser refuses.
            ("https://example.org:99999/", false),
            ("https://example.org:65536/", false),
            ("https://example.org:65535/", true),
            ("https://example.org:8a/", false),
            ("https://[::1/x", false),
            ("https://300.1.1.1/", false),
            ("https://exa%zzmple.org/", false),
            ("https://exa mple.org/", false),
        ];
        for (url, ok) in table {
            assert_eq!(check_source_url(url).is_ok(), ok, "{url}");
        }
        let long = format!("https://example.org/{}", "a".repeat(MAX_SOURCE_URL_BYTES));
        assert!(check_source_url(&long).is_err());
        let port = check_source_url("https://example.org:99999/x").expect_err("refused");
        assert_eq!(
            port.to_string(),
            "invalid argument: the source URL \"https://example.org:99999/x\" is not a valid URL: invalid port number"
        );
    }

    #[test]
    fn edits_are_trimmed_and_checked() {
        let edit = ProfileEdit {
            description: Some("  counters <b>everything</b>  ".to_owned()),
            author: Some(String::new()),
            source_url: None,
        };
        let checked = edit.checked().expect("valid");
        assert_eq!(
            checked.description.as_deref(),
            Some("counters <b>everything</b>"),
            "markup is text: the site escapes it"
        );
        assert_eq!(checked.author.as_deref(), Some(""), "empty clears");
        assert_eq!(checked.source_url, None, "unchanged");
        let refused = [
            ProfileEdit::default(),
            ProfileEdit {
                description: Some("x".repeat(MAX_BOT_DESCRIPTION_CHARS + 1)),
                ..ProfileEdit::default()
            },
            ProfileEdit {
                author: Some("a\u{1b}[31m".to_owned()),
                ..ProfileEdit::default()
            },
            ProfileEdit {
                description: Some("two\nlines".to_owned()),
                ..ProfileEdit::default()
            },
            ProfileEdit {
                source_url: Some("example.org".to_owned()),
                ..ProfileEdit::default()
            },
            ProfileEdit {
                description: Some("counter\u{202e}txt.exe".to_owned()),
                ..ProfileEdit::default()
            },
            ProfileEdit {
                author: Some("alice\u{2066}".to_owned()),
                ..ProfileEdit::default()
            },
            ProfileEdit {
                description: Some("rtl\u{200f} mark".to_owned()),
                ..ProfileEdit::default()
            },
            ProfileEdit {
                source_url: Some("https://example.org:99999/".to_owned()),
                ..ProfileEdit::default()
            },
        ];
        for edit in refused {
            assert!(edit.checked().is_err(), "{edit:?}");
        }
        let bidi = ProfileEdit {
            description: Some("counter\u{202e}txt.exe".to_owned()),
            ..ProfileEdit::default()
        };
        assert_eq!(
            bidi.checked().expect_err("refused").to_string(),
            "invalid argument: the description holds U+202E, a bidirectional control that reorders the text around it"
        );
        // Right-to-left text itself is welcome.
        let hebrew = ProfileEdit {
            description: Some("שלום, a bot that counters".to_owned()),
            ..ProfileEdit::default()
        };
        assert!(hebrew.checked().is_ok());
        // Exactly at the limit, in characters (not bytes).
        let at_limit = ProfileEdit {
            description: Some("é".repeat(MAX_BOT_DESCRIPTION_CHARS)),
            ..ProfileEdit::default()
        };
        assert!(at_limit.checked().is_ok());
    }
}

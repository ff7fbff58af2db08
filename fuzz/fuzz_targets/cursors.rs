//! Fuzzes the site's listing cursors (`?cursor=` of /matches, a bot's page
//! and the standings): any text is a cursor or a one-line error, never a
//! panic or an overflow; a cursor that parses encodes back to one that
//! parses to the same place, and a standings cursor's next rank fits.

#![no_main]

use duel_ladder::store::site::{MatchCursor, StandingCursor};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|bytes: &[u8]| {
    let Ok(text) = std::str::from_utf8(bytes) else {
        return;
    };
    match MatchCursor::parse(text) {
        Err(error) => assert!(!error.to_string().contains('\n'), "{error}"),
        Ok(cursor) => {
            assert_eq!(MatchCursor::parse(&cursor.encode()).ok(), Some(cursor));
        }
    }
    match StandingCursor::parse(text) {
        Err(error) => assert!(!error.to_string().contains('\n'), "{error}"),
        Ok(cursor) => {
            assert!(cursor.rank.checked_add(1).is_some());
            let again = StandingCursor::parse(&cursor.encode()).expect("an encoded cursor parses");
            assert_eq!(again.rank, cursor.rank);
            assert_eq!(again.conservative.to_bits(), cursor.conservative.to_bits());
            assert_eq!(again.bot, cursor.bot);
        }
    }
});

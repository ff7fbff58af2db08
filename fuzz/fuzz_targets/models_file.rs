//! Fuzzes the model catalogue reader (`--models PATH`): any text is a
//! catalogue or a one-line error, never a panic; a catalogue that parses has
//! unique names, at most one default, and a default that is one of its
//! models.

#![no_main]

use duel_referee::Catalogue;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|bytes: &[u8]| {
    let Ok(text) = std::str::from_utf8(bytes) else {
        return;
    };
    match Catalogue::parse(text) {
        Err(error) => assert!(!error.to_string().contains('\n'), "{error}"),
        Ok(catalogue) => {
            let names: Vec<&str> = catalogue.entries().iter().map(|entry| entry.name.as_str()).collect();
            let mut unique = names.clone();
            unique.sort_unstable();
            unique.dedup();
            assert_eq!(unique.len(), names.len(), "{names:?}");
            assert!(catalogue.entries().iter().filter(|entry| entry.default).count() <= 1);
            if let Some(default) = catalogue.default_name() {
                assert!(names.contains(&default));
            }
        }
    }
});

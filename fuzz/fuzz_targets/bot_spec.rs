//! Fuzzes bot-spec parsing (`BotSpec::parse`, the endpoint host it yields, and
//! the endpoint URI built from it). None may panic, and a parsed spec prints as
//! text that parses back to the same spec.

#![no_main]

use duel_referee::BotSpec;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|bytes: &[u8]| {
    let Ok(text) = std::str::from_utf8(bytes) else {
        return;
    };
    let Ok(spec) = BotSpec::parse(text) else {
        assert!(duel_referee::spec::endpoint_host(text).is_err());
        return;
    };
    let printed = spec.to_string();
    let again = BotSpec::parse(&printed)
        .unwrap_or_else(|error| panic!("{text:?} printed as {printed:?}, which fails: {error}"));
    assert_eq!(again, spec, "{text:?} printed as {printed:?}");
    if let BotSpec::Endpoint(url) = &spec {
        let host = duel_referee::spec::endpoint_host(url)
            .unwrap_or_else(|error| panic!("{url:?} parsed but has no host: {error}"));
        assert!(!host.is_empty(), "{url:?}");
        let _ = duel_referee::endpoint::endpoint_uri(url);
    }
});

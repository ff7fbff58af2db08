//! Fuzzes the OpenAI face's request reader (`POST /v1/chat/completions`
//! bodies, from any bot): never a panic; a request that is read has its
//! messages within the bound and at most the stop strings OpenAI allows.

#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|bytes: &[u8]| {
    if let Ok(parsed) = duel_referee::openai::parse_request(bytes) {
        assert!(parsed.request.messages.len() <= duel_referee::limits::MAX_PROMPT_MESSAGES);
        assert!(parsed.request.sampling.stop.len() <= 4);
    }
});

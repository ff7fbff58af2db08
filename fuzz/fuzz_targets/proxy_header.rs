//! Fuzzes the PROXY protocol header reader of the HTTP listeners
//! (duel_plumbing::proxy_protocol): never a panic, never a read past the
//! header's end (the bytes after it are the HTTP request), and a client
//! named only by a header that parses as one.

#![no_main]

use duel_plumbing::proxy_protocol::{client_of_header, read_proxy_header};
use libfuzzer_sys::fuzz_target;

thread_local! {
    // A byte slice never makes the reader wait: one small runtime serves
    // every input.
    static RUNTIME: tokio::runtime::Runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .expect("runtime");
}

fuzz_target!(|bytes: &[u8]| {
    let _ = client_of_header(bytes);
    let mut rest = bytes;
    let read = RUNTIME.with(|runtime| runtime.block_on(read_proxy_header(&mut rest)));
    if read.is_ok() {
        let header = &bytes[..bytes.len() - rest.len()];
        assert_eq!(client_of_header(header), read, "the header read is the header parsed");
        assert!(header.len() <= duel_plumbing::limits::PROXY_HEADER_MAX_BYTES);
    }
});

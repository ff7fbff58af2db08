//! Fuzzes how an HTTP listener names a request's client from its peer and
//! `X-Forwarded-For` lines (duel_plumbing::clients::client_address): never a
//! panic; a peer that is not a trusted proxy is always the client, whatever
//! it sends; otherwise the client is the peer or an address written in the
//! header.

#![no_main]

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use duel_plumbing::clients::{TrustedProxies, client_address, parse_trusted_proxy};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|bytes: &[u8]| {
    let Some((&selector, header)) = bytes.split_first() else {
        return;
    };
    let peers = [
        IpAddr::V4(Ipv4Addr::new(10, 1, 2, 3)),
        IpAddr::V4(Ipv4Addr::new(192, 0, 2, 7)),
        IpAddr::V6(Ipv6Addr::LOCALHOST),
        IpAddr::V6(Ipv6Addr::new(0x2001, 0xdb8, 0, 0, 0, 0, 0, 1)),
    ];
    let peer = peers[usize::from(selector) % peers.len()];
    let trusted = TrustedProxies::new(
        ["10.0.0.0/8", "::1"]
            .iter()
            .filter_map(|network| parse_trusted_proxy(network).ok())
            .collect(),
    );
    // The --trusted-proxy reader takes any text without a panic too.
    let _ = parse_trusted_proxy(&String::from_utf8_lossy(header));
    let lines = header.split(|&byte| byte == b'\n');
    let client = client_address(peer, lines.clone(), &trusted);
    if !trusted.contains(peer) {
        assert_eq!(client, peer);
        return;
    }
    if client != peer {
        let text = String::from_utf8_lossy(header);
        let written = text
            .split(['\n', ','])
            .filter_map(|hop| {
                let hop = hop.trim();
                hop.parse::<IpAddr>()
                    .ok()
                    .or_else(|| hop.parse::<std::net::SocketAddr>().ok().map(|s| s.ip()))
            })
            .any(|address| address.to_canonical() == client);
        assert!(written, "{client} is neither the peer nor in {text:?}");
    }
});

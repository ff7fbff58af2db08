//! Who a client of an HTTP listener is, and what one client may hold at
//! once: its address (the peer's, or the one a trusted proxy forwarded),
//! the key its limits are counted under, and the per-client counts of
//! connections and event streams.
//!
//! Behind a TLS proxy every connection comes from the proxy's address. The
//! operator names the proxies (`--trusted-proxy CIDR`); only a peer within
//! them has its `X-Forwarded-For` read, right to left, skipping the named
//! proxies: the first address that is not one of them is the client. A
//! header from anyone else is ignored, so a client cannot choose its own
//! address.

use std::collections::HashMap;
use std::net::{IpAddr, Ipv6Addr, SocketAddr};
use std::sync::{Arc, Mutex};

use ipnet::IpNet;

use crate::limits::MAX_FORWARDED_HOPS;

/// The client of a request: the peer's address, or the address a trusted
/// proxy forwarded. Every request served by [`crate::listen`] carries it as
/// an extension; limits per client read it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ClientAddress(pub IpAddr);

/// The proxies whose `X-Forwarded-For` is believed.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TrustedProxies {
    networks: Arc<[IpNet]>,
}

impl TrustedProxies {
    /// No proxy: every client is its peer address.
    pub fn none() -> TrustedProxies {
        TrustedProxies::default()
    }

    pub fn new(networks: Vec<IpNet>) -> TrustedProxies {
        TrustedProxies {
            networks: networks.into(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.networks.is_empty()
    }

    /// Whether `address` is one of the named proxies.
    pub fn contains(&self, address: IpAddr) -> bool {
        let address = address.to_canonical();
        self.networks
            .iter()
            .any(|network| network.contains(&address))
    }
}

/// Reads `--trusted-proxy`: a network (`10.0.0.0/8`, `fd00::/8`) or one
/// address (`127.0.0.1`, `::1`).
pub fn parse_trusted_proxy(text: &str) -> Result<IpNet, String> {
    let text = text.trim();
    if let Ok(network) = text.parse::<IpNet>() {
        return Ok(network.trunc());
    }
    text.parse::<IpAddr>().map(IpNet::from).map_err(|_| {
        format!("{text:?} is not an address or a network (e.g. 10.0.0.0/8, 127.0.0.1, fd00::/8)")
    })
}

/// The client of a request from `peer` that carries the `X-Forwarded-For`
/// header lines `forwarded_for`, in the order received.
///
/// A peer that is not a trusted proxy is the client. From a trusted proxy,
/// the hops are read right to left: each trusted one is skipped; the first
/// other address is the client. An entry that is not an address (`unknown`,
/// garbage) stops the walk at the last address believed, and so does the
/// [`MAX_FORWARDED_HOPS`]th entry; if every hop is a trusted proxy, the
/// leftmost is the client.
pub fn client_address<'a>(
    peer: IpAddr,
    forwarded_for: impl DoubleEndedIterator<Item = &'a [u8]>,
    trusted: &TrustedProxies,
) -> IpAddr {
    let peer = peer.to_canonical();
    if !trusted.contains(peer) {
        return peer;
    }
    let mut client = peer;
    let hops = forwarded_for
        .rev()
        .flat_map(|line| line.rsplit(|&byte| byte == b','))
        .take(MAX_FORWARDED_HOPS);
    for hop in hops {
        let Some(address) = parse_hop(hop) else {
            return client;
        };
        client = address;
        if !trusted.contains(address) {
            return address;
        }
    }
    client
}

/// One `X-Forwarded-For` entry: an address, optionally with a port
/// (`192.0.2.1:8080`, `[2001:db8::1]:8080`).
fn parse_hop(hop: &[u8]) -> Option<IpAddr> {
    let text = std::str::from_utf8(hop).ok()?.trim();
    if let Ok(address) = text.parse::<IpAddr>() {
        return Some(address.to_canonical());
    }
    text.parse::<SocketAddr>()
        .ok()
        .map(|socket| socket.ip().to_canonical())
}

/// The key a client's limits are counted under: its IPv4 address, or the
/// /64 of its IPv6 address (one subscriber's usual allocation).
pub fn client_key(address: IpAddr) -> IpAddr {
    match address.to_canonical() {
        IpAddr::V4(v4) => IpAddr::V4(v4),
        IpAddr::V6(v6) => {
            let prefix = u128::from(v6) & !((1u128 << 64) - 1);
            IpAddr::V6(Ipv6Addr::from(prefix))
        }
    }
}

/// How many things (connections, streams) each client holds, under a cap
/// per client.
#[derive(Debug)]
pub struct PerClient {
    cap: usize,
    held: Mutex<HashMap<IpAddr, usize>>,
}

impl PerClient {
    pub fn new(cap: usize) -> Arc<PerClient> {
        Arc::new(PerClient {
            cap,
            held: Mutex::new(HashMap::new()),
        })
    }

    /// The cap per client.
    pub fn cap(&self) -> usize {
        self.cap
    }

    /// One more for `client`, or `None` if it holds the cap already. Given
    /// back when the [`Held`] drops.
    pub fn try_hold(self: &Arc<PerClient>, client: IpAddr) -> Option<Held> {
        let key = client_key(client);
        let mut held = self
            .held
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        let count = held.entry(key).or_insert(0);
        if *count >= self.cap {
            return None;
        }
        *count += 1;
        Some(Held {
            counts: Arc::clone(self),
            key,
        })
    }

    /// What `client` holds now.
    pub fn held_by(&self, client: IpAddr) -> usize {
        let held = self
            .held
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        held.get(&client_key(client)).copied().unwrap_or(0)
    }
}

/// One place held by a client; given back on drop.
#[derive(Debug)]
pub struct Held {
    counts: Arc<PerClient>,
    key: IpAddr,
}

impl Drop for Held {
    fn drop(&mut self) {
        let mut held = self
            .counts
            .held
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        if let Some(count) = held.get_mut(&self.key) {
            *count = count.saturating_sub(1);
            if *count == 0 {
                held.remove(&self.key);
            }
        }
    }
}

/// The event streams (server-sent events) each client of a listener may
/// hold; every request served by [`crate::listen`] carries the listener's.
#[derive(Clone, Debug)]
pub struct StreamPlaces(pub Arc<PerClient>);

/// A client holds as many event streams as it may.
#[derive(Debug, thiserror::Error)]
#[error("{client} holds {cap} event streams already: close one first")]
pub struct TooManyStreams {
    pub client: IpAddr,
    pub cap: usize,
}

/// A place for one more event stream of the request's client, held until
/// the stream ends (keep the [`Held`] inside it). A request served outside
/// [`crate::listen`] (a test's plain `axum::serve`) is not counted.
pub fn hold_stream(extensions: &http::Extensions) -> Result<Option<Held>, TooManyStreams> {
    let (Some(StreamPlaces(places)), Some(ClientAddress(client))) = (
        extensions.get::<StreamPlaces>(),
        extensions.get::<ClientAddress>(),
    ) else {
        return Ok(None);
    };
    places.try_hold(*client).map(Some).ok_or(TooManyStreams {
        client: *client,
        cap: places.cap(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn trusted(networks: &[&str]) -> TrustedProxies {
        TrustedProxies::new(
            networks
                .iter()
                .map(|text| parse_trusted_proxy(text).expect("network"))
                .collect(),
        )
    }

    fn ip(text: &str) -> IpAddr {
        text.parse().expect("address")
    }

    fn resolve(peer: &str, lines: &[&str], proxies: &TrustedProxies) -> IpAddr {
        client_address(ip(peer), lines.iter().map(|line| line.as_bytes()), proxies)
    }

    #[test]
    fn forwarded_addresses_are_believed_only_from_trusted_proxies() {
        let proxies = trusted(&["10.0.0.0/8", "::1"]);
        let cases: &[(&str, &[&str], &str)] = &[
            // Not a proxy: its header is ignored.
            ("192.0.2.7", &["198.51.100.1"], "192.0.2.7"),
            // A proxy with no header: the proxy is the client.
            ("10.1.2.3", &[], "10.1.2.3"),
            ("10.1.2.3", &["198.51.100.1"], "198.51.100.1"),
            // A client cannot choose its address by prepending one.
            ("10.1.2.3", &["203.0.113.9, 198.51.100.1"], "198.51.100.1"),
            // Chained proxies are skipped, across header lines.
            (
                "10.1.2.3",
                &["198.51.100.1, 10.9.9.9", "10.8.8.8"],
                "198.51.100.1",
            ),
            // Ports and bracketed IPv6.
            ("10.1.2.3", &["198.51.100.1:4711"], "198.51.100.1"),
            ("::1", &["[2001:db8::1]:443"], "2001:db8::1"),
            // Garbage stops the walk at the last address believed.
            ("10.1.2.3", &["198.51.100.1, unknown"], "10.1.2.3"),
            ("10.1.2.3", &["unknown, 10.2.2.2"], "10.2.2.2"),
            ("10.1.2.3", &["\u{1b}[31m"], "10.1.2.3"),
            // Every hop a proxy: the leftmost.
            ("10.1.2.3", &["10.4.4.4, 10.5.5.5"], "10.4.4.4"),
            // IPv4-mapped IPv6 is the IPv4 address.
            ("::ffff:10.1.2.3", &["::ffff:198.51.100.1"], "198.51.100.1"),
        ];
        for (peer, lines, expected) in cases {
            assert_eq!(
                resolve(peer, lines, &proxies),
                ip(expected),
                "peer {peer}, X-Forwarded-For {lines:?}"
            );
        }
        assert_eq!(
            resolve("10.1.2.3", &["198.51.100.1"], &TrustedProxies::none()),
            ip("10.1.2.3")
        );
    }

    #[test]
    fn a_long_chain_is_read_only_so_far() {
        let proxies = trusted(&["10.0.0.0/8"]);
        let mut hops = vec!["198.51.100.1".to_owned()];
        hops.extend((0..MAX_FORWARDED_HOPS + 5).map(|i| format!("10.0.{}.{}", i / 250, i % 250)));
        let line = hops.join(",");
        let client = resolve("10.1.2.3", &[&line], &proxies);
        assert!(
            proxies.contains(client),
            "stopped within the proxies: {client}"
        );
    }

    #[test]
    fn trusted_proxy_flags_are_read_or_refused() {
        assert_eq!(
            parse_trusted_proxy("10.1.2.3/8").map(|n| n.to_string()),
            Ok("10.0.0.0/8".to_owned())
        );
        assert_eq!(
            parse_trusted_proxy("::1").map(|n| n.to_string()),
            Ok("::1/128".to_owned())
        );
        assert!(parse_trusted_proxy("10.0.0.0/33").is_err());
        assert!(parse_trusted_proxy("localhost").is_err());
    }

    #[test]
    fn a_client_holds_at_most_its_cap_and_gets_places_back() {
        let counts = PerClient::new(2);
        let a = ip("127.0.0.1");
        let first = counts.try_hold(a).expect("first");
        let _second = counts.try_hold(a).expect("second");
        assert!(counts.try_hold(a).is_none());
        // Another client is counted apart; one IPv6 /64 is one client.
        assert!(counts.try_hold(ip("127.0.0.2")).is_some());
        let _v6 = counts.try_hold(ip("2001:db8::1")).expect("v6");
        let _v6b = counts.try_hold(ip("2001:db8::2")).expect("v6 again");
        assert!(counts.try_hold(ip("2001:db8::ffff")).is_none());
        drop(first);
        assert_eq!(counts.held_by(a), 1);
        assert!(counts.try_hold(a).is_some());
    }
}

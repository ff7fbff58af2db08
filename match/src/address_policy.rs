//! Which addresses the referee may dial for an endpoint bot. A public service
//! (`referee serve`, ladder workers) must not become a pivot into the network
//! it runs in, so by default only public unicast addresses are allowed; a bot
//! author's own runs (`referee local`, tournaments) allow any. A host name is
//! resolved once per match, every address it resolves to is checked, and the
//! match connects to exactly the address checked (never resolving again), so a
//! name cannot be re-pointed at a private address between check and use.
//!
//! Everything here except [`resolve`] is a pure function over addresses, and
//! that is how it is tested: tests never dial outside loopback.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

/// Whether private, loopback and other non-public addresses may be dialed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AddressPolicy {
    /// Public unicast addresses only (public services).
    PublicOnly,
    /// Any address (a bot author's own runs; operators who opt in).
    Any,
}

impl AddressPolicy {
    /// The policy for a flag such as `--allow-private-endpoints`.
    pub fn allowing_private(allow: bool) -> AddressPolicy {
        if allow {
            AddressPolicy::Any
        } else {
            AddressPolicy::PublicOnly
        }
    }

    /// Whether `address` may be dialed under this policy.
    pub fn allows(self, address: IpAddr) -> bool {
        match self {
            AddressPolicy::Any => true,
            AddressPolicy::PublicOnly => is_public(address),
        }
    }

    /// Checks a host name before it is resolved: `localhost` and its
    /// subdomains are loopback by definition (RFC 6761).
    pub fn check_name(self, host: &str) -> Result<(), String> {
        let lowered = host.trim_end_matches('.').to_ascii_lowercase();
        if self == AddressPolicy::PublicOnly
            && (lowered == "localhost" || lowered.ends_with(".localhost"))
        {
            return Err(refused(host));
        }
        Ok(())
    }

    /// Picks the address to dial among those `host` resolved to: refused when
    /// any of them is not allowed (a name pointing partly at a private address
    /// is not trusted with the rest), else the first.
    pub fn choose(
        self,
        host: &str,
        addresses: impl IntoIterator<Item = SocketAddr>,
    ) -> Result<SocketAddr, String> {
        let mut chosen = None;
        for address in addresses {
            if !self.allows(address.ip()) {
                return Err(refused(host));
            }
            chosen.get_or_insert(address);
        }
        chosen.ok_or_else(|| format!("{host} resolves to no address"))
    }
}

fn refused(host: &str) -> String {
    format!(
        "{host} is a loopback, private, link-local or otherwise non-public address; \
         this service dials public addresses only"
    )
}

/// Resolves `host:port` once and chooses the address to dial (see
/// [`AddressPolicy::choose`]). An IP literal is checked without resolving.
pub async fn resolve(host: &str, port: u16, policy: AddressPolicy) -> Result<SocketAddr, String> {
    policy.check_name(host)?;
    if let Ok(ip) = host.parse::<IpAddr>() {
        return policy.choose(host, [SocketAddr::new(ip, port)]);
    }
    let addresses = tokio::net::lookup_host((host, port))
        .await
        .map_err(|error| format!("cannot resolve {host}: {error}"))?;
    policy.choose(host, addresses)
}

/// Whether an address is a public unicast address: not loopback, private,
/// shared (CGNAT), link-local, multicast, reserved, documentation,
/// benchmarking or unspecified, also when an IPv4 address hides inside IPv6
/// (mapped, compatible, NAT64, 6to4, Teredo).
pub fn is_public(address: IpAddr) -> bool {
    match address {
        IpAddr::V4(v4) => is_public_v4(v4),
        IpAddr::V6(v6) => is_public_v6(v6),
    }
}

fn in_v4(address: Ipv4Addr, network: [u8; 4], prefix: u32) -> bool {
    let mask = u32::MAX.checked_shl(32 - prefix).unwrap_or(0);
    (u32::from(address) & mask) == (u32::from(Ipv4Addr::from(network)) & mask)
}

/// IPv4 ranges that are not public unicast (IANA special-purpose registry).
const NON_PUBLIC_V4: [([u8; 4], u32); 15] = [
    ([0, 0, 0, 0], 8),       // "this network"
    ([10, 0, 0, 0], 8),      // private
    ([100, 64, 0, 0], 10),   // shared address space (CGNAT)
    ([127, 0, 0, 0], 8),     // loopback
    ([169, 254, 0, 0], 16),  // link-local (cloud metadata lives here)
    ([172, 16, 0, 0], 12),   // private
    ([192, 0, 0, 0], 24),    // IETF protocol assignments
    ([192, 0, 2, 0], 24),    // documentation
    ([192, 88, 99, 0], 24),  // 6to4 relay anycast
    ([192, 168, 0, 0], 16),  // private
    ([198, 18, 0, 0], 15),   // benchmarking
    ([198, 51, 100, 0], 24), // documentation
    ([203, 0, 113, 0], 24),  // documentation
    ([224, 0, 0, 0], 4),     // multicast
    ([240, 0, 0, 0], 4),     // reserved, and the broadcast address
];

fn is_public_v4(address: Ipv4Addr) -> bool {
    !NON_PUBLIC_V4
        .iter()
        .any(|&(network, prefix)| in_v4(address, network, prefix))
}

fn is_public_v6(address: Ipv6Addr) -> bool {
    let segments = address.segments();
    let embedded_v4 = |high: u16, low: u16| {
        Ipv4Addr::new((high >> 8) as u8, high as u8, (low >> 8) as u8, low as u8)
    };
    // IPv4-mapped (::ffff:0:0/96) and IPv4-compatible (::/96, deprecated):
    // what is dialed is the IPv4 address.
    if segments[..5] == [0; 5] && (segments[5] == 0xffff || segments[5] == 0) {
        if address.is_unspecified() || address.is_loopback() {
            return false;
        }
        return is_public_v4(embedded_v4(segments[6], segments[7]));
    }
    // NAT64 (64:ff9b::/96): translated to the embedded IPv4 address.
    if segments[..6] == [0x64, 0xff9b, 0, 0, 0, 0] {
        return is_public_v4(embedded_v4(segments[6], segments[7]));
    }
    // 6to4 (2002::/16): tunnels to the IPv4 address in bits 16..48.
    if segments[0] == 0x2002 {
        return is_public_v4(embedded_v4(segments[1], segments[2]));
    }
    let first = segments[0];
    !((first & 0xfe00) == 0xfc00              // unique local fc00::/7
        || (first & 0xffc0) == 0xfe80         // link-local fe80::/10
        || (first & 0xff00) == 0xff00         // multicast ff00::/8
        || segments[..2] == [0x64, 0xff9b]    // local-use NAT64 64:ff9b:1::/48
        || segments[..4] == [0x100, 0, 0, 0]  // discard-only 100::/64
        || segments[..2] == [0x2001, 0]       // Teredo 2001::/32
        || segments[..2] == [0x2001, 0xdb8]   // documentation 2001:db8::/32
        || (first & 0xfff0) == 0x3ff0         // documentation 3fff::/20
        || first == 0) // the rest of ::/16 (unspecified, loopback, reserved)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn non_public_addresses_table() {
        for text in [
            "0.0.0.0",
            "0.1.2.3",
            "10.1.2.3",
            "100.64.0.1",
            "100.127.255.254",
            "127.0.0.1",
            "127.8.8.8",
            "169.254.169.254",
            "172.16.0.1",
            "172.31.255.255",
            "192.0.0.8",
            "192.0.2.1",
            "192.88.99.1",
            "192.168.1.1",
            "198.18.0.1",
            "198.19.255.255",
            "198.51.100.7",
            "203.0.113.9",
            "224.0.0.251",
            "239.255.255.250",
            "240.0.0.1",
            "255.255.255.255",
            "::",
            "::1",
            "::ffff:127.0.0.1",
            "::ffff:10.0.0.1",
            "::ffff:169.254.169.254",
            "::127.0.0.1",
            "::10.0.0.1",
            "64:ff9b::7f00:1",
            "64:ff9b::a9fe:a9fe",
            "64:ff9b:1::1",
            "2002:7f00:1::1",
            "2002:c0a8:101::1",
            "2001::1",
            "2001:db8::1",
            "3fff::1",
            "fc00::1",
            "fd12:3456::1",
            "fe80::1",
            "ff02::1",
            "100::1",
        ] {
            let address: IpAddr = text.parse().expect(text);
            assert!(!is_public(address), "{text} must not be public");
            assert!(!AddressPolicy::PublicOnly.allows(address), "{text}");
            assert!(AddressPolicy::Any.allows(address), "{text}");
        }
    }

    #[test]
    fn public_addresses_table() {
        for text in [
            "1.1.1.1",
            "8.8.8.8",
            "100.63.255.255",
            "100.128.0.1",
            "172.15.255.255",
            "172.32.0.1",
            "192.0.1.1",
            "198.17.255.255",
            "198.20.0.1",
            "223.255.255.254",
            "2606:4700::1111",
            "2a00:1450::1",
            "::ffff:8.8.8.8",
            "64:ff9b::808:808",
            "2002:808:808::1",
        ] {
            let address: IpAddr = text.parse().expect(text);
            assert!(is_public(address), "{text} must be public");
        }
    }

    #[test]
    fn one_private_address_among_public_ones_refuses_the_name() {
        let public: SocketAddr = "8.8.8.8:443".parse().expect("address");
        let private: SocketAddr = "10.0.0.1:443".parse().expect("address");
        let policy = AddressPolicy::PublicOnly;
        assert_eq!(policy.choose("bots.example", [public]), Ok(public));
        assert!(policy.choose("bots.example", [public, private]).is_err());
        assert!(policy.choose("bots.example", [private, public]).is_err());
        assert!(policy.choose("bots.example", []).is_err());
        assert_eq!(
            AddressPolicy::Any.choose("bots.example", [private, public]),
            Ok(private)
        );
    }

    #[test]
    fn localhost_names_are_refused_before_resolving() {
        for name in ["localhost", "LOCALHOST.", "api.localhost"] {
            assert!(
                AddressPolicy::PublicOnly.check_name(name).is_err(),
                "{name}"
            );
            assert!(AddressPolicy::Any.check_name(name).is_ok(), "{name}");
        }
        assert!(AddressPolicy::PublicOnly.check_name("bots.example").is_ok());
    }

    #[tokio::test]
    async fn literals_are_checked_without_resolving() {
        let refused = resolve("127.0.0.1", 50051, AddressPolicy::PublicOnly)
            .await
            .expect_err("loopback refused");
        assert!(refused.contains("non-public"), "{refused}");
        assert_eq!(
            resolve("127.0.0.1", 50051, AddressPolicy::Any).await,
            Ok("127.0.0.1:50051".parse().expect("address"))
        );
        assert_eq!(
            resolve("::1", 7, AddressPolicy::Any).await,
            Ok("[::1]:7".parse().expect("address"))
        );
    }
}

//! The PROXY protocol header (HAProxy's `send-proxy`, versions 1 and 2) that a
//! trusted proxy writes before a connection's first request, naming the
//! client it carries. Read byte-exact, so the HTTP request after it is left
//! on the socket for hyper; parsed by the `ppp` crate.

use std::net::{IpAddr, SocketAddr};

use ppp::HeaderResult;
use ppp::PartialResult;
use tokio::io::{AsyncRead, AsyncReadExt};

use crate::limits::PROXY_HEADER_MAX_BYTES;

/// The twelve bytes every version 2 header starts with.
const V2_SIGNATURE: [u8; 12] = *b"\r\n\r\n\0\r\nQUIT\n";
/// The start of every version 1 header.
const V1_START: &[u8] = b"PROXY ";
/// Version 1's longest header, by its spec (CRLF included).
const V1_MAX_BYTES: usize = 107;

/// Why a connection's PROXY header was refused; the connection is closed.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum ProxyHeaderError {
    #[error("the connection does not start with a PROXY protocol header")]
    Missing,
    #[error("PROXY protocol header longer than {PROXY_HEADER_MAX_BYTES} bytes")]
    TooLong,
    #[error("malformed PROXY protocol header: {0}")]
    Malformed(String),
    #[error("connection closed inside its PROXY protocol header: {0}")]
    Read(String),
}

/// The client a complete PROXY header names: its source address, or `None`
/// when it names none (v1 `UNKNOWN`, v2 `LOCAL` — a proxy's own health
/// check — or an address family other than TCP over IPv4/IPv6); the
/// connection is then the proxy's own.
pub fn client_of_header(header: &[u8]) -> Result<Option<SocketAddr>, ProxyHeaderError> {
    let parsed = HeaderResult::parse(header);
    if parsed.is_incomplete() {
        return Err(ProxyHeaderError::Malformed("incomplete".into()));
    }
    let (client, length) = match parsed {
        HeaderResult::V1(Ok(header)) => {
            let client = match header.addresses {
                ppp::v1::Addresses::Tcp4(ip) => Some(SocketAddr::new(
                    IpAddr::V4(ip.source_address),
                    ip.source_port,
                )),
                ppp::v1::Addresses::Tcp6(ip) => Some(SocketAddr::new(
                    IpAddr::V6(ip.source_address),
                    ip.source_port,
                )),
                ppp::v1::Addresses::Unknown => None,
            };
            (client, header.header.len())
        }
        HeaderResult::V2(Ok(header)) => {
            let client =
                match (header.command, header.addresses) {
                    (ppp::v2::Command::Local, _) => None,
                    (ppp::v2::Command::Proxy, ppp::v2::Addresses::IPv4(ip)) => Some(
                        SocketAddr::new(IpAddr::V4(ip.source_address), ip.source_port),
                    ),
                    (ppp::v2::Command::Proxy, ppp::v2::Addresses::IPv6(ip)) => Some(
                        SocketAddr::new(IpAddr::V6(ip.source_address), ip.source_port),
                    ),
                    (ppp::v2::Command::Proxy, _) => None,
                };
            (client, header.len())
        }
        HeaderResult::V1(Err(error)) => return Err(ProxyHeaderError::Malformed(error.to_string())),
        HeaderResult::V2(Err(error)) => return Err(ProxyHeaderError::Malformed(error.to_string())),
    };
    // The reader hands over exactly one header: trailing bytes mean the
    // lengths disagree.
    if length != header.len() {
        return Err(ProxyHeaderError::Malformed(format!(
            "{} bytes after the header",
            header.len().saturating_sub(length)
        )));
    }
    Ok(client)
}

/// Reads one PROXY header (version 1 or 2) from the start of `stream`,
/// exactly to its end, and returns the client it names (see
/// [`client_of_header`]). The caller bounds it in time.
pub async fn read_proxy_header<R: AsyncRead + Unpin>(
    stream: &mut R,
) -> Result<Option<SocketAddr>, ProxyHeaderError> {
    let read_error = |error: std::io::Error| ProxyHeaderError::Read(error.to_string());
    let mut header = vec![0u8; V2_SIGNATURE.len()];
    // Version 1's shortest header ("PROXY UNKNOWN\r\n") is 15 bytes, so 12
    // can always be read before the version is known.
    stream.read_exact(&mut header).await.map_err(read_error)?;
    if header == V2_SIGNATURE {
        let mut rest = [0u8; 4];
        stream.read_exact(&mut rest).await.map_err(read_error)?;
        header.extend_from_slice(&rest);
        let length = usize::from(u16::from_be_bytes([rest[2], rest[3]]));
        if header.len() + length > PROXY_HEADER_MAX_BYTES {
            return Err(ProxyHeaderError::TooLong);
        }
        let start = header.len();
        header.resize(start + length, 0);
        stream
            .read_exact(&mut header[start..])
            .await
            .map_err(read_error)?;
    } else if header.starts_with(V1_START) {
        // Byte by byte to the CRLF: nothing after the header is consumed.
        while !header.ends_with(b"\r\n") {
            if header.len() >= V1_MAX_BYTES {
                return Err(ProxyHeaderError::TooLong);
            }
            header.push(stream.read_u8().await.map_err(read_error)?);
        }
    } else {
        return Err(ProxyHeaderError::Missing);
    }
    client_of_header(&header)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v2(command: u8, family: u8, addresses: &[u8], tlvs: &[u8]) -> Vec<u8> {
        let mut header = V2_SIGNATURE.to_vec();
        header.push(0x20 | command);
        header.push(family);
        let length = u16::try_from(addresses.len() + tlvs.len()).expect("short");
        header.extend_from_slice(&length.to_be_bytes());
        header.extend_from_slice(addresses);
        header.extend_from_slice(tlvs);
        header
    }

    async fn read(bytes: &[u8]) -> (Result<Option<SocketAddr>, ProxyHeaderError>, Vec<u8>) {
        let mut stream = bytes;
        let client = read_proxy_header(&mut stream).await;
        (client, stream.to_vec())
    }

    #[tokio::test]
    async fn headers_name_their_client_and_leave_the_request() {
        let request = b"GET / HTTP/1.1\r\n\r\n";
        let ipv4 = [
            198, 51, 100, 7, // source
            127, 0, 0, 1, // destination
            0x1f, 0x90, // source port 8080
            0x00, 0x50, // destination port 80
        ];
        let mut ipv6 = Vec::new();
        ipv6.extend_from_slice(
            &"2001:db8::7"
                .parse::<std::net::Ipv6Addr>()
                .expect("ip")
                .octets(),
        );
        ipv6.extend_from_slice(&std::net::Ipv6Addr::LOCALHOST.octets());
        ipv6.extend_from_slice(&[0x04, 0xd2, 0x00, 0x50]);
        let cases: Vec<(Vec<u8>, Option<&str>)> = vec![
            (
                b"PROXY TCP4 198.51.100.7 127.0.0.1 8080 80\r\n".to_vec(),
                Some("198.51.100.7:8080"),
            ),
            (
                b"PROXY TCP6 2001:db8::7 ::1 1234 80\r\n".to_vec(),
                Some("[2001:db8::7]:1234"),
            ),
            (b"PROXY UNKNOWN\r\n".to_vec(), None),
            (v2(1, 0x11, &ipv4, &[]), Some("198.51.100.7:8080")),
            // A TLV after the addresses (a NOOP of 3 bytes) is skipped.
            (
                v2(1, 0x11, &ipv4, &[0x04, 0x00, 0x03, 1, 2, 3]),
                Some("198.51.100.7:8080"),
            ),
            (v2(1, 0x21, &ipv6, &[]), Some("[2001:db8::7]:1234")),
            // LOCAL: the proxy's own connection (a health check).
            (v2(0, 0x00, &[], &[]), None),
        ];
        for (header, expected) in cases {
            let mut bytes = header.clone();
            bytes.extend_from_slice(request);
            let (client, rest) = read(&bytes).await;
            let expected = expected.map(|text| text.parse::<SocketAddr>().expect("address"));
            assert_eq!(
                client,
                Ok(expected),
                "{:?}",
                String::from_utf8_lossy(&header)
            );
            assert_eq!(rest, request, "the request is left whole");
        }
    }

    #[tokio::test]
    async fn anything_else_is_refused() {
        let long_v1 = {
            let mut line = b"PROXY TCP4 ".to_vec();
            line.extend(std::iter::repeat_n(b'1', 120));
            line
        };
        type Expected = fn(&ProxyHeaderError) -> bool;
        let cases: Vec<(Vec<u8>, Expected)> = vec![
            (b"GET / HTTP/1.1\r\nhost: x\r\n\r\n".to_vec(), |e| {
                *e == ProxyHeaderError::Missing
            }),
            (long_v1, |e| *e == ProxyHeaderError::TooLong),
            (v2(1, 0x11, &[0; 600], &[]), |e| {
                *e == ProxyHeaderError::TooLong
            }),
            (b"PROXY TCP4 198.51.100.7\r\n".to_vec(), |e| {
                matches!(e, ProxyHeaderError::Malformed(_))
            }),
            (b"PROXY TCP4 300.1.1.1 127.0.0.1 1 2\r\n".to_vec(), |e| {
                matches!(e, ProxyHeaderError::Malformed(_))
            }),
            (b"PROXY TCP4 198.51.100.7 127.0.0.1 80".to_vec(), |e| {
                matches!(e, ProxyHeaderError::Read(_))
            }),
            // An IPv4 family with too few address bytes.
            (v2(1, 0x11, &[1, 2, 3], &[]), |e| {
                matches!(e, ProxyHeaderError::Malformed(_))
            }),
            (b"PROX".to_vec(), |e| matches!(e, ProxyHeaderError::Read(_))),
        ];
        for (bytes, expected) in cases {
            let (client, _) = read(&bytes).await;
            let error = client.expect_err("refused");
            assert!(
                expected(&error),
                "{:?}: {error:?}",
                String::from_utf8_lossy(&bytes)
            );
        }
    }
}

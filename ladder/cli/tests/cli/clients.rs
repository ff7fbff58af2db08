//! Through the real binary: one client address cannot take
//! the site from the others (per-client caps on connections and on event
//! streams), and behind a trusted proxy clients are told apart by the
//! address it forwards (`X-Forwarded-For`, or a PROXY protocol header with
//! `--proxy-protocol`), while a peer that is not a trusted proxy cannot
//! choose its address either way.

use crate::common;

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::time::{Duration, Instant};

use common::TestDb;
use common::cli::{init_root, start_server};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpSocket, TcpStream};

const ATTACKER: IpAddr = IpAddr::V4(Ipv4Addr::new(127, 0, 0, 1));
const SOMEONE_ELSE: IpAddr = IpAddr::V4(Ipv4Addr::new(127, 0, 0, 2));
const PROXY: IpAddr = IpAddr::V4(Ipv4Addr::new(127, 0, 0, 3));

/// A connection from `source` to `site`.
async fn connect_from(source: IpAddr, site: SocketAddr) -> std::io::Result<TcpStream> {
    let socket = TcpSocket::new_v4()?;
    socket.bind(SocketAddr::new(source, 0))?;
    socket.connect(site).await
}

/// What the server answered to one request on a connection.
#[derive(Debug, PartialEq, Eq)]
enum Answer {
    Status(u16),
    /// The client's connection cap: 429 and the connection closed.
    ConnectionRefused,
    /// No answer: the connection closed or nothing came within 5 s.
    Nothing,
}

/// Sends `GET path` (with `X-Forwarded-For: forwarded` if given) and reads
/// the response's head. The connection stays open.
async fn get(stream: &mut TcpStream, path: &str, forwarded: Option<&str>) -> Answer {
    match get_head(stream, path, forwarded).await {
        None => Answer::Nothing,
        Some(head) if head.contains("connection: close") && head.starts_with("HTTP/1.1 429") => {
            Answer::ConnectionRefused
        }
        Some(head) => head
            .strip_prefix("HTTP/1.1 ")
            .and_then(|rest| rest.get(..3))
            .and_then(|code| code.parse().ok())
            .map_or(Answer::Nothing, Answer::Status),
    }
}

async fn get_status(stream: &mut TcpStream, path: &str, forwarded: Option<&str>) -> Option<u16> {
    match get(stream, path, forwarded).await {
        Answer::Status(code) => Some(code),
        Answer::ConnectionRefused => Some(429),
        Answer::Nothing => None,
    }
}

async fn get_head(stream: &mut TcpStream, path: &str, forwarded: Option<&str>) -> Option<String> {
    let forwarded = forwarded
        .map(|address| format!("X-Forwarded-For: {address}\r\n"))
        .unwrap_or_default();
    let request = format!("GET {path} HTTP/1.1\r\nHost: site\r\n{forwarded}\r\n");
    stream.write_all(request.as_bytes()).await.ok()?;
    let mut head = Vec::new();
    let mut buffer = [0u8; 4096];
    let read_head = async {
        while !head.windows(4).any(|window| window == b"\r\n\r\n") {
            match stream.read(&mut buffer).await {
                Ok(0) | Err(_) => break,
                Ok(read) => head.extend_from_slice(&buffer[..read]),
            }
        }
    };
    tokio::time::timeout(Duration::from_secs(5), read_head)
        .await
        .ok()?;
    Some(String::from_utf8_lossy(&head).into_owned())
}

fn site_address(server: &common::cli::Server) -> SocketAddr {
    server
        .http
        .as_deref()
        .and_then(|url| url.strip_prefix("http://"))
        .and_then(|address| address.parse().ok())
        .expect("the site's address")
}

async fn one_client_cannot_take_the_site(db: &TestDb) {
    let dir = tempfile::tempdir().expect("temp dir");
    init_root(&db.url, dir.path(), true);
    let server = start_server(
        &db.url,
        dir.path(),
        &["--http", "127.0.0.1:0", "--workers", "0"],
    );
    let site = site_address(&server);

    // One address asks for 2,000 Duel TV streams and opens 2,200 kept-alive
    // connections that ask for the home page, one after the other.
    let mut held = Vec::new();
    let mut pages_held = Vec::new();
    let (mut streams, mut refused_streams, mut refused_connections, mut pages) = (0, 0, 0, 0);
    for attempt in 0..4_200 {
        let Ok(mut stream) = connect_from(ATTACKER, site).await else {
            refused_connections += 1;
            continue;
        };
        let wants_tv = attempt % 2 == 0 && attempt < 4_000;
        let path = if wants_tv { "/tv/events" } else { "/" };
        match (wants_tv, get(&mut stream, path, None).await) {
            (true, Answer::Status(200)) => streams += 1,
            (true, Answer::Status(429)) => refused_streams += 1,
            (false, Answer::Status(200)) => {
                pages += 1;
                pages_held.push(stream);
                continue;
            }
            _ => refused_connections += 1,
        }
        held.push(stream);
    }
    eprintln!(
        "one address: {streams} TV streams, {refused_streams} refused 429; \
         {pages} pages; {refused_connections} connections refused"
    );
    assert_eq!(streams, 32, "the streams one client may hold");
    assert!(pages > 0, "kept-alive pages were served too");
    assert_eq!(
        streams + refused_streams + pages,
        128,
        "the connections one client may hold"
    );
    assert_eq!(refused_connections, 4_200 - 128);

    // Meanwhile anyone else gets the home page at once and can watch TV.
    let started = Instant::now();
    let mut other = connect_from(SOMEONE_ELSE, site).await.expect("connect");
    assert_eq!(get_status(&mut other, "/", None).await, Some(200));
    let home_ms = started.elapsed().as_millis();
    assert!(home_ms < 1_000, "another client's GET / took {home_ms} ms");
    let mut watcher = connect_from(SOMEONE_ELSE, site).await.expect("connect");
    assert_eq!(
        get_status(&mut watcher, "/tv/events", None).await,
        Some(200)
    );
    eprintln!("1 client x 4,200 connections: another client's GET / in {home_ms} ms");

    // The kept-alive pages ask again, as a browser would after 6 s; the
    // other client is still served.
    for stream in &mut pages_held {
        let _ = stream
            .write_all(b"GET / HTTP/1.1\r\nHost: site\r\n\r\n")
            .await;
    }
    let started = Instant::now();
    let mut other = connect_from(SOMEONE_ELSE, site).await.expect("connect");
    assert_eq!(get_status(&mut other, "/", None).await, Some(200));
    assert!(started.elapsed() < Duration::from_secs(1));

    // The attacker's places come back when it lets go.
    drop(held);
    drop(pages_held);
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let mut again = connect_from(ATTACKER, site).await.expect("connect");
        if get_status(&mut again, "/tv/events", None).await == Some(200) {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the attacker's places never came back"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

async fn forwarded_addresses_only_from_trusted_proxies(db: &TestDb) {
    let dir = tempfile::tempdir().expect("temp dir");
    init_root(&db.url, dir.path(), true);
    let server = start_server(
        &db.url,
        dir.path(),
        &[
            "--http",
            "127.0.0.1:0",
            "--workers",
            "0",
            "--trusted-proxy",
            "127.0.0.3/32",
            "--http-max-streams-per-client",
            "2",
        ],
    );
    let site = site_address(&server);
    let mut held = Vec::new();
    let watch = |source: IpAddr, forwarded: Option<&'static str>| async move {
        let mut stream = connect_from(source, site).await.expect("connect");
        let status = get_status(&mut stream, "/tv/events", forwarded).await;
        (status, stream)
    };
    // Through the proxy, two clients each hold their own two streams.
    for (forwarded, expected) in [
        ("198.51.100.7", 200),
        ("198.51.100.7", 200),
        ("198.51.100.7", 429),
        ("203.0.113.5, 198.51.100.8", 200),
        ("198.51.100.8", 200),
        ("198.51.100.8", 429),
    ] {
        let (status, stream) = watch(PROXY, Some(forwarded)).await;
        assert_eq!(status, Some(expected), "through the proxy for {forwarded}");
        held.push(stream);
    }
    // A peer that is not a trusted proxy is itself, whatever it forwards.
    for (forwarded, expected) in [
        ("198.51.100.9", 200),
        ("198.51.100.10", 200),
        ("198.51.100.11", 429),
    ] {
        let (status, stream) = watch(ATTACKER, Some(forwarded)).await;
        assert_eq!(status, Some(expected), "directly, claiming {forwarded}");
        held.push(stream);
    }
}

// The database plays no part here: SQLite only.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_client_cannot_take_the_site_from_the_others() {
    let db = TestDb::sqlite().await;
    one_client_cannot_take_the_site(&db).await;
    db.cleanup().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn forwarded_for_is_believed_only_from_trusted_proxies() {
    let db = TestDb::sqlite().await;
    forwarded_addresses_only_from_trusted_proxies(&db).await;
    db.cleanup().await;
}

/// A PROXY protocol version 2 header for a TCP/IPv4 connection from
/// `source` (port 4321) to 127.0.0.1:80.
fn proxy_v2(source: Ipv4Addr) -> Vec<u8> {
    let mut header = b"\r\n\r\n\0\r\nQUIT\n".to_vec();
    header.extend_from_slice(&[0x21, 0x11, 0x00, 0x0c]);
    header.extend_from_slice(&source.octets());
    header.extend_from_slice(&[127, 0, 0, 1, 0x10, 0xe1, 0x00, 0x50]);
    header
}

/// A connection from `source` that first sends `header`.
async fn connect_with_header(source: IpAddr, site: SocketAddr, header: &[u8]) -> TcpStream {
    let mut stream = connect_from(source, site).await.expect("connect");
    stream.write_all(header).await.expect("header sent");
    stream
}

async fn proxy_protocol_from_trusted_proxies(db: &TestDb) {
    let dir = tempfile::tempdir().expect("temp dir");
    init_root(&db.url, dir.path(), true);
    let server = start_server(
        &db.url,
        dir.path(),
        &[
            "--http",
            "127.0.0.1:0",
            "--workers",
            "0",
            "--trusted-proxy",
            "127.0.0.3/32",
            "--proxy-protocol",
            "--http-max-streams-per-client",
            "2",
            "--http-max-connections-per-client",
            "3",
        ],
    );
    let site = site_address(&server);
    let mut held = Vec::new();
    // Version 1: the client it names holds its own two streams...
    let v1 = b"PROXY TCP4 198.51.100.7 127.0.0.1 4321 80\r\n";
    for expected in [200, 200, 429] {
        let mut stream = connect_with_header(PROXY, site, v1).await;
        assert_eq!(
            get_status(&mut stream, "/tv/events", None).await,
            Some(expected),
            "v1"
        );
        held.push(stream);
    }
    // ...and its own three connections: a fourth is refused at once.
    let mut fourth = connect_with_header(PROXY, site, v1).await;
    assert_eq!(get(&mut fourth, "/", None).await, Answer::ConnectionRefused);
    // Version 2 names another client, with places of its own.
    let mut stream =
        connect_with_header(PROXY, site, &proxy_v2(Ipv4Addr::new(198, 51, 100, 8))).await;
    assert_eq!(
        get_status(&mut stream, "/tv/events", None).await,
        Some(200),
        "v2"
    );
    held.push(stream);
    // The proxy's own health check names nobody and is served.
    let mut stream = connect_with_header(PROXY, site, b"PROXY UNKNOWN\r\n").await;
    assert_eq!(
        get_status(&mut stream, "/", None).await,
        Some(200),
        "UNKNOWN"
    );
    // A trusted proxy's connection without a header is closed unanswered.
    let mut stream = connect_from(PROXY, site).await.expect("connect");
    assert_eq!(
        get(&mut stream, "/", None).await,
        Answer::Nothing,
        "no header"
    );
    // A peer that is not a trusted proxy cannot name a client: its header
    // is not HTTP, and it is not served.
    let mut stream = connect_with_header(
        ATTACKER,
        site,
        b"PROXY TCP4 198.51.100.20 127.0.0.1 1 80\r\n",
    )
    .await;
    assert!(
        !matches!(get(&mut stream, "/", None).await, Answer::Status(200)),
        "a header from an untrusted peer is not believed"
    );
    // And plain HTTP from it is served as ever.
    let mut stream = connect_from(SOMEONE_ELSE, site).await.expect("connect");
    assert_eq!(
        get_status(&mut stream, "/", None).await,
        Some(200),
        "direct"
    );
    drop(held);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_proxy_protocol_names_clients_of_trusted_proxies_only() {
    let db = TestDb::sqlite().await;
    proxy_protocol_from_trusted_proxies(&db).await;
    db.cleanup().await;
}

//! The client side of the replay service: download a replay (zstd when the
//! server offers it) and the server's public key.

use duel_replays::store::decompress;
use duel_replays::{MAX_REPLAY_BYTES, VerifyingKey, parse_public_key};

use crate::error::{FetchFailure, RefereeError};
use crate::limits::FETCH_TIMEOUT;

/// An HTTP client with the fetch timeout, rustls, and no proxies from the
/// environment surprises beyond reqwest's defaults.
pub fn http_client() -> Result<reqwest::Client, RefereeError> {
    reqwest::Client::builder()
        .timeout(FETCH_TIMEOUT)
        .user_agent(concat!("duel-referee/", env!("CARGO_PKG_VERSION")))
        .build()
        .map_err(RefereeError::HttpClient)
}

/// The URL of replay `id` on the service at `server` (its base URL).
pub fn replay_url(server: &str, id: &str) -> String {
    format!("{}/replays/{id}", server.trim_end_matches('/'))
}

/// The base URL of the service a replay URL points into (`…/replays/{id}` →
/// `…`), if it has that shape.
pub fn server_of(replay_url: &str) -> Option<String> {
    let (base, id) = replay_url.trim_end_matches('/').rsplit_once("/replays/")?;
    (!base.is_empty() && !id.is_empty() && !id.contains('/')).then(|| base.to_owned())
}

async fn get_bounded(
    client: &reqwest::Client,
    url: &str,
    accept_zstd: bool,
) -> Result<Vec<u8>, RefereeError> {
    get_at_most(client, url, accept_zstd, MAX_REPLAY_BYTES).await
}

async fn get_at_most(
    client: &reqwest::Client,
    url: &str,
    accept_zstd: bool,
    limit_bytes: u64,
) -> Result<Vec<u8>, RefereeError> {
    let fetch_error = |source: FetchFailure| RefereeError::Fetch {
        url: url.to_owned(),
        source,
    };
    let mut request = client.get(url);
    if accept_zstd {
        request = request.header(reqwest::header::ACCEPT_ENCODING, "zstd");
    }
    let mut response = request
        .send()
        .await
        .map_err(|error| fetch_error(FetchFailure::Request(error)))?;
    let status = response.status();
    let zstd = response
        .headers()
        .get(reqwest::header::CONTENT_ENCODING)
        .is_some_and(|value| value.as_bytes().eq_ignore_ascii_case(b"zstd"));
    let mut body = Vec::new();
    while let Some(chunk) = response
        .chunk()
        .await
        .map_err(|error| fetch_error(FetchFailure::Request(error)))?
    {
        if (body.len() + chunk.len()) as u64 > limit_bytes {
            return Err(fetch_error(FetchFailure::TooLarge { limit_bytes }));
        }
        body.extend_from_slice(&chunk);
    }
    if !status.is_success() {
        let detail = serde_json::from_slice::<serde_json::Value>(&body)
            .ok()
            .and_then(|value| {
                value
                    .get("error")
                    .and_then(|error| error.as_str())
                    .map(str::to_owned)
            })
            .unwrap_or_else(|| status.to_string());
        return Err(fetch_error(FetchFailure::Status {
            status: status.as_u16(),
            detail,
        }));
    }
    if zstd {
        return decompress(&body).map_err(|error| fetch_error(FetchFailure::Decompress(error)));
    }
    Ok(body)
}

/// Downloads the replay at `url`, asking for zstd and decompressing it.
pub async fn fetch_replay(client: &reqwest::Client, url: &str) -> Result<Vec<u8>, RefereeError> {
    get_bounded(client, url, true).await
}

/// The transcript beside the replay at `replay_url` (`…/replays/{id}`):
/// `{replay_url}/transcript`, at most a transcript's size.
pub async fn fetch_transcript(
    client: &reqwest::Client,
    replay_url: &str,
) -> Result<Vec<u8>, RefereeError> {
    let url = format!("{}/transcript", replay_url.trim_end_matches('/'));
    get_at_most(client, &url, false, duel_replays::MAX_TRANSCRIPT_BYTES).await
}

/// The public key the service at `server` publishes.
pub async fn fetch_public_key(
    client: &reqwest::Client,
    server: &str,
) -> Result<VerifyingKey, RefereeError> {
    let url = format!("{}/public-key", server.trim_end_matches('/'));
    let body = get_bounded(client, &url, false).await?;
    let text = String::from_utf8(body).map_err(|error| RefereeError::Fetch {
        url,
        source: FetchFailure::NotText(error),
    })?;
    Ok(parse_public_key(&text)?)
}

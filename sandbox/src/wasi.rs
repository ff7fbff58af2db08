//! WASI 0.2 for bots, closed: no preopened directories, no sockets, no name lookup,
//! empty environment and arguments, stdin at end of file, stdout and stderr into
//! the bounded bot log, randomness seeded from the match seed and side, and
//! virtual clocks. Everything a bot can observe is a function of its inputs, so
//! its behaviour re-plays from the replay.

use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;

use duel_rules::Side;
use rand::SeedableRng as _;
use rand::rngs::{ChaCha12Rng, Xoshiro256PlusPlus};
use sha2::{Digest as _, Sha256};
use wasmtime_wasi::cli::{IsTerminal, StdoutStream};
use wasmtime_wasi::p2::{OutputStream, Pollable, StreamError};
use wasmtime_wasi::{HostMonotonicClock, HostWallClock, WasiCtx, WasiCtxBuilder};

/// The bot's output over one match: the first `cap` bytes are kept, the rest is
/// counted and dropped. Writers never see an error, so no bot dies of a full pipe.
#[derive(Debug)]
pub(crate) struct BotLog {
    cap: usize,
    kept: Vec<u8>,
    dropped_bytes: u64,
}

impl BotLog {
    pub(crate) fn new(cap: usize) -> BotLog {
        BotLog {
            cap,
            kept: Vec::new(),
            dropped_bytes: 0,
        }
    }

    pub(crate) fn append(&mut self, bytes: &[u8]) {
        let room = self.cap.saturating_sub(self.kept.len());
        let take = room.min(bytes.len());
        self.kept.extend_from_slice(&bytes[..take]);
        self.dropped_bytes += (bytes.len() - take) as u64;
    }

    pub(crate) fn text(&self) -> String {
        String::from_utf8_lossy(&self.kept).into_owned()
    }

    /// Bytes kept so far.
    pub(crate) fn len(&self) -> usize {
        self.kept.len()
    }

    pub(crate) fn dropped_bytes(&self) -> u64 {
        self.dropped_bytes
    }
}

pub(crate) type SharedLog = Arc<Mutex<BotLog>>;

pub(crate) fn append_log(log: &SharedLog, bytes: &[u8]) {
    // A poisoned lock only means another writer panicked mid-append; the bytes kept
    // so far are still valid, so keep going rather than propagate the panic.
    let mut guard = log.lock().unwrap_or_else(|poison| poison.into_inner());
    guard.append(bytes);
}

/// stdout / stderr of a bot: writes into its [`BotLog`], always accepted.
#[derive(Clone, Debug)]
struct LogSink(SharedLog);

/// How much a guest may write in one call; it writes more in several calls.
const SINK_WRITE_CHUNK_BYTES: usize = 64 * 1024;

#[wasmtime_wasi::async_trait]
impl OutputStream for LogSink {
    fn write(&mut self, bytes: bytes::Bytes) -> Result<(), StreamError> {
        append_log(&self.0, &bytes);
        Ok(())
    }
    fn flush(&mut self) -> Result<(), StreamError> {
        Ok(())
    }
    fn check_write(&mut self) -> Result<usize, StreamError> {
        Ok(SINK_WRITE_CHUNK_BYTES)
    }
}

#[wasmtime_wasi::async_trait]
impl Pollable for LogSink {
    async fn ready(&mut self) {}
}

impl tokio::io::AsyncWrite for LogSink {
    fn poll_write(
        self: Pin<&mut Self>,
        _cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        append_log(&self.0, buf);
        Poll::Ready(Ok(buf.len()))
    }
    fn poll_flush(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Poll::Ready(Ok(()))
    }
    fn poll_shutdown(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Poll::Ready(Ok(()))
    }
}

impl IsTerminal for LogSink {
    fn is_terminal(&self) -> bool {
        false
    }
}

impl StdoutStream for LogSink {
    fn async_stream(&self) -> Box<dyn tokio::io::AsyncWrite + Send + Sync> {
        Box::new(self.clone())
    }
    fn p2_stream(&self) -> Box<dyn OutputStream> {
        Box::new(self.clone())
    }
}

/// Virtual time: starts at a fixed instant for every instance and advances by a
/// fixed step on every reading, so time-based code is deterministic. Wall and
/// monotonic clocks share the counter.
#[derive(Clone, Debug)]
struct VirtualClock {
    readings: Arc<AtomicU64>,
}

/// 2000-01-01T00:00:00Z: what a bot's wall clock shows at its first reading.
const VIRTUAL_EPOCH_SECS: u64 = 946_684_800;
/// Each reading of either clock advances virtual time by this much.
const VIRTUAL_STEP_NANOS: u64 = 1_000;

impl VirtualClock {
    fn tick(&self) -> u64 {
        let n = self.readings.fetch_add(1, Ordering::Relaxed);
        n.saturating_mul(VIRTUAL_STEP_NANOS)
    }
}

impl HostWallClock for VirtualClock {
    fn resolution(&self) -> Duration {
        Duration::from_nanos(VIRTUAL_STEP_NANOS)
    }
    fn now(&self) -> Duration {
        Duration::from_secs(VIRTUAL_EPOCH_SECS) + Duration::from_nanos(self.tick())
    }
}

impl HostMonotonicClock for VirtualClock {
    fn resolution(&self) -> u64 {
        VIRTUAL_STEP_NANOS
    }
    fn now(&self) -> u64 {
        self.tick()
    }
}

/// 32 bytes derived from the match seed, the side and a purpose label.
fn derive_seed(seed: u64, side: Side, purpose: &str) -> [u8; 32] {
    let mut hasher = Sha256::new();
    hasher.update(b"duel-sandbox/wasi-random/v1\0");
    hasher.update(purpose.as_bytes());
    hasher.update([0]);
    hasher.update(seed.to_le_bytes());
    hasher.update(side.name().as_bytes());
    hasher.finalize().into()
}

/// The closed WASI context of one bot instance.
pub(crate) fn closed_wasi(seed: u64, side: Side, log: &SharedLog) -> WasiCtx {
    let secure = ChaCha12Rng::from_seed(derive_seed(seed, side, "secure"));
    let insecure = Xoshiro256PlusPlus::from_seed(derive_seed(seed, side, "insecure"));
    let seed_bytes = derive_seed(seed, side, "insecure-seed");
    let mut low = [0u8; 16];
    low.copy_from_slice(&seed_bytes[..16]);
    let clock = VirtualClock {
        readings: Arc::new(AtomicU64::new(0)),
    };
    let mut builder = WasiCtxBuilder::new();
    builder
        .stdout(LogSink(log.clone()))
        .stderr(LogSink(log.clone()))
        .secure_random(secure)
        .insecure_random(insecure)
        .insecure_random_seed(u128::from_le_bytes(low))
        .wall_clock(clock.clone())
        .monotonic_clock(clock)
        .allow_tcp(false)
        .allow_udp(false)
        .allow_ip_name_lookup(false);
    builder.build()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn log_keeps_the_first_bytes_and_counts_the_rest() {
        let mut log = BotLog::new(5);
        log.append(b"abc");
        log.append(b"defg");
        log.append(b"h");
        assert_eq!(log.text(), "abcde");
        assert_eq!(log.dropped_bytes(), 3);
    }

    #[test]
    fn seeds_differ_by_side_and_purpose() {
        assert_ne!(
            derive_seed(1, Side::A, "secure"),
            derive_seed(1, Side::B, "secure")
        );
        assert_ne!(
            derive_seed(1, Side::A, "secure"),
            derive_seed(1, Side::A, "insecure")
        );
        assert_eq!(
            derive_seed(7, Side::A, "secure"),
            derive_seed(7, Side::A, "secure")
        );
    }
}

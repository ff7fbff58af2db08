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

/// The bot's output: over the match, the first `cap` bytes are kept and the
/// rest is counted and dropped; and, beside it, the current decision's lines
/// ([`DecisionLines`]). Writers never see an error, so no bot dies of a full pipe.
#[derive(Debug)]
pub(crate) struct BotLog {
    cap: usize,
    kept: Vec<u8>,
    dropped_bytes: u64,
    decision: DecisionLines,
}

impl BotLog {
    pub(crate) fn new(cap: usize, decision_bounds: LogBounds) -> BotLog {
        BotLog {
            cap,
            kept: Vec::new(),
            dropped_bytes: 0,
            decision: DecisionLines::new(decision_bounds),
        }
    }

    pub(crate) fn append(&mut self, bytes: &[u8]) {
        let room = self.cap.saturating_sub(self.kept.len());
        let take = room.min(bytes.len());
        self.kept.extend_from_slice(&bytes[..take]);
        self.dropped_bytes += (bytes.len() - take) as u64;
        self.decision.append(bytes);
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

    /// Starts a decision's log afresh (what an earlier decision left untaken is
    /// forgotten). Keeps the buffers' capacity: no allocation per decision.
    pub(crate) fn start_decision(&mut self) {
        self.decision.clear();
    }

    /// The lines written since [`BotLog::start_decision`], and whether any were
    /// dropped or cut; the decision log is then empty.
    pub(crate) fn take_decision(&mut self) -> (Vec<String>, bool) {
        self.decision.take()
    }
}

/// The bounds of one decision's log (see [`crate::limits`]).
#[derive(Clone, Copy, Debug)]
pub(crate) struct LogBounds {
    pub(crate) bytes: usize,
    pub(crate) lines: usize,
    pub(crate) line_bytes: usize,
}

/// One decision's output as lines, bounded as it is written: each line keeps its
/// first `line_bytes`, and at most `lines` lines and `bytes` bytes are kept
/// (line ends not counted). Bytes are stored without their `\n`s, lines by
/// where they end.
#[derive(Debug)]
struct DecisionLines {
    bounds: LogBounds,
    bytes: Vec<u8>,
    /// Ends (in `bytes`) of the finished lines, and whether each was cut.
    ends: Vec<(usize, bool)>,
    /// Where the open line starts in `bytes`, and whether it was cut.
    open_start: usize,
    open_cut: bool,
    /// Something was dropped: bytes of a line, whole lines, or past the bound.
    truncated: bool,
}

impl DecisionLines {
    fn new(bounds: LogBounds) -> DecisionLines {
        DecisionLines {
            bounds,
            bytes: Vec::new(),
            ends: Vec::new(),
            open_start: 0,
            open_cut: false,
            truncated: false,
        }
    }

    fn clear(&mut self) {
        self.bytes.clear();
        self.ends.clear();
        self.open_start = 0;
        self.open_cut = false;
        self.truncated = false;
    }

    fn append(&mut self, mut bytes: &[u8]) {
        while !bytes.is_empty() {
            let (segment, ended, rest) = match bytes.iter().position(|&b| b == b'\n') {
                Some(at) => (&bytes[..at], true, &bytes[at + 1..]),
                None => (bytes, false, &[][..]),
            };
            self.append_to_open_line(segment);
            if ended {
                self.end_line();
            }
            bytes = rest;
        }
    }

    fn append_to_open_line(&mut self, segment: &[u8]) {
        if segment.is_empty() {
            return;
        }
        if self.ends.len() >= self.bounds.lines {
            self.truncated = true;
            return;
        }
        let line_room = self
            .bounds
            .line_bytes
            .saturating_sub(self.bytes.len() - self.open_start);
        let total_room = self.bounds.bytes.saturating_sub(self.bytes.len());
        let take = segment.len().min(line_room).min(total_room);
        self.bytes.extend_from_slice(&segment[..take]);
        if take < segment.len() {
            if line_room < total_room {
                self.open_cut = true;
            } else {
                self.truncated = true;
            }
        }
    }

    fn end_line(&mut self) {
        let full = self.bytes.len() >= self.bounds.bytes && self.open_start == self.bytes.len();
        if self.ends.len() >= self.bounds.lines || full {
            self.truncated = true;
            return;
        }
        self.ends.push((self.bytes.len(), self.open_cut));
        self.open_start = self.bytes.len();
        self.open_cut = false;
    }

    /// The lines kept (an unfinished last line too), cut ones ending in `…`.
    fn take(&mut self) -> (Vec<String>, bool) {
        let open = self.bytes.len() > self.open_start || self.open_cut;
        if self.ends.is_empty() && !open {
            let truncated = self.truncated;
            self.clear();
            return (Vec::new(), truncated);
        }
        let mut lines = Vec::with_capacity(self.ends.len() + usize::from(open));
        let mut start = 0;
        let mut truncated = self.truncated;
        let open_end = (self.bytes.len(), self.open_cut);
        let ends = self.ends.iter().copied();
        for (end, cut) in ends.chain(open.then_some(open_end)) {
            lines.push(line_text(
                &self.bytes[start..end],
                cut,
                self.bounds.line_bytes,
            ));
            truncated |= cut;
            start = end;
        }
        self.clear();
        (lines, truncated)
    }
}

/// A kept line as text: invalid UTF-8 replaced; a cut line shortened on a
/// character boundary so that it ends in `…` within `line_bytes`.
fn line_text(bytes: &[u8], cut: bool, line_bytes: usize) -> String {
    const MARK: char = '…';
    let text = String::from_utf8_lossy(bytes);
    let text = text.strip_suffix('\r').unwrap_or(&text);
    if !cut {
        return text.to_owned();
    }
    let mut end = line_bytes.saturating_sub(MARK.len_utf8()).min(text.len());
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    let mut line = String::with_capacity(end + MARK.len_utf8());
    line.push_str(&text[..end]);
    line.push(MARK);
    line
}

pub(crate) type SharedLog = Arc<Mutex<BotLog>>;

pub(crate) fn append_log(log: &SharedLog, bytes: &[u8]) {
    lock_log(log).append(bytes);
}

/// The log, locked. A poisoned lock only means another writer panicked
/// mid-append; the bytes kept so far are still valid, so keep going rather than
/// propagate the panic.
pub(crate) fn lock_log(log: &SharedLog) -> std::sync::MutexGuard<'_, BotLog> {
    log.lock().unwrap_or_else(|poison| poison.into_inner())
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
        let mut log = BotLog::new(5, BOUNDS);
        log.append(b"abc");
        log.append(b"defg");
        log.append(b"h");
        assert_eq!(log.text(), "abcde");
        assert_eq!(log.dropped_bytes(), 3);
    }

    const BOUNDS: LogBounds = LogBounds {
        bytes: 40,
        lines: 3,
        line_bytes: 10,
    };

    fn decision(writes: &[&[u8]]) -> (Vec<String>, bool) {
        let mut log = BotLog::new(1 << 20, BOUNDS);
        log.start_decision();
        for bytes in writes {
            log.append(bytes);
        }
        log.take_decision()
    }

    #[test]
    fn a_decision_log_is_its_lines_whatever_the_writes() {
        assert_eq!(decision(&[]), (vec![], false));
        assert_eq!(
            decision(&[b"one\ntw", b"o\n", b"three"]),
            (vec!["one".into(), "two".into(), "three".into()], false)
        );
        assert_eq!(
            decision(&[b"crlf\r\n", b"\n"]),
            (vec!["crlf".into(), String::new()], false)
        );
    }

    #[test]
    fn a_decision_log_is_bounded_and_says_so() {
        // A line over 10 bytes is cut to 7 + "…"; more than 3 lines are dropped.
        assert_eq!(
            decision(&[b"0123456789abc\nok\n"]),
            (vec!["0123456…".into(), "ok".into()], true)
        );
        assert_eq!(
            decision(&[b"a\nb\nc\nd\n"]),
            (vec!["a".into(), "b".into(), "c".into()], true)
        );
        // "a\nb\nc\n" then nothing more: not truncated.
        assert_eq!(
            decision(&[b"a\nb\nc\n"]),
            (vec!["a".into(), "b".into(), "c".into()], false)
        );
        // Cut on a character boundary: "ééééé" is 10 bytes, "éééééé" 12.
        let (lines, cut) = decision(&["éééééé".as_bytes()]);
        assert_eq!((lines, cut), (vec!["ééé…".into()], true));
        // The byte bound: 40 bytes over 3 lines of 10 is not reached; with a
        // small byte bound it is.
        let mut log = BotLog::new(1 << 20, LogBounds { bytes: 5, ..BOUNDS });
        log.append(b"abc\ndefg\n");
        assert_eq!(log.take_decision(), (vec!["abc".into(), "de".into()], true));
    }

    #[test]
    fn taking_empties_the_decision_log_and_starting_forgets_it() {
        let mut log = BotLog::new(1 << 20, BOUNDS);
        log.append(b"first\n");
        assert_eq!(log.take_decision(), (vec!["first".into()], false));
        assert_eq!(log.take_decision(), (vec![], false));
        log.append(b"left over\n");
        log.start_decision();
        log.append(b"second\n");
        assert_eq!(log.take_decision(), (vec!["second".into()], false));
        assert_eq!(log.text(), "first\nleft over\nsecond\n");
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

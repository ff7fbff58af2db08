//! What counting a prompt costs the referee, for the inputs a bot can send
//! at the prompt bound (`MAX_PROMPT_BYTES`, 512 KiB): English, code-like
//! punctuation, CJK, random scripts, and the shapes that broke tiktoken-rs
//! (runs of one letter, of spaces, of newlines, of one punctuation mark).
//! Each input is counted by the referee's counter (`duel_referee::tokens`)
//! and, side by side, by tiktoken-rs (the counter before bpe-openai) where it
//! finishes; the time of a count and the memory it takes (each input
//! counted in a fresh process: its peak RSS above the tables' own).
//!
//! cargo bench -p duel-referee --bench counting [-- RUNS]
//!
//! Prints one table (docs/perf/grpc.md, "Adversarial prompts").

#![allow(clippy::unwrap_used, missing_debug_implementations)]

use std::time::{Duration, Instant};

use duel_referee::limits::MAX_PROMPT_BYTES;

#[global_allocator]
static GLOBAL: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

/// A text of `bytes` bytes (at most) from `unit` repeated.
fn repeated(unit: &str, bytes: usize) -> String {
    unit.repeat(bytes / unit.len())
}

/// A deterministic pseudo-random text of `bytes` bytes drawn from `chars`.
fn drawn(chars: &[char], bytes: usize) -> String {
    let mut state = 0x2545_f491_4f6c_dd1d_u64;
    let mut text = String::with_capacity(bytes + 4);
    while text.len() + 4 <= bytes {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        text.push(chars[(state % chars.len() as u64) as usize]);
    }
    text
}

/// Every code point of several scripts (and some that are not letters).
fn scripts() -> Vec<char> {
    (0x20..0x30000u32)
        .step_by(7)
        .filter_map(char::from_u32)
        .filter(|c| !c.is_control())
        .collect()
}

fn inputs() -> Vec<(&'static str, String)> {
    let bytes = MAX_PROMPT_BYTES;
    let english = repeated(
        "The fighter who reads the tape wins: a BLOCK invites a FEINT, a FEINT \
         invites a JAB, and stamina decides the last exchanges of a round. ",
        bytes,
    );
    let lower: Vec<char> = ('a'..='z').collect();
    let punctuation: Vec<char> = "!@#$%^&*()-=+[]{};:,.<>/?|~".chars().collect();
    let cjk: Vec<char> = (0x4E00..0x9FA5u32).filter_map(char::from_u32).collect();
    vec![
        ("English", english),
        ("random lowercase (one piece)", drawn(&lower, bytes)),
        ("random punctuation", drawn(&punctuation, bytes)),
        ("random CJK (one piece)", drawn(&cjk, bytes)),
        ("random scripts", drawn(&scripts(), bytes)),
        ("one letter", repeated("a", bytes)),
        ("spaces", repeated(" ", bytes)),
        ("newlines", repeated("\n", bytes)),
        ("dashes", repeated("-", bytes)),
    ]
}

/// Peak RSS of this process, in KiB.
fn peak_rss_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .unwrap()
        .lines()
        .find_map(|line| line.strip_prefix("VmHWM:"))
        .and_then(|value| value.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0)
}

/// In a child: counts input `index` once with `counter` and prints its
/// peak RSS above the tables' own, in KiB.
fn child(index: usize, counter: &str) {
    let (_, text) = inputs().swap_remove(index);
    let sample = "warm";
    let before = if counter == "ours" {
        duel_referee::tokens::count(sample);
        peak_rss_kib()
    } else {
        tiktoken_rs::o200k_base_singleton().encode_ordinary(sample);
        peak_rss_kib()
    };
    let before = before + (text.len() as u64).div_ceil(1024);
    let started = Instant::now();
    let tokens = if counter == "ours" {
        duel_referee::tokens::count(&text)
    } else {
        tiktoken_rs::o200k_base_singleton()
            .encode_ordinary(&text)
            .len() as u64
    };
    let elapsed_us = started.elapsed().as_micros();
    println!(
        "{tokens} {} {elapsed_us}",
        peak_rss_kib().saturating_sub(before)
    );
}

/// Runs [`child`] in a fresh process: its tokens, memory (MB) and time
/// (ms), or `None` when it died (tiktoken-rs's stack overflow).
fn in_child(program: &str, index: usize, counter: &str) -> Option<(u64, f64, f64)> {
    let output = std::process::Command::new(program)
        .args(["--child", &index.to_string(), counter])
        .output()
        .unwrap();
    if !output.status.success() {
        return None;
    }
    let text = String::from_utf8_lossy(&output.stdout);
    let fields: Vec<f64> = text
        .split_whitespace()
        .filter_map(|field| field.parse().ok())
        .collect();
    Some((fields[0] as u64, fields[1] * 1024.0 / 1e6, fields[2] / 1e3))
}

fn median(mut times: Vec<Duration>) -> Duration {
    times.sort();
    times[times.len() / 2]
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if let (Some("--child"), Some(index), Some(counter)) = (
        args.get(1).map(String::as_str),
        args.get(2).and_then(|index| index.parse().ok()),
        args.get(3),
    ) {
        child(index, counter);
        return;
    }
    let runs: usize = args
        .iter()
        .skip(1)
        .find_map(|arg| arg.parse().ok())
        .unwrap_or(9);
    duel_referee::tokens::warm_up();
    tiktoken_rs::o200k_base_singleton();
    println!(
        "| input ({} KiB) | tokens | ours: time median (min–max) | ours: memory | tiktoken-rs: time (tokens) | tiktoken-rs: memory |",
        MAX_PROMPT_BYTES / 1024
    );
    println!("|---|---|---|---|---|---|");
    for (index, (name, text)) in inputs().into_iter().enumerate() {
        let mut times = Vec::with_capacity(runs);
        let mut tokens = 0;
        for _ in 0..runs {
            // Wall time of a count on this one thread: its CPU time when
            // nothing else runs (the thread CPU clocks the standard library
            // reads tick at 4 ms); the minimum is the closest.
            let started = Instant::now();
            tokens = duel_referee::tokens::count(std::hint::black_box(&text));
            times.push(started.elapsed());
        }
        let (min, max) = (
            times.iter().min().copied().unwrap_or_default(),
            times.iter().max().copied().unwrap_or_default(),
        );
        let ours = in_child(&args[0], index, "ours");
        let reference = in_child(&args[0], index, "tiktoken");
        let memory = |measured: Option<(u64, f64, f64)>| {
            measured.map_or("died".to_owned(), |(_, mb, _)| format!("{mb:.1} MB"))
        };
        let reference_time = reference.map_or(
            "died (stack overflow)".to_owned(),
            |(reference_tokens, _, ms)| {
                let same = if reference_tokens == tokens {
                    ""
                } else {
                    ", other count"
                };
                format!("{ms:.1} ms ({reference_tokens} tokens{same})")
            },
        );
        println!(
            "| {name} | {tokens} | {:.1} ms ({:.1}–{:.1}) | {} | {reference_time} | {} |",
            median(times).as_secs_f64() * 1e3,
            min.as_secs_f64() * 1e3,
            max.as_secs_f64() * 1e3,
            memory(ours),
            memory(reference),
        );
    }
}

//! The tape a person reads: a header, one line per exchange, a line per round
//! result, the match result and a per-fighter summary. Colour only when asked.

use std::fmt::Write as _;

use anstyle::{AnsiColor, Style};
use duel_referee::ModelCall;
use duel_referee::arena::tournament::{latency_text, percentile};
use duel_replays::{
    CallOutcome, CallRecord, ExchangeRecord, FighterInfo, MatchResultRecord, Replay, RoundEndName,
    RoundResultRecord, SideRecord, SourceName, WinnerName,
};
use duel_rules::{Ruleset, Side};

/// Styles for the tape; all plain when colour is off.
#[derive(Clone, Copy, Debug)]
pub struct Palette {
    enabled: bool,
}

const SIDE_A: Style = AnsiColor::Cyan.on_default();
const SIDE_B: Style = AnsiColor::Magenta.on_default();
const DAMAGE: Style = AnsiColor::Red.on_default();
const WARNING: Style = AnsiColor::Yellow.on_default();
const DIM: Style = Style::new().dimmed();
const STRONG: Style = Style::new().bold();
const WIN: Style = AnsiColor::Green.on_default().bold();

impl Palette {
    pub fn new(enabled: bool) -> Palette {
        Palette { enabled }
    }

    fn paint(&self, style: Style, text: &str) -> String {
        if self.enabled {
            format!("{}{text}{}", style.render(), style.render_reset())
        } else {
            text.to_owned()
        }
    }

    fn side(&self, side: Side, text: &str) -> String {
        self.paint(if side == Side::A { SIDE_A } else { SIDE_B }, text)
    }
}

/// HP bar width in cells; each cell is 16 HP at the start of a round.
const BAR_CELLS: i32 = 10;
const BAR_EIGHTHS: [&str; 8] = ["", "▏", "▎", "▍", "▌", "▋", "▊", "▉"];
/// Width of an action cell: "HEAVY exhausted → 18". A substitution's reason
/// widens its cell; the next column then starts later on that line only.
const ACTION_CELL: usize = 22;
/// Characters of a substitution's reason shown on the tape, `…` included: the
/// cause at a glance (the replay keeps up to `MAX_REASON_BYTES`).
const TAPE_REASON_CHARS: usize = 48;

fn hp_bar(hp: i32, start_hp: i32) -> String {
    let eighths = (hp.clamp(0, start_hp) * BAR_CELLS * 8 + start_hp - 1) / start_hp;
    let full = (eighths / 8) as usize;
    let mut bar = "█".repeat(full);
    bar.push_str(BAR_EIGHTHS[(eighths % 8) as usize]);
    let drawn = full + usize::from(eighths % 8 != 0);
    bar.push_str(&" ".repeat(BAR_CELLS as usize - drawn));
    bar
}

fn group_thousands(value: u64) -> String {
    let digits = value.to_string();
    let mut grouped = String::new();
    for (position, digit) in digits.chars().enumerate() {
        if position > 0 && (digits.len() - position).is_multiple_of(3) {
            grouped.push(',');
        }
        grouped.push(digit);
    }
    grouped
}

pub use duel_referee::terminal::{is_hidden, safe};

/// The tape's opening lines.
pub fn header(palette: Palette, replay_head: &ReplayHead<'_>) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{} · ruleset {} · {} class ({} tokens each) · seed {}",
        palette.paint(STRONG, "duel"),
        safe(replay_head.ruleset),
        duel_rules::WeightClass::from(replay_head.class).name(),
        group_thousands(replay_head.budget),
        replay_head.seed,
    );
    let _ = writeln!(
        out,
        "{}",
        palette.paint(
            DIM,
            &format!(
                "match {} · accepted {}",
                safe(replay_head.match_id),
                safe(replay_head.accepted_at)
            )
        )
    );
    for side in Side::BOTH {
        let fighter = &replay_head.fighters[side.index()];
        let label = if side == Side::A { "A" } else { "B" };
        let _ = writeln!(
            out,
            "  {}  {}  {}",
            palette.side(side, label),
            palette.paint(STRONG, &safe(&fighter.name)),
            palette.paint(
                DIM,
                &format!(
                    "{} · {}",
                    kind_name(fighter.kind),
                    short_digest(&safe(&fighter.digest))
                )
            ),
        );
    }
    if !replay_head.opening.is_empty() {
        let moves: Vec<String> = replay_head
            .opening
            .iter()
            .map(|[a, b]| {
                format!(
                    "{}:{}",
                    duel_rules::Action::from(*a).name(),
                    duel_rules::Action::from(*b).name()
                )
            })
            .collect();
        let _ = writeln!(
            out,
            "{}",
            palette.paint(
                DIM,
                &format!(
                    "  opening  {} (the first {} exchanges, forced for both)",
                    moves.join(" "),
                    moves.len()
                )
            )
        );
    }
    out
}

fn kind_name(kind: duel_replays::FighterKind) -> &'static str {
    match kind {
        duel_replays::FighterKind::Wasm => "wasm",
        duel_replays::FighterKind::Endpoint => "endpoint",
        duel_replays::FighterKind::Builtin => "builtin",
    }
}

/// `sha256:` and the first 12 hex digits: enough to tell bots apart at a glance.
fn short_digest(digest: &str) -> String {
    match digest.char_indices().nth(19) {
        Some((end, _)) => format!("{}…", &digest[..end]),
        None => digest.to_owned(),
    }
}

/// The header fields, borrowed from a replay or from a match being played.
#[derive(Debug)]
pub struct ReplayHead<'a> {
    pub ruleset: &'a str,
    pub match_id: &'a str,
    pub accepted_at: &'a str,
    pub class: duel_replays::ClassName,
    pub budget: u64,
    pub seed: u64,
    pub fighters: &'a [FighterInfo; 2],
    /// The exchanges forced at the start (a tournament's or an SPRT run's).
    pub opening: &'a [[duel_replays::ActionName; 2]],
}

impl<'a> ReplayHead<'a> {
    pub fn of(replay: &'a Replay) -> ReplayHead<'a> {
        ReplayHead {
            ruleset: &replay.ruleset,
            match_id: &replay.match_id,
            accepted_at: &replay.accepted_at,
            class: replay.class,
            budget: replay.budget,
            seed: replay.seed,
            fighters: &replay.fighters,
            opening: &replay.opening,
        }
    }
}

pub fn round_heading(palette: Palette, round: u8) -> String {
    format!(
        "\n{}\n{}\n",
        palette.paint(STRONG, &format!("Round {round}")),
        palette.paint(
            DIM,
            &format!(
                "  #  {:<w$}{:<w$}  A{:>34}  B",
                "A",
                "B",
                "",
                w = ACTION_CELL
            )
        )
    )
}

fn action_cell(palette: Palette, side: Side, mine: &SideRecord, dealt: i32) -> String {
    let action = duel_rules::Action::from(mine.action).name();
    let mut plain_len = action.len();
    let mut cell = palette.side(side, action);
    if mine.exhausted {
        cell.push_str(&palette.paint(WARNING, " exhausted"));
        plain_len += " exhausted".len();
    }
    if mine.source != SourceName::Bot {
        let source = duel_rules::Source::from(mine.source).name();
        let cause = match mine.reason().map(one_line).filter(|r| !r.is_empty()) {
            Some(reason) => format!(" ({source}: {reason})"),
            None => format!(" ({source})"),
        };
        plain_len += cause.chars().count();
        cell.push_str(&palette.paint(WARNING, &cause));
    }
    if mine.restarted {
        // Started afresh after an earlier failure: the bot's memory is gone (the
        // summary spells it out; one glyph keeps the widest cell in its column).
        const RESTARTED: &str = " ↺";
        plain_len += RESTARTED.chars().count();
        cell.push_str(&palette.paint(WARNING, RESTARTED));
    }
    if dealt > 0 {
        let hit = format!(" → {dealt}");
        plain_len += hit.chars().count();
        cell.push_str(&palette.paint(DAMAGE, &hit));
    }
    cell.push_str(&" ".repeat(ACTION_CELL.saturating_sub(plain_len)));
    cell
}

/// `text` on one line (control and bidirectional characters as spaces, runs
/// of blanks as one),
/// at most [`TAPE_REASON_CHARS`] characters, ending in `…` when cut.
fn one_line(text: &str) -> String {
    let spaced: String = text
        .chars()
        .map(|c| if is_hidden(c) { ' ' } else { c })
        .collect();
    let words: Vec<&str> = spaced.split_whitespace().collect();
    let line = words.join(" ");
    if line.chars().count() <= TAPE_REASON_CHARS {
        return line;
    }
    let mut cut: String = line.chars().take(TAPE_REASON_CHARS - 1).collect();
    cut.truncate(cut.trim_end().len());
    cut.push('…');
    cut
}

fn status_cell(palette: Palette, start_hp: i32, side_record: &SideRecord) -> String {
    let staggered = if side_record.staggered {
        palette.paint(WARNING, " staggered")
    } else {
        " ".repeat(10)
    };
    format!(
        "{} {:>4} hp {:>3} st{staggered}",
        hp_bar(side_record.hp, start_hp),
        side_record.hp,
        side_record.stamina,
    )
}

/// One line per exchange: both actions (with exhaustion, substitution and damage
/// dealt), then each fighter's HP bar, HP and stamina after it.
pub fn exchange_line(palette: Palette, ruleset: Ruleset, exchange: &ExchangeRecord) -> String {
    let start_hp = ruleset.start_hp();
    let line = format!(
        "{:>3}  {}{}  {}  {}",
        exchange.number,
        action_cell(palette, Side::A, &exchange.a, exchange.b.damage_taken),
        action_cell(palette, Side::B, &exchange.b, exchange.a.damage_taken),
        status_cell(palette, start_hp, &exchange.a),
        status_cell(palette, start_hp, &exchange.b),
    );
    format!("{}\n", line.trim_end())
}

fn side_of(winner: WinnerName) -> Option<Side> {
    duel_rules::Winner::from(winner).side()
}

fn fighter_label(palette: Palette, side: Side) -> String {
    palette.side(side, if side == Side::A { "A" } else { "B" })
}

/// "Round 1 to A by knockout (exchange 6)", judged and drawn variants.
pub fn round_result_line(
    palette: Palette,
    round: u8,
    result: &RoundResultRecord,
    last: Option<&ExchangeRecord>,
) -> String {
    let after = last.map(|exchange| exchange.number).unwrap_or(0);
    let score = |pick: fn(&SideRecord) -> i32| {
        last.map(|exchange| format!(" {}–{}", pick(&exchange.a), pick(&exchange.b)))
            .unwrap_or_default()
    };
    let how = match (side_of(result.winner), result.by) {
        (None, RoundEndName::Ko) => format!("drawn: both knocked out on exchange {after}"),
        (None, _) => "drawn on the judges' cards (HP, stamina and damage level)".to_owned(),
        (Some(side), by) => {
            let reason = match by {
                RoundEndName::Ko => format!("by knockout on exchange {after}"),
                RoundEndName::Hp => format!("on HP{}", score(|side| side.hp)),
                RoundEndName::Stamina => format!("on stamina{}", score(|side| side.stamina)),
                RoundEndName::Damage => "on damage dealt".to_owned(),
                RoundEndName::Draw => "on the cards".to_owned(),
            };
            format!("{} {reason}", fighter_label(palette, side))
        }
    };
    format!(
        "  {} {how}\n",
        palette.paint(STRONG, &format!("Round {round} →"))
    )
}

pub fn match_result_line(
    palette: Palette,
    fighters: &[FighterInfo; 2],
    result: &MatchResultRecord,
) -> String {
    let [wins_a, wins_b] = result.round_wins;
    let [damage_a, damage_b] = result.damage;
    let detail = format!(
        "rounds {wins_a}–{wins_b} · damage {damage_a}–{damage_b} · tokens {}–{}",
        group_thousands(result.tokens_used[0]),
        group_thousands(result.tokens_used[1])
    );
    let verdict = match side_of(result.winner) {
        Some(side) => {
            let on = if wins_a == wins_b {
                "on total damage"
            } else {
                "on rounds"
            };
            palette.paint(
                WIN,
                &format!("{} wins {on}", safe(&fighters[side.index()].name)),
            ) + &format!(" ({})", fighter_label(palette, side))
        }
        None => palette.paint(WIN, "Drawn match: stakes returned in full"),
    };
    format!("\n{verdict}\n  {detail}\n")
}

/// A fighter's tokens: the recorded total, checked against the sum of its
/// exchanges (in checked arithmetic, so a hostile replay cannot wrap the sum
/// back onto a small recorded total). A mismatch is shown, not hidden.
fn tokens_cell(palette: Palette, recorded: u64, records: &[&SideRecord]) -> String {
    let summed = records
        .iter()
        .try_fold(0u64, |total, record| total.checked_add(record.tokens));
    match summed {
        Some(summed) if summed == recorded => group_thousands(recorded),
        Some(summed) => format!(
            "{} {}",
            group_thousands(recorded),
            palette.paint(
                WARNING,
                &format!(
                    "(but its exchanges sum to {}: this replay does not verify)",
                    group_thousands(summed)
                )
            )
        ),
        None => format!(
            "{} {}",
            group_thousands(recorded),
            palette.paint(
                WARNING,
                &format!(
                    "(but its exchanges sum past {}: this replay does not verify)",
                    group_thousands(u64::MAX)
                )
            )
        ),
    }
}

/// Per fighter: substitutions by cause, tokens, and decision latency p50/p99.
pub fn summary(palette: Palette, replay: &Replay) -> String {
    let mut out = String::new();
    for side in Side::BOTH {
        let records: Vec<&SideRecord> = replay
            .exchanges()
            .map(|(_, exchange)| exchange.sides()[side.index()])
            .collect();
        let count = |source: SourceName| {
            records
                .iter()
                .filter(|record| record.source == source)
                .count()
        };
        let asked: Vec<_> = records
            .iter()
            .filter(|record| {
                matches!(
                    record.source,
                    SourceName::Bot | SourceName::Timeout | SourceName::Fault
                )
            })
            .collect();
        let mut latencies: Vec<u64> = asked.iter().map(|record| record.latency_micros()).collect();
        latencies.sort_unstable();
        // Replays without microseconds (older ones, the clockless runner) say
        // whole milliseconds, as they were measured.
        let timed = asked.iter().all(|record| record.latency_us.is_some());
        let latency = |micros: u64| {
            if timed {
                latency_text(micros)
            } else {
                format!("{} ms", micros / 1_000)
            }
        };
        let restarts = records.iter().filter(|record| record.restarted).count();
        let restarts = match restarts {
            0 => String::new(),
            1 => " · ↺ restarted once (memory of the match lost)".to_owned(),
            n => format!(" · ↺ restarted {n} times (memory of the match lost)"),
        };
        let _ = writeln!(
            out,
            "  {}  {} decisions · substituted: {} timeout, {} budget, {} fault{restarts} · tokens {} · latency p50 {}, p99 {}",
            fighter_label(palette, side),
            records.len(),
            count(SourceName::Timeout),
            count(SourceName::Budget),
            count(SourceName::Fault),
            tokens_cell(palette, replay.result.tokens_used[side.index()], &records),
            latency(percentile(&latencies, 50)),
            latency(percentile(&latencies, 99)),
        );
        let uses = replay.model_spend(side);
        if !uses.is_empty() {
            let parts: Vec<String> = uses
                .iter()
                .map(|one| {
                    let cost = one
                        .cost_usd
                        .map(dollars)
                        .unwrap_or_else(|| "no price".to_owned());
                    format!(
                        "{} {} call{} {} tokens {cost}",
                        one_line(&one.model),
                        one.calls,
                        if one.calls == 1 { "" } else { "s" },
                        group_thousands(one.tokens)
                    )
                })
                .collect();
            let total = uses
                .iter()
                .try_fold(0.0, |total, one| Some(total + one.cost_usd?));
            let total = match total {
                Some(total) => format!(" · cost {}", dollars(total)),
                None => String::new(),
            };
            let _ = writeln!(
                out,
                "     {} {}{total}",
                palette.paint(DIM, "models:"),
                parts.join(" · ")
            );
        }
    }
    out
}

/// Both fighters' log lines of one exchange, A's first, each under a side
/// label; a truncated log ends in a line that says so. Empty when neither
/// logged. Control and bidirectional characters (a hostile replay's escapes,
/// a bot's U+202E) print as spaces.
pub fn exchange_logs(palette: Palette, exchange: &ExchangeRecord) -> String {
    let mut out = String::new();
    for side in Side::BOTH {
        let record = exchange.sides()[side.index()];
        let label = fighter_label(palette, side);
        let bar = palette.paint(DIM, "│");
        for line in record.log() {
            let clean: String = line
                .chars()
                .map(|c| if is_hidden(c) { ' ' } else { c })
                .collect();
            let _ = writeln!(out, "       {label} {bar} {}", clean.trim_end());
        }
        if record.log_truncated {
            let mark = palette.paint(
                WARNING,
                "… log truncated (lines cut or dropped at the bounds)",
            );
            let _ = writeln!(out, "       {label} {bar} {mark}");
        }
    }
    out
}

/// One model call as the tape shows it: what the replay records, and, for a
/// match played here, why it gave nothing and what the model answered.
#[derive(Clone, Copy, Debug)]
pub struct CallView<'a> {
    pub model: &'a str,
    pub prompt_tokens: u64,
    pub completion_tokens: u64,
    pub outcome: CallOutcome,
    pub note: Option<&'a str>,
    pub answer: Option<&'a str>,
}

impl<'a> CallView<'a> {
    pub fn recorded(call: &'a CallRecord) -> CallView<'a> {
        CallView {
            model: &call.model,
            prompt_tokens: call.prompt_tokens,
            completion_tokens: call.completion_tokens,
            outcome: call.outcome,
            note: None,
            answer: None,
        }
    }

    pub fn live(call: &'a ModelCall) -> CallView<'a> {
        CallView {
            model: &call.model,
            prompt_tokens: call.prompt_tokens,
            completion_tokens: call.completion_tokens,
            outcome: call.outcome,
            note: call.note.as_deref(),
            answer: call
                .text
                .as_ref()
                .map(|text| text.completion.as_str())
                .filter(|_| call.outcome == CallOutcome::Ok),
        }
    }
}

/// Words of a model's answer shown on the tape.
const TAPE_ANSWER_WORDS: usize = 8;

/// The model calls of one exchange, per fighter `calls[side]`: a refused
/// call is never silent (`model: unavailable (upstream 404)`, once per cause
/// and fighter); with `each`, one line per call (model, tokens, the first
/// words of the answer).
pub fn exchange_calls(palette: Palette, calls: [&[CallView<'_>]; 2], each: bool) -> String {
    let mut out = String::new();
    for side in Side::BOTH {
        let label = fighter_label(palette, side);
        let bar = palette.paint(DIM, "│");
        if each {
            for call in calls[side.index()] {
                let mut line = format!(
                    "model {} · {}+{} tokens",
                    one_line(call.model),
                    group_thousands(call.prompt_tokens),
                    group_thousands(call.completion_tokens)
                );
                if call.outcome != CallOutcome::Ok {
                    line.push_str(&format!(" · {}", call.outcome));
                }
                let line = palette.paint(DIM, &line);
                let answer = match call.answer {
                    Some(answer) => {
                        let words: Vec<&str> = answer.split_whitespace().collect();
                        let mut shown = one_line(
                            &words
                                .iter()
                                .take(TAPE_ANSWER_WORDS)
                                .copied()
                                .collect::<Vec<_>>()
                                .join(" "),
                        );
                        if words.len() > TAPE_ANSWER_WORDS && !shown.ends_with('…') {
                            shown.push('…');
                        }
                        format!(" “{shown}”")
                    }
                    None => String::new(),
                };
                let _ = writeln!(out, "       {label} {bar} {line}{answer}");
            }
        }
        let mut said: Vec<String> = Vec::new();
        for call in calls[side.index()] {
            if call.outcome == CallOutcome::Ok || call.outcome == CallOutcome::Cut {
                continue;
            }
            let mark = match call.note.map(one_line).filter(|note| !note.is_empty()) {
                Some(note) => format!("model: {} ({note})", call.outcome),
                None => format!("model: {}", call.outcome),
            };
            if !said.contains(&mark) {
                let _ = writeln!(
                    out,
                    "       {label} {bar} {}",
                    palette.paint(WARNING, &mark)
                );
                said.push(mark);
            }
        }
    }
    out
}

/// Dollars for people: four significant decimals under a cent.
pub fn dollars(amount: f64) -> String {
    if !amount.is_finite() || amount <= 0.0 {
        return "$0".to_owned();
    }
    if amount >= 0.01 {
        return format!("${amount:.4}");
    }
    // Two significant digits of a small amount: $0.0000012.
    let decimals = ((-amount.log10()).ceil() as usize + 1).min(12);
    let text = format!("{amount:.decimals$}");
    format!("${}", text.trim_end_matches('0').trim_end_matches('.'))
}

/// A whole replay as the tape; with `logs`, each exchange's log lines under it.
/// The line under a fork's header: its parent and where it leaves it.
pub fn fork_line(fork: &duel_replays::ForkRecord) -> String {
    format!(
        "fork of match {} at {}: the exchanges before it are the parent's\n",
        safe(&fork.parent_match_id),
        fork.at
    )
}

/// The line at a fork's fork point, before the first exchange played anew.
pub fn fork_point_line(fork: &duel_replays::ForkRecord, fighters: &[FighterInfo; 2]) -> String {
    let swapped: Vec<String> = Side::BOTH
        .into_iter()
        .filter(|side| fork.swapped(*side))
        .map(|side| format!("{} is {}", side.name(), safe(&fighters[side.index()].name)))
        .collect();
    let from_here = match swapped.is_empty() {
        true => "the same bots are asked again".to_owned(),
        false => swapped.join(", "),
    };
    format!("── fork point {}: from here {from_here} ──\n", fork.at)
}

pub fn replay(palette: Palette, replay: &Replay, logs: bool) -> String {
    let ruleset = replay.ruleset().unwrap_or(Ruleset::CURRENT);
    let mut out = header(palette, &ReplayHead::of(replay));
    if let Some(fork) = &replay.fork {
        out.push_str(&fork_line(fork));
    }
    for round in &replay.rounds {
        out.push_str(&round_heading(palette, round.number));
        for exchange in &round.exchanges {
            if let Some(fork) = &replay.fork
                && (round.number, exchange.number) == (fork.at.round, fork.at.exchange)
                && fork.at != duel_replays::ForkPoint::START
            {
                out.push_str(&fork_point_line(fork, &replay.fighters));
            }
            out.push_str(&exchange_line(palette, ruleset, exchange));
            let views = exchange.sides().map(|side| {
                side.calls()
                    .iter()
                    .map(CallView::recorded)
                    .collect::<Vec<_>>()
            });
            out.push_str(&exchange_calls(palette, [&views[0], &views[1]], logs));
            if logs {
                out.push_str(&exchange_logs(palette, exchange));
            }
        }
        out.push_str(&round_result_line(
            palette,
            round.number,
            &round.result,
            round.exchanges.last(),
        ));
    }
    out.push_str(&match_result_line(
        palette,
        &replay.fighters,
        &replay.result,
    ));
    out.push_str(&summary(palette, replay));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bars_and_numbers() {
        assert_eq!(hp_bar(160, 160), "██████████");
        assert_eq!(hp_bar(0, 160), "          ");
        assert_eq!(hp_bar(-7, 160), "          ");
        assert_eq!(hp_bar(8, 160), "▌         ");
        assert_eq!(group_thousands(512000), "512,000");
        assert_eq!(group_thousands(7), "7");
    }

    #[test]
    fn dollars_read_well_small_and_large() {
        assert_eq!(dollars(0.0), "$0");
        assert_eq!(dollars(1.234_56), "$1.2346");
        assert_eq!(dollars(0.000_000_12), "$0.00000012");
        assert_eq!(dollars(0.004_5), "$0.0045");
    }

    #[test]
    fn a_reason_is_one_short_line() {
        assert_eq!(one_line("connection refused"), "connection refused");
        assert_eq!(one_line("two\nlines\t here"), "two lines here");
        let long = one_line(&"index out of bounds ".repeat(5));
        assert!(long.chars().count() <= TAPE_REASON_CHARS, "{long}");
        assert!(long.starts_with("index out of bounds index") && long.ends_with('…'));
    }
}

//! The site's HTML: one maud template per page over the same data its JSON
//! twin returns. maud checks templates at compile time and escapes every
//! interpolated value.
//!
//! No inline script or style (the site's CSP forbids both): the stylesheet is
//! `/site/site.css`, and the only script is Duel TV's on the home page.

use maud::{DOCTYPE, Markup, PreEscaped, html};

use super::chart::cost_chart;
use super::data::{
    BotPage, CostPage, HomePage, MatchPage, MatchesPage, MatchesQuery, SeasonPage, SeasonsPage,
    VersusPage,
};
use crate::limits::MAX_FORM_TOKEN_BYTES;
use duel_ladder_core::limits::MAX_NAME_BYTES;
use duel_ladder_core::model::{MatchState, utc_text};
use duel_ladder_store::FallbackShare;
use duel_ladder_store::site::{ClassTable, MatchLine, MatchResult, Page, Record, SeasonLine};
use duel_replays::transcript::{FighterName, Transcript};
use duel_rules::WeightClass;

/// A page: title, the address of its JSON twin, and its body.
pub fn layout(title: &str, json_href: &str, body: Markup) -> Markup {
    page_layout(title, Some(json_href), body)
}

/// A page with or without a JSON twin (the owner's transcript has none: it
/// answers a token).
fn page_layout(title: &str, json_href: Option<&str>, body: Markup) -> Markup {
    html! {
        (DOCTYPE)
        html lang="en" {
            head {
                meta charset="utf-8";
                meta name="viewport" content="width=device-width, initial-scale=1";
                title { (title) " · duel ladder" }
                link rel="stylesheet" href="/site/site.css";
                @if let Some(json_href) = json_href {
                    link rel="alternate" type="application/json" href=(json_href);
                }
            }
            body {
                header.top {
                    a.brand href="/" { "duel ladder" }
                    nav {
                        a href="/tv" { "TV" }
                        a href="/seasons" { "Seasons" }
                        a href="/matches" { "Matches" }
                    }
                }
                main { (body) }
                footer {
                    @if let Some(json_href) = json_href {
                        "Same data as JSON: " a.json href=(json_href) { (json_href) } " · "
                    }
                    "replays are signed: " a href="/public-key" { "public key" }
                }
            }
        }
    }
}

/// An error page (the JSON twin answers `{"error": ...}`).
pub fn error_page(status: u16, message: &str) -> Markup {
    layout(
        "Error",
        "/api/home",
        html! {
            h1 { "Error " (status) }
            p.error { (message) }
            p { a href="/" { "Back to the ladder" } }
        },
    )
}

pub fn bot_href(name: &str) -> String {
    format!("/bots/{name}")
}

pub fn versus_href(a: &str, b: &str) -> String {
    format!("/bots/{a}/vs/{b}")
}

pub fn match_href(id: &str) -> String {
    format!("/matches/{id}")
}

fn season_href(name: &str) -> String {
    format!("/seasons/{name}")
}

fn result_text(line: &MatchLine) -> Markup {
    match (line.state, line.winner_name()) {
        (MatchState::Settled, Some(winner)) => html! { span.win { (winner) " won" } },
        (MatchState::Settled, None) => html! { span.draw { "draw" } },
        (state, _) => html! { span.state { (state.name()) } },
    }
}

/// `2–1`: rounds won by `a` and `b`.
fn round_score(line: &MatchLine) -> Option<String> {
    line.round_wins.map(|[a, b]| format!("{a}–{b}"))
}

/// `+12.3`, `−4.0`, or `not rated`.
fn rating_change_text(change: Option<f64>) -> String {
    match change {
        Some(points) if points < 0.0 => format!("−{:.1}", -points),
        Some(points) => format!("+{points:.1}"),
        None => "not rated".to_owned(),
    }
}

/// A side's move in its shown rating: `+22.5 (to 1523)`, or `not rated`.
fn shown_change_text(change: Option<f64>, after: Option<f64>) -> String {
    match (change, after) {
        (Some(_), Some(after)) => format!("{} (to {after:.0})", rating_change_text(change)),
        _ => rating_change_text(change),
    }
}

/// `3.2 s`, `4 min 10 s`.
fn duration_text(ms: i64) -> String {
    let seconds = ms.max(0) as f64 / 1_000.0;
    if seconds < 60.0 {
        format!("{seconds:.1} s")
    } else {
        let whole = seconds as i64;
        format!("{} min {} s", whole / 60, whole % 60)
    }
}

/// `$0.0123`, or `unpriced` when a model it called had no price.
fn cost_text(cost: Option<f64>) -> String {
    cost.map_or_else(|| "unpriced".to_owned(), |usd| format!("${usd:.4}"))
}

fn match_rows(lines: &[MatchLine]) -> Markup {
    html! {
        div.scroll {
            table.matches {
                thead { tr {
                    th { "Fighters" } th { "Result" } th { "Finished" } th.optional { "Class" }
                    th.num.optional { "Stakes" } th { "Replay" }
                } }
                tbody {
                    @for line in lines {
                        tr {
                            td {
                                a href=(bot_href(&line.bot_a)) { (line.bot_a) }
                                " vs "
                                a href=(bot_href(&line.bot_b)) { (line.bot_b) }
                            }
                            td {
                                (result_text(line))
                                @if let Some(score) = round_score(line) { " " span.score { (score) } }
                                @match line.not_rated.as_deref() {
                                    Some("repeat") => { " " span.tag title="Repeats a rated match move for move: not rated" { "repeat" } }
                                    Some(_) => { " " span.tag title="Not rated: settled while a pair was rated at most twice a season" { "not rated" } }
                                    None => {}
                                }
                            }
                            td { a.when href=(match_href(&line.id)) { (line.finished_ms.map_or_else(|| utc_text(line.accepted_ms), utc_text)) } }
                            td.optional { (line.class) }
                            td.num.optional { (line.stake_a) " + " (line.stake_b) }
                            td {
                                @if line.replay {
                                    a href=(format!("/replays/{}/view", line.id)) { "watch" }
                                } @else { "—" }
                            }
                        }
                    }
                }
            }
        }
    }
}

fn more_link(base: &str, extra: &str, page: &Page<MatchLine>) -> Markup {
    html! {
        @if let Some(cursor) = &page.next_cursor {
            p.more { a rel="next" href=(format!("{base}?{extra}cursor={cursor}")) { "Older matches →" } }
        }
    }
}

fn class_table(season: &SeasonLine, table: &ClassTable, full_link: bool) -> Markup {
    html! {
        section.class-table id=(format!("class-{}", table.class)) {
            h3 { (table.class) }
            @if table.rows.is_empty() {
                p.empty { (empty_class_text(season)) }
            } @else {
                div.scroll {
                    table.standings {
                        thead { tr {
                            th.num { "#" } th { "Bot" } th.optional { "Owner" } th.num { "Rating" }
                            th.num { "RD" } th.num { "W" } th.num { "D" } th.num { "L" }
                            th.num.optional title=(RATED_TITLE) { "Rated" }
                            th.num.optional title=(SETTLED_TITLE) { "Settled" }
                        } }
                        tbody {
                            @for row in &table.rows {
                                tr {
                                    td.num { (row.rank) }
                                    td {
                                        a href=(bot_href(&row.bot)) { (row.bot) }
                                        @if row.provisional { abbr.provisional title="provisional: RD ≥ 110" { "?" } }
                                    }
                                    td.optional { (row.owner) }
                                    td.num { (format!("{:.0}", row.rating)) }
                                    td.num { (format!("{:.0}", row.deviation)) }
                                    td.num { (row.wins) } td.num { (row.draws) } td.num { (row.losses) }
                                    td.num.optional { (row.rated_matches) }
                                    td.num.optional { (row.settled_matches) }
                                }
                            }
                        }
                    }
                }
            }
            @if full_link {
                p.more { a href=(format!("{}?class={}", season_href(&season.name), table.class)) { "Full " (table.class) " table →" } }
            } @else if let Some(cursor) = &table.next_cursor {
                p.more { a rel="next" href=(format!("{}?class={}&cursor={cursor}", season_href(&season.name), table.class)) { "Next page →" } }
            }
        }
    }
}

/// What an empty class table says: a running season may still rate a bot
/// there, an ended one will not (issue 49: an ended season said "yet").
fn empty_class_text(season: &SeasonLine) -> &'static str {
    if season.ended_ms.is_some() {
        "No bot was rated in this class this season; the season has ended."
    } else {
        "No rated bots in this class yet."
    }
}

const SORT_NOTE: &str = "Sorted by rating − 2·RD (the conservative rating: a bot \
    with few matches has a wide RD and ranks low until it proves itself), then name. \
    RD is the rating deviation of Glicko-2; ? marks a provisional rating (RD ≥ 110). \
    W, D, L and Rated count the rated matches, those that moved a rating; Settled \
    counts every match whose stakes settled, repeats (which are not rated) included.";

/// The column titles that name what each count counts (issue 49: a bot
/// showed 11 matches on its season's table and 21 on the cost page).
const RATED_TITLE: &str = "rated matches: those that moved its rating";
const SETTLED_TITLE: &str = "settled matches, rated or not: repeats included";

fn season_label(season: &SeasonLine) -> Markup {
    html! {
        a href=(season_href(&season.name)) { "season " (season.name) }
        @match season.ended_ms {
            Some(ended) => { " (ended " (utc_text(ended)) ", final table)" }
            None => { " (running since " (utc_text(season.started_ms)) ")" }
        }
    }
}

pub fn home(page: &HomePage) -> Markup {
    layout(
        "Home",
        "/api/home",
        html! {
            h1 { "Duel ladder" }
            p.lead {
                @match &page.season {
                    Some(season) => { "Standings of " (season_label(season)) "." }
                    None => { "No season has started yet." }
                }
            }
            section.tv-block {
                h2 { a href=(page.tv.page) { "Duel TV" } }
                p.note { "Recent ranked matches, replayed exchange by exchange. " a href=(page.tv.page) { "Watch on its page →" } }
                link rel="stylesheet" href="/tv/tv.css";
                section id="tv" class="tv tv-compact" aria-label="Duel TV" data-events=(page.tv.events) {}
                script src="/tv/tv.js" defer {}
            }
            @if !page.live.is_empty() {
                section.live-now {
                    h2 { "Live now" }
                    ul {
                        @for line in &page.live {
                            li {
                                a href=(bot_href(&line.bot_a)) { (line.bot_a) } " vs "
                                a href=(bot_href(&line.bot_b)) { (line.bot_b) }
                                span.muted { " · " (line.class) " · accepted " (utc_text(line.accepted_ms)) " · " }
                                a href=(format!("/live/{}/view", line.id)) { "watch live" }
                            }
                        }
                    }
                }
            }
            section {
                h2 { "Latest ranked matches" }
                @if page.latest.items.is_empty() {
                    p.empty { "No ranked match has been settled yet." }
                } @else {
                    (match_rows(&page.latest.items))
                    p.more { a href="/matches" { "All matches →" } }
                }
            }
            @if let Some(season) = &page.season {
                section {
                    h2 { "Top of the standings" }
                    p.note { (SORT_NOTE) }
                    // Classes with rated bots get the width; the empty ones a line.
                    div.classes.compact {
                        @for table in page.standings.iter().filter(|table| !table.rows.is_empty()) {
                            (class_table(season, table, true))
                        }
                    }
                    @let empty: Vec<&str> = page.standings.iter().filter(|table| table.rows.is_empty()).map(|table| table.class).collect();
                    @if !empty.is_empty() {
                        p.empty {
                            @if season.ended_ms.is_some() {
                                "No bot was rated in " (empty.join(", ")) " this season."
                            } @else {
                                "No rated bots yet in " (empty.join(", ")) "."
                            }
                        }
                    }
                }
            }
        },
    )
}

pub fn seasons(page: &SeasonsPage) -> Markup {
    layout(
        "Seasons",
        "/api/seasons",
        html! {
            h1 { "Seasons" }
            @if page.seasons.is_empty() {
                p.empty { "No season has started yet." }
            } @else {
                div.scroll { table {
                    thead { tr { th { "Season" } th { "Started" } th { "Ended" } } }
                    tbody {
                        @for season in &page.seasons {
                            tr {
                                td { a href=(season_href(&season.name)) { (season.name) } }
                                td { (utc_text(season.started_ms)) }
                                td { (season.ended_ms.map_or_else(|| "running".to_owned(), utc_text)) }
                            }
                        }
                    }
                } }
            }
        },
    )
}

pub fn season(page: &SeasonPage, json_href: &str) -> Markup {
    layout(
        &format!("Season {}", page.season.name),
        json_href,
        html! {
            h1 { "Season " (page.season.name) }
            p.lead {
                @match page.season.ended_ms {
                    Some(ended) => { "Ended " (utc_text(ended)) ": this is its final, frozen table." }
                    None => { "Running since " (utc_text(page.season.started_ms)) "." }
                }
            }
            p.note { (SORT_NOTE) " " a href=(format!("{}/cost", season_href(&page.season.name))) { "What a win cost →" } }
            @for table in &page.classes { (class_table(&page.season, table, false)) }
        },
    )
}

/// A price in US dollars: cents to four places, for model calls cost little.
fn usd(value: Option<f64>) -> String {
    value.map_or_else(|| "—".to_owned(), |usd| format!("${usd:.4}"))
}

/// A share of decisions as a percentage; under 0.1 % says so rather than 0.0 %.
fn share(value: f64) -> String {
    if value < 0.001 {
        "<0.1%".to_owned()
    } else {
        format!("{:.1}%", value * 100.0)
    }
}

/// What the cost table's "Rating − 2·RD" column is, on hover.
const CONSERVATIVE_TITLE: &str = "The rating less twice its deviation (RD): a rating the bot very \
    likely has at least; the chart's height";

/// A bot's decisions lost to the fallback, named by cause (issue 49: "0 /
/// 3.8% / 0" named none): a line per cause that cost it any, or "none".
fn fallbacks(lost: &FallbackShare) -> Markup {
    let causes = [
        (lost.timeout, "timeout", "answered after its time ran out"),
        (
            lost.budget,
            "over budget",
            "had spent its token budget, or a model call was refused",
        ),
        (
            lost.fault,
            "fault",
            "crashed, trapped, gave a malformed or illegal answer, or lost its connection",
        ),
    ];
    html! {
        @if causes.iter().all(|(part, ..)| *part <= 0.0) {
            "none"
        } @else {
            @for (part, cause, why) in causes {
                @if part > 0.0 {
                    span.cause title=(format!("{} of its decisions lost because the bot {why}", share(part))) {
                        (cause) " " (share(part))
                    }
                }
            }
        }
    }
}

/// The cost chart's legend: what its marks are, and what the frontier is.
fn cost_legend() -> Markup {
    html! {
        figcaption.legend {
            ul {
                li { span.key.steps aria-hidden="true" {} "The frontier: the bots no other bot beats on both counts (none rates higher for as few tokens per match)" }
                li { span.key.dot.on-frontier aria-hidden="true" {} "a bot on the frontier, named where there is room" }
                li { span.key.dot aria-hidden="true" {} "any other bot: hover it for its name" }
            }
            "Each bot at its model tokens per match (across) and its rating − 2·RD (up): up and to the left is better. "
            "The table below lists every bot."
        }
    }
}

pub fn cost(page: &CostPage, json_href: &str) -> Markup {
    let season = &page.season.name;
    layout(
        &format!("What a win cost · season {season}"),
        json_href,
        html! {
            h1 { "What a win cost" }
            p.lead {
                "Season " a href=(season_href(season)) { (season) }
                @if let Some(ended) = page.season.ended_ms { " (ended " (utc_text(ended)) ")" }
                ": each bot's model tokens and dollars "
                "over its settled matches, rated or not, and the decisions it lost to the fallback. "
                "Settled counts those matches and W/D/L their results; Rated, the ones that moved its "
                "rating, as the season's table counts. "
                "Prices are the catalogue's, as each replay recorded them."
            }
            @for class in &page.classes {
                section.cost id=(format!("cost-{}", class.class)) {
                    h2 { (class.class) }
                    @if class.total_bots == 0 {
                        p.empty { "No settled match in this class yet." }
                    } @else {
                        @if let Some(svg) = cost_chart(&class.points, &format!("Tokens per match against rating − 2·RD, {}", class.class), &format!("cost-chart-{}", class.class)) {
                            figure.chart {
                                (PreEscaped(svg))
                                (cost_legend())
                            }
                        }
                        div.scroll { table.cost {
                            // Headers break only where they read well ("Rating" | "− 2·RD",
                            // "Tokens /" | "match"): no-break spaces elsewhere.
                            thead { tr {
                                th { "Bot" } th.optional { "Owner" } th.num title=(CONSERVATIVE_TITLE) { "Rating −\u{a0}2·RD" }
                                th.num title=(SETTLED_TITLE) { "Settled" } th.num title="of the settled matches" { "W/D/L" }
                                th.num title=(RATED_TITLE) { "Rated" }
                                th.num { "Tokens\u{a0}/ match" } th.num { "Tokens\u{a0}/ win" }
                                th.num { "Cost\u{a0}/ match" } th.num { "Cost\u{a0}/ win" }
                                th.num title="The share of its decisions lost to the fallback, by cause" { "Fallbacks" }
                            } }
                            tbody {
                                @for line in &class.bots {
                                    tr {
                                        td {
                                            a href=(bot_href(&line.bot)) { (line.bot) }
                                            @if class.frontier.contains(&line.bot) { " " span.tag title="on the frontier" { "frontier" } }
                                        }
                                        td.optional { (line.owner) }
                                        td.num { (format!("{:.0}", line.conservative)) }
                                        td.num { (line.settled_matches) }
                                        td.num { (line.wins) "/" (line.draws) "/" (line.losses) }
                                        td.num { (line.rated_matches) }
                                        td.num { (format!("{:.0}", line.tokens_per_match)) }
                                        td.num { (line.tokens_per_win.map_or_else(|| "—".to_owned(), |tokens| format!("{tokens:.0}"))) }
                                        td.num {
                                            (usd(line.cost_per_match_usd))
                                            @if line.unpriced_matches > 0 { span.note title="matches whose models had no price are left out" { " (" (line.unpriced_matches) " unpriced)" } }
                                        }
                                        td.num { (usd(line.cost_per_win_usd)) }
                                        td.num.fallbacks { (fallbacks(&line.fallback_share)) }
                                    }
                                }
                            }
                        } }
                        @if class.bots.len() < class.total_bots {
                            p.note { (class.bots.len()) " of " (class.total_bots) " bots on this page." }
                        }
                        @if let Some(cursor) = &class.next_cursor {
                            p.more { a rel="next" href=(format!("{}/cost?class={}&cursor={cursor}", season_href(season), class.class)) { "Next page →" } }
                        }
                        h3.plain { "By model" }
                        @if class.models.is_empty() {
                            p.empty { "No bot in this class called a model." }
                        } @else {
                            p.note { "Every side of a settled match that called the model, whichever bot it was: what the replays recorded, not what owners declare." }
                            div.scroll { table.models {
                                thead { tr {
                                    th { "Model" } th.num { "Bots" } th.num { "Matches" } th.num { "W/D/L" }
                                    th.num { "Score" } th.num { "Tokens / match" } th.num { "Cost / win" }
                                } }
                                tbody {
                                    @for model in &class.models {
                                        tr {
                                            td { code { (model.model) } }
                                            td.num { (model.bots) }
                                            td.num { (model.matches) }
                                            td.num { (model.wins) "/" (model.draws) "/" (model.losses) }
                                            td.num { (format!("{:.0}%", model.score * 100.0)) }
                                            td.num { (format!("{:.0}", model.tokens_per_match)) }
                                            td.num { (usd(model.cost_per_win_usd)) }
                                        }
                                    }
                                }
                            } }
                        }
                    }
                }
            }
        },
    )
}

/// `1 rated match`, `3 settled matches`.
fn count_text(count: i64, what: &str) -> String {
    if count == 1 {
        format!("1 {what}")
    } else {
        format!("{count} {what}es")
    }
}

fn record_text(record: &Record) -> String {
    format!(
        "{} W · {} D · {} L",
        record.wins, record.draws, record.losses
    )
}

pub fn bot(page: &BotPage, json_href: &str) -> Markup {
    let name = &page.name;
    // Drawn here, for the HTML page only: the page's costliest step, and the
    // JSON twin has the points.
    let chart_svg = super::chart::rating_chart(&page.history, &format!("Rating history of {name}"));
    layout(
        name,
        json_href,
        html! {
            h1 { (name) }
            @if let Some(description) = &page.description {
                p.lead.description { (description) }
            }
            dl.facts {
                dt { "Class" } dd { (page.class) }
                dt { "Owner" } dd { (page.owner) }
                @if let Some(author) = &page.author {
                    dt { "Author" } dd { (author) }
                }
                @if let Some(url) = &page.source_url {
                    // The owner's link: followed only by a click, and the
                    // target learns nothing of this page.
                    dt { "Source" } dd { a href=(url) rel="nofollow noopener noreferrer ugc" { (url) } }
                }
                dt { "Version" } dd { "v" (page.current_version) " (" (page.kind) ")" }
                dt { "Play" } dd.play { (page.play) }
                @if let Some(rating) = &page.rating {
                    dt { "Rating" }
                    dd {
                        (format!("{:.0} ± {:.0}", rating.rating, rating.deviation)) " in season "
                        a href=(season_href(&rating.season)) { (rating.season) }
                        @if rating.season_state == "ended" { " (ended: its final table)" }
                    }
                }
                dt { "Rated" }
                dd.rated { (record_text(&page.record)) " in " (count_text(page.rated_matches, "rated match")) ", all seasons" }
                dt { "Settled" }
                dd.settled {
                    (record_text(&page.settled_record)) " in " (count_text(page.settled_matches, "settled match"))
                    ", rated or not (repeats included), all seasons"
                }
            }
            section {
                h2 { "Rating history" }
                @match &chart_svg {
                    Some(svg) => {
                        figure.chart {
                            (PreEscaped(svg))
                            figcaption {
                                "Its rating (up) after each of its last " (page.history.len()) " rated matches (across, oldest first); the band is ±RD. "
                                "Solid lines: a new season; dashed: a new version. "
                                "Between two matches the season's fit may move it too: a match page's rating change is its step here."
                            }
                        }
                    }
                    None => { p.empty { "No rated match yet." } }
                }
            }
            section {
                h2 { "Recent settled matches" }
                @if page.matches.items.is_empty() {
                    p.empty { "No settled match yet." }
                } @else {
                    (match_rows(&page.matches.items))
                    (more_link(&bot_href(name), "", &page.matches))
                }
            }
            section {
                h2 { "Opponents" }
                @if page.opponents.is_empty() {
                    p.empty { "None yet." }
                } @else {
                    p.note { "Over their settled matches, rated or not; each head-to-head shows the rated ones beside them." }
                    div.scroll { table.opponents {
                        thead { tr {
                            th { "Opponent" } th.num title=(SETTLED_TITLE) { "Settled" }
                            th.num { "W" } th.num { "D" } th.num { "L" } th { "" }
                        } }
                        tbody {
                            @for opponent in &page.opponents {
                                tr {
                                    td { a href=(bot_href(&opponent.bot)) { (opponent.bot) } }
                                    td.num { (opponent.settled_matches) }
                                    td.num { (opponent.wins) } td.num { (opponent.draws) } td.num { (opponent.losses) }
                                    td { a.versus href=(versus_href(name, &opponent.bot)) { "head-to-head" } }
                                }
                            }
                        }
                    } }
                }
            }
            section {
                h2 { "Versions" }
                div.scroll { table {
                    thead { tr { th { "Version" } th { "Kind" } th { "Digest" } th { "Uploaded" } } }
                    tbody {
                        @for version in page.versions.iter().rev() {
                            tr {
                                td { "v" (version.version) }
                                td { (version.kind) }
                                td { code title=(version.digest) { (short_digest(&version.digest)) } }
                                td { (utc_text(version.created_ms)) }
                            }
                        }
                    }
                } }
            }
        },
    )
}

/// A digest's first 12 hex digits (its algorithm kept): enough to tell
/// versions apart, where the whole 71 characters made the table on a phone
/// ten lines tall. The whole digest is the cell's title and in the JSON twin.
fn short_digest(digest: &str) -> String {
    const SHOWN_HEX_DIGITS: usize = 12;
    let (algorithm, hex) = digest.split_once(':').unwrap_or(("", digest));
    match hex.char_indices().nth(SHOWN_HEX_DIGITS) {
        Some((cut, _)) if algorithm.is_empty() => format!("{}…", &hex[..cut]),
        Some((cut, _)) => format!("{algorithm}:{}…", &hex[..cut]),
        None => digest.to_owned(),
    }
}

pub fn versus(page: &VersusPage, json_href: &str) -> Markup {
    let h2h = &page.head_to_head;
    layout(
        &format!("{} vs {}", h2h.bot, h2h.opponent),
        json_href,
        html! {
            h1 {
                a href=(bot_href(&h2h.bot)) { (h2h.bot) } " vs " a href=(bot_href(&h2h.opponent)) { (h2h.opponent) }
            }
            p.lead.score {
                (h2h.bot) ": " span.rated { (record_text(&h2h.rated_record)) " in " (count_text(h2h.rated_matches, "rated match")) }
                "; " span.settled { (record_text(&h2h.settled_record)) " in " (count_text(h2h.settled_matches, "settled match")) }
            }
            p.note {
                "Rated matches moved the bots' ratings, as the standings count them; settled ones are every match "
                "whose stakes settled, repeats (tagged below) included."
            }
            @if h2h.matches.items.is_empty() {
                p.empty { "They have not met in a settled match." }
            } @else {
                (match_rows(&h2h.matches.items))
                (more_link(&versus_href(&h2h.bot, &h2h.opponent), "", &h2h.matches))
            }
        },
    )
}

pub fn matches(page: &MatchesPage, json_href: &str) -> Markup {
    layout(
        "Matches",
        json_href,
        html! {
            h1 { "Ranked matches" }
            (match_filters(&page.filter))
            @if page.matches.items.is_empty() {
                @if page.filter.is_empty() {
                    p.empty { "No ranked match has been settled yet." }
                } @else {
                    p.empty { "No settled match fits this filter." }
                }
            } @else {
                (match_rows(&page.matches.items))
                (more_link("/matches", &page.filter.query_prefix(), &page.matches))
            }
        },
    )
}

/// The /matches filter form: a GET to the same page, so a filtered listing
/// has an address of its own.
fn match_filters(filter: &MatchesQuery) -> Markup {
    let results = [
        (MatchResult::Win, "won"),
        (MatchResult::Loss, "lost"),
        (MatchResult::Draw, "drew"),
    ];
    html! {
        form.filters method="get" action="/matches" {
            label { "Class "
                select name="class" {
                    option value="" { "any" }
                    @for class in WeightClass::ALL {
                        option value=(class.name()) selected[filter.class == Some(class)] { (class.name()) }
                    }
                }
            }
            label { "Bot "
                input type="text" name="bot" value=(filter.bot.as_deref().unwrap_or_default())
                    maxlength=(MAX_NAME_BYTES) placeholder="any" autocomplete="off";
            }
            label { "Result "
                select name="result" {
                    option value="" { "any" }
                    @for (result, verb) in results {
                        option value=(result.name()) selected[filter.result == Some(result)] { "the bot " (verb) }
                    }
                }
            }
            button type="submit" { "Filter" }
            @if !filter.is_empty() {
                " " a href="/matches" { "clear" }
            }
        }
    }
}

pub fn match_page(page: &MatchPage, json_href: &str) -> Markup {
    let line = &page.line;
    let notes = &page.notes;
    let rated = notes.rating_after.iter().any(Option::is_some);
    // A match still running when its season ended settles its stakes but
    // moves no rating, and says so (it has no `not_rated` of its own).
    let settled_after_end = matches!(
        (notes.season_ended_ms, line.finished_ms),
        (Some(ended), Some(finished)) if finished > ended
    );
    layout(
        &format!("Match {}", line.id),
        json_href,
        html! {
            h1 {
                a.side-a href=(bot_href(&line.bot_a)) { (line.bot_a) } " vs " a.side-b href=(bot_href(&line.bot_b)) { (line.bot_b) }
            }
            p.lead { (result_text(line)) }
            p.actions {
                @if line.replay {
                    a.button href=(format!("/replays/{}/view", line.id)) { "Watch the replay" }
                    " "
                    a href=(format!("/replays/{}", line.id)) { "download (JSON, signed)" }
                } @else if line.state == MatchState::Running {
                    a.button href=(format!("/live/{}/view", line.id)) { "Watch live" }
                } @else {
                    "No replay: " (line.state.name())
                }
            }
            dl.facts {
                dt { "Match" } dd { code { (line.id) } }
                dt { "Season" }
                dd {
                    a href=(season_href(&line.season)) { (line.season) }
                    @if let Some(ended) = notes.season_ended_ms { " (ended " (utc_text(ended)) ")" }
                }
                dt { "Class" } dd { (line.class) }
                dt { "Versions" } dd { (line.bot_a) " v" (line.version_a) ", " (line.bot_b) " v" (line.version_b) }
                dt { "Stakes" } dd { (line.stake_a) " + " (line.stake_b) " credits" }
                @if let Some(score) = round_score(line) { dt { "Rounds" } dd { (score) } }
                @if let Some([a, b]) = line.damage {
                    dt { "Damage dealt" } dd { (line.bot_a) " " (a) ", " (line.bot_b) " " (b) }
                }
                @if line.state == MatchState::Settled {
                    dt { "Rating change" }
                    dd.rating-change {
                        (line.bot_a) " " (shown_change_text(notes.shown_rating_change[0], notes.rating_after[0])) ", "
                        (line.bot_b) " " (shown_change_text(notes.shown_rating_change[1], notes.rating_after[1]))
                        @if rated {
                            br;
                            span.note {
                                "Each bot's step on its rating chart: the rating the site showed after this match "
                                "minus after its previous rated match this season, the season fit's refits in between "
                                "included. This match's own Glicko-2 move, which the fit does not keep: "
                                (line.bot_a) " " (rating_change_text(line.rating_change[0])) ", "
                                (line.bot_b) " " (rating_change_text(line.rating_change[1])) "."
                            }
                        }
                    }
                }
                @if let Some(exchanges) = line.exchanges { dt { "Exchanges" } dd { (exchanges) } }
                @if let Some([a, b]) = line.tokens {
                    dt { "Model tokens" }
                    dd {
                        (line.bot_a) " " (a) " (" (cost_text(line.cost_usd[0])) "), "
                        (line.bot_b) " " (b) " (" (cost_text(line.cost_usd[1])) ")"
                    }
                }
                @if let (MatchState::Settled, Some(ms)) = (line.state, line.duration_ms) {
                    dt { "Wall time" } dd { (duration_text(ms)) " from acceptance to settlement" }
                }
                dt { "Accepted" } dd { (utc_text(line.accepted_ms)) }
                @if let Some(finished) = line.finished_ms { dt { "Finished" } dd { (utc_text(finished)) } }
                @if line.state == MatchState::Settled {
                    dt { "Rated" }
                    dd {
                        @match (line.not_rated.as_deref(), &line.repeat_of) {
                            (Some("repeat"), Some(earlier)) => {
                                "No: the same versions played the same moves in "
                                a href=(match_href(earlier)) { "match " (earlier) }
                                " this season, so this game adds nothing to either rating (its stakes settled as usual)."
                            }
                            (Some(_), _) => {
                                "No: settled while a pair was rated at most twice a season, and these two versions had played their two rated games (its stakes settled as usual)."
                            }
                            (None, _) if !rated && settled_after_end => {
                                "No: it settled after its season ended, when ratings no longer move (its stakes settled as usual)."
                            }
                            (None, _) => { "Yes" }
                        }
                    }
                }
                @if let Some(note) = &notes.note { dt { "Note" } dd { (note) } }
                @if let Some(cause) = &notes.last_failure {
                    @if line.state != MatchState::Voided {
                        dt { "Last failed run" } dd { (cause) }
                    }
                }
            }
            p { a href=(versus_href(&line.bot_a, &line.bot_b)) { "Head-to-head of " (line.bot_a) " and " (line.bot_b) " →" } }
            @if line.state == MatchState::Settled {
                section.owner {
                    h2 { "Your bot's reasoning" }
                    p.note {
                        "The model calls of a ranked match are kept apart from its public replay. "
                        "Everyone reads them once the ladder reveals them at "
                        a href=(format!("{}/transcript", match_href(&line.id))) { "the transcript" }
                        "; the owners of its bots read theirs now. Your token goes in the body of "
                        "this form, never in an address."
                    }
                    form.token method="post" action=(format!("{}/transcript", match_href(&line.id))) {
                        label { "Owner token "
                            input type="password" name="token" autocomplete="current-password"
                                required maxlength=(MAX_FORM_TOKEN_BYTES);
                        }
                        " "
                        button type="submit" { "Show my bot's model calls" }
                    }
                }
            }
        },
    )
}

/// When a withheld transcript becomes public, from the reveal policy.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RevealWhen {
    Never,
    /// Once the match's season ends.
    AfterSeason {
        season: String,
    },
    /// `days` after the match settled: at `at_ms` (unknown for a match
    /// settled without a time).
    AfterDays {
        days: u32,
        at_ms: Option<i64>,
    },
}

impl RevealWhen {
    pub fn of(
        policy: duel_ladder_core::reveal::RevealPolicy,
        season: &str,
        finished_ms: Option<i64>,
    ) -> RevealWhen {
        use duel_ladder_core::reveal::RevealPolicy;
        match policy {
            RevealPolicy::Never => RevealWhen::Never,
            RevealPolicy::AfterSeason => RevealWhen::AfterSeason {
                season: season.to_owned(),
            },
            RevealPolicy::AfterDays(days) => RevealWhen::AfterDays {
                days,
                at_ms: finished_ms
                    .map(|ms| ms.saturating_add(i64::from(days).saturating_mul(86_400_000))),
            },
        }
    }
}

/// A settled match's transcript before the reveal: when everyone will read
/// it, and that its owners read theirs now.
pub fn transcript_withheld_page(line: &MatchLine, when: &RevealWhen, json_href: &str) -> Markup {
    layout(
        &format!("Transcript of match {}", line.id),
        json_href,
        html! {
            h1 { "Model calls: " (line.bot_a) " vs " (line.bot_b) }
            p.lead.withheld {
                @match when {
                    RevealWhen::Never => {
                        "Not public: this ladder never makes its transcripts public."
                    }
                    RevealWhen::AfterSeason { season } => {
                        "Not public yet: this transcript will be public once season "
                        a href=(season_href(season)) { (season) } " ends."
                    }
                    RevealWhen::AfterDays { days, at_ms: Some(at) } => {
                        "Not public yet: this transcript will be public on " (utc_text(*at))
                        ", " (days) " days after the match."
                    }
                    RevealWhen::AfterDays { days, at_ms: None } => {
                        "Not public yet: this transcript will be public " (days) " days after the match."
                    }
                }
            }
            p.note {
                "What the bots said to their models stays private while it could hand a bot's strategy to its opponents. "
                "The owners of its bots read theirs now, from "
                a href=(match_href(&line.id)) { "the match page" } "."
            }
            (transcript_links(line))
        },
    )
}

fn transcript_links(line: &MatchLine) -> Markup {
    html! {
        p.actions {
            a href=(match_href(&line.id)) { "← Match " (line.bot_a) " vs " (line.bot_b) }
            @if line.replay {
                " · " a href=(format!("/replays/{}/view", line.id)) { "watch the replay" }
            }
            " · " a href=(bot_href(&line.bot_a)) { (line.bot_a) }
            " · " a href=(bot_href(&line.bot_b)) { (line.bot_b) }
        }
    }
}

/// A match's transcript for everyone, once revealed.
pub fn public_transcript_page(
    line: &MatchLine,
    transcript: &Transcript,
    json_href: &str,
) -> Markup {
    layout(
        &format!("Transcript of match {}", line.id),
        json_href,
        html! {
            h1 { "Model calls: " (line.bot_a) " vs " (line.bot_b) }
            p.lead {
                (calls_summary(transcript)) " Prompts are folded: open one to read it. "
                "The JSON twin is the kept file, which "
                code { "referee replay verify --transcript" } " proves against the signed replay."
            }
            (transcript_links(line))
            (transcript_exchanges(line, transcript))
        },
    )
}

/// A match's transcript for its bots' owner (or an operator): each decision's
/// calls with the messages sent and the completion received, as text.
pub fn transcript_page(line: &MatchLine, transcript: &Transcript, reader: &str) -> Markup {
    page_layout(
        &format!("Transcript of match {}", line.id),
        None,
        html! {
            h1 { "Model calls: " (line.bot_a) " vs " (line.bot_b) }
            p.lead {
                "Match " a href=(match_href(&line.id)) { (line.id) } ", as " (reader) " may read it: "
                (calls_summary(transcript)) " This page is not cached or shared."
            }
            (transcript_exchanges(line, transcript))
        },
    )
}

/// `12 calls in 9 decisions.`
fn calls_summary(transcript: &Transcript) -> String {
    let calls: usize = transcript
        .decisions
        .iter()
        .map(|decision| decision.calls.len())
        .sum();
    let decisions = transcript.decisions.len();
    format!(
        "{calls} model call{} in {decisions} decision{}.",
        if calls == 1 { "" } else { "s" },
        if decisions == 1 { "" } else { "s" }
    )
}

fn outcome_text(outcome: duel_replays::CallOutcome) -> &'static str {
    use duel_replays::CallOutcome;
    match outcome {
        CallOutcome::Ok => "answered",
        CallOutcome::Cut => "cut: the decision ended first",
        CallOutcome::Refused => "refused: the budget was spent",
        CallOutcome::Unavailable => "unavailable: no model answered",
        CallOutcome::Invalid => "refused: not a request the gateway takes",
    }
}

/// Per exchange, each fighter's calls: model, tokens, the prompt folded, the
/// completion. Sections are `#r{round}e{exchange}` and, per fighter,
/// `#r{round}e{exchange}{a|b}`.
fn transcript_exchanges(line: &MatchLine, transcript: &Transcript) -> Markup {
    let name = |fighter: FighterName| match fighter {
        FighterName::A => line.bot_a.as_str(),
        FighterName::B => line.bot_b.as_str(),
    };
    let letter = |fighter: FighterName| match fighter {
        FighterName::A => "a",
        FighterName::B => "b",
    };
    let mut decisions: Vec<_> = transcript.decisions.iter().collect();
    decisions.sort_by_key(|decision| {
        (
            decision.round,
            decision.exchange,
            decision.fighter == FighterName::B,
        )
    });
    html! {
        @if decisions.is_empty() {
            p.empty { "No model call was kept." }
        }
        @for exchange in decisions.chunk_by(|x, y| (x.round, x.exchange) == (y.round, y.exchange)) {
            @let (round, number) = (exchange[0].round, exchange[0].exchange);
            section.exchange id=(format!("r{round}e{number}")) {
                h2 { a.anchor href=(format!("#r{round}e{number}")) { "Round " (round) " · exchange " (number) } }
                div.sides {
                    @for decision in exchange {
                        section class=(format!("decision side-{}", letter(decision.fighter))) id=(format!("r{round}e{number}{}", letter(decision.fighter))) {
                            h3 { (name(decision.fighter)) }
                            @for call in &decision.calls {
                                div.call {
                                    p.note.call-facts {
                                        code { (call.model) } " · "
                                        (call.prompt_tokens + call.completion_tokens) " tokens ("
                                        (call.prompt_tokens) " prompt + " (call.completion_tokens) " completion) · "
                                        (outcome_text(call.outcome)) " · "
                                        (format!("{:.1} ms", call.latency_us as f64 / 1_000.0))
                                        @if call.truncated { " · texts cut to the referee's bounds" }
                                    }
                                    details.prompt {
                                        summary {
                                            "Prompt: " (call.messages.len()) " message" @if call.messages.len() != 1 { "s" }
                                            ", " (call.prompt_tokens) " tokens"
                                        }
                                        @for message in &call.messages {
                                            div.message { span.role { (message.role) } pre { (message.content) } }
                                        }
                                    }
                                    div.message.completion { span.role { "completion" } pre { (call.completion) } }
                                }
                            }
                        }
                    }
                }
            }
        }
    }
}

/// `1523 ± 64`, or `new this season` for a bot with no rating before.
fn rating_text(rating: Option<f64>, deviation: Option<f64>) -> String {
    match (rating, deviation) {
        (Some(rating), Some(deviation)) => format!("{rating:.0} ± {deviation:.0}"),
        (Some(rating), None) => format!("{rating:.0}"),
        _ => "new this season".to_owned(),
    }
}

/// Duel TV's page: the match on air (filled and moved on by `/tv/tv.js`
/// from the stream), what airs next and what aired last. Nothing on it is
/// called live, and the match on air's result is nowhere on it until its
/// broadcast ends.
pub fn tv_page(page: &crate::tv::TvPage) -> Markup {
    let airing = page
        .on_air
        .as_ref()
        .filter(|on_air| !on_air.ended)
        .map(|on_air| on_air.match_id.as_str());
    layout(
        "Duel TV",
        "/api/tv",
        html! {
            link rel="stylesheet" href="/tv/tv.css";
            h1 { "Duel TV" }
            p.lead {
                "Ranked matches already played, replayed exchange by exchange at a pace you can follow. "
                "A match's first showing or a rerun: never live."
            }
            section id="tv" class="tv tv-full" aria-label="On Duel TV" data-events=(page.events) {
                @match &page.on_air {
                    Some(on_air) => {
                        div.tv-head {
                            span.tv-badge { "Duel TV" }
                            span.tv-label { @if on_air.rerun { "rerun" } @else { "first showing" } }
                            span.tv-status { (WeightClass::from(on_air.class).name()) " · season " (on_air.season) " · " (on_air.why_text) }
                        }
                        div.tv-fighters {
                            @for (side, name) in on_air.fighters.iter().enumerate() {
                                div class=(format!("tv-fighter tv-side-{}", ["a", "b"][side])) {
                                    div.tv-name { a href=(bot_href(name)) { (name) } }
                                    div.tv-rating { (rating_text(on_air.ratings[side], on_air.deviations[side])) }
                                }
                            }
                        }
                        p.tv-links {
                            @if on_air.ended {
                                a href=(format!("/replays/{}/view", on_air.match_id)) { "open in viewer" }
                                " · " a href=(match_href(&on_air.match_id)) { "match page" }
                            } @else {
                                a href=(format!("/live/{}/view", on_air.match_id)) { "follow in the viewer" }
                                " · " a href=(match_href(&on_air.match_id)) { "match page (shows the result)" }
                            }
                        }
                    }
                    None => { p.tv-status { "Waiting for a ranked match to be settled…" } }
                }
            }
            script src="/tv/tv.js" defer {}
            section.tv-lists {
                div {
                    h2 { "Up next" }
                    ol #tv-queue {
                        @for upcoming in &page.queue {
                            li {
                                a href=(bot_href(&upcoming.fighters[0])) { (upcoming.fighters[0]) } " vs "
                                a href=(bot_href(&upcoming.fighters[1])) { (upcoming.fighters[1]) }
                                span.note { " · " (WeightClass::from(upcoming.class).name()) " · " (upcoming.why_text) }
                            }
                        }
                    }
                    @if page.queue.is_empty() {
                        p.empty #tv-queue-empty { "Nothing else yet: the next settled match airs next." }
                    }
                }
                div {
                    h2 { "Recently on Duel TV" }
                    ol #tv-playlist {
                        @for aired in &page.playlist {
                            li {
                                a href=(bot_href(&aired.fighters[0])) { (aired.fighters[0]) } " vs "
                                a href=(bot_href(&aired.fighters[1])) { (aired.fighters[1]) }
                                span.note { " · " (WeightClass::from(aired.class).name()) @if aired.rerun { " · rerun" } }
                                @match (&aired.result, Some(aired.match_id.as_str()) == airing) {
                                    (Some(result), false) => {
                                        br;
                                        @match &result.winner {
                                            Some(winner) => { span.win { (winner) " won" } }
                                            None => { span.draw { "draw" } }
                                        }
                                        " " span.score { (result.round_wins[0]) "–" (result.round_wins[1]) }
                                        @if let Some(verdict) = result.verdict_text { span.note { " · " (verdict) } }
                                        " · " a href=(match_href(&aired.match_id)) { "match" }
                                        " · " a href=(format!("/replays/{}/view", aired.match_id)) { "replay" }
                                    }
                                    _ => { span.note { " · on air again: result after it ends" } }
                                }
                            }
                        }
                    }
                    @if page.playlist.is_empty() {
                        p.empty #tv-playlist-empty { "No broadcast has ended yet." }
                    }
                }
            }
            p.note {
                "Duel TV picks from the latest settled ranked matches by what was known before the bell: "
                "a top-3 bot, close ratings, a long rivalry, else the newest. Ratings are the bots' before the match. "
                "Matches being played now are under Live now on " a href="/" { "the home page" } "."
            }
        },
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_digest_is_shown_by_its_first_twelve_hex_digits() {
        let digest = format!("sha256:{}", "0123456789abcdef".repeat(4));
        assert_eq!(short_digest(&digest), "sha256:0123456789ab…");
        assert_eq!(short_digest("0123456789abcdef"), "0123456789ab…");
        assert_eq!(short_digest("sha256:abc"), "sha256:abc");
        assert_eq!(short_digest(""), "");
        // Whatever a stored digest holds, no cut falls inside a character.
        assert_eq!(short_digest("x:ééééééééééééé"), "x:éééééééééééé…");
    }

    #[test]
    fn an_empty_class_of_an_ended_season_does_not_say_yet() {
        let season = |ended_ms: Option<i64>| SeasonLine {
            id: 1,
            name: "autumn".to_owned(),
            started_ms: 0,
            ended_ms,
            state: if ended_ms.is_some() {
                "ended"
            } else {
                "running"
            },
        };
        let table = ClassTable {
            class: "heavy",
            rows: Vec::new(),
            next_cursor: None,
        };
        let running = class_table(&season(None), &table, false).into_string();
        assert!(
            running.contains("No rated bots in this class yet."),
            "{running}"
        );
        let ended = class_table(&season(Some(5)), &table, false).into_string();
        assert!(!ended.contains("yet"), "{ended}");
        assert!(ended.contains("the season has ended"), "{ended}");
    }

    #[test]
    fn facts_read_as_people_write_them() {
        let cases = [
            (rating_change_text(Some(12.34)), "+12.3"),
            (rating_change_text(Some(-4.0)), "−4.0"),
            (rating_change_text(Some(0.0)), "+0.0"),
            (rating_change_text(None), "not rated"),
            (
                shown_change_text(Some(22.46), Some(1523.4)),
                "+22.5 (to 1523)",
            ),
            (
                shown_change_text(Some(-10.3), Some(1480.0)),
                "−10.3 (to 1480)",
            ),
            (shown_change_text(None, None), "not rated"),
            (count_text(1, "rated match"), "1 rated match"),
            (count_text(21, "settled match"), "21 settled matches"),
            (duration_text(3_240), "3.2 s"),
            (duration_text(250_000), "4 min 10 s"),
            (duration_text(-5), "0.0 s"),
            (cost_text(Some(0.01234)), "$0.0123"),
            (cost_text(None), "unpriced"),
        ];
        for (text, expected) in cases {
            assert_eq!(text, expected);
        }
    }
}

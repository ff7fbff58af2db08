//! The rating-history chart of a bot's page, drawn on the server as SVG.
//!
//! plotters draws it (its SVG backend, no font files: labels are `<text>`
//! elements the browser sets), so axes, ticks and scaling come from a
//! maintained library instead of hand-written path strings. The chart has one
//! circle per rated match, the rating line through them, a band of ±RD, a
//! solid vertical line where a season begins and a dashed one where a new
//! version of the bot first played. The cost page's chart puts each bot of a
//! class at its tokens per match against its rating − 2·RD, and draws the
//! frontier: the bots nothing beats on both counts. It names only the
//! frontier's bots, each where its label overlaps no other ([`place_labels`]);
//! every point names its bot on hover.

use plotters::coord::Shift;
use plotters::prelude::*;

use crate::limits::{COST_CHART_LABEL_CHARS, COST_CHART_LABELS};
use duel_ladder_store::site::HistoryPoint;

pub const CHART_WIDTH_PX: u32 = 720;
pub const CHART_HEIGHT_PX: u32 = 300;

const LINE: RGBColor = RGBColor(37, 99, 235);
const SEASON: RGBColor = RGBColor(30, 30, 30);
const VERSION: RGBColor = RGBColor(202, 90, 20);

/// A marker between two rated matches: a season or a version began.
#[derive(Clone, Debug, PartialEq)]
pub struct Boundary {
    /// Between point `index - 1` and point `index` (0-based).
    pub index: usize,
    pub season_began: bool,
    pub label: String,
}

/// Where seasons and versions change along `points`.
pub fn boundaries(points: &[HistoryPoint]) -> Vec<Boundary> {
    points
        .windows(2)
        .enumerate()
        .filter_map(|(before, pair)| {
            let [previous, next] = pair else { return None };
            if next.season != previous.season {
                Some(Boundary {
                    index: before + 1,
                    season_began: true,
                    label: format!("season {}", next.season),
                })
            } else if next.version != previous.version {
                Some(Boundary {
                    index: before + 1,
                    season_began: false,
                    label: format!("v{}", next.version),
                })
            } else {
                None
            }
        })
        .collect()
}

/// The chart as an `<svg>` element (no XML prologue), or `None` when there is
/// nothing to draw or plotters refused.
pub fn rating_chart(points: &[HistoryPoint], title: &str) -> Option<String> {
    if points.is_empty() {
        return None;
    }
    svg_element(
        (CHART_WIDTH_PX, CHART_HEIGHT_PX),
        "id=\"rating-chart\"",
        title,
        |root| draw(root, points).map(|()| String::new()),
    )
}

/// What `draw` paints, as a `size` `<svg>` element (no XML prologue) with
/// `attributes`, its role and `title` as its label, and the markup `draw`
/// returns last inside it; `None` when plotters refused (logged).
fn svg_element(
    size: (u32, u32),
    attributes: &str,
    title: &str,
    draw: impl FnOnce(&DrawingArea<SVGBackend<'_>, Shift>) -> Result<String, DrawError>,
) -> Option<String> {
    let mut svg = String::new();
    let extra = {
        let root = SVGBackend::with_string(&mut svg, size).into_drawing_area();
        let extra = match draw(&root) {
            Ok(extra) => extra,
            Err(error) => {
                tracing::warn!(%error, "a chart could not be drawn");
                return None;
            }
        };
        root.present().ok()?;
        extra
    };
    let start = svg.find("<svg")?;
    let end = svg.rfind("</svg>")?;
    let body = svg.get(start + "<svg".len()..end)?;
    Some(format!(
        "<svg {attributes} role=\"img\" aria-label=\"{}\"{body}{extra}</svg>",
        escape_attribute(title)
    ))
}

fn escape_attribute(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('"', "&quot;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

type DrawError = DrawingAreaErrorKind<std::io::Error>;
type DrawResult = Result<(), DrawError>;

fn draw(root: &DrawingArea<SVGBackend<'_>, Shift>, points: &[HistoryPoint]) -> DrawResult {
    root.fill(&WHITE)?;
    let low = points
        .iter()
        .map(|point| point.rating - point.deviation)
        .fold(f64::INFINITY, f64::min);
    let high = points
        .iter()
        .map(|point| point.rating + point.deviation)
        .fold(f64::NEG_INFINITY, f64::max);
    let pad = ((high - low) * 0.05).max(10.0);
    let (low, high) = (low - pad, high + pad);
    let count = points.len() as f64;
    // Room for the tick labels as a phone sets them (site.css: 22 units, not
    // 12). No axis names: plotters sets them by the drawn size, where the
    // phone's larger ticks ran into them, and the caption says what is drawn.
    let mut chart = ChartBuilder::on(root)
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(64)
        .build_cartesian_2d(0.5..count + 0.5, low..high)?;
    chart
        .configure_mesh()
        .x_labels(points.len().min(10))
        .x_label_formatter(&|x| format!("{x:.0}"))
        .y_label_formatter(&|y| format!("{y:.0}"))
        .light_line_style(WHITE)
        .draw()?;
    let x = |index: usize| index as f64 + 1.0;
    let band: Vec<(f64, f64)> = points
        .iter()
        .enumerate()
        .map(|(index, point)| (x(index), point.rating + point.deviation))
        .chain(
            points
                .iter()
                .enumerate()
                .rev()
                .map(|(index, point)| (x(index), point.rating - point.deviation)),
        )
        .collect();
    chart.draw_series(std::iter::once(Polygon::new(band, LINE.mix(0.15))))?;
    for boundary in boundaries(points) {
        let at = boundary.index as f64 + 0.5;
        let line = vec![(at, low), (at, high)];
        if boundary.season_began {
            chart.draw_series(LineSeries::new(line, SEASON.stroke_width(1)))?;
        } else {
            chart.draw_series(DashedLineSeries::new(line, 4, 3, VERSION.stroke_width(1)))?;
        }
        let color = if boundary.season_began {
            SEASON
        } else {
            VERSION
        };
        chart.draw_series(std::iter::once(Text::new(
            boundary.label,
            (at, high),
            ("sans-serif", 12).into_font().color(&color),
        )))?;
    }
    chart.draw_series(LineSeries::new(
        points
            .iter()
            .enumerate()
            .map(|(index, point)| (x(index), point.rating)),
        LINE.stroke_width(2),
    ))?;
    chart.draw_series(
        points
            .iter()
            .enumerate()
            .map(|(index, point)| Circle::new((x(index), point.rating), 3, LINE.filled())),
    )?;
    Ok(())
}

/// The indices of the points on the cost frontier, cheapest first: a point
/// `(cost, rating)` is on it when no other point costs as little or less for
/// a higher rating, or less for the same rating.
pub fn frontier(points: &[(f64, f64)]) -> Vec<usize> {
    let mut order: Vec<usize> = (0..points.len())
        .filter(|&index| points[index].0.is_finite() && points[index].1.is_finite())
        .collect();
    // Cheapest first; at one cost, the best rating first.
    order.sort_by(|&x, &y| {
        points[x]
            .0
            .total_cmp(&points[y].0)
            .then(points[y].1.total_cmp(&points[x].1))
    });
    let mut best = f64::NEG_INFINITY;
    let mut on = Vec::new();
    for index in order {
        if points[index].1 > best {
            best = points[index].1;
            on.push(index);
        }
    }
    on
}

/// One bot on the cost chart.
#[derive(Clone, Debug, PartialEq)]
pub struct CostPoint {
    pub bot: String,
    pub tokens_per_match: f64,
    pub conservative: f64,
    pub on_frontier: bool,
}

/// The cost chart's size in SVG units. The page scales it to its figure's
/// width (`site.css`), so at 390 px every bot is in view; its text,
/// [`COST_FONT`] units of its 600, is then about 9 px tall.
pub const COST_CHART_WIDTH: u32 = 600;
pub const COST_CHART_HEIGHT: u32 = 400;

/// The cost chart's text size (bot names, ticks, axis names), in SVG units.
pub const COST_FONT: f64 = 15.0;

/// The frontier's steps and its bots (the other bots are `LINE`); the
/// legend's swatches in `site.css` are these colours.
const FRONTIER: RGBColor = RGBColor(202, 90, 20);
const POINT_RADIUS: f64 = 4.0;
const FRONTIER_RADIUS: f64 = 5.0;

/// Space between a label and its point, and at least between two labels, in
/// SVG units.
const LABEL_GAP: f64 = 3.0;

/// A label's box height in ems: DejaVu Sans (the test machines'
/// sans-serif) spans 1.16 em from ascent to descent, Liberation Sans and
/// Arial 1.12; Noto Sans's 1.36 still leaves most of [`LABEL_GAP`] between
/// two labels.
const LABEL_HEIGHT_EM: f64 = 1.3;

/// The cost chart of one class as an `<svg>` element, or `None` when there
/// is nothing to draw or plotters refused. Every bot is a circle whose
/// `<title>` names it on hover (no script: the site's CSP has none); only
/// the frontier's bots are named on the chart, where their labels fit
/// ([`place_labels`]).
pub fn cost_chart(points: &[CostPoint], title: &str, id: &str) -> Option<String> {
    if points.is_empty() {
        return None;
    }
    let attributes = format!("id=\"{}\" class=\"cost-chart\"", escape_attribute(id));
    svg_element(
        (COST_CHART_WIDTH, COST_CHART_HEIGHT),
        &attributes,
        title,
        |root| draw_cost(root, points),
    )
}

/// A tick of the tokens axis: whole tokens only (a class that spent none has
/// the axis 0 to 1, whose fractional ticks would all read 0), none below 0,
/// and thousands and millions short, so six ticks fit at 390 px.
fn tokens_tick(tokens: f64) -> String {
    if (tokens - tokens.round()).abs() > 1e-6 || tokens < 0.0 {
        return String::new();
    }
    let tokens = tokens.round();
    let short = |value: f64, unit: &str| {
        if value == value.round() {
            format!("{value:.0}{unit}")
        } else {
            format!("{value:.1}{unit}")
        }
    };
    if tokens >= 1e6 {
        short(tokens / 1e6, "M")
    } else if tokens >= 1e4 {
        short(tokens / 1e3, "k")
    } else {
        format!("{tokens:.0}")
    }
}

fn hex(color: RGBColor) -> String {
    format!("#{:02x}{:02x}{:02x}", color.0, color.1, color.2)
}

/// A bot's name as its label: cut to [`COST_CHART_LABEL_CHARS`] with an
/// ellipsis, so a long name still has a place beside its point.
fn label_text(bot: &str) -> String {
    if bot.chars().count() <= COST_CHART_LABEL_CHARS {
        bot.to_owned()
    } else {
        bot.chars()
            .take(COST_CHART_LABEL_CHARS - 1)
            .chain(['…'])
            .collect()
    }
}

fn draw_cost(
    root: &DrawingArea<SVGBackend<'_>, Shift>,
    points: &[CostPoint],
) -> Result<String, DrawError> {
    root.fill(&WHITE)?;
    // A point that is not a number has no place on the chart (nor on the
    // frontier, `frontier`); the table still lists its bot.
    let shown: Vec<&CostPoint> = points
        .iter()
        .filter(|point| point.tokens_per_match.is_finite() && point.conservative.is_finite())
        .collect();
    let most = shown
        .iter()
        .map(|point| point.tokens_per_match)
        .fold(0.0, f64::max);
    let right = (most * 1.1).max(1.0);
    let low = shown
        .iter()
        .map(|point| point.conservative)
        .fold(f64::INFINITY, f64::min);
    let high = shown
        .iter()
        .map(|point| point.conservative)
        .fold(f64::NEG_INFINITY, f64::max);
    let (low, high) = if low <= high { (low, high) } else { (0.0, 0.0) };
    let pad = ((high - low) * 0.1).max(20.0);
    // plotters' SVG backend writes a font's size / 1.24 as its font-size:
    // ticks and axis names are set as large as the bots' names.
    let font = ("sans-serif", COST_FONT * 1.24);
    let mut chart = ChartBuilder::on(root)
        .margin(12)
        .x_label_area_size(54)
        .y_label_area_size(76)
        .build_cartesian_2d(-right * 0.03..right, low - pad..high + pad)?;
    chart
        .configure_mesh()
        .x_desc("model tokens per match")
        .y_desc("rating − 2·RD")
        .label_style(font)
        .axis_desc_style(font)
        .x_labels(6)
        .y_labels(6)
        .x_label_formatter(&|x: &f64| tokens_tick(*x))
        .y_label_formatter(&|y| format!("{y:.0}"))
        .light_line_style(WHITE)
        .draw()?;
    // The frontier as steps: from each bot on it, level to the next one's cost.
    let mut on: Vec<&CostPoint> = shown
        .iter()
        .copied()
        .filter(|point| point.on_frontier)
        .collect();
    on.sort_by(|x, y| x.tokens_per_match.total_cmp(&y.tokens_per_match));
    let mut steps = Vec::new();
    for pair in on.windows(2) {
        steps.push((pair[0].tokens_per_match, pair[0].conservative));
        steps.push((pair[1].tokens_per_match, pair[0].conservative));
    }
    if let Some(last) = on.last() {
        steps.push((last.tokens_per_match, last.conservative));
        steps.push((right, last.conservative));
    }
    chart.draw_series(LineSeries::new(steps.clone(), FRONTIER.stroke_width(2)))?;

    // The points and names are written here rather than by plotters: a
    // circle holds its `<title>`, and a label goes where `place_labels`
    // found room for it.
    let pixel = |x: f64, y: f64| {
        let (x, y) = chart.backend_coord(&(x, y));
        (f64::from(x), f64::from(y))
    };
    let radius = |point: &CostPoint| {
        if point.on_frontier {
            FRONTIER_RADIUS
        } else {
            POINT_RADIUS
        }
    };
    let (across, down) = chart.plotting_area().get_pixel_range();
    let area = Rect {
        left: f64::from(across.start),
        top: f64::from(down.start),
        right: f64::from(across.end),
        bottom: f64::from(down.end),
    };
    // What a label may not cover: the frontier's points (a name over one
    // would hide what the chart is about); and what it had better not: the
    // other points and the steps.
    let circle = |point: &CostPoint| {
        let (x, y) = pixel(point.tokens_per_match, point.conservative);
        Rect::around(x, y, radius(point) + 1.0, radius(point) + 1.0)
    };
    let keep_clear: Vec<Rect> = on.iter().map(|point| circle(point)).collect();
    let mut avoid: Vec<Rect> = shown
        .iter()
        .filter(|point| !point.on_frontier)
        .map(|point| circle(point))
        .collect();
    let step_pixels: Vec<(f64, f64)> = steps.iter().map(|&(x, y)| pixel(x, y)).collect();
    for pair in step_pixels.windows(2) {
        let ((x0, y0), (x1, y1)) = (pair[0], pair[1]);
        avoid.push(Rect {
            left: x0.min(x1) - 1.0,
            top: y0.min(y1) - 1.0,
            right: x0.max(x1) + 1.0,
            bottom: y0.max(y1) + 1.0,
        });
    }
    // The best-rated bot first, then the frontier cheapest first: its ends
    // are what a reader looks for.
    let mut named: Vec<&CostPoint> = on.last().copied().into_iter().collect();
    named.extend(on.iter().take(on.len().saturating_sub(1)).copied());
    named.truncate(COST_CHART_LABELS);
    let texts: Vec<String> = named.iter().map(|point| label_text(&point.bot)).collect();
    let wanted: Vec<Wanted<'_>> = named
        .iter()
        .zip(&texts)
        .map(|(point, text)| {
            let (x, y) = pixel(point.tokens_per_match, point.conservative);
            Wanted {
                x,
                y,
                radius: FRONTIER_RADIUS,
                text,
            }
        })
        .collect();
    let placed = place_labels(&wanted, COST_FONT, area, &keep_clear, &avoid);

    let mut markup = String::new();
    // The frontier's bots last, over the others.
    for (on_frontier, class, color) in [(false, "bots", LINE), (true, "frontier-bots", FRONTIER)] {
        markup.push_str(&format!("<g class=\"{class}\" fill=\"{}\">", hex(color)));
        for point in shown
            .iter()
            .filter(|point| point.on_frontier == on_frontier)
        {
            let (x, y) = pixel(point.tokens_per_match, point.conservative);
            // Its bot's name on hover, and no more: the table has the
            // numbers, and at 3,333 bots a class every byte here is 3 KB.
            markup.push_str(&format!(
                "<circle cx=\"{x}\" cy=\"{y}\" r=\"{}\"><title>{}</title></circle>",
                radius(point),
                escape_attribute(&point.bot)
            ));
        }
        markup.push_str("</g>");
    }
    markup.push_str(&format!(
        "<g class=\"names\" font-family=\"sans-serif\" font-size=\"{COST_FONT}\" fill=\"{}\">",
        hex(SEASON)
    ));
    for label in &placed {
        let Some(text) = texts.get(label.index) else {
            continue;
        };
        markup.push_str(&format!(
            "<text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"{}\" dominant-baseline=\"central\">{}</text>",
            label.x,
            label.y,
            label.anchor.attribute(),
            escape_attribute(text)
        ));
    }
    markup.push_str("</g>");
    Ok(markup)
}

/// A box on a chart in SVG units, y growing downwards.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Rect {
    pub left: f64,
    pub top: f64,
    pub right: f64,
    pub bottom: f64,
}

impl Rect {
    fn around(x: f64, y: f64, half_width: f64, half_height: f64) -> Rect {
        Rect {
            left: x - half_width,
            top: y - half_height,
            right: x + half_width,
            bottom: y + half_height,
        }
    }

    /// Whether the two share more than an edge.
    pub fn overlaps(&self, other: &Rect) -> bool {
        self.left < other.right
            && other.left < self.right
            && self.top < other.bottom
            && other.top < self.bottom
    }

    pub fn grown(&self, by: f64) -> Rect {
        Rect::around(
            (self.left + self.right) / 2.0,
            (self.top + self.bottom) / 2.0,
            (self.right - self.left) / 2.0 + by,
            (self.bottom - self.top) / 2.0 + by,
        )
    }

    pub fn within(&self, area: &Rect) -> bool {
        self.left >= area.left
            && self.right <= area.right
            && self.top >= area.top
            && self.bottom <= area.bottom
    }
}

/// Which end of a label's text its point is (SVG's `text-anchor`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Anchor {
    Start,
    Middle,
    End,
}

impl Anchor {
    fn attribute(self) -> &'static str {
        match self {
            Anchor::Start => "start",
            Anchor::Middle => "middle",
            Anchor::End => "end",
        }
    }

    /// The box of a `width` × `height` text anchored at `(x, y)`, centred
    /// on `y` (`dominant-baseline="central"`).
    fn bounds(self, x: f64, y: f64, width: f64, height: f64) -> Rect {
        let left = match self {
            Anchor::Start => x,
            Anchor::Middle => x - width / 2.0,
            Anchor::End => x - width,
        };
        Rect {
            left,
            top: y - height / 2.0,
            right: left + width,
            bottom: y + height / 2.0,
        }
    }
}

/// The widest a character of a bot's name is in the common sans-serif fonts
/// (DejaVu Sans, the widest; Liberation Sans, Arial, Helvetica are
/// narrower), in ems. Names are ASCII (`check_name`); anything else counts
/// an em.
fn char_ems(c: char) -> f64 {
    match c {
        'i' | 'j' | 'l' | 'I' | 'J' | '.' | ',' | ':' | ';' | '\'' | '!' | '|' | ' ' => 0.34,
        'f' | 'r' | 't' | '-' | '(' | ')' | '[' | ']' | '/' => 0.45,
        '_' => 0.52,
        'm' | 'w' | 'M' | 'W' => 1.0,
        'a'..='z' | '0'..='9' => 0.64,
        'A'..='Z' => 0.8,
        _ => 1.0,
    }
}

/// How wide `text` is at most, set at `font` SVG units.
pub fn text_width(text: &str, font: f64) -> f64 {
    text.chars().map(char_ems).sum::<f64>() * font
}

/// A label to place: the centre and radius of the point it names, and its
/// text.
#[derive(Clone, Copy, Debug)]
pub struct Wanted<'a> {
    pub x: f64,
    pub y: f64,
    pub radius: f64,
    pub text: &'a str,
}

/// A label placed: which of the wanted it is, its anchor and the box its
/// text fills at most.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Placed {
    pub index: usize,
    pub x: f64,
    pub y: f64,
    pub anchor: Anchor,
    pub bounds: Rect,
}

/// Where the labels go, taken in order: each beside its point (left, above,
/// right or below, [`LABEL_GAP`] off its circle), inside `area`, at least
/// [`LABEL_GAP`] from every label placed before it, over none of
/// `keep_clear`, and over as few of `avoid` as any such place. A label with
/// no such place is left out: its point still names its bot on hover, and
/// the table below the chart lists it. So no two labels ever overlap,
/// however crowded the chart; their boxes are estimated from the font size
/// and [`text_width`].
pub fn place_labels(
    wanted: &[Wanted<'_>],
    font: f64,
    area: Rect,
    keep_clear: &[Rect],
    avoid: &[Rect],
) -> Vec<Placed> {
    let height = LABEL_HEIGHT_EM * font;
    let mut placed: Vec<Placed> = Vec::new();
    for (index, label) in wanted.iter().enumerate() {
        let width = text_width(label.text, font);
        let reach = label.radius + LABEL_GAP;
        let (x, y) = (label.x, label.y);
        let above = y - reach - height / 2.0;
        let below = y + reach + height / 2.0;
        // Left and above first: the frontier's steps leave each of its bots
        // to the right and come up to it from below.
        let candidates = [
            (Anchor::End, x - reach, y),
            (Anchor::Middle, x, above),
            (Anchor::End, x, above),
            (Anchor::Start, x, above),
            (Anchor::Start, x + reach, y),
            (Anchor::Middle, x, below),
            (Anchor::End, x, below),
            (Anchor::Start, x, below),
        ];
        let best = candidates
            .into_iter()
            .filter_map(|(anchor, at_x, at_y)| {
                let bounds = anchor.bounds(at_x, at_y, width, height);
                let clear = bounds.within(&area)
                    && placed
                        .iter()
                        .all(|other| !bounds.grown(LABEL_GAP).overlaps(&other.bounds))
                    && !keep_clear.iter().any(|kept| kept.overlaps(&bounds));
                if !clear {
                    return None;
                }
                let covered = avoid.iter().filter(|what| what.overlaps(&bounds)).count();
                Some((covered, anchor, at_x, at_y, bounds))
            })
            // The first of the least covered.
            .min_by_key(|&(covered, ..)| covered);
        if let Some((_, anchor, at_x, at_y, bounds)) = best {
            placed.push(Placed {
                index,
                x: at_x,
                y: at_y,
                anchor,
                bounds,
            });
        }
    }
    placed
}

#[cfg(test)]
mod tests {
    use super::*;

    fn point(season: &str, version: i64, rating: f64) -> HistoryPoint {
        HistoryPoint {
            match_id: format!("m{rating}"),
            season: season.to_owned(),
            version,
            at_ms: 0,
            rating,
            deviation: 50.0,
        }
    }

    #[test]
    fn one_circle_per_rated_match_and_a_line_per_boundary() {
        let points = vec![
            point("s1", 1, 1500.0),
            point("s1", 1, 1520.0),
            point("s1", 2, 1510.0),
            point("s2", 2, 1490.0),
        ];
        let svg = rating_chart(&points, "alpha <rating>").expect("drawn");
        assert!(svg.starts_with("<svg id=\"rating-chart\""), "{svg}");
        assert!(svg.contains("alpha &lt;rating&gt;"));
        assert_eq!(svg.matches("<circle").count(), 4);
        assert!(svg.contains("season s2"), "{svg}");
        assert!(svg.contains("\nv2\n"), "{svg}");
        assert_eq!(
            boundaries(&points)
                .iter()
                .map(|b| (b.index, b.season_began))
                .collect::<Vec<_>>(),
            [(2, false), (3, true)]
        );
        assert_eq!(rating_chart(&[], "none"), None);
    }

    #[test]
    fn the_frontier_keeps_what_nothing_beats_on_both_counts() {
        // The points, then the indices on the frontier, cheapest first.
        type Case<'a> = (&'a [(f64, f64)], &'a [usize]);
        let table: [Case<'_>; 6] = [
            (&[], &[]),
            (&[(0.0, 1500.0)], &[0]),
            // Cheaper and better beats dearer and worse.
            (&[(10.0, 1400.0), (0.0, 1500.0)], &[1]),
            // A dearer bot is on it only when it is better.
            (
                &[
                    (0.0, 1400.0),
                    (50.0, 1500.0),
                    (20.0, 1450.0),
                    (30.0, 1420.0),
                ],
                &[0, 2, 1],
            ),
            // At one cost only the best; at one rating only the cheapest.
            (&[(5.0, 1400.0), (5.0, 1450.0), (9.0, 1450.0)], &[1]),
            // Points that are not numbers are never on it.
            (
                &[(f64::NAN, 1600.0), (1.0, f64::INFINITY), (2.0, 1300.0)],
                &[2],
            ),
        ];
        for (points, expected) in table {
            assert_eq!(frontier(points), expected, "{points:?}");
        }
    }

    fn cost_point(
        bot: &str,
        tokens_per_match: f64,
        conservative: f64,
        on_frontier: bool,
    ) -> CostPoint {
        CostPoint {
            bot: bot.to_owned(),
            tokens_per_match,
            conservative,
            on_frontier,
        }
    }

    /// The chart's bot names: each `<text>` of its names group, with its
    /// anchor point and anchor, as `draw_cost` wrote them.
    fn names(svg: &str) -> Vec<(String, f64, f64, Anchor)> {
        let Some(start) = svg.find("<g class=\"names\"") else {
            return Vec::new();
        };
        let group = &svg[start..];
        let group = &group[..group.find("</g>").expect("the names group ends")];
        let attribute = |text: &str, name: &str| -> String {
            let from = text
                .find(&format!(" {name}=\""))
                .unwrap_or_else(|| panic!("{name} in {text}"))
                + name.len()
                + 3;
            text[from..from + text[from..].find('"').expect("quoted")].to_owned()
        };
        group
            .split("<text")
            .skip(1)
            .map(|text| {
                let name = &text
                    [text.find('>').expect("a tag") + 1..text.find("</text>").expect("closed")];
                let anchor = match attribute(text, "text-anchor").as_str() {
                    "start" => Anchor::Start,
                    "middle" => Anchor::Middle,
                    "end" => Anchor::End,
                    other => panic!("anchor {other}"),
                };
                (
                    name.replace("&lt;", "<")
                        .replace("&gt;", ">")
                        .replace("&amp;", "&"),
                    attribute(text, "x").parse().expect("x"),
                    attribute(text, "y").parse().expect("y"),
                    anchor,
                )
            })
            .collect()
    }

    #[test]
    fn the_cost_chart_draws_every_bot_and_names_the_frontier() {
        let points = vec![
            cost_point("cheap <one>", 0.0, 1400.0, true),
            cost_point("dear", 900.0, 1550.0, true),
            cost_point("wasteful", 1200.0, 1450.0, false),
        ];
        let svg = cost_chart(&points, "light", "cost-light").expect("drawn");
        assert!(
            svg.starts_with("<svg id=\"cost-light\" class=\"cost-chart\""),
            "{svg}"
        );
        // It scales to its figure: the page sets its width, the viewBox keeps
        // every point in it.
        assert!(svg.contains("viewBox=\"0 0 600 400\""), "{svg}");
        assert!(svg.trim_end().ends_with("</svg>"), "{svg}");
        assert_eq!(svg.matches("<circle").count(), 3);
        // Every point names its bot on hover; names are escaped.
        for hover in [
            "<title>cheap &lt;one&gt;</title>",
            "<title>dear</title>",
            "<title>wasteful</title>",
        ] {
            assert!(svg.contains(hover), "{hover} in {svg}");
        }
        assert!(svg.contains("<polyline"), "the frontier is drawn: {svg}");
        // Only the frontier is named on the chart.
        let mut named: Vec<String> = names(&svg).into_iter().map(|name| name.0).collect();
        named.sort();
        assert_eq!(named, ["cheap <one>", "dear"], "{svg}");
        assert_eq!(cost_chart(&[], "none", "x"), None);
    }

    #[test]
    fn a_crowded_cost_chart_names_a_few_bots_apart_and_stays_small() {
        // 1,000 bots in a narrow band, 60 of them on a frontier whose steps
        // are a few units apart: the chart names at most COST_CHART_LABELS,
        // none over another.
        let points: Vec<CostPoint> = (0..1_000)
            .map(|at| {
                let on_frontier = at % 17 == 0 && at < 17 * 60;
                let tokens = f64::from(at) * 3.0;
                let rating = if on_frontier {
                    1400.0 + f64::from(at) / 10.0
                } else {
                    1390.0 + f64::from(at % 97)
                };
                cost_point(
                    &format!("Bot-Wm_{at:04}-very-long-name"),
                    tokens,
                    rating,
                    on_frontier,
                )
            })
            .collect();
        let svg = cost_chart(&points, "light", "cost-light").expect("drawn");
        assert_eq!(svg.matches("<circle").count(), points.len());
        assert_eq!(svg.matches("<title>").count(), points.len());
        let labels = names(&svg);
        assert!(!labels.is_empty(), "{svg}");
        assert!(labels.len() <= COST_CHART_LABELS, "{}", labels.len());
        let height = LABEL_HEIGHT_EM * COST_FONT;
        let boxes: Vec<Rect> = labels
            .iter()
            .map(|(name, x, y, anchor)| {
                assert!(name.chars().count() <= COST_CHART_LABEL_CHARS, "{name}");
                assert!(name.ends_with('…'), "a long name is cut: {name}");
                anchor.bounds(*x, *y, text_width(name, COST_FONT), height)
            })
            .collect();
        for (at, one) in boxes.iter().enumerate() {
            for other in &boxes[at + 1..] {
                assert!(!one.overlaps(other), "{one:?} and {other:?}");
            }
        }
        // Under 100 bytes a bot with its 26-byte name: plotters' own circles,
        // nameless, were about 90.
        assert!(svg.len() < 100_000, "{} bytes", svg.len());
    }

    #[test]
    fn token_ticks_are_whole_and_short() {
        for (tokens, tick) in [
            (0.0, "0"),
            (0.5, ""),
            (-20.0, ""),
            (800.0, "800"),
            (2500.0, "2500"),
            (10_000.0, "10k"),
            (12_500.0, "12.5k"),
            (200_000.0, "200k"),
            (1_000_000.0, "1M"),
            (1_500_000.0, "1.5M"),
        ] {
            assert_eq!(tokens_tick(tokens), tick, "{tokens}");
        }
    }

    /// Many crowded charts, drawn at random: no two labels' boxes come
    /// within `LABEL_GAP` of each other, none covers a point kept clear, each
    /// is inside the plot and beside its point, and the first is always
    /// placed when its text fits half the plot's width.
    #[test]
    fn placed_labels_never_overlap_however_crowded() {
        use duel_ladder_testkit::rng::SplitMix64;

        const NAME_BYTES: &[u8] =
            b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.";
        let area = Rect {
            left: 84.0,
            top: 12.0,
            right: 588.0,
            bottom: 338.0,
        };
        let mut rng = SplitMix64::new(49);
        let mut placed_with_kept = 0;
        for case in 0..3_000 {
            let count = 1 + rng.below(40) as usize;
            // The points in a box as small as 4 units, anywhere in the plot.
            let across = 4.0 + rng.below(500) as f64;
            let down = 4.0 + rng.below(322) as f64;
            let left = area.left + rng.below((area.right - area.left - across) as u64 + 1) as f64;
            let top = area.top + rng.below((area.bottom - area.top - down) as u64 + 1) as f64;
            let texts: Vec<String> = (0..count)
                .map(|_| {
                    let length = 1 + rng.below(COST_CHART_LABEL_CHARS as u64) as usize;
                    // One name in four of the widest letter only.
                    let wide = rng.below(4) == 0;
                    (0..length)
                        .map(|_| {
                            if wide {
                                'W'
                            } else {
                                char::from(NAME_BYTES[rng.below(NAME_BYTES.len() as u64) as usize])
                            }
                        })
                        .collect()
                })
                .collect();
            let wanted: Vec<Wanted<'_>> = texts
                .iter()
                .map(|text| Wanted {
                    x: left + rng.below(across as u64 + 1) as f64,
                    y: top + rng.below(down as u64 + 1) as f64,
                    radius: FRONTIER_RADIUS,
                    text,
                })
                .collect();
            let circles: Vec<Rect> = wanted
                .iter()
                .map(|point| Rect::around(point.x, point.y, point.radius + 1.0, point.radius + 1.0))
                .collect();
            // Every point only avoided, then half of them kept clear, as the
            // frontier's are.
            for kept in [0, count / 2] {
                let (keep_clear, avoid) = circles.split_at(kept);
                let placed = place_labels(&wanted, COST_FONT, area, keep_clear, avoid);
                for (at, label) in placed.iter().enumerate() {
                    assert!(label.bounds.within(&area), "case {case}: {label:?}");
                    assert!(
                        keep_clear
                            .iter()
                            .all(|clear| !clear.overlaps(&label.bounds)),
                        "case {case}: {label:?} covers a point kept clear"
                    );
                    let point = &wanted[label.index];
                    assert!(
                        label.bounds.right - label.bounds.left
                            >= text_width(point.text, COST_FONT) - 1e-9,
                        "case {case}: {label:?}"
                    );
                    // Beside its point: its box is the gap off the circle.
                    let dx = (label.bounds.left - point.x)
                        .max(point.x - label.bounds.right)
                        .max(0.0);
                    let dy = (label.bounds.top - point.y)
                        .max(point.y - label.bounds.bottom)
                        .max(0.0);
                    let distance = dx.hypot(dy);
                    assert!(
                        (point.radius..=point.radius + LABEL_GAP + 1e-9).contains(&distance),
                        "case {case}: {label:?} is {distance} from {point:?}"
                    );
                    for other in &placed[at + 1..] {
                        assert!(other.index > label.index, "case {case}");
                        assert!(
                            !label.bounds.grown(LABEL_GAP - 1e-9).overlaps(&other.bounds),
                            "case {case}: {label:?} and {other:?}"
                        );
                    }
                }
                if kept == 0 {
                    if text_width(&texts[0], COST_FONT) <= (area.right - area.left) / 2.0 {
                        assert_eq!(
                            placed.first().map(|label| label.index),
                            Some(0),
                            "case {case}"
                        );
                    }
                } else {
                    placed_with_kept += placed.len();
                }
            }
        }
        // Crowded, yet not bare: about 20 points a chart, half of them kept
        // clear, and (with seed 49) 10.1 of them named on average.
        assert!(placed_with_kept > 3_000 * 8, "{placed_with_kept}");
    }

    #[test]
    fn labels_apart_are_all_placed() {
        let area = Rect {
            left: 0.0,
            top: 0.0,
            right: 600.0,
            bottom: 400.0,
        };
        let texts = ["alpha", "beta", "gamma", "delta", "epsilon"];
        let wanted: Vec<Wanted<'_>> = texts
            .iter()
            .enumerate()
            .map(|(at, text)| Wanted {
                x: 100.0 + 100.0 * at as f64,
                y: 350.0 - 70.0 * at as f64,
                radius: FRONTIER_RADIUS,
                text,
            })
            .collect();
        let placed = place_labels(&wanted, COST_FONT, area, &[], &[]);
        assert_eq!(
            placed.iter().map(|label| label.index).collect::<Vec<_>>(),
            [0, 1, 2, 3, 4]
        );
        // Left of its point, the first choice, when nothing is in the way.
        assert!(
            placed
                .iter()
                .all(|label| label.anchor == Anchor::End && label.y == wanted[label.index].y)
        );
    }
}

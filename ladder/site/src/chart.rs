//! The rating-history chart of a bot's page, drawn on the server as SVG.
//!
//! plotters draws it (its SVG backend, no font files: labels are `<text>`
//! elements the browser sets), so axes, ticks and scaling come from a
//! maintained library instead of hand-written path strings. The chart has one
//! circle per rated match, the rating line through them, a band of ±RD, a
//! solid vertical line where a season begins and a dashed one where a new
//! version of the bot first played. The cost page's chart puts each bot of a
//! class at its tokens per match against its rating − 2·RD, and draws the
//! frontier: the bots nothing beats on both counts.

use plotters::coord::Shift;
use plotters::prelude::*;

use crate::limits::COST_CHART_NAMED_BOTS;
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
    svg_element("id=\"rating-chart\"", title, |root| draw(root, points))
}

/// What `draw` paints, as an `<svg>` element (no XML prologue) with
/// `attributes`, its role and `title` as its label; `None` when plotters
/// refused (logged).
fn svg_element(
    attributes: &str,
    title: &str,
    draw: impl FnOnce(&DrawingArea<SVGBackend<'_>, Shift>) -> DrawResult,
) -> Option<String> {
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (CHART_WIDTH_PX, CHART_HEIGHT_PX))
            .into_drawing_area();
        if let Err(error) = draw(&root) {
            tracing::warn!(%error, "a chart could not be drawn");
            return None;
        }
        root.present().ok()?;
    }
    let start = svg.find("<svg")?;
    let body = &svg[start + "<svg".len()..];
    Some(format!(
        "<svg {attributes} role=\"img\" aria-label=\"{}\"{body}",
        escape_attribute(title)
    ))
}

fn escape_attribute(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('"', "&quot;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

type DrawResult = Result<(), DrawingAreaErrorKind<std::io::Error>>;

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
    let mut chart = ChartBuilder::on(root)
        .margin(12)
        .x_label_area_size(32)
        .y_label_area_size(48)
        .build_cartesian_2d(0.5..count + 0.5, low..high)?;
    chart
        .configure_mesh()
        .x_desc("rated match")
        .y_desc("rating")
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

/// The cost chart of one class as an `<svg>` element, or `None` when there
/// is nothing to draw or plotters refused.
pub fn cost_chart(points: &[CostPoint], title: &str, id: &str) -> Option<String> {
    if points.is_empty() {
        return None;
    }
    let attributes = format!("id=\"{}\" class=\"cost-chart\"", escape_attribute(id));
    svg_element(&attributes, title, |root| draw_cost(root, points))
}

fn draw_cost(root: &DrawingArea<SVGBackend<'_>, Shift>, points: &[CostPoint]) -> DrawResult {
    root.fill(&WHITE)?;
    let most = points
        .iter()
        .map(|point| point.tokens_per_match)
        .fold(0.0, f64::max);
    let right = (most * 1.1).max(1.0);
    let low = points
        .iter()
        .map(|point| point.conservative)
        .fold(f64::INFINITY, f64::min);
    let high = points
        .iter()
        .map(|point| point.conservative)
        .fold(f64::NEG_INFINITY, f64::max);
    let pad = ((high - low) * 0.1).max(20.0);
    let mut chart = ChartBuilder::on(root)
        .margin(12)
        .x_label_area_size(32)
        .y_label_area_size(48)
        .build_cartesian_2d(-right * 0.03..right, low - pad..high + pad)?;
    chart
        .configure_mesh()
        .x_desc("model tokens per match")
        .y_desc("rating − 2·RD")
        // Whole tokens only: a class that spent none has the axis 0 to 1,
        // whose fractional ticks would all read 0.
        .x_label_formatter(&|x| {
            if (x - x.round()).abs() < 1e-6 {
                format!("{x:.0}")
            } else {
                String::new()
            }
        })
        .y_label_formatter(&|y| format!("{y:.0}"))
        .light_line_style(WHITE)
        .draw()?;
    // The frontier as steps: from each bot on it, level to the next one's cost.
    let mut on: Vec<&CostPoint> = points.iter().filter(|point| point.on_frontier).collect();
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
    chart.draw_series(LineSeries::new(steps, VERSION.stroke_width(2)))?;
    let name_all = points.len() <= COST_CHART_NAMED_BOTS;
    for point in points {
        let at = (point.tokens_per_match, point.conservative);
        let color = if point.on_frontier { VERSION } else { LINE };
        chart.draw_series(std::iter::once(Circle::new(at, 4, color.filled())))?;
        if !name_all && !point.on_frontier {
            continue;
        }
        chart.draw_series(std::iter::once(Text::new(
            point.bot.clone(),
            at,
            ("sans-serif", 13).into_font().color(&SEASON),
        )))?;
    }
    Ok(())
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

    #[test]
    fn the_cost_chart_draws_every_bot_and_the_frontier() {
        let points = vec![
            CostPoint {
                bot: "cheap <one>".to_owned(),
                tokens_per_match: 0.0,
                conservative: 1400.0,
                on_frontier: true,
            },
            CostPoint {
                bot: "dear".to_owned(),
                tokens_per_match: 900.0,
                conservative: 1550.0,
                on_frontier: true,
            },
            CostPoint {
                bot: "wasteful".to_owned(),
                tokens_per_match: 1200.0,
                conservative: 1450.0,
                on_frontier: false,
            },
        ];
        let svg = cost_chart(&points, "light", "cost-light").expect("drawn");
        assert!(
            svg.starts_with("<svg id=\"cost-light\" class=\"cost-chart\""),
            "{svg}"
        );
        assert_eq!(svg.matches("<circle").count(), 3);
        assert!(
            svg.contains("cheap &lt;one&gt;"),
            "names are escaped: {svg}"
        );
        assert!(svg.contains("<polyline"), "the frontier is drawn: {svg}");
        assert_eq!(cost_chart(&[], "none", "x"), None);
        // A crowded class names only the bots on its frontier.
        let crowded: Vec<CostPoint> = (0..=COST_CHART_NAMED_BOTS)
            .map(|at| CostPoint {
                bot: format!("bot-{at}"),
                tokens_per_match: at as f64,
                conservative: 1500.0 - at as f64,
                on_frontier: at == 0,
            })
            .collect();
        let svg = cost_chart(&crowded, "light", "cost-light").expect("drawn");
        assert_eq!(svg.matches("<circle").count(), crowded.len());
        let named = |bot: &str| svg.lines().any(|line| line.trim() == bot);
        assert!(named("bot-0"), "{svg}");
        assert!(!named("bot-1"), "{svg}");
    }
}

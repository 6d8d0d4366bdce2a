//! `--plot-timeline`: every request of a run as one row of a timeline, as vLLM draws it with
//! plotly (`<result>.timeline.html`): a TTFT bar from the request's start to its first token,
//! then one bar per inter-token gap, coloured by the ITL thresholds (`--timeline-itl-thresholds`,
//! ms): below the first green, between orange, at or above the second red. Times are seconds
//! from the earliest start. One self-contained HTML page of inline SVG (no script, no network);
//! hovering a row shows the request's tokens and times. Consecutive gaps of one colour are
//! drawn as one bar (the picture is the same, the page much smaller).

use std::fmt::Write as _;

use servebench_core::metrics::RequestTimes;
use servebench_core::record::{Outcome, RequestRecord};

use super::svg::{esc, fmt_tick, nice_ticks};

/// vLLM's colours: TTFT, then the three ITL classes.
pub const TTFT_COLOR: &str = "#636EFA";
pub const ITL_COLORS: [&str; 3] = ["#109618", "#FF7F0E", "#D62728"];

/// One drawn request: its row label, times (s from the earliest start) and bars.
#[derive(Debug, Clone, PartialEq)]
pub struct TimelineRow {
    pub index: u64,
    pub start_s: f64,
    pub end_s: f64,
    pub prompt_tokens: u32,
    pub output_tokens: u32,
    /// `(start_s, end_s, class)`: class 0 = TTFT, 1..=3 = the ITL classes.
    pub bars: Vec<(f64, f64, u8)>,
}

/// The ITL class (1, 2 or 3) of a gap of `ms`.
fn itl_class(ms: f64, thresholds: (f64, f64)) -> u8 {
    if ms < thresholds.0 {
        1
    } else if ms < thresholds.1 {
        2
    } else {
        3
    }
}

/// The rows of the completed requests of `records` (index order), and the count of ITL gaps per
/// class (`[below, between, above]`). Requests without a first token are not drawn.
pub fn timeline_rows(records: &[RequestRecord], thresholds_ms: (f64, f64)) -> (Vec<TimelineRow>, [u64; 3]) {
    let mut recs: Vec<&RequestRecord> = records
        .iter()
        .filter(|r| {
            r.outcome == Outcome::Completed && r.dispatched_us.is_some() && r.first_token_us.is_some()
        })
        .collect();
    recs.sort_by_key(|r| r.index);
    let t0 = recs.iter().filter_map(|r| r.dispatched_us).min().unwrap_or(0);
    let s = |us: u64| us.saturating_sub(t0) as f64 / 1e6;
    let mut counts = [0u64; 3];
    let rows = recs
        .iter()
        .map(|r| {
            let (start, first) = (r.dispatched_us.unwrap_or(t0), r.first_token_us.unwrap_or(t0));
            let mut bars = vec![(s(start), s(first), 0u8)];
            let mut at = first;
            for &gap in &r.token_events.gaps_us {
                let class = itl_class(f64::from(gap) / 1000.0, thresholds_ms);
                counts[usize::from(class - 1)] += 1;
                let end = at + u64::from(gap);
                match bars.last_mut() {
                    Some(last) if last.2 == class => last.1 = s(end),
                    _ => bars.push((s(at), s(end), class)),
                }
                at = end;
            }
            let times = RequestTimes::of(r);
            TimelineRow {
                index: r.index,
                start_s: s(start),
                end_s: s(start + times.e2el_us.unwrap_or(at - start)),
                prompt_tokens: r.prompt_tokens,
                output_tokens: times.output_tokens,
                bars,
            }
        })
        .collect();
    (rows, counts)
}

/// The ITL labels of vLLM's legend.
fn labels(t: (f64, f64)) -> [String; 3] {
    [
        format!("ITL < {:.0}ms", t.0),
        format!("{:.0}ms ≤ ITL < {:.0}ms", t.0, t.1),
        format!("ITL ≥ {:.0}ms", t.1),
    ]
}

/// The timeline page style (`assets/timeline.css`, included at build time).
const CSS: &str = include_str!("assets/timeline.css");

/// The timeline page of one run. `about` heads the table; deterministic.
pub fn timeline_report(
    title: &str,
    about: &[(String, String)],
    records: &[RequestRecord],
    thresholds_ms: (f64, f64),
) -> String {
    let (rows, counts) = timeline_rows(records, thresholds_ms);
    let labels = labels(thresholds_ms);
    let mut o = String::with_capacity(4096 + rows.len() * 200);
    let _ = write!(
        o,
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>{t}</title><style>{CSS}</style>\
         </head>\n<body><main>\n<h1>{t}</h1>\n<p class=\"sub\">Every completed request as one row (Req 0 at the top): \
         TTFT from its start to its first token, then its inter-token gaps coloured by the ITL thresholds. Time in \
         seconds from the earliest start. Hover a row for its tokens and times.</p>\n<table>",
        t = esc(title)
    );
    let mut table: Vec<(String, String)> = about.to_vec();
    table.push(("requests drawn".into(), rows.len().to_string()));
    table.push(("requests not drawn (no token)".into(), (records.len() - rows.len()).to_string()));
    for (label, n) in labels.iter().zip(counts) {
        table.push((format!("gaps {label}"), n.to_string()));
    }
    for (k, v) in &table {
        let _ = write!(o, "<tr><td>{}</td><td>{}</td></tr>", esc(k), esc(v));
    }
    o.push_str("</table>\n<p class=\"legend\">");
    let legend =
        std::iter::once(("TTFT".to_string(), TTFT_COLOR)).chain(labels.iter().cloned().zip(ITL_COLORS));
    for (label, color) in legend {
        let _ = write!(o, "<span><i class=\"sw\" style=\"background:{color}\"></i>{}</span>", esc(&label));
    }
    o.push_str("</p>\n");
    svg(&mut o, &rows);
    o.push_str("<footer class=\"sub\">Generated by servebench. Self-contained. docs/reports.md.</footer>\n</main></body></html>\n");
    o
}

/// The timeline itself: one row per request, a time axis at the bottom.
fn svg(o: &mut String, rows: &[TimelineRow]) {
    if rows.is_empty() {
        o.push_str("<p>no data: no request completed</p>\n");
        return;
    }
    let (left, right, top, width) = (70.0, 30.0, 10.0, 1400.0);
    let row_h = (800.0 / rows.len() as f64).clamp(2.0, 14.0);
    let plot_w = width - left - right;
    let height = top + rows.len() as f64 * row_h + 40.0;
    // The axis ends at a whole tick (1, 2 or 5 × 10^k s steps) at or after the last end.
    let (_, t_max, step) =
        nice_ticks(0.0, rows.iter().map(|r| r.end_s).fold(0.0, f64::max).max(1e-6), 10, false);
    let x = |t: f64| left + t / t_max * plot_w;
    let _ = write!(o, "<svg width=\"{width}\" height=\"{height:.0}\" viewBox=\"0 0 {width} {height:.0}\">");
    for (i, r) in rows.iter().enumerate() {
        let y = top + i as f64 * row_h;
        let _ = write!(
            o,
            "<g class=\"req\"><title>Req {}: prompt {} tokens, output {} tokens, start {:.3} s, end {:.3} s, TTFT {:.3} s</title>",
            r.index,
            r.prompt_tokens,
            r.output_tokens,
            r.start_s,
            r.end_s,
            r.bars[0].1 - r.bars[0].0
        );
        for &(a, b, class) in &r.bars {
            let color = if class == 0 { TTFT_COLOR } else { ITL_COLORS[usize::from(class - 1)] };
            let w = (x(b) - x(a)).max(0.5);
            let _ = write!(
                o,
                "<rect x=\"{:.2}\" y=\"{y:.2}\" width=\"{w:.2}\" height=\"{:.2}\" fill=\"{color}\"/>",
                x(a),
                (row_h * 0.8).max(1.0)
            );
        }
        o.push_str("</g>");
        if rows.len() <= 60 || i % (rows.len() / 20).max(1) == 0 {
            let _ = write!(
                o,
                "<text x=\"{:.0}\" y=\"{:.2}\" font-size=\"10\" text-anchor=\"end\">Req {}</text>",
                left - 4.0,
                y + row_h * 0.8,
                r.index
            );
        }
    }
    let axis_y = top + rows.len() as f64 * row_h + 4.0;
    let _ = write!(
        o,
        "<line x1=\"{left}\" x2=\"{:.0}\" y1=\"{axis_y:.1}\" y2=\"{axis_y:.1}\" stroke=\"#5b6472\"/>",
        left + plot_w
    );
    for k in 0..=(t_max / step).round() as u32 {
        let t = f64::from(k) * step;
        let _ = write!(
            o,
            "<text x=\"{:.1}\" y=\"{:.1}\" font-size=\"11\" text-anchor=\"middle\">{}</text>",
            x(t),
            axis_y + 16.0,
            fmt_tick(t, step)
        );
    }
    let _ = writeln!(
        o,
        "<text x=\"{:.0}\" y=\"{:.1}\" font-size=\"12\" text-anchor=\"middle\">time (s)</text></svg>",
        left + plot_w / 2.0,
        axis_y + 32.0
    );
}

#[cfg(test)]
mod tests {
    use super::*;
    use servebench_testkit::records::RecordBuilder;

    /// Request `index` sent at `start`, its first token `ttft` later, then one per gap; done
    /// with its last token.
    fn rec(index: u64, start: u64, ttft: u64, gaps: Vec<u32>) -> RequestRecord {
        let last = start + ttft + gaps.iter().map(|&g| u64::from(g)).sum::<u64>();
        RecordBuilder::new(index)
            .intended_at(start)
            .sent_at(start)
            .stream(start + ttft, &gaps)
            .done_at(last)
            .completed()
    }

    #[test]
    fn gaps_are_classed_by_the_thresholds_and_runs_of_one_class_merge() {
        // Gaps 10, 20 ms (green), 30 ms (orange), 60 ms (red), 5 ms (green).
        let r = rec(0, 1_000_000, 100_000, vec![10_000, 20_000, 30_000, 60_000, 5_000]);
        let (rows, counts) = timeline_rows(&[r], (25.0, 50.0));
        assert_eq!(counts, [3, 1, 1]);
        let bars = &rows[0].bars;
        let classes: Vec<u8> = bars.iter().map(|b| b.2).collect();
        assert_eq!(classes, [0, 1, 2, 3, 1]);
        assert_eq!((bars[0].0, bars[0].1), (0.0, 0.1));
        assert!((bars[1].1 - 0.13).abs() < 1e-9, "two green gaps merge: {bars:?}");
        assert!((rows[0].end_s - 0.225).abs() < 1e-9);
        // Exactly at a threshold is the upper class, as vLLM's `<` comparisons make it.
        assert_eq!(itl_class(25.0, (25.0, 50.0)), 2);
        assert_eq!(itl_class(50.0, (25.0, 50.0)), 3);
    }

    #[test]
    fn page_is_self_contained_and_skips_requests_without_tokens() {
        let mut failed = rec(2, 0, 1, vec![]);
        failed.outcome = Outcome::Failed;
        failed.first_token_us = None;
        let recs = [rec(1, 50_000, 20_000, vec![30_000]), rec(0, 0, 10_000, vec![1_000, 2_000]), failed];
        let html = timeline_report("t", &[("model".into(), "m".into())], &recs, (25.0, 50.0));
        assert!(html.contains("<td>requests drawn</td><td>2</td>"));
        assert!(html.contains("<td>requests not drawn (no token)</td><td>1</td>"));
        assert!(html.contains("ITL &lt; 25ms") && html.contains("25ms ≤ ITL &lt; 50ms"));
        assert_eq!(html.matches("<g class=\"req\">").count(), 2);
        // Index order: Req 0 is drawn first (at the top).
        assert!(html.find("<title>Req 0").unwrap() < html.find("<title>Req 1").unwrap());
        assert!(!html.contains("<script") && !html.contains("https://"));
        assert_eq!(html, timeline_report("t", &[("model".into(), "m".into())], &recs, (25.0, 50.0)));
        assert!(timeline_report("t", &[], &[], (25.0, 50.0)).contains("no data"));
    }

    /// Issue 23.13: the time axis used to be cut in tenths of the last end (ticks at 0.127-s
    /// steps, `0.000 … 1.270`) with the last label past the edge. Ticks are 1/2/5 × 10^k s steps
    /// labelled with the decimals the step needs, and the axis ends at a whole tick.
    #[test]
    fn time_axis_ticks_are_nice_steps() {
        let html = timeline_report("t", &[], &[rec(0, 0, 100_000, vec![1_170_000])], (25.0, 50.0));
        let ticks: Vec<&str> = html
            .split("text-anchor=\"middle\">")
            .skip(1)
            .filter_map(|t| t.split('<').next())
            .filter(|t| *t != "time (s)")
            .collect();
        let want: Vec<String> = (0..=13).map(|k| format!("{:.1}", f64::from(k) / 10.0)).collect();
        assert_eq!(ticks, want);
    }
}

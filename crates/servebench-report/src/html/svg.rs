//! A small SVG chart renderer: "nice" axes, lines, steps, dots, crosses and histograms, a legend.
//!
//! Output is deterministic (same input → same bytes), uses no external resources, and keeps the
//! markup compact: a whole series is one `<path>` (dots are zero-length round-capped segments).
//! Every series carries the classes `s run-N` so the page script can toggle runs and series.

use std::fmt::Write as _;

/// Colour per run (Okabe–Ito based, readable for common colour-vision deficiencies).
pub(crate) const PALETTE: [&str; 8] =
    ["#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#666666", "#332288"];

/// The colour of run `i` (cycles after eight runs).
pub(crate) fn run_color(i: usize) -> &'static str {
    PALETTE[i % PALETTE.len()]
}

const WIDTH: f64 = 720.0;
const LEFT: f64 = 70.0;
const RIGHT: f64 = 18.0;
const TOP: f64 = 14.0;
const PLOT_H: f64 = 280.0;
/// Space under the plot for tick labels and the axis label.
const X_AXIS_SPACE: f64 = 46.0;
const LEGEND_ROW: f64 = 20.0;
/// Average glyph width at the legend's 12 px font, for laying out legend rows.
const CHAR_W: f64 = 6.6;

/// How a series is stroked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Style {
    /// Solid (histograms: also lightly filled).
    Solid,
    /// Dashed.
    Dashed,
    /// Thick solid line drawn over scatter points (percentile lines).
    Bold,
    /// Thick dashed line drawn over scatter points.
    BoldDashed,
}

/// What a series draws.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Kind {
    /// Straight segments through the points.
    Line(Vec<(f64, f64)>),
    /// Step-after: each point's y holds until the next point's x.
    Step(Vec<(f64, f64)>),
    /// Round dots.
    Dots(Vec<(f64, f64)>),
    /// Small crosses (a second scatter series of the same run).
    Crosses(Vec<(f64, f64)>),
    /// Histogram outline: `edges.len() == values.len() + 1`.
    Hist { edges: Vec<f64>, values: Vec<f64> },
    /// Round dots, each with a text label beside it (sweep points: rate or concurrency); an
    /// empty label draws the dot alone.
    Labeled(Vec<(f64, f64, String)>),
}

impl Kind {
    fn points(&self) -> Box<dyn Iterator<Item = (f64, f64)> + '_> {
        match self {
            Kind::Line(p) | Kind::Step(p) | Kind::Dots(p) | Kind::Crosses(p) => Box::new(p.iter().copied()),
            Kind::Hist { edges, values } => Box::new(
                edges
                    .iter()
                    .zip(values.iter().chain(values.last()))
                    .map(|(&x, &y)| (x, y))
                    .chain(edges.first().map(|&x| (x, 0.0))),
            ),
            Kind::Labeled(p) => Box::new(p.iter().map(|q| (q.0, q.1))),
        }
    }

    fn is_empty(&self) -> bool {
        match self {
            Kind::Line(p) | Kind::Step(p) | Kind::Dots(p) | Kind::Crosses(p) => p.is_empty(),
            Kind::Hist { values, .. } => values.is_empty(),
            Kind::Labeled(p) => p.is_empty(),
        }
    }
}

/// One series of a chart.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Series {
    /// Index of the run it belongs to (colour and toggling).
    pub run: usize,
    /// Legend text.
    pub name: String,
    pub style: Style,
    pub kind: Kind,
}

/// An axis: its label (with unit) and optional fixed bounds.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct AxisSpec {
    pub label: String,
    /// Lower bound forced (e.g. 0); otherwise taken from the data.
    pub min: Option<f64>,
    /// Upper bound forced (e.g. 100 %); otherwise taken from the data.
    pub max: Option<f64>,
    /// Ticks at whole numbers only (counts).
    pub integer: bool,
    /// Logarithmic (base 10) axis over whole decades; values ≤ 0 sit on the lower edge.
    pub log: bool,
    /// Fitted to the data with [`FIT_PAD`] of its range on each side (never below 0 for
    /// non-negative data), instead of from a fixed bound: a 50–52 ms distribution fills the plot.
    pub fit: bool,
}

/// The share of the data range added on each side of a fitted axis.
const FIT_PAD: f64 = 0.05;

impl AxisSpec {
    /// An axis labelled `label` whose bounds come from the data.
    pub fn new(label: impl Into<String>) -> AxisSpec {
        AxisSpec { label: label.into(), ..AxisSpec::default() }
    }

    /// The same axis starting at 0.
    pub fn starting_at_zero(mut self) -> AxisSpec {
        self.min = Some(0.0);
        self
    }
}

/// A chart: title, caption, axes and series.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Chart {
    /// Element id (unique in the page), e.g. `ttft-cdf`.
    pub id: String,
    pub title: String,
    /// One-line explanation under the title (plain text).
    pub note: String,
    pub x: AxisSpec,
    pub y: AxisSpec,
    pub series: Vec<Series>,
}

/// Tick positions of a "nice" axis covering `[lo, hi]`: bounds rounded outwards to a multiple of
/// a step of 1, 2 or 5 × 10^k chosen to give about `target` intervals.
pub(crate) fn nice_ticks(lo: f64, hi: f64, target: usize, integer: bool) -> (f64, f64, f64) {
    let (mut lo, mut hi) =
        if lo.is_finite() && hi.is_finite() { (lo.min(hi), lo.max(hi)) } else { (0.0, 1.0) };
    if hi - lo < f64::EPSILON * hi.abs().max(1.0) * 16.0 {
        let pad = if lo == 0.0 { 1.0 } else { lo.abs() * 0.1 };
        lo -= if lo >= 0.0 && lo - pad < 0.0 { lo } else { pad };
        hi += pad;
    }
    let step = nice_round_step((hi - lo) / target.max(1) as f64);
    let step = if integer { step.max(1.0).round() } else { step };
    let nlo = (lo / step).floor() * step;
    let nhi = (hi / step).ceil() * step;
    (nlo, if nhi > nlo { nhi } else { nlo + step }, step)
}

/// The smallest 1, 2, 2.5 or 5 × 10^k step ≥ `raw` (raw > 0).
pub(crate) fn nice_step(raw: f64) -> f64 {
    if !(raw.is_finite() && raw > 0.0) {
        return 1.0;
    }
    let mag = 10f64.powf(raw.log10().floor());
    let f = raw / mag;
    let nf = if f <= 1.0 {
        1.0
    } else if f <= 2.0 {
        2.0
    } else if f <= 2.5 {
        2.5
    } else if f <= 5.0 {
        5.0
    } else {
        10.0
    };
    nf * mag
}

/// The 1, 2, 5 or 10 × 10^k step nearest to `raw` (axes: about the asked number of ticks).
pub(crate) fn nice_round_step(raw: f64) -> f64 {
    if !(raw.is_finite() && raw > 0.0) {
        return 1.0;
    }
    let mag = 10f64.powf(raw.log10().floor());
    let f = raw / mag;
    let nf = if f < 1.5 {
        1.0
    } else if f < 3.0 {
        2.0
    } else if f < 7.0 {
        5.0
    } else {
        10.0
    };
    nf * mag
}

/// A tick label: as many decimals as the step needs, no trailing noise, `k`/`M` for big values.
pub(crate) fn fmt_tick(v: f64, step: f64) -> String {
    let v = if v.abs() < step * 1e-9 { 0.0 } else { v };
    if step >= 1_000_000.0 && v.abs() >= 1_000_000.0 {
        return format!("{}M", fmt_tick(v / 1e6, step / 1e6));
    }
    if step >= 1000.0 && v.abs() >= 1000.0 && v.abs() >= 10_000.0 {
        return format!("{}k", fmt_tick(v / 1e3, step / 1e3));
    }
    // The fewest decimals that show the step exactly (2.5 → 1, 0.25 → 2, 20 → 0).
    let decimals: usize = (0..=6usize)
        .find(|&d| {
            let scaled = step * 10f64.powi(d as i32);
            (scaled - scaled.round()).abs() < 1e-6 * scaled.max(1.0)
        })
        .unwrap_or(6);
    format!("{v:.decimals$}")
}

/// Escapes text for HTML/SVG content and attribute values.
pub(crate) fn esc(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            _ => out.push(c),
        }
    }
    out
}

/// Map from data bounds to pixels (linear, or log10 for log axes).
#[derive(Debug, Clone, Copy)]
struct Scale {
    d0: f64,
    d1: f64,
    p0: f64,
    p1: f64,
    log: bool,
}

impl Scale {
    fn at(&self, v: f64) -> f64 {
        let (v, d0, d1) = if self.log {
            (v.max(self.d0).log10(), self.d0.log10(), self.d1.log10())
        } else {
            (v, self.d0, self.d1)
        };
        let span = d1 - d0;
        let t = if span > 0.0 { (v - d0) / span } else { 0.0 };
        // Clamp far-out values so paths stay small and finite (they are clipped anyway).
        self.p0 + t.clamp(-1.0, 2.0) * (self.p1 - self.p0)
    }
}

/// Bounds and ticks of one axis.
#[derive(Debug, Clone, PartialEq)]
struct AxisLayout {
    lo: f64,
    hi: f64,
    ticks: Vec<f64>,
    /// Spacing used to format tick labels (for log axes: per tick, see `tick_label`).
    step: f64,
    log: bool,
}

impl AxisLayout {
    fn label(&self, t: f64) -> String {
        if self.log {
            fmt_tick(t, t)
        } else {
            fmt_tick(t, self.step)
        }
    }
}

fn layout_axis(chart: &Chart, pick: impl Fn((f64, f64)) -> f64, spec: &AxisSpec) -> AxisLayout {
    let mut lo = f64::INFINITY;
    let mut hi = f64::NEG_INFINITY;
    for s in &chart.series {
        for p in s.kind.points() {
            let v = pick(p);
            if v.is_finite() && (!spec.log || v > 0.0) {
                lo = lo.min(v);
                hi = hi.max(v);
            }
        }
    }
    if spec.log {
        return log_layout(lo, hi);
    }
    if let Some(m) = spec.min {
        lo = m;
        hi = hi.max(m);
    }
    if let Some(m) = spec.max {
        hi = m;
        lo = lo.min(m);
    }
    if !(lo.is_finite() && hi.is_finite()) {
        (lo, hi) = (spec.min.unwrap_or(0.0), spec.max.unwrap_or(1.0));
    }
    // A little headroom so markers on the extremes are not cut by the plot edge.
    let has_markers =
        chart.series.iter().any(|s| matches!(s.kind, Kind::Dots(_) | Kind::Crosses(_) | Kind::Step(_)));
    // Point labels sit up and to the right of their dot: more room there.
    let labeled = chart.series.iter().any(|s| matches!(s.kind, Kind::Labeled(_)));
    let pad = if spec.fit {
        ((hi - lo) * FIT_PAD).max(hi.abs() * 1e-3)
    } else if labeled {
        (hi - lo) * 0.1
    } else if has_markers {
        (hi - lo) * 0.02
    } else {
        0.0
    };
    if spec.max.is_none() {
        hi += pad;
    }
    if spec.min.is_none() {
        lo = if spec.fit && lo >= 0.0 { (lo - pad).max(0.0) } else { lo - pad };
    }
    let (nlo, nhi, step) = nice_ticks(lo, hi, 6, spec.integer);
    // Forced bounds stay exact (e.g. 0–100 %).
    let lo = spec.min.map_or(nlo, |_| lo);
    let hi = spec.max.map_or(nhi, |_| hi.max(nlo + step));
    AxisLayout { lo, hi, ticks: linear_ticks(lo, hi, step), step, log: false }
}

/// A log10 axis over whole decades covering `[lo, hi]` (positive), ticks at 1, 2, 5 × 10^k
/// (only 1 × 10^k when it spans more than four decades).
fn log_layout(lo: f64, hi: f64) -> AxisLayout {
    let (lo, hi) = if lo.is_finite() && hi.is_finite() && lo > 0.0 { (lo, hi.max(lo)) } else { (1.0, 10.0) };
    let d0 = lo.log10().floor() as i32;
    let d1 = (hi.log10().ceil() as i32).max(d0 + 1);
    let (lo, hi) = (10f64.powi(d0), 10f64.powi(d1));
    let mults: &[f64] = if d1 - d0 > 4 { &[1.0] } else { &[1.0, 2.0, 5.0] };
    let mut ticks = Vec::new();
    for d in d0..=d1 {
        for m in mults {
            let t = m * 10f64.powi(d);
            if t <= hi * (1.0 + 1e-9) {
                ticks.push(t);
            }
        }
    }
    AxisLayout { lo, hi, ticks, step: lo, log: true }
}

fn linear_ticks(lo: f64, hi: f64, step: f64) -> Vec<f64> {
    let first = (lo / step - 1e-9).ceil();
    let last = (hi / step + 1e-9).floor();
    if !(first.is_finite() && last.is_finite()) || last - first > 100.0 {
        return vec![lo, hi];
    }
    (first as i64..=last as i64).map(|k| k as f64 * step).collect()
}

fn legend_rows(chart: &Chart) -> Vec<Vec<(usize, f64)>> {
    let usable = WIDTH - LEFT - RIGHT;
    let mut rows: Vec<Vec<(usize, f64)>> = Vec::new();
    let mut x = 0.0;
    for (i, s) in chart.series.iter().enumerate() {
        let w = 34.0 + s.name.chars().count() as f64 * CHAR_W;
        if rows.is_empty() || (x + w > usable && x > 0.0) {
            rows.push(Vec::new());
            x = 0.0;
        }
        if let Some(row) = rows.last_mut() {
            row.push((i, x));
        }
        x += w;
    }
    rows
}

fn dash_attr(style: Style) -> &'static str {
    match style {
        Style::Dashed | Style::BoldDashed => " stroke-dasharray=\"6 4\"",
        Style::Solid | Style::Bold => "",
    }
}

fn width_for(style: Style) -> &'static str {
    match style {
        Style::Bold | Style::BoldDashed => "2.6",
        Style::Solid | Style::Dashed => "1.6",
    }
}

/// Renders the chart as a `<figure>` holding the title, the note and the `<svg>`.
pub(crate) fn render(chart: &Chart) -> String {
    let xa = layout_axis(chart, |p| p.0, &chart.x);
    let ya = layout_axis(chart, |p| p.1, &chart.y);
    let (x0, x1, y0, y1) = (xa.lo, xa.hi, ya.lo, ya.hi);
    let pw = WIDTH - LEFT - RIGHT;
    let xs = Scale { d0: x0, d1: x1, p0: LEFT, p1: LEFT + pw, log: xa.log };
    let ys = Scale { d0: y0, d1: y1, p0: TOP + PLOT_H, p1: TOP, log: ya.log };
    let rows = legend_rows(chart);
    let height = TOP + PLOT_H + X_AXIS_SPACE + rows.len() as f64 * LEGEND_ROW + 6.0;
    let id = esc(&chart.id);
    let mut o = String::new();
    let _ = writeln!(
        o,
        "<figure class=\"chart\" id=\"{id}\"><figcaption><h3>{}</h3><p>{}</p></figcaption>",
        esc(&chart.title),
        esc(&chart.note)
    );
    let _ = writeln!(
        o,
        "<svg viewBox=\"0 0 {WIDTH} {height}\" role=\"img\" aria-label=\"{}\" data-x0=\"{x0}\" data-x1=\"{x1}\" \
         data-y0=\"{y0}\" data-y1=\"{y1}\" data-pl=\"{LEFT}\" data-pt=\"{TOP}\" data-pw=\"{pw}\" data-ph=\"{PLOT_H}\" \
         data-xl=\"{}\" data-yl=\"{}\"{}>",
        esc(&chart.title),
        esc(&chart.x.label),
        esc(&chart.y.label),
        if xa.log { " data-xlog=\"1\"" } else { "" }
    );
    let _ = write!(
        o,
        "<defs><clipPath id=\"clip-{id}\"><rect x=\"{LEFT}\" y=\"{TOP}\" width=\"{pw}\" height=\"{PLOT_H}\"/></clipPath></defs>\n\
         <rect class=\"plot\" x=\"{LEFT}\" y=\"{TOP}\" width=\"{pw}\" height=\"{PLOT_H}\"/>\n"
    );
    axes(&mut o, chart, (&xa, xs), (&ya, ys));
    plot_area(&mut o, chart, &id, xs, ys);
    legend(&mut o, chart, &rows);
    o.push_str("</svg></figure>\n");
    o
}

/// The grid, the tick labels and the axis labels.
fn axes(o: &mut String, chart: &Chart, (xa, xs): (&AxisLayout, Scale), (ya, ys): (&AxisLayout, Scale)) {
    let pw = WIDTH - LEFT - RIGHT;
    // Grid and tick labels.
    o.push_str("<g class=\"grid\">");
    for &t in &xa.ticks {
        let x = xs.at(t);
        let _ = write!(o, "<path d=\"M{x:.1} {TOP}V{:.1}\"/>", TOP + PLOT_H);
    }
    for &t in &ya.ticks {
        let y = ys.at(t);
        let _ = write!(o, "<path d=\"M{LEFT} {y:.1}H{:.1}\"/>", LEFT + pw);
    }
    o.push_str("</g>\n<g class=\"ticks\">");
    for &t in &xa.ticks {
        let _ = write!(
            o,
            "<text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\">{}</text>",
            xs.at(t),
            TOP + PLOT_H + 16.0,
            xa.label(t)
        );
    }
    for &t in &ya.ticks {
        let _ = write!(
            o,
            "<text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"end\">{}</text>",
            LEFT - 6.0,
            ys.at(t) + 4.0,
            ya.label(t)
        );
    }
    o.push_str("</g>\n");
    let _ = write!(
        o,
        "<text class=\"axis-label\" x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\">{}</text>\n\
         <text class=\"axis-label\" transform=\"translate(16 {:.1}) rotate(-90)\" text-anchor=\"middle\">{}</text>\n",
        LEFT + pw / 2.0,
        TOP + PLOT_H + 36.0,
        esc(&chart.x.label),
        TOP + PLOT_H / 2.0,
        esc(&chart.y.label)
    );
}

/// The series, clipped to the plot ("no data" when every series is empty).
fn plot_area(o: &mut String, chart: &Chart, id: &str, xs: Scale, ys: Scale) {
    let pw = WIDTH - LEFT - RIGHT;
    // Series: histograms and dots first, lines on top.
    let _ = writeln!(o, "<g clip-path=\"url(#clip-{id})\">");
    let mut order: Vec<usize> = (0..chart.series.len()).collect();
    order.sort_by_key(|&i| match chart.series[i].kind {
        Kind::Hist { .. } => 0,
        Kind::Dots(_) | Kind::Crosses(_) | Kind::Labeled(_) => 1,
        Kind::Line(_) | Kind::Step(_) => 2,
    });
    for i in order {
        series_path(o, &chart.series[i], i, xs, ys);
    }
    o.push_str("</g>\n");
    if chart.series.iter().all(|s| s.kind.is_empty()) {
        let _ = writeln!(
            o,
            "<text class=\"empty\" x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\">no data</text>",
            LEFT + pw / 2.0,
            TOP + PLOT_H / 2.0
        );
    }
}

fn series_path(o: &mut String, s: &Series, i: usize, xs: Scale, ys: Scale) {
    let color = run_color(s.run);
    let mut d = String::new();
    let mut labels = String::new();
    let (extra, fill) = match &s.kind {
        Kind::Labeled(p) => {
            for (x, y, text) in p.iter().filter(|p| p.0.is_finite() && p.1.is_finite()) {
                let (px, py) = (xs.at(*x), ys.at(*y));
                let _ = write!(d, "M{px:.1} {py:.1}h0");
                if text.is_empty() {
                    continue;
                }
                let _ = write!(
                    labels,
                    "<text x=\"{:.1}\" y=\"{:.1}\" font-size=\"10.5\" fill=\"{color}\">{}</text>",
                    px + 6.0,
                    py - 6.0,
                    esc(text)
                );
            }
            (" stroke-width=\"7\" stroke-linecap=\"round\"".to_string(), "none".to_string())
        }
        Kind::Line(p) => {
            for (k, &(x, y)) in p.iter().filter(|p| p.0.is_finite() && p.1.is_finite()).enumerate() {
                let _ = write!(d, "{}{:.1} {:.1}", if k == 0 { "M" } else { "L" }, xs.at(x), ys.at(y));
            }
            (format!(" stroke-width=\"{}\"{}", width_for(s.style), dash_attr(s.style)), "none".to_string())
        }
        Kind::Step(p) => {
            for (k, &(x, y)) in p.iter().filter(|p| p.0.is_finite() && p.1.is_finite()).enumerate() {
                if k == 0 {
                    let _ = write!(d, "M{:.1} {:.1}", xs.at(x), ys.at(y));
                } else {
                    let _ = write!(d, "H{:.1}V{:.1}", xs.at(x), ys.at(y));
                }
            }
            (format!(" stroke-width=\"{}\"{}", width_for(s.style), dash_attr(s.style)), "none".to_string())
        }
        Kind::Dots(p) => {
            for &(x, y) in p.iter().filter(|p| p.0.is_finite() && p.1.is_finite()) {
                let _ = write!(d, "M{:.1} {:.1}h0", xs.at(x), ys.at(y));
            }
            (
                " stroke-width=\"4\" stroke-linecap=\"round\" stroke-opacity=\"0.45\"".to_string(),
                "none".to_string(),
            )
        }
        Kind::Crosses(p) => {
            for &(x, y) in p.iter().filter(|p| p.0.is_finite() && p.1.is_finite()) {
                let _ = write!(d, "M{:.1} {:.1}l5 5m0-5l-5 5", xs.at(x) - 2.5, ys.at(y) - 2.5);
            }
            (" stroke-width=\"1.1\" stroke-opacity=\"0.6\"".to_string(), "none".to_string())
        }
        Kind::Hist { edges, values } => {
            let base = ys.at(ys.d0);
            if let Some(&e0) = edges.first() {
                let _ = write!(d, "M{:.1} {base:.1}", xs.at(e0));
                for (k, &v) in values.iter().enumerate() {
                    let x_end = edges.get(k + 1).copied().unwrap_or(e0);
                    let _ = write!(d, "V{:.1}H{:.1}", ys.at(v), xs.at(x_end));
                }
                let _ = write!(d, "V{base:.1}");
            }
            let fill = if s.style == Style::Solid {
                format!("{color}\" fill-opacity=\"0.16")
            } else {
                "none".into()
            };
            (format!(" stroke-width=\"1.4\"{}", dash_attr(s.style)), fill)
        }
    };
    let _ = writeln!(
        o,
        "<g class=\"s run-{}\" data-s=\"{i}\"><title>{}</title><path d=\"{d}\" fill=\"{fill}\" stroke=\"{color}\"{extra}/>{labels}</g>",
        s.run,
        esc(&s.name)
    );
}

fn legend(o: &mut String, chart: &Chart, rows: &[Vec<(usize, f64)>]) {
    let top = TOP + PLOT_H + X_AXIS_SPACE;
    o.push_str("<g class=\"legend\">");
    for (r, row) in rows.iter().enumerate() {
        let y = top + r as f64 * LEGEND_ROW + 8.0;
        for &(i, x) in row {
            let Some(s) = chart.series.get(i) else { continue };
            let color = run_color(s.run);
            let x = LEFT + x;
            let _ = write!(o, "<g class=\"li run-{}\" data-s=\"{i}\">", s.run);
            match s.kind {
                Kind::Dots(_) | Kind::Labeled(_) => {
                    let _ = write!(
                        o,
                        "<circle cx=\"{:.1}\" cy=\"{y:.1}\" r=\"3.5\" fill=\"{color}\"/>",
                        x + 10.0
                    );
                }
                Kind::Crosses(_) => {
                    let _ = write!(
                        o,
                        "<path d=\"M{:.1} {:.1}l7 7m0-7l-7 7\" stroke=\"{color}\" stroke-width=\"1.4\"/>",
                        x + 6.5,
                        y - 3.5
                    );
                }
                _ => {
                    let _ = write!(
                        o,
                        "<path d=\"M{x:.1} {y:.1}h22\" stroke=\"{color}\" stroke-width=\"{}\"{}/>",
                        width_for(s.style),
                        dash_attr(s.style)
                    );
                }
            }
            let _ = write!(o, "<text x=\"{:.1}\" y=\"{:.1}\">{}</text></g>", x + 28.0, y + 4.0, esc(&s.name));
        }
    }
    o.push_str("</g>\n");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nice_ticks_round_outwards() {
        assert_eq!(nice_ticks(0.0, 97.0, 6, false), (0.0, 100.0, 20.0));
        assert_eq!(nice_ticks(3.2, 7.9, 5, false), (3.0, 8.0, 1.0));
        assert_eq!(nice_ticks(0.0, 31.0, 6, false), (0.0, 35.0, 5.0));
        assert_eq!(nice_ticks(0.0, 3.0, 6, true), (0.0, 3.0, 1.0));
        let (lo, hi, step) = nice_ticks(5.0, 5.0, 6, false);
        assert!(lo <= 5.0 && hi > 5.0 && step > 0.0);
        assert_eq!(nice_ticks(f64::NAN, 1.0, 6, false).2, 0.2);
        assert_eq!(nice_round_step(5.17), 5.0);
        assert_eq!(nice_round_step(1.2), 1.0);
        assert_eq!(nice_step(0.037), 0.05);
        assert_eq!(nice_step(2.2), 2.5);
    }

    #[test]
    fn log_axes_cover_whole_decades() {
        let a = log_layout(0.03, 250.0);
        assert_eq!((a.lo, a.hi), (0.01, 1000.0));
        assert!(a.log && a.ticks.len() == 6, "{:?}", a.ticks);
        let b = log_layout(2.0, 30.0);
        assert_eq!(b.ticks, vec![1.0, 2.0, 5.0, 10.0, 20.0, 50.0, 100.0]);
        assert_eq!(b.label(0.02), "0.02");
        let s = Scale { d0: 1.0, d1: 100.0, p0: 0.0, p1: 200.0, log: true };
        assert!((s.at(10.0) - 100.0).abs() < 1e-9);
        assert_eq!(s.at(0.0), 0.0, "non-positive values sit on the lower edge");
        assert_eq!(log_layout(f64::INFINITY, 0.0).lo, 1.0);
    }

    #[test]
    fn tick_labels_use_needed_decimals() {
        assert_eq!(fmt_tick(0.30000000000000004, 0.1), "0.3");
        assert_eq!(fmt_tick(2.5, 2.5), "2.5");
        assert_eq!(fmt_tick(40.0, 20.0), "40");
        assert_eq!(fmt_tick(20_000.0, 5000.0), "20k");
        assert_eq!(fmt_tick(1e-12, 0.5), "0.0");
        assert_eq!(fmt_tick(0.25, 0.05), "0.25");
    }

    #[test]
    fn escapes_markup() {
        assert_eq!(esc("<a href=\"x\">&'"), "&lt;a href=&quot;x&quot;&gt;&amp;&#39;");
    }

    #[test]
    fn renders_every_kind_and_handles_empty_data() {
        let chart = Chart {
            id: "t".into(),
            title: "T".into(),
            note: "n".into(),
            x: AxisSpec::new("x (s)"),
            y: AxisSpec::new("y (ms)").starting_at_zero(),
            series: vec![
                Series {
                    run: 0,
                    name: "a".into(),
                    style: Style::Solid,
                    kind: Kind::Line(vec![(0.0, 1.0), (1.0, 2.0)]),
                },
                Series {
                    run: 1,
                    name: "b".into(),
                    style: Style::Dashed,
                    kind: Kind::Step(vec![(0.0, 1.0), (1.0, 2.0)]),
                },
                Series {
                    run: 0,
                    name: "c".into(),
                    style: Style::Solid,
                    kind: Kind::Dots(vec![(0.5, f64::NAN), (0.5, 1.5)]),
                },
                Series {
                    run: 1,
                    name: "d".into(),
                    style: Style::Solid,
                    kind: Kind::Crosses(vec![(0.5, 1.0)]),
                },
                Series {
                    run: 0,
                    name: "e".into(),
                    style: Style::Solid,
                    kind: Kind::Hist { edges: vec![0.0, 0.5, 1.0], values: vec![1.0, 2.0] },
                },
                Series {
                    run: 0,
                    name: "f".into(),
                    style: Style::Solid,
                    kind: Kind::Labeled(vec![(0.2, 1.2, "rate <8>".into()), (f64::NAN, 1.0, "gone".into())]),
                },
            ],
        };
        let svg = render(&chart);
        assert_eq!(svg.matches("<svg").count(), 1);
        assert_eq!(svg.matches("class=\"s run-").count(), 6);
        assert_eq!(svg.matches("class=\"li run-").count(), 6);
        assert!(
            svg.contains(">rate &lt;8&gt;</text>") && !svg.contains("gone"),
            "labels escaped, non-finite dropped"
        );
        assert!(!svg.contains("NaN") && !svg.contains("inf"));
        assert!(!svg.contains("no data"));
        let empty = Chart { series: vec![], ..chart };
        assert!(render(&empty).contains("no data"));
    }
}

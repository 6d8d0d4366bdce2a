//! The dashboard's panels, one function each, drawn into the area they are given (any size:
//! widgets clip, nothing here can panic on a small area). Every figure names its definition in
//! docs/metrics.md (docs/dashboard.md lists them).

use super::model::{Dashboard, ServerView};
use crate::progress::format_rate;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Paragraph, Row, Sparkline, Table, Wrap};
use ratatui::Frame;
use servebench_runner::observe::live::LivePercentiles;

/// What an absent figure shows.
pub const NA: &str = "n/a";

/// Seconds as milliseconds: two decimals below 1 ms, one below 100 ms, none above; "n/a"
/// when absent.
pub fn fmt_ms(seconds: Option<f64>) -> String {
    match seconds.filter(|s| s.is_finite()) {
        None => NA.to_owned(),
        Some(s) if s * 1e3 < 1.0 => format!("{:.2}", s * 1e3),
        Some(s) if s * 1e3 < 100.0 => format!("{:.1}", s * 1e3),
        Some(s) => format!("{:.0}", s * 1e3),
    }
}

fn label(text: &str) -> Span<'static> {
    Span::styled(text.to_owned(), Style::default().fg(Color::DarkGray))
}

fn value(text: String) -> Span<'static> {
    Span::styled(text, Style::default().add_modifier(Modifier::BOLD))
}

fn bordered(title: &str) -> Block<'static> {
    Block::bordered().title(Span::styled(format!(" {title} "), Style::default().fg(Color::Cyan)))
}

/// The last `n` values of `history`, scaled to integers for a sparkline.
fn spark_data(history: &[f64], n: usize, scale: f64) -> Vec<u64> {
    let from = history.len().saturating_sub(n);
    history[from..].iter().map(|v| (v * scale).round() as u64).collect()
}

/// Request and output-token throughput now, on one line (the compact layout).
pub fn throughput_line(d: &Dashboard) -> Line<'static> {
    Line::from(vec![
        label(" requests/s "),
        value(format_rate(d.snapshot.requests_per_s)),
        label("  output tok/s "),
        value(format_rate(d.snapshot.output_tokens_per_s)),
    ])
}

/// Request and output-token throughput now, with a sparkline of each over the last seconds.
pub fn throughput(f: &mut Frame<'_>, area: Rect, d: &Dashboard) {
    let block = bordered("Throughput (completed, per s)");
    let inner = block.inner(area);
    f.render_widget(block, area);
    let [l1, s1, l2, s2] = Layout::vertical([
        Constraint::Length(1),
        Constraint::Fill(1),
        Constraint::Length(1),
        Constraint::Fill(1),
    ])
    .areas(inner);
    let w = usize::from(inner.width);
    let line = |name: &str, now: f64| Line::from(vec![label(name), value(format_rate(now))]);
    f.render_widget(Paragraph::new(line("requests/s  ", d.snapshot.requests_per_s)), l1);
    let green = Style::default().fg(Color::Green);
    f.render_widget(Sparkline::default().data(spark_data(&d.requests_per_s, w, 10.0)).style(green), s1);
    f.render_widget(Paragraph::new(line("output tok/s  ", d.snapshot.output_tokens_per_s)), l2);
    let blue = Style::default().fg(Color::Blue);
    f.render_widget(Sparkline::default().data(spark_data(&d.tokens_per_s, w, 1.0)).style(blue), s2);
}

fn latency_row(name: &'static str, p: &LivePercentiles) -> Row<'static> {
    let mut cells = vec![name.to_owned()];
    cells.extend(p.values.iter().map(|v| fmt_ms(*v)));
    cells.push(p.count.to_string());
    Row::new(cells)
}

/// TTFT, ITL and E2EL percentiles so far (ms), estimated from the live histograms.
pub fn latency(f: &mut Frame<'_>, area: Rect, d: &Dashboard) {
    let header = Row::new(["ms", "p50", "p90", "p99", "n"]).style(Style::default().fg(Color::DarkGray));
    let rows = [
        latency_row("TTFT", &d.detail.ttft),
        latency_row("ITL", &d.detail.itl),
        latency_row("E2EL", &d.detail.e2el),
    ];
    let widths = [
        Constraint::Length(5),
        Constraint::Length(6),
        Constraint::Length(6),
        Constraint::Length(6),
        Constraint::Fill(1),
    ];
    let table = Table::new(rows, widths).header(header).block(bordered("Latency so far (est.)"));
    f.render_widget(table, area);
}

/// Failed requests by kind and the latest failure's message.
pub fn failures(f: &mut Frame<'_>, area: Rect, d: &Dashboard) {
    let red = Style::default().fg(Color::Red);
    let mut lines: Vec<Line<'_>> = d
        .detail
        .failed_by_kind
        .iter()
        .map(|(kind, n)| {
            let name = kind.map_or("unclassified", |k| k.as_str());
            Line::from(vec![Span::styled(format!("{n} "), red), Span::raw(name.to_owned())])
        })
        .collect();
    if lines.is_empty() {
        lines.push(Line::from(label("no failures")));
    }
    if let Some((kind, message)) = &d.detail.latest_failure {
        // One wrapped line, so a short panel still shows the start of the message.
        lines.push(Line::from(vec![
            label("latest "),
            Span::styled(format!("{}: ", kind.as_str()), red),
            Span::raw(message.clone()),
        ]));
    }
    let title = format!("Failures ({})", d.snapshot.failed);
    f.render_widget(Paragraph::new(lines).wrap(Wrap { trim: true }).block(bordered(&title)), area);
}

/// The client's own health: dispatch lateness and CPU.
pub fn client(f: &mut Frame<'_>, area: Rect, d: &Dashboard) {
    let l = &d.detail.lateness;
    let cores = d.client_cores.map_or(NA.to_owned(), |c| format!("{c:.2}"));
    let lines = vec![
        Line::from(vec![label("lateness p50 "), value(fmt_ms(l.values[0])), label(" ms")]),
        Line::from(vec![label("lateness p99 "), value(fmt_ms(l.values[2])), label(" ms")]),
        Line::from(vec![label("CPU "), value(cores), label(format!(" of {} cores", d.cpus).as_str())]),
        Line::from(vec![label("sent "), value(d.snapshot.sent.to_string())]),
    ];
    f.render_widget(Paragraph::new(lines).block(bordered("Client health")), area);
}

fn opt(v: Option<f64>, fmt: impl Fn(f64) -> String) -> String {
    v.filter(|v| v.is_finite()).map_or(NA.to_owned(), fmt)
}

/// The server's key series, latest values ("n/a" when absent or not scraped).
pub fn server(f: &mut Frame<'_>, area: Rect, d: &Dashboard) {
    let (latest, note) = match d.server {
        ServerView::NotScraped => (None, Some("not scraped (--scrape-metrics)".to_owned())),
        ServerView::Scraped { latest, failing_endpoints: 0 } => (latest, None),
        ServerView::Scraped { latest, failing_endpoints } => {
            (latest, Some(format!("last scrape failed at {failing_endpoints} endpoint(s)")))
        }
    };
    let count = |v: Option<f64>| opt(v, |v| format!("{v:.0}"));
    let mut lines = vec![
        Line::from(vec![label("queue (waiting) "), value(count(latest.and_then(|l| l.waiting)))]),
        Line::from(vec![label("running         "), value(count(latest.and_then(|l| l.running)))]),
        Line::from(vec![
            label("KV cache        "),
            value(opt(latest.and_then(|l| l.kv_cache_usage), |v| format!("{:.1}%", v * 100.0))),
        ]),
        Line::from(vec![
            label("GPU power       "),
            value(opt(latest.and_then(|l| l.gpu_power_w), |v| format!("{v:.0} W"))),
        ]),
    ];
    if let Some(n) = note {
        lines.push(Line::from(label(&n)));
    }
    f.render_widget(Paragraph::new(lines).wrap(Wrap { trim: true }).block(bordered("Server")), area);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn milliseconds_are_compact_and_absent_is_na() {
        assert_eq!(fmt_ms(Some(0.01234)), "12.3");
        assert_eq!(fmt_ms(Some(0.00004)), "0.04");
        assert_eq!(fmt_ms(Some(0.25)), "250");
        assert_eq!(fmt_ms(None), "n/a");
        assert_eq!(fmt_ms(Some(f64::NAN)), "n/a");
    }

    #[test]
    fn sparkline_data_keeps_the_latest_values_scaled() {
        assert_eq!(spark_data(&[1.0, 2.26, 3.0], 2, 10.0), vec![23, 30]);
        assert_eq!(spark_data(&[], 5, 1.0), Vec::<u64>::new());
    }
}

//! The dashboard's layout: a header (panels, paused marker), the progress gauge with the
//! request counts, the selected panel(s), and a key line. Three tiers by terminal size: full
//! (80×24 and up: every Overview panel), compact (40×12 and up: one panel at a time), tiny
//! (a summary line). Drawing never panics and never writes outside the frame.

use super::model::{Dashboard, Panel};
use super::panels;
use crate::progress::format_elapsed;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Gauge, Paragraph};
use ratatui::Frame;

/// Smallest size of the full layout.
pub const FULL: (u16, u16) = (80, 24);
/// Smallest size of the compact layout (below it: one summary line).
pub const COMPACT: (u16, u16) = (40, 12);

/// The layout tier a terminal of `area`'s size gets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tier {
    Full,
    Compact,
    Tiny,
}

pub fn tier(area: Rect) -> Tier {
    let fits = |(w, h): (u16, u16)| area.width >= w && area.height >= h;
    if fits(FULL) {
        Tier::Full
    } else if fits(COMPACT) {
        Tier::Compact
    } else {
        Tier::Tiny
    }
}

/// Draws one frame.
pub fn render(f: &mut Frame<'_>, d: &Dashboard) {
    let area = f.area();
    match tier(area) {
        Tier::Tiny => tiny(f, area, d),
        t => {
            let progress_height = if t == Tier::Full { 4 } else { 2 };
            let [head, progress, body, keys] = Layout::vertical([
                Constraint::Length(1),
                Constraint::Length(progress_height),
                Constraint::Fill(1),
                Constraint::Length(1),
            ])
            .areas(area);
            header(f, head, d, t);
            progress_block(f, progress, d, t);
            match (t, d.panel) {
                (Tier::Full, Panel::Overview) => overview(f, body, d),
                (_, Panel::Overview) => compact_overview(f, body, d),
                (_, p) => single(f, body, d, p),
            }
            key_line(f, keys, d);
        }
    }
}

fn paused_span(d: &Dashboard, t: Tier) -> Option<Span<'static>> {
    let text = if t == Tier::Full { " PAUSED (run continues) " } else { " PAUSED " };
    d.paused.then(|| {
        Span::styled(text, Style::default().fg(Color::Black).bg(Color::Yellow).add_modifier(Modifier::BOLD))
    })
}

/// Name, panel tabs (all named on a full terminal, the current one only otherwise), elapsed
/// time; the paused marker on the right, never overlapping (the left part is clipped first).
fn header(f: &mut Frame<'_>, area: Rect, d: &Dashboard, t: Tier) {
    let bold = Style::default().add_modifier(Modifier::BOLD);
    let mut spans = vec![Span::styled(" servebench ", bold.fg(Color::Cyan))];
    for (i, p) in Panel::ALL.iter().enumerate() {
        let name = match t {
            Tier::Full => format!(" {} {} ", i + 1, p.title()),
            _ if *p == d.panel => format!(" {} {} ", i + 1, p.title()),
            _ => format!(" {} ", i + 1),
        };
        let style = if *p == d.panel { bold.fg(Color::Black).bg(Color::Cyan) } else { Style::default() };
        spans.push(Span::styled(name, style));
    }
    let marker = paused_span(d, t);
    let w = marker.as_ref().map_or(0, |m| m.width() as u16).min(area.width);
    // The elapsed time only when it fits whole.
    let elapsed = format!("  {}", format_elapsed(d.snapshot.elapsed_s));
    let used: usize = spans.iter().map(|s| s.width()).sum();
    if used + elapsed.len() + usize::from(w) <= usize::from(area.width) {
        spans.push(Span::raw(elapsed));
    }
    let [left, right] = Layout::horizontal([Constraint::Fill(1), Constraint::Length(w)]).areas(area);
    f.render_widget(Paragraph::new(Line::from(spans)), left);
    if let Some(m) = marker {
        f.render_widget(Paragraph::new(Line::from(m)), right);
    }
}

/// `done/total (pct) · ETA h:mm:ss`, or a count when the total is not known.
fn gauge_label(d: &Dashboard) -> (f64, String) {
    let s = &d.snapshot;
    let done = s.completed + s.failed + s.cancelled;
    let eta = d.eta_s.map_or(panels::NA.to_owned(), format_elapsed);
    match s.scheduled {
        0 => (0.0, format!("{done} done (total not known)")),
        n => {
            let ratio = (done as f64 / n as f64).clamp(0.0, 1.0);
            (ratio, format!("{done}/{n} ({:.1}%) · ETA {eta}", ratio * 100.0))
        }
    }
}

/// Requests in flight, queued, waiting for a prefill slot (with a prefill cap), completed,
/// failed (and cancelled, when any); short labels below the full layout.
fn counts_line(d: &Dashboard, t: Tier) -> Line<'static> {
    let s = &d.snapshot;
    let full = t == Tier::Full;
    let name = |long: &'static str, short: &'static str| if full { long } else { short };
    let queued = d.detail.queued.map_or(panels::NA.to_owned(), |q| q.to_string());
    let dim = Style::default().fg(Color::DarkGray);
    let num = |v: String, c: Color| Span::styled(v, Style::default().fg(c).add_modifier(Modifier::BOLD));
    let mut spans = vec![
        Span::styled(name("in flight ", "flight "), dim),
        num(s.in_flight.to_string(), Color::Reset),
        Span::styled(name("  queued ", " queued "), dim),
        num(queued, Color::Reset),
    ];
    if let Some(w) = s.prefill_waiting {
        // Only with --max-prefill-concurrency: requests held back by the prefill cap.
        spans.extend([
            Span::styled(name("  prefill-waiting ", " prefill "), dim),
            num(w.to_string(), Color::Reset),
        ]);
    }
    spans.extend([
        Span::styled(name("  completed ", " ok "), dim),
        num(s.completed.to_string(), Color::Green),
        Span::styled(name("  failed ", " failed "), dim),
        num(s.failed.to_string(), if s.failed > 0 { Color::Red } else { Color::Reset }),
    ]);
    if s.cancelled > 0 {
        spans.extend([
            Span::styled(name("  cancelled ", " cancel "), dim),
            num(s.cancelled.to_string(), Color::Yellow),
        ]);
    }
    Line::from(spans)
}

fn progress_block(f: &mut Frame<'_>, area: Rect, d: &Dashboard, t: Tier) {
    let (ratio, text) = gauge_label(d);
    let gauge = Gauge::default()
        .ratio(ratio)
        .label(Span::styled(text, Style::default().add_modifier(Modifier::BOLD)))
        .gauge_style(Style::default().fg(Color::Cyan).bg(Color::Black))
        .use_unicode(true);
    let [g, c] = Layout::vertical([Constraint::Length(1), Constraint::Length(1)]).areas(match t {
        Tier::Full => {
            let block = ratatui::widgets::Block::bordered()
                .title(Span::styled(" Progress ", Style::default().fg(Color::Cyan)));
            let inner = block.inner(area);
            f.render_widget(block, area);
            inner
        }
        _ => area,
    });
    f.render_widget(gauge, g);
    f.render_widget(Paragraph::new(counts_line(d, t)), c);
}

fn overview(f: &mut Frame<'_>, area: Rect, d: &Dashboard) {
    // The bottom panels hold at most 5 lines each; the charts get the rest.
    let [mid, bottom] = Layout::vertical([Constraint::Fill(1), Constraint::Length(7)]).areas(area);
    let [thr, right] = Layout::horizontal([Constraint::Percentage(55), Constraint::Fill(1)]).areas(mid);
    panels::throughput(f, thr, d);
    let [lat, fail] = Layout::vertical([Constraint::Length(6), Constraint::Fill(1)]).areas(right);
    panels::latency(f, lat, d);
    panels::failures(f, fail, d);
    let [client, server] =
        Layout::horizontal([Constraint::Percentage(50), Constraint::Fill(1)]).areas(bottom);
    panels::client(f, client, d);
    panels::server(f, server, d);
}

/// Overview on a compact terminal: throughput and latency only (the other panels are a key
/// away); the sparklines when there is room for them, else throughput on one line.
fn compact_overview(f: &mut Frame<'_>, area: Rect, d: &Dashboard) {
    if area.height >= 14 {
        let [thr, lat] = Layout::vertical([Constraint::Fill(1), Constraint::Length(6)]).areas(area);
        panels::throughput(f, thr, d);
        panels::latency(f, lat, d);
    } else {
        let [thr, lat] = Layout::vertical([Constraint::Length(1), Constraint::Fill(1)]).areas(area);
        f.render_widget(Paragraph::new(panels::throughput_line(d)), thr);
        panels::latency(f, lat, d);
    }
}

fn single(f: &mut Frame<'_>, area: Rect, d: &Dashboard, p: Panel) {
    match p {
        Panel::Overview => compact_overview(f, area, d),
        Panel::Latency => {
            let [lat, client] = Layout::vertical([Constraint::Length(6), Constraint::Fill(1)]).areas(area);
            panels::latency(f, lat, d);
            panels::client(f, client, d);
        }
        Panel::Failures => panels::failures(f, area, d),
        Panel::Server => panels::server(f, area, d),
    }
}

fn key_line(f: &mut Frame<'_>, area: Rect, d: &Dashboard) {
    let key =
        |k: &str| Span::styled(k.to_owned(), Style::default().fg(Color::Cyan).add_modifier(Modifier::BOLD));
    let dim = |t: &str| Span::styled(t.to_owned(), Style::default().fg(Color::DarkGray));
    let mut spans = vec![
        Span::raw(" "),
        key("q"),
        dim(" stop  "),
        key("p"),
        dim(if d.paused { " resume  " } else { " pause  " }),
        key("Tab/1-4"),
        dim(" panels"),
    ];
    if let Some(n) = &d.notice {
        spans.push(Span::raw("  "));
        spans.push(Span::styled(n.clone(), Style::default().fg(Color::Yellow)));
    }
    f.render_widget(Paragraph::new(Line::from(spans)), area);
}

/// Below the compact size: the essentials on as many lines as there are.
fn tiny(f: &mut Frame<'_>, area: Rect, d: &Dashboard) {
    let (_, text) = gauge_label(d);
    let s = &d.snapshot;
    let mut lines = vec![
        Line::from(Span::styled("servebench", Style::default().fg(Color::Cyan).add_modifier(Modifier::BOLD))),
        Line::raw(text),
        Line::raw(format!("{} ok {} failed {} in flight", s.completed, s.failed, s.in_flight)),
    ];
    if let Some(p) = paused_span(d, Tier::Tiny) {
        lines.insert(1, Line::from(p));
    }
    lines.push(Line::from(Span::styled("(enlarge for the dashboard)", Style::default().fg(Color::DarkGray))));
    f.render_widget(Paragraph::new(lines), area);
}

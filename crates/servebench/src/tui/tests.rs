//! Layout tests on fixed data: the frame's text at fixed sizes (insta snapshots), every panel at
//! every tier, and no panic down to a 1×1 terminal.

use super::model::{Dashboard, Panel, ServerView};
use super::view::{render, tier, Tier};
use ratatui::backend::TestBackend;
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::Terminal;
use servebench_core::ErrorKind;
use servebench_runner::observe::live::{LiveDetail, LivePercentiles};
use servebench_runner::observe::server_live::ServerLatest;
use servebench_runner::LiveSnapshot;

fn pct(count: u64, p50: f64, p90: f64, p99: f64) -> LivePercentiles {
    LivePercentiles { count, values: [Some(p50), Some(p90), Some(p99)] }
}

/// A run 65 s in: 812 of 2000 ended, 12 failed, server scraped without GPU power.
pub fn fixed() -> Dashboard {
    let history: Vec<f64> = (0..70).map(|i| f64::from(i % 13) + 6.0).collect();
    Dashboard {
        snapshot: LiveSnapshot {
            elapsed_s: 65.9,
            scheduled: 2000,
            sent: 876,
            completed: 800,
            failed: 12,
            cancelled: 0,
            in_flight: 64,
            prefill_waiting: None,
            requests_per_s: 12.46,
            output_tokens_per_s: 1603.4,
        },
        detail: LiveDetail {
            ttft: pct(800, 0.0421, 0.118, 0.2405),
            itl: pct(102_400, 0.0118, 0.0152, 0.031),
            e2el: pct(800, 1.62, 2.4, 3.91),
            lateness: pct(876, 0.00004, 0.0002, 0.0011),
            failed_by_kind: vec![(Some(ErrorKind::HttpStatus), 9), (Some(ErrorKind::Timeout), 3)],
            latest_failure: Some((ErrorKind::HttpStatus, "HTTP 503: server overloaded".to_owned())),
            queued: Some(3),
            schedule_left_s: Some(90.0),
        },
        requests_per_s: history.clone(),
        tokens_per_s: history.iter().map(|v| v * 128.0).collect(),
        eta_s: Some(95.4),
        client_cores: Some(0.34),
        cpus: 2,
        server: ServerView::Scraped {
            latest: Some(ServerLatest {
                t_s: 65.0,
                running: Some(61.0),
                waiting: Some(3.0),
                kv_cache_usage: Some(0.452),
                gpu_power_w: None,
            }),
            failing_endpoints: 0,
        },
        panel: Panel::Overview,
        paused: false,
        notice: None,
    }
}

/// The frame's characters, one line per row, trailing spaces trimmed.
fn text(buf: &Buffer) -> String {
    let area = buf.area;
    (0..area.height)
        .map(|y| {
            let row: String = (0..area.width).map(|x| buf[(x, y)].symbol().to_owned()).collect();
            row.trim_end().to_owned()
        })
        .collect::<Vec<_>>()
        .join("\n")
}

fn draw(d: &Dashboard, w: u16, h: u16) -> String {
    let mut term = Terminal::new(TestBackend::new(w, h)).unwrap();
    term.draw(|f| render(f, d)).unwrap();
    text(term.backend().buffer())
}

#[test]
fn dashboard_120x40_shows_every_panel() {
    let screen = draw(&fixed(), 120, 40);
    insta::assert_snapshot!("dashboard_120x40", screen);
    for label in [
        "Progress",
        "Throughput",
        "Latency so far",
        "Failures (12)",
        "Client health",
        "Server",
        "ETA 0:01:35",
    ] {
        assert!(screen.contains(label), "{label} missing:\n{screen}");
    }
}

#[test]
fn dashboard_80x24_shows_every_panel() {
    let screen = draw(&fixed(), 80, 24);
    insta::assert_snapshot!("dashboard_80x24", screen);
    assert!(screen.contains("Server") && screen.contains("Client health"), "{screen}");
}

#[test]
fn dashboard_40x12_shows_one_panel_at_a_time() {
    let screen = draw(&fixed(), 40, 12);
    insta::assert_snapshot!("dashboard_40x12", screen);
    assert!(screen.contains("requests/s") && !screen.contains("Client health"), "{screen}");
    let server = draw(&Dashboard { panel: Panel::Server, ..fixed() }, 40, 12);
    insta::assert_snapshot!("dashboard_40x12_server", server);
    assert!(server.contains("GPU power") && server.contains("n/a"), "{server}");
}

#[test]
fn dashboard_80x24_prefill_waiting_shows_beside_queued_with_a_prefill_cap() {
    let d = Dashboard { snapshot: LiveSnapshot { prefill_waiting: Some(5), ..fixed().snapshot }, ..fixed() };
    let screen = draw(&d, 80, 24);
    insta::assert_snapshot!("dashboard_80x24_prefill", screen);
    assert!(screen.contains("queued 3  prefill-waiting 5  completed 800"), "{screen}");
    let compact = draw(&d, 60, 20);
    assert!(compact.contains("queued 3 prefill 5 ok 800"), "{compact}");
    // Without a cap the figure is not shown at all.
    assert!(!draw(&fixed(), 80, 24).contains("prefill"));
}

#[test]
fn paused_view_is_marked_at_every_tier() {
    let d = Dashboard { paused: true, ..fixed() };
    for (w, h) in [(120, 40), (60, 20), (30, 8)] {
        assert!(draw(&d, w, h).contains("PAUSED"), "{w}x{h}");
    }
}

#[test]
fn absent_figures_show_na_never_zero() {
    let d = Dashboard {
        detail: LiveDetail::default(),
        server: ServerView::NotScraped,
        eta_s: None,
        client_cores: None,
        ..fixed()
    };
    let overview = draw(&d, 120, 40);
    assert!(overview.contains("not scraped"), "{overview}");
    assert!(overview.contains("queued n/a") && overview.contains("ETA n/a"), "{overview}");
    let latency = draw(&Dashboard { panel: Panel::Latency, ..d }, 120, 40);
    assert!(latency.contains("TTFT") && latency.contains("n/a"), "{latency}");
}

#[test]
fn every_panel_draws_at_every_size_without_panic() {
    for panel in Panel::ALL {
        for paused in [false, true] {
            let d = Dashboard { panel, paused, ..fixed() };
            for w in [1u16, 2, 5, 10, 20, 39, 40, 41, 60, 79, 80, 120, 200] {
                for h in [1u16, 2, 3, 5, 8, 11, 12, 13, 20, 23, 24, 40, 60] {
                    draw(&d, w, h);
                }
            }
        }
    }
}

#[test]
fn tiers_follow_the_terminal_size() {
    let r = |w, h| Rect::new(0, 0, w, h);
    assert_eq!(tier(r(120, 40)), Tier::Full);
    assert_eq!(tier(r(80, 24)), Tier::Full);
    assert_eq!(tier(r(79, 24)), Tier::Compact);
    assert_eq!(tier(r(60, 20)), Tier::Compact);
    assert_eq!(tier(r(40, 12)), Tier::Compact);
    assert_eq!(tier(r(39, 40)), Tier::Tiny);
}

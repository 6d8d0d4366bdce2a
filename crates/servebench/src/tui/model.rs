//! What the dashboard shows, as plain data: one [`Dashboard`] per refresh, built from the
//! live counters ([`LiveMetrics`]), the server's latest key figures ([`LatestServer`]) and the
//! client's CPU, with the per-second throughput history. Rendering (`view`) reads only this,
//! so layouts are tested on fixed data.

use servebench_runner::observe::latest::LatestServer;
use servebench_runner::observe::live::LiveDetail;
use servebench_runner::observe::server_live::ServerLatest;
use servebench_runner::{LiveMetrics, LiveSnapshot};
use std::collections::VecDeque;
use std::sync::Arc;
use std::time::Instant;

/// Seconds of throughput history kept for the sparklines (wider than any terminal).
pub const HISTORY_SECONDS: usize = 600;

/// The dashboard's panels (keys 1–4; Tab cycles).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Panel {
    #[default]
    Overview,
    Latency,
    Failures,
    Server,
}

impl Panel {
    pub const ALL: [Panel; 4] = [Panel::Overview, Panel::Latency, Panel::Failures, Panel::Server];

    pub fn title(self) -> &'static str {
        match self {
            Panel::Overview => "Overview",
            Panel::Latency => "Latency",
            Panel::Failures => "Failures",
            Panel::Server => "Server",
        }
    }

    /// The next panel (Tab).
    pub fn next(self) -> Panel {
        let i = Panel::ALL.iter().position(|&p| p == self).unwrap_or(0);
        Panel::ALL[(i + 1) % Panel::ALL.len()]
    }
}

/// The server panel's source: not scraped at all, or the latest figures (absent before the
/// first sample).
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub enum ServerView {
    #[default]
    NotScraped,
    Scraped {
        latest: Option<ServerLatest>,
        /// Endpoints whose last scrape failed.
        failing_endpoints: usize,
    },
}

/// Everything one frame shows.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Dashboard {
    pub snapshot: LiveSnapshot,
    pub detail: LiveDetail,
    /// Completed requests per second, one value per second, oldest first.
    pub requests_per_s: Vec<f64>,
    /// Output tokens per second, one value per second, oldest first.
    pub tokens_per_s: Vec<f64>,
    /// Seconds left (docs/metrics.md, "Live dashboard"); `None` when unknown.
    pub eta_s: Option<f64>,
    /// Client CPU over the last refresh, in cores (1.0 = one core busy); `None` before the
    /// second refresh or off Linux.
    pub client_cores: Option<f64>,
    /// CPUs the client may use.
    pub cpus: usize,
    pub server: ServerView,
    pub panel: Panel,
    pub paused: bool,
    /// The latest status line (an interrupt notice, a warning).
    pub notice: Option<String>,
}

/// Seconds left: the larger of the schedule's remaining span and the remaining requests at the
/// average pace so far (ended ÷ elapsed); the schedule's span alone before anything ended;
/// `None` when the total is not known (closed loop) or nothing can be estimated.
pub fn eta_seconds(s: &LiveSnapshot, schedule_left_s: Option<f64>) -> Option<f64> {
    if s.scheduled == 0 {
        return None;
    }
    let done = s.completed + s.failed + s.cancelled;
    let remaining = s.scheduled.saturating_sub(done) as f64;
    let by_pace = (done > 0 && s.elapsed_s > 0.0).then(|| remaining * s.elapsed_s / done as f64);
    match (by_pace, schedule_left_s) {
        (Some(p), Some(l)) => Some(p.max(l)),
        (p, l) => p.or(l),
    }
}

/// The per-refresh state behind the frames: history and the CPU reading of the last refresh.
#[derive(Debug)]
pub struct Sampler {
    live: Arc<LiveMetrics>,
    server: Option<LatestServer>,
    requests_per_s: VecDeque<f64>,
    tokens_per_s: VecDeque<f64>,
    cpu_at: Option<(Instant, u64)>,
    cpus: usize,
}

impl Sampler {
    pub fn new(live: Arc<LiveMetrics>, server: Option<LatestServer>) -> Self {
        Sampler {
            live,
            server,
            requests_per_s: VecDeque::new(),
            tokens_per_s: VecDeque::new(),
            cpu_at: None,
            cpus: servebench_runner::observe::health::available_cpus(),
        }
    }

    /// Cores used by the client's threads since the last call.
    fn client_cores(&mut self) -> Option<f64> {
        let now = (
            Instant::now(),
            servebench_runner::observe::health::thread_cpu_ns(servebench_runner::CLIENT_THREAD_PREFIX),
        );
        let prev = self.cpu_at.replace(now)?;
        let wall = now.0.duration_since(prev.0).as_secs_f64();
        (wall > 0.0 && now.1 > 0).then(|| now.1.saturating_sub(prev.1) as f64 / 1e9 / wall)
    }

    /// Reads everything once (about once a second) and returns the frame's data.
    pub fn sample(&mut self, panel: Panel, paused: bool, notice: Option<String>) -> Dashboard {
        let snapshot = self.live.snapshot();
        let detail = self.live.detail();
        for (h, v) in [
            (&mut self.requests_per_s, snapshot.requests_per_s),
            (&mut self.tokens_per_s, snapshot.output_tokens_per_s),
        ] {
            h.push_back(if v.is_finite() { v.max(0.0) } else { 0.0 });
            while h.len() > HISTORY_SECONDS {
                h.pop_front();
            }
        }
        let server = match &self.server {
            None => ServerView::NotScraped,
            Some(s) => {
                let snap = s.snapshot();
                ServerView::Scraped {
                    latest: ServerLatest::of(&snap),
                    failing_endpoints: ServerLatest::failing_endpoints(&snap),
                }
            }
        };
        Dashboard {
            eta_s: eta_seconds(&snapshot, detail.schedule_left_s),
            snapshot,
            detail,
            requests_per_s: self.requests_per_s.iter().copied().collect(),
            tokens_per_s: self.tokens_per_s.iter().copied().collect(),
            client_cores: self.client_cores(),
            cpus: self.cpus,
            server,
            panel,
            paused,
            notice,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn snap(scheduled: u64, completed: u64, failed: u64, elapsed_s: f64) -> LiveSnapshot {
        LiveSnapshot { scheduled, completed, failed, elapsed_s, ..LiveSnapshot::default() }
    }

    #[test]
    fn eta_is_remaining_at_the_average_pace_bounded_below_by_the_schedule() {
        // 100 of 400 ended in 50 s: 300 left at 2/s = 150 s.
        assert_eq!(eta_seconds(&snap(400, 90, 10, 50.0), None), Some(150.0));
        // The schedule still runs 200 s: that bounds it.
        assert_eq!(eta_seconds(&snap(400, 90, 10, 50.0), Some(200.0)), Some(200.0));
        // Nothing ended yet: the schedule alone, else unknown.
        assert_eq!(eta_seconds(&snap(400, 0, 0, 5.0), Some(30.0)), Some(30.0));
        assert_eq!(eta_seconds(&snap(400, 0, 0, 5.0), None), None);
        // Total not known (closed loop).
        assert_eq!(eta_seconds(&snap(0, 5, 0, 5.0), Some(1.0)), None);
        // Done.
        assert_eq!(eta_seconds(&snap(10, 10, 0, 5.0), Some(0.0)), Some(0.0));
    }

    #[test]
    fn tab_cycles_through_every_panel() {
        let mut p = Panel::Overview;
        let mut seen = vec![p];
        for _ in 0..4 {
            p = p.next();
            seen.push(p);
        }
        assert_eq!(seen, [Panel::Overview, Panel::Latency, Panel::Failures, Panel::Server, Panel::Overview]);
    }

    #[test]
    fn sampler_keeps_one_history_value_per_refresh_and_no_server_without_scraping() {
        let live = Arc::new(LiveMetrics::new());
        let mut s = Sampler::new(live, None);
        let a = s.sample(Panel::Overview, false, None);
        let b = s.sample(Panel::Latency, true, Some("n".into()));
        assert_eq!((a.requests_per_s.len(), b.requests_per_s.len()), (1, 2));
        assert_eq!(b.server, ServerView::NotScraped);
        assert_eq!((b.panel, b.paused, b.notice.as_deref()), (Panel::Latency, true, Some("n")));
    }
}

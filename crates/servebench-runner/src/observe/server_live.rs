//! The server's latest key figures while a run goes, for the live dashboard: a narrow,
//! read-only view of what the `/metrics` scrape saw last (each figure `None` when the server
//! does not expose it or nothing was scraped yet). Whatever scrapes — one engine today, several
//! engines and GPUs later — publishes into it; the dashboard only reads it.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

/// The latest values of the server's key series. Sums over label sets, as the scrape keeps
/// them (docs/metrics.md, "Server metrics").
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct ServerLatest {
    /// Seconds since the scraper started, of the sample these come from.
    pub t_s: f64,
    /// Requests the server is running (`vllm:num_requests_running`).
    pub running: Option<f64>,
    /// Requests waiting in the server's queue (`vllm:num_requests_waiting`).
    pub waiting: Option<f64>,
    /// KV-cache usage, 0..1 (`vllm:kv_cache_usage_perc`).
    pub kv_cache_usage: Option<f64>,
    /// GPU power draw, watts, summed over GPUs (no source scrapes it yet: always `None`).
    pub gpu_power_w: Option<f64>,
}

impl ServerLatest {
    /// The key figures of one scrape sample.
    pub fn of(s: &servebench_report::sections::server::ScrapeSample) -> Self {
        ServerLatest {
            t_s: s.t_s,
            running: s.running,
            waiting: s.waiting,
            kv_cache_usage: s.kv_cache_usage,
            gpu_power_w: None,
        }
    }
}

/// Shared slot: the scraper publishes, the dashboard reads.
#[derive(Debug, Default)]
pub struct ServerLive {
    latest: Mutex<Option<ServerLatest>>,
    failed_scrapes: AtomicU64,
}

impl ServerLive {
    /// A new sample arrived.
    pub fn publish(&self, latest: ServerLatest) {
        if let Ok(mut l) = self.latest.lock() {
            *l = Some(latest);
        }
    }

    /// Scrapes that failed so far (unreachable, unparsable).
    pub fn set_failed_scrapes(&self, n: u64) {
        self.failed_scrapes.store(n, Ordering::Relaxed);
    }

    /// The latest sample, `None` before the first.
    pub fn latest(&self) -> Option<ServerLatest> {
        self.latest.lock().ok().and_then(|l| *l)
    }

    /// Scrapes that failed so far.
    pub fn failed_scrapes(&self) -> u64 {
        self.failed_scrapes.load(Ordering::Relaxed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn latest_keeps_the_key_series_of_the_last_sample_and_no_power() {
        let live = ServerLive::default();
        assert_eq!(live.latest(), None);
        let sample = servebench_report::sections::server::ScrapeSample {
            t_s: 2.0,
            running: Some(3.0),
            waiting: Some(1.0),
            kv_cache_usage: Some(0.5),
            ..Default::default()
        };
        live.publish(ServerLatest::of(&sample));
        live.set_failed_scrapes(1);
        let l = live.latest().unwrap();
        assert_eq!(
            (l.running, l.waiting, l.kv_cache_usage, l.gpu_power_w),
            (Some(3.0), Some(1.0), Some(0.5), None)
        );
        assert_eq!(live.failed_scrapes(), 1);
    }
}

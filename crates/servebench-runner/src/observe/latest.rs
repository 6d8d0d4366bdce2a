//! The latest scraped server and GPU values, for a live view (the dashboard) to read while the
//! run lasts: a small read-only snapshot behind an `Arc`, replaced after every scrape. Reading
//! it never waits on a scrape (a short lock around a clone); without `--scrape-metrics`,
//! `--server-metrics-url` or `--gpu-metrics` it stays empty.

use super::meaning::Meaning;
use std::collections::BTreeMap;
use std::sync::{Arc, RwLock};

/// One endpoint's latest values.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct EndpointLatest {
    /// The URL scraped.
    pub url: String,
    /// Seconds from the start of the measured phase of the scrape these values come from.
    pub t_s: f64,
    /// Gauge and counter meanings (counters as their cumulative reading), by meaning.
    pub values: BTreeMap<Meaning, f64>,
    /// Whether the last scrape failed (then `values` are the last good ones).
    pub last_failed: bool,
}

/// The snapshot a live view reads.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct LatestSnapshot {
    pub endpoints: Vec<EndpointLatest>,
    /// Σ power of the GPUs at their latest readings, W; `None` without GPU readings.
    pub gpu_power_w: Option<f64>,
    /// Number of GPUs in the latest readings.
    pub gpus: usize,
}

impl LatestSnapshot {
    /// Σ over endpoints of a meaning's latest value; `None` when no endpoint has it.
    pub fn total(&self, m: Meaning) -> Option<f64> {
        self.endpoints.iter().filter_map(|e| e.values.get(&m)).fold(None, |a, v| Some(a.unwrap_or(0.0) + v))
    }
}

/// Shared handle: scrapers write, views read ([`LatestServer::snapshot`]).
#[derive(Debug, Clone, Default)]
pub struct LatestServer(Arc<RwLock<LatestSnapshot>>);

impl LatestServer {
    /// A copy of the latest values.
    pub fn snapshot(&self) -> LatestSnapshot {
        self.0.read().map(|s| s.clone()).unwrap_or_default()
    }

    /// Replaces endpoint `url`'s values (a scraper's call).
    pub(crate) fn set_endpoint(&self, e: EndpointLatest) {
        if let Ok(mut s) = self.0.write() {
            match s.endpoints.iter_mut().find(|x| x.url == e.url) {
                Some(x) => *x = e,
                None => s.endpoints.push(e),
            }
        }
    }

    /// Marks endpoint `url`'s last scrape failed.
    pub(crate) fn endpoint_failed(&self, url: &str) {
        if let Ok(mut s) = self.0.write() {
            match s.endpoints.iter_mut().find(|x| x.url == url) {
                Some(x) => x.last_failed = true,
                None => s.endpoints.push(EndpointLatest {
                    url: url.to_owned(),
                    last_failed: true,
                    ..EndpointLatest::default()
                }),
            }
        }
    }

    /// The GPUs' latest total power (a GPU poller's call).
    pub(crate) fn set_gpu(&self, power_w: Option<f64>, gpus: usize) {
        if let Ok(mut s) = self.0.write() {
            s.gpu_power_w = power_w;
            s.gpus = gpus;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_snapshot_sums_endpoints_and_keeps_the_last_good_values_on_failure() {
        let l = LatestServer::default();
        assert_eq!(l.snapshot().total(Meaning::Queue), None);
        let v = |q: f64| BTreeMap::from([(Meaning::Queue, q)]);
        l.set_endpoint(EndpointLatest { url: "a".into(), t_s: 1.0, values: v(2.0), last_failed: false });
        l.set_endpoint(EndpointLatest { url: "b".into(), t_s: 1.0, values: v(3.0), last_failed: false });
        l.endpoint_failed("a");
        l.set_gpu(Some(400.0), 2);
        let s = l.snapshot();
        assert_eq!(s.total(Meaning::Queue), Some(5.0));
        assert!(s.endpoints[0].last_failed);
        assert_eq!((s.gpu_power_w, s.gpus), (Some(400.0), 2));
    }
}

//! The dashboard's server panel: the key figures of the latest scraped values
//! ([`crate::observe::latest::LatestSnapshot`]), summed over the scraped endpoints, whatever
//! engine each one is (the meanings table maps every engine's names). Each figure is `None`
//! when no endpoint exposes it or nothing was scraped yet.

use super::latest::LatestSnapshot;
use super::meaning::Meaning;

/// The latest values of the server's key series.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct ServerLatest {
    /// Seconds from the start of the measured phase of the newest scrape these come from.
    pub t_s: f64,
    /// Requests the servers are running (Σ over endpoints).
    pub running: Option<f64>,
    /// Requests waiting in the servers' queues (Σ over endpoints).
    pub waiting: Option<f64>,
    /// KV-cache usage, 0..1: the highest over the endpoints (the one closest to full).
    pub kv_cache_usage: Option<f64>,
    /// GPU power draw, watts, summed over the GPUs read.
    pub gpu_power_w: Option<f64>,
}

impl ServerLatest {
    /// The key figures of a snapshot; `None` before any value (server or GPU) arrived.
    pub fn of(s: &LatestSnapshot) -> Option<Self> {
        let kv = s.endpoints.iter().filter_map(|e| e.values.get(&Meaning::KvCacheUsage)).copied();
        let latest = ServerLatest {
            t_s: s.endpoints.iter().map(|e| e.t_s).fold(0.0, f64::max),
            running: s.total(Meaning::Running),
            waiting: s.total(Meaning::Queue),
            kv_cache_usage: kv.fold(None, |a: Option<f64>, v| Some(a.map_or(v, |a| a.max(v)))),
            gpu_power_w: s.gpu_power_w,
        };
        let any = s.endpoints.iter().any(|e| !e.values.is_empty()) || s.gpu_power_w.is_some();
        any.then_some(latest)
    }

    /// Endpoints whose last scrape failed.
    pub fn failing_endpoints(s: &LatestSnapshot) -> usize {
        s.endpoints.iter().filter(|e| e.last_failed).count()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::observe::latest::EndpointLatest;
    use std::collections::BTreeMap;

    #[test]
    fn key_figures_sum_running_and_queue_take_the_fullest_kv_cache_and_the_gpu_power() {
        assert_eq!(ServerLatest::of(&LatestSnapshot::default()), None);
        let e = |url: &str, t_s, run, q, kv, failed| EndpointLatest {
            url: url.into(),
            t_s,
            values: BTreeMap::from([
                (Meaning::Running, run),
                (Meaning::Queue, q),
                (Meaning::KvCacheUsage, kv),
            ]),
            last_failed: failed,
        };
        let s = LatestSnapshot {
            endpoints: vec![e("a", 2.0, 3.0, 1.0, 0.5, false), e("b", 3.0, 4.0, 0.0, 0.75, true)],
            gpu_power_w: Some(400.0),
            gpus: 2,
        };
        let l = ServerLatest::of(&s).unwrap();
        assert_eq!(
            (l.t_s, l.running, l.waiting, l.kv_cache_usage, l.gpu_power_w),
            (3.0, Some(7.0), Some(1.0), Some(0.75), Some(400.0))
        );
        assert_eq!(ServerLatest::failing_endpoints(&s), 1);
    }
}

//! Warns while the run goes when the client itself saturates, before its figures are read:
//! every [`WINDOW`] it looks at the requests sent in that window (how many left more than the
//! `dispatch_lateness` threshold after their intended time) and at the client's CPU over it:
//! used (against the `client_cpu` threshold) and waited for while other work had it (against
//! `client_cpu_wait`). Each kind of warning is printed once per run; the
//! verdict at the end (docs/metrics.md, "Run validity") has the whole-run figures.

use super::health::{self, CLIENT_THREAD_PREFIX};
use super::live::LiveMetrics;
use super::observer::RunObserver;
use servebench_core::validity::{
    CLIENT_CPU_WAIT_WARN_PERCENT, CLIENT_CPU_WARN_PERCENT, DISPATCH_LATENESS_WARN_MS,
};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

/// How often the watch looks.
pub const WINDOW: Duration = Duration::from_secs(2);
/// Fewest requests sent in a window for its lateness share to count.
pub const MIN_SENT: u64 = 50;

/// What the client did in one window.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Window {
    /// Seconds since the measured phase started, at the window's end.
    pub at_s: f64,
    /// Requests sent in the window, and those of them released more than the lateness
    /// threshold after their intended time.
    pub sent: u64,
    pub late: u64,
    /// Client CPU over the window, used and waited for (runnable, no CPU), percent of the
    /// available cores.
    pub cpu_share_percent: f64,
    pub cpu_wait_percent: f64,
}

/// The warnings a window gives: `(late, cpu)`, each `None` when its threshold was not crossed.
/// Late: more than 1 % of at least [`MIN_SENT`] requests sent late (the window's lateness p99
/// is above the threshold).
pub fn judge(w: &Window) -> (Option<String>, Option<String>) {
    let late = (w.sent >= MIN_SENT && w.late * 100 > w.sent).then(|| {
        format!(
            "warning: the client is sending behind its schedule: at {:.0} s, {} of the {} requests sent in the last {} s left more than {DISPATCH_LATENESS_WARN_MS} ms late (client CPU {:.0}% of its cores); figures from here describe a later, burstier load than asked — lower --request-rate, give the client more cores (--pin-cpu, other work off them), or split the load (--num-shards)",
            w.at_s,
            w.late,
            w.sent,
            WINDOW.as_secs(),
            w.cpu_share_percent
        )
    });
    let busy = w.cpu_share_percent > CLIENT_CPU_WARN_PERCENT;
    let starved = w.cpu_wait_percent > CLIENT_CPU_WAIT_WARN_PERCENT;
    let cpu = (busy || starved).then(|| {
        format!(
            "warning: the client is short of CPU: at {:.0} s it used {:.0}% of its cores (warns above {CLIENT_CPU_WARN_PERCENT:.0}%) and waited for one {:.0}% of the time while other work ran (warns above {CLIENT_CPU_WAIT_WARN_PERCENT:.0}%); it may be the bottleneck, and its timestamps late",
            w.at_s, w.cpu_share_percent, w.cpu_wait_percent
        )
    });
    (late, cpu)
}

/// Starts the watch; it ends with `stop`.
pub fn spawn(
    live: Arc<LiveMetrics>,
    observer: Arc<dyn RunObserver>,
    stop: CancellationToken,
) -> JoinHandle<()> {
    tokio::spawn(async move {
        let start = Instant::now();
        let cores = health::available_cpus() as f64;
        let bound_us = (DISPATCH_LATENESS_WARN_MS * 1000.0) as u64;
        let (mut sent0, mut late0) = live.lateness_above(bound_us);
        let (mut cpu0, mut t0) = (health::thread_sched_ns(CLIENT_THREAD_PREFIX), Instant::now());
        let (mut warned_late, mut warned_cpu) = (false, false);
        let mut tick = tokio::time::interval_at((t0 + WINDOW).into(), WINDOW);
        while !(warned_late && warned_cpu) {
            tokio::select! {
                _ = tick.tick() => {}
                _ = stop.cancelled() => break,
            }
            let (sent, late) = live.lateness_above(bound_us);
            let (cpu, t) = (health::thread_sched_ns(CLIENT_THREAD_PREFIX), Instant::now());
            let wall_ns = t.duration_since(t0).as_nanos().max(1) as f64;
            let w = Window {
                at_s: t.duration_since(start).as_secs_f64(),
                sent: sent - sent0,
                late: late - late0,
                cpu_share_percent: cpu.0.saturating_sub(cpu0.0) as f64 / wall_ns * 100.0 / cores,
                cpu_wait_percent: cpu.1.saturating_sub(cpu0.1) as f64 / wall_ns * 100.0 / cores,
            };
            let (l, c) = judge(&w);
            if let Some(text) = l.filter(|_| !warned_late) {
                observer.message(&text);
                warned_late = true;
            }
            if let Some(text) = c.filter(|_| !warned_cpu) {
                observer.message(&text);
                warned_cpu = true;
            }
            (sent0, late0, cpu0, t0) = (sent, late, cpu, t);
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn w(sent: u64, late: u64, cpu: f64) -> Window {
        Window { at_s: 4.0, sent, late, cpu_share_percent: cpu, cpu_wait_percent: 0.0 }
    }

    #[test]
    fn a_window_warns_when_more_than_1_percent_of_its_requests_left_late() {
        assert_eq!(judge(&w(1000, 10, 50.0)), (None, None), "1 %: p99 not above");
        let (late, cpu) = judge(&w(1000, 11, 50.0));
        let text = late.expect("1.1 % late");
        assert!(
            text.starts_with("warning: the client is sending behind its schedule: at 4 s, 11 of the 1000")
        );
        assert!(cpu.is_none());
        assert_eq!(judge(&w(49, 49, 50.0)).0, None, "too few requests in the window to tell");
    }

    #[test]
    fn a_window_warns_when_the_client_cpu_is_above_90_percent_of_its_cores() {
        assert_eq!(judge(&w(0, 0, 90.0)).1, None);
        let text = judge(&w(0, 0, 97.0)).1.expect("97 % > 90 %");
        assert!(text.contains("used 97% of its cores"), "{text}");
    }

    #[test]
    fn a_window_warns_when_the_client_waited_for_a_cpu_more_than_20_percent_of_the_time() {
        let starved = |wait| Window { cpu_wait_percent: wait, ..w(0, 0, 35.0) };
        assert_eq!(judge(&starved(20.0)).1, None);
        let text = judge(&starved(60.0)).1.expect("60 % > 20 %");
        assert!(text.contains("used 35% of its cores") && text.contains("waited for one 60%"), "{text}");
    }

    #[test]
    fn lateness_above_counts_the_requests_beyond_a_bucket_bound() {
        let live = LiveMetrics::new();
        for us in [5, 9_000, 10_000, 10_001, 400_000] {
            live.request_sent(us);
        }
        assert_eq!(live.lateness_above(10_000), (5, 2));
        assert_eq!(live.lateness_above(1_000_000), (5, 0));
    }
}

//! Live progress of a run on the console: an indicatif bar on a terminal (completed/failed,
//! current req/s and output tok/s), or — when stderr is not a terminal (CI logs, `2> file`) —
//! a compact one-line summary every few seconds. `--disable-tqdm` turns both off.
//!
//! Both read the runner's [`LiveMetrics`] from a ticker thread; nothing is done per SSE event
//! and per request only the bar's position moves.

use indicatif::{ProgressBar, ProgressStyle};
use servebench_core::RequestRecord;
use servebench_runner::{LiveMetrics, LiveSnapshot, RunObserver};
use std::io::IsTerminal;
use std::net::SocketAddr;
use std::sync::mpsc::{self, RecvTimeoutError};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

/// How often the bar's message is refreshed.
pub const BAR_REFRESH: Duration = Duration::from_secs(1);
/// How often the summary line is printed when stderr is not a terminal.
pub const SUMMARY_EVERY: Duration = Duration::from_secs(5);

/// `h:mm:ss` of `seconds` (negative and non-finite values count as 0).
pub fn format_elapsed(seconds: f64) -> String {
    let s = if seconds.is_finite() && seconds > 0.0 { seconds as u64 } else { 0 };
    format!("{}:{:02}:{:02}", s / 3600, s / 60 % 60, s % 60)
}

/// A rate with one decimal below 100, none above (`7.3`, `1234`).
pub fn format_rate(v: f64) -> String {
    let v = if v.is_finite() && v > 0.0 { v } else { 0.0 };
    if v < 100.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.0}")
    }
}

/// `, N waiting for prefill` with a prefill cap (`--max-prefill-concurrency`), else nothing.
fn prefill_waiting(s: &LiveSnapshot) -> String {
    s.prefill_waiting.map_or_else(String::new, |w| format!(", {w} waiting for prefill"))
}

/// The bar's message: outcomes so far and the current rates.
pub fn bar_message(s: &LiveSnapshot) -> String {
    let mut m = format!("{} ok, {} failed", s.completed, s.failed);
    if s.cancelled > 0 {
        m.push_str(&format!(", {} cancelled", s.cancelled));
    }
    m.push_str(&format!(", {} in flight", s.in_flight));
    m.push_str(&prefill_waiting(s));
    m.push_str(&format!(
        " | {} req/s, {} tok/s",
        format_rate(s.requests_per_s),
        format_rate(s.output_tokens_per_s)
    ));
    m
}

/// The non-terminal summary line, e.g.
/// `[0:01:05] 812/2000 done: 800 completed, 12 failed, 64 in flight | 12.5 req/s, 1603 tok/s`.
pub fn summary_line(s: &LiveSnapshot) -> String {
    let done = s.completed + s.failed + s.cancelled;
    // 0 scheduled: the total is not known in advance (closed-loop concurrency stages).
    let of = if s.scheduled > 0 { format!("/{}", s.scheduled) } else { String::new() };
    let mut line = format!(
        "[{}] {done}{of} done: {} completed, {} failed",
        format_elapsed(s.elapsed_s),
        s.completed,
        s.failed
    );
    if s.cancelled > 0 {
        line.push_str(&format!(", {} cancelled", s.cancelled));
    }
    line.push_str(&format!(", {} in flight", s.in_flight));
    line.push_str(&prefill_waiting(s));
    line.push_str(&format!(
        " | {} req/s, {} tok/s",
        format_rate(s.requests_per_s),
        format_rate(s.output_tokens_per_s)
    ));
    line
}

/// Status lines on stdout, warnings on stderr (experiments print one block per point, no
/// progress bar).
#[derive(Debug)]
pub struct LineObserver;

impl RunObserver for LineObserver {
    fn message(&self, text: &str) {
        if is_warning(text) {
            errln!("{text}");
        } else {
            outln!("{text}");
        }
    }
}

/// A warning or note (`warning: …`, `warning[SB302]: …`, `note: …`): for stderr, never mixed
/// into the result on stdout.
pub fn is_warning(text: &str) -> bool {
    text.starts_with("warning") || text.starts_with("note:")
}

/// Console observer: status lines on stdout, warnings and live progress on stderr.
#[derive(Debug)]
pub struct ConsoleObserver {
    show_progress: bool,
    bar: Mutex<Option<ProgressBar>>,
    live: Mutex<Option<Arc<LiveMetrics>>>,
    ticker: Mutex<Option<(mpsc::Sender<()>, JoinHandle<()>)>>,
}

impl ConsoleObserver {
    pub fn new(show_progress: bool) -> Self {
        ConsoleObserver {
            show_progress,
            bar: Mutex::new(None),
            live: Mutex::new(None),
            ticker: Mutex::new(None),
        }
    }

    fn bar(&self) -> Option<ProgressBar> {
        self.bar.lock().ok().and_then(|b| b.clone())
    }

    /// Starts the thread that calls `tick` every `period` until `finished`.
    fn start_ticker(&self, period: Duration, tick: impl Fn() + Send + 'static) {
        let (tx, rx) = mpsc::channel::<()>();
        let spawned = std::thread::Builder::new().name("sb-progress".into()).spawn(move || {
            // Ends when `finished` drops the sender.
            while let Err(RecvTimeoutError::Timeout) = rx.recv_timeout(period) {
                tick();
            }
        });
        if let (Ok(handle), Ok(mut t)) = (spawned, self.ticker.lock()) {
            *t = Some((tx, handle));
        }
    }
}

impl RunObserver for ConsoleObserver {
    fn message(&self, text: &str) {
        match (self.bar(), is_warning(text)) {
            (Some(bar), true) => bar.suspend(|| errln!("{text}")),
            (Some(bar), false) => bar.println(text),
            (None, true) => errln!("{text}"),
            (None, false) => outln!("{text}"),
        }
    }

    fn metrics_listening(&self, addr: SocketAddr) {
        self.message(&format!("Live client metrics (Prometheus) at http://{addr}/metrics"));
    }

    fn live_metrics(&self, live: Arc<LiveMetrics>) {
        if let Ok(mut l) = self.live.lock() {
            *l = Some(live);
        }
    }

    fn started(&self, total: u64) {
        crate::os::signal::measuring_started();
        if !self.show_progress {
            return;
        }
        let Some(live) = self.live.lock().ok().and_then(|l| l.clone()) else { return };
        if !std::io::stderr().is_terminal() {
            self.start_ticker(SUMMARY_EVERY, move || errln!("{}", summary_line(&live.snapshot())));
            return;
        }
        // Total 0: not known in advance (closed-loop concurrency stages): a count, no bar.
        let (bar, template) = match total {
            0 => (ProgressBar::no_length(), "[{elapsed_precise}] {pos} done {msg}"),
            n => {
                (ProgressBar::new(n), "[{elapsed_precise}] {bar:30.cyan/blue} {pos}/{len} (eta {eta}) {msg}")
            }
        };
        let style = ProgressStyle::with_template(template).unwrap_or_else(|_| ProgressStyle::default_bar());
        bar.set_style(style);
        bar.set_message(bar_message(&live.snapshot()));
        if let Ok(mut b) = self.bar.lock() {
            *b = Some(bar.clone());
        }
        self.start_ticker(BAR_REFRESH, move || bar.set_message(bar_message(&live.snapshot())));
    }

    fn request_done(&self, _record: &RequestRecord) {
        if let Some(bar) = self.bar() {
            bar.inc(1);
        }
    }

    fn finished(&self) {
        if let Some((tx, handle)) = self.ticker.lock().ok().and_then(|mut t| t.take()) {
            drop(tx);
            let _ = handle.join();
        }
        let live = self.live.lock().ok().and_then(|l| l.clone());
        if let Some(bar) = self.bar.lock().ok().and_then(|mut b| b.take()) {
            if let Some(live) = &live {
                bar.set_message(bar_message(&live.snapshot()));
            }
            bar.finish();
        } else if let (true, Some(live)) = (self.show_progress, live) {
            errln!("{}", summary_line(&live.snapshot()));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn snap() -> LiveSnapshot {
        LiveSnapshot {
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
        }
    }

    #[test]
    fn elapsed_is_h_mm_ss() {
        assert_eq!(format_elapsed(0.0), "0:00:00");
        assert_eq!(format_elapsed(65.9), "0:01:05");
        assert_eq!(format_elapsed(3.0 * 3600.0 + 7.0), "3:00:07");
        assert_eq!(format_elapsed(-1.0), "0:00:00");
        assert_eq!(format_elapsed(f64::NAN), "0:00:00");
    }

    #[test]
    fn summary_line_is_compact_and_complete() {
        assert_eq!(
            summary_line(&snap()),
            "[0:01:05] 812/2000 done: 800 completed, 12 failed, 64 in flight | 12.5 req/s, 1603 tok/s"
        );
        let s = LiveSnapshot { cancelled: 3, requests_per_s: f64::NAN, output_tokens_per_s: 0.0, ..snap() };
        assert_eq!(
            summary_line(&s),
            "[0:01:05] 815/2000 done: 800 completed, 12 failed, 3 cancelled, 64 in flight | 0.0 req/s, 0.0 tok/s"
        );
        // Total not known (closed-loop concurrency stages).
        let open = LiveSnapshot { scheduled: 0, ..snap() };
        assert!(
            summary_line(&open).starts_with("[0:01:05] 812 done: 800 completed"),
            "{}",
            summary_line(&open)
        );
    }

    #[test]
    fn bar_message_shows_outcomes_and_rates() {
        assert_eq!(bar_message(&snap()), "800 ok, 12 failed, 64 in flight | 12.5 req/s, 1603 tok/s");
    }

    #[test]
    fn a_prefill_cap_adds_the_requests_waiting_for_a_slot() {
        let s = LiveSnapshot { prefill_waiting: Some(5), ..snap() };
        assert_eq!(
            summary_line(&s),
            "[0:01:05] 812/2000 done: 800 completed, 12 failed, 64 in flight, 5 waiting for prefill \
             | 12.5 req/s, 1603 tok/s"
        );
        assert_eq!(
            bar_message(&s),
            "800 ok, 12 failed, 64 in flight, 5 waiting for prefill | 12.5 req/s, 1603 tok/s"
        );
    }
}

//! What the run tells its caller while it goes (console lines, progress, live metrics).

use std::sync::Arc;

use servebench_core::RequestRecord;
use tokio_util::sync::CancellationToken;

use super::live::LiveMetrics;

/// Something that wants to hear about the run's progress (console, progress bar).
pub trait RunObserver: Send + Sync {
    /// A one-line status message (model detected, workload built, warnings...).
    fn message(&self, text: &str);
    /// Called once after warm-up and priming, before the measured phase plans or sends
    /// anything; the phase waits until the returned token is cancelled (server-side scraping
    /// takes its baseline sample then). `None`: nothing to wait for.
    fn before_start(&self) -> Option<CancellationToken> {
        None
    }
    /// The measured phase starts with `total` requests.
    fn started(&self, _total: u64) {}
    /// One request ended.
    fn request_done(&self, _record: &RequestRecord) {}
    /// The measured phase ended.
    fn finished(&self) {}
    /// The live metrics of the measured phase (called just before `started`), for progress
    /// displays that poll them.
    fn live_metrics(&self, _live: Arc<LiveMetrics>) {}
    /// `--metrics-port`: the live metrics endpoint listens on `addr`.
    fn metrics_listening(&self, _addr: std::net::SocketAddr) {}
}

//! The server side of a measured phase: background `/metrics` scraping (`--scrape-metrics`) and
//! profiling (`--profile`), started just before the measured phase sends anything (after warm-up
//! and prefix-cache priming; the first scrape is the baseline of every counter delta, and the
//! phase waits for it) and stopped when it ends (a [`RunObserver`] wrapper drives them). What they saw is rendered by the report's server
//! section (`servebench_report::sections::server`).

use crate::config::RunConfig;
use crate::observe::observer::RunObserver;
use crate::observe::profiling::{profile_until, ProfileOptions, ProfileOutcome};
use crate::observe::scrape::{scrape_from, ServerMetrics};
use crate::observe::server_live::ServerLive;
use servebench_client::transport::{ClientOptions, HttpClient};
use servebench_core::RequestRecord;
use std::sync::Arc;
use std::time::Duration;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

/// What runs on the server side of a measured phase (validated from the flags).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ServerSideOptions {
    /// `--scrape-metrics`: poll `/metrics` this often; `None` = no scraping.
    pub scrape_interval: Option<Duration>,
    /// `--profile`: drive the server's profiler; `None` = no profiling.
    pub profile: Option<ProfileOptions>,
}

/// Background scraping and profiling around one measured phase. Armed before the run; the
/// observer it wraps starts them when the measured phase starts and stops them when it ends.
#[derive(Debug)]
pub struct ServerSide {
    /// Cancelled when the measured phase starts: a start signal, not a stop.
    start: CancellationToken,
    /// Cancelled once the first scrape has answered (at once without scraping).
    baseline: CancellationToken,
    end: CancellationToken,
    scrape: Option<JoinHandle<ServerMetrics>>,
    /// The latest key figures of the scrape, for the live dashboard (`None` without scraping).
    live: Option<Arc<ServerLive>>,
    profile: Option<JoinHandle<ProfileOutcome>>,
}

/// What [`ServerSide::finish`] returns.
#[derive(Debug, Default)]
pub struct ServerSideOutput {
    pub server: Option<ServerMetrics>,
    pub profile: Option<ProfileOutcome>,
}

impl ServerSide {
    /// A control-plane client for `base_url` (its own pool, so polls never wait behind the load).
    pub fn client(run: &RunConfig) -> servebench_core::Result<HttpClient> {
        HttpClient::new(ClientOptions {
            max_idle: 4,
            control_timeout: Duration::from_secs(10),
            ..run.client_options()
        })
    }

    /// [`ServerSide::arm`] for a single run: its own control client, the run's headers and key.
    pub fn for_run(run: &RunConfig, options: &ServerSideOptions) -> servebench_core::Result<ServerSide> {
        let client = Self::client(run)?;
        let headers = servebench_client::build_headers(&run.target)?;
        Ok(Self::arm(&client, &headers, options))
    }

    /// Spawns the tasks (on the current runtime), idle until the measured phase starts.
    pub fn arm(client: &HttpClient, headers: &http::HeaderMap, options: &ServerSideOptions) -> ServerSide {
        let start = CancellationToken::new();
        let start_signal = start.clone();
        let end = CancellationToken::new();
        let end_signal = end.clone();
        let baseline = CancellationToken::new();
        if options.scrape_interval.is_none() {
            baseline.cancel();
        }
        let live = options.scrape_interval.map(|_| Arc::new(ServerLive::default()));
        let scrape = options.scrape_interval.map(|interval| {
            let (client, headers, start_signal, end_signal, baseline) =
                (client.clone(), headers.clone(), start_signal.clone(), end_signal.clone(), baseline.clone());
            let live = live.clone();
            tokio::spawn(async move {
                start_signal.cancelled().await;
                scrape_from(client, headers, interval, end_signal, baseline, live).await
            })
        });
        let profile = options.profile.map(|opts| {
            let (client, headers, start_signal) = (client.clone(), headers.clone(), start_signal);
            tokio::spawn(async move {
                start_signal.cancelled().await;
                profile_until(client, headers, opts, end_signal).await
            })
        });
        ServerSide { start, baseline, end, scrape, live, profile }
    }

    /// The scrape's latest key figures as it goes (`None` without `--scrape-metrics`).
    pub fn live(&self) -> Option<Arc<ServerLive>> {
        self.live.clone()
    }

    /// Wraps `inner` so that the measured phase's start and end drive the tasks.
    pub fn observer(&self, inner: Arc<dyn RunObserver>) -> Arc<dyn RunObserver> {
        Arc::new(PhaseObserver {
            inner,
            start: self.start.clone(),
            baseline: self.baseline.clone(),
            end: self.end.clone(),
        })
    }

    /// Stops the tasks and collects what they produced (nothing if the phase never started).
    pub async fn finish(self) -> ServerSideOutput {
        self.end.cancel();
        if !self.start.is_cancelled() {
            for h in [self.scrape.map(|h| h.abort_handle()), self.profile.map(|h| h.abort_handle())]
                .into_iter()
                .flatten()
            {
                h.abort();
            }
            return ServerSideOutput::default();
        }
        ServerSideOutput {
            server: match self.scrape {
                Some(h) => h.await.ok(),
                None => None,
            },
            profile: match self.profile {
                Some(h) => h.await.ok(),
                None => None,
            },
        }
    }
}

struct PhaseObserver {
    inner: Arc<dyn RunObserver>,
    start: CancellationToken,
    baseline: CancellationToken,
    end: CancellationToken,
}

impl RunObserver for PhaseObserver {
    fn message(&self, text: &str) {
        self.inner.message(text);
    }
    fn before_start(&self) -> Option<CancellationToken> {
        self.start.cancel();
        Some(self.baseline.clone())
    }
    fn started(&self, total: u64) {
        self.start.cancel();
        self.inner.started(total);
    }
    fn request_done(&self, record: &RequestRecord) {
        self.inner.request_done(record);
    }
    fn finished(&self) {
        self.end.cancel();
        self.inner.finished();
    }
    fn live_metrics(&self, live: Arc<crate::observe::live::LiveMetrics>) {
        self.inner.live_metrics(live);
    }
    fn metrics_listening(&self, addr: std::net::SocketAddr) {
        self.inner.metrics_listening(addr);
    }
}

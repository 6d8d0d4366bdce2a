//! The server side of a measured phase: background `/metrics` scraping (`--scrape-metrics`,
//! `--server-metrics-url`), GPU telemetry (`--gpu-metrics`, `--gpu-metrics-url`) and
//! profiling (`--profile`), started just before the measured phase sends anything (after warm-up
//! and prefix-cache priming; the first scrape is the baseline of every counter delta, and the
//! phase waits for it) and stopped when it ends (a [`RunObserver`] wrapper drives them). What they saw is rendered by the report's server
//! section (`servebench_report::sections::server`).

use crate::config::RunConfig;
use crate::observe::latest::LatestServer;
use crate::observe::metrics_url::MetricsUrl;
use crate::observe::observer::RunObserver;
use crate::observe::poll::{
    poll_gpus, scrape_endpoint, EndpointOutcome, GpuOutcome, GpuSource, PollCtx, Source,
};
use crate::observe::profiling::{profile_until, ProfileOptions, ProfileOutcome};
use crate::observe::scrape::{derive, ServerMetrics};
use crate::observe::series_file::SeriesWriter;
use servebench_client::transport::{ClientOptions, HttpClient};
use servebench_core::RequestRecord;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

/// What runs on the server side of a measured phase (validated from the flags).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ServerSideOptions {
    /// `--scrape-metrics`: poll `/metrics` this often; `None` = no scraping.
    pub scrape_interval: Option<Duration>,
    /// `--profile`: drive the server's profiler; `None` = no profiling.
    pub profile: Option<ProfileOptions>,
    /// `--server-metrics-url`: further `/metrics` endpoints (replicas, a router, an exporter).
    pub metrics_urls: Vec<MetricsUrl>,
    /// `--scrape-interval`, for the URLs and the GPUs (the base URL uses `scrape_interval`).
    pub poll_interval: Duration,
    /// `--gpu-metrics`: GPU telemetry; `None` = none.
    pub gpu: Option<GpuOptions>,
    /// Where the server-metrics file goes (`--save-result`); `None` = not written.
    pub series_path: Option<PathBuf>,
}

/// `--gpu-metrics`, `--gpu-metrics-url`: DCGM exporters, or (none given) `nvidia-smi` here.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct GpuOptions {
    pub urls: Vec<MetricsUrl>,
}

impl ServerSideOptions {
    /// Whether any `/metrics` endpoint is scraped.
    pub fn scrapes(&self) -> bool {
        self.scrape_interval.is_some() || !self.metrics_urls.is_empty()
    }

    /// Whether anything on the server side is polled (a `/metrics` endpoint or GPU telemetry).
    pub fn watches_server(&self) -> bool {
        self.scrapes() || self.gpu.is_some()
    }

    fn interval(&self) -> Duration {
        let i = self.scrape_interval.unwrap_or(self.poll_interval);
        if i.is_zero() {
            Duration::from_secs(1)
        } else {
            i
        }
    }
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
    scrape: Vec<JoinHandle<EndpointOutcome>>,
    gpu: Option<JoinHandle<GpuOutcome>>,
    profile: Option<JoinHandle<ProfileOutcome>>,
    interval: Duration,
    writer: SeriesWriter,
    latest: LatestServer,
    /// Why GPU telemetry will have no reading (nvidia-smi absent), known when armed.
    gpu_note: Option<String>,
}

/// What [`ServerSide::finish`] returns.
#[derive(Debug, Default)]
pub struct ServerSideOutput {
    pub server: Option<ServerMetrics>,
    pub profile: Option<ProfileOutcome>,
    /// GPU telemetry (`--gpu-metrics`).
    pub gpu: Option<GpuOutcome>,
    /// The server-metrics file and its line count, when lines were written.
    pub series_file: Option<(PathBuf, u64)>,
    /// Why the server-metrics file is incomplete (a write error), when so.
    pub series_error: Option<String>,
}

impl ServerSide {
    /// A control-plane client for `base_url` (its own pool, so polls never wait behind the load).
    /// Its control timeout (10 s, for profiling calls) is above every poll's own limit
    /// (`poll::poll_timeout`, at most 9 s), which is what bounds a poll and names it.
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
        let end = CancellationToken::new();
        let baseline = CancellationToken::new();
        let writer = match &options.series_path {
            Some(p) if options.scrapes() || options.gpu.is_some() => {
                SeriesWriter::create(p).unwrap_or_default()
            }
            _ => SeriesWriter::none(),
        };
        let latest = LatestServer::default();
        let mut sources: Vec<Source> = Vec::new();
        if options.scrape_interval.is_some() {
            sources.push(Source {
                // A label (results, the series file): the base URL's secret query values redacted.
                url: client
                    .shown_url(&client.control_path_for("/metrics").unwrap_or_else(|_| "/metrics".into())),
                path: "/metrics".into(),
                client: Ok(client.clone()),
                headers: headers.clone(),
            });
        }
        sources.extend(options.metrics_urls.iter().map(|u| url_source(client, u)));
        let (gpu_source, gpu_note) = match &options.gpu {
            None => (None, None),
            Some(g) if !g.urls.is_empty() => {
                (Some(GpuSource::Dcgm(g.urls.iter().map(|u| url_source(client, u)).collect())), None)
            }
            Some(_) => match crate::observe::poll::run_nvidia_smi() {
                Ok(_) => (Some(GpuSource::NvidiaSmi), None),
                Err(e) => (
                    None,
                    Some(format!(
                        "GPU telemetry: {e}; the run goes on without GPU readings (no energy figures)"
                    )),
                ),
            },
        };
        let interval = options.interval();
        let mut baselines = Vec::new();
        let ctx = |stop: &CancellationToken| PollCtx {
            interval,
            started: Instant::now(),
            stop: stop.clone(),
            writer: writer.clone(),
            latest: latest.clone(),
        };
        let scrape = sources
            .into_iter()
            .map(|src| {
                let (start, end, b) = (start.clone(), end.clone(), CancellationToken::new());
                baselines.push(b.clone());
                let mk = ctx(&end);
                tokio::spawn(async move {
                    start.cancelled().await;
                    scrape_endpoint(src, PollCtx { started: Instant::now(), ..mk }, b).await
                })
            })
            .collect();
        let gpu = gpu_source.map(|source| {
            let (start, end, b) = (start.clone(), end.clone(), CancellationToken::new());
            baselines.push(b.clone());
            let mk = ctx(&end);
            tokio::spawn(async move {
                start.cancelled().await;
                poll_gpus(source, PollCtx { started: Instant::now(), ..mk }, b).await
            })
        });
        if baselines.is_empty() {
            // Nothing is polled: nothing to wait for before the measured phase.
            baseline.cancel();
        } else {
            let all = baseline.clone();
            tokio::spawn(async move {
                for b in baselines {
                    b.cancelled().await;
                }
                all.cancel();
            });
        }
        let profile = options.profile.map(|opts| {
            let (client, headers, start_signal, end_signal) =
                (client.clone(), headers.clone(), start.clone(), end.clone());
            tokio::spawn(async move {
                start_signal.cancelled().await;
                profile_until(client, headers, opts, end_signal).await
            })
        });
        ServerSide { start, baseline, end, scrape, gpu, profile, interval, writer, latest, gpu_note }
    }

    /// The latest scraped values, for a live view (empty when nothing is scraped).
    pub fn latest(&self) -> LatestServer {
        self.latest.clone()
    }

    /// Why GPU telemetry was asked and will have no reading (for the run header), when so.
    pub fn gpu_note(&self) -> Option<&str> {
        self.gpu_note.as_deref()
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
        let handles = self.scrape.iter().map(|h| h.abort_handle());
        if !self.start.is_cancelled() {
            let others = [
                self.gpu.as_ref().map(|h| h.abort_handle()),
                self.profile.as_ref().map(|h| h.abort_handle()),
            ];
            for h in handles.chain(others.into_iter().flatten()) {
                h.abort();
            }
            self.writer.finish();
            return ServerSideOutput::default();
        }
        let mut endpoints = Vec::new();
        for h in self.scrape {
            if let Ok(o) = h.await {
                endpoints.push(o);
            }
        }
        let gpu = match self.gpu {
            Some(h) => h.await.ok(),
            None => self.gpu_note.map(|note| GpuOutcome {
                telemetry: servebench_report::sections::server_endpoints::GpuTelemetry {
                    source: "nvidia-smi".into(),
                    note: Some(note),
                    ..Default::default()
                },
                rows: Vec::new(),
            }),
        };
        let profile = match self.profile {
            Some(h) => h.await.ok(),
            None => None,
        };
        let (series_file, series_error) = self.writer.finish();
        ServerSideOutput {
            server: server_metrics(endpoints, self.interval),
            profile,
            gpu,
            series_file,
            series_error,
        }
    }
}

/// A source for a URL: a client of its origin with the run's TLS and proxy options, and no
/// headers (the run's API key and headers go to the base URL only).
fn url_source(base: &HttpClient, u: &MetricsUrl) -> Source {
    let client =
        HttpClient::new(ClientOptions { base_url: u.origin.clone(), max_idle: 2, ..base.options().clone() })
            .map_err(|e| e.to_string());
    Source { url: u.url(), path: u.path.clone(), client, headers: http::HeaderMap::new() }
}

/// `server_metrics` from the endpoints' outcomes: the first endpoint's fixed series (samples,
/// derived figures, failures) as before, and every endpoint's summary. `None` without endpoints.
fn server_metrics(endpoints: Vec<EndpointOutcome>, interval: Duration) -> Option<ServerMetrics> {
    let first = endpoints.first()?;
    let samples = first.samples.clone();
    Some(ServerMetrics {
        interval_s: interval.as_secs_f64(),
        failed_scrapes: first.summary.failed_scrapes,
        last_error: first.summary.last_error.clone(),
        derived: derive(&samples),
        samples,
        endpoints: endpoints.into_iter().map(|e| e.summary).collect(),
        series_file: None,
    })
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

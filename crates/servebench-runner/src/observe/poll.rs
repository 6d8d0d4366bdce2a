//! The polling loops of the measured phase: one per `/metrics` endpoint
//! ([`scrape_endpoint`]) and one for the GPUs ([`poll_gpus`]: DCGM exporters or `nvidia-smi`).
//! Each polls at once (the baseline: `baseline` is cancelled after it, and the measured phase
//! waits for it), then every `interval` until `stop`, then once more.

use super::endpoint_track::EndpointTracker;
use super::exposition::Scrape;
use super::gpu::{parse_dcgm, parse_nvidia_smi, GpuId, GpuReading, NVIDIA_SMI_QUERY};
use super::latest::{EndpointLatest, LatestServer};
use super::scrape::{sample_of, ScrapeSample};
use super::series_file::{failed_line, SeriesWriter};
use serde_json::json;
use servebench_client::transport::HttpClient;
use servebench_report::sections::server_endpoints::{EndpointSummary, GpuRow, GpuTelemetry};
use std::collections::BTreeMap;
use std::time::{Duration, Instant};
use tokio_util::sync::CancellationToken;

/// Where a poll goes: a client for the URL's origin (`Err`: the client could not be built),
/// the path, the headers (the run's only for the base URL).
#[derive(Debug, Clone)]
pub struct Source {
    pub url: String,
    pub path: String,
    pub client: Result<HttpClient, String>,
    pub headers: http::HeaderMap,
}

/// What every loop shares: the phase's clock, its stop, the file and the live snapshot.
#[derive(Debug, Clone)]
pub struct PollCtx {
    pub interval: Duration,
    pub started: Instant,
    pub stop: CancellationToken,
    pub writer: SeriesWriter,
    pub latest: LatestServer,
}

/// How long one poll may take: the poll interval, at least 2 s and at most 9 s (below the
/// control calls' 10 s timeout). A hung endpoint then costs the measured phase's start (which waits for the
/// baseline) and its end (the last poll) at most this, not 10 s each, and polls stay near their
/// interval.
pub fn poll_timeout(interval: Duration) -> Duration {
    interval.clamp(Duration::from_secs(2), MAX_POLL_TIMEOUT)
}

/// The longest poll limit: below the control client's 10 s timeout, so a poll's own limit (and
/// its message) is what ends a hung poll.
const MAX_POLL_TIMEOUT: Duration = Duration::from_secs(9);

/// GET the source's path once, within `timeout`; the body as text.
pub async fn get_text(src: &Source, timeout: Duration) -> Result<String, String> {
    let client = src.client.as_ref().map_err(Clone::clone)?;
    let answer =
        tokio::time::timeout(timeout, client.request_raw(http::Method::GET, &src.path, &src.headers, None));
    let r = answer
        .await
        .map_err(|_| {
            format!(
                "GET {}: no answer within {:.1} s (a poll's limit: the poll interval, at least 2 s); fix: check that the server is running at that URL",
                src.url,
                timeout.as_secs_f64()
            )
        })?
        .map_err(|e| e.to_string())?;
    if !(200..300).contains(&r.status) {
        return Err(format!("GET {}: HTTP {}", src.url, r.status));
    }
    Ok(String::from_utf8_lossy(&r.body).into_owned())
}

/// The loops' clock: the first tick at once, then every interval until `stop`, then one more;
/// `baseline` is cancelled once the first tick's work is done.
struct Ticker {
    next: tokio::time::Instant,
    first: bool,
    last: bool,
    /// The tick is the baseline (before the first request) or the final one (after the phase).
    edge: bool,
    baseline: CancellationToken,
}

impl Ticker {
    fn new(baseline: CancellationToken) -> Ticker {
        Ticker { next: tokio::time::Instant::now(), first: true, last: false, edge: false, baseline }
    }

    /// Waits for the next tick; its time (s from the phase start), or `None` when done.
    async fn tick(&mut self, ctx: &PollCtx) -> Option<f64> {
        if !self.first {
            self.baseline.cancel();
            if self.last {
                return None;
            }
            self.next += ctx.interval;
            tokio::select! {
                _ = tokio::time::sleep_until(self.next) => {}
                _ = ctx.stop.cancelled() => {}
            }
        }
        self.edge = self.first || ctx.stop.is_cancelled();
        self.first = false;
        self.last = ctx.stop.is_cancelled();
        Some(ctx.started.elapsed().as_secs_f64())
    }

    /// Runs one poll's `work`; a poll other than the final one is abandoned when the phase
    /// ends (`None`): the final poll follows at once, so a hung endpoint holds the end of the
    /// phase for one poll limit, not two.
    async fn poll<T>(&self, ctx: &PollCtx, work: impl std::future::Future<Output = T>) -> Option<T> {
        if self.last {
            return Some(work.await);
        }
        tokio::select! {
            r = work => Some(r),
            _ = ctx.stop.cancelled() => None,
        }
    }
}

/// What one endpoint's loop produced: its summary and (for the first endpoint) the older
/// fixed-name samples of `server_metrics.samples`.
#[derive(Debug, Default)]
pub struct EndpointOutcome {
    pub summary: EndpointSummary,
    pub samples: Vec<ScrapeSample>,
}

/// Polls one `/metrics` endpoint through the phase.
pub async fn scrape_endpoint(src: Source, ctx: PollCtx, baseline: CancellationToken) -> EndpointOutcome {
    let mut tracker = EndpointTracker::new(&src.url);
    let mut samples = Vec::new();
    let lines = ctx.writer.enabled();
    let mut ticker = Ticker::new(baseline);
    while let Some(t_s) = ticker.tick(&ctx).await {
        let edge = ticker.edge;
        let Some(text) = ticker.poll(&ctx, get_text(&src, poll_timeout(ctx.interval))).await else {
            continue;
        };
        let parsed = text.and_then(|t| {
            let scrape = Scrape::parse(&t).map_err(|e| format!("unparsable /metrics: {e}"))?;
            Ok((ScrapeSample { phase_edge: edge, ..sample_of(&scrape, t_s) }, scrape))
        });
        match parsed {
            Ok((sample, scrape)) => {
                let (values, line) = tracker.scrape(&scrape, (t_s, edge), lines);
                if let Some(line) = line {
                    ctx.writer.line(&line);
                }
                let values = values.scalars.iter().map(|(m, v)| (*m, v.2)).collect();
                ctx.latest.set_endpoint(EndpointLatest {
                    url: src.url.clone(),
                    t_s,
                    values,
                    last_failed: false,
                });
                samples.push(sample);
            }
            Err(e) => {
                if lines {
                    ctx.writer.line(&failed_line(&src.url, "prometheus", t_s, &e));
                }
                ctx.latest.endpoint_failed(&src.url);
                tracker.failed(e);
            }
        }
    }
    EndpointOutcome { summary: tracker.summary(), samples }
}

/// Where GPU readings come from.
#[derive(Debug, Clone)]
pub enum GpuSource {
    /// DCGM exporters.
    Dcgm(Vec<Source>),
    /// `nvidia-smi` on this host (found on the PATH when armed).
    NvidiaSmi,
}

/// What the GPU loop produced: its telemetry block and one row per GPU.
#[derive(Debug, Clone, Default)]
pub struct GpuOutcome {
    pub telemetry: GpuTelemetry,
    pub rows: Vec<GpuRow>,
}

/// Runs `nvidia-smi` once with the query; its stdout, or why it could not run.
pub fn run_nvidia_smi() -> Result<String, String> {
    let out = std::process::Command::new("nvidia-smi")
        .arg(format!("--query-gpu={NVIDIA_SMI_QUERY}"))
        .arg("--format=csv,noheader,nounits")
        .output()
        .map_err(|e| match e.kind() {
            std::io::ErrorKind::NotFound => "nvidia-smi not found on the PATH".to_owned(),
            _ => format!("nvidia-smi could not run: {e}"),
        })?;
    if !out.status.success() {
        let err = String::from_utf8_lossy(&out.stderr);
        return Err(format!("nvidia-smi failed ({}): {}", out.status, err.trim()));
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

fn gpu_line(
    endpoint: &str,
    source: &str,
    t_s: f64,
    readings: &BTreeMap<GpuId, GpuReading>,
) -> serde_json::Value {
    let mut series = Vec::new();
    for ((host, gpu, uuid), r) in readings {
        for (name, v) in [
            ("power_w", r.power_w),
            ("energy_mj", r.energy_mj),
            ("util_pct", r.util_pct),
            ("fb_used_mib", r.fb_used_mib),
            ("sm_clock_mhz", r.sm_clock_mhz),
        ] {
            if let Some(v) = v {
                let kind = if name == "energy_mj" { "counter" } else { "gauge" };
                series.push(json!({"name": name, "labels": {"host": host, "gpu": gpu, "uuid": uuid}, "type": kind, "value": v}));
            }
        }
    }
    json!({"endpoint": endpoint, "source": source, "t_s": t_s, "ok": true, "error": null, "series": series})
}

/// One GPU source's answer to a poll: its GPUs' readings, or why there are none.
type GpuPoll = Result<BTreeMap<GpuId, GpuReading>, String>;

/// Polls the GPUs through the phase.
pub async fn poll_gpus(source: GpuSource, ctx: PollCtx, baseline: CancellationToken) -> GpuOutcome {
    let (name, urls) = match &source {
        GpuSource::Dcgm(s) => ("dcgm", s.iter().map(|s| s.url.clone()).collect()),
        GpuSource::NvidiaSmi => ("nvidia-smi", Vec::new()),
    };
    let mut telemetry = GpuTelemetry { source: name.to_owned(), urls, ..GpuTelemetry::default() };
    let mut readings: BTreeMap<GpuId, Vec<GpuReading>> = BTreeMap::new();
    let mut ticker = Ticker::new(baseline);
    while let Some(t_s) = ticker.tick(&ctx).await {
        let edge = ticker.edge;
        let polls: Vec<(String, GpuPoll)> = match &source {
            GpuSource::Dcgm(sources) => {
                // The exporters are polled together: hung ones cost one poll limit, not one each.
                let all = futures::future::join_all(sources.iter().map(|src| async move {
                    let host =
                        src.url.split("://").nth(1).unwrap_or(&src.url).split('/').next().unwrap_or("");
                    let r = get_text(src, poll_timeout(ctx.interval)).await.and_then(|t| {
                        let samples = servebench_core::prom::parse_text(&t)
                            .map_err(|e| format!("unparsable /metrics: {e}"))?;
                        Ok(parse_dcgm(&samples, host, t_s))
                    });
                    (src.url.clone(), r)
                }));
                let Some(out) = ticker.poll(&ctx, all).await else { continue };
                out
            }
            GpuSource::NvidiaSmi => {
                let r =
                    tokio::task::spawn_blocking(run_nvidia_smi).await.unwrap_or_else(|e| Err(e.to_string()));
                vec![("nvidia-smi".to_owned(), r.map(|csv| parse_nvidia_smi(&csv, t_s)))]
            }
        };
        for (endpoint, r) in polls {
            telemetry.scrapes += 1;
            match r {
                Ok(g) => {
                    if ctx.writer.enabled() {
                        ctx.writer.line(&gpu_line(&endpoint, name, t_s, &g));
                    }
                    for (id, reading) in g {
                        readings.entry(id).or_default().push(GpuReading { phase_edge: edge, ..reading });
                    }
                }
                Err(e) => {
                    telemetry.failed_scrapes += 1;
                    if ctx.writer.enabled() {
                        ctx.writer.line(&failed_line(&endpoint, name, t_s, &e));
                    }
                    telemetry.last_error = Some(e);
                }
            }
        }
        let latest: Vec<f64> =
            readings.values().filter_map(|v| v.last().filter(|r| r.t_s == t_s)?.power_w).collect();
        ctx.latest.set_gpu((!latest.is_empty()).then(|| latest.iter().sum()), readings.len());
    }
    if readings.is_empty() {
        telemetry.note = Some(match &telemetry.last_error {
            Some(e) => format!("no GPU reading: {e}"),
            None => "no GPU reading: the source listed no GPU".to_owned(),
        });
    }
    let rows = readings.iter().map(|(id, r)| super::gpu::gpu_row(id, r)).collect();
    GpuOutcome { telemetry, rows }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ctx(stop: &CancellationToken) -> PollCtx {
        PollCtx {
            interval: Duration::from_secs(3600),
            started: Instant::now(),
            stop: stop.clone(),
            writer: SeriesWriter::none(),
            latest: LatestServer::default(),
        }
    }

    /// A hung endpoint held the end of the phase for two poll limits: the poll in flight when
    /// the phase ended ran to its limit, then the final poll ran to its own. The poll in flight
    /// is abandoned at the end (not counted), and the final poll follows at once and runs whole.
    #[tokio::test]
    async fn the_poll_in_flight_when_the_phase_ends_gives_way_to_the_final_poll() {
        let stop = CancellationToken::new();
        let ctx = ctx(&stop);
        let mut ticker = Ticker::new(CancellationToken::new());
        assert!(ticker.tick(&ctx).await.is_some(), "the baseline tick");
        let ended = stop.clone();
        tokio::spawn(async move { ended.cancel() });
        let hung = ticker.poll(&ctx, std::future::pending::<()>()).await;
        assert_eq!(hung, None, "abandoned when the phase ended");
        assert!(ticker.tick(&ctx).await.is_some(), "the final tick comes at once");
        assert_eq!(ticker.poll(&ctx, async { 7 }).await, Some(7), "the final poll runs whole");
        assert!(ticker.tick(&ctx).await.is_none(), "nothing after the final poll");
    }
}

//! The runner's side of sharded runs (docs/scale-out.md): the shard's share of the one seeded
//! workload and schedule, the wait for `--start-at`, and the header and summary lines of the
//! records file.
//!
//! Sharding is a filter over `(position, intended offset)` applied after the whole workload and
//! its `ArrivalSchedule` are built, so it composes with any schedule: every shard builds the same
//! ones and keeps positions `p % N == I` (`ShardSpec`). Requests keep their workload index, so
//! records of the shards union to the records of one process.

use crate::config::RunConfig;
use crate::observe::health::HealthSamples;
use crate::observe::observer::RunObserver;
use crate::records::sink::RecordSink;
use crate::LoadOptions;
use servebench_client::backend::TargetConfig;
use servebench_core::clock::unix_now_us;
use servebench_core::early_stop::EarlyStopReport;
use servebench_core::schedule::{ArrivalSchedule, RateConfig};
use servebench_core::shard::{ShardHeader, ShardRunInfo, ShardStage, ShardSummary, FORMAT_VERSION};
use servebench_core::stats::percentile;
use servebench_core::{BenchError, Requests, Result, RunClock};
use sha2::{Digest, Sha256};
use std::io::Write;
use std::path::Path;
use std::time::{Duration, Instant};
use tokio_util::sync::CancellationToken;

/// The shard's part of one run, set up once the schedule is built.
#[derive(Debug, Clone)]
pub struct ShardRun {
    header: ShardHeader,
}

/// What of the load decides what the run sends and when beyond its requests and schedule (the
/// whole run's, equal on every shard of one run): the concurrency caps (totals), LoRA adapters,
/// cancellation by design, the end of a `--duration`, early stop, retries, and what every
/// request's body carries (backend, endpoint, model, sampling and body fields). Not the headers
/// or the API key (secrets, and a header may name its shard).
#[derive(Debug, Clone, Copy)]
pub struct LoadKey<'a> {
    pub max_concurrency: Option<usize>,
    pub retries: u32,
    pub load: &'a LoadOptions,
    pub target: &'a TargetConfig,
    pub model_id: &'a str,
}

impl<'a> LoadKey<'a> {
    /// The run's load key (`model_id`: the model the run resolved).
    pub fn of(cfg: &'a RunConfig, model_id: &'a str) -> Self {
        let (max_concurrency, retries) = (cfg.max_concurrency, cfg.retries);
        LoadKey { max_concurrency, retries, load: &cfg.load, target: &cfg.target, model_id }
    }

    /// The text the fingerprint hashes.
    pub fn describe(&self) -> String {
        let (l, t) = (self.load, self.target);
        format!(
            "max_concurrency {:?} max_prefill_concurrency {:?} lora {:?} cancellation {:?} duration {:?} \
             cancel_at_end {} early_stop {:?} retries {}\nbackend {:?} endpoint {:?} model {:?} logprobs {:?} ignore_eos {} \
             sampling {} extra_body {} batch_size {}",
            self.max_concurrency,
            l.max_prefill_concurrency,
            l.lora,
            l.cancellation,
            l.duration,
            l.cancel_at_end,
            l.early_stop,
            self.retries,
            t.backend,
            // The default endpoint given or not is one endpoint.
            t.endpoint.as_deref().unwrap_or(t.backend.default_endpoint()),
            self.model_id,
            t.logprobs,
            t.ignore_eos,
            sorted_json(&t.sampling),
            sorted_json(&t.extra_body),
            t.batch_size,
        )
    }
}

/// A JSON object's text with its keys in order (at every level): the same fields given in
/// another order are the same body.
fn sorted_json(map: &serde_json::Map<String, serde_json::Value>) -> String {
    fn sort(v: &serde_json::Value) -> serde_json::Value {
        match v {
            serde_json::Value::Object(m) => {
                let mut keys: Vec<&String> = m.keys().collect();
                keys.sort();
                serde_json::Value::Object(keys.into_iter().map(|k| (k.clone(), sort(&m[k]))).collect())
            }
            serde_json::Value::Array(a) => serde_json::Value::Array(a.iter().map(sort).collect()),
            other => other.clone(),
        }
    }
    sort(&serde_json::Value::Object(map.clone())).to_string()
}

/// sha256 (hex) of everything that decides what the run sends and when: servebench's version,
/// the seed, the rate configuration, the rest of the load ([`LoadKey`]), every arrival
/// offset and every request of the whole workload (its `Debug` form, so fields added to
/// `RequestSpec` are covered). Lazy requests are built one at a time for it (so every shard
/// builds the whole workload once, without holding it).
pub fn workload_fingerprint(
    workload: &Requests,
    (rate, load): (&RateConfig, &str),
    seed: u64,
    offsets_us: &[u64],
) -> String {
    struct HashWriter(Sha256);
    impl std::fmt::Write for HashWriter {
        fn write_str(&mut self, s: &str) -> std::fmt::Result {
            self.0.update(s.as_bytes());
            Ok(())
        }
    }
    let mut h = HashWriter(Sha256::new());
    let _ = std::fmt::Write::write_fmt(
        &mut h,
        format_args!(
            "servebench-workload/2\nversion {}\nseed {seed}\nrate {rate:?}\nload {load}\nrequests {}\n",
            env!("CARGO_PKG_VERSION"),
            workload.len()
        ),
    );
    for o in offsets_us {
        h.0.update(o.to_le_bytes());
    }
    for r in workload.specs() {
        let _ = std::fmt::Write::write_fmt(&mut h, format_args!("{:?}\n", &*r));
    }
    hex::encode(h.0.finalize())
}

/// Keeps this shard's share of `workload` and `schedule` (positions `p % N == I`). Without
/// sharding both are returned unchanged and no `ShardRun`. Refused (every shard alike, as each
/// plans the same workload) when the workload has fewer requests than shards: a dataset file
/// with fewer rows, or a drawn `--duration` schedule with fewer arrivals, left a shard with
/// nothing to send, and it exited 0.
pub fn take_share(
    cfg: &RunConfig,
    model_id: &str,
    tokenizer_id: &str,
    workload: Requests,
    schedule: ArrivalSchedule,
) -> Result<(Requests, ArrivalSchedule, Option<ShardRun>)> {
    let Some(shard) = &cfg.shard else { return Ok((workload, schedule, None)) };
    let total = workload.len();
    fewer_requests_than_shards(total, shard.spec.count)?;
    let load = LoadKey::of(cfg, model_id).describe();
    let fingerprint = workload_fingerprint(&workload, (&cfg.rate, &load), cfg.seed, &schedule.offsets_us);
    let positions = shard.spec.positions(total);
    let offsets_us = positions.iter().filter_map(|&p| schedule.offsets_us.get(p).copied()).collect();
    let requests = workload.retain_positions(|p| shard.spec.owns(p));
    let header = ShardHeader {
        version: FORMAT_VERSION,
        servebench_version: env!("CARGO_PKG_VERSION").into(),
        shard_index: shard.spec.index,
        num_shards: shard.spec.count,
        workload_fingerprint: fingerprint,
        seed: cfg.seed,
        total_requests: total as u64,
        shard_requests: positions.len() as u64,
        wall_anchor_unix_us: 0,
        start_at_unix_us: cfg.start_at_unix_us,
        waited_us: None,
        merged_from: None,
        run: ShardRunInfo {
            model_id: model_id.into(),
            tokenizer_id: Some(tokenizer_id.into()),
            backend: shard.backend.clone(),
            label: shard.label.clone(),
            request_rate: cfg.rate.request_rate.is_finite().then_some(cfg.rate.request_rate),
            burstiness: cfg.rate.burstiness,
            ramp_up: cfg.rate.ramp_up,
            max_concurrency: shard.max_concurrency_total.map(|c| c as u64),
            trace_time_scale: cfg.dataset.trace_time_scale(),
            stages: cfg
                .planned_stages()
                .iter()
                .map(|s| ShardStage { rate: s.rate.is_finite().then_some(s.rate), seconds: s.seconds })
                .collect(),
            metrics: Some(shard.metrics.clone()),
            metadata: shard.metadata.clone(),
        },
    };
    Ok((requests, ArrivalSchedule { offsets_us }, Some(ShardRun { header })))
}

/// The refusal of shards that would send nothing: `total` planned requests, `count` shards.
fn fewer_requests_than_shards(total: usize, count: u32) -> Result<()> {
    if total >= count as usize {
        return Ok(());
    }
    Err(BenchError::config(
        "--num-shards",
        format!(
            "{count} shards share {total} requests (what the dataset and schedule gave): shards {total} to {} \
             would send none",
            count - 1
        ),
        format!("pass at most {total} shards, or a dataset or --duration that gives at least {count} requests"),
    ))
}

/// English ordinal: 1st, 2nd, 3rd, 4th, 11th, 12th, 13th, 21st, 22nd, 101st, 111th.
pub fn ordinal(n: u64) -> String {
    let suffix = match (n % 10, n % 100) {
        (_, 11..=13) => "th",
        (1, _) => "st",
        (2, _) => "nd",
        (3, _) => "rd",
        _ => "th",
    };
    format!("{n}{suffix}")
}

impl ShardRun {
    /// One line for the console: which share this shard sends.
    pub fn describe(&self) -> String {
        let h = &self.header;
        format!(
            "Shard {} of {}: {} of {} requests (every {} arrival from position {}), workload fingerprint {}",
            h.shard_index,
            h.num_shards,
            h.shard_requests,
            h.total_requests,
            ordinal(u64::from(h.num_shards)),
            h.shard_index,
            h.workload_fingerprint.chars().take(12).collect::<String>()
        )
    }

    /// The header as written (anchor filled in by `write_header`).
    pub fn header(&self) -> &ShardHeader {
        &self.header
    }

    /// Writes the header line into the fresh records file: the shard, the fingerprint and the
    /// wall-clock anchor of `clock`.
    pub fn write_header(
        &mut self,
        sink: Option<&mut RecordSink>,
        clock: &RunClock,
        waited_us: Option<i64>,
    ) -> Result<()> {
        self.header.wall_anchor_unix_us = clock.wall_anchor_unix_us();
        self.header.waited_us = waited_us;
        match sink {
            Some(s) => s.write_line(&self.header.to_line()),
            None => Ok(()),
        }
    }

    /// Appends the summary line (client health) to the records file at `path`.
    pub fn write_summary(
        &self,
        path: Option<&Path>,
        health: &HealthSamples,
        records: usize,
        (interrupted, early_stop): (bool, Option<&EarlyStopReport>),
    ) -> Result<()> {
        let Some(path) = path else { return Ok(()) };
        let lateness: Vec<f64> = health.dispatch_lateness_us.iter().map(|&v| v as f64).collect();
        let hiccups: Vec<f64> = health.hiccup_us.iter().map(|&v| f64::from(v)).collect();
        let summary = ShardSummary {
            shard_index: self.header.shard_index,
            records: records as u64,
            first_dispatch_lateness_us: health.dispatch_lateness_us.first().copied(),
            dispatch_lateness_p50_us: (!lateness.is_empty()).then(|| percentile(&lateness, 50.0)),
            dispatch_lateness_p99_us: (!lateness.is_empty()).then(|| percentile(&lateness, 99.0)),
            dispatch_lateness_max_us: health.dispatch_lateness_us.iter().max().copied(),
            hiccup_p99_us: (!hiccups.is_empty()).then(|| percentile(&hiccups, 99.0)),
            client_cpu_seconds: health.client_cpu_seconds,
            wall_seconds: health.wall_seconds,
            cpus: health.cpus,
            peak_rss_bytes: health.peak_rss_bytes,
            connections_opened: health.connections_opened,
            interrupted,
            early_stop: early_stop.cloned(),
        };
        let io = |e: std::io::Error| BenchError::io(path.display(), e);
        let mut f = std::fs::OpenOptions::new().append(true).open(path).map_err(io)?;
        writeln!(f, "{}", summary.to_line()).map_err(io)?;
        f.flush().map_err(io)
    }
}

/// This shard's concurrency limit: its share of the total (`None` when not sharded: the total).
pub fn max_concurrency(cfg: &RunConfig) -> Option<usize> {
    match &cfg.shard {
        Some(s) => cfg.max_concurrency.map(|c| s.spec.concurrency_share(c).unwrap_or(1)),
        None => cfg.max_concurrency,
    }
}

/// This shard's share of `--max-prefill-concurrency` (shared out as `--max-concurrency` is).
pub fn max_prefill_concurrency(cfg: &RunConfig) -> Option<usize> {
    let cap = cfg.load.max_prefill_concurrency;
    match &cfg.shard {
        Some(s) => cap.map(|c| s.spec.concurrency_share(c).unwrap_or(1)),
        None => cap,
    }
}

/// This shard's share of the arrival rate: it sends every `N`-th arrival of the whole run's
/// schedule, so `1/N` of the rate (and of a ramp's rates); the whole rate when not sharded.
pub fn rate_share(cfg: &RunConfig) -> RateConfig {
    let mut rate = cfg.rate;
    rate.request_rate = share_of_rate(cfg, rate.request_rate);
    if let Some(r) = rate.ramp_up.as_mut() {
        r.start_rps = share_of_rate(cfg, r.start_rps);
        r.end_rps = share_of_rate(cfg, r.end_rps);
    }
    rate
}

/// This shard's share of one arrival rate of the whole run (`rps / N`; `rps` when not
/// sharded): of `--request-rate`, a ramp's end points, a `--stages` rate.
pub fn share_of_rate(cfg: &RunConfig, rps: f64) -> f64 {
    match &cfg.shard {
        Some(s) => rps / f64::from(s.spec.count.max(1)),
        None => rps,
    }
}

/// How long before a `--start-at` instant the wait before the server-side baseline ends
/// ([`wait_for_baseline`]): the baseline scrape then runs in this lead, not in the schedule.
pub const BASELINE_LEAD: Duration = Duration::from_millis(500);

/// The `--start-at` instant on this host's monotonic clock and how far ahead of now it is (µs,
/// negative when it has passed); `None` without `--start-at`.
fn start_instant(cfg: &RunConfig) -> Option<(Instant, i64)> {
    let start = cfg.start_at_unix_us?;
    let now_mono = Instant::now();
    // The configuration keeps the start within a week ahead and an hour past; the library
    // stays total for any value (no wrap to "passed 1796610216 s ago", no overflow).
    let lead_us =
        i64::try_from(start).unwrap_or(i64::MAX).saturating_sub(i64::try_from(unix_now_us()).unwrap_or(0));
    let lead = Duration::from_micros(lead_us.unsigned_abs());
    let origin = match lead_us >= 0 {
        true => now_mono.checked_add(lead),
        false => now_mono.checked_sub(lead),
    }
    .unwrap_or(now_mono);
    Some((origin, lead_us))
}

/// Who waits, for messages: `shard I of N` or `this run`.
fn who(cfg: &RunConfig) -> String {
    match &cfg.shard {
        Some(s) => format!("shard {} of {}", s.spec.index, s.spec.count),
        None => "this run".into(),
    }
}

/// Sleeps until `until` (a message every 10 s when `announce`); the stop signal ends the wait.
async fn wait_until(until: Instant, announce: Option<(&dyn RunObserver, &str)>, stop: &CancellationToken) {
    loop {
        let left = until.saturating_duration_since(Instant::now());
        if left.is_zero() {
            break;
        }
        if let Some((observer, who)) = announce {
            observer.message(&format!("Waiting {:.1} s for --start-at ({who})", left.as_secs_f64()));
        }
        let next = Instant::now() + left.min(Duration::from_secs(10));
        tokio::select! {
            _ = tokio::time::sleep_until(next.into()) => {}
            _ = stop.cancelled() => break,
        }
    }
}

/// With `--start-at`, waits until [`BASELINE_LEAD`] before the start instant (announced), so
/// the server-side baseline (the first scrape of `--server-metrics`/`--gpu-metrics`) is taken
/// at the start, not before a wait of minutes whose idle power and counters would then count in
/// the run's deltas; [`start_clock`] waits the rest. Returns how far ahead the start was when
/// the wait began (µs); `None` without `--start-at`.
pub async fn wait_for_baseline(
    cfg: &RunConfig,
    observer: &dyn RunObserver,
    stop: &CancellationToken,
) -> Option<i64> {
    let (origin, lead_us) = start_instant(cfg)?;
    if lead_us > 0 {
        let until = origin.checked_sub(BASELINE_LEAD).unwrap_or(origin);
        wait_until(until, Some((observer, &who(cfg))), stop).await;
    }
    Some(lead_us)
}

/// The clock of a sharded or `--start-at` run, made before the records file so its header can
/// carry the anchor; `None` for a plain run (which starts its clock as before).
///
/// With `--start-at` the origin is the instant this host's wall clock reads the start time: the
/// shard waits for it (a message every 10 s; the stop signal ends the wait) and returns how long
/// it waited, counted from the start of [`wait_for_baseline`] (`first_lead_us`). If the
/// instant has already passed, the origin is still the start instant, so the shard's schedule
/// stays aligned with the others; its overdue arrivals are released at once and show as
/// dispatch lateness (the waited time is then negative).
pub async fn start_clock(
    cfg: &RunConfig,
    observer: &dyn RunObserver,
    stop: &CancellationToken,
    first_lead_us: Option<i64>,
) -> Option<(RunClock, Option<i64>)> {
    if cfg.shard.is_none() && cfg.start_at_unix_us.is_none() {
        return None;
    }
    let Some((origin, lead_us)) = start_instant(cfg) else { return Some((RunClock::start(), None)) };
    let who = who(cfg);
    if lead_us < 0 {
        let lead = Duration::from_micros(lead_us.unsigned_abs());
        observer.message(&format!(
            "warning: --start-at passed {:.3} s ago before {who} was ready; its schedule stays anchored at \
             the start instant, so overdue requests are sent at once (see dispatch lateness)",
            lead.as_secs_f64()
        ));
    } else {
        // The last moments before the start (after the baseline's lead) are not announced.
        let announce =
            (Duration::from_micros(lead_us.unsigned_abs()) > BASELINE_LEAD).then_some((observer, &*who));
        wait_until(origin, announce, stop).await;
    }
    // Late (the baseline took the lead and more) says how late; else the whole wait.
    let waited = if lead_us < 0 { lead_us } else { first_lead_us.unwrap_or(lead_us) };
    Some((RunClock::at(origin), Some(waited)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use servebench_core::{Prompt, RequestSpec, Workload};

    #[test]
    fn shard_message_says_every_2nd_arrival_not_every_2th() {
        let got: Vec<String> = [1, 2, 3, 4, 11, 12, 13, 21, 22, 23, 101, 111, 112].map(ordinal).to_vec();
        let want = [
            "1st", "2nd", "3rd", "4th", "11th", "12th", "13th", "21st", "22nd", "23rd", "101st", "111th",
            "112th",
        ];
        assert_eq!(got, want);
    }

    fn workload(n: u64) -> Requests {
        Workload {
            resampled: 0,
            requests: (0..n)
                .map(|i| RequestSpec::new(i, Prompt::Text(format!("p{i}").into()), 3, 4))
                .collect(),
        }
        .into()
    }

    #[test]
    fn records_file_carries_header_and_summary_and_readers_skip_them() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.records.jsonl");
        let mut sink = RecordSink::create(&path).unwrap();
        let header = ShardHeader {
            version: FORMAT_VERSION,
            servebench_version: "t".into(),
            shard_index: 1,
            num_shards: 2,
            workload_fingerprint: "ab".into(),
            seed: 0,
            total_requests: 4,
            shard_requests: 2,
            wall_anchor_unix_us: 0,
            start_at_unix_us: None,
            waited_us: None,
            merged_from: None,
            run: ShardRunInfo::default(),
        };
        let mut run = ShardRun { header };
        let clock = RunClock::start();
        run.write_header(Some(&mut sink), &clock, Some(-7)).unwrap();
        for i in [1u64, 3] {
            sink.append(&servebench_core::RequestRecord::scheduled(i, format!("r{i}"), i, 1, 1)).unwrap();
        }
        drop(sink);
        let health =
            HealthSamples { dispatch_lateness_us: vec![40, 10, 20], wall_seconds: 1.0, ..Default::default() };
        run.write_summary(Some(&path), &health, 2, (false, None)).unwrap();

        let (records, bad) = crate::records::sink::read_records(&path).unwrap();
        assert_eq!((records.len(), bad), (2, 0));
        let file = crate::records::sink::read_records_file(&path).unwrap();
        let h = file.shard_header.unwrap();
        assert_eq!(h.wall_anchor_unix_us, clock.wall_anchor_unix_us());
        assert_eq!(h.waited_us, Some(-7));
        let s = file.shard_summary.unwrap();
        assert_eq!(
            (s.records, s.first_dispatch_lateness_us, s.dispatch_lateness_max_us),
            (2, Some(40), Some(40))
        );
        assert_eq!(s.dispatch_lateness_p50_us, Some(20.0));
    }

    #[test]
    fn fewer_requests_than_shards_are_refused_naming_the_idle_shards() {
        assert!(fewer_requests_than_shards(3, 3).is_ok());
        let e = fewer_requests_than_shards(2, 5).unwrap_err().to_string();
        assert!(
            e.contains("5 shards share 2 requests") && e.contains("shards 2 to 4 would send none"),
            "{e}"
        );
        assert!(e.contains("pass at most 2 shards"), "{e}");
    }

    #[test]
    fn fingerprint_changes_with_workload_seed_and_schedule() {
        let rate = RateConfig { request_rate: 10.0, ..RateConfig::default() };
        let w = workload(20);
        let s = ArrivalSchedule::generate(20, &rate, 1);
        let base = workload_fingerprint(&w, (&rate, ""), 1, &s.offsets_us);
        assert_eq!(base, workload_fingerprint(&workload(20), (&rate, ""), 1, &s.offsets_us));
        assert_eq!(base.len(), 64);
        assert_ne!(base, workload_fingerprint(&w, (&rate, ""), 2, &s.offsets_us));
        let s2 = ArrivalSchedule::generate(20, &rate, 2);
        assert_ne!(base, workload_fingerprint(&w, (&rate, ""), 1, &s2.offsets_us));
        let mut w2 = workload(20).into_workload();
        w2.requests[7].expected_output_tokens = 5;
        assert_ne!(base, workload_fingerprint(&w2.into(), (&rate, ""), 1, &s.offsets_us));
        let faster = RateConfig { request_rate: 11.0, ..rate };
        assert_ne!(base, workload_fingerprint(&w, (&faster, ""), 1, &s.offsets_us));
        assert_ne!(base, workload_fingerprint(&w, (&rate, "lora"), 1, &s.offsets_us));
    }

    /// Pins the load flags a merge compared nothing of: shards run with cancellation by design
    /// or `--lora-modules` on one shard only (or another `--max-concurrency`, sampling, early
    /// stop) merged into one result. Each now changes the fingerprint (SB701 on merge); the
    /// headers and the API key do not (a header may name its shard).
    #[test]
    fn load_flags_beyond_the_workload_change_the_fingerprint_but_headers_do_not() {
        use crate::config::load_options::LoraConfig;
        use servebench_core::secret::Secret;
        let (load, target) = (LoadOptions::default(), TargetConfig::default());
        let base = LoadKey { max_concurrency: None, retries: 0, load: &load, target: &target, model_id: "m" };
        let text = base.describe();
        let mut loads = vec![LoadOptions::default(); 3];
        loads[0].cancellation = Some((50.0, Duration::from_millis(100)));
        loads[1].lora = Some(LoraConfig { modules: vec!["a".into()], assignment: Default::default() });
        loads[2].early_stop.errors = Some(servebench_core::early_stop::ErrorRateConfig {
            max_rate: None,
            window: 0,
            max_errors: Some(3),
        });
        for l in &loads {
            let other = LoadKey { load: l, ..base }.describe();
            assert_ne!(text, other, "{other}");
        }
        assert_ne!(text, LoadKey { max_concurrency: Some(8), ..base }.describe());
        assert_ne!(text, LoadKey { model_id: "other", ..base }.describe());
        let mut sampled = TargetConfig::default();
        sampled.sampling.insert("temperature".into(), 0.5.into());
        assert_ne!(text, LoadKey { target: &sampled, ..base }.describe());
        let mut keyed = TargetConfig::default();
        keyed.headers.push(("x-shard".into(), Secret::new("1")));
        keyed.api_key = Some(Secret::new("sk-1"));
        assert_eq!(text, LoadKey { target: &keyed, ..base }.describe());
        // The same body fields in another order, the default endpoint given: the same load
        // (shards of one run refused as SB701 otherwise).
        let (mut ab, mut ba) = (TargetConfig::default(), TargetConfig::default());
        ab.extra_body.insert("a".into(), 1.into());
        ab.extra_body.insert("b".into(), serde_json::json!({"y": 1, "x": 2}));
        ba.extra_body.insert("b".into(), serde_json::json!({"x": 2, "y": 1}));
        ba.extra_body.insert("a".into(), 1.into());
        assert_eq!(LoadKey { target: &ab, ..base }.describe(), LoadKey { target: &ba, ..base }.describe());
        let mut given = TargetConfig::default();
        given.endpoint = Some(given.backend.default_endpoint().to_owned());
        assert_eq!(text, LoadKey { target: &given, ..base }.describe());
    }
}

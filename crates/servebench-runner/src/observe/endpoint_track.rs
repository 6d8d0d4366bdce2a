//! What one scraped `/metrics` endpoint saw over the measured phase: each scrape becomes a line
//! of the server-metrics file (every series, counters with their rate since the previous scrape,
//! histograms with their interval percentiles) and feeds the series of the known meanings,
//! summarised at the end ([`EndpointTracker::summary`]; docs/metrics.md, "Server metrics of
//! every engine").

use super::exposition::{kind_name, series_key, Histo, Labels, Scrape};
use super::meaning::{rows, Engine, Meaning, Shape};
use serde_json::{json, Value};
use servebench_core::prom::Kind;
use servebench_report::sections::server_endpoints::{EndpointSummary, HistogramSummary, MeaningSummary};
use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};

/// The value of each known meaning in one scrape (gauges and counters summed over label sets,
/// histograms merged), with the engine series it came from.
#[derive(Debug, Clone, Default)]
pub struct MeaningValues {
    pub scalars: BTreeMap<Meaning, (&'static str, Engine, f64)>,
    pub histograms: BTreeMap<Meaning, (&'static str, Engine, Histo)>,
}

impl MeaningValues {
    /// Reads every meaning from `scrape`: the table's first name the scrape has.
    pub fn of(scrape: &Scrape) -> MeaningValues {
        let mut out = MeaningValues::default();
        for m in Meaning::ALL {
            for row in rows(m) {
                if m.shape() == Shape::Histogram {
                    if let Some(h) = scrape.histogram(row.name) {
                        out.histograms.insert(m, (row.name, row.engine, h));
                        break;
                    }
                } else if let Some(v) = scrape.sum(row.name) {
                    out.scalars.insert(m, (row.name, row.engine, v));
                    break;
                }
            }
        }
        out
    }

    /// A scalar meaning's value.
    pub fn get(&self, m: Meaning) -> Option<f64> {
        self.scalars.get(&m).map(|v| v.2)
    }
}

/// Per-meaning points of the phase.
#[derive(Debug, Default)]
struct Track {
    metric: &'static str,
    points: Vec<(f64, f64)>,
    /// The values read while the load ran (not at the phase's baseline or final poll): a
    /// gauge's mean is over these.
    in_load: Vec<f64>,
    hists: Vec<(f64, Histo)>,
}

/// Histograms of one scrape, by (metric name, labels).
type Histograms = BTreeMap<(String, Labels), Histo>;

/// One endpoint's accumulated view.
#[derive(Debug, Default)]
pub struct EndpointTracker {
    url: String,
    scrapes: u64,
    failed: u64,
    last_error: Option<String>,
    seen: HashSet<String>,
    engines: BTreeSet<Engine>,
    /// The previous scrape: its time (s), counters by series and histograms.
    prev: Option<(f64, HashMap<String, f64>, Histograms)>,
    first_hists: Option<Histograms>,
    tracks: BTreeMap<Meaning, Track>,
    /// The counter meanings' series (by series key) at the previous scrape, and each meaning's
    /// increase so far: counters are followed series by series, as Prometheus'
    /// `sum(increase(…))`, so a restart of one series, a series that appears or goes away, is
    /// not read as the sum's jump.
    counter_series: HashMap<String, f64>,
    counter_totals: BTreeMap<Meaning, f64>,
    /// The same for the histogram meanings, label set by label set.
    hist_series: Histograms,
    hist_totals: BTreeMap<Meaning, Histo>,
}

fn labels_json(labels: &[(String, String)]) -> Value {
    Value::Object(labels.iter().map(|(k, v)| (k.clone(), Value::String(v.clone()))).collect())
}

impl EndpointTracker {
    pub fn new(url: &str) -> EndpointTracker {
        EndpointTracker { url: url.to_owned(), ..EndpointTracker::default() }
    }

    /// A failed scrape (transport error, non-2xx, unparsable body).
    pub fn failed(&mut self, error: String) {
        self.failed += 1;
        self.last_error = Some(error);
    }

    /// Records a scrape at `t_s`, `edge` when it is the phase's baseline or final poll; returns
    /// its meaning values and, when `line` is set, the line of the server-metrics file.
    pub fn scrape(
        &mut self,
        scrape: &Scrape,
        (t_s, edge): (f64, bool),
        line: bool,
    ) -> (MeaningValues, Option<Value>) {
        self.scrapes += 1;
        let hists = scrape.histograms();
        let mut counters = HashMap::new();
        let mut series = Vec::with_capacity(if line { scrape.samples.len() } else { 0 });
        for s in &scrape.samples {
            let key = series_key(s);
            let kind = scrape.kind_of(s);
            let mut rate = None;
            if kind == Some(Kind::Counter) && s.value.is_finite() {
                if let Some((t0, before, _)) = &self.prev {
                    rate = before
                        .get(&key)
                        .filter(|&&v0| s.value >= v0 && t_s > *t0)
                        .map(|v0| (s.value - v0) / (t_s - t0));
                }
                counters.insert(key.clone(), s.value);
            }
            if line {
                let value = if s.value.is_finite() {
                    json!(s.value)
                } else {
                    json!(servebench_core::prom::value_text(s.value))
                };
                series.push(json!({"name": s.name, "labels": labels_json(&s.labels), "type": kind_name(kind), "value": value, "rate_per_s": rate}));
            }
            self.seen.insert(key);
        }
        let histograms: Vec<Value> = if line {
            hists
                .iter()
                .map(|((name, labels), h)| {
                    let interval = self
                        .prev
                        .as_ref()
                        .and_then(|p| p.2.get(&(name.clone(), labels.clone())))
                        .map(|before| h.since(before));
                    let q = |p: f64| interval.as_ref().and_then(|i| i.quantile(p));
                    json!({"name": name, "labels": labels, "count": h.count, "sum": h.sum,
                           "interval_count": interval.as_ref().map(|i| i.count),
                           "interval_p50": q(0.5), "interval_p90": q(0.9), "interval_p99": q(0.99)})
                })
                .collect()
        } else {
            Vec::new()
        };
        let values = MeaningValues::of(scrape);
        self.follow_counters(&values, scrape);
        self.follow_histograms(&values, &hists);
        self.track(&values, t_s, edge);
        if self.first_hists.is_none() {
            self.first_hists = Some(hists.clone());
        }
        self.prev = Some((t_s, counters, hists));
        let line = line.then(|| {
            json!({"endpoint": self.url, "source": "prometheus", "t_s": t_s, "ok": true, "error": null,
                   "series": series, "histograms": histograms})
        });
        (values, line)
    }

    /// Adds each counter meaning's increase since the previous scrape, series by series: a
    /// series' growth, its new reading after a reset (a decrease beyond float noise), nothing
    /// for a series seen for the first time (it counts from its first reading) or gone.
    /// A series missing from an answered scrape (or read as NaN/Inf) keeps its last reading, as
    /// Prometheus keeps the last sample: its growth over the gap is counted when it comes back.
    fn follow_counters(&mut self, v: &MeaningValues, scrape: &Scrape) {
        let mut now = self.counter_series.clone();
        for (m, (name, _, _)) in &v.scalars {
            if m.shape() != Shape::Counter {
                continue;
            }
            let mut grew = 0.0;
            for s in scrape.samples.iter().filter(|s| s.name == *name && s.value.is_finite()) {
                let key = series_key(s);
                if let Some(&before) = self.counter_series.get(&key) {
                    grew += increase(before, s.value);
                }
                now.insert(key, s.value);
            }
            *self.counter_totals.entry(*m).or_insert(0.0) += grew;
        }
        self.counter_series = now;
    }

    /// Adds each histogram meaning's observations since the previous scrape, label set by label
    /// set (a restart of one engine, or an engine appearing with its history, is not read from
    /// the merged histogram's jump); a label set seen for the first time counts from there.
    fn follow_histograms(&mut self, v: &MeaningValues, hists: &Histograms) {
        for (m, (name, _, _)) in &v.histograms {
            let total = self.hist_totals.entry(*m).or_default();
            for ((family, labels), h) in hists.iter().filter(|((f, _), h)| f == name && !h.buckets.is_empty())
            {
                let key = (family.clone(), labels.clone());
                if let Some(before) = self.hist_series.get(&key) {
                    total.add(&h.since(before));
                }
                self.hist_series.insert(key, h.clone());
            }
        }
    }

    fn track(&mut self, v: &MeaningValues, t_s: f64, edge: bool) {
        for (m, (name, engine, value)) in &v.scalars {
            self.engines.insert(*engine);
            // A counter's point is its increase so far (series by series), not the raw sum.
            let value = match m.shape() {
                Shape::Counter => self.counter_totals.get(m).copied().unwrap_or(0.0),
                _ => *value,
            };
            let t = self.tracks.entry(*m).or_insert_with(|| Track { metric: name, ..Track::default() });
            t.points.push((t_s, value));
            if !edge {
                t.in_load.push(value);
            }
        }
        for (m, (name, engine, _)) in &v.histograms {
            self.engines.insert(*engine);
            // The observations so far (label set by label set), not the merged raw histogram.
            let so_far = self.hist_totals.get(m).cloned().unwrap_or_default();
            let t = self.tracks.entry(*m).or_insert_with(|| Track { metric: name, ..Track::default() });
            t.hists.push((t_s, so_far));
        }
    }

    /// The endpoint's summary over the phase.
    pub fn summary(&self) -> EndpointSummary {
        let meanings: BTreeMap<String, MeaningSummary> =
            self.tracks.iter().map(|(m, t)| (m.key().to_owned(), summarise(m.shape(), t))).collect();
        let delta = |k: &str| meanings.get(k).and_then(|s| s.delta);
        let queries = delta("prefix_cache_queries")
            .or_else(|| Some(delta("prefix_cache_hits")? + delta("prefix_cache_misses")?));
        let prefix_cache_hit_rate = match (delta("prefix_cache_hits"), queries) {
            (Some(h), Some(q)) if q > 0.0 => Some(h / q),
            _ => None,
        };
        EndpointSummary {
            url: self.url.clone(),
            engines: self.engines.iter().map(|e| e.name().to_owned()).collect(),
            scrapes: self.scrapes,
            failed_scrapes: self.failed,
            last_error: self.last_error.clone(),
            series_count: self.seen.len() as u64,
            meanings,
            prefix_cache_hit_rate,
            histograms: self.histogram_summaries(),
        }
    }

    fn histogram_summaries(&self) -> Vec<HistogramSummary> {
        let (Some(first), Some((_, _, last))) = (&self.first_hists, &self.prev) else { return Vec::new() };
        last.iter()
            .map(|((name, labels), h)| {
                let run =
                    first.get(&(name.clone(), labels.clone())).map_or_else(|| h.clone(), |f| h.since(f));
                HistogramSummary {
                    name: name.clone(),
                    labels: labels.clone(),
                    count: run.count,
                    mean: run.mean(),
                    p50: run.quantile(0.5),
                    p90: run.quantile(0.9),
                    p99: run.quantile(0.99),
                }
            })
            .collect()
    }
}

/// Increase of one counter series between two readings: the difference; after a reset (a
/// decrease beyond float noise, 1e-9 relative) the new reading; 0 for a decrease within noise.
pub fn increase(before: f64, after: f64) -> f64 {
    let noise = 1e-9 * before.abs().max(1.0);
    if after >= before {
        after - before
    } else if before - after <= noise {
        0.0
    } else {
        after
    }
}

/// One meaning's summary (pure): see [`MeaningSummary`] for what each shape has.
fn summarise(shape: Shape, t: &Track) -> MeaningSummary {
    let mut s = MeaningSummary { metric: t.metric.to_owned(), ..MeaningSummary::default() };
    let pts = &t.points;
    match shape {
        Shape::Gauge => {
            s.kind = "gauge".into();
            // Over the polls taken while the load ran: the idle baseline and final polls read
            // low (two of twelve polls of a 10 s run at 1 s).
            if !t.in_load.is_empty() {
                s.mean = Some(t.in_load.iter().sum::<f64>() / t.in_load.len() as f64);
            }
            if !pts.is_empty() {
                s.max = pts.iter().map(|p| p.1).reduce(f64::max);
                s.last = pts.last().map(|p| p.1);
            }
            s.series = pts.iter().map(|&(t, v)| [t, v]).collect();
        }
        Shape::Counter => {
            s.kind = "counter".into();
            let mut total = 0.0;
            for w in pts.windows(2) {
                let inc = increase(w[0].1, w[1].1);
                total += inc;
                if w[1].0 > w[0].0 {
                    s.series.push([w[1].0, inc / (w[1].0 - w[0].0)]);
                }
            }
            if pts.len() >= 2 {
                s.delta = Some(total);
                let span = pts[pts.len() - 1].0 - pts[0].0;
                s.rate_per_s = (span > 0.0).then(|| total / span);
            }
        }
        Shape::Histogram => {
            s.kind = "histogram".into();
            let h = &t.hists;
            if let (Some(first), Some(last)) = (h.first(), h.last()) {
                let run = if h.len() >= 2 { last.1.since(&first.1) } else { Histo::default() };
                if h.len() >= 2 {
                    s.count = Some(run.count);
                    s.mean = run.mean();
                    s.p50 = run.quantile(0.5);
                    s.p90 = run.quantile(0.9);
                    s.p99 = run.quantile(0.99);
                }
            }
            for w in h.windows(2) {
                let d = w[1].1.since(&w[0].1);
                if let (Some(p50), Some(p99)) = (d.quantile(0.5), d.quantile(0.99)) {
                    s.series.push([w[1].0, p50]);
                    s.series_p99.push([w[1].0, p99]);
                }
            }
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(waiting: f64, hits: f64, queries: f64, le01: f64, inf: f64, sum: f64) -> String {
        format!(
            "# TYPE vllm:num_requests_waiting gauge\nvllm:num_requests_waiting{{model_name=\"m\"}} {waiting}\n\
             vllm:prefix_cache_hits_total{{model_name=\"m\"}} {hits}\nvllm:prefix_cache_queries_total{{model_name=\"m\"}} {queries}\n\
             # TYPE vllm:time_to_first_token_seconds histogram\n\
             vllm:time_to_first_token_seconds_bucket{{le=\"0.1\"}} {le01}\nvllm:time_to_first_token_seconds_bucket{{le=\"+Inf\"}} {inf}\n\
             vllm:time_to_first_token_seconds_sum {sum}\nvllm:time_to_first_token_seconds_count {inf}\n"
        )
    }

    #[test]
    fn gauges_counters_and_histograms_are_summarised_by_hand() {
        let mut t = EndpointTracker::new("http://h/metrics");
        let scrapes = [
            (0.0, text(2.0, 10.0, 100.0, 0.0, 0.0, 0.0)),
            (1.0, text(4.0, 40.0, 150.0, 3.0, 4.0, 0.5)),
            (3.0, text(0.0, 50.0, 200.0, 4.0, 8.0, 2.5)),
        ];
        let mut lines = Vec::new();
        for (i, (ts, body)) in scrapes.iter().enumerate() {
            // The first and last are the phase's baseline and final polls.
            let edge = i == 0 || i == scrapes.len() - 1;
            let (_, line) = t.scrape(&Scrape::parse(body).unwrap(), (*ts, edge), true);
            lines.push(line.unwrap());
        }
        let s = t.summary();
        assert_eq!(s.engines, ["vllm"]);
        let q = &s.meanings["queue"];
        // The mean is over the polls inside the load (4), not the idle edges (2 and 0: 2.0);
        // max and last over every poll.
        assert_eq!((q.mean, q.max, q.last), (Some(4.0), Some(4.0), Some(0.0)));
        assert_eq!(q.series, vec![[0.0, 2.0], [1.0, 4.0], [3.0, 0.0]]);
        let hits = &s.meanings["prefix_cache_hits"];
        // Δ 40 over 3 s; per interval: 30/1 s, then 10/2 s.
        assert_eq!((hits.delta, hits.rate_per_s), (Some(40.0), Some(40.0 / 3.0)));
        assert_eq!(hits.series, vec![[1.0, 30.0], [3.0, 5.0]]);
        // Hit rate Δhits / Δqueries = 40 / 100.
        assert_eq!(s.prefix_cache_hit_rate, Some(0.4));
        let ttft = &s.meanings["ttft"];
        // Run: 8 observations, 4 ≤ 0.1 s; p50 rank 4 → 0.1; mean 2.5 / 8.
        assert_eq!((ttft.count, ttft.p50, ttft.mean), (Some(8.0), Some(0.1), Some(0.3125)));
        // First interval: 3 of 4 ≤ 0.1: p50 rank 2 → 0.1 × 2/3.
        assert!((ttft.series[0][1] - 0.1 * 2.0 / 3.0).abs() < 1e-12);
        assert_eq!(ttft.series_p99[1], [3.0, 0.1], "second interval: 1 of 4 ≤ 0.1, p99 in +Inf");
        // The file line keeps every series, counters with their rate.
        let hits_line = lines[1]["series"]
            .as_array()
            .unwrap()
            .iter()
            .find(|x| x["name"] == "vllm:prefix_cache_hits_total")
            .unwrap();
        assert_eq!(
            (hits_line["type"].as_str(), hits_line["rate_per_s"].as_f64()),
            (Some("counter"), Some(30.0))
        );
        assert_eq!(lines[0]["series"][1]["rate_per_s"], Value::Null);
        assert_eq!(lines[2]["histograms"][0]["interval_count"], json!(4.0));
        assert_eq!(s.series_count, 7);
        assert_eq!(s.histograms[0].count, 8.0);
    }

    #[test]
    fn a_counter_reset_counts_the_new_reading_and_trtllm_hits_over_hits_plus_misses() {
        assert_eq!(increase(10.0, 4.0), 4.0);
        assert_eq!(increase(10.0, 14.0), 4.0);
        let mut t = EndpointTracker::new("u");
        for (ts, h, m) in [(0.0, 0.0, 0.0), (1.0, 30.0, 10.0)] {
            let body =
                format!("trtllm_kv_cache_reused_blocks_total {h}\ntrtllm_kv_cache_missed_blocks_total {m}\n");
            t.scrape(&Scrape::parse(&body).unwrap(), (ts, false), false);
        }
        let s = t.summary();
        assert_eq!((s.engines.as_slice(), s.prefix_cache_hit_rate), (&["trtllm".to_owned()][..], Some(0.75)));
    }

    /// The generation delta of scrapes of `vllm:generation_tokens_total`, each a list of
    /// (engine label, value) series.
    fn generation_delta(scrapes: &[&[(&str, f64)]]) -> Option<f64> {
        let mut t = EndpointTracker::new("u");
        for (i, series) in scrapes.iter().enumerate() {
            let body: String = series
                .iter()
                .map(|(engine, v)| format!("vllm:generation_tokens_total{{engine=\"{engine}\"}} {v}\n"))
                .collect();
            t.scrape(&Scrape::parse(&body).unwrap(), (i as f64, false), false);
        }
        t.summary().meanings.get("generation_tokens").and_then(|m| m.delta)
    }

    /// Resets were detected on the sum over label sets: one engine of two restarting read as
    /// the whole sum restarting (1,095 tokens for 75), a series appearing at 9,000 as 9,000
    /// tokens, a float dip of 1e-7 as a reset worth a million. Counters are now followed series
    /// by series, as Prometheus' `sum(increase(…))`.
    #[test]
    fn counters_are_followed_series_by_series() {
        // Engine 0: 1000 → 1040; engine 1: 1000 → 1020, restarts, 5 → 15: 40 + 20 + 5 + 10.
        let restart: [&[(&str, f64)]; 4] = [
            &[("0", 1000.0), ("1", 1000.0)],
            &[("0", 1020.0), ("1", 1020.0)],
            &[("0", 1030.0), ("1", 5.0)],
            &[("0", 1040.0), ("1", 15.0)],
        ];
        assert_eq!(generation_delta(&restart), Some(75.0));
        // A series that appears at 9,000 counts from its first reading; one that goes away stops.
        let appear: [&[(&str, f64)]; 4] = [
            &[("0", 100.0)],
            &[("0", 120.0), ("1", 9000.0)],
            &[("0", 130.0), ("1", 9020.0)],
            &[("0", 150.0)],
        ];
        assert_eq!(generation_delta(&appear), Some(70.0));
        // A dip within float noise is not a reset.
        let noise: [&[(&str, f64)]; 3] =
            [&[("0", 1000000.5)], &[("0", 1000000.4999999)], &[("0", 1000010.5)]];
        let d = generation_delta(&noise).unwrap();
        assert!((d - 10.0).abs() < 1e-6, "{d}");
        // A scrape that answers without the series, or with NaN, keeps its last reading: the
        // growth over the gap counts when it comes back (it was lost).
        let gap: [&[(&str, f64)]; 3] = [&[("0", 100.0)], &[], &[("0", 140.0)]];
        assert_eq!(generation_delta(&gap), Some(40.0));
        let nan: [&[(&str, f64)]; 3] = [&[("0", 100.0)], &[("0", f64::NAN)], &[("0", 140.0)]];
        assert_eq!(generation_delta(&nan), Some(40.0));
    }

    /// An exporter that writes a series' labels in another order named a new series each time:
    /// a counter growing 10 per scrape had a delta of 0.
    #[test]
    fn a_label_set_in_another_order_is_the_same_series() {
        let mut t = EndpointTracker::new("u");
        for (i, v) in [100.0, 110.0, 120.0, 130.0].into_iter().enumerate() {
            let labels =
                if i % 2 == 0 { "model_name=\"m\",engine=\"0\"" } else { "engine=\"0\",model_name=\"m\"" };
            let body = format!("vllm:generation_tokens_total{{{labels}}} {v}\n");
            t.scrape(&Scrape::parse(&body).unwrap(), (i as f64, false), false);
        }
        assert_eq!(t.summary().meanings["generation_tokens"].delta, Some(30.0));
    }

    /// The TTFT histogram of two engines, one restarting (1000 → 1020, then 5 → 15) and one
    /// growing 1000 → 1040: 75 observations, read as 1,055 from the merged histogram's jump; an
    /// engine appearing with 9,000 observations of history counted them all.
    #[test]
    fn histograms_are_followed_label_set_by_label_set() {
        let scrape = |series: &[(&str, f64)]| {
            let mut body = String::from("# TYPE vllm:time_to_first_token_seconds histogram\n");
            for (engine, n) in series {
                let e = format!("engine=\"{engine}\"");
                body += &format!("vllm:time_to_first_token_seconds_bucket{{{e},le=\"0.1\"}} {n}\n");
                body += &format!("vllm:time_to_first_token_seconds_bucket{{{e},le=\"+Inf\"}} {n}\n");
                body += &format!("vllm:time_to_first_token_seconds_sum{{{e}}} {}\n", n * 0.05);
                body += &format!("vllm:time_to_first_token_seconds_count{{{e}}} {n}\n");
            }
            Scrape::parse(&body).unwrap()
        };
        let count = |scrapes: &[&[(&str, f64)]]| {
            let mut t = EndpointTracker::new("u");
            for (i, s) in scrapes.iter().enumerate() {
                t.scrape(&scrape(s), (i as f64, false), false);
            }
            t.summary().meanings["ttft"].count
        };
        let restart: [&[(&str, f64)]; 4] = [
            &[("0", 1000.0), ("1", 1000.0)],
            &[("0", 1020.0), ("1", 1020.0)],
            &[("0", 1030.0), ("1", 5.0)],
            &[("0", 1040.0), ("1", 15.0)],
        ];
        assert_eq!(count(&restart), Some(75.0));
        let appear: [&[(&str, f64)]; 3] =
            [&[("0", 100.0)], &[("0", 120.0), ("1", 9000.0)], &[("0", 130.0), ("1", 9020.0)]];
        assert_eq!(count(&appear), Some(50.0));
    }
}

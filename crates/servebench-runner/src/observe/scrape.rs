//! The server's own view during a run: `--scrape-metrics` polls its Prometheus `/metrics`
//! (text format, parsed by [`Scrape::parse`]), keeps a time series of vLLM's gauges and
//! counters, and derives run-level figures (docs/metrics.md, "Server metrics").
//!
//! The fixed series are read under any known engine's names (`observe::meaning`; vLLM's first:
//! `vllm:num_requests_running`, `vllm:kv_cache_usage_perc`, ...), speculative decoding under
//! vLLM's. Values of one metric are summed over label sets (several models or engines).
//! Counters are reported as deltas over the measured phase (last sample − first sample).

use super::endpoint_track::MeaningValues;
use super::exposition::Scrape;
use super::meaning::Meaning;
use servebench_client::transport::HttpClient;
#[cfg(test)]
use servebench_core::prom::parse_text;
use servebench_core::Result;
#[cfg(test)]
use servebench_report::sections::server::SpecDecodeKeys;
pub use servebench_report::sections::server::{ScrapeSample, ServerDerived, ServerMetrics};
use std::time::{Duration, Instant};

use tokio_util::sync::CancellationToken;

/// vLLM metric names read from `/metrics`.
pub mod names {
    pub const RUNNING: &str = "vllm:num_requests_running";
    pub const WAITING: &str = "vllm:num_requests_waiting";
    pub const KV_USAGE: &str = "vllm:kv_cache_usage_perc";
    /// Older vLLM name of the KV usage gauge (used when the new one is absent).
    pub const KV_USAGE_OLD: &str = "vllm:gpu_cache_usage_perc";
    pub const PREFIX_QUERIES: &str = "vllm:prefix_cache_queries_total";
    pub const PREFIX_HITS: &str = "vllm:prefix_cache_hits_total";
    pub const PROMPT_TOKENS: &str = "vllm:prompt_tokens_total";
    pub const GENERATION_TOKENS: &str = "vllm:generation_tokens_total";
    pub const SPEC_DRAFTS: &str = "vllm:spec_decode_num_drafts_total";
    pub const SPEC_DRAFT_TOKENS: &str = "vllm:spec_decode_num_draft_tokens_total";
    pub const SPEC_ACCEPTED: &str = "vllm:spec_decode_num_accepted_tokens_total";
    pub const SPEC_ACCEPTED_PER_POS: &str = "vllm:spec_decode_num_accepted_tokens_per_pos_total";
}

/// Parses one `/metrics` body into a sample taken at `t_s`.
pub fn parse_sample(text: &str, t_s: f64) -> std::result::Result<ScrapeSample, String> {
    Ok(sample_of(&Scrape::parse(text)?, t_s))
}

/// The fixed series of one scrape: the known meanings under any engine's names (the table of
/// `observe::meaning`: vLLM's first), speculative decoding under vLLM's names. Values of one
/// metric are summed over label sets.
pub fn sample_of(scrape: &Scrape, t_s: f64) -> ScrapeSample {
    let v = MeaningValues::of(scrape);
    let queries = v.get(Meaning::PrefixCacheQueries).or_else(|| {
        let hits = v.get(Meaning::PrefixCacheHits)?;
        Some(hits + v.get(Meaning::PrefixCacheMisses)?)
    });
    ScrapeSample {
        t_s,
        phase_edge: false,
        running: v.get(Meaning::Running),
        waiting: v.get(Meaning::Queue),
        kv_cache_usage: v.get(Meaning::KvCacheUsage),
        prefix_cache_queries: queries,
        prefix_cache_hits: v.get(Meaning::PrefixCacheHits),
        prompt_tokens: v.get(Meaning::PromptTokens),
        generation_tokens: v.get(Meaning::GenerationTokens),
        spec_decode_num_drafts: scrape.sum(names::SPEC_DRAFTS),
        spec_decode_draft_tokens: scrape.sum(names::SPEC_DRAFT_TOKENS),
        spec_decode_accepted_tokens: scrape.sum(names::SPEC_ACCEPTED),
        spec_decode_accepted_per_position: scrape
            .sum_by_index_label(names::SPEC_ACCEPTED_PER_POS, "position"),
    }
}

/// Δaccepted at each draft position / Δdrafts, between the first and the last sample;
/// `None` without the series in both, without drafts, when the positions differ between them
/// (a series that appeared mid-run has no baseline), when a position's counter went down (a
/// restarted server), or when the positions' growth does not add up to Δaccepted (the
/// per-position counters do not describe the same tokens).
fn per_position_rates(
    samples: &[ScrapeSample],
    drafts: Option<f64>,
    accepted: Option<f64>,
) -> Option<Vec<f64>> {
    let drafts = drafts.filter(|d| *d > 0.0)?;
    let first = &samples.first()?.spec_decode_accepted_per_position;
    let last = &samples.last()?.spec_decode_accepted_per_position;
    if first.is_empty() || first.len() != last.len() {
        return None;
    }
    let grown: Vec<f64> = last.iter().zip(first).map(|(l, f)| l - f).collect();
    if grown.iter().any(|g| *g < 0.0) || accepted.is_some_and(|a| (grown.iter().sum::<f64>() - a).abs() > 0.5)
    {
        return None;
    }
    Some(grown.iter().map(|g| g / drafts).collect())
}

/// The mean of a gauge over the polls taken while the load ran (not the idle baseline before it
/// or the final poll after it); `None` when no poll fell inside the load.
fn mean_of(samples: &[ScrapeSample], f: impl Fn(&ScrapeSample) -> Option<f64>) -> Option<f64> {
    let v: Vec<f64> = samples.iter().filter(|s| !s.phase_edge).filter_map(f).collect();
    (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64)
}

fn max_of(samples: &[ScrapeSample], f: impl Fn(&ScrapeSample) -> Option<f64>) -> Option<f64> {
    samples.iter().filter_map(f).reduce(f64::max)
}

/// Last − first value of a counter (summed over its label sets) over the samples that have it;
/// `None` when the last is below the first: a series restarted (or went away), and a sum over
/// label sets cannot tell by how much it grew (each endpoint's summary, which tracks every
/// series, can). Clamping that case to 0 read as data.
fn delta(samples: &[ScrapeSample], f: impl Fn(&ScrapeSample) -> Option<f64>) -> Option<f64> {
    let first = samples.iter().find_map(&f)?;
    let last = samples.iter().rev().find_map(&f)?;
    (last >= first).then_some(last - first)
}

/// Derived figures of a series (pure).
pub fn derive(samples: &[ScrapeSample]) -> ServerDerived {
    let queries = delta(samples, |s| s.prefix_cache_queries);
    let hits = delta(samples, |s| s.prefix_cache_hits);
    let drafts = delta(samples, |s| s.spec_decode_num_drafts);
    let draft_tokens = delta(samples, |s| s.spec_decode_draft_tokens);
    let accepted = delta(samples, |s| s.spec_decode_accepted_tokens);
    let ratio = |a: Option<f64>, b: Option<f64>| match (a, b) {
        (Some(a), Some(b)) if b > 0.0 => Some(a / b),
        _ => None,
    };
    ServerDerived {
        mean_running: mean_of(samples, |s| s.running),
        mean_queue_depth: mean_of(samples, |s| s.waiting),
        max_queue_depth: max_of(samples, |s| s.waiting),
        mean_kv_cache_usage: mean_of(samples, |s| s.kv_cache_usage),
        max_kv_cache_usage: max_of(samples, |s| s.kv_cache_usage),
        prefix_cache_hit_rate: ratio(hits, queries),
        prompt_tokens: delta(samples, |s| s.prompt_tokens),
        generation_tokens: delta(samples, |s| s.generation_tokens),
        spec_decode_acceptance_rate: ratio(accepted, draft_tokens).map(|r| r * 100.0),
        spec_decode_acceptance_length: ratio(accepted, drafts).map(|r| 1.0 + r),
        spec_decode_num_drafts: drafts,
        spec_decode_draft_tokens: draft_tokens,
        spec_decode_accepted_tokens: accepted,
        spec_decode_per_position_acceptance_rates: per_position_rates(samples, drafts, accepted),
    }
}

/// GET `/metrics` once.
pub async fn fetch_metrics_text(client: &HttpClient, headers: &http::HeaderMap) -> Result<String> {
    let r = client.request_raw(http::Method::GET, "/metrics", headers, None).await?;
    if !(200..300).contains(&r.status) {
        return Err(servebench_core::BenchError::HttpStatus {
            context: format!("GET {}", client.shown_url(&r.path)),
            status: r.status,
            body: r.snippet(),
        });
    }
    Ok(String::from_utf8_lossy(&r.body).into_owned())
}

/// Polls `/metrics` every `interval` until `stop` fires, plus once more at the end.
pub async fn scrape_until(
    client: HttpClient,
    headers: http::HeaderMap,
    interval: Duration,
    stop: CancellationToken,
) -> ServerMetrics {
    scrape_from(client, headers, interval, stop, CancellationToken::new()).await
}

/// [`scrape_until`], cancelling `baseline` once the first scrape has answered (or failed): the
/// measured phase waits for it, so the counters' first sample precedes every measured request.
pub async fn scrape_from(
    client: HttpClient,
    headers: http::HeaderMap,
    interval: Duration,
    stop: CancellationToken,
    baseline: CancellationToken,
) -> ServerMetrics {
    let started = Instant::now();
    let mut out = ServerMetrics { interval_s: interval.as_secs_f64(), ..ServerMetrics::default() };
    let mut next = tokio::time::Instant::now();
    let mut first = true;
    loop {
        let stopping = stop.is_cancelled();
        let t_s = started.elapsed().as_secs_f64();
        let phase_edge = std::mem::take(&mut first) || stopping;
        match fetch_metrics_text(&client, &headers).await {
            Ok(text) => match parse_sample(&text, t_s) {
                Ok(s) => out.samples.push(ScrapeSample { phase_edge, ..s }),
                Err(e) => {
                    out.failed_scrapes += 1;
                    out.last_error = Some(format!("unparsable /metrics: {e}"));
                }
            },
            Err(e) => {
                out.failed_scrapes += 1;
                out.last_error = Some(e.to_string());
            }
        }
        baseline.cancel();
        if stopping {
            break;
        }
        next += interval;
        tokio::select! {
            _ = tokio::time::sleep_until(next) => {}
            _ = stop.cancelled() => {}
        }
    }
    out.derived = derive(&out.samples);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const TEXT: &str = "# HELP vllm:num_requests_running Running.\n# TYPE vllm:num_requests_running gauge\n\
vllm:num_requests_running{model_name=\"m\"} 3\n\
# TYPE vllm:num_requests_waiting gauge\nvllm:num_requests_waiting{model_name=\"m\"} 2\n\
# TYPE vllm:kv_cache_usage_perc gauge\nvllm:kv_cache_usage_perc{model_name=\"m\"} 0.25\n\
# TYPE vllm:prefix_cache_queries_total counter\nvllm:prefix_cache_queries_total{model_name=\"m\"} 100\n\
# TYPE vllm:prefix_cache_hits_total counter\nvllm:prefix_cache_hits_total{model_name=\"m\"} 40\n\
# TYPE vllm:spec_decode_num_drafts_total counter\nvllm:spec_decode_num_drafts_total{model_name=\"m\"} 10\n\
# TYPE vllm:spec_decode_num_draft_tokens_total counter\nvllm:spec_decode_num_draft_tokens_total{model_name=\"m\"} 30\n\
# TYPE vllm:spec_decode_num_accepted_tokens_total counter\nvllm:spec_decode_num_accepted_tokens_total{model_name=\"m\"} 12\n";

    #[test]
    fn parses_vllm_names_and_sums_label_sets() {
        let s = parse_sample(TEXT, 0.5).unwrap();
        assert_eq!((s.running, s.waiting, s.kv_cache_usage), (Some(3.0), Some(2.0), Some(0.25)));
        assert_eq!(s.prompt_tokens, None);
        let two = format!("{TEXT}vllm:num_requests_running{{model_name=\"n\"}} 4\n");
        assert_eq!(parse_sample(&two, 0.0).unwrap().running, Some(7.0));
    }

    #[test]
    fn text_format_escapes_special_values_and_errors() {
        let t = "# c\nm:x{a=\"q\\\"1\",b=\"x,}y\"} +Inf 123\nplain 2.5\nh_bucket{le=\"0.1\",} 3\n";
        let s = parse_text(t).unwrap();
        assert_eq!(s[0].name, "m:x");
        assert_eq!(s[0].labels, vec![("a".into(), "q\"1".into()), ("b".into(), "x,}y".into())]);
        assert_eq!(s[0].value, f64::INFINITY);
        assert_eq!((s[1].name.as_str(), s[1].value, s[1].labels.len()), ("plain", 2.5, 0));
        assert_eq!(s[2].labels, vec![("le".into(), "0.1".into())]);
        assert!(parse_text("m{a=\"1\" 3").is_err());
        assert!(parse_text("m abc").is_err());
        assert!(parse_text("9m 1").is_err());
    }

    #[test]
    fn derived_figures_by_hand() {
        let a = parse_sample(TEXT, 0.0).unwrap();
        let mut b = a.clone();
        b.t_s = 1.0;
        b.waiting = Some(4.0);
        b.prefix_cache_queries = Some(200.0);
        b.prefix_cache_hits = Some(115.0);
        b.spec_decode_num_drafts = Some(30.0);
        b.spec_decode_draft_tokens = Some(90.0);
        b.spec_decode_accepted_tokens = Some(48.0);
        let d = derive(&[a, b]);
        assert_eq!(d.mean_queue_depth, Some(3.0));
        assert_eq!(d.max_queue_depth, Some(4.0));
        // Δhits 75 / Δqueries 100.
        assert_eq!(d.prefix_cache_hit_rate, Some(0.75));
        // Δaccepted 36 / Δdraft tokens 60 = 60 %; length 1 + 36 / 20 = 2.8.
        assert_eq!(d.spec_decode_acceptance_rate, Some(60.0));
        assert_eq!(d.spec_decode_acceptance_length, Some(2.8));
        assert_eq!(d.spec_decode_per_position_acceptance_rates, None, "no per-position series");
        assert_eq!(derive(&[]).mean_running, None);
    }

    /// Pins vllm-bench's `spec_decode_per_position_acceptance_rates`: Δaccepted at position i
    /// (`vllm:spec_decode_num_accepted_tokens_per_pos_total{position="i"}`, summed over the
    /// other labels) / Δdrafts. Not read before: the key was missing and the console had no
    /// per-position line, while the server exported the series.
    #[test]
    fn per_position_acceptance_rates_by_hand() {
        let per_pos = |v: [f64; 3]| {
            format!(
                "{TEXT}# TYPE vllm:spec_decode_num_accepted_tokens_per_pos_total counter\n\
                 vllm:spec_decode_num_accepted_tokens_per_pos_total{{model_name=\"m\",position=\"0\"}} {}\n\
                 vllm:spec_decode_num_accepted_tokens_per_pos_total{{model_name=\"m\",position=\"2\"}} {}\n\
                 vllm:spec_decode_num_accepted_tokens_per_pos_total{{model_name=\"m\",position=\"1\"}} {}\n\
                 vllm:spec_decode_num_accepted_tokens_per_pos_total{{model_name=\"n\",position=\"0\"}} 1\n",
                v[0], v[2], v[1]
            )
        };
        let a = parse_sample(&per_pos([8.0, 4.0, 1.0]), 0.0).unwrap();
        assert_eq!(a.spec_decode_accepted_per_position, vec![9.0, 4.0, 1.0], "position 0 summed over models");
        let mut b = parse_sample(&per_pos([24.0, 12.0, 5.0]), 1.0).unwrap();
        b.spec_decode_num_drafts = Some(30.0);
        // Δaccepted = the positions' growth: 16 + 8 + 4 = 28.
        b.spec_decode_accepted_tokens = Some(12.0 + 28.0);
        // Δdrafts 20: positions (24 − 8) / 20, (12 − 4) / 20, (5 − 1) / 20.
        let d = derive(&[a.clone(), b]);
        assert_eq!(d.spec_decode_per_position_acceptance_rates, Some(vec![0.8, 0.4, 0.2]));
        let keys = SpecDecodeKeys::of(&ServerDerived { spec_decode_draft_tokens: Some(1.0), ..d }).unwrap();
        assert_eq!(keys.spec_decode_per_position_acceptance_rates, Some(vec![0.8, 0.4, 0.2]));
        // A counter that went down (a restart): no rates, not a negative one.
        let mut c = parse_sample(&per_pos([2.0, 4.0, 1.0]), 1.0).unwrap();
        c.spec_decode_num_drafts = Some(30.0);
        assert_eq!(derive(&[a.clone(), c]).spec_decode_per_position_acceptance_rates, None);
        // Growth that does not add up to Δaccepted (here Δaccepted 0): not the same tokens.
        let mut e = parse_sample(&per_pos([24.0, 12.0, 5.0]), 1.0).unwrap();
        e.spec_decode_num_drafts = Some(30.0);
        assert_eq!(derive(&[a.clone(), e]).spec_decode_per_position_acceptance_rates, None);
        // A gap in the positions (0 and 2 only) or a stray huge one: no series, not 0 %.
        let series = "vllm:spec_decode_num_accepted_tokens_per_pos_total";
        let gap = format!("{TEXT}{series}{{position=\"0\"}} 1\n{series}{{position=\"2\"}} 1\n");
        assert!(parse_sample(&gap, 0.0).unwrap().spec_decode_accepted_per_position.is_empty());
        let huge = format!("{TEXT}{series}{{position=\"1000\"}} 1\n");
        assert!(parse_sample(&huge, 0.0).unwrap().spec_decode_accepted_per_position.is_empty());
        // A series that appeared after the baseline: no baseline, no rates.
        let late = ScrapeSample { spec_decode_accepted_per_position: Vec::new(), ..a };
        let mut end = parse_sample(&per_pos([24.0, 12.0, 5.0]), 1.0).unwrap();
        end.spec_decode_num_drafts = Some(30.0);
        assert_eq!(derive(&[late, end]).spec_decode_per_position_acceptance_rates, None);
    }

    /// Pins gauge means over the polls inside the load: the idle baseline poll before the
    /// first request and the final poll after the last ended read low (a 10 s run at 1 s
    /// polls had 2 idle samples of 12), while the counters' deltas still span them.
    #[test]
    fn gauge_means_leave_out_the_phase_edges_and_deltas_keep_them() {
        let at = |t_s: f64, running: f64, tokens: f64, phase_edge: bool| ScrapeSample {
            t_s,
            phase_edge,
            running: Some(running),
            kv_cache_usage: Some(running / 10.0),
            prompt_tokens: Some(tokens),
            ..ScrapeSample::default()
        };
        let d = derive(&[
            at(0.0, 0.0, 100.0, true),
            at(1.0, 6.0, 150.0, false),
            at(2.0, 8.0, 300.0, false),
            at(2.4, 0.0, 320.0, true),
        ]);
        assert_eq!(d.mean_running, Some(7.0));
        assert_eq!(d.mean_kv_cache_usage, Some(0.7));
        assert_eq!(d.max_kv_cache_usage, Some(0.8));
        assert_eq!(d.prompt_tokens, Some(220.0));
        // A run shorter than the interval has only its edges: no mean, not a 0.
        let short = derive(&[at(0.0, 0.0, 100.0, true), at(0.3, 0.0, 120.0, true)]);
        assert_eq!((short.mean_running, short.prompt_tokens), (None, Some(20.0)));
    }

    /// A server restarted mid-run: its generation counter (summed over label sets) read 100,
    /// 200, 50. The derived Δ was last − first clamped at 0 (0.0, which reads as data); a sum
    /// cannot tell how much a restarted series grew, so it is null (the endpoint summary tracks
    /// each series and has the figure).
    #[test]
    fn a_counter_that_ends_below_its_start_has_no_derived_delta() {
        let at = |v: f64| ScrapeSample { generation_tokens: Some(v), ..parse_sample(TEXT, 0.0).unwrap() };
        assert_eq!(derive(&[at(100.0), at(200.0), at(50.0)]).generation_tokens, None);
        assert_eq!(derive(&[at(100.0), at(50.0), at(400.0)]).generation_tokens, Some(300.0));
        assert_eq!(derive(&[at(7.0)]).generation_tokens, Some(0.0));
    }
}

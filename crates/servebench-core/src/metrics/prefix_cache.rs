//! Target vs observed prefix-cache hit rate of a run with a controlled hit rate
//! (docs/metrics.md, "Prefix-cache hit rate: target vs observed").

use serde::Serialize;

use crate::compact_records::{Filtered, RecordSet};
use crate::record::{Outcome, RequestRecord};
use std::borrow::Borrow;

/// Largest |observed − built-in| hit rate (absolute) that still counts as agreement. Above it
/// the run warns: the cache evicted the shared prefix, the block size is not the server's, or
/// prefix caching is off.
pub const HIT_RATE_TOLERANCE: f64 = 0.02;

/// What the workload built in, and what the run saw besides its records.
#[derive(Debug, Clone, Copy)]
pub struct PrefixCacheInputs<'a> {
    /// `hit_rate`, `bimodal` or `bust`.
    pub mode: &'a str,
    /// The nominal target (`R`, `F·R` or 0).
    pub target: f64,
    pub block_size: u32,
    /// `P_i`, the shared-prefix tokens of request `i` (by record index).
    pub cached_prefix: &'a [u32],
    /// Priming requests sent before the measured phase, and how many completed.
    pub warmup_requests: u64,
    pub warmup_completed: u64,
    /// The server's Δ`prefix_cache_hits` / Δ`prefix_cache_queries` over the measured phase.
    pub server_hit_rate: Option<f64>,
    /// Multi-turn conversations on token ids: the reachable range, from what the history alone
    /// reuses to the most the first turns can share (`None` for single prompts).
    pub reachable: Option<(f64, f64)>,
}

/// The result's `prefix_cache` block.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PrefixCacheReport {
    pub mode: String,
    pub target_hit_rate: f64,
    pub block_size: u32,
    /// Σ P_i / Σ prompt_tokens over every request of the run: the hit rate built in.
    pub constructed_hit_rate: Option<f64>,
    /// Σ P_i / Σ prompt tokens over the requests that reported `cached_tokens`.
    pub expected_hit_rate: Option<f64>,
    /// Σ cached_prompt_tokens / Σ prompt tokens over the same requests (`usage`).
    pub observed_hit_rate: Option<f64>,
    /// Requests behind `observed_hit_rate`.
    pub observed_requests: u64,
    /// The server's `/metrics` counters over the measured phase.
    pub server_hit_rate: Option<f64>,
    pub tolerance: f64,
    pub warmup_requests: u64,
    pub warmup_completed: u64,
    /// Multi-turn conversations on token ids: the built-in rate their history alone gives (the
    /// lowest target they can have). Absent for single prompts.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub history_hit_rate: Option<f64>,
    /// Multi-turn conversations on token ids: the highest target they can have (every first
    /// turn shared up to its last whole block). Absent for single prompts.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_hit_rate: Option<f64>,
    /// The per-slot pattern (`cold_first_wave` below): how many requests missed their whole shared
    /// prefix while every other one found all of it. Names the cause in the warning.
    #[serde(skip)]
    pub cold_first_wave: u64,
}

/// Requests that missed the whole shared prefix (`cached_prompt_tokens` 0, `P_i` > 0) when
/// they are exactly the ones sent before any request finished, and every other request found
/// at least its whole prefix: the signature of a server that caches per slot or per replica
/// (llama.cpp `-np N` without a unified KV cache, data-parallel replicas) — priming warmed one
/// of them, the first request on each other slot misses, every later one hits. 0 otherwise.
fn cold_first_wave<S: RecordSet + ?Sized>(seen: &S, built: impl Fn(&RequestRecord) -> u64) -> u64 {
    let first_end = seen.records().filter_map(|r| r.borrow().done_us).min();
    let mut cold = 0;
    for r in seen.records() {
        let r = r.borrow();
        let (cached, prefix) = (u64::from(r.cached_prompt_tokens.unwrap_or(0)), built(r));
        let first_wave = matches!((r.dispatched_us, first_end), (Some(d), Some(e)) if d < e);
        match (cached, prefix) {
            (_, 0) => {}
            (0, _) if first_wave => cold += 1,
            (c, p) if c >= p => {}
            _ => return 0,
        }
    }
    cold
}

fn ratio(a: u64, b: u64) -> Option<f64> {
    (b > 0).then(|| a as f64 / b as f64)
}

/// The prompt tokens the server counted (its `usage.prompt_tokens`), else the client's.
fn prompt_of(r: &RequestRecord) -> u64 {
    u64::from(r.server_prompt_tokens.unwrap_or(r.prompt_tokens))
}

impl PrefixCacheReport {
    /// Computes the block from the run's records.
    pub fn of<S: RecordSet + ?Sized>(records: &S, inputs: &PrefixCacheInputs<'_>) -> Self {
        let built =
            |r: &RequestRecord| u64::from(inputs.cached_prefix.get(r.index as usize).copied().unwrap_or(0));
        let all_prompt: u64 = records.records().map(|r| u64::from(r.borrow().prompt_tokens)).sum();
        let all_built: u64 = records.records().map(|r| built(r.borrow())).sum();
        let seen = Filtered::new(records, |r: &RequestRecord| {
            r.outcome == Outcome::Completed && r.cached_prompt_tokens.is_some()
        });
        let (mut seen_n, mut seen_prompt, mut seen_built, mut seen_cached) = (0u64, 0u64, 0u64, 0u64);
        for r in seen.records() {
            let r = r.borrow();
            seen_n += 1;
            seen_prompt += prompt_of(r);
            seen_built += built(r);
            seen_cached += u64::from(r.cached_prompt_tokens.unwrap_or(0));
        }
        let cold = cold_first_wave(&seen, built);
        PrefixCacheReport {
            mode: inputs.mode.to_owned(),
            target_hit_rate: inputs.target,
            block_size: inputs.block_size,
            constructed_hit_rate: ratio(all_built, all_prompt),
            expected_hit_rate: ratio(seen_built, seen_prompt),
            observed_hit_rate: ratio(seen_cached, seen_prompt),
            observed_requests: seen_n,
            server_hit_rate: inputs.server_hit_rate,
            tolerance: HIT_RATE_TOLERANCE,
            warmup_requests: inputs.warmup_requests,
            warmup_completed: inputs.warmup_completed,
            history_hit_rate: inputs.reachable.map(|r| r.0),
            max_hit_rate: inputs.reachable.map(|r| r.1),
            cold_first_wave: cold,
        }
    }

    /// The disagreements beyond [`HIT_RATE_TOLERANCE`], one line each (empty: they agree or
    /// there is nothing to compare).
    pub fn warnings(&self) -> Vec<String> {
        let mut out = Vec::new();
        if self.warmup_completed < self.warmup_requests {
            out.push(format!(
                "prefix cache: {} of {} priming requests failed; the shared prefix may not be cached",
                self.warmup_requests - self.warmup_completed,
                self.warmup_requests
            ));
        }
        let pairs = [
            ("usage cached_tokens", self.observed_hit_rate, self.expected_hit_rate),
            ("the server's /metrics", self.server_hit_rate, self.constructed_hit_rate),
        ];
        for (source, seen, built) in pairs {
            if let (Some(seen), Some(built)) = (seen, built) {
                if (seen - built).abs() > self.tolerance
                    && source == "usage cached_tokens"
                    && self.cold_first_wave > 0
                {
                    out.push(format!(
                        "prefix cache: hit rate {seen:.4} from {source} vs {built:.4} built in (target {:.4}): {} requests sent \
                         before any finished missed the whole shared prefix and every other request found all of it — the \
                         server caches per slot or per replica (llama.cpp -np N without a unified KV cache, data-parallel \
                         replicas) and priming warmed one of them; the later requests show the hit rate as built",
                        self.target_hit_rate, self.cold_first_wave
                    ));
                } else if (seen - built).abs() > self.tolerance {
                    out.push(format!(
                        "prefix cache: hit rate {seen:.4} from {source} vs {built:.4} built in (target {:.4}), off by more than {}: \
                         the cache may have evicted the shared prefix (too small for the load), --prefix-cache-block-size ({}) may not be \
                         the server's block size, or prefix caching is off",
                        self.target_hit_rate, self.tolerance, self.block_size
                    ));
                }
            }
        }
        out
    }

    /// The console block.
    pub fn console_block(&self) -> String {
        let f = |v: Option<f64>| v.map_or_else(|| "n/a".to_owned(), |v| format!("{v:.4}"));
        let mut s = format!("{:=^50}\n", " Prefix Cache ");
        s.push_str(&format!("{:<40}{:<10}\n", "Mode:", self.mode));
        s.push_str(&format!("{:<40}{:<10.4}\n", "Target hit rate:", self.target_hit_rate));
        s.push_str(&format!("{:<40}{:<10}\n", "Built-in hit rate:", f(self.constructed_hit_rate)));
        if let (Some(lo), Some(hi)) = (self.history_hit_rate, self.max_hit_rate) {
            s.push_str(&format!("{:<40}{:<10.4}\n", "History-only hit rate (multi-turn):", lo));
            s.push_str(&format!("{:<40}{:<10.4}\n", "Highest reachable hit rate:", hi));
        }
        s.push_str(&format!("{:<40}{:<10}\n", "Observed hit rate (usage):", f(self.observed_hit_rate)));
        s.push_str(&format!(
            "{:<40}{:<10}\n",
            "Observed hit rate (server /metrics):",
            f(self.server_hit_rate)
        ));
        s.push_str(&format!(
            "{:<40}{}/{}\n",
            "Priming requests completed:", self.warmup_completed, self.warmup_requests
        ));
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record_builder::RecordBuilder;
    use crate::ErrorKind;

    fn inputs<'a>(prefix: &'a [u32], server: Option<f64>) -> PrefixCacheInputs<'a> {
        PrefixCacheInputs {
            mode: "hit_rate",
            target: 0.7,
            block_size: 16,
            cached_prefix: prefix,
            warmup_requests: 1,
            warmup_completed: 1,
            server_hit_rate: server,
            reachable: None,
        }
    }

    #[test]
    fn report_follows_its_formulas_on_hand_computed_records() {
        // P = [64, 48, 64]; prompts 100, 80, 100.
        let recs = vec![
            RecordBuilder::new(0).prompt_tokens(100).prompt_usage(100, Some(64)).completed(),
            RecordBuilder::new(1).prompt_tokens(80).prompt_usage(80, Some(32)).completed(),
            RecordBuilder::new(2).prompt_tokens(100).failed(ErrorKind::HttpStatus, "500"),
        ];
        let r = PrefixCacheReport::of(&recs, &inputs(&[64, 48, 64], Some(0.5)));
        // constructed = (64 + 48 + 64) / 280; expected = (64 + 48) / 180; observed = 96 / 180.
        assert_eq!(r.constructed_hit_rate, Some(176.0 / 280.0));
        assert_eq!(r.expected_hit_rate, Some(112.0 / 180.0));
        assert_eq!(r.observed_hit_rate, Some(96.0 / 180.0));
        assert_eq!(r.observed_requests, 2);
        // usage: |0.5333 − 0.6222| > 0.02; server: |0.5 − 0.6286| > 0.02.
        assert_eq!(r.warnings().len(), 2);
    }

    #[test]
    fn agreement_within_tolerance_does_not_warn() {
        let recs = vec![RecordBuilder::new(0).prompt_tokens(100).prompt_usage(100, Some(64)).completed()];
        let r = PrefixCacheReport::of(&recs, &inputs(&[64], Some(0.65)));
        assert_eq!(r.observed_hit_rate, Some(0.64));
        assert!(r.warnings().is_empty(), "{:?}", r.warnings());
    }

    #[test]
    fn no_cached_tokens_reported_is_null_not_zero() {
        let recs = vec![RecordBuilder::new(0).prompt_tokens(100).completed()];
        let r = PrefixCacheReport::of(&recs, &inputs(&[64], None));
        assert_eq!(r.observed_hit_rate, None);
        assert_eq!(r.expected_hit_rate, None);
        assert_eq!(r.constructed_hit_rate, Some(0.64));
        assert!(r.warnings().is_empty());
    }

    #[test]
    fn failed_priming_warns() {
        let r = PrefixCacheReport::of::<[RequestRecord]>(
            &[],
            &PrefixCacheInputs { warmup_completed: 0, ..inputs(&[], None) },
        );
        assert_eq!(r.warnings().len(), 1);
    }

    /// llama.cpp -np 4 at concurrency 4 (the real run's records): priming warmed one slot; 3 of
    /// the 4 first requests miss the 44-token prefix, all 17 others hit exactly it.
    #[test]
    fn per_slot_caches_are_named_when_only_the_first_wave_misses() {
        let rec = |i: u64, sent: u64, done: u64, cached: u32| {
            RecordBuilder::new(i)
                .prompt_tokens(64)
                .sent_at(sent)
                .done_at(done)
                .prompt_usage(64, Some(cached))
                .completed()
        };
        let mut recs: Vec<RequestRecord> =
            (0..4).map(|i| rec(i, 10 + i, 900, if i == 1 { 44 } else { 0 })).collect();
        recs.extend((4..20).map(|i| rec(i, 1000 * i, 1000 * i + 500, 44)));
        let r = PrefixCacheReport::of(&recs, &inputs(&[44; 20], None));
        assert_eq!(r.cold_first_wave, 3);
        // 17 × 44 / 1280 observed vs 20 × 44 / 1280 built.
        assert_eq!(r.observed_hit_rate, Some(748.0 / 1280.0));
        let w = r.warnings();
        assert_eq!(w.len(), 1, "{w:?}");
        assert!(
            w[0].contains("3 requests sent before any finished missed the whole shared prefix"),
            "{}",
            w[0]
        );
        assert!(w[0].contains("caches per slot or per replica"), "{}", w[0]);
        assert!(!w[0].contains("evicted"), "{}", w[0]);
        // A later miss (eviction) is not the per-slot pattern: the general causes are named.
        recs[10] = rec(10, 10_000, 10_500, 0);
        let r = PrefixCacheReport::of(&recs, &inputs(&[44; 20], None));
        assert_eq!(r.cold_first_wave, 0);
        assert!(r.warnings()[0].contains("may have evicted"), "{:?}", r.warnings());
    }
}

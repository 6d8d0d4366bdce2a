//! Group reports: per-turn metrics and the conversation summary (multi-turn), per-stage metrics
//! (`--stages`/`--duration`) and the schedule lag (trace replay), as console blocks and result
//! JSON keys. Each group's numbers are `metrics::groups` over the run's records.

use std::fmt::Write as _;

use serde_json::{json, Map, Value};
use servebench_core::metrics::groups::{by_stage, by_turn, conversations, schedule_lag};
use servebench_core::metrics::{MetricName, MetricsConfig, RunMetrics};
use servebench_core::RecordSet;

use crate::fmt::{insert_stats, rate_json, stat_json};
use crate::info::LoadStage;

/// One stage of a staged run, as reported.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct StageInfo {
    /// Requests per second (infinite for a concurrency stage).
    pub rate: f64,
    pub seconds: f64,
    /// Concurrency stages (`c=N`): requests kept in flight.
    pub concurrency: Option<u64>,
}

impl StageInfo {
    /// The stage as the load-mode row names it: its concurrency, else its rate.
    pub fn load_stage(&self) -> LoadStage {
        match self.concurrency {
            Some(c) => LoadStage::Concurrency(c),
            None => LoadStage::Rate(self.rate),
        }
    }

    fn title(&self) -> String {
        match self.concurrency {
            Some(c) => format!("concurrency {c} for {} s", self.seconds),
            None => format!("{} req/s for {} s", self.rate, self.seconds),
        }
    }
}

/// What the run was, for the group reports.
#[derive(Debug, Clone, Default)]
pub struct GroupInfo {
    /// Each stage (`--stages`, or `--duration` as one stage).
    pub stages: Vec<StageInfo>,
    /// Trace replay: report how far dispatch lagged the trace.
    pub trace: bool,
    /// Multi-turn settings echoed in the result (vLLM's keys).
    pub turns_per_conversation: Option<u32>,
    pub multi_turn_concurrency: Option<u64>,
    pub inter_turn_delay_ms: Option<f64>,
}

fn group_json(m: &RunMetrics) -> Map<String, Value> {
    let mut o = Map::new();
    o.insert("num_samples".into(), json!(m.sent));
    o.insert("completed".into(), json!(m.completed));
    o.insert("failed".into(), json!(m.failed));
    o.insert("cancelled".into(), json!(m.cancelled));
    // Cancelled before they were sent (in `cancelled`, not in `num_samples`): completed + failed
    // + cancelled = num_samples + never_sent. Without it a stage an early stop cut short said
    // 17 samples beside 126 cancelled.
    o.insert("never_sent".into(), json!(m.never_sent));
    let d = m.duration_s;
    o.insert("duration".into(), rate_json(d, d));
    o.insert("total_input_tokens".into(), json!(m.total_input_tokens));
    o.insert("total_output_tokens".into(), json!(m.total_output_tokens));
    o.insert("cached_input_tokens".into(), json!(m.cached_input_tokens));
    o.insert("request_throughput".into(), rate_json(d, m.request_throughput));
    o.insert("input_throughput".into(), rate_json(d, m.input_throughput));
    o.insert("output_throughput".into(), rate_json(d, m.output_throughput));
    o.insert("total_token_throughput".into(), rate_json(d, m.total_token_throughput));
    for metric in [MetricName::Ttft, MetricName::Tpot, MetricName::Itl, MetricName::E2el] {
        if !m.config.selected.contains(&metric) {
            continue;
        }
        insert_stats(&mut o, metric.as_str(), m.summary(metric));
    }
    // The console's block shows mean TTFT and E2EL whatever --percentile-metrics selects: the
    // JSON has them too (the console said "the result JSON always has all of it", and a stage's
    // "Mean E2EL" was nowhere in it under the default ttft,tpot,itl).
    for (metric, s) in [(MetricName::Ttft, &m.ttft), (MetricName::E2el, &m.e2el)] {
        if !m.config.selected.contains(&metric) {
            let v = if s.count > 0 { stat_json(s.count, s.mean) } else { Value::Null };
            o.insert(format!("mean_{}_ms", metric.as_str()), v);
        }
    }
    o
}

/// The group keys of a result document (conversations, stages, schedule lag), in order.
pub fn result_keys<S: RecordSet + ?Sized>(
    records: &S,
    cfg: &MetricsConfig,
    info: &GroupInfo,
) -> Map<String, Value> {
    let mut o = Map::new();
    if let Some(c) = conversations(records) {
        o.insert("num_conversations".into(), json!(c.conversations));
        if let Some(t) = info.turns_per_conversation {
            o.insert("turns_per_conversation".into(), json!(t));
        }
        if let Some(c) = info.multi_turn_concurrency {
            o.insert("multi_turn_concurrency".into(), json!(c));
        }
        if let Some(d) = info.inter_turn_delay_ms {
            o.insert("inter_turn_delay_ms".into(), json!(d));
        }
        o.insert("conversations_completed".into(), json!(c.completed));
        o.insert("conversations_failed".into(), json!(c.failed));
        o.insert("avg_turns_completed".into(), json!(c.avg_turns_completed));
        // vLLM's key: vLLM's float, 0.0 when no conversation completed a turn.
        let avg = c.avg_duration_ms.unwrap_or(0.0);
        o.insert(
            "avg_conversation_duration_ms".into(),
            crate::fmt::vllm_number(c.avg_duration_ms.is_some(), avg),
        );
        let turns: Vec<Value> = by_turn(records, cfg)
            .into_iter()
            .map(|(k, m)| {
                let mut g = Map::new();
                g.insert("turn_index".into(), json!(k));
                g.extend(group_json(&m));
                Value::Object(g)
            })
            .collect();
        o.insert("per_turn_metrics".into(), Value::Array(turns));
    }
    let stages = by_stage(records, cfg);
    if !stages.is_empty() || !info.stages.is_empty() {
        let mut start = 0.0;
        let mut out = Vec::new();
        for (k, st) in info.stages.iter().enumerate() {
            let mut g = Map::new();
            g.insert("stage_index".into(), json!(k));
            match st.concurrency {
                // As the run's own keys: an infinite rate is "inf".
                Some(c) => {
                    g.insert("request_rate".into(), json!("inf"));
                    g.insert("max_concurrency".into(), json!(c));
                }
                None => {
                    g.insert("request_rate".into(), json!(st.rate));
                }
            }
            g.insert("start_s".into(), json!(start));
            g.insert("end_s".into(), json!(start + st.seconds));
            start += st.seconds;
            if let Some((_, m)) = stages.iter().find(|(s, _)| *s as usize == k) {
                g.extend(group_json(m));
            } else {
                g.extend(group_json(&servebench_core::metrics::compute::<[servebench_core::RequestRecord]>(
                    &[],
                    cfg,
                )));
            }
            out.push(Value::Object(g));
        }
        o.insert("stages".into(), Value::Array(out));
    }
    if info.trace {
        let l = schedule_lag(records, &[]);
        o.insert(
            "schedule_lag".into(),
            json!({
                "dispatched": l.dispatched,
                "not_dispatched": l.not_dispatched,
                "mean_ms": stat_json(l.lag_ms.count, l.lag_ms.mean),
                "median_ms": stat_json(l.lag_ms.count, l.lag_ms.median),
                "p99_ms": l.lag_ms.percentile(99.0).map_or(Value::Null, |v| stat_json(l.lag_ms.count, v)),
                "max_ms": opt(l.max_ms),
                "late_over_10ms": l.late_over_10ms,
            }),
        );
    }
    o
}

/// `null` for a value without data.
fn opt(v: Option<f64>) -> Value {
    v.map_or(Value::Null, |v| stat_json(1, v))
}

/// "n/a" for a value without data, else two decimals.
fn na(v: Option<f64>) -> String {
    v.filter(|v| v.is_finite()).map_or_else(|| "n/a".to_owned(), |v| format!("{v:.2}"))
}

fn block(out: &mut String, title: &str, m: &RunMetrics) {
    let d = m.duration_s;
    let rate = |v: f64| na((d > 0.0).then_some(v));
    let _ = writeln!(out, "{:-^50}", title);
    let _ = writeln!(out, "{:<40} {:<10}", "Successful requests:", m.completed);
    let _ = writeln!(out, "{:<40} {:<10}", "Failed requests:", m.failed);
    let _ = writeln!(out, "{:<40} {:<10}", "Active window (s):", rate(d));
    let _ = writeln!(out, "{:<40} {:<10}", "Total input tokens:", m.total_input_tokens);
    let cached = m.cached_input_tokens.map_or_else(|| "n/a".to_owned(), |c| c.to_string());
    let _ = writeln!(out, "{:<40} {:<10}", "Cached input tokens:", cached);
    let _ = writeln!(out, "{:<40} {:<10}", "Total generated tokens:", m.total_output_tokens);
    let _ = writeln!(out, "{:<40} {:<10}", "Request throughput (req/s):", rate(m.request_throughput));
    let _ = writeln!(out, "{:<40} {:<10}", "Output token throughput (tok/s):", rate(m.output_throughput));
    let _ = writeln!(out, "{:<40} {:<10}", "Mean TTFT (ms):", na((m.ttft.count > 0).then_some(m.ttft.mean)));
    let _ = writeln!(out, "{:<40} {:<10}", "Mean E2EL (ms):", na((m.e2el.count > 0).then_some(m.e2el.mean)));
}

/// The console blocks of the groups (empty when the run has none).
pub fn console_groups<S: RecordSet + ?Sized>(records: &S, cfg: &MetricsConfig, info: &GroupInfo) -> String {
    let mut out = String::new();
    if let Some(c) = conversations(records) {
        let _ = writeln!(out, "{:=^50}", " Multi-Turn Conversations ");
        let _ = writeln!(out, "{:<40} {}/{}", "Conversations completed:", c.completed, c.conversations);
        let _ = writeln!(out, "{:<40} {:<10}", "Conversations failed:", c.failed);
        let _ = writeln!(out, "{:<40} {:<10.2}", "Avg turns completed:", c.avg_turns_completed);
        let _ = writeln!(out, "{:<40} {:<10}", "Avg conversation duration (ms):", na(c.avg_duration_ms));
        for (k, m) in by_turn(records, cfg) {
            block(&mut out, &format!(" Turn {k} ({} samples) ", m.sent), &m);
        }
    }
    let stages = by_stage(records, cfg);
    for (k, st) in info.stages.iter().enumerate() {
        if let Some((_, m)) = stages.iter().find(|(s, _)| *s as usize == k) {
            block(&mut out, &format!(" Stage {k}: {} ", st.title()), m);
        }
    }
    if info.trace {
        let l = schedule_lag(records, &[]);
        let _ = writeln!(out, "{:=^50}", " Trace Replay ");
        let _ = writeln!(out, "{:<40} {:<10}", "Requests dispatched:", l.dispatched);
        let has = |v: Option<f64>| na(v.filter(|_| l.lag_ms.count > 0));
        let _ =
            writeln!(out, "{:<40} {:<10}", "Dispatch lag vs trace, median (ms):", has(Some(l.lag_ms.median)));
        let _ = writeln!(
            out,
            "{:<40} {:<10}",
            "Dispatch lag vs trace, P99 (ms):",
            has(l.lag_ms.percentile(99.0))
        );
        let _ = writeln!(out, "{:<40} {:<10}", "Dispatch lag vs trace, max (ms):", na(l.max_ms));
        let _ = writeln!(out, "{:<40} {:<10}", "Requests more than 10 ms late:", l.late_over_10ms);
    }
    if !out.is_empty() {
        let _ = writeln!(out, "{}", "=".repeat(50));
    }
    out
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use servebench_core::RequestRecord;
    use servebench_testkit::records::RecordBuilder;

    /// Request `i` sent at `d`, its first token 1 µs later and its last at `end`; 2 tokens.
    fn rec(i: u64, d: u64, end: u64) -> RequestRecord {
        let gap = u32::try_from(end - (d + 1)).unwrap();
        RecordBuilder::new(i).sent_at(d).stream(d + 1, &[gap]).done_at(end).usage(2).completed()
    }

    #[test]
    fn keys_appear_only_for_their_runs() {
        let cfg = MetricsConfig::default();
        let plain = Value::Object(result_keys(&[rec(0, 0, 10)], &cfg, &GroupInfo::default()));
        assert_eq!(plain, json!({}));
        let mut a = rec(0, 0, 1_000_000);
        a.conversation = Some(0);
        a.turn = Some(0);
        a.stage = Some(0);
        let stage = |rate, seconds| StageInfo { rate, seconds, concurrency: None };
        let info = GroupInfo {
            stages: vec![stage(5.0, 60.0), stage(20.0, 60.0)],
            trace: true,
            ..GroupInfo::default()
        };
        let doc = Value::Object(result_keys(&[a.clone()], &cfg, &info));
        assert_eq!(doc["num_conversations"], 1);
        assert_eq!(doc["per_turn_metrics"][0]["turn_index"], 0);
        assert_eq!(doc["per_turn_metrics"][0]["request_throughput"], 1.0);
        assert_eq!(doc["stages"][1]["start_s"], 60.0);
        assert_eq!(doc["stages"][1]["num_samples"], 0);
        assert_eq!(doc["stages"][0]["completed"], 1);
        assert_eq!(doc["schedule_lag"]["dispatched"], 1);
        let text = console_groups(&[a], &cfg, &info);
        assert!(text.contains(" Turn 0 (1 samples) "));
        assert!(text.contains("Stage 0: 5 req/s for 60 s"));
        assert!(text.contains("Dispatch lag vs trace"));
    }

    #[test]
    fn concurrency_stages_report_their_limit() {
        let cfg = MetricsConfig::default();
        let mut a = rec(0, 0, 1_000_000);
        a.stage = Some(1);
        let c = |n, seconds| StageInfo { rate: f64::INFINITY, seconds, concurrency: Some(n) };
        let info = GroupInfo { stages: vec![c(8, 30.0), c(32, 30.0)], ..GroupInfo::default() };
        let doc = Value::Object(result_keys(&[a.clone()], &cfg, &info));
        assert_eq!(doc["stages"][1]["max_concurrency"], 32);
        assert_eq!(doc["stages"][1]["request_rate"], "inf");
        assert_eq!(
            (doc["stages"][1]["completed"].clone(), doc["stages"][0]["num_samples"].clone()),
            (json!(1), json!(0))
        );
        assert!(console_groups(&[a], &cfg, &info).contains("Stage 1: concurrency 32 for 30 s"));
    }

    /// Pins the console's per-stage and per-turn "Mean TTFT" and "Mean E2EL" lines being in the
    /// JSON whatever `--percentile-metrics` selects: under the default ttft,tpot,itl a stage's
    /// "Mean E2EL (ms): 201.32" was in no key of the result. Only their means are added; a
    /// selected metric keeps all its statistics.
    #[test]
    fn a_groups_console_means_are_in_its_json_whatever_the_metrics_selected() {
        let cfg = MetricsConfig::default();
        assert!(!cfg.selected.contains(&MetricName::E2el), "{:?}", cfg.selected);
        let mut a = rec(0, 0, 1_000_000);
        a.stage = Some(0);
        let info = GroupInfo {
            stages: vec![StageInfo { rate: 5.0, seconds: 2.0, concurrency: None }],
            ..GroupInfo::default()
        };
        let doc = Value::Object(result_keys(std::slice::from_ref(&a), &cfg, &info));
        let s = &doc["stages"][0];
        assert_eq!(s["mean_e2el_ms"], 1000.0, "{s}");
        assert!(s.get("p99_e2el_ms").is_none(), "{s}");
        assert!(
            console_groups(&[a], &cfg, &info).contains("Mean E2EL (ms):                          1000.00")
        );
    }

    /// Pins a stage an early stop cut short: its never-sent requests are counted apart, so its
    /// counts add up (`num_samples` 17 beside `cancelled` 126 did not).
    #[test]
    fn a_stage_cut_short_counts_its_never_sent_requests() {
        let cfg = MetricsConfig::default();
        let mut sent = rec(0, 0, 1_000_000);
        sent.stage = Some(0);
        let mut never = RequestRecord::scheduled(1, "r1".into(), 500_000, 4, 4);
        never.stage = Some(0);
        let info = GroupInfo {
            stages: vec![StageInfo { rate: 5.0, seconds: 2.0, concurrency: None }],
            ..GroupInfo::default()
        };
        let doc = Value::Object(result_keys(&[sent, never], &cfg, &info));
        let s = &doc["stages"][0];
        let n = |k: &str| s[k].as_u64().unwrap();
        assert_eq!((n("num_samples"), n("never_sent"), n("cancelled")), (1, 1, 1), "{s}");
        assert_eq!(n("completed") + n("failed") + n("cancelled"), n("num_samples") + n("never_sent"));
    }
}

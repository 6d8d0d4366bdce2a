//! The console result block: vLLM's " Serving Benchmark Result " block, row for row, then
//! servebench's schedule-anchored view and client health.

use std::fmt::Write as _;

use servebench_core::metrics::{MetricName, RunMetrics};

use crate::fmt::{
    banner, metric_reported, result_head, row_f2, row_int, row_opt_f2, row_rate, stats_section, vllm_header,
    WIDTH,
};
use crate::info::RunInfo;

/// The result block printed after a run: vLLM's block (same rows, labels, order and number
/// formats as Python `vllm bench serve`), then servebench's block.
pub fn console_block(info: &RunInfo, m: &RunMetrics) -> String {
    if crate::sections::pooling::is_pooling_backend(&info.backend) {
        let mut out = crate::sections::pooling::console_block(info, m);
        servebench_block(&mut out, info, m);
        return out;
    }
    let mut out = String::new();
    result_head(&mut out, " Serving Benchmark Result ", info, m);
    row_int(&mut out, "Total input tokens:", m.total_input_tokens);
    row_int(&mut out, "Total generated tokens:", m.total_output_tokens);
    let d = m.duration_s;
    row_rate(&mut out, "Request throughput (req/s):", d, m.request_throughput);
    if let Some(g) = m.request_goodput {
        row_rate(&mut out, "Request goodput (req/s):", d, g);
    }
    row_rate(&mut out, "Output token throughput (tok/s):", d, m.output_throughput);
    row_rate(&mut out, "Peak output token throughput (tok/s):", d, m.max_output_tokens_per_s);
    row_f2(&mut out, "Peak concurrent requests:", m.max_concurrent_requests as f64);
    // vLLM prints RTFx for ASR runs only (its value is 0 otherwise); ours exists only then.
    if let Some(rtfx) = m.rtfx {
        row_f2(&mut out, "RTFx (Inverse Real-Time Factor):", rtfx);
    }
    row_rate(&mut out, "Total token throughput (tok/s):", d, m.total_token_throughput);
    for metric in MetricName::ALL {
        if metric_reported(info, m, metric) {
            let (header, short) = vllm_header(metric);
            stats_section(&mut out, header, short, m.summary(metric));
        }
    }
    let _ = writeln!(out, "{}", "=".repeat(WIDTH));
    servebench_block(&mut out, info, m);
    out
}

pub(crate) fn servebench_block(out: &mut String, info: &RunInfo, m: &RunMetrics) {
    banner(out, " servebench: schedule-anchored view ", '=');
    row_int(out, "Cancelled requests:", m.cancelled);
    for &(k, n) in m.failures_by_kind.iter().filter(|(_, n)| *n > 0) {
        row_int(out, &format!("Failed ({}):", k.as_str()), n);
    }
    if m.failures_unclassified > 0 {
        row_int(out, "Failed (unclassified):", m.failures_unclassified);
    }
    let s = m.output_token_source;
    row_int(
        out,
        "Output token source (requests):",
        format!("usage {}, retokenized {}, events {}", s.usage, s.retokenized, s.events),
    );
    crate::sections::token_accounting::console(out, &m.token_accounting);
    crate::sections::output_split::console(out, &m.output_split);
    if m.server_input_tokens_reported > 0 {
        row_int(out, "Server-reported input tokens:", m.server_total_input_tokens);
    }
    row_int(out, "Cached input tokens:", m.cached_input_tokens);
    stats_section(out, "Response TTFT (from intended send time)", "Response TTFT", &m.response_ttft);
    stats_section(out, "Response E2EL (from intended send time)", "Response E2EL", &m.response_e2el);
    stats_section(out, "Queue Time (dispatched - intended)", "Queue Time", &m.queue_time);
    stats_section(out, "Inter-token Latency (per token)", "ITL per token", &m.itl_token_view);
    banner(out, "Client Health", '-');
    let h = &info.client_health;
    row_opt_f2(out, "Dispatch lateness P50 (ms):", h.dispatch_lateness_p50_us.map(|v| v / 1000.0));
    row_opt_f2(out, "Dispatch lateness P99 (ms):", h.dispatch_lateness_p99_us.map(|v| v / 1000.0));
    row_opt_f2(out, "Event-loop hiccup P99 (ms):", h.hiccup_p99_us.map(|v| v / 1000.0));
    row_opt_f2(out, "Client CPU (% of one core):", h.client_cpu_percent);
    row_opt_f2(out, "Peak RSS (MiB):", h.peak_rss_bytes.map(|b| b as f64 / (1024.0 * 1024.0)));
    for w in h.warnings() {
        let _ = writeln!(out, "WARNING: {w}");
    }
    let _ = writeln!(out, "{}", "=".repeat(WIDTH));
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fmt::center;

    #[test]
    fn centering_matches_python() {
        // Python: '{s:{c}^{n}}'.format(s=' Serving Benchmark Result ', n=50, c='=')
        assert_eq!(
            center(" Serving Benchmark Result ", '='),
            format!("{0} Serving Benchmark Result {0}", "=".repeat(12))
        );
        // 19 chars: 15 left, 16 right.
        assert_eq!(
            center("Time to First Token", '-'),
            format!("{}Time to First Token{}", "-".repeat(15), "-".repeat(16))
        );
        assert_eq!(center("Time to First Token", '-').len(), WIDTH);
    }
}

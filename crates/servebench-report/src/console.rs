//! The console result block: vLLM's " Serving Benchmark Result " block, row for row, then
//! servebench's additions (short, each with a caption: `sections::additions`), and with
//! `--verbose` the full detail (token sources, schedule-anchored view, client health). Warnings
//! are not part of the block: `console_warnings` returns them for stderr.

use std::fmt::Write as _;

use servebench_core::metrics::{MetricName, RunMetrics};

use crate::fmt::{
    banner, metric_reported, result_head, row_f2, row_int, row_opt_f2, row_rate, stats_section, vllm_header,
    WIDTH,
};
use crate::info::RunInfo;

/// How much of servebench's console to print after vLLM's block.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Detail {
    /// vLLM's block, then servebench's additions with their captions.
    #[default]
    Default,
    /// Also the full detail (`--verbose`).
    Verbose,
}

/// The default result block printed after a run (`console_block_with(.., Detail::Default)`).
pub fn console_block(info: &RunInfo, m: &RunMetrics) -> String {
    console_block_with(info, m, Detail::Default)
}

/// The result block printed after a run: vLLM's block (same rows, labels, order and number
/// formats as Python `vllm bench serve`), then servebench's additions, then (verbose) the
/// full detail.
pub fn console_block_with(info: &RunInfo, m: &RunMetrics, detail: Detail) -> String {
    let mut out = vllm_block(info, m);
    crate::sections::additions::console(&mut out, info, m);
    if detail == Detail::Verbose {
        detail_block(&mut out, info, m);
    }
    out
}

/// The warnings of a run's result (client health, token accounting), for stderr.
pub fn console_warnings(info: &RunInfo, m: &RunMetrics) -> Vec<String> {
    let mut w = info.client_health.warnings();
    w.extend(m.token_accounting.warnings());
    w
}

/// vLLM's block: the serving block, or the pooling block for pooling backends.
fn vllm_block(info: &RunInfo, m: &RunMetrics) -> String {
    if crate::sections::pooling::is_pooling_backend(&info.backend) {
        return crate::sections::pooling::console_block(info, m);
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
    out
}

/// The full detail (`--verbose`): token sources and accounting, cached input tokens, the
/// schedule-anchored view, ITL per token and the client's health figures.
fn detail_block(out: &mut String, info: &RunInfo, m: &RunMetrics) {
    banner(out, " servebench: detail (--verbose) ", '=');
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
    // Only when the server reported cached tokens: without a report the count is unknown.
    if let Some(cached) = m.cached_input_tokens {
        row_int(out, "Cached input tokens:", cached);
    }
    // Shown in the additions already where they mean something (an open-loop schedule).
    if !crate::sections::additions::LoadRegime::of(info).schedule_meaningful() {
        let _ = writeln!(
            out,
            "  schedule-anchored, client-queue-inclusive: from each request's intended send time"
        );
        stats_section(out, "Response TTFT (from intended send time)", "Response TTFT", &m.response_ttft);
        stats_section(out, "Response E2EL (from intended send time)", "Response E2EL", &m.response_e2el);
        stats_section(out, "Queue Time (dispatched - intended)", "Queue Time", &m.queue_time);
    }
    stats_section(out, "Inter-token Latency (per token)", "ITL per token", &m.itl_token_view);
    banner(out, "Client Health", '-');
    let h = &info.client_health;
    row_opt_f2(out, "Dispatch lateness P50 (ms):", h.dispatch_lateness_p50_us.map(|v| v / 1000.0));
    row_opt_f2(out, "Dispatch lateness P99 (ms):", h.dispatch_lateness_p99_us.map(|v| v / 1000.0));
    row_opt_f2(out, "Event-loop hiccup P99 (ms):", h.hiccup_p99_us.map(|v| v / 1000.0));
    row_opt_f2(out, "Client CPU (% of one core):", h.client_cpu_percent);
    row_opt_f2(out, "Peak RSS (MiB):", h.peak_rss_bytes.map(|b| b as f64 / (1024.0 * 1024.0)));
    if let Some(r) = &h.receive_timestamps {
        let _ = writeln!(out, "Receive times: {}", r.detail);
        row_opt_f2(out, "Read lag P50 (ms):", r.read_lag_p50_us.map(|v| v / 1000.0));
        row_opt_f2(out, "Read lag P99 (ms):", r.read_lag_p99_us.map(|v| v / 1000.0));
        row_opt_f2(out, "Read lag max (ms):", r.read_lag_max_us.map(|v| v / 1000.0));
    }
    if let Some(t) = &h.time_slice {
        let _ = writeln!(out, "Time slices: {}", t.detail);
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

//! Every scraped `/metrics` endpoint's summary (`--server-metrics-url`, `--scrape-metrics`):
//! per endpoint, the series of each known meaning (queue, running, KV usage, prefix cache,
//! preemptions, server TTFT/ITL/E2E, token counters) and every histogram over the run; and the
//! GPU telemetry and energy (`--gpu-metrics`, `--gpu-metrics-url`). Figures are defined in
//! docs/metrics.md ("Server metrics of every engine", "GPU telemetry and energy"); the runner
//! computes them (`servebench_runner::observe`), `crate::server_summary` owns their types, this module their console text.

pub use crate::server_summary::{
    EndpointSummary, GpuEnergy, GpuRow, GpuTelemetry, HistogramSummary, MeaningSummary,
};

fn opt(v: Option<f64>, digits: usize) -> String {
    v.map_or_else(|| "n/a".to_owned(), |v| format!("{v:.digits$}"))
}

/// Console lines of the endpoints: one line per endpoint with its key figures.
pub fn endpoints_block(endpoints: &[EndpointSummary]) -> String {
    let mut out = format!("{:=^50}\n", " Server Metrics (per endpoint) ");
    for e in endpoints {
        let m = |k: &str| e.meanings.get(k);
        let engines = if e.engines.is_empty() { "unknown".to_owned() } else { e.engines.join("+") };
        out.push_str(&format!("{} [{engines}]: {} scrapes, {} series\n", e.url, e.scrapes, e.series_count));
        out.push_str(&format!(
            "  queue mean {}  running mean {}  KV usage max {} %  prefix hit {} %\n",
            opt(m("queue").and_then(|s| s.mean), 2),
            opt(m("running").and_then(|s| s.mean), 2),
            opt(m("kv_cache_usage").and_then(|s| s.max).map(|v| v * 100.0), 1),
            opt(e.prefix_cache_hit_rate.map(|v| v * 100.0), 1),
        ));
        out.push_str(&format!(
            "  server TTFT p50/p99 {} / {} ms  ITL p50 {} ms  E2E p50 {} ms\n",
            opt(m("ttft").and_then(|s| s.p50).map(|v| v * 1e3), 1),
            opt(m("ttft").and_then(|s| s.p99).map(|v| v * 1e3), 1),
            opt(m("itl").and_then(|s| s.p50).map(|v| v * 1e3), 2),
            opt(m("e2e").and_then(|s| s.p50).map(|v| v * 1e3), 1),
        ));
        if e.failed_scrapes > 0 {
            out.push_str(&format!(
                "  warning: {} scrapes failed (last: {})\n",
                e.failed_scrapes,
                e.last_error.as_deref().unwrap_or("?")
            ));
        }
    }
    out.push_str(&"=".repeat(50));
    out
}

/// The console block of GPU energy (or why there is none).
pub fn gpu_block(telemetry: &GpuTelemetry, energy: Option<&GpuEnergy>) -> String {
    let mut out = format!("{:=^50}\n", " GPU Energy ");
    let row = |out: &mut String, k: &str, v: String| out.push_str(&format!("{k:<40}{v:<10}\n"));
    row(&mut out, "Source:", telemetry.source.clone());
    match energy {
        None => row(&mut out, "Energy:", "n/a".into()),
        Some(e) => {
            row(&mut out, "Method:", e.method.clone());
            row(&mut out, "Total energy (J):", format!("{:.1}", e.total_energy_j));
            row(&mut out, "Average power (W):", opt(e.avg_power_w, 1));
            row(&mut out, "Energy per output token (J/token):", opt(e.joules_per_output_token, 4));
            row(&mut out, "Output tokens per joule:", opt(e.output_tokens_per_joule, 3));
            for g in &e.gpus {
                row(
                    &mut out,
                    &format!("  GPU {} @ {}:", g.gpu, g.host),
                    format!("{} J, {} W", opt(g.energy_j, 1), opt(g.avg_power_w, 1)),
                );
            }
        }
    }
    if let Some(n) = &telemetry.note {
        out.push_str(&format!("note: {n}\n"));
    }
    out.push_str(&"=".repeat(50));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gpu_block_says_n_a_without_energy_and_gives_the_note() {
        let t = GpuTelemetry {
            source: "nvidia-smi".into(),
            note: Some("nvidia-smi not found".into()),
            ..GpuTelemetry::default()
        };
        let text = gpu_block(&t, None);
        assert!(text.contains("Energy:                                 n/a"), "{text}");
        assert!(text.contains("note: nvidia-smi not found"), "{text}");
        let e = GpuEnergy {
            method: "energy_counter".into(),
            total_energy_j: 100.0,
            output_tokens: 50,
            joules_per_output_token: Some(2.0),
            output_tokens_per_joule: Some(0.5),
            ..GpuEnergy::default()
        };
        assert!(gpu_block(&t, Some(&e)).contains("Energy per output token (J/token):      2.0000"));
    }
}

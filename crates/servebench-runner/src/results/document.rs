//! A run's result document and console text, from its assembled results: vLLM's block and keys
//! (`servebench_report`), then what servebench adds (groups, steady state, server metrics,
//! profile, probes, the server's tokenizer check), each section rendered by the report.

use super::assemble::RunResults;
use super::steady::Steady;
use crate::observe::server_side::ServerSideOutput;
use servebench_core::metrics::http_phases::http_phases;
use servebench_report::sections::additions::steady_state_caption;
use servebench_report::sections::groups::{console_groups, result_keys};
use servebench_report::sections::http_phases::http_phases_block;
use servebench_report::sections::server::{self, ServerSection};
use servebench_report::sections::server_endpoints::{endpoints_block, gpu_block};
use servebench_report::sections::steady_state::steady_state_block;
use servebench_report::written::RunDocument;
use servebench_report::{console_block_with, console_warnings, result_object, Detail};

impl RunResults {
    /// The console text of the run (stdout): vLLM's block, servebench's additions (and with
    /// `Detail::Verbose` the full detail), probes, groups, steady state, server side. Warnings
    /// and notes are in `console_warnings`, for stderr.
    pub fn console_text(&self, detail: Detail) -> String {
        let mut text = format!("{}\n", console_block_with(&self.info, &self.metrics, detail));
        if let Some(p) = &self.probes {
            text.push_str(&p.console_block());
        }
        // Per-turn, per-stage and trace-replay blocks (docs/workloads.md).
        text.push_str(&console_groups(&self.out.records, &self.metrics.config, &self.groups));
        text.push_str(&side_blocks(self.steady.as_ref(), &self.server_side));
        if let Some(g) = &self.server_side.gpu {
            text.push_str(&format!("{}\n", gpu_block(&g.telemetry, self.gpu_energy().as_ref())));
        }
        if let Some(e) = &self.out.early_stop {
            text.push_str(&format!("{}\n", e.console_line()));
        }
        if let Some(pc) = self.prefix_cache_report() {
            text.push_str(&pc.console_block());
        }
        // HTTP phases with the full detail only (`--verbose`); always in the result.
        if let Some(p) = (detail == Detail::Verbose).then(|| http_phases(&self.out.records)).flatten() {
            text.push_str(&http_phases_block(&p));
        }
        text
    }

    /// The run's warnings and notes, one line each with its prefix, for stderr: client health,
    /// token accounting, the steady-state window's, the profiler's, then the run's notes.
    pub fn console_warnings(&self) -> Vec<String> {
        let mut lines: Vec<String> = console_warnings(&self.info, &self.metrics)
            .into_iter()
            .map(|w| format!("warning: {w}"))
            .collect();
        if let Some(w) = self.steady.as_ref().and_then(|s| s.as_ref().ok()).and_then(|s| s.warning.as_ref()) {
            lines.push(format!("warning: {w}"));
        }
        lines.extend(side_warnings(&self.server_side));
        let prefix_cache = self.prefix_cache_report().map(|pc| pc.warnings()).unwrap_or_default();
        lines.extend(prefix_cache.into_iter().map(|w| format!("warning: {w}")));
        // Notices shown as they happened are not repeated here.
        lines.extend(self.out.warnings.iter().filter(|n| !n.said).map(ToString::to_string));
        lines
    }

    /// The `gpu_energy` figures of the run (docs/metrics.md, "GPU telemetry and energy"): the
    /// GPUs' energy over the measured phase and per output token of its successful requests;
    /// `None` without GPU telemetry or without an energy figure.
    pub fn gpu_energy(&self) -> Option<servebench_report::sections::server_endpoints::GpuEnergy> {
        let g = self.server_side.gpu.as_ref()?;
        crate::observe::gpu::gpu_energy(g.rows.clone(), self.metrics.total_output_tokens)
    }

    /// The result document; `records_file` is its `records_file` key, when records were written.
    pub fn document(&self, save_detailed: bool, records_file: Option<String>) -> RunDocument {
        let records = &self.out.records;
        let (result, arrays) = result_object(&self.info, &self.metrics, records, save_detailed);
        let side = &self.server_side;
        let energy = self.gpu_energy();
        let mut groups = result_keys(records, &self.metrics.config, &self.groups);
        if let Some(pc) = self.prefix_cache_report() {
            groups.insert("prefix_cache".into(), serde_json::to_value(pc).unwrap_or_default());
        }
        // `null` when no completed request has phase timing (docs/metrics.md, "HTTP phases").
        groups.insert("http_phases".into(), serde_json::to_value(http_phases(records)).unwrap_or_default());
        groups.insert("validity".into(), serde_json::to_value(self.validity()).unwrap_or_default());
        RunDocument {
            result,
            arrays,
            records_file,
            interrupted: self.out.interrupted,
            early_stop: self.out.early_stop.clone(),
            groups,
            steady_state: self.steady.as_ref().and_then(|s| s.as_ref().ok()).cloned(),
            steady_state_reason: self
                .steady
                .as_ref()
                .and_then(|s| s.as_ref().err())
                .map(|e| e.reason.clone()),
            server: ServerSection::new(side.server.as_ref(), side.profile.as_ref())
                .with_gpu(side.gpu.as_ref().map(|g| (&g.telemetry, energy.as_ref()))),
            probes: self.probes.clone(),
            server_tokenize: Some(self.out.verification.document()),
        }
    }
}

/// The steady-state block (with its caption under the banner) and the server-metrics block.
pub fn side_blocks(steady: Option<&Steady>, side: &ServerSideOutput) -> String {
    let mut text = String::new();
    if let Some(s) = steady {
        text.push_str(&format!("{}\n", captioned_steady_block(s)));
    }
    if let Some(s) = &side.server {
        text.push_str(&format!("{}\n", server::console_block(s)));
        if s.endpoints.len() > 1 || s.endpoints.iter().any(|e| e.engines.iter().any(|n| n != "vllm")) {
            text.push_str(&format!("{}\n", endpoints_block(&s.endpoints)));
        }
    }
    text
}

/// The profiler's warnings, one line each.
pub fn side_warnings(side: &ServerSideOutput) -> Vec<String> {
    let mut lines: Vec<String> =
        side.profile.iter().flat_map(|p| &p.warnings).map(|w| format!("warning: {w}")).collect();
    if let Some(e) = &side.series_error {
        lines.push(format!("warning: the server-metrics file is incomplete: {e}"));
    }
    lines
}

/// The steady-state block with a caption saying what its window means in the run's load mode.
fn captioned_steady_block(s: &Steady) -> String {
    let block = steady_state_block(s);
    let Ok(state) = s else { return block };
    match block.split_once('\n') {
        Some((banner, rest)) => format!("{banner}\n  {}\n{rest}", steady_state_caption(&state.mode)),
        None => block,
    }
}

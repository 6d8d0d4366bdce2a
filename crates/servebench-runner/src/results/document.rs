//! A run's result document and console text, from its figures: vLLM's block and keys
//! (`servebench_report`), then what servebench adds (groups, steady state, server metrics,
//! profile, probes, the server's tokenizer check).

use super::steady::Steady;
use crate::observe::profiling::ProfileOutcome;
use crate::observe::scrape::ServerMetrics;
use crate::run::server_side::{server_metrics_block, ServerSideOutput};
use crate::run::RunOutput;
use serde_json::{json, Value};
use servebench_core::metrics::RunMetrics;
use servebench_report::sections::groups::{console_groups, extend_result, GroupInfo};
use servebench_report::sections::probe::ProbeSummary;
use servebench_report::sections::steady_state::{steady_state_block, steady_state_json};
use servebench_report::{console_block, result_json, RunInfo};

/// Everything one run's console text and result document are written from.
#[derive(Debug, Clone, Copy)]
pub struct RunFigures<'a> {
    pub info: &'a RunInfo,
    pub metrics: &'a RunMetrics,
    pub out: &'a RunOutput,
    pub groups: &'a GroupInfo,
    pub steady: Option<&'a Steady>,
    pub server_side: &'a ServerSideOutput,
    pub probes: Option<&'a ProbeSummary>,
}

impl RunFigures<'_> {
    /// The console text of the run: vLLM's block, probes, groups, steady state, server side,
    /// then the run's notes.
    pub fn console_text(&self) -> String {
        let mut text = format!("{}\n", console_block(self.info, self.metrics));
        if let Some(p) = self.probes {
            text.push_str(&p.console_block());
        }
        // Per-turn, per-stage and trace-replay blocks (docs/workloads.md).
        text.push_str(&console_groups(&self.out.records, &self.metrics.config, self.groups));
        text.push_str(&side_blocks(self.steady, self.server_side));
        for w in &self.out.warnings {
            text.push_str(&format!("note: {w}\n"));
        }
        text
    }

    /// The result document; `records_file` is its `records_file` key, when records were written.
    pub fn result_json(&self, save_detailed: bool, records_file: Option<String>) -> Value {
        let mut json = result_json(self.info, self.metrics, &self.out.records, save_detailed);
        if let Some(r) = records_file {
            json["records_file"] = Value::String(r);
        }
        json["interrupted"] = Value::Bool(self.out.interrupted);
        extend_result(&mut json, &self.out.records, &self.metrics.config, self.groups);
        add_to_result(
            &mut json,
            self.steady,
            self.server_side.server.as_ref(),
            self.server_side.profile.as_ref(),
        );
        if let Some(o) = json.as_object_mut() {
            if let Some(p) = self.probes {
                p.add_to(o);
            }
            o.insert("server_tokenize".into(), self.out.verification.to_json());
        }
        json
    }
}

/// The steady-state and server-metrics blocks and the profiler's warnings, one line each.
pub fn side_blocks(steady: Option<&Steady>, side: &ServerSideOutput) -> String {
    let mut text = String::new();
    if let Some(s) = steady {
        text.push_str(&format!("{}\n", steady_state_block(s)));
    }
    if let Some(s) = &side.server {
        text.push_str(&format!("{}\n", server_metrics_block(s)));
    }
    for w in side.profile.iter().flat_map(|p| &p.warnings) {
        text.push_str(&format!("warning: {w}\n"));
    }
    text
}

/// Adds `steady_state` (always: null when there is none, as vllm-bench; then
/// `steady_state_reason` says why when a window was looked for), and `server_metrics` /
/// `profile` when they ran, to a result document.
pub fn add_to_result(
    json: &mut Value,
    steady: Option<&Steady>,
    server: Option<&ServerMetrics>,
    profile: Option<&ProfileOutcome>,
) {
    let Some(o) = json.as_object_mut() else { return };
    o.insert(
        "steady_state".into(),
        steady.and_then(|s| s.as_ref().ok()).map_or(Value::Null, steady_state_json),
    );
    if let Some(Err(e)) = steady {
        o.insert("steady_state_reason".into(), json!(e.reason));
    }
    if let Some(s) = server {
        o.insert("server_metrics".into(), serde_json::to_value(s).unwrap_or(Value::Null));
        let d = &s.derived;
        // vllm-bench's top-level spec-decode keys, from the same counters.
        if d.spec_decode_draft_tokens.is_some_and(|t| t > 0.0) {
            o.insert("spec_decode_acceptance_rate".into(), json!(d.spec_decode_acceptance_rate));
            o.insert("spec_decode_acceptance_length".into(), json!(d.spec_decode_acceptance_length));
            o.insert("spec_decode_num_drafts".into(), json!(d.spec_decode_num_drafts));
            o.insert("spec_decode_draft_tokens".into(), json!(d.spec_decode_draft_tokens));
            o.insert("spec_decode_accepted_tokens".into(), json!(d.spec_decode_accepted_tokens));
        }
    }
    if let Some(p) = profile {
        o.insert("profile".into(), serde_json::to_value(p).unwrap_or(Value::Null));
    }
}

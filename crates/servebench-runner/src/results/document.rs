//! A run's result document and console text, from its assembled results: vLLM's block and keys
//! (`servebench_report`), then what servebench adds (groups, steady state, server metrics,
//! profile, probes, the server's tokenizer check), each section rendered by the report.

use super::assemble::RunResults;
use super::steady::Steady;
use crate::observe::server_side::ServerSideOutput;
use servebench_report::sections::groups::{console_groups, result_keys};
use servebench_report::sections::server::{self, ServerSection};
use servebench_report::sections::steady_state::steady_state_block;
use servebench_report::written::RunDocument;
use servebench_report::{console_block, result_object};

impl RunResults {
    /// The console text of the run: vLLM's block, probes, groups, steady state, server side,
    /// then the run's notes.
    pub fn console_text(&self) -> String {
        let mut text = format!("{}\n", console_block(&self.info, &self.metrics));
        if let Some(p) = &self.probes {
            text.push_str(&p.console_block());
        }
        // Per-turn, per-stage and trace-replay blocks (docs/workloads.md).
        text.push_str(&console_groups(&self.out.records, &self.metrics.config, &self.groups));
        text.push_str(&side_blocks(self.steady.as_ref(), &self.server_side));
        for w in &self.out.warnings {
            text.push_str(&format!("{w}\n"));
        }
        text
    }

    /// The result document; `records_file` is its `records_file` key, when records were written.
    pub fn document(&self, save_detailed: bool, records_file: Option<String>) -> RunDocument {
        let records = &self.out.records;
        let result = result_object(&self.info, &self.metrics, records, save_detailed);
        let side = &self.server_side;
        RunDocument {
            result,
            records_file,
            interrupted: self.out.interrupted,
            groups: result_keys(records, &self.metrics.config, &self.groups),
            steady_state: self.steady.as_ref().and_then(|s| s.as_ref().ok()).cloned(),
            steady_state_reason: self
                .steady
                .as_ref()
                .and_then(|s| s.as_ref().err())
                .map(|e| e.reason.clone()),
            server: ServerSection::new(side.server.as_ref(), side.profile.as_ref()),
            probes: self.probes.clone(),
            server_tokenize: Some(self.out.verification.document()),
        }
    }
}

/// The steady-state and server-metrics blocks and the profiler's warnings, one line each.
pub fn side_blocks(steady: Option<&Steady>, side: &ServerSideOutput) -> String {
    let mut text = String::new();
    if let Some(s) = steady {
        text.push_str(&format!("{}\n", steady_state_block(s)));
    }
    if let Some(s) = &side.server {
        text.push_str(&format!("{}\n", server::console_block(s)));
    }
    for w in side.profile.iter().flat_map(|p| &p.warnings) {
        text.push_str(&format!("warning: {w}\n"));
    }
    text
}

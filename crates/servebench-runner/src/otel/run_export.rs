//! The export of one finished run or experiment point: its scope (labels of the run, shard and
//! point) from the assembled results, and the line that tells the user how it went.

use super::config::{operation_name, server_of, ExportScope};
use crate::config::{OutputConfig, RunConfig};
use crate::results::RunResults;

/// How an export went: a line for stdout, or a coded warning (SB165) for stderr.
pub type ExportLine = Result<String, String>;

/// The labels every span and metric point of this run carries: `servebench.label`, the shard
/// (`servebench.shard.index`, `servebench.shard.count`), the experiment point and the run's
/// start (RFC 3339, to group a run's spans).
pub fn run_labels(
    output: &OutputConfig,
    run: &RunConfig,
    results: &RunResults,
    point: Option<&str>,
) -> Vec<(String, String)> {
    let mut labels = Vec::new();
    if let Some(l) = &output.label {
        labels.push(("servebench.label".to_owned(), l.clone()));
    }
    if let Some(s) = &run.shard {
        labels.push(("servebench.shard.index".to_owned(), s.spec.index.to_string()));
        labels.push(("servebench.shard.count".to_owned(), s.spec.count.to_string()));
    }
    if let Some(p) = point {
        labels.push(("servebench.experiment.point".to_owned(), p.to_owned()));
    }
    let started = results.info.origin_wall.format(&time::format_description::well_known::Rfc3339);
    if let Ok(t) = started {
        labels.push(("servebench.run.started".to_owned(), t));
    }
    labels
}

/// The scope of one run's export.
pub fn scope_of<'a>(
    output: &OutputConfig,
    run: &RunConfig,
    results: &'a RunResults,
    point: Option<&str>,
) -> ExportScope<'a> {
    ExportScope {
        records: super::config::ExportRecords::Compact(&results.out.records),
        wall_anchor_unix_us: results.out.clock.wall_anchor_unix_us(),
        model: results.out.model.model_id.clone(),
        provider: output.backend_name.clone(),
        operation: operation_name(run.target.backend),
        server: server_of(&run.base_url),
        labels: run_labels(output, run, results, point),
    }
}

/// Exports the run when `--otlp` asked for it (None otherwise). Call after the result files are
/// written: the export may take up to twice `--otlp-timeout-seconds`.
pub async fn export_results(
    output: &OutputConfig,
    run: &RunConfig,
    results: &RunResults,
    point: Option<&str>,
) -> Option<ExportLine> {
    let cfg = output.otlp.as_ref()?;
    Some(send(cfg, scope_of(output, run, results, point)).await)
}

#[cfg(feature = "otel")]
async fn send(cfg: &super::OtlpConfig, scope: ExportScope<'_>) -> ExportLine {
    use crate::observe::notice::Notice;
    match super::send::export(cfg, &scope).await {
        Ok(r) => Ok(format!(
            "OpenTelemetry: {} spans (one per request) and the run metrics exported to {}",
            r.spans, cfg.endpoint
        )),
        Err(e) => Err(Notice::coded(&e).to_string()),
    }
}

/// Without the `otel` feature `--otlp` is refused at validation (SB166), so this never runs.
#[cfg(not(feature = "otel"))]
async fn send(cfg: &super::OtlpConfig, _scope: ExportScope<'_>) -> ExportLine {
    Err(servebench_core::BenchError::OtlpNotBuilt {
        flag: format!("--otlp ({})", servebench_core::secret::redact_url(&cfg.endpoint)),
    }
    .to_string())
}

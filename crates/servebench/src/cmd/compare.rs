//! `servebench compare A.json B.json [C…]`: every result against the first (the baseline):
//! values, delta, % change, the direction (better/worse), and a significance test where the
//! data allow one (docs/metrics.md, "Comparing runs"):
//!
//! - both inputs are multi-run documents (`--num-runs`): Welch's t-test on the per-run values of
//!   each metric;
//! - both inputs have per-request data (`<result>.records.jsonl` next to the result, or vLLM's
//!   `--save-detailed` arrays): on the per-request values of the latency metric a statistic
//!   belongs to (TTFT, TPOT, ITL, E2EL), Mann–Whitney U for means and percentiles and the
//!   Brown–Forsythe spread test for `std_*`;
//! - otherwise no test (`-`).
//!
//! The comparison itself is `servebench_report::compare`; inputs are read by
//! `servebench_runner::results::inputs`.

use crate::cli::subcommands::CompareArgs;
use servebench_core::BenchError;
use servebench_report::compare::{compare, table, Comparison, Loaded};
use servebench_runner::results::inputs::load_compare_input;

/// Runs `servebench compare`.
pub fn run(args: &CompareArgs) -> anyhow::Result<u8> {
    if !(args.alpha > 0.0 && args.alpha < 1.0) {
        return Err(BenchError::config("--alpha", "must be in (0, 1)", "pass e.g. --alpha 0.05").into());
    }
    let loaded: Vec<Loaded> = args.inputs.iter().map(|p| load_compare_input(p)).collect::<Result<_, _>>()?;
    for (path, l) in args.inputs.iter().zip(&loaded) {
        if let Some(missing) = &l.missing_records {
            errln!("{}", crate::cmd::report::missing_records_note(path, missing));
        }
        if l.appended_results > 1 {
            errln!("{}", crate::cmd::report::appended_results_note(path, l.appended_results, "compared"));
        }
    }
    let base = &loaded[0];
    let mut all = Vec::new();
    for other in &loaded[1..] {
        let rows = compare(base, other, args.alpha);
        out!("{}", table(base, other, &rows, args.alpha));
        all.push(Comparison { a: &base.name, b: &other.name, alpha: args.alpha, rows });
    }
    if let Some(p) = &args.output_json {
        servebench_report::write_text(p, &serde_json::to_string(&all)?)?;
        outln!("Comparison: {}", p.display());
    }
    Ok(0)
}

//! The `--dry-run` block: the workload a run would send, without sending it.

use crate::run::{ScheduledLoad, WorkloadStats};
use std::fmt::Write;

/// The dry-run block (ends with a newline).
pub fn dry_run_block(model_id: &str, tokenizer_id: &str, workload: &WorkloadStats) -> String {
    let mut t = String::new();
    let _ = writeln!(t, "Dry run: model {model_id}, tokenizer {tokenizer_id}");
    let _ = writeln!(t, "{:<40}{:<10}", "Total prompts:", workload.requests);
    let _ = writeln!(t, "{:<40}{:<10}", "Total input tokens:", workload.total_prompt_tokens);
    let _ =
        writeln!(t, "{:<40}{:<10}", "Total expected output tokens:", workload.total_expected_output_tokens);
    let n = workload.requests.max(1) as f64;
    let _ = writeln!(t, "{:<40}{:<10.2}", "Avg input tokens:", workload.total_prompt_tokens as f64 / n);
    let _ =
        writeln!(t, "{:<40}{:<10.2}", "Avg output tokens:", workload.total_expected_output_tokens as f64 / n);
    let _ = writeln!(
        t,
        "{:<40}{}..{}",
        "Input tokens (min..max):", workload.min_prompt_tokens, workload.max_prompt_tokens
    );
    if workload.filtered_out > 0 {
        let _ = writeln!(t, "{:<40}{:<10}", "Dropped by --max-model-len:", workload.filtered_out);
    }
    match workload.scheduled {
        Some(ScheduledLoad::Arrivals { requests, last_s, conversations }) => {
            let what = if conversations { "conversations" } else { "requests" };
            let _ = writeln!(
                t,
                "{:<40}{requests} {what} (the last at {last_s:.2} s; the figures above are the whole workload)",
                "Scheduled before the end:"
            );
        }
        Some(ScheduledLoad::ClosedLoop { end_s }) => {
            let _ = writeln!(
                t,
                "{:<40}as many as the stages' slots complete by {end_s:.2} s (a closed loop: the count depends on the server)",
                "Scheduled before the end:"
            );
        }
        Some(ScheduledLoad::Gated { requests, end_s }) => {
            let _ = writeln!(
                t,
                "{:<40}up to {requests} requests, each sent as a --max-concurrency slot frees, until {end_s:.2} s",
                "Scheduled before the end:"
            );
        }
        None => {}
    }
    t.push_str(&workload.lengths.render());
    t
}

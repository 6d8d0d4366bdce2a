//! Flag values typed at parse time: clap calls these parsers, so the rest of the binary gets
//! an `f64`, an enum or a mode instead of a `String` to parse again. A bad value is still a
//! coded error: clap carries the `BenchError` as its source, and `commands.rs` prints its one
//! line with the table's exit code.

use clap::ValueEnum;
use serde_json::{Map, Value};
use servebench_client::backend::BackendKind;
use servebench_core::flag_values::{Header, RangeRatio};
use servebench_core::metrics::MetricName;
use servebench_core::schedule::RampStrategy;
use servebench_core::BenchError;
use servebench_runner::config::load_options::{LoraAssignment, Stage};
use servebench_runner::InterruptMode;
use servebench_sim::Personality;

/// `--sim-mode`: the simulator's timing model.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum SimMode {
    /// Exact TTFT and ITL: the ground truth of `calibrate`.
    Fixed,
    /// Continuous batching: queueing, KV capacity, chunked prefill.
    Engine,
}

/// `--backend`: the API dialect, and the name it was given by (results and shard headers keep
/// the user's spelling: `vllm` and `openai` are one dialect).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Backend {
    pub kind: BackendKind,
    pub name: String,
}

/// `--backend NAME`.
pub fn backend(text: &str) -> Result<Backend, BenchError> {
    Ok(Backend { kind: text.parse()?, name: text.to_owned() })
}

/// `--request-rate`: requests per second, or `inf`.
pub fn request_rate(text: &str) -> Result<f64, BenchError> {
    servebench_core::flag_values::parse_request_rate(text)
}

/// `--ramp-up-strategy`: `linear` or `exponential`.
pub fn ramp_strategy(text: &str) -> Result<RampStrategy, BenchError> {
    match text {
        "linear" => Ok(RampStrategy::Linear),
        "exponential" => Ok(RampStrategy::Exponential),
        other => Err(BenchError::config(
            "--ramp-up-strategy",
            format!("unknown strategy '{other}'"),
            "pass --ramp-up-strategy linear|exponential with both --ramp-up-start-rps and --ramp-up-end-rps",
        )),
    }
}

/// `--on-interrupt`: `cancel` or `drain`.
pub fn interrupt_mode(text: &str) -> Result<InterruptMode, BenchError> {
    match text {
        "cancel" => Ok(InterruptMode::Cancel),
        "drain" => Ok(InterruptMode::Drain),
        other => Err(BenchError::config(
            "--on-interrupt",
            format!("unknown mode '{other}'"),
            "use cancel (stop in-flight requests at once) or drain (let them finish)",
        )),
    }
}

/// `--random-range-ratio`: one ratio, or JSON `{"input": r, "output": r}`.
pub fn range_ratio(text: &str) -> Result<RangeRatio, BenchError> {
    servebench_core::flag_values::parse_range_ratio(text)
}

/// One `--header KEY=VALUE` (the value a [`servebench_core::secret::Secret`] from here on).
pub fn header(text: &str) -> Result<Header, BenchError> {
    servebench_core::flag_values::parse_header(text)
}

/// One `--metadata KEY=VALUE`.
pub fn metadata(text: &str) -> Result<(String, String), BenchError> {
    servebench_core::flag_values::parse_metadata(text)
}

/// `--extra-body` (and `--chat-template-kwargs`): a JSON object.
pub fn json_object(text: &str) -> Result<JsonObject, BenchError> {
    servebench_core::flag_values::parse_extra_body(text).map(JsonObject)
}

/// A JSON object given on the command line.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct JsonObject(pub Map<String, Value>);

/// `--metric-percentiles`: comma-separated percentiles.
pub fn percentiles(text: &str) -> Result<Percentiles, BenchError> {
    servebench_core::flag_values::parse_metric_percentiles(text).map(Percentiles)
}

/// Percentiles in (0, 100], as given.
#[derive(Debug, Clone, PartialEq)]
pub struct Percentiles(pub Vec<f64>);

/// `--percentile-metrics`: comma-separated metric names.
pub fn metric_names(text: &str) -> Result<MetricNames, BenchError> {
    servebench_core::flag_values::parse_percentile_metrics(text).map(MetricNames)
}

/// Metric names, as given.
#[derive(Debug, Clone, PartialEq)]
pub struct MetricNames(pub Vec<MetricName>);

/// `--stages`: rate stages `RATE:SECONDS,...` or concurrency stages `c=N:SECONDS,...`.
pub fn stages(text: &str) -> Result<Stages, BenchError> {
    servebench_runner::load::stages::parse_stages(text).map(Stages)
}

/// Load stages, as given.
#[derive(Debug, Clone, PartialEq)]
pub struct Stages(pub Vec<Stage>);

/// `--lora-assignment`: `random` or `round-robin`.
pub fn lora_assignment(text: &str) -> Result<LoraAssignment, BenchError> {
    LoraAssignment::parse(text)
}

/// `--on-duration-end`: whether requests in flight at the end are cancelled (`cancel`) or
/// drained (`drain`).
pub fn cancel_at_end(text: &str) -> Result<CancelAtEnd, BenchError> {
    match text {
        "drain" => Ok(CancelAtEnd(false)),
        "cancel" => Ok(CancelAtEnd(true)),
        other => Err(BenchError::config(
            "--on-duration-end",
            format!("unknown mode '{other}'"),
            "use drain (let requests in flight finish) or cancel",
        )),
    }
}

/// `--on-duration-end cancel` (true) or `drain`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CancelAtEnd(pub bool);

/// `--sim-personality`.
pub fn personality(text: &str) -> Result<Personality, BenchError> {
    Personality::parse(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_parse_to_their_types_and_bad_ones_name_the_flag_and_code() {
        assert_eq!(
            backend("vllm").map(|b| (b.kind, b.name)).ok(),
            Some((BackendKind::Completions, "vllm".into()))
        );
        let e = backend("gpt").unwrap_err().user_line();
        assert!(e.contains("SB101") && e.contains("--backend") && e.contains("unknown backend 'gpt'"), "{e}");
        assert_eq!(request_rate("inf").ok(), Some(f64::INFINITY));
        assert_eq!(request_rate("2.5").ok(), Some(2.5));
        let e = request_rate("fast").unwrap_err().user_line();
        assert!(e.contains("SB101") && e.contains("--request-rate"), "{e}");
        assert_eq!(ramp_strategy("linear").ok(), Some(RampStrategy::Linear));
        assert!(ramp_strategy("cubic").unwrap_err().user_line().contains("--ramp-up-strategy"));
        assert_eq!(interrupt_mode("drain").ok(), Some(InterruptMode::Drain));
        assert!(interrupt_mode("panic").unwrap_err().user_line().contains("SB101"));
    }

    #[test]
    fn list_and_object_flags_are_typed_and_a_bad_value_names_its_flag() {
        assert_eq!(range_ratio("0.5").map(|r| (r.input, r.output)).ok(), Some((0.5, 0.5)));
        assert_eq!(percentiles("50,99").ok(), Some(Percentiles(vec![50.0, 99.0])));
        assert_eq!(metadata("team=infra").ok(), Some(("team".into(), "infra".into())));
        assert_eq!(json_object(r#"{"top_k": 5}"#).map(|o| o.0.len()).ok(), Some(1));
        assert_eq!(stages("5:60,20:60").map(|s| s.0.len()).ok(), Some(2));
        assert_eq!(cancel_at_end("cancel").ok(), Some(CancelAtEnd(true)));
        assert_eq!(lora_assignment("round-robin").ok(), Some(LoraAssignment::RoundRobin));
        assert!(!format!("{:?}", header("Authorization=Bearer sk-xyz").unwrap()).contains("sk-xyz"));
        for (flag, e) in [
            ("--random-range-ratio", range_ratio("2").unwrap_err()),
            ("--metric-percentiles", percentiles("50,abc").unwrap_err()),
            ("--percentile-metrics", metric_names("ttft,nope").unwrap_err()),
            ("--extra-body", json_object("[1]").unwrap_err()),
            ("--stages", stages("fast").unwrap_err()),
            ("--on-duration-end", cancel_at_end("later").unwrap_err()),
            ("--lora-assignment", lora_assignment("sticky").unwrap_err()),
            ("--sim-personality", personality("nginx").unwrap_err()),
            ("--header", header("no-separator").unwrap_err()),
        ] {
            let line = e.user_line();
            assert!(line.starts_with("error[SB") && line.contains(flag), "{flag}: {line}");
        }
    }
}

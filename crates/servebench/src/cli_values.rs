//! Flag values typed at parse time: clap calls these parsers, so the rest of the binary gets
//! an `f64`, an enum or a mode instead of a `String` to parse again. A bad value is still a
//! coded error: clap carries the `BenchError` as its source, and `commands.rs` prints its one
//! line with the table's exit code.

use clap::ValueEnum;
use servebench_client::backend::BackendKind;
use servebench_core::schedule::RampStrategy;
use servebench_core::BenchError;
use servebench_runner::InterruptMode;

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
    servebench_core::config::parse_request_rate(text)
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
}

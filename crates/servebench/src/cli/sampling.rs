//! The sampling flags' values (`--temperature`, `--top-p`, `--min-p` and the penalties): finite
//! numbers, each refused naming its flag.

use servebench_core::BenchError;

/// A sampling parameter (`--temperature`, `--top-p`, …): a finite number. `nan` and `inf` were
/// taken, then left out of the body (JSON has no such number): the server sampled at its own
/// default, neither greedy nor the value asked.
fn sampling_number(flag: &str, text: &str) -> Result<f64, BenchError> {
    match text.trim().parse::<f64>() {
        Ok(v) if v.is_finite() => Ok(v),
        Ok(_) => Err(BenchError::config(
            flag,
            format!("{text} is not a finite number (JSON, and so the request body, cannot hold it)"),
            "pass a finite number such as 0.7",
        )),
        Err(_) => {
            Err(BenchError::config(flag, format!("'{text}' is not a number"), "pass a number such as 0.7"))
        }
    }
}

/// `--temperature`: a finite number (`sampling_number`).
pub fn temperature(text: &str) -> Result<f64, BenchError> {
    sampling_number("--temperature", text)
}

/// `--top-p`: a finite number (`sampling_number`).
pub fn top_p(text: &str) -> Result<f64, BenchError> {
    sampling_number("--top-p", text)
}

/// `--min-p`: a finite number (`sampling_number`).
pub fn min_p(text: &str) -> Result<f64, BenchError> {
    sampling_number("--min-p", text)
}

/// `--frequency-penalty`: a finite number (`sampling_number`).
pub fn frequency_penalty(text: &str) -> Result<f64, BenchError> {
    sampling_number("--frequency-penalty", text)
}

/// `--presence-penalty`: a finite number (`sampling_number`).
pub fn presence_penalty(text: &str) -> Result<f64, BenchError> {
    sampling_number("--presence-penalty", text)
}

/// `--repetition-penalty`: a finite number (`sampling_number`).
pub fn repetition_penalty(text: &str) -> Result<f64, BenchError> {
    sampling_number("--repetition-penalty", text)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Pins sampling numbers JSON cannot hold: `--temperature nan` was taken and left out of the
    /// body, so the server sampled at its own default (neither greedy nor the value asked).
    #[test]
    fn sampling_numbers_are_finite_and_named_by_their_flag() {
        for bad in ["nan", "inf", "-inf"] {
            let e = temperature(bad).unwrap_err();
            assert!(
                e.to_string().contains("--temperature") && e.to_string().contains("not a finite number"),
                "{e}"
            );
        }
        assert_eq!(top_p("0.9").ok(), Some(0.9));
        assert!(repetition_penalty("NaN").is_err());
        assert!(min_p("x").unwrap_err().to_string().contains("--min-p"));
    }
}

//! A run's end-of-run notices: each carries its severity as a value, and its one prefix
//! (`note:`, `warning:`, `warning[SB302]:`) is written once, by `Display`, wherever the notice
//! is shown (run header, end-of-run list, HTML report). The text never carries a prefix itself,
//! so none is doubled (`note: warning[SB302]: …` used to be printed).

use std::fmt;

use servebench_core::{BenchError, ErrorCode};

/// How serious a notice is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Severity {
    /// Information (`note:`).
    Note,
    /// Something that may make the figures mean less (`warning:`).
    Warning,
    /// A coded problem (`warning[SB302]:`), explained by `servebench explain CODE`.
    Coded(ErrorCode),
}

/// One notice: a severity and its text (without a prefix).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Notice {
    pub severity: Severity,
    pub text: String,
    /// Already shown on the console as it happened (under the progress line): the end-of-run
    /// list leaves it out, so the console says it once; reports and results keep it.
    pub said: bool,
}

impl Notice {
    pub fn note(text: impl Into<String>) -> Notice {
        Notice { severity: Severity::Note, text: text.into(), said: false }
    }

    pub fn warning(text: impl Into<String>) -> Notice {
        Notice { severity: Severity::Warning, text: text.into(), said: false }
    }

    /// A coded warning: the error's code and its message.
    pub fn coded(e: &BenchError) -> Notice {
        Notice { severity: Severity::Coded(e.code()), text: e.to_string(), said: false }
    }
}

impl Notice {
    /// This notice, marked as shown on the console already (see [`Notice::said`]).
    pub fn said(self) -> Notice {
        Notice { said: true, ..self }
    }
}

impl fmt::Display for Notice {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.severity {
            Severity::Note => write!(f, "note: {}", self.text),
            Severity::Warning => write!(f, "warning: {}", self.text),
            Severity::Coded(code) => write!(f, "warning[{code}]: {}", self.text),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_severity_has_exactly_one_prefix() {
        assert_eq!(Notice::note("pooling off").to_string(), "note: pooling off");
        assert_eq!(Notice::warning("did not stream").to_string(), "warning: did not stream");
        let e = BenchError::TokenizeUnavailable { detail: "404".into() };
        let w = Notice::coded(&e).to_string();
        assert!(w.starts_with("warning[SB302]: tokenize endpoint unavailable (404)"), "{w}");
    }
}

//! One error taxonomy: every user-facing error has a stable code, a one-line message that names
//! the fix, an exit code, and an explanation printed by `servebench explain CODE` (also in
//! `docs/errors.md`).
//!
//! Everything about a code is declared once, in the table of `codes.rs` (the `error_table!`
//! macro of `macros.rs` turns it into [`ErrorCode`], [`BenchError`] and their mappings); the
//! explanations are the Markdown files `explain/SBxxx.md`, included at build time.

use std::fmt;

#[macro_use]
mod macros;
mod codes;

pub use codes::{BenchError, ErrorCode};

/// The underlying cause kept by an error variant (`#[source]`): an I/O, serde or tokenizer
/// error, or a plain message where there is no error value.
pub type Cause = Box<dyn std::error::Error + Send + Sync + 'static>;

impl ErrorCode {
    /// Looks a code up by its text (case-insensitive; `sb101`, `SB101` and `101` all work).
    pub fn parse(text: &str) -> Option<ErrorCode> {
        let t = text.trim().to_ascii_uppercase();
        let t = if t.starts_with("SB") { t } else { format!("SB{t}") };
        ErrorCode::ALL.into_iter().find(|c| c.as_str() == t)
    }
}

/// The exit-code table printed by `servebench explain` (the README shows the same); the codes
/// that exit 2 and 3 are read from the error table.
pub fn exit_codes_text() -> String {
    let with_exit = |exit: u8| code_list(ErrorCode::ALL.into_iter().filter(|c| c.exit_code() == exit));
    format!(
        "Exit codes:
  0    the run finished and at least one request succeeded
  1    the run failed: a coded error, or no request succeeded (SB602; results written)
  2    bad flags or configuration ({}); nothing sent
  3    finished, but more requests failed than --max-failure-rate allows ({}; results written)
  4    stopped early: --detect-saturation or --max-error-rate/--max-errors fired ({}; results written)
  130  interrupted by Ctrl-C/SIGTERM (results written for what finished)",
        with_exit(2),
        with_exit(3),
        with_exit(4)
    )
}

/// `SB101, SB102, SB110-SB113`: codes in order, runs of three or more consecutive numbers as
/// ranges.
fn code_list(codes: impl Iterator<Item = ErrorCode>) -> String {
    let mut nums: Vec<u32> = codes.filter_map(|c| c.as_str()[2..].parse().ok()).collect();
    nums.sort_unstable();
    let mut parts: Vec<String> = Vec::new();
    let mut i = 0;
    while i < nums.len() {
        let mut j = i;
        while j + 1 < nums.len() && nums[j + 1] == nums[j] + 1 {
            j += 1;
        }
        if j >= i + 2 {
            parts.push(format!("SB{}-SB{}", nums[i], nums[j]));
        } else {
            parts.extend(nums[i..=j].iter().map(|n| format!("SB{n}")));
        }
        i = j + 1;
    }
    parts.join(", ")
}

impl fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl BenchError {
    /// Shorthand for a configuration error.
    pub fn config(flag: impl Into<String>, problem: impl Into<String>, fix: impl Into<String>) -> Self {
        BenchError::Config { flag: flag.into(), problem: problem.into(), fix: fix.into() }
    }

    /// Shorthand for a flag that does not apply to this run (SB113).
    pub fn not_applicable(
        flag: impl Into<String>,
        applies_to: impl Into<String>,
        why: impl Into<String>,
        fix: impl Into<String>,
    ) -> Self {
        BenchError::FlagNotApplicable {
            flag: flag.into(),
            applies_to: applies_to.into(),
            why: why.into(),
            fix: fix.into(),
        }
    }

    /// Shorthand for an I/O error on `path`; `err` (an `io::Error`, a serde error, or a plain
    /// message) is kept as the error's source.
    pub fn io(path: impl fmt::Display, err: impl Into<Cause>) -> Self {
        BenchError::Io { path: path.to_string(), source: err.into() }
    }

    /// A response or request body that is not what the API expects (SB401); `err` (a serde
    /// error) is the detail and the source.
    pub fn protocol(context: impl Into<String>, err: impl std::error::Error + Send + Sync + 'static) -> Self {
        BenchError::Protocol { context: context.into(), detail: err.to_string(), source: Some(Box::new(err)) }
    }

    /// An HTTP/transport failure outside a benchmark request (SB304), without an underlying
    /// error value.
    pub fn transport(context: impl Into<String>, detail: impl Into<String>) -> Self {
        BenchError::Transport { context: context.into(), detail: detail.into(), source: None }
    }

    /// [`BenchError::transport`] for an underlying error, which is the detail and the source.
    pub fn transport_from(
        context: impl Into<String>,
        err: impl std::error::Error + Send + Sync + 'static,
    ) -> Self {
        BenchError::Transport {
            context: context.into(),
            detail: err.to_string(),
            source: Some(Box::new(err)),
        }
    }

    /// A workload that cannot be built (SB203), without an underlying error value.
    pub fn dataset(detail: impl Into<String>) -> Self {
        BenchError::Dataset { detail: detail.into(), source: None }
    }

    /// [`BenchError::dataset`] caused by `err` (a serde, image or tokenizer error): the detail
    /// is `"{context}: {err}"`, and `err` is kept as the source.
    pub fn dataset_from(
        context: impl fmt::Display,
        err: impl std::error::Error + Send + Sync + 'static,
    ) -> Self {
        BenchError::Dataset { detail: format!("{context}: {err}"), source: Some(Box::new(err)) }
    }

    /// A dataset that cannot be downloaded (SB205); `source` is the download error, if any.
    pub fn dataset_download(
        name: impl Into<String>,
        detail: impl Into<String>,
        source: Option<Cause>,
    ) -> Self {
        BenchError::DatasetDownload { name: name.into(), detail: detail.into(), source }
    }

    /// A tokenizer that cannot be loaded (SB201), without an underlying error value.
    pub fn tokenizer_load(name: impl Into<String>, detail: impl Into<String>) -> Self {
        BenchError::TokenizerLoad { name: name.into(), detail: detail.into(), source: None }
    }

    /// The process exit code of a run that ends with this error.
    pub fn exit_code(&self) -> u8 {
        self.code().exit_code()
    }

    /// The one-line form shown to users: `error[SB101]: ...`.
    pub fn user_line(&self) -> String {
        format!("error[{}]: {} (see `servebench explain {}`)", self.code(), self, self.code())
    }
}

/// Result alias for the library.
pub type Result<T, E = BenchError> = std::result::Result<T, E>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_are_unique_and_parse_back() {
        let mut seen = std::collections::HashSet::new();
        for c in ErrorCode::ALL {
            assert!(seen.insert(c.as_str()), "duplicate code {c}");
            assert_eq!(ErrorCode::parse(c.as_str()), Some(c));
            assert_eq!(ErrorCode::parse(&c.as_str().to_lowercase()), Some(c));
            assert!(c.explain().contains("Fix"), "{c} explanation names no fix");
        }
        assert_eq!(ErrorCode::parse("101"), Some(ErrorCode::ConfigInvalid));
        assert_eq!(ErrorCode::parse("SB999"), None);
    }

    #[test]
    fn exit_codes_come_from_the_table() {
        assert_eq!(ErrorCode::ConfigInvalid.exit_code(), 2);
        assert_eq!(ErrorCode::FlagNotApplicable.exit_code(), 2);
        assert_eq!(ErrorCode::HfParserMissing.exit_code(), 1);
        assert_eq!(ErrorCode::FailureRate.exit_code(), 3);
        assert_eq!(ErrorCode::NoSuccess.exit_code(), 1);
        let text = exit_codes_text();
        assert!(
            text.contains("(SB100-SB102, SB110-SB113, SB120-SB124, SB130-SB136, SB140-SB142, SB150, SB151, SB155, SB156, SB166, SB167, SB175, SB210, SB211, SB218, SB219); nothing sent"),
            "{text}"
        );
        assert!(text.contains("allows (SB601; results written)"), "{text}");
        assert!(text.contains("fired (SB143, SB144; results written)"), "{text}");
        assert_eq!(ErrorCode::StoppedSaturated.exit_code(), 4);
    }

    /// The README's exit-code table is hand-written: every code that exits 2, 3 or 4 is named
    /// in its row, and the exit-2 row lists exactly those codes (as `explain` prints them).
    #[test]
    fn readme_exit_code_table_names_the_codes_of_each_exit_code() {
        let readme =
            std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../README.md")).unwrap();
        let row = |exit: u8| {
            let start = format!("  | {exit} | ");
            readme.lines().find(|l| l.starts_with(&start)).map(str::to_owned).unwrap_or_default()
        };
        for exit in [2u8, 3, 4] {
            let line = row(exit);
            for code in ErrorCode::ALL.into_iter().filter(|c| c.exit_code() == exit) {
                let n: u32 = code.as_str()[2..].parse().unwrap();
                // Named alone or inside a range `SBa–SBb`.
                let named = line.contains(code.as_str())
                    || line
                        .split("SB")
                        .filter_map(|p| p.get(..3)?.parse::<u32>().ok())
                        .collect::<Vec<_>>()
                        .windows(2)
                        .any(|w| {
                            line.contains(&format!("SB{}–SB{}", w[0], w[1])) && (w[0]..=w[1]).contains(&n)
                        });
                assert!(named, "README's exit-code row {exit} does not name {}: {line}", code.as_str());
            }
        }
        let listed = code_list(ErrorCode::ALL.into_iter().filter(|c| c.exit_code() == 2)).replace('-', "–");
        assert!(row(2).contains(&format!("({listed})")), "README row 2 should list ({listed}): {}", row(2));
    }

    #[test]
    fn io_errors_keep_their_cause() {
        use std::error::Error as _;
        let cause = std::io::Error::new(std::io::ErrorKind::NotFound, "gone");
        let e = BenchError::io("/x/y.json", cause);
        assert_eq!(e.to_string(), "/x/y.json: gone");
        let source = e.source().and_then(|s| s.downcast_ref::<std::io::Error>());
        assert_eq!(source.map(std::io::Error::kind), Some(std::io::ErrorKind::NotFound));
        assert_eq!(BenchError::io("p", "cut short").to_string(), "p: cut short");
    }

    #[test]
    fn user_line_names_code_and_fix() {
        let e = BenchError::config(
            "--request-rate",
            "must be > 0 or inf (got -1)",
            "pass a positive rate or inf",
        );
        let line = e.user_line();
        assert!(line.starts_with("error[SB101]: invalid --request-rate"));
        assert!(line.contains("fix: pass a positive rate"));
        assert!(!line.contains('\n'));
    }
}

/// The whole error catalogue as Markdown (the text of `docs/errors.md`).
pub fn errors_markdown() -> String {
    let mut out = String::from(
        "# Error codes\n\nEvery user-facing error of servebench has a stable code. \
         `servebench explain CODE` prints the entry; this file is generated from the same text \
         (a test keeps them identical).\n\nRequest-level failures (a request that got HTTP 503, a \
         stream cut mid-way) are not errors of the run: they become failed records with an error \
         kind (`connect`, `transport`, `http_status`, `protocol`, `event_too_large`, \
         `server_error`, `no_tokens`, `incomplete`, `timeout`, `stall`, `runaway_stream`), counted in the result under \
         `error_kinds`.\n",
    );
    for c in ErrorCode::ALL {
        out.push_str(&format!("\n## {} — {}\n\n```text\n{}\n```\n", c.as_str(), c.title(), c.explain()));
    }
    out
}

#[cfg(test)]
mod docs_tests {
    /// docs/errors.md is generated from `ErrorCode::explain`. It is the one generated file that
    /// is not an insta snapshot (a published Markdown page cannot carry a `.snap` header), but
    /// it is rewritten by the same switch as the snapshots: `INSTA_UPDATE=always` (`UPDATE_DOCS=1`
    /// is kept as an alias).
    #[test]
    fn docs_errors_md_matches_explain_texts() {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/errors.md");
        let expected = super::errors_markdown();
        let update = std::env::var("INSTA_UPDATE").is_ok_and(|v| v == "always")
            || std::env::var_os("UPDATE_DOCS").is_some();
        if update {
            std::fs::write(path, &expected).unwrap();
        }
        let actual = std::fs::read_to_string(path).unwrap_or_default();
        assert!(
            actual == expected,
            "docs/errors.md is stale: run INSTA_UPDATE=always cargo test -p servebench-core --lib"
        );
    }
}

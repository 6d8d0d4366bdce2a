//! What is wrong with one input (a cell, an image, an audio clip), in one line, with the error
//! that caused it when there is one. Helpers return it before the caller knows the file and
//! line; the caller turns it into a coded error ([`DataFile::error_problem`] for SB204,
//! [`Problem::into_dataset_error`] for SB203) that keeps the cause as its `source()`.
//!
//! [`DataFile::error_problem`]: super::file::DataFile::error_problem

use std::fmt;

use servebench_core::error::Cause;
use servebench_core::BenchError;

/// A one-line problem and its cause.
#[derive(Debug)]
pub struct Problem {
    pub text: String,
    pub cause: Option<Cause>,
}

impl Problem {
    /// A problem with no underlying error.
    pub fn new(text: impl Into<String>) -> Self {
        Problem { text: text.into(), cause: None }
    }

    /// `"{context}: {err}"`, with `err` kept as the cause.
    pub fn caused(context: impl fmt::Display, err: impl std::error::Error + Send + Sync + 'static) -> Self {
        Problem { text: format!("{context}: {err}"), cause: Some(Box::new(err)) }
    }

    /// The same cause under a longer text: `"{context}: {self}"`.
    pub fn within(self, context: impl fmt::Display) -> Self {
        Problem { text: format!("{context}: {}", self.text), cause: self.cause }
    }

    /// SB203 (the workload could not be built), the cause kept as its source.
    pub fn into_dataset_error(self) -> BenchError {
        BenchError::Dataset { detail: self.text, source: self.cause }
    }
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

impl From<String> for Problem {
    fn from(text: String) -> Self {
        Problem::new(text)
    }
}

impl From<&str> for Problem {
    fn from(text: &str) -> Self {
        Problem::new(text)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::error::Error as _;

    #[test]
    fn a_caused_problem_keeps_its_text_and_its_source() {
        let io = std::io::Error::new(std::io::ErrorKind::NotFound, "No such file");
        let p = Problem::caused("image 'a.png' cannot be read", io).within("row 3");
        assert_eq!(p.to_string(), "row 3: image 'a.png' cannot be read: No such file");
        let e = p.into_dataset_error();
        assert_eq!(e.to_string(), "row 3: image 'a.png' cannot be read: No such file");
        let source = e.source().and_then(|s| s.downcast_ref::<std::io::Error>());
        assert_eq!(source.map(std::io::Error::kind), Some(std::io::ErrorKind::NotFound));
        assert!(Problem::from("plain").into_dataset_error().source().is_none());
    }
}

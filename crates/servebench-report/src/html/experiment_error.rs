//! Why an experiment document cannot be drawn: shared by the sweep and multi-run pages (a leaf,
//! so neither page imports the other for it).

/// Why an experiment document cannot be drawn.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ExperimentError {
    #[error("unknown experiment kind {0:?} (known: sweep, find_max_rate, slo_search, multi_run)")]
    UnknownKind(String),
    #[error("the {0} document has no points with results")]
    NoPoints(String),
}

//! The documents servebench writes, typed: one run's result ([`RunDocument`], `run`: vLLM's keys
//! and ours, then each section's), the experiment documents ([`WrittenExperiment`],
//! `experiment`: sweep, multi-run, search; keys in the written order) and a merged run's
//! ([`MergedDocument`], `merged`). They are built whole and never patched or read back by key
//! string; `crate::document` reads them (and vLLM's) back, leniently.

mod experiment;
mod merged;
mod run;

pub use experiment::{
    BestPoint, ExperimentHeader, MultiRunDocument, PointDocument, SearchCriterion, SearchDocument,
    SearchStep, SloDocument, StoppedEarly, SweepDocument, WrittenExperiment,
};
pub use merged::MergedDocument;
pub use run::{RunDocument, ServerTokenizeDoc};

//! Early-stop detectors (docs/metrics.md, "Early stop"): pure functions of what a run has
//! observed so far — the in-flight count over time ([`saturation`]) and the outcomes of the
//! last finished requests ([`error_rate`]). They decide *whether* to stop and give the
//! evidence; raising the stop is the runner's business. [`report`] is what the result says.

pub mod error_rate;
pub mod report;
pub mod saturation;

pub use error_rate::{ErrorRateConfig, ErrorRateEvidence, ErrorRateStop};
pub use report::{EarlyStopReason, EarlyStopReport};
pub use saturation::{Sample, SaturationConfig, SaturationEvidence, SaturationStop};

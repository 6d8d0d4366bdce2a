//! The live fault counters behind `SimHandle::fault_counts` and `servebench_sim_faults_total`:
//! a leaf shared by the injector, the faulted streams and the faulted bodies.

use std::sync::Arc;

use super::{FaultCounts, FaultKind, KINDS};
use crate::metrics::{Counter, MetricsRegistry};

/// Live counters, shared by the handlers and the streams; registered on the `/metrics`
/// registry as `servebench_sim_faults_total{kind="..."}` when faults are configured.
#[derive(Debug)]
pub(crate) struct FaultCounters {
    counts: Vec<Arc<Counter>>,
}

impl FaultCounters {
    pub(crate) fn new(registry: Option<&MetricsRegistry>) -> Self {
        let counts = FaultKind::ALL
            .into_iter()
            .map(|k| match registry {
                Some(r) => r.counter(
                    "servebench_sim_faults_total",
                    "Faults injected by the simulator, by kind.",
                    &[("kind", k.as_str())],
                ),
                None => Arc::default(),
            })
            .collect();
        FaultCounters { counts }
    }

    pub(crate) fn add(&self, kind: FaultKind) {
        if let Some(c) = self.counts.get(kind.index()) {
            c.inc();
        }
    }

    pub(crate) fn snapshot(&self) -> FaultCounts {
        let mut counts = [0u64; KINDS];
        for (c, a) in counts.iter_mut().zip(&self.counts) {
            *c = a.get();
        }
        FaultCounts { counts }
    }
}

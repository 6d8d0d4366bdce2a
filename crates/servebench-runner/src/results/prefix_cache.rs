//! The result's `prefix_cache` block (a run with a controlled hit rate): target, built-in and
//! observed hit rates, from the records and the server's `/metrics` counters over the measured
//! phase (the definitions: `servebench_core::metrics::prefix_cache`, docs/metrics.md).

use servebench_core::metrics::prefix_cache::{PrefixCacheInputs, PrefixCacheReport};

use super::assemble::RunResults;

impl RunResults {
    /// The `prefix_cache` block; `None` without a controlled hit rate.
    pub fn prefix_cache_report(&self) -> Option<PrefixCacheReport> {
        let pc = self.out.prefix_cache.as_ref()?;
        let cfg = &pc.layout.config;
        let server_hit_rate = self.server_side.server.as_ref().and_then(|s| s.derived.prefix_cache_hit_rate);
        let inputs = PrefixCacheInputs {
            mode: cfg.mode.name(),
            target: pc.layout.target(),
            block_size: cfg.block_size,
            cached_prefix: &pc.layout.cached_prefix,
            warmup_requests: pc.priming.len() as u64,
            warmup_completed: pc.primed(),
            server_hit_rate,
            reachable: pc.layout.turns.map(|t| (t.history_hit_rate, t.max_hit_rate)),
        };
        Some(PrefixCacheReport::of(&self.out.records, &inputs))
    }
}

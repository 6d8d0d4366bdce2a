//! Priming the server's prefix cache before a run with a controlled hit rate: the longest shared
//! prefix is sent once, alone, and its record is kept apart from the measured phase's (in no
//! metric; counted in the result's `prefix_cache` block).

use std::sync::Arc;

use servebench_client::request::execute;
use servebench_core::{Outcome, Prompt, RequestRecord, RequestSpec, RunClock};
use servebench_data::prefix_cache::PrefixCacheLayout;

use super::PreparedRun;
use crate::observe::observer::RunObserver;

/// A run's controlled prefix cache: its layout and how priming went.
#[derive(Debug, Clone)]
pub struct PrefixCacheRun {
    pub layout: Arc<PrefixCacheLayout>,
    /// The priming requests' records (warm-up: in no metric of the run).
    pub priming: Vec<RequestRecord>,
}

impl PrefixCacheRun {
    /// Priming requests that completed.
    pub fn primed(&self) -> u64 {
        self.priming.iter().filter(|r| r.outcome == Outcome::Completed).count() as u64
    }
}

/// Sends the priming prompts (one per shared-prefix group; nothing when no request shares a
/// prefix), one after the other, and waits for each.
pub async fn prime(prepared: &PreparedRun, observer: &dyn RunObserver) -> Option<PrefixCacheRun> {
    let layout = prepared.load.prefix_cache.clone()?;
    let mut priming = Vec::new();
    if let Some(longest) = layout.warmup.iter().map(|w| w.len()).max() {
        observer.message(&format!(
            "Priming the prefix cache with {} shared prefix(es) of up to {longest} tokens",
            layout.warmup.len()
        ));
    }
    let clock = RunClock::start();
    for (i, warmup) in layout.warmup.iter().enumerate() {
        let spec = RequestSpec::new(i as u64, Prompt::TokenIds(warmup.clone()), warmup.len() as u32, 1);
        let rec = RequestRecord::scheduled(
            i as u64,
            format!("servebench-prefix-prime-{i}"),
            0,
            spec.prompt_tokens,
            1,
        );
        priming
            .push(execute(&prepared.client, &prepared.target, &spec, rec, &clock, &prepared.exec_opts).await);
    }
    Some(PrefixCacheRun { layout, priming })
}

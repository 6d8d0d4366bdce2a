//! What the group sections of a result (stages, trace replay, multi-turn) need to know about
//! the run's load shape.

use crate::config::{DatasetSpec, RunConfig};
use crate::load::shard::share_of_rate;
use servebench_report::sections::groups::{GroupInfo, StageInfo};

/// What the group reports need to know about the run (stages, trace replay, multi-turn).
pub fn group_info(run: &RunConfig) -> GroupInfo {
    let load = &run.load;
    // A shard describes its own share of each stage's rate, as of `request_rate` (the merged
    // result, from the shard header, the whole run's).
    let stages = run
        .planned_stages()
        .into_iter()
        .map(|s| StageInfo {
            rate: share_of_rate(run, s.rate),
            seconds: s.seconds,
            concurrency: s.concurrency,
        })
        .collect();
    let mt = load.multi_turn.as_ref();
    GroupInfo {
        stages,
        trace: matches!(&run.dataset, DatasetSpec::TimedTrace(t) if t.self_timed),
        turns_per_conversation: mt.map(|m| if m.max_turns > 0 { m.max_turns } else { m.num_turns }),
        multi_turn_concurrency: mt.and_then(|m| m.concurrency.or(run.max_concurrency)).map(|c| c as u64),
        inter_turn_delay_ms: mt.map(|m| m.delay.as_secs_f64() * 1000.0),
    }
}

//! What the group sections of a result (stages, trace replay, multi-turn) need to know about
//! the run's load shape.

use crate::config::{DatasetSpec, RunConfig};
use servebench_report::sections::groups::{GroupInfo, StageInfo};

/// What the group reports need to know about the run (stages, trace replay, multi-turn).
pub fn group_info(run: &RunConfig) -> GroupInfo {
    let load = &run.load;
    let stages: Vec<StageInfo> = if !load.stages.is_empty() {
        // A --duration shorter than the stages cuts the last ones short (or off).
        let mut left = load.duration.map_or(f64::INFINITY, |d| d.as_secs_f64());
        let mut v = Vec::new();
        for s in &load.stages {
            if left <= 0.0 {
                break;
            }
            let concurrency = s.concurrency.map(|c| c as u64);
            v.push(StageInfo { rate: s.rate, seconds: s.seconds.min(left), concurrency });
            left -= s.seconds;
        }
        v
    } else if let (Some(d), None, false, true) = (
        load.duration,
        &load.multi_turn,
        matches!(run.dataset, DatasetSpec::TimedTrace(_)),
        run.rate.request_rate.is_finite(),
    ) {
        vec![StageInfo { rate: run.rate.request_rate, seconds: d.as_secs_f64(), concurrency: None }]
    } else {
        Vec::new()
    };
    let mt = load.multi_turn.as_ref();
    GroupInfo {
        stages,
        trace: matches!(&run.dataset, DatasetSpec::TimedTrace(t) if t.self_timed),
        turns_per_conversation: mt.map(|m| if m.max_turns > 0 { m.max_turns } else { m.num_turns }),
        multi_turn_concurrency: mt.and_then(|m| m.concurrency.or(run.max_concurrency)).map(|c| c as u64),
        inter_turn_delay_ms: mt.map(|m| m.delay.as_secs_f64() * 1000.0),
    }
}

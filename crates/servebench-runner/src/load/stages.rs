//! Duration-bound and multi-stage load (`--duration`, `--stages`).
//!
//! A stage is a constant request rate held for a number of seconds; stages run back to back.
//! A concurrency stage (`c=N:SECONDS`) is instead a closed loop: `N` requests in flight, each
//! replaced as it ends (`dispatch::dispatch_closed_loop`), cycling through the prompts.
//! The schedule is a pure function of `(stages, burstiness, seed)`: inside stage `k` the gaps
//! are drawn exactly like `ArrivalSchedule` draws them (Gamma with shape `burstiness`, mean
//! `1/rate`, no normalization) from a stream seeded by `(seed, k)`, and arrivals stop at the
//! stage's end. The number of requests is what the schedule holds; request `i` sends prompt
//! `i mod W` of the `W`-prompt workload. `--duration T` alone is one stage at `--request-rate`.

use crate::config::load_options::Stage;
use crate::config::PlannedStage;
use servebench_core::flag_values::MAX_FLAG_SECONDS;
use servebench_core::schedule::{ArrivalSchedule, RampStrategy, RampUp, RateConfig};
use servebench_core::{BenchError, Result};

/// Whether the stages are concurrency stages (`parse_stages` never mixes the two kinds).
pub fn is_closed_loop(stages: &[Stage]) -> bool {
    stages.first().is_some_and(|s| s.concurrency.is_some())
}

/// Parses `RATE:SECONDS[,RATE:SECONDS...]` (e.g. `5:60,20:60`) or the concurrency stages
/// `c=N:SECONDS[,c=N:SECONDS...]` (e.g. `c=8:60,c=32:60`); one kind per list.
pub fn parse_stages(text: &str) -> Result<Vec<Stage>> {
    let fix = "pass RATE:SECONDS pairs (e.g. --stages 5:60,20:60) or concurrency stages c=N:SECONDS \
               (e.g. --stages c=8:60,c=32:60), separated by commas";
    let mut out = Vec::new();
    for item in text.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        let (r, s) = item.split_once(':').ok_or_else(|| {
            BenchError::config("--stages", format!("'{item}' is not RATE:SECONDS or c=N:SECONDS"), fix)
        })?;
        let seconds: f64 = s.trim().parse().map_err(|_| {
            BenchError::config("--stages", format!("duration '{s}' is not a number of seconds"), fix)
        })?;
        if !seconds.is_finite() || seconds <= 0.0 {
            return Err(BenchError::config("--stages", format!("duration {seconds} must be > 0"), fix));
        }
        if seconds > MAX_FLAG_SECONDS {
            return Err(BenchError::config(
                "--stages",
                format!(
                    "duration {seconds} s is more than the longest a stage may last (1e9 s, about 31 years)"
                ),
                "give each stage at most 1e9 seconds",
            ));
        }
        let stage = match r.trim().strip_prefix("c=") {
            Some(c) => {
                let c: usize = c.trim().parse().ok().filter(|&c| c >= 1).ok_or_else(|| {
                    BenchError::config(
                        "--stages",
                        format!("concurrency '{}' is not a whole number of at least 1", c.trim()),
                        fix,
                    )
                })?;
                Stage::at_concurrency(c, seconds)
            }
            None => {
                let rate: f64 = r.trim().parse().map_err(|_| {
                    BenchError::config("--stages", format!("rate '{r}' is not a number"), fix)
                })?;
                if !rate.is_finite() || rate <= 0.0 {
                    return Err(BenchError::config(
                        "--stages",
                        format!("rate {rate} must be a positive, finite number of requests per second"),
                        fix,
                    ));
                }
                Stage::at_rate(rate, seconds)
            }
        };
        if out.first().is_some_and(|f: &Stage| f.concurrency.is_some() != stage.concurrency.is_some()) {
            return Err(BenchError::config(
                "--stages",
                format!("'{item}' mixes rate stages and concurrency stages (c=N)"),
                "give stages of one kind: all RATE:SECONDS, or all c=N:SECONDS",
            ));
        }
        out.push(stage);
    }
    if out.is_empty() {
        return Err(BenchError::config("--stages", "no stage given", fix));
    }
    Ok(out)
}

/// `(concurrency, end µs)` of each concurrency stage, back to back from the origin, cut at
/// `until_us` (`--duration`); stages starting at or after it are dropped.
pub fn closed_loop_bounds(stages: &[Stage], until_us: Option<u64>) -> Vec<(usize, u64)> {
    let mut out = Vec::new();
    let mut end = 0u64;
    for st in stages {
        let Some(c) = st.concurrency else { continue };
        let start = end;
        end = end.saturating_add(secs_to_us(st.seconds));
        let cut = until_us.map_or(end, |u| end.min(u));
        if cut > start {
            out.push((c, cut));
        }
    }
    out
}

/// The arrivals of a staged run.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct StagedSchedule {
    /// Intended send offsets, µs from the run origin, non-decreasing.
    pub offsets_us: Vec<u64>,
    /// The stage of each request.
    pub stage: Vec<u32>,
    /// `[start, end)` of each stage, µs from the origin.
    pub bounds_us: Vec<(u64, u64)>,
}

fn secs_to_us(s: f64) -> u64 {
    (s * 1e6).round().max(0.0) as u64
}

/// Seed of stage `k`'s stream.
fn stage_seed(seed: u64, k: usize) -> u64 {
    seed ^ (k as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15)
}

/// Arrivals of one constant-rate stage lasting `until_us`, from its own start (pure).
fn stage_offsets(rate: f64, burstiness: f64, until_us: u64, seed: u64) -> Vec<u64> {
    // A ramp from `rate` to `rate` draws the same gaps as a constant rate but is never
    // normalized, so the offsets do not depend on how many are drawn.
    let cfg = RateConfig {
        request_rate: f64::INFINITY,
        burstiness,
        ramp_up: Some(RampUp { strategy: RampStrategy::Linear, start_rps: rate, end_rps: rate }),
    };
    // Capped where the loop gives up anyway: a rate of 1e308 asked for more than usize::MAX
    // (the configuration refuses such a schedule, `MAX_PLANNED_REQUESTS`).
    let mut n = ((rate * until_us as f64 / 1e6) * 1.25).min(STAGE_DRAW_CAP as f64) as usize + 16;
    loop {
        let s = ArrivalSchedule::generate(n, &cfg, seed);
        if s.offsets_us.last().is_some_and(|&last| last >= until_us) || n >= STAGE_DRAW_CAP {
            return s.offsets_us.into_iter().take_while(|&o| o < until_us).collect();
        }
        n *= 2;
    }
}

/// Arrivals a stage draws at most before it stops doubling its draw.
const STAGE_DRAW_CAP: usize = 50_000_000;

/// The most requests a `--duration`/`--stages` schedule may plan: its rate × seconds, summed over
/// its rate stages. The schedule is built in memory before the first request (a billion
/// arrivals took 10 GB); a longer load is a trace or several runs.
pub const MAX_PLANNED_REQUESTS: f64 = 1e8;

/// Requests `stages` plan (rate × seconds, summed over the rate stages; concurrency stages plan
/// none up front).
pub fn planned_requests(stages: &[PlannedStage]) -> f64 {
    stages.iter().filter(|s| s.concurrency.is_none()).map(|s| s.rate * s.seconds).sum()
}

/// SB101 when `stages` plan more than [`MAX_PLANNED_REQUESTS`]; `flag` is the flag that set them.
pub fn check_planned_requests(stages: &[PlannedStage], flag: &str) -> Result<()> {
    let planned = planned_requests(stages);
    if planned <= MAX_PLANNED_REQUESTS {
        return Ok(());
    }
    Err(BenchError::config(
        flag,
        format!(
            "plans about {planned:.3e} requests (rate × seconds), more than the {MAX_PLANNED_REQUESTS:e} \
             a run schedules in memory before it starts"
        ),
        "plan at most 1e8 requests: a lower rate or a shorter --duration/stage, or replay a trace \
         (--dataset-name timed_trace)",
    ))
}

/// The schedule of `stages` run back to back (pure).
pub fn staged_schedule(stages: &[Stage], burstiness: f64, seed: u64) -> StagedSchedule {
    let mut out = StagedSchedule::default();
    let mut start = 0u64;
    for (k, st) in stages.iter().enumerate() {
        let len = secs_to_us(st.seconds);
        for o in stage_offsets(st.rate, burstiness, len, stage_seed(seed, k)) {
            out.offsets_us.push(start.saturating_add(o));
            out.stage.push(k as u32);
        }
        out.bounds_us.push((start, start.saturating_add(len)));
        start = start.saturating_add(len);
    }
    out
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn parses_stage_lists() {
        let s = parse_stages("5:60, 20:30.5").unwrap();
        assert_eq!(s, vec![Stage::at_rate(5.0, 60.0), Stage::at_rate(20.0, 30.5)]);
        assert!(!is_closed_loop(&s));
        let c = parse_stages("c=8:60, c=32:30").unwrap();
        assert_eq!(c, vec![Stage::at_concurrency(8, 60.0), Stage::at_concurrency(32, 30.0)]);
        assert!(is_closed_loop(&c));
        for bad in
            ["", "5", "x:1", "5:y", "0:10", "inf:10", "5:0", "5:-1", "c=0:10", "c=1.5:10", "c=x:1", "c=4:0"]
        {
            let e = parse_stages(bad).unwrap_err();
            assert_eq!(e.code().as_str(), "SB101", "{bad}");
        }
        let e = parse_stages("5:60,c=8:60").unwrap_err();
        assert!(e.to_string().contains("mixes rate stages and concurrency stages"), "{e}");
    }

    #[test]
    fn closed_loop_bounds_are_back_to_back_and_cut_by_the_duration() {
        let c = [Stage::at_concurrency(2, 1.0), Stage::at_concurrency(8, 2.0), Stage::at_concurrency(4, 1.0)];
        assert_eq!(closed_loop_bounds(&c, None), vec![(2, 1_000_000), (8, 3_000_000), (4, 4_000_000)]);
        assert_eq!(closed_loop_bounds(&c, Some(2_000_000)), vec![(2, 1_000_000), (8, 2_000_000)]);
        assert!(closed_loop_bounds(&[Stage::at_rate(5.0, 1.0)], None).is_empty());
    }

    #[test]
    fn staged_schedule_is_pure_and_keeps_each_stage_in_its_window() {
        let stages = [Stage::at_rate(50.0, 10.0), Stage::at_rate(200.0, 5.0)];
        let a = staged_schedule(&stages, 1.0, 3);
        assert_eq!(a, staged_schedule(&stages, 1.0, 3));
        assert_ne!(a.offsets_us, staged_schedule(&stages, 1.0, 4).offsets_us);
        assert_eq!(a.bounds_us, vec![(0, 10_000_000), (10_000_000, 15_000_000)]);
        assert!(a.offsets_us.windows(2).all(|w| w[0] <= w[1]));
        let n0 = a.stage.iter().filter(|&&s| s == 0).count();
        let n1 = a.stage.iter().filter(|&&s| s == 1).count();
        // Poisson counts: 500 ± 5σ and 1000 ± 5σ.
        assert!((390..=610).contains(&n0), "{n0}");
        assert!((840..=1160).contains(&n1), "{n1}");
        for (o, s) in a.offsets_us.iter().zip(&a.stage) {
            let (lo, hi) = a.bounds_us[*s as usize];
            assert!(*o >= lo && *o < hi);
        }
    }

    #[test]
    fn stages_beyond_1e9_seconds_are_refused_at_parse_time() {
        for bad in ["1:1e19", "c=2:1e10", "1:1e9,1:2e9"] {
            let e = parse_stages(bad).unwrap_err();
            assert_eq!(e.code().as_str(), "SB101", "{bad}");
            assert!(e.to_string().contains("at most 1e9 seconds"), "{e}");
        }
        assert!(parse_stages("1e-4:1e9").is_ok());
    }

    #[test]
    fn planned_requests_beyond_the_bound_are_refused_before_anything_is_drawn() {
        let plan = |rate: f64, seconds: f64| PlannedStage { rate, seconds, concurrency: None };
        let ok = [plan(1000.0, 50_000.0), plan(1000.0, 50_000.0)];
        assert_eq!(planned_requests(&ok), 1e8);
        assert!(check_planned_requests(&ok, "--stages").is_ok());
        for bad in [
            vec![plan(1e308, 1.0)],
            vec![plan(1e8, 10.0)],
            vec![plan(1000.0, 1e9)],
            ok.iter().copied().chain([plan(1.0, 1.0)]).collect(),
        ] {
            let e = check_planned_requests(&bad, "--duration").unwrap_err();
            assert_eq!(e.code().as_str(), "SB101");
            assert!(e.to_string().contains("at most 1e8 requests"), "{e}");
        }
        let closed = [PlannedStage { rate: f64::INFINITY, seconds: 1e9, concurrency: Some(4) }];
        assert!(check_planned_requests(&closed, "--stages").is_ok());
    }

    #[test]
    fn constant_gaps_with_infinite_burstiness() {
        let a = staged_schedule(&[Stage::at_rate(10.0, 1.0)], f64::INFINITY, 0);
        assert_eq!(a.offsets_us, (1..10).map(|i| i * 100_000).collect::<Vec<u64>>());
    }
}

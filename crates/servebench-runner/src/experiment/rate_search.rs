//! The rate searches: saturation (`--find-max-rate`) and SLO (`--slo`), by bisection over the
//! request rate (`search.rs`), one point per step.

use super::config::{Experiment, SearchOptions, SloBound, SloStat};
use super::header;
use super::point::{label, run_point, Ctx, PointOutcome, PointSpec};
use super::search::Bisection;
use crate::prepare::failure_codes;
use serde_json::{Map, Value};
use servebench_core::metrics::RunMetrics;
use servebench_core::BenchError;
use servebench_core::{Outcome, Result};
use servebench_report::written::{
    SearchCriterion, SearchDocument, SearchStep, SloDocument, StoppedEarly, WrittenExperiment,
};

/// A step's error, its fix in the search's terms: the search sets each step's rate, so "raise
/// the rate" of a `--duration` that schedules no request names the flags the user has.
fn step_error(e: BenchError, rate: f64) -> BenchError {
    match e {
        BenchError::Config { flag, problem, .. } if flag == "--duration" => BenchError::Config {
            flag,
            problem: format!("{problem} at the search's rate {rate} req/s"),
            fix: "lengthen --duration, or raise --search-start-rate (a step sends about its rate × \
                  --duration requests)"
                .into(),
        },
        e => e,
    }
}

/// The value of an SLO's statistic in `m`, ms.
fn slo_value(m: &RunMetrics, s: &SloBound) -> Option<f64> {
    let sum = m.summary(s.metric);
    match s.stat {
        SloStat::Mean => Some(sum.mean),
        SloStat::Median => Some(sum.median),
        SloStat::Percentile(p) => sum.percentile(p),
    }
    .filter(|_| sum.count > 0)
}

/// How one step of a search went: its rates, and why it failed the criterion (if it did).
struct Verdict {
    offered: Option<f64>,
    achieved: Option<f64>,
    ratio: Option<f64>,
    reasons: Vec<String>,
    slo_values: Map<String, Value>,
}

/// Judges point `p`: saturation (`slos` = None: achieved tracks offered) or every SLO met; a
/// failed request fails either.
fn verdict(p: &PointOutcome, slos: Option<&Vec<SloBound>>, a: &SearchOptions) -> Verdict {
    let (offered, achieved) = (p.offered_rate(), p.achieved_rate());
    let ratio = match (offered, achieved) {
        (Some(o), Some(a)) if o > 0.0 => Some(a / o),
        _ => None,
    };
    let mut reasons = Vec::new();
    // A point that stopped early (saturation, errors) fails: the search goes below it.
    if let Some(e) = &p.result.early_stop {
        reasons.push(format!("stopped early: {} detected at {:.1} s", e.reason.as_str(), e.detected_at_s));
    }
    if p.metrics.failed > 0 {
        reasons.push(format!("{} requests failed", p.metrics.failed));
    }
    // An invalid run (the client did not send the load asked, ...) is no verdict on its rate's
    // figures: the search does not take it as a pass (docs/experiments.md).
    let invalid = p.invalid_rules(&["early_stop", "interrupted", "failures"]);
    if !invalid.is_empty() {
        reasons.push(format!("run validity invalid: {}", invalid.join("; ")));
    }
    let mut slo_values = Map::new();
    match slos {
        None => match ratio {
            Some(r) if r >= a.saturation_threshold => {}
            Some(r) => reasons.push(format!(
                "achieved {:.2} req/s is {:.1}% of offered {:.2} (< {:.0}%)",
                achieved.unwrap_or(0.0),
                r * 100.0,
                offered.unwrap_or(0.0),
                a.saturation_threshold * 100.0
            )),
            None => reasons.push("fewer than 2 completed requests".into()),
        },
        Some(slos) => {
            for s in slos {
                let v = slo_value(&p.metrics, s);
                slo_values.insert(s.name.clone(), Value::from(v));
                match v {
                    Some(v) if v <= s.max_ms => {}
                    Some(v) => reasons.push(format!("{} {v:.2} ms > {} ms", s.name, s.max_ms)),
                    None => reasons.push(format!("{}: no value", s.name)),
                }
            }
        }
    }
    Verdict { offered, achieved, ratio, reasons, slo_values }
}

/// Bisection over the rate: saturation (`slos` = None) or the SLO search.
pub async fn rate_search(ctx: &Ctx, slos: Option<&Vec<SloBound>>) -> Result<WrittenExperiment> {
    let a = &ctx.config.search;
    let what = if slos.is_some() { "SLO search" } else { "Saturation search" };
    ctx.say(&format!(
        "{:=^50}\n{what} by bisection over the rate: start {} req/s, max {} req/s, tolerance {}%",
        format!(" {what} "),
        a.start_rate,
        a.max_rate,
        a.tolerance * 100.0
    ));
    let mut b = Bisection::new(a.start_rate, a.max_rate, a.tolerance);
    let mut trajectory = Vec::new();
    let mut points = Vec::new();
    let mut interrupted = false;
    let mut stopped_early = None;
    let (mut any_success, mut first_no_success) = (false, None);
    while let Some(rate) = b.next_rate() {
        let spec = PointSpec {
            label: label(rate, ctx.base.max_concurrency, false),
            request_rate: rate,
            max_concurrency: ctx.base.max_concurrency,
            num_prompts: ctx.config.num_prompts,
            seed: ctx.base.seed,
        };
        let p = run_point(ctx, spec).await.map_err(|e| step_error(e, rate))?;
        // A rate with no successful request fails the criterion (overload is an answer);
        // the search fails with SB602 only if no point had any success (at the end), or at
        // once when the step's first failure does not depend on the load (a lower rate would
        // fail the same way).
        let mut permanent = false;
        if p.records.iter().any(|r| r.outcome == Outcome::Completed) {
            any_success = true;
        } else if let Some(e) = failure_codes::no_success_in_point(&p.records, &format!("{}: ", p.spec.label))
        {
            permanent = failure_codes::load_independent(&p.records);
            first_no_success.get_or_insert(e);
        }
        let Verdict { offered, achieved, ratio, mut reasons, slo_values } = verdict(&p, slos, a);
        let passed = reasons.is_empty() && !p.interrupted;
        if p.interrupted {
            // Cut short, the step is no verdict on its rate, and its criteria are not judged:
            // achieved (over the requests that finished) against offered (over all planned)
            // would read as saturation, and a cancelled request as a failure.
            reasons = vec!["interrupted".into()];
        }
        ctx.say(&format!(
            "step {:>2}: rate {:>10.3} req/s  offered {:>9}  achieved {:>9}  {}{}",
            trajectory.len() + 1,
            rate,
            offered.map_or("-".into(), |v| format!("{v:.2}")),
            achieved.map_or("-".into(), |v| format!("{v:.2}")),
            if passed { "pass" } else { "fail" },
            if reasons.is_empty() { String::new() } else { format!(" ({})", reasons.join("; ")) }
        ));
        trajectory.push(SearchStep {
            step: trajectory.len() + 1,
            request_rate: rate,
            offered_rate: offered,
            achieved_rate: achieved,
            achieved_over_offered: ratio,
            completed: p.metrics.completed,
            failed: p.metrics.failed,
            slo_values,
            passed,
            reasons,
        });
        interrupted = p.interrupted;
        points.push(p.document());
        if interrupted {
            break;
        }
        if permanent {
            ctx.say(&format!(
                "No request of {} succeeded and its first failure does not depend on the load: the search stops here",
                p.spec.label
            ));
            stopped_early = Some(StoppedEarly {
                index: points.len() - 1,
                label: p.spec.label.clone(),
                reason: "no_success".into(),
                detected_at_s: None,
                points_not_run: None,
            });
            break;
        }
        b.record(rate, passed);
    }
    let so_far = |rate: Option<f64>| rate.map_or("none".to_owned(), |r| format!("{r:.3} req/s"));
    match (b.low(), b.high()) {
        // An interrupted search proves no limit: say what it had found, not a conclusion.
        _ if stopped_early.is_some() => ctx.say(&format!(
            "Result: none — stopped at step {}: no request succeeded (highest passing rate so far: {}; lowest failing: {})",
            trajectory.len(),
            so_far(b.low()),
            so_far(b.high())
        )),
        _ if interrupted => ctx.say(&format!(
            "Result: none — interrupted at step {} before the search converged (highest passing rate so far: {}; lowest failing: {})",
            trajectory.len(),
            so_far(b.low()),
            so_far(b.high())
        )),
        (Some(l), Some(h)) => ctx.say(&format!("Result: {l:.3} req/s (next failing rate {h:.3} req/s)")),
        (Some(l), None) => {
            ctx.say(&format!("Result: {l:.3} req/s passed: the limit is above --search-max-rate"))
        }
        (None, _) => ctx.say(&format!("Result: no rate passed (down to {:.4} req/s)", a.start_rate / 1024.0)),
    }
    let exp = match slos {
        Some(s) => Experiment::SloSearch { slos: s.clone() },
        None => Experiment::FindMaxRate,
    };
    let criterion = match slos {
        None => SearchCriterion::Saturation {
            saturation_threshold: a.saturation_threshold,
            definition: "achieved_rate >= saturation_threshold * offered_rate and no failed request".into(),
        },
        Some(s) => SearchCriterion::Slos {
            slos: s.iter().map(|s| SloDocument { name: s.name.clone(), max_ms: s.max_ms }).collect(),
            definition: "every SLO met and no failed request".into(),
        },
    };
    let doc = SearchDocument {
        header: header(ctx, &exp),
        criterion,
        tolerance: a.tolerance,
        max_concurrency: ctx.base.max_concurrency,
        num_prompts: ctx.config.num_prompts as u64,
        duration_s: ctx.base.load.duration.map(|d| d.as_secs_f64()),
        result_rate: b.low(),
        lowest_failing_rate: b.high(),
        interrupted,
        stopped_early,
        trajectory,
        points,
    };
    if (!any_success || doc.stopped_early.is_some()) && !interrupted {
        if let Some(e) = first_no_success {
            ctx.no_success.lock().unwrap_or_else(|e| e.into_inner()).get_or_insert(e);
        }
    }
    Ok(WrittenExperiment::Search(doc))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use crate::experiment::config::SearchOptions;
    use servebench_core::metrics::{compute, MetricsConfig};
    use servebench_core::validity::{Validity, ValidityInputs};
    use servebench_core::RequestRecord;

    /// `n` requests sent every 100 ms, each done 10 ms later: achieved tracks offered.
    fn point(validity: ValidityInputs) -> PointOutcome {
        let records: Vec<RequestRecord> = (0..10u64)
            .map(|i| {
                let t = i * 100_000;
                let mut r = RequestRecord::scheduled(i, format!("r{i}"), t, 10, 1);
                r.outcome = Outcome::Completed;
                (r.dispatched_us, r.first_token_us, r.last_token_us) =
                    (Some(t), Some(t + 5_000), Some(t + 9_000));
                (r.done_us, r.completion_tokens) = (Some(t + 10_000), Some(1));
                r
            })
            .collect();
        PointOutcome {
            spec: PointSpec {
                label: "rate 10.0".into(),
                request_rate: 10.0,
                max_concurrency: None,
                num_prompts: 10,
                seed: 0,
            },
            metrics: compute(&records, &MetricsConfig::default()),
            steady: None,
            result: Default::default(),
            records: records.into(),
            interrupted: false,
            validity: Validity::of(&validity),
            num_prompts: 10,
            capped: false,
        }
    }

    /// Pins which invalid points a sweep still weighs for its best: one the client could not send
    /// as asked (late dispatch) is out; one invalid by what the server did (failures, a send
    /// rate a `--max-concurrency` cap held down, few requests per slot) still describes its load.
    #[test]
    fn only_client_side_rules_take_a_point_out_of_the_best() {
        let fine = ValidityInputs {
            dispatch_lateness_p99_ms: Some(1.0),
            sent: 10,
            completed: 10,
            ..Default::default()
        };
        assert!(point(fine.clone()).client_invalid_rules().is_empty());
        let late = point(ValidityInputs { dispatch_lateness_p99_ms: Some(500.0), ..fine.clone() });
        assert!(!late.invalid_rules(&[]).is_empty());
        assert!(
            late.client_invalid_rules()[0].starts_with("dispatch_lateness ("),
            "{:?}",
            late.client_invalid_rules()
        );
        let short = ValidityInputs { send_rates: Some((5.0, 20.0)), failed: 5, completed: 5, ..fine };
        let mut capped = point(short.clone());
        capped.capped = true;
        assert!(!capped.invalid_rules(&[]).is_empty(), "invalid by the server side");
        assert!(capped.client_invalid_rules().is_empty());
        // Pins a send rate short of the asked one with no cap to hold it down: only the client
        // stands between the schedule and the wire (a 20,000 req/s point that sent a fifth of
        // it was a sweep's best).
        let uncapped = point(short);
        assert!(
            uncapped.client_invalid_rules().iter().any(|r| r.starts_with("send_rate (")),
            "{:?}",
            uncapped.client_invalid_rules()
        );
    }

    /// Pins a search step whose run is `invalid` (here the client sent 500 ms late at p99, as
    /// the burst of a passed `--start-at` did) passing, and so being the search's answer.
    #[test]
    fn an_invalid_step_fails_naming_the_rule() {
        let opts =
            SearchOptions { start_rate: 1.0, max_rate: 100.0, tolerance: 0.05, saturation_threshold: 0.95 };
        let fine = ValidityInputs {
            dispatch_lateness_p99_ms: Some(1.0),
            sent: 10,
            completed: 10,
            ..Default::default()
        };
        assert_eq!(verdict(&point(fine.clone()), None, &opts).reasons, Vec::<String>::new());
        let late = ValidityInputs { dispatch_lateness_p99_ms: Some(500.0), ..fine };
        let reasons = verdict(&point(late), None, &opts).reasons;
        assert_eq!(reasons.len(), 1, "{reasons:?}");
        assert!(
            reasons[0]
                .starts_with("run validity invalid: dispatch_lateness (dispatch lateness p99 500.00 ms"),
            "{reasons:?}"
        );
    }
}

//! The chart of what decided a search (`--find-max-rate`, `--slo`; docs/experiments.md): each
//! step's criterion against its offered rate, passing steps as dots and failing ones as crosses,
//! in order of the rate (the search tries them out of order), with the pass line.

use crate::document::{ExperimentDocument, SearchStepEntry};

use super::svg::{AxisSpec, Chart, Kind, Series, Style};

/// Colours (run indices of the palette): passing steps, failing steps, reference lines.
const PASS: usize = 2;
const FAIL: usize = 1;
const REFERENCE: usize = 6;

/// The steps of the trajectory, ordered by offered rate (the tried rate when not measured).
fn steps(doc: &ExperimentDocument) -> Vec<&SearchStepEntry> {
    let mut out: Vec<&SearchStepEntry> =
        doc.trajectory.iter().flatten().filter_map(|s| s.0.as_ref()).filter(|s| s.passed.is_some()).collect();
    out.sort_by(|a, b| offered(a).unwrap_or(f64::INFINITY).total_cmp(&offered(b).unwrap_or(f64::INFINITY)));
    out
}

fn offered(s: &SearchStepEntry) -> Option<f64> {
    s.offered_rate.or(s.request_rate).filter(|v| v.is_finite())
}

/// Pass (dots) and fail (crosses) series of `(offered, y)` per step.
fn pass_fail(
    steps: &[&SearchStepEntry],
    y: impl Fn(&SearchStepEntry) -> Option<f64>,
    what: &str,
) -> Vec<Series> {
    let mut pass = Vec::new();
    let mut fail = Vec::new();
    for s in steps {
        if let (Some(x), Some(v)) = (offered(s), y(s).filter(|v| v.is_finite())) {
            if s.passed == Some(true) { &mut pass } else { &mut fail }.push((x, v));
        }
    }
    vec![
        Series {
            run: PASS,
            name: format!("{what}: step passed"),
            style: Style::Solid,
            kind: Kind::Dots(pass),
        },
        Series {
            run: FAIL,
            name: format!("{what}: step failed"),
            style: Style::Solid,
            kind: Kind::Crosses(fail),
        },
    ]
}

/// `--find-max-rate`: achieved against offered rate, with `achieved = offered` and the pass line
/// `achieved = threshold × offered`.
fn saturation_chart(steps: &[&SearchStepEntry], threshold: f64) -> Chart {
    let hi = steps.iter().filter_map(|s| offered(s)).fold(0.0, f64::max);
    let mut series = pass_fail(steps, |s| s.achieved_rate, "achieved rate");
    series.push(Series {
        run: REFERENCE,
        name: "achieved = offered".into(),
        style: Style::Dashed,
        kind: Kind::Line(vec![(0.0, 0.0), (hi, hi)]),
    });
    series.push(Series {
        run: FAIL,
        name: format!("pass line: achieved = {threshold} × offered"),
        style: Style::Dashed,
        kind: Kind::Line(vec![(0.0, 0.0), (hi, hi * threshold)]),
    });
    Chart {
        id: "search-saturation".into(),
        title: "Achieved vs offered request rate".into(),
        note: format!(
            "The search's criterion: a step passes when its achieved rate is at least {threshold} × its \
             offered rate and no request failed (docs/experiments.md). One point per step, by offered rate: \
             dots passed, crosses failed. Beyond capacity the achieved rate stays flat."
        ),
        x: AxisSpec::new("offered rate (req/s)").starting_at_zero(),
        y: AxisSpec::new("achieved rate (req/s)").starting_at_zero(),
        series,
    }
}

/// `--find-max-rate`: achieved / offered against offered rate, the pass line horizontal at the
/// threshold (the criterion itself: near the answer, steps a few percent apart are told apart).
fn ratio_chart(steps: &[&SearchStepEntry], threshold: f64) -> Chart {
    let hi = steps.iter().filter_map(|s| offered(s)).fold(0.0, f64::max);
    let ratio = |s: &SearchStepEntry| Some(s.achieved_rate? / offered(s)?);
    let mut series = pass_fail(steps, ratio, "achieved / offered");
    series.push(Series {
        run: FAIL,
        name: format!("pass line: {threshold}"),
        style: Style::BoldDashed,
        kind: Kind::Line(vec![(0.0, threshold), (hi, threshold)]),
    });
    Chart {
        id: "search-saturation-ratio".into(),
        title: "Achieved / offered by offered rate".into(),
        note: format!(
            "The same steps as a ratio: a step passes at or above {threshold} (with no failed request)."
        ),
        x: AxisSpec::new("offered rate (req/s)").starting_at_zero(),
        y: AxisSpec { fit: true, ..AxisSpec::new("achieved / offered") },
        series,
    }
}

/// `--slo`: each bound's value against offered rate, with the bound as a horizontal line.
fn slo_chart(steps: &[&SearchStepEntry], name: &str, max_ms: f64) -> Chart {
    let hi = steps.iter().filter_map(|s| offered(s)).fold(0.0, f64::max);
    let value = |s: &SearchStepEntry| s.slo_values.as_ref()?.get(name)?.0;
    let mut series = pass_fail(steps, value, name);
    series.push(Series {
        run: FAIL,
        name: format!("SLO {name} ≤ {max_ms} ms"),
        style: Style::BoldDashed,
        kind: Kind::Line(vec![(0.0, max_ms), (hi, max_ms)]),
    });
    Chart {
        id: format!("search-slo-{name}"),
        title: format!("{name} vs offered request rate"),
        note: format!(
            "The search's criterion: a step passes when every SLO holds and no request failed. {name} of each \
             step by offered rate: dots passed, crosses failed (a step can fail on another SLO)."
        ),
        x: AxisSpec::new("offered rate (req/s)").starting_at_zero(),
        y: AxisSpec::new(format!("{name} (ms)")).starting_at_zero(),
        series,
    }
}

/// The criterion charts of a search document (none for a sweep or a search without trajectory).
pub(crate) fn search_charts(doc: &ExperimentDocument) -> Vec<Chart> {
    let steps = steps(doc);
    if steps.is_empty() {
        return Vec::new();
    }
    let criterion = doc.criterion.as_ref();
    if let Some(t) = criterion.and_then(|c| c.saturation_threshold) {
        return vec![saturation_chart(&steps, t), ratio_chart(&steps, t)];
    }
    let slos = criterion.and_then(|c| c.slos.as_deref()).unwrap_or_default();
    slos.iter()
        .filter_map(|s| s.0.as_ref())
        .filter_map(|s| Some(slo_chart(&steps, s.name.as_deref()?, s.max_ms?)))
        .collect()
}

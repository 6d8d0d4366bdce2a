//! The HTTP phases chart: per run, the median (labelled dot) and p99 (cross) of each phase of
//! the result's `http_phases` summary, computed from the records by the one implementation
//! (`servebench_core::metrics::http_phases`; docs/metrics.md, "HTTP phases").

use servebench_core::metrics::http_phases::http_phases;

use super::svg::{AxisSpec, Chart, Kind, Series, Style};
use super::ReportRun;

/// Short names on the chart, in the summary's timeline order.
const SHORT: [&str; 8] =
    ["dns", "connect", "tls", "written", "first byte", "head", "first token", "last byte"];

/// The chart, when some run's records carry phase timing.
pub(super) fn phase_chart(runs: &[ReportRun]) -> Option<Chart> {
    let mut series = Vec::new();
    let mut connections = Vec::new();
    for (i, r) in runs.iter().enumerate() {
        let Some(s) = http_phases(&r.records) else { continue };
        connections.push(format!("{}: {} new, {} reused", r.label, s.new_connections, s.reused_connections));
        let (mut median, mut p99) = (Vec::new(), Vec::new());
        for (n, (_, stats)) in s.phases().iter().enumerate() {
            let Some(p) = stats else { continue };
            let x = (n + 1) as f64;
            median.push((x, p.median_ms, SHORT[n].to_owned()));
            p99.push((x, p.p99_ms));
        }
        let prefix = if runs.len() > 1 { format!("{}: ", r.label) } else { String::new() };
        series.push(Series {
            run: i,
            name: format!("{prefix}median"),
            style: Style::Solid,
            kind: Kind::Labeled(median),
        });
        series.push(Series {
            run: i,
            name: format!("{prefix}p99"),
            style: Style::Solid,
            kind: Kind::Crosses(p99),
        });
    }
    if series.is_empty() {
        return None;
    }
    Some(Chart {
        id: "http-phases".into(),
        title: "HTTP phases".into(),
        note: format!(
            "Median (dot) and p99 (cross) of each phase over the completed requests that had it. DNS, \
             connect and TLS are durations, only on requests that opened their connection; the others \
             are times from the start of the request's write. Connections: {}.",
            connections.join("; ")
        ),
        x: AxisSpec {
            integer: true,
            min: Some(0.0),
            max: Some(9.0),
            ..AxisSpec::new("phase (1 dns, 2 connect, 3 tls, 4 written, 5 first byte, 6 head, 7 first token, 8 last byte)")
        },
        y: AxisSpec { log: true, ..AxisSpec::new("ms (log)") },
        series,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use servebench_core::{HttpPhases, Outcome, RequestRecord};

    fn run(phases: Option<HttpPhases>) -> ReportRun {
        let mut r = RequestRecord::scheduled(0, "x".into(), 0, 1, 1);
        r.outcome = Outcome::Completed;
        r.dispatched_us = Some(100);
        r.headers_us = Some(2_100);
        r.phases = phases;
        ReportRun::new("run", super::super::tests::header("run"), vec![r], vec![])
    }

    #[test]
    fn the_chart_plots_each_phase_a_run_has_and_is_absent_without_phases() {
        assert!(phase_chart(&[run(None)]).is_none(), "records without phases");
        let p = HttpPhases {
            reused: false,
            connect_us: Some(500),
            written_us: Some(40),
            ..HttpPhases::default()
        };
        let c = phase_chart(&[run(Some(p))]).unwrap();
        let Kind::Labeled(median) = &c.series[0].kind else { panic!("{:?}", c.series[0]) };
        let names: Vec<(f64, &str)> = median.iter().map(|m| (m.0, m.2.as_str())).collect();
        assert_eq!(names, [(2.0, "connect"), (4.0, "written"), (6.0, "head")]);
        assert_eq!(median[2].1, 2.0, "head − dispatched = 2 ms");
        assert!(c.note.contains("run: 1 new, 0 reused"), "{}", c.note);
    }
}

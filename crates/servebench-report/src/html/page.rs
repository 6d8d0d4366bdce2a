//! Page layout of the HTML report: head (inline CSS from `assets/report.css`), run cards (configuration, environment,
//! client health, warnings), the summary table, chart sections and the inline script
//! (`assets/report.js`).

use std::fmt::Write as _;

use servebench_core::metrics::RunMetrics;
use servebench_core::stats::Summary;
use servebench_core::validity::Validity;

use super::svg::{esc, render as render_chart, run_color, Chart};
use super::{RecordSource, ReportRun};
use crate::result_keys::Headline;
use crate::server_summary::{GpuEnergy, GpuRow};

/// The page style (`assets/report.css`, included at build time).
const CSS: &str = include_str!("assets/report.css");

/// The page script: hover read-out of data coordinates, legend click hides a series, run
/// checkboxes hide a run everywhere. On success it marks `<body data-ok="1">`; an exception is
/// stored in `data-error` instead (the browser test checks both).
const JS: &str = include_str!("assets/report.js");

/// Whether a smaller or a larger value is better (for colouring the change against run 1).
#[derive(Clone, Copy)]
enum Better {
    Lower,
    Higher,
    Neither,
}

type Getter = fn(&ReportRun) -> Option<f64>;
/// A metric row: value getter, decimals, and which direction is better.
type Row = (Getter, usize, Better);

fn pct(s: &Summary, p: f64) -> Option<f64> {
    (s.count > 0).then(|| s.percentile(p)).flatten()
}

fn mean(s: &Summary) -> Option<f64> {
    (s.count > 0).then_some(s.mean)
}

/// A rate over the run: none when nothing was measured (no duration).
fn rate(m: &RunMetrics, v: f64) -> Option<f64> {
    (m.duration_s > 0.0).then_some(v)
}

/// A run-level figure `v` (`h` in a result), none when the run's result lacks it (a result
/// without records keeps 0 in its metrics for it, vLLM's type: [`ReportRun::lacks`]).
fn figure(r: &ReportRun, h: Headline, v: f64) -> Option<f64> {
    (!r.lacks.contains(&h)).then_some(v)
}

/// Total tokens/s as the run's console and result JSON give it: a pooling run's is its input
/// tokens/s by the server's count first ([`crate::sections::pooling::input_throughput`],
/// docs/metrics.md "Pooling input tokens"), when its records are the source (a result without
/// records keeps the figure it wrote, [`crate::vllm_arrays::use_result_figures`]).
fn total_tokens_per_s(r: &ReportRun) -> Option<f64> {
    let m = &r.metrics;
    if r.header.pooling && r.source == RecordSource::Records {
        return crate::sections::pooling::input_throughput(m).as_f64();
    }
    figure(r, Headline::TotalTokenThroughput, m.total_token_throughput).and_then(|v| rate(m, v))
}

/// Summary table rows: group headers (`None` getter) and metric rows.
const ROWS: &[(&str, Option<Row>)] = &[
    ("Requests", None),
    ("completed", Some((|r| Some(r.metrics.completed as f64), 0, Better::Higher))),
    ("failed", Some((|r| Some(r.metrics.failed as f64), 0, Better::Lower))),
    ("cancelled", Some((|r| Some(r.metrics.cancelled as f64), 0, Better::Lower))),
    ("duration (s)", Some((|r| rate(&r.metrics, r.metrics.duration_s), 2, Better::Neither))),
    ("Throughput", None),
    (
        "requests/s",
        Some((
            |r| {
                figure(r, Headline::RequestThroughput, r.metrics.request_throughput)
                    .and_then(|v| rate(&r.metrics, v))
            },
            2,
            Better::Higher,
        )),
    ),
    (
        "output tokens/s",
        Some((
            |r| {
                // A pooling run generates no output: no data, not 0.
                figure(r, Headline::OutputThroughput, r.metrics.output_throughput)
                    .filter(|_| !r.header.pooling)
                    .and_then(|v| rate(&r.metrics, v))
            },
            1,
            Better::Higher,
        )),
    ),
    ("total tokens/s", Some((total_tokens_per_s, 1, Better::Higher))),
    (
        "peak output tokens/s (1-s window)",
        Some((
            |r| {
                // A pooling run generates no output: no data, not 0 (as output tokens/s).
                figure(r, Headline::MaxOutputTokensPerS, r.metrics.max_output_tokens_per_s)
                    .filter(|_| !r.header.pooling)
                    .and_then(|v| rate(&r.metrics, v))
            },
            1,
            Better::Higher,
        )),
    ),
    (
        "peak requests in flight",
        Some((
            |r| figure(r, Headline::MaxConcurrentRequests, r.metrics.max_concurrent_requests as f64),
            0,
            Better::Neither,
        )),
    ),
    (
        "goodput (req/s)",
        Some((|r| r.metrics.request_goodput.and_then(|g| rate(&r.metrics, g)), 2, Better::Higher)),
    ),
    ("Service view (ms, from dispatched)", None),
    ("TTFT mean", Some((|r| mean(&r.metrics.ttft), 2, Better::Lower))),
    ("TTFT p50", Some((|r| pct(&r.metrics.ttft, 50.0), 2, Better::Lower))),
    ("TTFT p99", Some((|r| pct(&r.metrics.ttft, 99.0), 2, Better::Lower))),
    ("TPOT mean", Some((|r| mean(&r.metrics.tpot), 2, Better::Lower))),
    ("TPOT p99", Some((|r| pct(&r.metrics.tpot, 99.0), 2, Better::Lower))),
    ("ITL mean", Some((|r| mean(&r.metrics.itl), 2, Better::Lower))),
    ("ITL p99", Some((|r| pct(&r.metrics.itl, 99.0), 2, Better::Lower))),
    ("ITL p99 (token view)", Some((|r| pct(&r.metrics.itl_token_view, 99.0), 2, Better::Lower))),
    ("E2EL mean", Some((|r| mean(&r.metrics.e2el), 2, Better::Lower))),
    ("E2EL p50", Some((|r| pct(&r.metrics.e2el, 50.0), 2, Better::Lower))),
    ("E2EL p99", Some((|r| pct(&r.metrics.e2el, 99.0), 2, Better::Lower))),
    ("Response view (ms, from intended)", None),
    ("TTFT p50", Some((|r| pct(&r.metrics.response_ttft, 50.0), 2, Better::Lower))),
    ("TTFT p99", Some((|r| pct(&r.metrics.response_ttft, 99.0), 2, Better::Lower))),
    ("E2EL p99", Some((|r| pct(&r.metrics.response_e2el, 99.0), 2, Better::Lower))),
    ("queue time p50", Some((|r| pct(&r.metrics.queue_time, 50.0), 2, Better::Lower))),
    ("queue time p99", Some((|r| pct(&r.metrics.queue_time, 99.0), 2, Better::Lower))),
];

/// Whether no row of the group that starts at `rows` (up to the next group heading) has a value
/// for any run: its heading is left out (a result without scheduled send times has no response
/// view).
fn group_is_empty(rows: &[(&str, Option<Row>)], runs: &[ReportRun]) -> bool {
    rows.iter().map_while(|(_, row)| row.as_ref()).all(|(get, _, _)| runs.iter().all(|r| get(r).is_none()))
}

fn summary_table(o: &mut String, runs: &[ReportRun]) {
    o.push_str("<table class=\"summary\" id=\"summary\"><thead><tr><th>metric</th>");
    for (i, r) in runs.iter().enumerate() {
        let _ = write!(
            o,
            "<th><span class=\"swatch\" style=\"background:{}\"></span> {}</th>",
            run_color(i),
            esc(&r.label)
        );
    }
    o.push_str("</tr></thead><tbody>\n");
    for (i, (name, row)) in ROWS.iter().enumerate() {
        let Some((get, decimals, better)) = row else {
            if group_is_empty(&ROWS[i + 1..], runs) {
                continue;
            }
            let _ =
                writeln!(o, "<tr class=\"group\"><td colspan=\"{}\">{}</td></tr>", runs.len() + 1, esc(name));
            continue;
        };
        let values: Vec<Option<f64>> = runs.iter().map(get).collect();
        if values.iter().all(Option::is_none) {
            continue;
        }
        let _ = write!(o, "<tr><td>{}</td>", esc(name));
        let base = values.first().copied().flatten();
        for (i, v) in values.iter().enumerate() {
            let Some(v) = v else {
                o.push_str("<td>–</td>");
                continue;
            };
            let _ = write!(o, "<td>{v:.decimals$}");
            if let (true, Some(b)) = (i > 0, base) {
                let change = crate::change::change_percent(b, *v);
                let class = match (better, change) {
                    (_, None) => "",
                    (_, Some(c)) if c.abs() < 0.05 => "",
                    (Better::Lower, Some(c)) if c < 0.0 => "better",
                    (Better::Higher, Some(c)) if c > 0.0 => "better",
                    (Better::Neither, _) => "",
                    _ => "worse",
                };
                let text = crate::change::format_change(change, 1);
                let _ = write!(o, "<span class=\"delta {class}\">{text}</span>");
            }
            o.push_str("</td>");
        }
        o.push_str("</tr>\n");
    }
    o.push_str("</tbody></table>\n");
}

fn kv_table(o: &mut String, title: &str, rows: &[(String, String)]) {
    let _ = write!(o, "<div><h4>{}</h4><table>", esc(title));
    if rows.is_empty() {
        o.push_str("<tr><td>not recorded</td></tr>");
    }
    for (k, v) in rows {
        let _ = write!(o, "<tr><td>{}</td><td>{}</td></tr>", esc(k), esc(v));
    }
    o.push_str("</table></div>");
}

fn run_card(o: &mut String, i: usize, r: &ReportRun, warnings: &[String]) {
    let _ = write!(
        o,
        "<section class=\"card run-card\"><h3><span class=\"swatch\" style=\"background:{}\"></span>{}</h3><div class=\"kv\">",
        run_color(i),
        esc(&r.label)
    );
    kv_table(o, "Configuration", &r.header.config);
    let env_rows = r.header.environment.as_ref().map(|e| e.rows()).unwrap_or_default();
    kv_table(o, "Environment", &env_rows);
    kv_table(o, "Client health", &r.header.client_health);
    if let Some(e) = r.server_metrics.as_ref().and_then(|s| s.energy.as_ref()) {
        let gpus = r.server_metrics.as_ref().map(|s| s.gpus.as_slice()).unwrap_or_default();
        kv_table(o, "GPU energy", &energy_rows(e, gpus));
    }
    o.push_str("</div>");
    if let Some(note) = r.header.environment.as_ref().and_then(|e| e.note.as_ref()) {
        let _ = write!(o, "<p class=\"sub\">{}</p>", esc(note));
    }
    for note in &r.header.notes {
        let _ = write!(o, "<p class=\"note\">{}</p>", esc(note));
    }
    if let Some(v) = &r.header.validity {
        validity_line(o, v);
    }
    if warnings.is_empty() {
        o.push_str("<p class=\"ok\">No client-health warnings.</p>");
    } else {
        o.push_str("<ul class=\"warn\">");
        for w in warnings {
            let _ = write!(o, "<li>{}</li>", esc(w));
        }
        o.push_str("</ul>");
    }
    o.push_str("</section>\n");
}

/// The run's `gpu_energy` figures as rows (docs/metrics.md, "GPU telemetry and energy"): the
/// totals, then one row per GPU; a figure without data is "n/a".
fn energy_rows(e: &GpuEnergy, gpus: &[GpuRow]) -> Vec<(String, String)> {
    let num = |v: Option<f64>, digits: usize| v.map_or_else(|| "n/a".to_owned(), |v| format!("{v:.digits$}"));
    let mut rows = vec![
        ("energy (J)".to_owned(), num(Some(e.total_energy_j), 1)),
        ("average power (W)".to_owned(), num(e.avg_power_w, 1)),
        ("output tokens".to_owned(), e.output_tokens.to_string()),
        ("energy per output token (J/token)".to_owned(), num(e.joules_per_output_token, 4)),
        ("output tokens per joule".to_owned(), num(e.output_tokens_per_joule, 3)),
        ("method".to_owned(), e.method.clone()),
    ];
    for g in gpus {
        let value = format!(
            "{} J, {} W average over {} s",
            num(g.energy_j, 1),
            num(g.avg_power_w, 1),
            num(g.window_s, 1)
        );
        rows.push((format!("GPU {} @ {}", g.gpu, g.host), value));
    }
    rows
}

/// The run's validity verdict (docs/metrics.md, "Run validity"): its level as a class, the
/// console's line as text, and every rule checked in a list under it.
fn validity_line(o: &mut String, v: &Validity) {
    let _ = write!(
        o,
        "<details class=\"validity {}\" id=\"validity\"><summary>{}</summary><ul>",
        v.verdict.as_str(),
        esc(&v.console_line())
    );
    for r in &v.rules {
        let _ = write!(
            o,
            "<li class=\"{}\">{}: {} — {}</li>",
            r.level.as_str(),
            esc(&r.id),
            r.level.as_str(),
            esc(&r.detail)
        );
    }
    for n in &v.not_checked {
        let _ = write!(o, "<li class=\"skipped\">not checked: {}</li>", esc(n));
    }
    o.push_str("</ul></details>");
}

/// The whole document.
pub(super) fn render(runs: &[ReportRun], warnings: &[Vec<String>], groups: &[(&str, Vec<Chart>)]) -> String {
    let title = match runs {
        [] => "servebench report".to_string(),
        [one] => format!("servebench report: {}", one.label),
        many => format!(
            "servebench comparison: {}",
            many.iter().map(|r| r.label.as_str()).collect::<Vec<_>>().join(" vs ")
        ),
    };
    let mut o = String::with_capacity(256 * 1024);
    let _ = write!(
        o,
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta name=\"viewport\" content=\"width=device-width,initial-scale=1\">\
         <title>{}</title><style>{CSS}</style></head>\n<body><main>\n<h1>{}</h1>\n",
        esc(&title),
        esc(&title)
    );
    if runs.is_empty() {
        o.push_str("<p class=\"sub\">No runs to report.</p>\n");
    } else {
        let requests = runs.iter().map(|r| r.records.len()).sum::<usize>();
        let origin = if runs.iter().all(|r| r.source == RecordSource::Records) {
            format!(
                "{requests} request records. Every number and chart is computed from the request records."
            )
        } else {
            format!(
                "{requests} requests. Not every run has a records file: each run's card says what its \
                 numbers and charts come from (records, a result's per-request arrays, or its summary)."
            )
        };
        let _ = writeln!(
            o,
            "<p class=\"sub\">{} run(s), {origin} Hover a chart for values; click a legend entry to hide a \
             curve.</p>",
            runs.len()
        );
    }
    if runs.len() > 1 {
        o.push_str("<p class=\"runs\">Show runs: ");
        for (i, r) in runs.iter().enumerate() {
            let _ = write!(
                o,
                "<label><input type=\"checkbox\" class=\"run-toggle\" data-run=\"{i}\" checked> \
                 <span class=\"swatch\" style=\"background:{}\"></span> {}</label>",
                run_color(i),
                esc(&r.label)
            );
        }
        o.push_str("</p>\n");
    }
    o.push_str("<h2>Runs</h2>\n<div class=\"cards\">\n");
    for (i, r) in runs.iter().enumerate() {
        run_card(&mut o, i, r, warnings.get(i).map(Vec::as_slice).unwrap_or_default());
    }
    o.push_str("</div>\n");
    if !runs.is_empty() {
        o.push_str("<h2>Summary</h2>\n");
        summary_table(&mut o, runs);
        super::session_trees::section(&mut o, runs);
    }
    for (section, charts) in groups {
        let _ = writeln!(o, "<h2>{}</h2>\n<div class=\"charts\">", esc(section));
        for c in charts {
            o.push_str(&render_chart(c));
        }
        o.push_str("</div>\n");
    }
    o.push_str(
        "<footer>Generated by servebench. Self-contained: no scripts, fonts or styles are loaded from \
         elsewhere. Metric definitions: docs/metrics.md; charts: docs/reports.md.</footer>\n",
    );
    let _ = write!(o, "</main><div id=\"tip\"></div>\n<script>{JS}</script>\n</body></html>\n");
    o
}

/// The document of an experiment (sweep, search, multi-run): a header table and chart sections.
pub(super) fn render_experiment(
    title: &str,
    rows: &[(String, String)],
    groups: &[(&str, Vec<Chart>)],
) -> String {
    render_plain(
        title,
        "Computed from the saved experiment document (per-point results; per-request records are not \
         saved for experiments). Hover a chart for values; click a legend entry to hide a curve.",
        ("Experiment", rows),
        groups,
    )
}

/// A page of one table (`(heading, rows)`) and chart sections, under `title` and the line `sub`.
pub(super) fn render_plain(
    title: &str,
    sub: &str,
    table: (&str, &[(String, String)]),
    groups: &[(&str, Vec<Chart>)],
) -> String {
    let mut o = String::with_capacity(64 * 1024);
    let _ = write!(
        o,
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta name=\"viewport\" content=\"width=device-width,initial-scale=1\">\
         <title>{}</title><style>{CSS}</style></head>\n<body><main>\n<h1>{}</h1>\n\
         <p class=\"sub\">{}</p>\n\
         <div class=\"cards\"><section class=\"card\"><div class=\"kv\">",
        esc(title),
        esc(title),
        esc(sub)
    );
    kv_table(&mut o, table.0, table.1);
    o.push_str("</div></section></div>\n");
    for (section, charts) in groups {
        let _ = writeln!(o, "<h2>{}</h2>\n<div class=\"charts\">", esc(section));
        for c in charts {
            o.push_str(&render_chart(c));
        }
        o.push_str("</div>\n");
    }
    o.push_str("<footer>Generated by servebench. Self-contained. Charts: docs/reports.md.</footer>\n");
    let _ = write!(o, "</main><div id=\"tip\"></div>\n<script>{JS}</script>\n</body></html>\n");
    o
}

//! Page layout of the HTML report: head (inline CSS), run cards (configuration, environment,
//! client health, warnings), the summary table, chart sections and the inline script.

use std::fmt::Write as _;

use servebench_core::metrics::RunMetrics;
use servebench_core::stats::Summary;

use super::svg::{esc, render as render_chart, run_color, Chart};
use super::ReportRun;

const CSS: &str = r#"
:root{--fg:#1d2430;--muted:#5b6472;--line:#d8dde5;--bg:#f6f7f9;--card:#fff;--warn:#8a4b00;--warnbg:#fff4e0}
*{box-sizing:border-box}
body{margin:0;font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,"Helvetica Neue",Arial,sans-serif;color:var(--fg);background:var(--bg)}
main{max-width:1520px;margin:0 auto;padding:20px 24px 48px}
h1{font-size:22px;margin:0 0 4px}h2{font-size:18px;margin:28px 0 10px;border-bottom:1px solid var(--line);padding-bottom:4px}
h3{font-size:15px;margin:0}
.sub{color:var(--muted);margin:0 0 12px}
.cards{display:grid;grid-template-columns:repeat(auto-fit,minmax(560px,1fr));gap:14px}
.card{background:var(--card);border:1px solid var(--line);border-radius:6px;padding:12px 14px}
.card h3{display:flex;align-items:center;gap:8px;margin-bottom:8px}
.swatch{display:inline-block;width:14px;height:14px;border-radius:3px}
.kv{display:flex;flex-wrap:wrap;gap:10px 28px}.kv>div{flex:1 1 200px;min-width:0}
.kv h4{font-size:12px;text-transform:uppercase;letter-spacing:.04em;color:var(--muted);margin:0 0 4px}
.kv table{border-collapse:collapse}.kv table td{padding:1px 10px 1px 0;vertical-align:top;overflow-wrap:anywhere}.kv table td:first-child{color:var(--muted);min-width:9em}
.warn{background:var(--warnbg);color:var(--warn);border:1px solid #f0c98a;border-radius:4px;padding:6px 10px;margin:8px 0 0;list-style:none}
.warn li::before{content:"⚠ "}
.ok{color:#1b6e3a;margin:8px 0 0}
table.summary{border-collapse:collapse;background:var(--card);border:1px solid var(--line)}
table.summary th,table.summary td{padding:4px 12px;border-bottom:1px solid var(--line);text-align:right;font-variant-numeric:tabular-nums}
table.summary th:first-child,table.summary td:first-child{text-align:left}
table.summary tr.group td{background:#eef1f5;font-weight:600;text-align:left}
.better{color:#1b6e3a}.worse{color:#b3261e}.delta{font-size:12px;margin-left:4px}
.charts{display:grid;grid-template-columns:repeat(auto-fit,minmax(640px,1fr));gap:14px}
figure.chart{margin:0;background:var(--card);border:1px solid var(--line);border-radius:6px;padding:10px 12px}
figcaption p{color:var(--muted);margin:2px 0 6px;font-size:12.5px}
svg{width:100%;height:auto;display:block;font-size:11.5px}
svg .plot{fill:#fff;stroke:#9aa3af}svg .grid path{stroke:#eceff3}
svg .ticks text{fill:#4b5563}svg .axis-label{fill:#1d2430;font-size:12.5px}
svg .legend text{fill:#1d2430;font-size:12px}svg .li{cursor:pointer}svg .li.dim{opacity:.35}
svg .empty{fill:var(--muted);font-size:14px}
.off,.hidden{display:none}
.runs label{margin-right:14px;cursor:pointer}
#tip{position:absolute;display:none;pointer-events:none;background:rgba(29,36,48,.92);color:#fff;padding:4px 8px;border-radius:4px;font-size:12px;white-space:pre}
footer{color:var(--muted);margin-top:28px;font-size:12px}
"#;

/// The page script: hover read-out of data coordinates, legend click hides a series, run
/// checkboxes hide a run everywhere. On success it marks `<body data-ok="1">`; an exception is
/// stored in `data-error` instead (the browser test checks both).
const JS: &str = r#"
(function(){
try{
var tip=document.getElementById('tip');
function fmt(v){var a=Math.abs(v);return a>=100?v.toFixed(0):a>=1?v.toFixed(2):v.toPrecision(3);}
document.querySelectorAll('svg[data-x0]').forEach(function(svg){
function a(k){return parseFloat(svg.getAttribute('data-'+k));}
svg.addEventListener('mousemove',function(ev){
var m=svg.getScreenCTM();if(!m){return;}
var pt=svg.createSVGPoint();pt.x=ev.clientX;pt.y=ev.clientY;var p=pt.matrixTransform(m.inverse());
var fx=(p.x-a('pl'))/a('pw'),fy=1-(p.y-a('pt'))/a('ph');
if(fx<0||fx>1||fy<0||fy>1){tip.style.display='none';return;}
var x=svg.getAttribute('data-xlog')?Math.pow(10,Math.log10(a('x0'))+fx*(Math.log10(a('x1'))-Math.log10(a('x0')))):a('x0')+fx*(a('x1')-a('x0'));
var y=a('y0')+fy*(a('y1')-a('y0'));
tip.textContent=svg.getAttribute('data-xl')+': '+fmt(x)+'\n'+svg.getAttribute('data-yl')+': '+fmt(y);
tip.style.display='block';tip.style.left=(ev.pageX+14)+'px';tip.style.top=(ev.pageY+14)+'px';});
svg.addEventListener('mouseleave',function(){tip.style.display='none';});
svg.querySelectorAll('.li').forEach(function(li){li.addEventListener('click',function(){
var s=svg.querySelector('.s[data-s="'+li.getAttribute('data-s')+'"]');if(s){s.classList.toggle('off');}
li.classList.toggle('dim');});});});
document.querySelectorAll('input.run-toggle').forEach(function(cb){cb.addEventListener('change',function(){
document.querySelectorAll('svg .run-'+cb.getAttribute('data-run')).forEach(function(el){el.classList.toggle('hidden',!cb.checked);});});});
document.body.setAttribute('data-charts',String(document.querySelectorAll('figure.chart svg').length));
document.body.setAttribute('data-ok','1');
}catch(e){document.body.setAttribute('data-error',String(e));}
})();
"#;

/// Whether a smaller or a larger value is better (for colouring the change against run 1).
#[derive(Clone, Copy)]
enum Better {
    Lower,
    Higher,
    Neither,
}

type Getter = fn(&RunMetrics) -> Option<f64>;
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

/// Summary table rows: group headers (`None` getter) and metric rows.
const ROWS: &[(&str, Option<Row>)] = &[
    ("Requests", None),
    ("completed", Some((|m| Some(m.completed as f64), 0, Better::Higher))),
    ("failed", Some((|m| Some(m.failed as f64), 0, Better::Lower))),
    ("cancelled", Some((|m| Some(m.cancelled as f64), 0, Better::Lower))),
    ("duration (s)", Some((|m| rate(m, m.duration_s), 2, Better::Neither))),
    ("Throughput", None),
    ("requests/s", Some((|m| rate(m, m.request_throughput), 2, Better::Higher))),
    ("output tokens/s", Some((|m| rate(m, m.output_throughput), 1, Better::Higher))),
    ("total tokens/s", Some((|m| rate(m, m.total_token_throughput), 1, Better::Higher))),
    ("peak output tokens/s (1-s window)", Some((|m| rate(m, m.max_output_tokens_per_s), 1, Better::Higher))),
    ("peak requests in flight", Some((|m| Some(m.max_concurrent_requests as f64), 0, Better::Neither))),
    ("goodput (req/s)", Some((|m| m.request_goodput.and_then(|g| rate(m, g)), 2, Better::Higher))),
    ("Service view (ms, from dispatched)", None),
    ("TTFT mean", Some((|m| mean(&m.ttft), 2, Better::Lower))),
    ("TTFT p50", Some((|m| pct(&m.ttft, 50.0), 2, Better::Lower))),
    ("TTFT p99", Some((|m| pct(&m.ttft, 99.0), 2, Better::Lower))),
    ("TPOT mean", Some((|m| mean(&m.tpot), 2, Better::Lower))),
    ("TPOT p99", Some((|m| pct(&m.tpot, 99.0), 2, Better::Lower))),
    ("ITL mean", Some((|m| mean(&m.itl), 2, Better::Lower))),
    ("ITL p99", Some((|m| pct(&m.itl, 99.0), 2, Better::Lower))),
    ("ITL p99 (token view)", Some((|m| pct(&m.itl_token_view, 99.0), 2, Better::Lower))),
    ("E2EL mean", Some((|m| mean(&m.e2el), 2, Better::Lower))),
    ("E2EL p50", Some((|m| pct(&m.e2el, 50.0), 2, Better::Lower))),
    ("E2EL p99", Some((|m| pct(&m.e2el, 99.0), 2, Better::Lower))),
    ("Response view (ms, from intended)", None),
    ("TTFT p50", Some((|m| pct(&m.response_ttft, 50.0), 2, Better::Lower))),
    ("TTFT p99", Some((|m| pct(&m.response_ttft, 99.0), 2, Better::Lower))),
    ("E2EL p99", Some((|m| pct(&m.response_e2el, 99.0), 2, Better::Lower))),
    ("queue time p50", Some((|m| pct(&m.queue_time, 50.0), 2, Better::Lower))),
    ("queue time p99", Some((|m| pct(&m.queue_time, 99.0), 2, Better::Lower))),
];

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
    for (name, row) in ROWS {
        let Some((get, decimals, better)) = row else {
            let _ =
                writeln!(o, "<tr class=\"group\"><td colspan=\"{}\">{}</td></tr>", runs.len() + 1, esc(name));
            continue;
        };
        let values: Vec<Option<f64>> = runs.iter().map(|r| get(&r.metrics)).collect();
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
    o.push_str("</div>");
    if let Some(note) = r.header.environment.as_ref().and_then(|e| e.note.as_ref()) {
        let _ = write!(o, "<p class=\"sub\">{}</p>", esc(note));
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
        let _ = writeln!(
            o,
            "<p class=\"sub\">{} run(s), {} request records. Every number and chart is computed from the \
             request records. Hover a chart for values; click a legend entry to hide a curve.</p>",
            runs.len(),
            runs.iter().map(|r| r.records.len()).sum::<usize>()
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

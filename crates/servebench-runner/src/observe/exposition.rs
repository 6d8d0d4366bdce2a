//! One scrape of a Prometheus `/metrics`, every series kept: scalar samples with their kind
//! (from `# TYPE`, else by name: `_total` is a counter, the rest gauges) and histograms grouped
//! by family and label set, with the quantile of a histogram as Prometheus's
//! `histogram_quantile` computes it (docs/metrics.md, "Server metrics of every engine").

use servebench_core::prom::{parse_text, parse_types, Kind, PromSample};
use std::collections::{BTreeMap, HashMap};

/// Labels of a series, sorted by name.
pub type Labels = BTreeMap<String, String>;

/// A histogram of one label set: cumulative counts per upper bound (sorted, `+Inf` last), sum
/// and count.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Histo {
    pub buckets: Vec<(f64, f64)>,
    pub sum: f64,
    pub count: f64,
}

impl Histo {
    /// `self − earlier`, bucket by bucket (bounds of `self`; a bound `earlier` lacks counts 0):
    /// what was observed between the two scrapes. A counter reset (a count going down) gives
    /// `self` unchanged.
    pub fn since(&self, earlier: &Histo) -> Histo {
        if self.count < earlier.count {
            return self.clone();
        }
        let before = |le: f64| earlier.buckets.iter().find(|b| b.0 == le).map_or(0.0, |b| b.1);
        Histo {
            buckets: self.buckets.iter().map(|&(le, c)| (le, (c - before(le)).max(0.0))).collect(),
            sum: self.sum - earlier.sum,
            count: self.count - earlier.count,
        }
    }

    /// Adds `other`'s counts bound by bound (label sets of one family share bounds).
    pub(crate) fn add(&mut self, other: &Histo) {
        for &(le, c) in &other.buckets {
            match self.buckets.iter_mut().find(|b| b.0 == le) {
                Some(b) => b.1 += c,
                None => self.buckets.push((le, c)),
            }
        }
        self.buckets.sort_by(|a, b| a.0.total_cmp(&b.0));
        self.sum += other.sum;
        self.count += other.count;
    }

    /// The `q`-quantile (0..1) as `histogram_quantile`: the rank `q × count` located in the
    /// first bucket whose cumulative count reaches it, interpolated linearly between that
    /// bucket's lower bound (the previous bound, 0 for the first) and its upper bound; in the
    /// `+Inf` bucket, the highest finite bound. `None` without observations.
    pub fn quantile(&self, q: f64) -> Option<f64> {
        let total = self.buckets.last().map(|b| b.1).filter(|&t| t > 0.0)?;
        let rank = q * total;
        let (mut lo, mut below) = (0.0, 0.0);
        for &(le, c) in &self.buckets {
            if c >= rank {
                if le.is_infinite() {
                    return Some(lo);
                }
                if c == below {
                    return Some(le);
                }
                return Some(lo + (le - lo) * (rank - below) / (c - below));
            }
            lo = le;
            below = c;
        }
        Some(lo)
    }

    /// Mean observation (`sum / count`); `None` without observations.
    pub fn mean(&self) -> Option<f64> {
        (self.count > 0.0).then(|| self.sum / self.count)
    }
}

/// The kind a sample is reported under in the series file.
pub fn kind_name(kind: Option<Kind>) -> &'static str {
    kind.map_or("untyped", Kind::as_str)
}

/// The largest index [`Scrape::sum_by_index_label`] takes, exclusive: no drafter proposes 64
/// tokens a step; a stray `position="1000"` is not a position.
pub const MAX_INDEX_LABEL: usize = 64;

/// One parsed scrape.
#[derive(Debug, Clone, Default)]
pub struct Scrape {
    pub samples: Vec<PromSample>,
    kinds: HashMap<String, Kind>,
}

impl Scrape {
    /// Parses an exposition; errors name the first malformed line.
    pub fn parse(text: &str) -> Result<Scrape, String> {
        Ok(Scrape { samples: parse_text(text)?, kinds: parse_types(text).into_iter().collect() })
    }

    /// The family a histogram sample (`X_bucket`, `X_sum`, `X_count`) belongs to, when `X` is
    /// declared a histogram (or, undeclared, for `X_bucket` with an `le` label).
    fn histogram_family<'a>(&self, s: &'a PromSample) -> Option<&'a str> {
        for suffix in ["_bucket", "_sum", "_count"] {
            if let Some(base) = s.name.strip_suffix(suffix) {
                let declared = self.kinds.get(base) == Some(&Kind::Histogram);
                let undeclared_bucket = suffix == "_bucket"
                    && !self.kinds.contains_key(base)
                    && s.labels.iter().any(|l| l.0 == "le");
                if declared || undeclared_bucket {
                    return Some(base);
                }
            }
        }
        None
    }

    /// The kind of a sample: its family's declared kind, histogram for a histogram's parts,
    /// else counter for `_total` names; `None` (untyped) otherwise.
    pub fn kind_of(&self, s: &PromSample) -> Option<Kind> {
        if let Some(k) = self.kinds.get(&s.name) {
            return Some(*k);
        }
        if self.histogram_family(s).is_some() {
            return Some(Kind::Histogram);
        }
        s.name.ends_with("_total").then_some(Kind::Counter)
    }

    /// Sum over label sets of the finite samples named `name`; `None` when there is none.
    pub fn sum(&self, name: &str) -> Option<f64> {
        let mut found = None;
        for s in self.samples.iter().filter(|s| s.name == name && s.value.is_finite()) {
            *found.get_or_insert(0.0) += s.value;
        }
        found
    }

    /// The finite samples named `name` summed by the whole-number value of their `label`
    /// (index = that value), over the other labels — vLLM's `…_per_pos_total{position="N"}`.
    /// Empty when there is none, or when the indexes are not every one from 0 up (a gap would
    /// read as 0 %), or reach [`MAX_INDEX_LABEL`], or one has another value.
    pub fn sum_by_index_label(&self, name: &str, label: &str) -> Vec<f64> {
        let mut out: Vec<Option<f64>> = Vec::new();
        for s in self.samples.iter().filter(|s| s.name == name && s.value.is_finite()) {
            let index = s.labels.iter().find(|l| l.0 == label).and_then(|l| l.1.parse::<usize>().ok());
            let Some(i) = index.filter(|i| *i < MAX_INDEX_LABEL) else {
                return Vec::new();
            };
            if out.len() <= i {
                out.resize(i + 1, None);
            }
            *out[i].get_or_insert(0.0) += s.value;
        }
        out.into_iter().collect::<Option<Vec<f64>>>().unwrap_or_default()
    }

    /// Every histogram of the scrape: (family, labels without `le`) → histogram.
    pub fn histograms(&self) -> BTreeMap<(String, Labels), Histo> {
        let mut out: BTreeMap<(String, Labels), Histo> = BTreeMap::new();
        for s in &self.samples {
            let Some(family) = self.histogram_family(s) else { continue };
            let labels: Labels = s.labels.iter().filter(|l| l.0 != "le").cloned().collect();
            let h = out.entry((family.to_owned(), labels)).or_default();
            if s.name.ends_with("_bucket") {
                let le = s.labels.iter().find(|l| l.0 == "le").map(|l| l.1.as_str());
                let le = match le {
                    Some("+Inf") | Some("Inf") => f64::INFINITY,
                    Some(v) => match v.parse::<f64>() {
                        Ok(v) => v,
                        Err(_) => continue,
                    },
                    None => continue,
                };
                h.buckets.push((le, s.value));
            } else if s.name.ends_with("_sum") {
                h.sum = s.value;
            } else {
                h.count = s.value;
            }
        }
        for h in out.values_mut() {
            h.buckets.sort_by(|a, b| a.0.total_cmp(&b.0));
        }
        out
    }

    /// The histogram `family`, its label sets merged; `None` when the scrape has no bucket of it.
    pub fn histogram(&self, family: &str) -> Option<Histo> {
        let mut merged: Option<Histo> = None;
        for ((f, _), h) in self.histograms() {
            if f == family && !h.buckets.is_empty() {
                merged.get_or_insert_with(Histo::default).add(&h);
            }
        }
        merged
    }
}

/// The key of a series in maps: its name and labels, in label-name order (a label set is
/// unordered: an exporter that writes them in another order names the same series).
pub fn series_key(s: &PromSample) -> String {
    let mut labels: Vec<&(String, String)> = s.labels.iter().collect();
    labels.sort_unstable();
    let mut key = s.name.clone();
    for (k, v) in labels {
        key.push('\u{1f}');
        key.push_str(k);
        key.push('=');
        key.push_str(v);
    }
    key
}

#[cfg(test)]
mod tests {
    use super::*;

    const TEXT: &str = "# TYPE t histogram\n\
t_bucket{m=\"a\",le=\"0.1\"} 2\nt_bucket{m=\"a\",le=\"0.5\"} 6\nt_bucket{m=\"a\",le=\"+Inf\"} 8\n\
t_sum{m=\"a\"} 3.2\nt_count{m=\"a\"} 8\n\
t_bucket{m=\"b\",le=\"0.1\"} 0\nt_bucket{m=\"b\",le=\"0.5\"} 2\nt_bucket{m=\"b\",le=\"+Inf\"} 2\n\
t_sum{m=\"b\"} 0.6\nt_count{m=\"b\"} 2\n\
# TYPE g gauge\ng 1\nreq_total 5\nplain 7\nu_bucket{le=\"1\"} 1\n";

    #[test]
    fn histogram_quantile_interpolates_within_the_bucket_by_hand() {
        let h = Scrape::parse(TEXT).unwrap().histogram("t").unwrap();
        // Merged: ≤0.1: 2, ≤0.5: 8, +Inf: 10; sum 3.8, count 10.
        assert_eq!(h.buckets, vec![(0.1, 2.0), (0.5, 8.0), (f64::INFINITY, 10.0)]);
        assert_eq!(h.mean(), Some(0.38));
        // p50: rank 5 in (0.1, 0.5]: 0.1 + 0.4 × (5 − 2) / (8 − 2) = 0.3.
        assert!((h.quantile(0.5).unwrap() - 0.3).abs() < 1e-12);
        // p10: rank 1 in the first bucket: 0 + 0.1 × 1 / 2 = 0.05.
        assert!((h.quantile(0.1).unwrap() - 0.05).abs() < 1e-12);
        // p99: rank 9.9 in +Inf: the highest finite bound.
        assert_eq!(h.quantile(0.99), Some(0.5));
        assert_eq!(Histo::default().quantile(0.5), None);
    }

    #[test]
    fn an_interval_is_the_difference_of_two_scrapes_and_a_reset_restarts_it() {
        let a = Histo { buckets: vec![(0.1, 1.0), (f64::INFINITY, 2.0)], sum: 0.3, count: 2.0 };
        let b = Histo { buckets: vec![(0.1, 4.0), (f64::INFINITY, 6.0)], sum: 1.3, count: 6.0 };
        let d = b.since(&a);
        assert_eq!(d.buckets, vec![(0.1, 3.0), (f64::INFINITY, 4.0)]);
        assert_eq!((d.count, (d.sum * 10.0).round() / 10.0), (4.0, 1.0));
        assert_eq!(a.since(&b), a);
    }

    #[test]
    fn kinds_come_from_type_lines_else_from_names() {
        let s = Scrape::parse(TEXT).unwrap();
        let kind = |name: &str| s.samples.iter().find(|x| x.name == name).and_then(|x| s.kind_of(x));
        assert_eq!(kind("g"), Some(Kind::Gauge));
        assert_eq!(kind("t_sum"), Some(Kind::Histogram));
        assert_eq!(kind("req_total"), Some(Kind::Counter));
        assert_eq!(kind("plain"), None);
        assert_eq!(kind("u_bucket"), Some(Kind::Histogram));
        assert_eq!(s.histograms().len(), 3);
        assert_eq!(s.sum("t_count"), Some(10.0));
    }
}

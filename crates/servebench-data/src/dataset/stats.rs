//! Statistics of a workload, printed by `--dry-run`: request count and the distribution of
//! prompt and expected output lengths (min, mean, p50, p99, max).

use servebench_core::{RequestSpec, Workload};

/// Distribution of one length over the workload (tokens).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct LengthStats {
    pub min: u32,
    pub mean: f64,
    pub p50: u32,
    pub p99: u32,
    pub max: u32,
}

impl LengthStats {
    /// Nearest-rank percentiles (the smallest value with at least p% of values at or below).
    pub fn of(values: &mut [u32]) -> Self {
        if values.is_empty() {
            return LengthStats::default();
        }
        values.sort_unstable();
        let n = values.len();
        let rank = |p: f64| values[((p / 100.0 * n as f64).ceil() as usize).clamp(1, n) - 1];
        LengthStats {
            min: values[0],
            mean: values.iter().map(|&v| f64::from(v)).sum::<f64>() / n as f64,
            p50: rank(50.0),
            p99: rank(99.0),
            max: values[n - 1],
        }
    }
}

/// Statistics of a workload.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct DatasetStats {
    pub requests: usize,
    pub prompt: LengthStats,
    pub output: LengthStats,
    /// Requests with multimodal parts, and the parts in total.
    pub multimodal_requests: usize,
    pub multimodal_items: usize,
}

impl DatasetStats {
    /// Statistics of requests without multimodal parts, from their prompt and output lengths
    /// (lazy workloads: their lengths are known without building the prompts).
    pub fn of_lengths(mut prompt: Vec<u32>, mut output: Vec<u32>) -> Self {
        DatasetStats {
            requests: prompt.len(),
            prompt: LengthStats::of(&mut prompt),
            output: LengthStats::of(&mut output),
            multimodal_requests: 0,
            multimodal_items: 0,
        }
    }

    pub fn of(w: &Workload) -> Self {
        let mut p: Vec<u32> = w.requests.iter().map(|r| r.prompt_tokens).collect();
        let mut o: Vec<u32> = w.requests.iter().map(|r| r.expected_output_tokens).collect();
        let mm = w.requests.iter().map(RequestSpec::media_items).filter(|&n| n > 0);
        DatasetStats {
            requests: w.len(),
            prompt: LengthStats::of(&mut p),
            output: LengthStats::of(&mut o),
            multimodal_requests: mm.clone().count(),
            multimodal_items: mm.sum(),
        }
    }

    /// The table `--dry-run` prints.
    pub fn render(&self) -> String {
        let row = |name: &str, s: &LengthStats| {
            format!("{name:<24}{:>10}{:>12.1}{:>10}{:>10}{:>10}\n", s.min, s.mean, s.p50, s.p99, s.max)
        };
        let mut out = format!("{:<24}{:>10}\n", "Requests:", self.requests);
        out.push_str(&format!(
            "{:<24}{:>10}{:>12}{:>10}{:>10}{:>10}\n",
            "Tokens", "min", "mean", "p50", "p99", "max"
        ));
        out.push_str(&row("Prompt", &self.prompt));
        out.push_str(&row("Expected output", &self.output));
        if self.multimodal_requests > 0 {
            out.push_str(&format!(
                "{:<24}{:>10} ({} requests)\n",
                "Multimodal items:", self.multimodal_items, self.multimodal_requests
            ));
        }
        out
    }
}

//! GPU telemetry: readings from a DCGM exporter's `/metrics` or from `nvidia-smi` on this host,
//! and the energy arithmetic over the measured phase (docs/metrics.md, "GPU telemetry and
//! energy"): the energy counter's difference when the source has one, else the trapezoidal
//! integral of the power samples.

use servebench_core::prom::PromSample;
use servebench_report::sections::server_endpoints::{GpuEnergy, GpuRow};
use std::collections::BTreeMap;

/// DCGM field names read (dcgm-exporter's default counters).
pub mod dcgm {
    /// Power draw, W (gauge).
    pub const POWER: &str = "DCGM_FI_DEV_POWER_USAGE";
    /// Energy since the driver loaded, mJ (counter).
    pub const ENERGY: &str = "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION";
    /// Utilisation, % (gauge).
    pub const UTIL: &str = "DCGM_FI_DEV_GPU_UTIL";
    /// Frame buffer used, MiB (gauge).
    pub const FB_USED: &str = "DCGM_FI_DEV_FB_USED";
    /// SM clock, MHz (gauge).
    pub const SM_CLOCK: &str = "DCGM_FI_DEV_SM_CLOCK";
}

/// The `nvidia-smi --query-gpu` fields read, in this order.
pub const NVIDIA_SMI_QUERY: &str = "index,uuid,power.draw,utilization.gpu,memory.used,clocks.sm";

/// One GPU's reading at `t_s`.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct GpuReading {
    pub t_s: f64,
    /// Read at the phase's baseline poll (before the first request) or its final poll (after
    /// the last ended): left out of the means of the load (utilisation, clock).
    pub phase_edge: bool,
    pub power_w: Option<f64>,
    pub energy_mj: Option<f64>,
    pub util_pct: Option<f64>,
    pub fb_used_mib: Option<f64>,
    pub sm_clock_mhz: Option<f64>,
}

/// A GPU's identity: host, index, UUID.
pub type GpuId = (String, String, Option<String>);

fn label<'a>(s: &'a PromSample, key: &str) -> Option<&'a str> {
    s.labels.iter().find(|l| l.0 == key).map(|l| l.1.as_str())
}

/// The readings of a DCGM exposition, per GPU (`Hostname` label, else `host`; `gpu`; `UUID`).
pub fn parse_dcgm(samples: &[PromSample], host: &str, t_s: f64) -> BTreeMap<GpuId, GpuReading> {
    let mut out: BTreeMap<GpuId, GpuReading> = BTreeMap::new();
    for s in samples.iter().filter(|s| s.value.is_finite()) {
        let field: fn(&mut GpuReading) -> &mut Option<f64> = match s.name.as_str() {
            dcgm::POWER => |r| &mut r.power_w,
            dcgm::ENERGY => |r| &mut r.energy_mj,
            dcgm::UTIL => |r| &mut r.util_pct,
            dcgm::FB_USED => |r| &mut r.fb_used_mib,
            dcgm::SM_CLOCK => |r| &mut r.sm_clock_mhz,
            _ => continue,
        };
        let id = (
            label(s, "Hostname").unwrap_or(host).to_owned(),
            label(s, "gpu").unwrap_or("0").to_owned(),
            label(s, "UUID").map(str::to_owned),
        );
        let r = out.entry(id).or_insert_with(|| GpuReading { t_s, ..GpuReading::default() });
        *field(r) = Some(s.value);
    }
    out
}

/// The readings of `nvidia-smi --query-gpu=NVIDIA_SMI_QUERY --format=csv,noheader,nounits`
/// (`[N/A]` and unparsable fields are `None`); lines with fewer fields are skipped.
pub fn parse_nvidia_smi(csv: &str, t_s: f64) -> BTreeMap<GpuId, GpuReading> {
    let mut out = BTreeMap::new();
    for line in csv.lines() {
        let f: Vec<&str> = line.split(',').map(str::trim).collect();
        if f.len() < 6 || f[0].is_empty() {
            continue;
        }
        let num = |i: usize| f[i].parse::<f64>().ok().filter(|v| v.is_finite());
        let reading = GpuReading {
            t_s,
            phase_edge: false,
            power_w: num(2),
            energy_mj: None,
            util_pct: num(3),
            fb_used_mib: num(4),
            sm_clock_mhz: num(5),
        };
        out.insert(("localhost".to_owned(), f[0].to_owned(), Some(f[1].to_owned())), reading);
    }
    out
}

/// Energy (J) over the readings and how it was obtained: with at least two energy-counter
/// readings, the sum of the counter's increases (a decrease beyond float noise is a reset: its
/// new reading counts) ÷ 1000 over [first, last] counter reading; else with at least two power readings,
/// Σ (P_i + P_{i+1}) / 2 × (t_{i+1} − t_i) over [first, last] power reading. Returns (energy,
/// method, window seconds); `None` otherwise.
pub fn energy(readings: &[GpuReading]) -> Option<(f64, &'static str, f64)> {
    let counter: Vec<(f64, f64)> = readings.iter().filter_map(|r| Some((r.t_s, r.energy_mj?))).collect();
    if counter.len() >= 2 {
        let mj: f64 = counter.windows(2).map(|w| super::endpoint_track::increase(w[0].1, w[1].1)).sum();
        return Some((mj / 1000.0, "energy_counter", counter[counter.len() - 1].0 - counter[0].0));
    }
    let power: Vec<(f64, f64)> = readings.iter().filter_map(|r| Some((r.t_s, r.power_w?))).collect();
    if power.len() >= 2 {
        let j: f64 = power.windows(2).map(|w| (w[0].1 + w[1].1) / 2.0 * (w[1].0 - w[0].0)).sum();
        return Some((j, "power_integral", power[power.len() - 1].0 - power[0].0));
    }
    None
}

/// The readings taken while the load ran (not at the phase's edges).
fn in_load(readings: &[GpuReading]) -> impl Iterator<Item = &GpuReading> {
    readings.iter().filter(|r| !r.phase_edge)
}

fn mean(v: impl Iterator<Item = f64>) -> Option<f64> {
    let (n, s) = v.fold((0u64, 0.0), |(n, s), x| (n + 1, s + x));
    (n > 0).then(|| s / n as f64)
}

/// One GPU's row from its readings.
pub fn gpu_row(id: &GpuId, readings: &[GpuReading]) -> GpuRow {
    let e = energy(readings);
    GpuRow {
        host: id.0.clone(),
        gpu: id.1.clone(),
        uuid: id.2.clone(),
        energy_j: e.map(|e| e.0),
        method: e.map(|e| e.1.to_owned()),
        avg_power_w: e.and_then(|(j, _, w)| (w > 0.0).then(|| j / w)),
        window_s: e.map(|e| e.2),
        mean_util_pct: mean(in_load(readings).filter_map(|r| r.util_pct)),
        max_fb_used_mib: readings.iter().filter_map(|r| r.fb_used_mib).reduce(f64::max),
        mean_sm_clock_mhz: mean(in_load(readings).filter_map(|r| r.sm_clock_mhz)),
        samples: readings.len() as u64,
        power_series: readings.iter().filter_map(|r| Some([r.t_s, r.power_w?])).collect(),
    }
}

/// The `gpu_energy` block from the GPUs' rows and the run's output tokens; `None` when no GPU
/// has an energy figure. Total = Σ energy_j; average power = Σ avg_power_w; J/token = total ÷
/// output tokens (`None` without tokens); tokens/J = output tokens ÷ total (`None` when the
/// total is 0).
pub fn gpu_energy(rows: Vec<GpuRow>, output_tokens: u64) -> Option<GpuEnergy> {
    let with: Vec<&GpuRow> = rows.iter().filter(|r| r.energy_j.is_some()).collect();
    if with.is_empty() {
        return None;
    }
    let total: f64 = with.iter().filter_map(|r| r.energy_j).sum();
    let methods: std::collections::BTreeSet<&str> = with.iter().filter_map(|r| r.method.as_deref()).collect();
    let method = if methods.len() == 1 { methods.into_iter().next().unwrap_or_default() } else { "mixed" };
    let powers: Vec<f64> = with.iter().filter_map(|r| r.avg_power_w).collect();
    Some(GpuEnergy {
        method: method.to_owned(),
        total_energy_j: total,
        avg_power_w: (powers.len() == with.len()).then(|| powers.iter().sum()),
        output_tokens,
        joules_per_output_token: (output_tokens > 0).then(|| total / output_tokens as f64),
        output_tokens_per_joule: (total > 0.0).then(|| output_tokens as f64 / total),
        gpus: rows,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use servebench_core::prom::parse_text;

    fn r(t_s: f64, power: Option<f64>, energy_mj: Option<f64>) -> GpuReading {
        GpuReading { t_s, power_w: power, energy_mj, ..GpuReading::default() }
    }

    #[test]
    fn energy_is_the_counter_difference_else_the_trapezoids_by_hand() {
        // Counter: 1,000,000 mJ → 1,250,000 → 1,600,000 mJ: 600 J over 2 s.
        let c = [
            r(0.0, Some(100.0), Some(1e6)),
            r(1.0, Some(300.0), Some(1.25e6)),
            r(2.0, Some(400.0), Some(1.6e6)),
        ];
        assert_eq!(energy(&c), Some((600.0, "energy_counter", 2.0)));
        // Power only: (100+300)/2×1 + (300+400)/2×1 = 200 + 350 = 550 J.
        let p: Vec<GpuReading> = c.iter().map(|x| GpuReading { energy_mj: None, ..x.clone() }).collect();
        assert_eq!(energy(&p), Some((550.0, "power_integral", 2.0)));
        // A counter reset (driver reload) counts the new reading: 250 + 100 mJ = 0.35 J.
        let reset = [r(0.0, None, Some(1000.0)), r(1.0, None, Some(1250.0)), r(2.0, None, Some(100.0))];
        assert_eq!(energy(&reset).map(|e| e.0), Some(0.35));
        assert_eq!(energy(&c[..1]), None);
    }

    #[test]
    fn gpu_energy_totals_and_per_token_figures_by_hand() {
        let id = ("h".to_owned(), "0".to_owned(), None);
        let a = gpu_row(&id, &[r(0.0, Some(100.0), Some(0.0)), r(2.0, Some(100.0), Some(400_000.0))]);
        assert_eq!((a.energy_j, a.avg_power_w, a.window_s), (Some(400.0), Some(200.0), Some(2.0)));
        let b = gpu_row(
            &("h".into(), "1".into(), None),
            &[r(0.0, Some(50.0), Some(0.0)), r(2.0, Some(50.0), Some(200_000.0))],
        );
        let e = gpu_energy(vec![a, b], 300).unwrap();
        assert_eq!(
            (e.total_energy_j, e.avg_power_w, e.method.as_str()),
            (600.0, Some(300.0), "energy_counter")
        );
        assert_eq!((e.joules_per_output_token, e.output_tokens_per_joule), (Some(2.0), Some(0.5)));
        assert_eq!(gpu_energy(vec![], 300), None);
        let none = gpu_energy(vec![gpu_row(&id, &[r(0.0, Some(1.0), None)])], 0);
        assert_eq!(none, None, "one reading: no energy, so no block (null, never 0)");
    }

    /// Pins the load means leaving out the phase's idle edge readings, while energy spans them.
    #[test]
    fn utilisation_and_clock_means_are_over_the_load_energy_over_the_phase() {
        let at = |t_s: f64, util: f64, phase_edge: bool| GpuReading {
            t_s,
            phase_edge,
            util_pct: Some(util),
            sm_clock_mhz: Some(util * 10.0),
            energy_mj: Some(t_s * 1e5),
            ..GpuReading::default()
        };
        let row = gpu_row(
            &("h".into(), "0".into(), None),
            &[at(0.0, 0.0, true), at(1.0, 80.0, false), at(2.0, 90.0, false), at(2.5, 0.0, true)],
        );
        assert_eq!((row.mean_util_pct, row.mean_sm_clock_mhz), (Some(85.0), Some(850.0)));
        assert_eq!((row.energy_j, row.window_s), (Some(250.0), Some(2.5)));
        let edges_only = gpu_row(&("h".into(), "0".into(), None), &[at(0.0, 0.0, true), at(0.5, 0.0, true)]);
        assert_eq!(edges_only.mean_util_pct, None);
    }

    #[test]
    fn dcgm_and_nvidia_smi_readings_parse_per_gpu() {
        let text = "DCGM_FI_DEV_POWER_USAGE{gpu=\"0\",UUID=\"GPU-a\",Hostname=\"n1\"} 250.5\n\
                    DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION{gpu=\"0\",UUID=\"GPU-a\",Hostname=\"n1\"} 123456\n\
                    DCGM_FI_DEV_POWER_USAGE{gpu=\"1\",UUID=\"GPU-b\",Hostname=\"n1\"} 90\n\
                    DCGM_FI_DEV_FB_USED{gpu=\"1\",UUID=\"GPU-b\",Hostname=\"n1\"} 1024\nother 1\n";
        let g = parse_dcgm(&parse_text(text).unwrap(), "x", 1.5);
        assert_eq!(g.len(), 2);
        let a = &g[&("n1".into(), "0".into(), Some("GPU-a".into()))];
        assert_eq!((a.t_s, a.power_w, a.energy_mj), (1.5, Some(250.5), Some(123456.0)));
        let s = parse_nvidia_smi("0, GPU-x, 71.20, 35, 2048, 1410\n1, GPU-y, [N/A], 0, 10, 210\nbad\n", 2.0);
        let x = &s[&("localhost".into(), "0".into(), Some("GPU-x".into()))];
        assert_eq!(
            (x.power_w, x.util_pct, x.fb_used_mib, x.sm_clock_mhz),
            (Some(71.2), Some(35.0), Some(2048.0), Some(1410.0))
        );
        assert_eq!(s[&("localhost".into(), "1".into(), Some("GPU-y".into()))].power_w, None);
    }
}

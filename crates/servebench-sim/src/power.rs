//! Simulated GPUs behind a DCGM exporter (`--sim-gpus N`, served on `/dcgm/metrics`): each GPU
//! draws `min(idle + per_request × running, max)` watts, `running` being the requests in the
//! running batch, and its energy counter (`DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION`, mJ) is the
//! exact integral of that piecewise-constant power: every change of `running` closes a segment
//! of constant power, and a scrape adds the open segment up to its instant. So a client's
//! energy figure can be checked against a known integral (docs/simulator.md, "GPUs").

use servebench_core::prom::{self, Kind};
use std::sync::Mutex;
use std::time::Instant;

/// The power model of each simulated GPU.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct GpuPowerConfig {
    /// GPUs (all draw the same power: one tensor-parallel replica).
    pub gpus: u32,
    /// Watts with nothing running.
    pub idle_w: f64,
    /// Watts added per running request.
    pub per_request_w: f64,
    /// Cap, watts.
    pub max_w: f64,
}

impl Default for GpuPowerConfig {
    fn default() -> Self {
        GpuPowerConfig { gpus: 1, idle_w: 60.0, per_request_w: 25.0, max_w: 700.0 }
    }
}

impl GpuPowerConfig {
    /// Power of one GPU with `running` requests, W.
    pub fn power_w(&self, running: i64) -> f64 {
        (self.idle_w + self.per_request_w * running.max(0) as f64).min(self.max_w)
    }
}

#[derive(Debug)]
struct State {
    /// Start of the open segment.
    since: Instant,
    running: i64,
    /// Energy of the closed segments, J (per GPU).
    energy_j: f64,
}

/// The GPUs' power and energy.
#[derive(Debug)]
pub(crate) struct GpuPower {
    pub(crate) config: GpuPowerConfig,
    state: Mutex<State>,
}

impl GpuPower {
    pub(crate) fn new(config: GpuPowerConfig, now: Instant) -> GpuPower {
        GpuPower { config, state: Mutex::new(State { since: now, running: 0, energy_j: 0.0 }) }
    }

    /// `running` became `n` at `now`: closes the segment of constant power.
    pub(crate) fn set_running_at(&self, n: i64, now: Instant) {
        let mut s = self.state.lock().unwrap_or_else(|e| e.into_inner());
        let dt = now.saturating_duration_since(s.since).as_secs_f64();
        s.energy_j += self.config.power_w(s.running) * dt;
        s.since = now.max(s.since);
        s.running = n;
    }

    /// (power W, energy J) of each GPU at `now`.
    pub(crate) fn reading_at(&self, now: Instant) -> (f64, f64) {
        let s = self.state.lock().unwrap_or_else(|e| e.into_inner());
        let p = self.config.power_w(s.running);
        (p, s.energy_j + p * now.saturating_duration_since(s.since).as_secs_f64())
    }

    /// The DCGM exposition at `now`: power (W), energy (mJ), utilisation (% of the cap drawn
    /// above idle), frame buffer used (MiB) and SM clock (MHz) per GPU, labelled like
    /// dcgm-exporter (`gpu`, `UUID`, `device`, `modelName`, `Hostname`).
    pub(crate) fn render_at(&self, now: Instant) -> String {
        let (p, e) = self.reading_at(now);
        let c = &self.config;
        let util =
            if c.max_w > c.idle_w { ((p - c.idle_w) / (c.max_w - c.idle_w) * 100.0).round() } else { 0.0 };
        let mut out = String::with_capacity(1024);
        let fields: [(&str, Kind, &str, f64); 5] = [
            (
                "DCGM_FI_DEV_SM_CLOCK",
                Kind::Gauge,
                "SM clock frequency (in MHz).",
                if util > 0.0 { 1980.0 } else { 345.0 },
            ),
            ("DCGM_FI_DEV_GPU_UTIL", Kind::Gauge, "GPU utilization (in %).", util),
            ("DCGM_FI_DEV_FB_USED", Kind::Gauge, "Framebuffer memory used (in MiB).", 70_000.0),
            ("DCGM_FI_DEV_POWER_USAGE", Kind::Gauge, "Power draw (in W).", p),
            (
                "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION",
                Kind::Counter,
                "Total energy consumption since boot (in mJ).",
                e * 1000.0,
            ),
        ];
        for (name, kind, help, v) in fields {
            prom::family(&mut out, name, kind, help);
            for g in 0..c.gpus {
                let (gpu, uuid) = (g.to_string(), format!("GPU-5e5e0000-0000-4000-8000-{g:012}"));
                let device = format!("nvidia{g}");
                let labels = [
                    ("gpu", gpu.as_str()),
                    ("UUID", uuid.as_str()),
                    ("device", device.as_str()),
                    ("modelName", "Simulated GPU"),
                    ("Hostname", "servebench-sim"),
                ];
                prom::sample(&mut out, name, &labels, v);
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn the_energy_counter_is_the_exact_integral_of_the_power_by_hand() {
        let c = GpuPowerConfig { gpus: 2, idle_w: 50.0, per_request_w: 100.0, max_w: 300.0 };
        assert_eq!((c.power_w(0), c.power_w(1), c.power_w(5)), (50.0, 150.0, 300.0));
        let t0 = Instant::now();
        let at = |ms: u64| t0 + Duration::from_millis(ms);
        let g = GpuPower::new(c, t0);
        // 0–1 s idle (50 J), 1–3 s 1 request (150 W × 2 s = 300 J), 3–3.5 s 4 requests (capped
        // 300 W × 0.5 s = 150 J), then idle: at 4 s + 50 W × 0.5 s = 25 J → 525 J.
        g.set_running_at(1, at(1000));
        g.set_running_at(4, at(3000));
        g.set_running_at(0, at(3500));
        let (p, e) = g.reading_at(at(4000));
        assert_eq!(p, 50.0);
        assert!((e - 525.0).abs() < 1e-9, "{e}");
        let text = g.render_at(at(4000));
        assert!(text.contains("# TYPE DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION counter\n"), "{text}");
        assert!(
            text.contains(
                "DCGM_FI_DEV_POWER_USAGE{gpu=\"1\",UUID=\"GPU-5e5e0000-0000-4000-8000-000000000001\""
            ),
            "{text}"
        );
        assert!(text.contains("Hostname=\"servebench-sim\"} 525000\n"), "{text}");
        // Each GPU is its own device, as dcgm-exporter labels them (all were `nvidia0`).
        assert!(
            text.contains("gpu=\"1\",UUID=\"GPU-5e5e0000-0000-4000-8000-000000000001\",device=\"nvidia1\""),
            "{text}"
        );
    }
}

//! The host a run (or a report) was produced on: CPU model, cores, kernel, clocksource, tool
//! version. Gathering reads `/proc` and `/sys` and is kept apart from rendering so reports built
//! in tests use fixed values.

use std::path::Path;

/// Where the clocksource of the kernel is read from.
pub const CLOCKSOURCE_PATH: &str = "/sys/devices/system/clocksource/clocksource0/current_clocksource";

/// Facts about the host. `None` where the host did not tell.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Environment {
    /// CPU model name (`/proc/cpuinfo`).
    pub cpu_model: Option<String>,
    /// Cores available to this process.
    pub cores: Option<usize>,
    /// Kernel release (`/proc/sys/kernel/osrelease`).
    pub kernel: Option<String>,
    /// Kernel clocksource (`tsc` is what timing wants; `hpet`/`xen`/`kvm-clock` are slower).
    pub clocksource: Option<String>,
    /// servebench version.
    pub tool_version: String,
    /// Operating system (`std::env::consts::OS` / architecture).
    pub os: String,
    /// Caveat shown with the environment, e.g. that it is the host that rendered the report
    /// rather than the one that ran the benchmark.
    pub note: Option<String>,
}

impl Environment {
    /// The facts as `(name, value)` rows for display (missing values as `unknown`).
    pub fn rows(&self) -> Vec<(String, String)> {
        let unknown = || "unknown".to_string();
        vec![
            ("servebench".into(), self.tool_version.clone()),
            ("OS".into(), self.os.clone()),
            ("kernel".into(), self.kernel.clone().unwrap_or_else(unknown)),
            ("CPU".into(), self.cpu_model.clone().unwrap_or_else(unknown)),
            ("cores".into(), self.cores.map_or_else(unknown, |c| c.to_string())),
            ("clocksource".into(), self.clocksource.clone().unwrap_or_else(unknown)),
        ]
    }

    /// Warnings about the host that affect timing accuracy (a non-TSC clocksource).
    pub fn warnings(&self) -> Vec<String> {
        match self.clocksource.as_deref() {
            Some(cs) if cs != "tsc" && cs != "arch_sys_counter" => vec![format!(
                "clocksource is '{cs}', not 'tsc': reading the clock is slower and timestamps may be coarser"
            )],
            _ => Vec::new(),
        }
    }
}

/// Reads the environment of this host (never fails; unknown values are `None`).
pub fn gather_environment() -> Environment {
    let read = |p: &str| std::fs::read_to_string(Path::new(p)).ok();
    Environment {
        cpu_model: read("/proc/cpuinfo").as_deref().and_then(cpu_model_from_cpuinfo),
        cores: std::thread::available_parallelism().ok().map(usize::from),
        kernel: read("/proc/sys/kernel/osrelease").map(|s| s.trim().to_string()).filter(|s| !s.is_empty()),
        clocksource: read(CLOCKSOURCE_PATH).map(|s| s.trim().to_string()).filter(|s| !s.is_empty()),
        tool_version: env!("CARGO_PKG_VERSION").to_string(),
        os: format!("{} {}", std::env::consts::OS, std::env::consts::ARCH),
        note: None,
    }
}

/// The CPU model from `/proc/cpuinfo` text: `model name` (x86), else `Model`/`Hardware`/`cpu`
/// (ARM, POWER). `None` if absent.
pub fn cpu_model_from_cpuinfo(text: &str) -> Option<String> {
    for key in ["model name", "Model", "Hardware", "cpu model", "cpu"] {
        let found = text.lines().find_map(|l| {
            let (k, v) = l.split_once(':')?;
            (k.trim() == key && !v.trim().is_empty()).then(|| v.trim().to_string())
        });
        if found.is_some() {
            return found;
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_model_parses_x86_and_arm() {
        let x86 = "processor\t: 0\nvendor_id\t: GenuineIntel\nmodel name\t: Intel(R) Xeon(R) CPU @ 2.20GHz\n";
        assert_eq!(cpu_model_from_cpuinfo(x86).as_deref(), Some("Intel(R) Xeon(R) CPU @ 2.20GHz"));
        let arm = "processor\t: 0\nBogoMIPS\t: 50.00\n\nModel\t: Raspberry Pi 4 Model B\n";
        assert_eq!(cpu_model_from_cpuinfo(arm).as_deref(), Some("Raspberry Pi 4 Model B"));
        assert_eq!(cpu_model_from_cpuinfo(""), None);
    }

    #[test]
    fn gathering_never_fails_and_warns_on_slow_clocksource() {
        let env = gather_environment();
        assert!(!env.tool_version.is_empty());
        assert_eq!(env.rows().len(), 6);
        let e = Environment { clocksource: Some("hpet".into()), ..Environment::default() };
        assert_eq!(e.warnings().len(), 1);
        let e = Environment { clocksource: Some("tsc".into()), ..Environment::default() };
        assert!(e.warnings().is_empty());
    }
}

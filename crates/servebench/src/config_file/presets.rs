//! Scenario presets: named, versioned workloads shipped in the binary (`presets/*.toml`).

use servebench_core::error::BenchError;

/// A shipped preset: `name@version` and its config file.
#[derive(Debug, Clone, Copy)]
pub struct Preset {
    pub name: &'static str,
    pub version: u32,
    pub text: &'static str,
}

impl Preset {
    /// `name@version`, the form to cite in reports.
    pub fn id(&self) -> String {
        format!("{}@{}", self.name, self.version)
    }

    /// The first comment line of the file: what the workload is.
    pub fn summary(&self) -> &'static str {
        self.text.lines().next().unwrap_or("").trim_start_matches('#').trim()
    }
}

/// Every preset, by name then version.
pub const PRESETS: &[Preset] = &[
    Preset { name: "agentic", version: 1, text: include_str!("../../presets/agentic@1.toml") },
    Preset {
        name: "chat-interactive",
        version: 1,
        text: include_str!("../../presets/chat-interactive@1.toml"),
    },
    Preset {
        name: "long-context-prefill",
        version: 1,
        text: include_str!("../../presets/long-context-prefill@1.toml"),
    },
    Preset {
        name: "throughput-batch",
        version: 1,
        text: include_str!("../../presets/throughput-batch@1.toml"),
    },
];

/// The preset `NAME@VERSION`, or the newest version of `NAME`.
pub fn find(spec: &str) -> Result<&'static Preset, BenchError> {
    let (name, version) = match spec.split_once('@') {
        Some((n, v)) => (n, v.parse::<u32>().ok()),
        None => (spec, None),
    };
    PRESETS
        .iter()
        .filter(|p| p.name == name && version.is_none_or(|v| v == p.version))
        .max_by_key(|p| p.version)
        .filter(|_| !spec.ends_with('@') && (spec.contains('@') == version.is_some()))
        .ok_or_else(|| BenchError::UnknownPreset {
            name: spec.to_string(),
            known: PRESETS.iter().map(Preset::id).collect::<Vec<_>>().join(", "),
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_name_picks_its_newest_version_and_a_versioned_name_that_one() {
        assert_eq!(find("chat-interactive").unwrap().id(), "chat-interactive@1");
        assert_eq!(find("chat-interactive@1").unwrap().id(), "chat-interactive@1");
    }

    #[test]
    fn an_unknown_preset_or_version_is_sb134() {
        assert_eq!(find("chat").unwrap_err().code().as_str(), "SB134");
        assert_eq!(find("chat-interactive@9").unwrap_err().code().as_str(), "SB134");
        assert_eq!(find("chat-interactive@x").unwrap_err().code().as_str(), "SB134");
    }

    #[test]
    fn every_preset_parses_and_validates_as_flags() {
        let cmd = super::super::argv::run_command();
        for p in PRESETS {
            let f = super::super::parse::parse(&p.id(), p.text).unwrap();
            super::super::argv::to_tokens(&cmd, &f).unwrap_or_else(|e| panic!("{}: {e}", p.id()));
            assert!(!p.summary().is_empty(), "{}", p.id());
        }
    }
}

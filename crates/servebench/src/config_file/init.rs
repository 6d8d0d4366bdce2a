//! `servebench config init`: a config file of every run flag, commented out at its default, with
//! its help, generated from the clap definitions (so it lists every flag there is).

use super::flags::{is_switch, NOT_IN_A_FILE as SKIP};
use std::fmt::Write as _;

/// The file: the preset's text (if any) uncommented, then every flag commented at its default.
pub fn template(cmd: &clap::Command, preset: Option<&super::presets::Preset>) -> String {
    let mut out = String::from(
        "# servebench config file (TOML; docs/config.md). Keys are run flags by long name;\n\
         # command-line flags override them. Uncomment a line to set it.\n",
    );
    if let Some(p) = preset {
        let _ = write!(out, "\n# ==== preset {} ====\n{}\n", p.id(), p.text.trim_end());
    }
    let mut heading = None;
    for arg in cmd.get_arguments() {
        let Some(long) = arg.get_long() else { continue };
        if SKIP.contains(&long) {
            continue;
        }
        let h = arg.get_help_heading().unwrap_or("Other");
        if heading != Some(h) {
            let _ = write!(out, "\n# ---- {h} ----\n");
            heading = Some(h);
        }
        for line in help_lines(arg) {
            let _ = writeln!(out, "# {line}");
        }
        let _ = writeln!(out, "# {long} = {}\n#", default_text(arg));
    }
    out
}

fn help_lines(arg: &clap::Arg) -> Vec<String> {
    let help = arg.get_long_help().or(arg.get_help()).map(ToString::to_string).unwrap_or_default();
    help.lines().map(str::trim_end).filter(|l| !l.is_empty()).map(|l| format!("  {l}")).collect()
}

/// The default as a TOML value, or a note that the flag has none.
fn default_text(arg: &clap::Arg) -> String {
    let defaults: Vec<String> =
        arg.get_default_values().iter().map(|v| v.to_string_lossy().into_owned()).collect();
    if is_switch(arg) {
        return "false".to_string();
    }
    match defaults.as_slice() {
        [] => "\"\"  # (unset by default)".to_string(),
        [one] => toml_value(one),
        many => format!("[{}]", many.iter().map(|v| toml_value(v)).collect::<Vec<_>>().join(", ")),
    }
}

fn toml_value(text: &str) -> String {
    let numeric = text.parse::<f64>().is_ok_and(f64::is_finite) || text == "inf";
    if numeric && !text.contains(',') {
        text.to_string()
    } else {
        toml_edit::Value::from(text).to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config_file::{argv::run_command, parse::parse};

    #[test]
    fn the_template_lists_every_run_flag_and_sets_none() {
        let cmd = run_command();
        let text = template(&cmd, None);
        for arg in cmd.get_arguments() {
            let Some(long) = arg.get_long() else { continue };
            if !SKIP.contains(&long) {
                assert!(text.contains(&format!("\n# {long} = ")), "{long} missing");
            }
        }
        assert!(parse("init.toml", &text).unwrap().entries.is_empty());
    }

    #[test]
    fn every_default_in_the_template_validates_when_uncommented() {
        let cmd = run_command();
        let text = template(&cmd, None);
        let uncommented: String = text
            .lines()
            .filter_map(|l| l.strip_prefix("# "))
            .filter(|l| l.contains(" = ") && !l.starts_with(' ') && !l.contains("(unset by default)"))
            .map(|l| format!("{l}\n"))
            .collect();
        let f = parse("init.toml", &uncommented).unwrap();
        assert!(f.entries.len() > 50, "{}", f.entries.len());
        crate::config_file::argv::to_tokens(&cmd, &f).unwrap();
    }

    #[test]
    fn a_preset_template_sets_the_presets_values() {
        let p = crate::config_file::presets::find("agentic").unwrap();
        let f = parse("init.toml", &template(&run_command(), Some(p))).unwrap();
        assert!(f.entries.iter().any(|e| e.key == "multi-turn"));
    }
}

//! `--otlp`, `--otlp-endpoint`, `--otlp-service-name`, `--otlp-timeout-seconds` into the
//! runner's `OtlpConfig` (None: no export).

use crate::cli::otel::OtelArgs;
use servebench_core::{BenchError, Result};
use servebench_runner::otel::{check_endpoint, OtlpConfig, DEFAULT_OTLP_ENDPOINT};

/// The standard variable naming the collector (used with `--otlp` when no `--otlp-endpoint`).
const ENDPOINT_VAR: &str = "OTEL_EXPORTER_OTLP_ENDPOINT";

/// The export settings, or None without `--otlp`/`--otlp-endpoint`. `env` reads a variable.
pub fn otlp_config(args: &OtelArgs, env: impl Fn(&str) -> Option<String>) -> Result<Option<OtlpConfig>> {
    if !args.otlp && args.otlp_endpoint.is_none() {
        return Ok(None);
    }
    let flag = if args.otlp_endpoint.is_some() { "--otlp-endpoint" } else { "--otlp" };
    if !cfg!(feature = "otel") {
        return Err(BenchError::OtlpNotBuilt { flag: flag.to_owned() });
    }
    let endpoint = match (&args.otlp_endpoint, env(ENDPOINT_VAR).filter(|v| !v.trim().is_empty())) {
        (Some(url), _) => check_endpoint("--otlp-endpoint", url)?,
        (None, Some(url)) => check_endpoint(ENDPOINT_VAR, &url)?,
        (None, None) => DEFAULT_OTLP_ENDPOINT.to_owned(),
    };
    let timeout = super::seconds_flag("--otlp-timeout-seconds", args.otlp_timeout_seconds)?;
    let service_name = args.otlp_service_name.trim().to_owned();
    if service_name.is_empty() {
        return Err(BenchError::config(
            "--otlp-service-name",
            "the name is empty",
            "pass a name such as servebench",
        ));
    }
    Ok(Some(OtlpConfig { endpoint, service_name, timeout }))
}

#[cfg(all(test, feature = "otel"))]
mod tests {
    use super::*;

    fn args(otlp: bool, endpoint: Option<&str>) -> OtelArgs {
        OtelArgs {
            otlp,
            otlp_endpoint: endpoint.map(str::to_owned),
            otlp_service_name: "servebench".into(),
            otlp_timeout_seconds: 10.0,
        }
    }

    #[test]
    fn no_export_without_the_flags_even_with_the_variable_set() {
        let env = |_: &str| Some("http://collector:4318".to_owned());
        assert_eq!(otlp_config(&args(false, None), env).unwrap(), None);
    }

    #[test]
    fn endpoint_from_flag_then_variable_then_default() {
        let env = |_: &str| Some("http://from-env:4318/".to_owned());
        let flag = otlp_config(&args(false, Some("http://flag:1")), env).unwrap().unwrap();
        assert_eq!(flag.endpoint, "http://flag:1");
        let var = otlp_config(&args(true, None), env).unwrap().unwrap();
        assert_eq!(var.endpoint, "http://from-env:4318");
        let none = otlp_config(&args(true, None), |_| None).unwrap().unwrap();
        assert_eq!(none.endpoint, DEFAULT_OTLP_ENDPOINT);
    }

    #[test]
    fn https_endpoint_and_zero_timeout_are_refused() {
        let e = otlp_config(&args(true, Some("https://c:4318")), |_| None).unwrap_err();
        assert_eq!(e.code().to_string(), "SB167");
        let mut a = args(true, None);
        a.otlp_timeout_seconds = 0.0;
        assert_eq!(otlp_config(&a, |_| None).unwrap_err().code().to_string(), "SB101");
    }
}

//! Headless Chromium for the HTML report tests: open a page, get the DOM after its scripts ran
//! and every message its scripts wrote to the console (uncaught exceptions included), or take
//! a screenshot.
//!
//! Chromium is required (`apt-get install -y chromium`): [`Chromium::find`] fails the test when
//! it is missing. `SERVEBENCH_CHROMIUM` overrides the binary; `SERVEBENCH_SKIP_BROWSER_TESTS=1`
//! skips explicitly (for machines without a browser): `find` then returns `None`.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

/// Generous bound on one browser invocation, only to avoid hanging CI (not a measurement).
pub const BROWSER_TIMEOUT: Duration = Duration::from_secs(180);

/// A Chromium binary.
#[derive(Debug, Clone)]
pub struct Chromium {
    bin: PathBuf,
}

/// What a page left after its scripts ran.
#[derive(Debug)]
pub struct Page {
    /// The serialised DOM (`--dump-dom`).
    pub dom: String,
    /// The page's console messages (`console.*` and uncaught exceptions), one per entry, as
    /// Chromium logs them (`…:CONSOLE…] "message", source: URL (line)`).
    pub console: Vec<String>,
    /// Chromium's whole stderr, for failure messages.
    pub stderr: String,
}

impl Chromium {
    /// `/usr/bin/chromium` (or `SERVEBENCH_CHROMIUM`); `None` only when
    /// `SERVEBENCH_SKIP_BROWSER_TESTS=1`. Panics with the install command when it is missing.
    pub fn find() -> Option<Chromium> {
        if std::env::var_os("SERVEBENCH_SKIP_BROWSER_TESTS").is_some_and(|v| v == "1") {
            return None;
        }
        let bin = std::env::var_os("SERVEBENCH_CHROMIUM")
            .map_or_else(|| PathBuf::from("/usr/bin/chromium"), PathBuf::from);
        assert!(
            bin.exists(),
            "{} not found: the HTML report test needs headless Chromium. Install it with \
             `apt-get install -y chromium` (or set SERVEBENCH_CHROMIUM, or SERVEBENCH_SKIP_BROWSER_TESTS=1 to skip)",
            bin.display()
        );
        Some(Chromium { bin })
    }

    /// Runs headless Chromium on `url` with a fresh profile in `profile` and `extra` flags;
    /// panics after [`BROWSER_TIMEOUT`].
    pub fn run(&self, profile: &Path, extra: &[String], url: &str) -> Output {
        let mut cmd = Command::new(&self.bin);
        cmd.args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-background-networking",
            "--no-first-run",
            "--disable-component-update",
            "--disable-sync",
            "--disable-dev-shm-usage",
            "--hide-scrollbars",
        ])
        .arg(format!("--user-data-dir={}", profile.display()))
        .args(extra)
        .arg(url)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
        let mut child = cmd.spawn().unwrap_or_else(|e| panic!("starting {}: {e}", self.bin.display()));
        let start = Instant::now();
        // Drain both pipes on threads so a large DOM or log cannot block the browser.
        let mut stdout = child.stdout.take().unwrap();
        let mut stderr = child.stderr.take().unwrap();
        let out = std::thread::spawn(move || {
            let mut buf = Vec::new();
            std::io::Read::read_to_end(&mut stdout, &mut buf).unwrap();
            buf
        });
        let err = std::thread::spawn(move || {
            let mut buf = Vec::new();
            std::io::Read::read_to_end(&mut stderr, &mut buf).unwrap();
            buf
        });
        let status = loop {
            if let Some(s) = child.try_wait().unwrap() {
                break s;
            }
            if start.elapsed() > BROWSER_TIMEOUT {
                let _ = child.kill();
                panic!("chromium did not finish within {BROWSER_TIMEOUT:?}");
            }
            std::thread::sleep(Duration::from_millis(100));
        };
        Output { status, stdout: out.join().unwrap(), stderr: err.join().unwrap() }
    }

    /// The DOM of `url` after its scripts ran, with its console messages (Chromium's log on
    /// stderr at INFO level, where console messages are written).
    pub fn page(&self, profile: &Path, url: &str) -> Page {
        let extra = ["--dump-dom", "--enable-logging=stderr", "--log-level=0", "--v=0"].map(String::from);
        let out = self.run(profile, &extra, url);
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        Page {
            dom: String::from_utf8_lossy(&out.stdout).into_owned(),
            console: console_lines(&stderr),
            stderr,
        }
    }
}

/// The console messages in a Chromium log (`[…:INFO:CONSOLE(12)] "…"` or `…:CONSOLE:12] …`).
pub fn console_lines(log: &str) -> Vec<String> {
    log.lines().filter(|l| l.contains(":CONSOLE")).map(str::to_owned).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn console_lines_are_the_consoles_messages_of_the_log() {
        let log = "[1205/211500.1:WARNING:gpu_init.cc(1)] no GPU\n\
                   [1205/211500.2:INFO:CONSOLE(3)] \"Uncaught Error: boom\", source: file:///r.html (3)\n\
                   [1205/211500.3:INFO:CONSOLE:7] \"x\", source: file:///r.html (7)\n";
        let c = console_lines(log);
        assert_eq!(c.len(), 2);
        assert!(c[0].contains("Uncaught Error: boom"));
    }
}

//! Image references of the `custom_image` dataset, resolved as vLLM's `process_image` does:
//! `data:image/…` URLs and `http(s)://` / `file://` URLs are kept, a local path becomes a
//! `file://` URL (of its absolute path, percent-encoded). With `--custom-ensure-client-side-data`
//! the client loads local files, `file://` and `http(s)://` images itself and sends them as
//! base64 data URLs of the file's bytes (unchanged, no re-encoding); `data:` URLs are kept. A
//! loaded file must be an image (PNG, JPEG, GIF, WebP, BMP, TIFF or AVIF, by its magic bytes).

use base64::Engine;
use std::collections::HashMap;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use super::problem::Problem;

/// Largest image the client loads (a bigger file is refused rather than held in memory).
pub const MAX_IMAGE_BYTES: u64 = 64 * 1024 * 1024;

/// Why an image reference could not be used (the dataset reader adds the file and line), and
/// the I/O or HTTP error behind it.
#[derive(Debug)]
pub struct MediaProblem {
    pub problem: Problem,
    pub fix: String,
}

fn problem(problem: impl Into<String>, fix: impl Into<String>) -> MediaProblem {
    MediaProblem { problem: Problem::new(problem), fix: fix.into() }
}

/// [`problem`] caused by `err`: the text is `"{context}: {err}"`.
fn problem_from(
    context: impl std::fmt::Display,
    err: impl std::error::Error + Send + Sync + 'static,
    fix: impl Into<String>,
) -> MediaProblem {
    MediaProblem { problem: Problem::caused(context, err), fix: fix.into() }
}

/// Resolves image references to the URLs sent, loading them when asked. Shared by the threads
/// that build samples: every reference is resolved once.
#[derive(Debug, Default)]
pub struct MediaResolver {
    /// `--custom-ensure-client-side-data`.
    client_side: bool,
    urls: Mutex<HashMap<String, Arc<str>>>,
    parts: Mutex<HashMap<String, Arc<str>>>,
}

impl MediaResolver {
    pub fn new(client_side: bool) -> Self {
        MediaResolver { client_side, urls: Mutex::new(HashMap::new()), parts: Mutex::new(HashMap::new()) }
    }

    /// `{"type":"image_url","image_url":{"url":…}}` of `reference`, one shared string per
    /// reference (lines naming the same image share its data URL).
    pub fn image_part(&self, reference: &str) -> Result<Arc<str>, MediaProblem> {
        if let Some(p) = self.parts.lock().ok().and_then(|m| m.get(reference).cloned()) {
            return Ok(p);
        }
        let url = serde_json::to_string(&*self.url(reference)?)
            .map_err(|e| problem(format!("image reference '{reference}': {e}"), "check the reference"))?;
        let part: Arc<str> = Arc::from(format!(r#"{{"type":"image_url","image_url":{{"url":{url}}}}}"#));
        if let Ok(mut m) = self.parts.lock() {
            m.insert(reference.to_string(), part.clone());
        }
        Ok(part)
    }

    /// The URL sent for `reference`.
    pub fn url(&self, reference: &str) -> Result<Arc<str>, MediaProblem> {
        if let Some(u) = self.urls.lock().ok().and_then(|m| m.get(reference).cloned()) {
            return Ok(u);
        }
        let url: Arc<str> = Arc::from(self.resolve(reference.trim())?);
        if let Ok(mut m) = self.urls.lock() {
            m.insert(reference.to_string(), url.clone());
        }
        Ok(url)
    }

    fn resolve(&self, r: &str) -> Result<String, MediaProblem> {
        if r.is_empty() {
            return Err(problem("an image reference is empty", "give a path or a URL"));
        }
        if r.starts_with("data:") {
            return Ok(r.to_string());
        }
        let remote = r.starts_with("http://") || r.starts_with("https://");
        if let Some(rest) = r.strip_prefix("file://") {
            let path = file_url_path(rest)?;
            return if self.client_side { data_url_of_file(&path) } else { Ok(r.to_string()) };
        }
        if remote {
            return if self.client_side { data_url_of_remote(r) } else { Ok(r.to_string()) };
        }
        if r.contains("://") {
            return Err(problem(
                format!("image '{r}' has an unsupported URL scheme"),
                "use a local path, or a file://, http(s):// or data:image/ URL",
            ));
        }
        let path = std::path::absolute(r).map_err(|e| {
            problem(format!("image path '{r}' cannot be made absolute: {e}"), "check the path")
        })?;
        if self.client_side {
            data_url_of_file(&path)
        } else {
            Ok(file_url(&path))
        }
    }
}

/// `file://` URL of an absolute path (characters outside a URL path percent-encoded).
pub fn file_url(path: &Path) -> String {
    let mut out = String::from("file://");
    for b in path.to_string_lossy().bytes() {
        if b.is_ascii_alphanumeric() || b"/-._~!$&'()*+,;=:@".contains(&b) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// The path of a `file://` URL (after the scheme): `localhost` host allowed, `%XX` decoded.
fn file_url_path(rest: &str) -> Result<PathBuf, MediaProblem> {
    let path = rest.strip_prefix("localhost").unwrap_or(rest);
    if !path.starts_with('/') {
        return Err(problem(
            format!("file URL 'file://{rest}' names a host; only local files are read"),
            "use file:///absolute/path",
        ));
    }
    let bytes = path.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = |b: u8| (b as char).to_digit(16);
        match (bytes[i], bytes.get(i + 1).and_then(|&b| hex(b)), bytes.get(i + 2).and_then(|&b| hex(b))) {
            (b'%', Some(h), Some(l)) => {
                out.push((h * 16 + l) as u8);
                i += 3;
            }
            (b, _, _) => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8(out)
        .map(PathBuf::from)
        .map_err(|_| problem(format!("file URL 'file://{rest}' is not UTF-8 once decoded"), "fix the URL"))
}

/// The image type of `bytes` by their magic numbers.
pub fn sniff_image(bytes: &[u8]) -> Option<&'static str> {
    let at = |o: usize, m: &[u8]| bytes.get(o..o + m.len()) == Some(m);
    if at(0, b"\x89PNG\r\n\x1a\n") {
        Some("image/png")
    } else if at(0, b"\xff\xd8\xff") {
        Some("image/jpeg")
    } else if at(0, b"GIF87a") || at(0, b"GIF89a") {
        Some("image/gif")
    } else if at(0, b"RIFF") && at(8, b"WEBP") {
        Some("image/webp")
    } else if at(0, b"BM") && bytes.len() > 26 {
        Some("image/bmp")
    } else if at(0, b"II*\0") || at(0, b"MM\0*") {
        Some("image/tiff")
    } else if at(4, b"ftypavif") || at(4, b"ftypavis") {
        Some("image/avif")
    } else {
        None
    }
}

/// `data:<type>;base64,<bytes>` of an image's bytes (`what` names it in the problem).
fn data_url(bytes: &[u8], what: &str) -> Result<String, MediaProblem> {
    let mime = sniff_image(bytes).ok_or_else(|| {
        problem(
            format!("{what} is not an image (not PNG, JPEG, GIF, WebP, BMP, TIFF or AVIF)"),
            "reference an image file, or drop --custom-ensure-client-side-data to let the server load it",
        )
    })?;
    let b64 = base64::engine::general_purpose::STANDARD.encode(bytes);
    Ok(format!("data:{mime};base64,{b64}"))
}

fn data_url_of_file(path: &Path) -> Result<String, MediaProblem> {
    let what = format!("image '{}'", path.display());
    let fix = "check the path in the dataset file";
    let size = std::fs::metadata(path)
        .map_err(|e| problem_from(format_args!("{what} cannot be read"), e, fix))?
        .len();
    if size > MAX_IMAGE_BYTES {
        return Err(too_large(&what));
    }
    // The size in the metadata is not a bound for a device or a pipe (`/dev/zero` reports 0):
    // the read itself stops one byte past the limit.
    let file =
        std::fs::File::open(path).map_err(|e| problem_from(format_args!("{what} cannot be read"), e, fix))?;
    let bytes = read_capped(file, &what, fix)?;
    data_url(&bytes, &what)
}

/// Every byte of `reader`, or the too-large problem once it passes [`MAX_IMAGE_BYTES`].
fn read_capped(reader: impl Read, what: &str, fix: &str) -> Result<Vec<u8>, MediaProblem> {
    let mut bytes = Vec::new();
    reader
        .take(MAX_IMAGE_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| problem_from(format_args!("{what} could not be read"), e, fix))?;
    if bytes.len() as u64 > MAX_IMAGE_BYTES {
        return Err(too_large(what));
    }
    Ok(bytes)
}

fn too_large(what: &str) -> MediaProblem {
    problem(
        format!("{what} is larger than {} MiB", MAX_IMAGE_BYTES / (1024 * 1024)),
        "use a smaller image, or drop --custom-ensure-client-side-data to let the server load it",
    )
}

/// GETs an image (three attempts for transport errors and 5xx, 60 s each).
fn data_url_of_remote(url: &str) -> Result<String, MediaProblem> {
    let what = format!("image {url}");
    let fix = "check the URL, or download the image and reference the local file";
    let mut last = None;
    for attempt in 0..3u64 {
        if attempt > 0 {
            std::thread::sleep(Duration::from_secs(attempt));
        }
        match ureq::get(url).timeout(Duration::from_secs(60)).call() {
            Ok(resp) => return data_url(&read_capped(resp.into_reader(), &what, fix)?, &what),
            Err(ureq::Error::Status(code, _)) if code < 500 => {
                return Err(problem(format!("{what} could not be fetched: HTTP {code}"), fix))
            }
            Err(e) => last = Some(e),
        }
    }
    let context = format!("{what} could not be fetched");
    Err(match last {
        Some(e) => problem_from(context, e, fix),
        None => problem(context, fix),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const PNG: &[u8] = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR";

    #[test]
    fn references_are_kept_or_made_file_urls_by_default() {
        let r = MediaResolver::new(false);
        assert_eq!(&*r.url("data:image/png;base64,Zm9v").unwrap(), "data:image/png;base64,Zm9v");
        assert_eq!(&*r.url("https://example.com/a.png").unwrap(), "https://example.com/a.png");
        assert_eq!(&*r.url("file:///tmp/a%20b.png").unwrap(), "file:///tmp/a%20b.png");
        assert_eq!(&*r.url("/data/chart b.png").unwrap(), "file:///data/chart%20b.png");
        let cwd = std::env::current_dir().unwrap();
        assert_eq!(&*r.url("rel/x.jpg").unwrap(), file_url(&cwd.join("rel/x.jpg")));
        assert!(r.url("ftp://host/x.png").is_err());
        assert!(r.url(" ").is_err());
    }

    #[test]
    fn client_side_loads_files_and_keeps_data_urls() {
        let dir = tempfile::tempdir().unwrap();
        let a = dir.path().join("chart b.png");
        std::fs::write(&a, PNG).unwrap();
        let r = MediaResolver::new(true);
        let expected =
            format!("data:image/png;base64,{}", base64::engine::general_purpose::STANDARD.encode(PNG));
        assert_eq!(&*r.url(a.to_str().unwrap()).unwrap(), expected);
        assert_eq!(&*r.url(&file_url(&a)).unwrap(), expected);
        assert_eq!(&*r.url("data:image/png;base64,Zm9v").unwrap(), "data:image/png;base64,Zm9v");
        let text = dir.path().join("not_an_image.png");
        std::fs::write(&text, "not an image").unwrap();
        let e = r.url(text.to_str().unwrap()).unwrap_err();
        assert!(e.problem.text.contains("is not an image"), "{e:?}");
        let e = r.url(dir.path().join("missing.png").to_str().unwrap()).unwrap_err();
        assert!(e.problem.text.contains("cannot be read"), "{e:?}");
        assert!(r.url("file://otherhost/x.png").is_err());
        // One part per reference, shared by every line naming it.
        let (p1, p2) =
            (r.image_part(a.to_str().unwrap()).unwrap(), r.image_part(a.to_str().unwrap()).unwrap());
        assert!(Arc::ptr_eq(&p1, &p2));
        let v: serde_json::Value = serde_json::from_str(&p1).unwrap();
        assert_eq!(v, serde_json::json!({"type": "image_url", "image_url": {"url": expected}}));
    }

    #[test]
    fn image_types_by_magic_bytes() {
        assert_eq!(sniff_image(PNG), Some("image/png"));
        assert_eq!(sniff_image(b"\xff\xd8\xff\xe0rest"), Some("image/jpeg"));
        assert_eq!(sniff_image(b"GIF89a..."), Some("image/gif"));
        assert_eq!(sniff_image(b"RIFF\0\0\0\0WEBPVP8 "), Some("image/webp"));
        assert_eq!(sniff_image(b"\0\0\0\x1cftypavif"), Some("image/avif"));
        assert_eq!(sniff_image(b"hello"), None);
        assert_eq!(sniff_image(b""), None);
    }

    /// `/dev/zero` reports a size of 0 in its metadata: the read itself must stop at the
    /// limit (it read until the machine ran out of memory).
    #[cfg(unix)]
    #[test]
    fn an_endless_file_stops_at_the_image_size_limit() {
        let e = MediaResolver::new(true).url("/dev/zero").unwrap_err();
        assert!(e.problem.text.contains("is larger than 64 MiB"), "{e:?}");
    }
}

#[cfg(test)]
mod remote_tests {
    use super::*;
    use servebench_testkit::script::{response, serve_in_background, Step};

    #[test]
    fn client_side_fetches_http_images() {
        let png: &'static [u8] = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR";
        let server = serve_in_background(vec![
            vec![Step::Read, response(200, "OK", "image/png", png), Step::Close],
            vec![Step::Read, response(404, "Not Found", "text/plain", b"no"), Step::Close],
        ]);
        let base = server.base_url();
        let r = MediaResolver::new(true);
        let url = r.url(&format!("{base}/chart.png")).unwrap();
        assert!(url.starts_with("data:image/png;base64,"), "{url}");
        // Resolved once: the second look-up does not connect again.
        assert_eq!(r.url(&format!("{base}/chart.png")).unwrap(), url);
        let e = r.url(&format!("{base}/missing.png")).unwrap_err();
        assert!(e.problem.text.contains("HTTP 404"), "{e:?}");
        // By default the URL is sent as it is (the server fetches it).
        assert_eq!(
            &*MediaResolver::new(false).url(&format!("{base}/x.png")).unwrap(),
            format!("{base}/x.png")
        );
        assert_eq!(server.connections(), 2);
    }
}

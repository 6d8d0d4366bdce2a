//! The error table: every code, its title, exit code, explanation file and error variant,
//! declared once (see `macros.rs` for what each entry yields).
//!
//! To add a code: add one entry here (the order is the order of `docs/errors.md` and of
//! `servebench explain`), write `explain/SBxxx.md` (it must name a "Fix"), then regenerate the
//! doc with `UPDATE_DOCS=1 cargo test -p servebench-core --lib`.
//!
//! Exit codes: 2 = bad flags or configuration (nothing was sent), 3 = too many failed
//! requests, 4 = stopped early (saturation, error limit), 1 = every other error.

use super::Cause;

error_table! {
    /// SB100: the command line does not parse: an unknown flag, a value of the wrong type, a
    /// flag without its value (the parser's own message, coded).
    SB100 CommandLine {
        exit: 2,
        title: "command line not understood",
        error: CommandLine { problem: String, fix: String },
        message: "{problem}; fix: {fix}",
    }
    /// SB101: a flag has an invalid value.
    SB101 ConfigInvalid {
        exit: 2,
        title: "invalid configuration",
        error: Config { flag: String, problem: String, fix: String },
        message: "invalid {flag}: {problem}; fix: {fix}",
    }
    /// SB102: a `vllm bench serve` flag that servebench does not support yet.
    SB102 FlagNotSupported {
        exit: 2,
        title: "flag not supported yet",
        error: FlagNotSupported { flag: String, hint: String },
        message: "{flag} is a `vllm bench serve` flag that servebench does not support yet; fix: remove it{hint}",
    }
    /// SB110: the workload has multimodal content the chosen backend cannot send.
    SB110 MultimodalUnsupported {
        exit: 2,
        title: "multimodal content not supported by the backend",
        error: MultimodalUnsupported { backend: String, detail: String },
        message: "--backend {backend} cannot send multimodal content{detail}; fix: use --backend openai-chat (or openai-embeddings-chat), or a text-only dataset",
    }
    /// SB111: the prompts are of a content type the chosen backend cannot send.
    SB111 ContentTypeUnsupported {
        exit: 2,
        title: "content type not supported by the backend",
        error: ContentTypeUnsupported { backend: String, content: String, fix: String },
        message: "--backend {backend} cannot send {content}; fix: {fix}",
    }
    /// SB112: sampling flags given to a pooling (embeddings, pooling, rerank) backend.
    SB112 PoolingSampling {
        exit: 2,
        title: "sampling flags given to a pooling backend",
        error: PoolingSampling { backend: String, flags: String },
        message: "--backend {backend} is a pooling backend and takes no sampling flags (got {flags}); fix: drop them, or use a generation backend",
    }
    /// SB113: a `vllm bench serve` flag was given a value, and it does not apply to this run
    /// (another dataset, backend or tokenizer mode).
    SB113 FlagNotApplicable {
        exit: 2,
        title: "flag does not apply to this run",
        error: FlagNotApplicable { flag: String, applies_to: String, why: String, fix: String },
        message: "{flag} applies to {applies_to}, and {why}; fix: {fix}",
    }
    /// SB120: an output path is the same file as an input or another output.
    SB120 OutputCollision {
        exit: 2,
        title: "output path collides with another file of the run",
        error: OutputCollision { output_flag: String, output: String, other: String },
        message: "{output} is the same file as {other}; nothing was written; fix: write {output_flag} elsewhere",
    }
    /// SB121: a combination of flags that cannot work together.
    SB121 FlagCombination {
        exit: 2,
        title: "flags that cannot be combined",
        error: FlagCombination { first: String, second: String, why: String, fix: String },
        message: "{first} cannot be combined with {second}: {why}; fix: {fix}",
    }
    /// SB122: `--max-prefill-concurrency` on a run whose responses are not streamed.
    SB122 PrefillCapNeedsStream {
        exit: 2,
        title: "prefill-concurrency cap without a streamed response",
        error: PrefillCapNeedsStream { backend: String },
        message: "--max-prefill-concurrency frees a slot at a request's first token, and --backend {backend} gets whole answers here (no stream), so the cap would be --max-concurrency; fix: use a streaming backend (and no \"stream\": false in --extra-body), or use --max-concurrency",
    }
    /// SB123: `--max-prefill-concurrency` above `--max-concurrency`: the cap can never bind.
    SB123 PrefillCapAboveConcurrency {
        exit: 2,
        title: "prefill-concurrency cap above the concurrency cap",
        error: PrefillCapAboveConcurrency { prefill: usize, concurrency: usize },
        message: "--max-prefill-concurrency {prefill} is above --max-concurrency {concurrency}, so it can never bind; fix: pass a value of at most {concurrency}, or raise --max-concurrency",
    }
    /// SB124: one of the two cancellation-by-design flags without the other.
    SB124 CancellationIncomplete {
        exit: 2,
        title: "cancellation by design needs both its rate and its delay",
        error: CancellationIncomplete { given: String, missing: String },
        message: "{given} was given without {missing}; fix: pass both --request-cancellation-rate PERCENT and --request-cancellation-delay SECONDS",
    }
    /// SB130: a config file (`--config`) cannot be read or is not valid TOML.
    SB130 ConfigFileUnreadable {
        exit: 2,
        title: "config file cannot be read or parsed",
        error: ConfigFileUnreadable { file: String, why: String },
        message: "config file {file}: {why}; fix: give a readable TOML file (servebench config init writes one)",
    }
    /// SB131: a config file key that is not a flag of a run.
    SB131 ConfigUnknownKey {
        exit: 2,
        title: "unknown key in a config file",
        error: ConfigUnknownKey { file: String, line: usize, key: String, hint: String },
        message: "{file}:{line}: unknown key '{key}'{hint}; fix: use a run flag's long name without its leading -- (servebench config init lists them)",
    }
    /// SB132: a config file value that the flag's own parser refuses.
    SB132 ConfigBadValue {
        exit: 2,
        title: "invalid value in a config file",
        error: ConfigBadValue { file: String, line: usize, key: String, why: String },
        message: "{file}:{line}: key '{key}': {why}",
    }
    /// SB133: a config file value of a TOML type the flag cannot take (a table for a number...).
    SB133 ConfigTypeError {
        exit: 2,
        title: "wrong value type in a config file",
        error: ConfigTypeError { file: String, line: usize, key: String, expected: String, found: String },
        message: "{file}:{line}: key '{key}' takes {expected}, found {found}; fix: write it as {expected}",
    }
    /// SB134: `--preset` names no shipped scenario preset.
    SB134 UnknownPreset {
        exit: 2,
        title: "unknown scenario preset",
        error: UnknownPreset { name: String, known: String },
        message: "no preset '{name}'; fix: use one of {known} (servebench config presets)",
    }
    /// SB135: `--config-from-result` names a file that is not a result with a recorded config.
    SB135 ConfigFromResultInvalid {
        exit: 2,
        title: "result file holds no config to rerun",
        error: ConfigFromResultInvalid { file: String, why: String },
        message: "--config-from-result {file}: {why}; fix: give a result JSON written by servebench (its `config` key)",
    }
    /// SB136: a rerun from a result would overwrite that result.
    SB136 RerunOverwritesResult {
        exit: 2,
        title: "a rerun would overwrite the result it reruns",
        error: RerunOverwritesResult { file: String },
        message: "--config-from-result {file}: the rerun would write its result over {file}; fix: give --result-filename (or --append-result to add to it)",
    }
    /// SB140: an early-stop tuning flag without the stop it tunes.
    SB140 EarlyStopFlagAlone {
        exit: 2,
        title: "early-stop option without its stop",
        error: EarlyStopFlagAlone { given: String, needs: String },
        message: "{given} tunes {needs}, which was not given, so it would change nothing; fix: add {needs}, or drop {given}",
    }
    /// SB141: `--detect-saturation` on a load whose arrivals do not come from a schedule.
    SB141 SaturationNeedsSchedule {
        exit: 2,
        title: "saturation detection without an arrival schedule",
        error: SaturationNeedsSchedule { load: String },
        message: "--detect-saturation compares the requests due by the schedule with those finished, and {load} has no schedule (requests are sent as others finish, so arrivals can never outpace finishes); fix: give a finite --request-rate (or a timed trace, or --stages RATE:SECONDS), or drop --detect-saturation",
    }
    /// SB142: the `--max-error-rate` window is longer than the run, so the rate is never tested.
    SB142 ErrorWindowTooLong {
        exit: 2,
        title: "error-rate window longer than the run",
        error: ErrorWindowTooLong { window: u64, requests: u64 },
        message: "--max-error-rate is tested over the last {window} finished requests, and the run sends only {requests}, so it would never be tested; fix: pass --max-error-rate-window of at most {requests}, or --max-errors N for an absolute limit",
    }
    /// SB150: a `--server-metrics-url` or `--gpu-metrics-url` that is not a usable URL.
    SB150 MetricsUrlInvalid {
        exit: 2,
        title: "invalid metrics URL",
        error: MetricsUrlInvalid { flag: String, url: String, problem: String },
        message: "{flag} {url}: {problem}; fix: give an http:// or https:// URL of a Prometheus /metrics endpoint, e.g. http://10.0.0.5:8000/metrics (no user:password@)",
    }
    /// SB151: the simulated GPUs' watts make no power curve.
    SB151 SimGpuPowerInvalid {
        exit: 2,
        title: "invalid simulated GPU power",
        error: SimGpuPowerInvalid { idle: String, per_request: String, max: String },
        message: "--sim-gpus: idle {idle} W, {per_request} W per running request and a cap of {max} W make no power curve; fix: give finite watts ≥ 0 with --sim-gpu-max-watts at least --sim-gpu-idle-watts",
    }
    /// SB155: `--tui` on an experiment (sweep, rate search, `--num-runs`), which prints one
    /// block per point.
    SB155 TuiWithExperiment {
        exit: 2,
        title: "live dashboard asked for an experiment",
        error: TuiWithExperiment { experiment: String },
        message: "--tui shows one run, and {experiment} runs several points, each printed as a block; fix: drop --tui (or pass --no-tui), or run the points one at a time",
    }
    /// SB156: `--tui` where stdin or stdout is not an interactive terminal.
    SB156 TuiNeedsTerminal {
        exit: 2,
        title: "live dashboard without a terminal",
        error: TuiNeedsTerminal { which: String },
        message: "--tui draws on an interactive terminal and reads keys from it, and {which} (a pipe, a file, CI); fix: run it in a terminal, or drop --tui (--no-tui overrides a config file): the plain progress line is shown then",
    }
    /// SB165: the OpenTelemetry export (`--otlp`) failed: the collector was unreachable, too
    /// slow or refused the data. A warning: the run's result files are written before it.
    SB165 OtlpExportFailed {
        exit: 1,
        title: "OpenTelemetry export failed",
        error: OtlpExportFailed { endpoint: String, detail: String },
        message: "OpenTelemetry export to {endpoint} failed: {detail}; the result files are written and complete; fix: check that an OTLP/HTTP collector listens there (port 4318 by default), or raise --otlp-timeout-seconds",
    }
    /// SB166: `--otlp` in a servebench built without the `otel` cargo feature.
    SB166 OtlpNotBuilt {
        exit: 2,
        title: "OpenTelemetry export not in this build",
        error: OtlpNotBuilt { flag: String },
        message: "{flag} asks for OpenTelemetry export, and this servebench was built without the `otel` cargo feature; fix: drop {flag}, or build with the default features (cargo build --release -p servebench)",
    }
    /// SB167: the OTLP endpoint is not an `http://` URL servebench can send to.
    SB167 OtlpEndpointInvalid {
        exit: 2,
        title: "OTLP endpoint not usable",
        error: OtlpEndpointInvalid { source_name: String, endpoint: String, problem: String },
        message: "the OTLP endpoint {endpoint} (from {source_name}) {problem}; fix: give an http:// URL of an OTLP/HTTP collector, such as http://127.0.0.1:4318 (the signal paths /v1/traces and /v1/metrics are added)",
    }
    /// SB175: the open-files limit is too low for the connections the run may hold at once.
    SB175 OpenFilesLimit {
        exit: 2,
        title: "open-files limit too low for the concurrency",
        error: OpenFilesLimit { what: String, need: u64, limit: u64 },
        message: "{what} need about {need} open files, but this process may open at most {limit} (its hard limit; the soft limit is raised to it at start-up); fix: raise the hard limit before the run (`ulimit -Hn {need}; ulimit -n {need}` as root or via /etc/security/limits.conf, LimitNOFILE= for a systemd service, --ulimit nofile= for docker), or lower --max-concurrency (or the N of --stages c=N)",
    }
    /// SB114: `--dataset-name hf` names a dataset vLLM reads with its own parser, and servebench
    /// does not have that parser yet (the generic loader would send different prompts).
    SB114 HfParserMissing {
        exit: 1,
        title: "hf dataset needs a vLLM parser servebench does not have",
        error: HfParserMissing { dataset: String, parser: String },
        message: "--dataset-name hf: vLLM reads '{dataset}' with its {parser} parser, which servebench does not have yet, and the generic loader would send different prompts; fix: convert the rows to JSONL for --dataset-name custom, or use a dataset servebench parses (docs/datasets.md)",
    }
    /// SB201: the tokenizer could not be loaded.
    SB201 TokenizerLoad {
        exit: 1,
        title: "tokenizer could not be loaded",
        error: TokenizerLoad { name: String, detail: String, #[source] source: Option<Cause> },
        message: "tokenizer '{name}' could not be loaded: {detail}; fix: pass --tokenizer with a tokenizer.json path or a built-in encoding (cl100k_base, o200k_base)",
    }
    /// SB202: the tokenizer would have to be downloaded and the network is not available.
    SB202 TokenizerOffline {
        exit: 1,
        title: "tokenizer download needed but offline",
        error: TokenizerOffline { name: String, detail: String, #[source] source: Option<Cause> },
        message: "tokenizer '{name}' is not available locally and cannot be downloaded ({detail}); fix: download its tokenizer.json where the network is available and pass --tokenizer /path/to/tokenizer.json (or its directory)",
    }
    /// SB203: the workload could not be built (dataset problem).
    SB203 Dataset {
        exit: 1,
        title: "workload could not be built",
        error: Dataset { detail: String, #[source] source: Option<Cause> },
        message: "{detail}",
    }
    /// SB204: a dataset file is unreadable or malformed (names the file and line/record).
    SB204 DatasetFile {
        exit: 1,
        title: "dataset file unreadable or malformed",
        error: DatasetFile {
            path: String,
            location: String,
            problem: String,
            fix: String,
            #[source] source: Option<Cause>,
        },
        message: "dataset file {path}, {location}: {problem}; fix: {fix}",
    }
    /// SB205: a dataset would have to be downloaded and that is not possible (offline/failed).
    SB205 DatasetDownload {
        exit: 1,
        title: "dataset download needed but not possible",
        error: DatasetDownload { name: String, detail: String, #[source] source: Option<Cause> },
        message: "dataset '{name}' is not a local file and cannot be downloaded ({detail}); fix: pass --dataset-path /path/to/a/local/copy",
    }
    /// SB206: the workload needs the tokenizer's chat template (vLLM renders it in the client
    /// here) and the tokenizer has none.
    SB206 ChatTemplateMissing {
        exit: 1,
        title: "tokenizer has no chat template",
        error: ChatTemplateMissing { tokenizer: String, needed_for: String },
        message: "tokenizer '{tokenizer}' has no chat template, and vLLM renders one in the client for {needed_for}; fix: pass --tokenizer a Hugging Face tokenizer directory (or model id) whose tokenizer_config.json or chat_template.jinja holds one, or --skip-chat-template where vLLM takes it",
    }
    /// SB207: the tokenizer's chat template failed to render (a syntax error, or the template
    /// raised an exception for these messages).
    SB207 ChatTemplateRender {
        exit: 1,
        title: "chat template could not be rendered",
        error: ChatTemplateRender { tokenizer: String, detail: String, #[source] source: Option<Cause> },
        message: "the chat template of tokenizer '{tokenizer}' could not be rendered: {detail}; fix: check the template (tokenizer_config.json chat_template or chat_template.jinja), or pass --skip-chat-template where vLLM takes it",
    }
    /// SB208: a records file or result JSON given to `report`, `compare` or `merge` is not one
    /// servebench wrote (a malformed line, an unknown document).
    SB208 RecordsFileMalformed {
        exit: 1,
        title: "records or result file malformed",
        error: RecordsFileMalformed { file: String, problem: String, #[source] source: Option<Cause> },
        message: "{file}: {problem}; fix: pass a records file (.records.jsonl) or result JSON as a servebench run wrote it",
    }
    /// SB209: a task that prepares the run (loading the tokenizer, building the workload)
    /// panicked or was cancelled: a bug in servebench, not a problem of the input.
    SB209 PrepareTaskFailed {
        exit: 1,
        title: "a preparation task failed (internal error)",
        error: PrepareTaskFailed { what: String, detail: String, #[source] source: Option<Cause> },
        message: "{what} failed: {detail}; fix: this is a servebench bug, please report it with the command line and input files",
    }
    /// SB215: a session-tree (agentic) trace file is unreadable or malformed (names the file,
    /// line and problem).
    SB215 AgenticTraceMalformed {
        exit: 1,
        title: "session-tree trace malformed",
        error: AgenticTraceMalformed { path: String, location: String, problem: String },
        message: "session-tree trace {path}, {location}: {problem}; fix: see docs/workloads.md §Session trees for the schema of each --agentic-format",
    }
    /// SB216: a session-tree trace's graph is not a tree of earlier turns (an unknown or later
    /// parent/join id, a duplicate id, a sub-agent referenced twice).
    SB216 AgenticGraphInvalid {
        exit: 1,
        title: "session-tree graph invalid",
        error: AgenticGraphInvalid { path: String, session: String, problem: String },
        message: "session-tree trace {path}, session '{session}': {problem}; fix: every parent and join id must name an earlier turn of the same session, ids must be unique",
    }
    /// SB217: session-tree replay was asked of a backend that cannot carry a turn's history.
    SB217 AgenticBackendUnsupported {
        exit: 1,
        title: "session-tree replay needs a chat backend",
        error: AgenticBackendUnsupported { backend: String },
        message: "session-tree replay sends each turn's message history and backend '{backend}' has no messages; fix: use --backend openai-chat (or another chat backend)",
    }
    /// SB218: a session-tree control flag has a bad value (speed-up, delay cap, session count,
    /// loop mode, session concurrency).
    SB218 AgenticControlInvalid {
        exit: 2,
        title: "session-tree control invalid",
        error: AgenticControlInvalid { flag: String, problem: String, fix: String },
        message: "{flag}: {problem}; fix: {fix}",
    }
    /// SB219: a session-tree flag without `--dataset-name agentic`, or a flag session-tree replay
    /// cannot combine with (its sessions set their own timing and load).
    SB219 AgenticFlagNotApplicable {
        exit: 2,
        title: "flag does not apply to session-tree replay",
        error: AgenticFlagNotApplicable { flag: String, why: String },
        message: "{flag} {why}; fix: drop the flag (docs/workloads.md §Session trees lists the flags of session-tree replay)",
    }
    /// SB210: a controlled prefix-cache hit rate cannot be built for this workload (not token
    /// ids, a share out of range, multi-turn chat text, or a dataset or load shape whose own
    /// prefix sharing would change the hit rate).
    SB210 PrefixCacheWorkload {
        exit: 2,
        title: "controlled prefix-cache hit rate not possible for this workload",
        error: PrefixCacheWorkload { flag: String, problem: String, fix: String },
        message: "{flag}: {problem}; fix: {fix}",
    }
    /// SB211: a prefix-cache hit-rate target that multi-turn conversations on token ids cannot
    /// reach: below what their history alone reuses, or above the most their first turns can
    /// share (names the reachable range).
    SB211 PrefixCacheTargetUnreachable {
        exit: 2,
        title: "prefix-cache hit-rate target out of reach for these conversations",
        error: PrefixCacheTargetUnreachable { flag: String, target: f64, min: f64, max: f64, detail: String },
        message: "{flag} {target}: these conversations can only have a built-in hit rate from {min:.4} (their history alone) to {max:.4} ({detail}); fix: pass a target in [{min:.4}, {max:.4}], or change the turn count or lengths",
    }
    /// SB301: the endpoint did not answer a test request successfully before the timeout.
    SB301 EndpointNotReady {
        exit: 1,
        title: "endpoint not ready",
        error: EndpointNotReady { secs: f64, last_error: String },
        message: "endpoint not ready after {secs:.1} s: {last_error}; fix: check URL/model or raise --ready-check-timeout-sec",
    }
    /// SB302: `/tokenize` or `/detokenize` cannot be used (a warning: verification skipped).
    SB302 TokenizeUnavailable {
        exit: 1,
        title: "tokenize endpoint unavailable",
        error: TokenizeUnavailable { detail: String },
        message: "tokenize endpoint unavailable ({detail}); prompt-length verification skipped",
    }
    /// SB303: `/tokenize` or `/detokenize` kept failing with 5xx or transport errors.
    SB303 TokenizeFailed {
        exit: 1,
        title: "tokenize endpoint failing",
        error: TokenizeFailed { detail: String },
        message: "tokenize endpoint failing: {detail}; fix: check the server, or pass --skip-tokenize-verification",
    }
    /// SB304: an HTTP/transport error outside a benchmark request (model list, tokenize, ...).
    SB304 Transport {
        exit: 1,
        title: "HTTP/transport error",
        error: Transport { context: String, detail: String, #[source] source: Option<Cause> },
        message: "{context}: {detail}; fix: check that the server is running at that URL",
    }
    /// SB305: the server answered a control request with an error status.
    SB305 HttpStatus {
        exit: 1,
        title: "server returned an error status",
        error: HttpStatus { context: String, status: u16, body: String },
        message: "{context}: HTTP {status}: {body}",
    }
    /// SB306: a response body in a content coding servebench cannot decode.
    SB306 ContentCoding {
        exit: 1,
        title: "response body in an undecodable content coding",
        error: ContentCoding { context: String, detail: String, #[source] source: Option<Cause> },
        message: "{context}: {detail}; fix: ask the gateway not to compress, or to use gzip, br or zstd",
    }
    /// SB307: redirects that cannot be followed (too many hops, a loop, a refused method).
    SB307 Redirect {
        exit: 1,
        title: "redirect not followed",
        error: Redirect { context: String, detail: String },
        message: "{context}: {detail}; fix: point --base-url at the final URL",
    }
    /// SB308: the server does not speak HTTP/1.1 (HTTP/2 only, or not HTTP at all).
    SB308 ServerProtocol {
        exit: 1,
        title: "server does not speak HTTP/1.1",
        error: ServerProtocol { context: String, detail: String },
        message: "{context}: {detail}; fix: point --base-url at the server's HTTP/1.1 port (http:// or https://)",
    }
    /// SB310: the TLS certificate check failed (server certificate not trusted, or the server
    /// rejected the client certificate). Permanent: retrying cannot fix it.
    SB310 TlsCertificate {
        exit: 1,
        title: "TLS certificate verification failed",
        error: TlsCertificate { context: String, detail: String, fix: String },
        message: "{context}: TLS certificate check failed: {detail}; fix: {fix}",
    }
    /// SB311: a TLS file (CA bundle, client certificate, client key) is unreadable or malformed.
    SB311 TlsFile {
        exit: 1,
        title: "TLS file unreadable or malformed",
        error: TlsFile { what: String, path: String, detail: String, fix: String, #[source] source: Option<Cause> },
        message: "{what} {path}: {detail}; fix: {fix}",
    }
    /// SB312: the HTTP proxy could not be used (unreachable, CONNECT refused, 407).
    SB312 Proxy {
        exit: 1,
        title: "proxy failure",
        error: Proxy { proxy: String, detail: String },
        message: "proxy {proxy}: {detail}; fix: check the proxy variables and credentials, set NO_PROXY for this host, or pass --no-proxy",
    }
    /// SB315: the server cannot be reached at all (connection refused, name not resolved).
    SB315 Unreachable {
        exit: 1,
        title: "server unreachable",
        error: Unreachable { addr: String, reason: String, waited: String },
        message: "cannot connect to {addr}: {reason}{waited}; fix: is the server running, and are --base-url/--host/--port right?",
    }
    /// SB316: a server of servebench (`servebench sim`) cannot listen on its address: the port
    /// is in use, needs privileges, or the host is not an address of this machine.
    SB316 Listen {
        exit: 1,
        title: "cannot listen on the address",
        error: Listen { addr: String, detail: String, fix: String, #[source] source: Option<Cause> },
        message: "cannot listen on {addr}: {detail}; fix: {fix}",
    }
    /// SB401: the server's response did not follow the expected API protocol.
    SB401 Protocol {
        exit: 1,
        title: "backend protocol error",
        error: Protocol { context: String, detail: String, #[source] source: Option<Cause> },
        message: "{context}: {detail}; fix: check that --backend/--endpoint match the server's API",
    }
    /// SB402: the model could not be determined.
    SB402 ModelDetect {
        exit: 1,
        title: "model could not be determined",
        error: ModelDetect { detail: String, #[source] source: Option<Cause> },
        message: "could not determine the model from /v1/models: {detail}; fix: pass --model",
    }
    /// SB403: the server could not apply its chat template to the request.
    SB403 ChatTemplate {
        exit: 1,
        title: "chat template error",
        error: ChatTemplate { detail: String },
        message: "the server could not apply its chat template: {detail}; fix: use --backend openai (completions) for base models, or give the server a chat template",
    }
    /// SB404: the server answers in another API dialect than `--backend` speaks.
    SB404 WrongDialect {
        exit: 1,
        title: "server speaks another API dialect",
        error: WrongDialect { backend: String, detail: String },
        message: "--backend {backend} got a response in another dialect: {detail}; fix: use --backend openai/openai-chat for OpenAI routes, or point --endpoint at the native route",
    }
    /// SB405: streams went on far past the requested output length.
    SB405 RunawayStream {
        exit: 1,
        title: "stream went on past the requested length",
        error: RunawayStream { detail: String },
        message: "{detail}; fix: check the server's stop handling, or raise --runaway-stream-factor (0 disables)",
    }
    /// SB501: reading or writing a file failed.
    SB501 Io {
        exit: 1,
        title: "file I/O error",
        error: Io { path: String, #[source] source: Cause },
        message: "{path}: {source}",
    }
    /// SB601: the run finished but too many requests failed.
    SB601 FailureRate {
        exit: 3,
        title: "failure rate exceeded",
        error: FailureRate { failed: u64, total: u64, rate: f64, limit: f64 },
        message: "{failed} of {total} requests failed ({rate:.1}%), above --max-failure-rate {limit:.1}%",
    }
    /// SB143: the run stopped early: the server was saturated (`--detect-saturation`).
    SB143 StoppedSaturated {
        exit: 4,
        title: "stopped early: server saturated",
        error: StoppedSaturated { from_s: f64, arrival_rate: f64, finish_rate: f64, not_sent: u64 },
        message: "the run stopped early: the server was saturated from {from_s:.1} s ({arrival_rate:.2} requests/s arrived, {finish_rate:.2}/s finished); {not_sent} requests were not sent; results written (early_stop in the result)",
    }
    /// SB144: the run stopped early: too many requests failed (`--max-error-rate`, `--max-errors`).
    SB144 StoppedErrors {
        exit: 4,
        title: "stopped early: error limit exceeded",
        error: StoppedErrors { from_s: f64, failed: u64, over: u64, not_sent: u64 },
        message: "the run stopped early at {from_s:.1} s: {failed} of {over} finished requests failed, above the error limit; {not_sent} requests were not sent; results written (early_stop in the result)",
    }
    /// SB602: the run finished without a single successful request.
    SB602 NoSuccess {
        exit: 1,
        title: "no request succeeded",
        error: NoSuccess { context: String, total: u64, first: String, fix: String },
        message: "{context}none of {total} requests succeeded; first failure: {first}; fix: {fix}",
    }
    /// SB701: shard records files come from different workloads, seeds or runs.
    SB701 ShardMismatch {
        exit: 1,
        title: "shards of different workloads",
        error: ShardMismatch { detail: String },
        message: "shards are not from one run: {detail}; fix: merge only the shards of one run, all run with the same flags",
    }
    /// SB702: the set of shard records files has duplicate or missing shards.
    SB702 ShardSet {
        exit: 1,
        title: "incomplete or duplicate shard set",
        error: ShardSet { detail: String },
        message: "{detail}; fix: pass one records file per shard index 0..num-shards (or --allow-missing-shards)",
    }
}

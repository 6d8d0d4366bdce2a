//! One error taxonomy: every user-facing error has a stable code, a one-line message that names
//! the fix, and an explanation printed by `servebench explain CODE` (also in `docs/errors.md`).

use std::fmt;

/// Stable error codes. Never renumber: scripts and docs refer to them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ErrorCode {
    /// SB101: a flag has an invalid value.
    ConfigInvalid,
    /// SB102: a `vllm bench serve` flag that servebench does not support yet.
    FlagNotSupported,
    /// SB110: the workload has multimodal content the chosen backend cannot send.
    MultimodalUnsupported,
    /// SB111: the prompts are of a content type the chosen backend cannot send.
    ContentTypeUnsupported,
    /// SB112: sampling flags given to a pooling (embeddings, pooling, rerank) backend.
    PoolingSampling,
    /// SB113: a `vllm bench serve` flag was given a value, and it does not apply to this run
    /// (another dataset, backend or tokenizer mode).
    FlagNotApplicable,
    /// SB120: an output path is the same file as an input or another output.
    OutputCollision,
    /// SB121: a combination of flags that cannot work together.
    FlagCombination,
    /// SB114: `--dataset-name hf` names a dataset vLLM reads with its own parser, and servebench
    /// does not have that parser yet (the generic loader would send different prompts).
    HfParserMissing,
    /// SB201: the tokenizer could not be loaded.
    TokenizerLoad,
    /// SB202: the tokenizer would have to be downloaded and the network is not available.
    TokenizerOffline,
    /// SB203: the workload could not be built (dataset problem).
    Dataset,
    /// SB204: a dataset file is unreadable or malformed (names the file and line/record).
    DatasetFile,
    /// SB205: a dataset would have to be downloaded and that is not possible (offline/failed).
    DatasetDownload,
    /// SB301: the endpoint did not answer a test request successfully before the timeout.
    EndpointNotReady,
    /// SB302: `/tokenize` or `/detokenize` cannot be used (a warning: verification skipped).
    TokenizeUnavailable,
    /// SB303: `/tokenize` or `/detokenize` kept failing with 5xx or transport errors.
    TokenizeFailed,
    /// SB304: an HTTP/transport error outside a benchmark request (model list, tokenize, ...).
    Transport,
    /// SB305: the server answered a control request with an error status.
    HttpStatus,
    /// SB306: a response body in a content coding servebench cannot decode.
    ContentCoding,
    /// SB307: redirects that cannot be followed (too many hops, a loop, a refused method).
    Redirect,
    /// SB308: the server does not speak HTTP/1.1 (HTTP/2 only, or not HTTP at all).
    ServerProtocol,
    /// SB310: the TLS certificate check failed (server certificate not trusted, or the server
    /// rejected the client certificate). Permanent: retrying cannot fix it.
    TlsCertificate,
    /// SB311: a TLS file (CA bundle, client certificate, client key) is unreadable or malformed.
    TlsFile,
    /// SB312: the HTTP proxy could not be used (unreachable, CONNECT refused, 407).
    Proxy,
    /// SB315: the server cannot be reached at all (connection refused, name not resolved).
    Unreachable,
    /// SB401: the server's response did not follow the expected API protocol.
    Protocol,
    /// SB402: the model could not be determined.
    ModelDetect,
    /// SB403: the server could not apply its chat template to the request.
    ChatTemplate,
    /// SB404: the server answers in another API dialect than `--backend` speaks.
    WrongDialect,
    /// SB405: streams went on far past the requested output length.
    RunawayStream,
    /// SB501: reading or writing a file failed.
    Io,
    /// SB601: the run finished but too many requests failed.
    FailureRate,
    /// SB602: the run finished without a single successful request.
    NoSuccess,
    /// SB701: shard records files come from different workloads, seeds or runs.
    ShardMismatch,
    /// SB702: the set of shard records files has duplicate or missing shards.
    ShardSet,
}

impl ErrorCode {
    pub const ALL: [ErrorCode; 36] = [
        ErrorCode::ConfigInvalid,
        ErrorCode::FlagNotSupported,
        ErrorCode::MultimodalUnsupported,
        ErrorCode::ContentTypeUnsupported,
        ErrorCode::PoolingSampling,
        ErrorCode::FlagNotApplicable,
        ErrorCode::OutputCollision,
        ErrorCode::FlagCombination,
        ErrorCode::HfParserMissing,
        ErrorCode::TokenizerLoad,
        ErrorCode::TokenizerOffline,
        ErrorCode::Dataset,
        ErrorCode::DatasetFile,
        ErrorCode::DatasetDownload,
        ErrorCode::EndpointNotReady,
        ErrorCode::TokenizeUnavailable,
        ErrorCode::TokenizeFailed,
        ErrorCode::Transport,
        ErrorCode::HttpStatus,
        ErrorCode::ContentCoding,
        ErrorCode::Redirect,
        ErrorCode::ServerProtocol,
        ErrorCode::TlsCertificate,
        ErrorCode::TlsFile,
        ErrorCode::Proxy,
        ErrorCode::Unreachable,
        ErrorCode::Protocol,
        ErrorCode::ModelDetect,
        ErrorCode::ChatTemplate,
        ErrorCode::WrongDialect,
        ErrorCode::RunawayStream,
        ErrorCode::Io,
        ErrorCode::FailureRate,
        ErrorCode::NoSuccess,
        ErrorCode::ShardMismatch,
        ErrorCode::ShardSet,
    ];

    /// The stable code, e.g. `SB101`.
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorCode::ConfigInvalid => "SB101",
            ErrorCode::FlagNotSupported => "SB102",
            ErrorCode::MultimodalUnsupported => "SB110",
            ErrorCode::ContentTypeUnsupported => "SB111",
            ErrorCode::PoolingSampling => "SB112",
            ErrorCode::FlagNotApplicable => "SB113",
            ErrorCode::OutputCollision => "SB120",
            ErrorCode::FlagCombination => "SB121",
            ErrorCode::HfParserMissing => "SB114",
            ErrorCode::TokenizerLoad => "SB201",
            ErrorCode::TokenizerOffline => "SB202",
            ErrorCode::Dataset => "SB203",
            ErrorCode::DatasetFile => "SB204",
            ErrorCode::DatasetDownload => "SB205",
            ErrorCode::EndpointNotReady => "SB301",
            ErrorCode::TokenizeUnavailable => "SB302",
            ErrorCode::TokenizeFailed => "SB303",
            ErrorCode::Transport => "SB304",
            ErrorCode::HttpStatus => "SB305",
            ErrorCode::ContentCoding => "SB306",
            ErrorCode::Redirect => "SB307",
            ErrorCode::ServerProtocol => "SB308",
            ErrorCode::TlsCertificate => "SB310",
            ErrorCode::TlsFile => "SB311",
            ErrorCode::Proxy => "SB312",
            ErrorCode::Unreachable => "SB315",
            ErrorCode::Protocol => "SB401",
            ErrorCode::ModelDetect => "SB402",
            ErrorCode::ChatTemplate => "SB403",
            ErrorCode::WrongDialect => "SB404",
            ErrorCode::RunawayStream => "SB405",
            ErrorCode::Io => "SB501",
            ErrorCode::FailureRate => "SB601",
            ErrorCode::NoSuccess => "SB602",
            ErrorCode::ShardMismatch => "SB701",
            ErrorCode::ShardSet => "SB702",
        }
    }

    /// Looks a code up by its text (case-insensitive; `sb101`, `SB101` and `101` all work).
    pub fn parse(text: &str) -> Option<ErrorCode> {
        let t = text.trim().to_ascii_uppercase();
        let t = if t.starts_with("SB") { t } else { format!("SB{t}") };
        ErrorCode::ALL.into_iter().find(|c| c.as_str() == t)
    }

    /// A short title.
    pub fn title(self) -> &'static str {
        match self {
            ErrorCode::ConfigInvalid => "invalid configuration",
            ErrorCode::FlagNotSupported => "flag not supported yet",
            ErrorCode::MultimodalUnsupported => "multimodal content not supported by the backend",
            ErrorCode::ContentTypeUnsupported => "content type not supported by the backend",
            ErrorCode::PoolingSampling => "sampling flags given to a pooling backend",
            ErrorCode::FlagNotApplicable => "flag does not apply to this run",
            ErrorCode::OutputCollision => "output path collides with another file of the run",
            ErrorCode::FlagCombination => "flags that cannot be combined",
            ErrorCode::HfParserMissing => "hf dataset needs a vLLM parser servebench does not have",
            ErrorCode::TokenizerLoad => "tokenizer could not be loaded",
            ErrorCode::TokenizerOffline => "tokenizer download needed but offline",
            ErrorCode::Dataset => "workload could not be built",
            ErrorCode::DatasetFile => "dataset file unreadable or malformed",
            ErrorCode::DatasetDownload => "dataset download needed but not possible",
            ErrorCode::EndpointNotReady => "endpoint not ready",
            ErrorCode::TokenizeUnavailable => "tokenize endpoint unavailable",
            ErrorCode::TokenizeFailed => "tokenize endpoint failing",
            ErrorCode::Transport => "HTTP/transport error",
            ErrorCode::HttpStatus => "server returned an error status",
            ErrorCode::ContentCoding => "response body in an undecodable content coding",
            ErrorCode::Redirect => "redirect not followed",
            ErrorCode::ServerProtocol => "server does not speak HTTP/1.1",
            ErrorCode::TlsCertificate => "TLS certificate verification failed",
            ErrorCode::TlsFile => "TLS file unreadable or malformed",
            ErrorCode::Proxy => "proxy failure",
            ErrorCode::Unreachable => "server unreachable",
            ErrorCode::Protocol => "backend protocol error",
            ErrorCode::ModelDetect => "model could not be determined",
            ErrorCode::ChatTemplate => "chat template error",
            ErrorCode::WrongDialect => "server speaks another API dialect",
            ErrorCode::RunawayStream => "stream went on past the requested length",
            ErrorCode::Io => "file I/O error",
            ErrorCode::FailureRate => "failure rate exceeded",
            ErrorCode::NoSuccess => "no request succeeded",
            ErrorCode::ShardMismatch => "shards of different workloads",
            ErrorCode::ShardSet => "incomplete or duplicate shard set",
        }
    }

    /// The full explanation: what it means, common causes, how to fix it.
    pub fn explain(self) -> &'static str {
        match self {
            ErrorCode::ConfigInvalid => {
                "\
A flag (or a combination of flags) has a value servebench cannot use. The run stops before any
network traffic. The message names the flag, the value it got and what it accepts.

Common causes:
  - a negative or zero --request-rate (use a positive number, or inf for no pacing)
  - --burstiness <= 0 (1.0 is a Poisson process; < 1 is burstier, > 1 smoother)
  - --random-range-ratio outside [0, 1), or JSON that does not parse
  - --ramp-up-strategy without both --ramp-up-start-rps and --ramp-up-end-rps, or start > end
  - --extra-body / --metadata / --header / --goodput in the wrong form

Fix: correct the flag as the message says; `servebench --help` lists every flag with its default."
            }
            ErrorCode::FlagNotSupported => {
                "\
The flag exists in a `vllm bench serve` newer than the one servebench follows (every flag of vLLM
0.33 is implemented), or a flag was given a value servebench cannot produce yet (a video bucket
of --random-mm-bucket-config). servebench refuses it rather than silently ignoring it, because
ignoring it would change what is measured.

Fix: drop the flag, or use an equivalent servebench flag if the message names one."
            }
            ErrorCode::MultimodalUnsupported => {
                "\
The workload carries images, audio or video (a multimodal dataset such as random-mm), but the
chosen --backend has no way to send them: completions, responses, embeddings (text input),
pooling and rerank bodies carry text or token ids only. The run stops before any network traffic
rather than silently dropping the media, which would change what is measured.

Fix: use --backend openai-chat (or openai-embeddings-chat for multimodal embeddings), or a
text-only dataset."
            }
            ErrorCode::ContentTypeUnsupported => {
                "\
The prompts are of a kind the chosen --backend cannot carry: token-id prompts
(--prompt-token-ids) need a body field that takes token ids (completions `prompt`, embeddings and
pooling `input`); chat messages, the Responses API `input`, embeddings-chat messages and rerank
queries take text only. Batched inputs (--random-batch-size > 1) exist only for the pooling
backends and cannot be combined with token-id prompts.

Fix: drop --prompt-token-ids, or pick a backend that takes token ids (openai, vllm,
openai-embeddings, vllm-pooling)."
            }
            ErrorCode::PoolingSampling => {
                "\
A pooling backend (openai-embeddings, openai-embeddings-chat, vllm-pooling, vllm-rerank) was given
sampling or generation flags (--temperature, --top-p, --top-k, --min-p, --frequency-penalty,
--presence-penalty, --repetition-penalty, --logprobs, --ignore-eos). Pooling requests generate no
tokens, and vLLM rejects these flags with pooling backends; servebench refuses them before any
network traffic.

Fix: drop the sampling flags, or use a generation backend (openai, openai-chat,
openai-responses)."
            }
            ErrorCode::FlagNotApplicable => {
                "\
A `vllm bench serve` flag was given a value other than its default, and it has no effect on this
run: a dataset flag for another dataset (--spec-bench-category without --dataset-name spec_bench,
--blazedit-min-distance without the Blazedit parser of --dataset-name hf, ...), a request flag the
chosen --backend has no field for (--chat-template-kwargs without a chat backend,
--use-beam-search with a pooling or native backend), or two flags that contradict each other
(--skip-tokenizer-init with --tokenizer). vLLM silently ignores most of these; servebench refuses
them before any network traffic, because a flag that changes nothing would make the result
describe a run that did not happen. A flag left at its vLLM default is never refused.

Fix: drop the flag, or pick the dataset or backend it applies to, as the message says."
            }
            ErrorCode::OutputCollision => {
                "\
An output file of the run (--result-filename in --result-dir, its records file, --records,
--csv, --html-report) is the same file as an input (--dataset-path, --trace, a --tokenizer file)
or as another output. Writing it would destroy the input or mix two outputs in one file. Paths are
compared after resolving symbolic links and `.`/`..`, so `./x` and `x` are the same file. Nothing
was written.

Fix: give the output another name or directory."
            }
            ErrorCode::FlagCombination => {
                "\
Two flags were given that cannot work together, for example --sim (which starts an embedded
simulator and sends every request to it) with --base-url, --host or --port (which name a real
server). Running anyway would silently ignore one of them.

Fix: drop one of the two flags named in the message."
            }
            ErrorCode::HfParserMissing => {
                "\
`--dataset-name hf` was given a dataset id (--dataset-path, or --hf-name with a local file) that
vLLM's `vllm bench serve` reads with a dataset-specific parser: its own prompt text, output
lengths and filtering (for example AI-MO/aimo-validation-aime, vdaita/edit_5k_char,
lmarena-ai/VisionArena-Chat). servebench has not implemented that parser yet. Reading the rows
with the generic hf loader would send different prompts than vLLM does, and the result would
not be comparable, so servebench refuses before any network traffic. `docs/datasets.md` lists
the parsers servebench has.

Fix: use a dataset whose parser servebench has, or convert the rows yourself into a JSONL file
and pass it with --dataset-name custom."
            }
            ErrorCode::TokenizerLoad => {
                "\
The tokenizer named by --tokenizer (or --model when --tokenizer is not given) could not be loaded.

servebench looks for, in order: a built-in tiktoken encoding (cl100k_base, o200k_base, p50k_base,
r50k_base, gpt2), a local tokenizer.json file or a directory containing one, a model id on the
Hugging Face Hub (when online), and finally the server's /tokenize endpoint.

Fix: pass --tokenizer with a path to a tokenizer.json (or its directory) or a built-in encoding."
            }
            ErrorCode::TokenizerOffline => {
                "\
The tokenizer is a Hugging Face model id that is not available locally, and servebench cannot
download it (no network, HF_HUB_OFFLINE set, or the download failed).

Fix: download tokenizer.json once on a machine with network access and pass
--tokenizer /path/to/tokenizer.json (or its directory); or use a built-in encoding such as
--tokenizer cl100k_base when exact model token counts do not matter."
            }
            ErrorCode::Dataset => {
                "\
The workload (prompts and output lengths) could not be built from the chosen dataset options.

Common causes: a dataset file that is missing, truncated or of the wrong format; lengths that the
tokenizer cannot reach exactly; --max-model-len smaller than every prompt.

Fix: follow the message; it names the file and line, or the option, at fault."
            }
            ErrorCode::DatasetFile => {
                "\
A dataset file (--dataset-path) could not be read as the chosen --dataset-name expects. The
message names the file, the line (JSONL, text) or record (JSON array element, Parquet row) at
fault, what was wrong there and how to fix it.

Common causes: a truncated download (JSON that ends early), a file that is not UTF-8, an empty
file, JSON Lines given where a JSON array is expected (or the reverse), a missing or misnamed
column (`prompt` for custom, `conversations` for sharegpt, the text column for hf), a value of the
wrong type (a number where text is expected, a negative `output_tokens`).

Fix: repair or re-download the file; for hf pick the text column with --hf-text-column."
            }
            ErrorCode::DatasetDownload => {
                "\
The dataset is not a local file, so it would have to be downloaded (ShareGPT from the Hugging Face
Hub, an hf dataset or SPEED-Bench from the Hub datasets-server), and that is not possible: the
network is unreachable, HF_HUB_OFFLINE is set, the dataset is gated or private (set HF_TOKEN), or
the server refused.

Fix: download the file once where the network is available and pass it with --dataset-path
/path/to/file (JSON, JSONL or Parquet)."
            }
            ErrorCode::EndpointNotReady => {
                "\
With --ready-check-timeout-sec N (the default is 0: no check, as in vLLM) the first benchmark
request is sent until it succeeds; it did not succeed within N seconds. The message gives the
seconds really waited and the last error. A 4xx answer (other than 408/429) or an answer in
another API dialect ends the wait at once: waiting will not fix it. A server that could not be
reached at all is SB315 instead.

Common causes: the server is still loading the model; wrong --endpoint; the model name is not
served (HTTP 404); an auth header is missing (HTTP 401).

Fix: check the URL and model, or raise --ready-check-timeout-sec for slow model loads."
            }
            ErrorCode::TokenizeUnavailable => {
                "\
The server's /tokenize or /detokenize endpoint cannot be used to verify prompt lengths. servebench
tries every dialect in use (vLLM/SGLang `prompt`, llama.cpp `content`, TGI `inputs`, `text`) at
/tokenize under the server root, then at /v1/tokenize; none answered a token list: each answered
4xx (gateways such as llm-d return 400, others 404), a body of another shape, or an empty token
list for a non-empty prompt. The message names each path and answer, on one line. This is a
warning, not a failure: prompt-length verification is skipped and the run goes on with the client
tokenizer's counts.

Fix: nothing is required. For exact server-side lengths, check the path in the message (the base
URL's prefix is included; a trailing /v1 is dropped for /tokenize), or make sure --tokenizer is
exactly the served model's tokenizer."
            }
            ErrorCode::TokenizeFailed => {
                "\
The server's /tokenize or /detokenize endpoint kept failing with 5xx after retries while verifying
prompt lengths, and no other /tokenize dialect worked. (A server that cannot be reached at all is
SB304.)

Fix: check the server's health and logs; or pass --skip-tokenize-verification to skip the check."
            }
            ErrorCode::Transport => {
                "\
An HTTP request outside the measured benchmark (model list, tokenize, readiness, profiling) could
not complete: connection refused, reset, TLS failure or timeout.

Fix: check that the server is running and reachable at the URL in the message; for a private or
self-signed TLS certificate pass --cacert PATH (or --insecure); see SB310."
            }
            ErrorCode::HttpStatus => {
                "\
A control request (model list, tokenize, profiling, prefix-cache reset) got a non-2xx status.
The status and the first part of the body are in the message.

Fix: follow the server's message; 401/403 usually mean a missing OPENAI_API_KEY or --header."
            }
            ErrorCode::ContentCoding => {
                "\
A response came in a content coding (Content-Encoding) servebench cannot decode, or its
compressed bytes were corrupt. servebench asks for uncompressed answers (Accept-Encoding:
identity) on every request and decodes gzip, x-gzip, deflate (zlib or raw), br and zstd when a
gateway compresses anyway; other codings (compress, a chain such as \"gzip, br\") are refused.
The message names the coding the server sent. For a benchmark request the request fails
(error kind `protocol`); for the readiness check or a control call (model list, tokenize) the
run stops with this code.

Fix: configure the gateway or proxy not to compress (or to honour Accept-Encoding: identity),
or to use gzip/br/zstd; if you pass --header Accept-Encoding=..., drop it."
            }
            ErrorCode::Redirect => {
                "\
The server answered with redirects servebench does not follow: more than 5 hops, a redirect
loop, a redirect without a usable Location, or a 301/302/303 answer to a generation request
(those would turn the POST into a GET; only 307 and 308 keep the method and body).
Control calls (model list, tokenize, metrics) follow 301, 302, 303, 307 and 308; generation
requests follow 307 and 308 and send the body again. A redirect to another origin (scheme,
host or port) is followed with a warning. When redirects happened, the console names the
final URL.

Fix: point --base-url (or --endpoint) at the final URL the server redirects to, so no request
pays the extra round trip; fix the gateway's redirect rules if they loop."
            }
            ErrorCode::ServerProtocol => {
                "\
The server did not answer in HTTP/1.1, the protocol servebench speaks: it sent an HTTP/2
frame (an HTTP/2-only server, e.g. a gRPC port or a server started with HTTP/2 prior
knowledge, answers an HTTP/1.1 request with a SETTINGS or GOAWAY frame), or bytes that are not
HTTP at all (another protocol on that port, TLS spoken to an http:// URL). The message shows
the first bytes it sent, escaped.

Fix: point --base-url at the server's HTTP/1.1 (OpenAI-compatible) port; use https:// for a
TLS port and http:// for a plain one; enable HTTP/1.1 on the server or gateway."
            }
            ErrorCode::TlsCertificate => {
                "\
The TLS handshake with the server failed on a certificate: the server's certificate is not
signed by a certificate authority servebench trusts (a private or self-signed CA), it does not
name the host of --base-url (DNS name or IP address), it has expired; or the server asked for a
client certificate (mutual TLS) and rejected the one sent, or none was sent. A certificate does
not fix itself by waiting, so the readiness check reports this at once instead of retrying.

servebench trusts, in order: --cacert PATH alone (a PEM bundle; it replaces every other root, as
curl's --cacert does); else SSL_CERT_FILE and/or SSL_CERT_DIR when set (they replace the system
store, as rustls-native-certs reads them); else the system trust store; else, when the system
has none, the built-in Mozilla roots. The run header says which was used.

Fix: pass --cacert /path/to/ca.pem with the CA that signed the server's certificate (or set
SSL_CERT_FILE), use the host name the certificate was issued for, or pass --insecure to skip
verification (traffic stays encrypted but the server is not authenticated). For mutual TLS pass
--client-cert PATH and --client-key PATH with a certificate the server's client CA signed."
            }
            ErrorCode::TlsFile => {
                "\
A file given for TLS could not be used: the --cacert bundle, SSL_CERT_FILE or an SSL_CERT_DIR
directory, the --client-cert chain or the --client-key private key. The message names the
file and what was wrong: it does not exist or cannot be read, it is not PEM, it holds no
certificate (or no private key), the key is encrypted, or the key does not belong to the
certificate.

Fix: point the flag (or variable) at a readable PEM file: certificates as -----BEGIN
CERTIFICATE----- blocks; the key as an unencrypted PKCS#8, PKCS#1 (RSA) or SEC1 (EC) PEM block
(decrypt one with `openssl pkey -in key.pem -out plain.pem`)."
            }
            ErrorCode::Proxy => {
                "\
A proxy from HTTPS_PROXY, HTTP_PROXY or ALL_PROXY (either case) could not carry the request: the
proxy did not accept the connection, answered the CONNECT tunnel request with a non-2xx status
(407: proxy credentials missing or wrong; 403: the proxy forbids the destination; 502/503: the
proxy could not reach the server), or the proxy URL has a scheme servebench does not support
(only http:// proxies; no socks or TLS to the proxy). The message names the proxy (credentials
redacted) and the status.

Fix: correct the proxy variable (credentials go in the URL: http://user:password@proxy:3128),
add the server's host to NO_PROXY (host, .domain suffix, IP, CIDR such as 10.0.0.0/8, or *),
or pass --no-proxy to ignore every proxy variable."
            }
            ErrorCode::Unreachable => {
                "\
No connection to the server could be made: the connection was refused (nothing listens on that
host and port), the host name did not resolve, or connecting timed out. With
--ready-check-timeout-sec N the check keeps trying until N seconds pass and then names what it got;
without it (the default, as in vLLM) the first call to the server fails the run at once.

Common causes: the server is not running or still starting; a typo in --base-url, --host or
--port; the server listens on another interface (127.0.0.1 inside a container).

Fix: start the server or correct --base-url/--host/--port; to wait for a server that is still
starting, pass --ready-check-timeout-sec 600."
            }
            ErrorCode::Protocol => {
                "\
The server's answer did not follow the API the chosen --backend speaks (for example a model list
without `data`, or a body that is not JSON).

Fix: check --backend and --endpoint match the server's API."
            }
            ErrorCode::ChatTemplate => {
                "\
The server refused a request because it could not apply the model's chat template (typically
HTTP 400 with a message naming the chat template): the model has no template (a base model),
the template rejects the message layout (e.g. it requires alternating roles or no system
message), or the served tokenizer lacks `chat_template`. servebench recognises the message in
the readiness check (the run stops with this code) and in failed requests (a warning with
this code after the run).

Fix: use --backend openai (completions: no chat template) for base models; or start the server
with a chat template (vLLM: --chat-template FILE); or use a model whose tokenizer has one."
            }
            ErrorCode::WrongDialect => {
                "\
The response is well-formed but in another API dialect than the chosen --backend speaks: for
example OpenAI-style chunks (`choices`) answered to --backend tgi, sglang, llama.cpp or anthropic.
Those native backends send the server's own request body to its own endpoint (/generate_stream,
/generate, /completion, /v1/messages); a proxy or an --endpoint pointing at an OpenAI route
answers in the OpenAI format instead.

Fix: use --backend openai or openai-chat for OpenAI-compatible routes, or point --endpoint at the
server's native route (docs/backends.md lists each backend's endpoint and body)."
            }
            ErrorCode::RunawayStream => {
                "\
Streams went on far past the output length the request asked for: more than
--runaway-stream-factor x max_tokens + 16 events (default factor 4) without [DONE] or a final
event. Such a request fails with error kind `runaway_stream` as soon as the bound is passed,
instead of running until --request-timeout; after the run a warning with this code counts
them. Typical causes: a server that ignores max_tokens or never sends its end-of-stream
marker, a proxy that loops, or a server that sends many empty events per token.

Fix: check the server's stop handling (max_tokens, ignore_eos, the end-of-stream event); if
the server legitimately sends more events per token, raise --runaway-stream-factor, or pass 0
to disable the bound."
            }
            ErrorCode::ModelDetect => {
                "\
No --model was given, and the model could not be read from GET /v1/models.

Fix: pass --model (the served model name) explicitly."
            }
            ErrorCode::Io => {
                "\
Reading or writing a file failed (results, records, dataset, tokenizer). The path is named.

Fix: check the path exists and is writable, and that the disk is not full."
            }
            ErrorCode::FailureRate => {
                "\
The run finished and its results were written, but the share of failed requests exceeded
--max-failure-rate.

Fix: look at the error kinds in the result (`error_kinds`) and the records file."
            }
            ErrorCode::NoSuccess => {
                "\
The run finished but not one request completed successfully, so there are no latencies or
throughputs to report. The result and records files were written (they show every failure), and
the process exits 1 so that scripts and CI notice. The message quotes the first failure.

In a sweep, rate search or --num-runs, each point (run) is judged on its own: the experiment
fails with this code as soon as a point has no successful request. In a --stages run the whole
run counts; a sharded run judges its own shard.

Common causes: a model or LoRA adapter name the server does not serve (HTTP 404), a missing API
key (HTTP 401), a wrong --endpoint or --backend, a server that crashed.

Fix: follow the first failure's message (check --model / --served-model-name / --lora-modules
against the server's /v1/models, the API key, the endpoint)."
            }
            ErrorCode::ShardMismatch => {
                "\
`servebench merge` refuses to combine records files that are not shards of one run: their
workload fingerprints (a hash of the seeded workload, the arrival schedule, the rate settings, the
seed and the servebench version), --seed, --num-shards, total request count or --start-at differ,
or a record sits in the file of a shard it does not belong to. Merging such files would produce
numbers for a workload nobody ran.

Common causes: a shard ran with other flags (dataset, --num-prompts, --request-rate, --seed,
tokenizer), another servebench image, or the files of two runs were mixed in one directory.

Fix: merge only the files of one run; re-run the odd shard with exactly the same flags and image
(docs/scale-out.md)."
            }
            ErrorCode::ShardSet => {
                "\
The records files given to `servebench merge` do not form the set of shards of one run: a shard
index appears twice, some shard indices 0..num-shards are missing, or a file has no shard header
(it was not written by a run with --num-shards).

Fix: pass exactly one records file per shard; re-run a failed shard (same flags and --start-at
of a new run for all shards), or pass --allow-missing-shards to merge the shards present (the
result then covers only part of the workload and says so)."
            }
        }
    }
}

impl fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Errors of the library. Each variant maps to one [`ErrorCode`].
#[derive(Debug, thiserror::Error)]
pub enum BenchError {
    #[error("invalid {flag}: {problem}; fix: {fix}")]
    Config { flag: String, problem: String, fix: String },
    #[error(
        "{flag} is a `vllm bench serve` flag that servebench does not support yet; fix: remove it{hint}"
    )]
    FlagNotSupported { flag: String, hint: String },
    #[error("--backend {backend} cannot send multimodal content{detail}; fix: use --backend openai-chat (or openai-embeddings-chat), or a text-only dataset")]
    MultimodalUnsupported { backend: String, detail: String },
    #[error("--backend {backend} cannot send {content}; fix: {fix}")]
    ContentTypeUnsupported { backend: String, content: String, fix: String },
    #[error("--backend {backend} is a pooling backend and takes no sampling flags (got {flags}); fix: drop them, or use a generation backend")]
    PoolingSampling { backend: String, flags: String },
    #[error("{flag} applies to {applies_to}, and {why}; fix: {fix}")]
    FlagNotApplicable { flag: String, applies_to: String, why: String, fix: String },
    #[error("{output} is the same file as {other}; nothing was written; fix: write {output_flag} elsewhere")]
    OutputCollision { output_flag: String, output: String, other: String },
    #[error("{first} cannot be combined with {second}: {why}; fix: {fix}")]
    FlagCombination { first: String, second: String, why: String, fix: String },
    #[error("--dataset-name hf: vLLM reads '{dataset}' with its {parser} parser, which servebench does not have yet, and the generic loader would send different prompts; fix: convert the rows to JSONL for --dataset-name custom, or use a dataset servebench parses (docs/datasets.md)")]
    HfParserMissing { dataset: String, parser: String },
    #[error("tokenizer '{name}' could not be loaded: {detail}; fix: pass --tokenizer with a tokenizer.json path or a built-in encoding (cl100k_base, o200k_base)")]
    TokenizerLoad { name: String, detail: String },
    #[error("tokenizer '{name}' is not available locally and cannot be downloaded ({detail}); fix: pass --tokenizer /path/to/tokenizer.json")]
    TokenizerOffline { name: String, detail: String },
    #[error("{detail}")]
    Dataset { detail: String },
    #[error("dataset file {path}, {location}: {problem}; fix: {fix}")]
    DatasetFile { path: String, location: String, problem: String, fix: String },
    #[error("dataset '{name}' is not a local file and cannot be downloaded ({detail}); fix: pass --dataset-path /path/to/a/local/copy")]
    DatasetDownload { name: String, detail: String },
    #[error("endpoint not ready after {secs:.1} s: {last_error}; fix: check URL/model or raise --ready-check-timeout-sec")]
    EndpointNotReady { secs: f64, last_error: String },
    #[error("tokenize endpoint unavailable ({detail}); prompt-length verification skipped")]
    TokenizeUnavailable { detail: String },
    #[error(
        "tokenize endpoint failing: {detail}; fix: check the server, or pass --skip-tokenize-verification"
    )]
    TokenizeFailed { detail: String },
    #[error("{context}: {detail}; fix: check that the server is running at that URL")]
    Transport { context: String, detail: String },
    #[error("{context}: HTTP {status}: {body}")]
    HttpStatus { context: String, status: u16, body: String },
    #[error("{context}: {detail}; fix: ask the gateway not to compress, or to use gzip, br or zstd")]
    ContentCoding { context: String, detail: String },
    #[error("{context}: {detail}; fix: point --base-url at the final URL")]
    Redirect { context: String, detail: String },
    #[error(
        "{context}: {detail}; fix: point --base-url at the server's HTTP/1.1 port (http:// or https://)"
    )]
    ServerProtocol { context: String, detail: String },
    #[error("{context}: TLS certificate check failed: {detail}; fix: {fix}")]
    TlsCertificate { context: String, detail: String, fix: String },
    #[error("{what} {path}: {detail}; fix: {fix}")]
    TlsFile { what: String, path: String, detail: String, fix: String },
    #[error("proxy {proxy}: {detail}; fix: check the proxy variables and credentials, set NO_PROXY for this host, or pass --no-proxy")]
    Proxy { proxy: String, detail: String },
    #[error("cannot connect to {addr}: {reason}{waited}; fix: is the server running, and are --base-url/--host/--port right?")]
    Unreachable { addr: String, reason: String, waited: String },
    #[error("{context}: {detail}; fix: check that --backend/--endpoint match the server's API")]
    Protocol { context: String, detail: String },
    #[error("could not determine the model from /v1/models: {detail}; fix: pass --model")]
    ModelDetect { detail: String },
    #[error("the server could not apply its chat template: {detail}; fix: use --backend openai (completions) for base models, or give the server a chat template")]
    ChatTemplate { detail: String },
    #[error("--backend {backend} got a response in another dialect: {detail}; fix: use --backend openai/openai-chat for OpenAI routes, or point --endpoint at the native route")]
    WrongDialect { backend: String, detail: String },
    #[error(
        "{detail}; fix: check the server's stop handling, or raise --runaway-stream-factor (0 disables)"
    )]
    RunawayStream { detail: String },
    #[error("{path}: {detail}")]
    Io { path: String, detail: String },
    #[error("{failed} of {total} requests failed ({rate:.1}%), above --max-failure-rate {limit:.1}%")]
    FailureRate { failed: u64, total: u64, rate: f64, limit: f64 },
    #[error("{context}none of {total} requests succeeded; first failure: {first}; fix: {fix}")]
    NoSuccess { context: String, total: u64, first: String, fix: String },
    #[error("shards are not from one run: {detail}; fix: merge only the shards of one run, all run with the same flags")]
    ShardMismatch { detail: String },
    #[error(
        "{detail}; fix: pass one records file per shard index 0..num-shards (or --allow-missing-shards)"
    )]
    ShardSet { detail: String },
}

impl BenchError {
    /// The stable code of this error.
    pub fn code(&self) -> ErrorCode {
        match self {
            BenchError::Config { .. } => ErrorCode::ConfigInvalid,
            BenchError::FlagNotSupported { .. } => ErrorCode::FlagNotSupported,
            BenchError::MultimodalUnsupported { .. } => ErrorCode::MultimodalUnsupported,
            BenchError::ContentTypeUnsupported { .. } => ErrorCode::ContentTypeUnsupported,
            BenchError::PoolingSampling { .. } => ErrorCode::PoolingSampling,
            BenchError::FlagNotApplicable { .. } => ErrorCode::FlagNotApplicable,
            BenchError::OutputCollision { .. } => ErrorCode::OutputCollision,
            BenchError::FlagCombination { .. } => ErrorCode::FlagCombination,
            BenchError::HfParserMissing { .. } => ErrorCode::HfParserMissing,
            BenchError::TokenizerLoad { .. } => ErrorCode::TokenizerLoad,
            BenchError::TokenizerOffline { .. } => ErrorCode::TokenizerOffline,
            BenchError::Dataset { .. } => ErrorCode::Dataset,
            BenchError::DatasetFile { .. } => ErrorCode::DatasetFile,
            BenchError::DatasetDownload { .. } => ErrorCode::DatasetDownload,
            BenchError::EndpointNotReady { .. } => ErrorCode::EndpointNotReady,
            BenchError::TokenizeUnavailable { .. } => ErrorCode::TokenizeUnavailable,
            BenchError::TokenizeFailed { .. } => ErrorCode::TokenizeFailed,
            BenchError::Transport { .. } => ErrorCode::Transport,
            BenchError::HttpStatus { .. } => ErrorCode::HttpStatus,
            BenchError::ContentCoding { .. } => ErrorCode::ContentCoding,
            BenchError::Redirect { .. } => ErrorCode::Redirect,
            BenchError::ServerProtocol { .. } => ErrorCode::ServerProtocol,
            BenchError::RunawayStream { .. } => ErrorCode::RunawayStream,
            BenchError::TlsCertificate { .. } => ErrorCode::TlsCertificate,
            BenchError::TlsFile { .. } => ErrorCode::TlsFile,
            BenchError::Proxy { .. } => ErrorCode::Proxy,
            BenchError::Unreachable { .. } => ErrorCode::Unreachable,
            BenchError::Protocol { .. } => ErrorCode::Protocol,
            BenchError::ModelDetect { .. } => ErrorCode::ModelDetect,
            BenchError::ChatTemplate { .. } => ErrorCode::ChatTemplate,
            BenchError::WrongDialect { .. } => ErrorCode::WrongDialect,
            BenchError::Io { .. } => ErrorCode::Io,
            BenchError::FailureRate { .. } => ErrorCode::FailureRate,
            BenchError::NoSuccess { .. } => ErrorCode::NoSuccess,
            BenchError::ShardMismatch { .. } => ErrorCode::ShardMismatch,
            BenchError::ShardSet { .. } => ErrorCode::ShardSet,
        }
    }

    /// Shorthand for a configuration error.
    pub fn config(flag: impl Into<String>, problem: impl Into<String>, fix: impl Into<String>) -> Self {
        BenchError::Config { flag: flag.into(), problem: problem.into(), fix: fix.into() }
    }

    /// Shorthand for a flag that does not apply to this run (SB113).
    pub fn not_applicable(
        flag: impl Into<String>,
        applies_to: impl Into<String>,
        why: impl Into<String>,
        fix: impl Into<String>,
    ) -> Self {
        BenchError::FlagNotApplicable {
            flag: flag.into(),
            applies_to: applies_to.into(),
            why: why.into(),
            fix: fix.into(),
        }
    }

    /// Shorthand for an I/O error on `path`.
    pub fn io(path: impl fmt::Display, err: impl fmt::Display) -> Self {
        BenchError::Io { path: path.to_string(), detail: err.to_string() }
    }

    /// The one-line form shown to users: `error[SB101]: ...`.
    pub fn user_line(&self) -> String {
        format!("error[{}]: {} (see `servebench explain {}`)", self.code(), self, self.code())
    }
}

/// Result alias for the library.
pub type Result<T, E = BenchError> = std::result::Result<T, E>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_are_unique_and_parse_back() {
        let mut seen = std::collections::HashSet::new();
        for c in ErrorCode::ALL {
            assert!(seen.insert(c.as_str()), "duplicate code {c}");
            assert_eq!(ErrorCode::parse(c.as_str()), Some(c));
            assert_eq!(ErrorCode::parse(&c.as_str().to_lowercase()), Some(c));
            assert!(c.explain().contains("Fix"), "{c} explanation names no fix");
        }
        assert_eq!(ErrorCode::parse("101"), Some(ErrorCode::ConfigInvalid));
        assert_eq!(ErrorCode::parse("SB999"), None);
    }

    #[test]
    fn user_line_names_code_and_fix() {
        let e = BenchError::config(
            "--request-rate",
            "must be > 0 or inf (got -1)",
            "pass a positive rate or inf",
        );
        let line = e.user_line();
        assert!(line.starts_with("error[SB101]: invalid --request-rate"));
        assert!(line.contains("fix: pass a positive rate"));
        assert!(!line.contains('\n'));
    }
}

/// The whole error catalogue as Markdown (the text of `docs/errors.md`).
pub fn errors_markdown() -> String {
    let mut out = String::from(
        "# Error codes\n\nEvery user-facing error of servebench has a stable code. \
         `servebench explain CODE` prints the entry; this file is generated from the same text \
         (a test keeps them identical).\n\nRequest-level failures (a request that got HTTP 503, a \
         stream cut mid-way) are not errors of the run: they become failed records with an error \
         kind (`connect`, `transport`, `http_status`, `protocol`, `event_too_large`, \
         `server_error`, `no_tokens`, `incomplete`, `timeout`, `runaway_stream`), counted in the result under \
         `error_kinds`.\n",
    );
    for c in ErrorCode::ALL {
        out.push_str(&format!("\n## {} — {}\n\n```text\n{}\n```\n", c.as_str(), c.title(), c.explain()));
    }
    out
}

#[cfg(test)]
mod docs_tests {
    /// docs/errors.md is generated from `ErrorCode::explain`; set UPDATE_DOCS=1 to rewrite it.
    #[test]
    fn docs_errors_md_matches_explain_texts() {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/errors.md");
        let expected = super::errors_markdown();
        if std::env::var_os("UPDATE_DOCS").is_some() {
            std::fs::write(path, &expected).unwrap();
        }
        let actual = std::fs::read_to_string(path).unwrap_or_default();
        assert!(
            actual == expected,
            "docs/errors.md is stale: run UPDATE_DOCS=1 cargo test -p servebench-core"
        );
    }
}

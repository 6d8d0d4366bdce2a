//! Watching the run: what the run tells its caller (`observer`), live metrics (`live`) and
//! our own `/metrics` endpoint for them (`endpoint`), the client's health (`health`) and a
//! warning while it goes when the client saturates (`saturation_watch`), notes
//! about the network path (`network_notes`), and the server side: scraping its `/metrics`
//! (`scrape`) and its profiler (`profiling`), both started and stopped with the measured phase
//! (`server_side`). Every engine's `/metrics` and GPU telemetry: the polling loops (`poll`), one
//! scrape parsed (`exposition`), what each series means (`meaning`), one endpoint's view
//! (`endpoint_track`), GPU readings and energy (`gpu`), the URLs (`metrics_url`), the
//! server-metrics file (`series_file`), the latest values for a live view (`latest`) and the
//! dashboard's key figures from them (`server_live`).

pub mod endpoint;
pub mod endpoint_track;
pub mod exposition;
pub mod gpu;
pub mod health;
pub mod latest;
pub mod live;
pub mod meaning;
pub mod metrics_url;
pub mod network_notes;
pub mod notice;
pub mod observer;
pub mod poll;
pub mod profiling;
pub mod saturation_watch;
pub mod scrape;
pub mod series_file;
pub mod server_live;
pub mod server_side;

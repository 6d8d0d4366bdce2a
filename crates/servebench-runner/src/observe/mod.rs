//! Watching the run: what the run tells its caller (`observer`), live metrics (`live`) and
//! our own `/metrics` endpoint for them (`endpoint`), the client's health (`health`) and a
//! warning while it goes when the client saturates (`saturation_watch`), notes
//! about the network path (`network_notes`), and the server side: scraping its `/metrics`
//! (`scrape`) and its profiler (`profiling`), both started and stopped with the measured phase
//! (`server_side`).

pub mod endpoint;
pub mod health;
pub mod live;
pub mod network_notes;
pub mod notice;
pub mod observer;
pub mod profiling;
pub mod saturation_watch;
pub mod scrape;
pub mod server_side;

//! An `axum::Router` served on an ephemeral port of 127.0.0.1.

/// Serves `app` on `127.0.0.1:0` from a task of the current runtime; returns its base URL
/// (`http://127.0.0.1:PORT`). The server lives until the runtime ends.
pub async fn serve(app: axum::Router) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind 127.0.0.1:0");
    let addr = listener.local_addr().expect("local address");
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    format!("http://{addr}")
}

/// [`serve`] on a runtime of its own, in a background thread: for synchronous tests (e.g. ones
/// that run the `servebench` binary) that need an HTTP server. Returns the base URL.
pub fn serve_in_background(app: axum::Router) -> String {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime");
        rt.block_on(async move {
            tx.send(serve(app).await).expect("report the URL");
            std::future::pending::<()>().await;
        });
    });
    rx.recv().expect("server started")
}

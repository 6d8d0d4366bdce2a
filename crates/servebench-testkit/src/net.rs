//! Ports on 127.0.0.1 for tests of servers that cannot be reached.

use std::net::{Ipv4Addr, SocketAddrV4, TcpListener};
use std::os::fd::OwnedFd;
use std::sync::Mutex;
use std::thread::JoinHandle;

/// The sockets that hold [`closed_port`]'s ports, for the test process's life.
static HELD_PORTS: Mutex<Vec<OwnedFd>> = Mutex::new(Vec::new());

/// A TCP socket bound to an ephemeral port of 127.0.0.1, not listening, held for the test
/// process's life, and its port. Connects to the port are refused, and no socket of the machine
/// is given the port by a bind to port 0 meanwhile (a port bound and closed again was once handed
/// to a server running beside, and a "refused" connect succeeded). `reuse`: `SO_REUSEADDR`, so
/// that a listener with it (std's) may bind the same port beside it.
fn reserved_port(reuse: bool) -> u16 {
    use rustix::net::{bind, getsockname, socket, sockopt, AddressFamily, SocketType};
    let fd = socket(AddressFamily::INET, SocketType::STREAM, None).expect("a TCP socket");
    sockopt::set_socket_reuseaddr(&fd, reuse).expect("SO_REUSEADDR");
    bind(&fd, &SocketAddrV4::new(Ipv4Addr::LOCALHOST, 0)).expect("bind 127.0.0.1:0");
    let addr = SocketAddrV4::try_from(getsockname(&fd).expect("getsockname")).expect("an IPv4 address");
    HELD_PORTS.lock().unwrap_or_else(|poisoned| poisoned.into_inner()).push(fd);
    addr.port()
}

/// A port on 127.0.0.1 that nothing listens on, and nothing will: its socket stays bound, not listening.
pub fn closed_port() -> u16 {
    reserved_port(false)
}

/// A port whose server accepts one connection, closes it and goes away: the first connect
/// succeeds (a client's reachability probe), every later one is refused (the port stays
/// bound, not listening). Join the handle to know the connection was taken.
pub fn accept_once() -> (u16, JoinHandle<()>) {
    let port = reserved_port(true);
    let l = TcpListener::bind(("127.0.0.1", port)).expect("listen on the reserved port");
    (port, std::thread::spawn(move || drop(l.accept())))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_closed_port_refuses_and_accept_once_takes_one_connection() {
        let e = std::net::TcpStream::connect(("127.0.0.1", closed_port())).unwrap_err();
        assert_eq!(e.kind(), std::io::ErrorKind::ConnectionRefused);
        let (port, gone) = accept_once();
        drop(std::net::TcpStream::connect(("127.0.0.1", port)).unwrap());
        gone.join().unwrap();
        let e = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap_err();
        assert_eq!(e.kind(), std::io::ErrorKind::ConnectionRefused);
    }
}

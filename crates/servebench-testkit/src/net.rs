//! Ports on 127.0.0.1 for tests of servers that cannot be reached.

use std::net::{Ipv4Addr, SocketAddrV4, TcpListener};
use std::os::fd::OwnedFd;
use std::sync::Mutex;
use std::thread::JoinHandle;

/// The sockets that hold [`closed_port`]'s ports, for the test process's life.
static HELD_PORTS: Mutex<Vec<OwnedFd>> = Mutex::new(Vec::new());

/// A port on 127.0.0.1 that nothing listens on, and nothing will: a TCP socket is bound to an
/// ephemeral port and kept bound without listening, so a connect to it is refused and no other
/// socket of the machine can take the port meanwhile (a port bound and closed again was once
/// handed to a test server running beside, and the "refused" connect succeeded).
pub fn closed_port() -> u16 {
    use rustix::net::{bind, getsockname, socket, AddressFamily, SocketType};
    let fd = socket(AddressFamily::INET, SocketType::STREAM, None).expect("a TCP socket");
    bind(&fd, &SocketAddrV4::new(Ipv4Addr::LOCALHOST, 0)).expect("bind 127.0.0.1:0");
    let addr = SocketAddrV4::try_from(getsockname(&fd).expect("getsockname")).expect("an IPv4 address");
    HELD_PORTS.lock().unwrap_or_else(|poisoned| poisoned.into_inner()).push(fd);
    addr.port()
}

/// A port whose server accepts one connection, closes it and goes away: the first connect
/// succeeds (a client's reachability probe), every later one is refused. Join the handle to
/// know the connection was taken.
pub fn accept_once() -> (u16, JoinHandle<()>) {
    let l = TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1:0");
    let port = l.local_addr().expect("local address").port();
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

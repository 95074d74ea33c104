//! Which TCP connections to a server on 127.0.0.1 exist, from the kernel's tables
//! (/proc/net/tcp and /proc/net/tcp6, every state including TIME_WAIT), so that a run can
//! count the connections a cell opened.
//!
//! A connection is named by its client's port. A closed one stays in the table for a minute
//! (TIME_WAIT, on the side that closed first), so the difference of two snapshots counts the
//! connections opened between them; a port the kernel reuses within that minute would be
//! counted once, so the count can only be low.

use std::collections::BTreeSet;

/// The client ports of every connection, open or recently closed, between 127.0.0.1 and
/// `server_port` on 127.0.0.1 (IPv4, or IPv4-mapped on a dual-stack socket).
pub(crate) fn client_ports(server_port: u16) -> BTreeSet<u16> {
    let mut ports = BTreeSet::new();
    for table in ["/proc/net/tcp", "/proc/net/tcp6"] {
        let Ok(text) = std::fs::read_to_string(table) else { continue };
        ports.extend(text.lines().skip(1).filter_map(|line| client_port(line, server_port)));
    }
    ports
}

/// The client's port of one table line, when it is a connection to `server_port` on
/// 127.0.0.1 (the listening socket and other connections give `None`).
fn client_port(line: &str, server_port: u16) -> Option<u16> {
    let mut fields = line.split_whitespace().skip(1);
    let local = endpoint(fields.next()?)?;
    let remote = endpoint(fields.next()?)?;
    if !(local.0 && remote.0) || remote.1 == 0 {
        return None;
    }
    match (local.1 == server_port, remote.1 == server_port) {
        (true, false) => Some(remote.1),
        (false, true) => Some(local.1),
        _ => None,
    }
}

/// `ADDRESS:PORT` in the table's hexadecimal: whether the address is 127.0.0.1, and the port.
fn endpoint(text: &str) -> Option<(bool, u16)> {
    let (address, port) = text.split_once(':')?;
    let port = u16::from_str_radix(port, 16).ok()?;
    // The address is in the kernel's byte order (little-endian words on x86 and arm64):
    // 127.0.0.1 is 0100007F, and as IPv4-mapped IPv6 (::ffff:127.0.0.1) its last word is
    // the same after 0000000000000000FFFF0000.
    let loopback = matches!(address, "0100007F" | "0000000000000000FFFF00000100007F");
    Some((loopback, port))
}

#[cfg(test)]
mod tests {
    use super::*;

    const TABLE: &str = "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 0100007F:1F90 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 1 1 0000000000000000 100 0 0 10 0
   1: 0100007F:1F90 0100007F:C350 01 00000000:00000000 00:00000000 00000000     0        0 2 1 0000000000000000 20 4 30 10 -1
   2: 0100007F:C350 0100007F:1F90 01 00000000:00000000 00:00000000 00000000     0        0 3 1 0000000000000000 20 4 30 10 -1
   3: 0100007F:C352 0100007F:1F90 06 00000000:00000000 03:00000F9E 00000000     0        0 0 3 0000000000000000
   4: 0100007F:C354 0100007F:0050 01 00000000:00000000 00:00000000 00000000     0        0 4 1 0000000000000000 20 4 30 10 -1";

    #[test]
    fn connections_are_named_by_their_client_port() {
        let ports: BTreeSet<u16> =
            TABLE.lines().skip(1).filter_map(|line| client_port(line, 0x1F90)).collect();
        // The listener is left out, both ends of one connection count once, TIME_WAIT
        // counts, a connection to another port does not.
        assert_eq!(ports, BTreeSet::from([0xC350, 0xC352]));
    }

    #[test]
    fn ipv4_mapped_loopback_is_loopback() {
        let line = "   0: 0000000000000000FFFF00000100007F:1F90 0000000000000000FFFF00000100007F:C350 01 0";
        assert_eq!(client_port(line, 0x1F90), Some(0xC350));
        let elsewhere = "   0: 0000000000000000FFFF00000100007F:1F90 0000000000000000FFFF00000200000A:C350 01 0";
        assert_eq!(client_port(elsewhere, 0x1F90), None);
    }
}

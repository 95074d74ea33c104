//! Who a client is, for the bounds per client (sessions, listen streams): the principal it
//! authenticated as, whatever address it comes from; else, for an anonymous client, not its
//! exact address, which one machine can change at will. Every loopback address is one client (they
//! are all this machine: 127.0.0.2 is as near as 127.0.0.1), an IPv4 address is one, and an
//! IPv6 address counts by its /64, the block a network gives one host and in which it may pick
//! any address it likes. An IPv4 address written as IPv6 (`::ffff:a.b.c.d`) is that IPv4
//! address.

use std::net::{IpAddr, Ipv4Addr};
use std::sync::Arc;

use toolgate_intercept::Principal;

/// A client, as the bounds per client count it.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) enum ClientKey {
    /// An authenticated principal (`kind:id@tenant`), from any address.
    Principal(Arc<str>),
    /// This machine.
    Loopback,
    /// One IPv4 address.
    V4(Ipv4Addr),
    /// The first 64 bits of an IPv6 address.
    V6Block(u64),
}

impl ClientKey {
    /// The client that is `principal`, connected from `address`: the principal when it names
    /// someone, else the address.
    pub(crate) fn of_caller(principal: &Principal, address: IpAddr) -> ClientKey {
        if principal.is_anonymous() {
            ClientKey::of(address)
        } else {
            ClientKey::Principal(principal.to_string().into())
        }
    }

    /// The client at `address`.
    pub(crate) fn of(address: IpAddr) -> ClientKey {
        let address = address.to_canonical();
        if address.is_loopback() {
            return ClientKey::Loopback;
        }
        match address {
            IpAddr::V4(v4) => ClientKey::V4(v4),
            IpAddr::V6(v6) => ClientKey::V6Block((v6.to_bits() >> 64) as u64),
        }
    }
}

impl std::fmt::Display for ClientKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ClientKey::Principal(principal) => f.write_str(principal),
            ClientKey::Loopback => f.write_str("loopback"),
            ClientKey::V4(v4) => write!(f, "{v4}"),
            ClientKey::V6Block(block) => {
                let prefix = std::net::Ipv6Addr::from_bits(u128::from(*block) << 64);
                write!(f, "{prefix}/64")
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(address: &str) -> ClientKey {
        ClientKey::of(address.parse().expect("an address"))
    }

    #[test]
    fn loopback_is_one_client_and_ipv6_counts_by_its_64() {
        for loopback in ["127.0.0.1", "127.0.0.2", "127.255.0.9", "::1", "::ffff:127.0.0.3"] {
            assert_eq!(key(loopback), ClientKey::Loopback, "{loopback}");
        }
        assert_eq!(key("10.0.0.1"), key("::ffff:10.0.0.1"));
        assert_ne!(key("10.0.0.1"), key("10.0.0.2"));
        assert_eq!(key("2001:db8:1:2::1"), key("2001:db8:1:2:ffff:ffff:ffff:ffff"));
        assert_ne!(key("2001:db8:1:2::1"), key("2001:db8:1:3::1"));
        assert_eq!(key("2001:db8:1:2::7").to_string(), "2001:db8:1:2::/64");
        assert_eq!(key("::1").to_string(), "loopback");
    }

    #[test]
    fn a_principal_is_one_client_from_anywhere_and_strangers_go_by_address() {
        let alice = Principal::new("jwt", "alice");
        let here = "10.0.0.1".parse().unwrap();
        let there = "10.0.0.2".parse().unwrap();
        assert_eq!(ClientKey::of_caller(&alice, here), ClientKey::of_caller(&alice, there));
        assert_ne!(
            ClientKey::of_caller(&alice, here),
            ClientKey::of_caller(&Principal::new("jwt", "bob"), here)
        );
        let anonymous = Principal::anonymous();
        assert_eq!(ClientKey::of_caller(&anonymous, here), key("10.0.0.1"));
        assert_ne!(ClientKey::of_caller(&anonymous, here), ClientKey::of_caller(&anonymous, there));
        assert_eq!(ClientKey::of_caller(&alice, here).to_string(), "jwt:alice");
    }
}

//! Which addresses `web_fetch` may not reach unless `tools.web.fetch.allowPrivate` is set: every
//! address that is not on the public internet (loopback, private networks, link-local, shared
//! CGNAT space, multicast, documentation and reserved ranges). Without this a model — or a page
//! that tells it what to fetch — could read the gateway's own admin ports, a cloud's metadata
//! service (169.254.169.254) or the machines next to it (SSRF).
//!
//! IPv6 forms that carry an IPv4 address (mapped `::ffff:a.b.c.d`, NAT64 `64:ff9b::/96`, 6to4
//! `2002::/16`) are judged by that IPv4 address, so `::ffff:127.0.0.1` is loopback too.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// Why `ip` is not a public address (`"loopback"`, `"private"`, …), or `None` when it is one.
pub fn not_public(ip: IpAddr) -> Option<&'static str> {
    match ip {
        IpAddr::V4(v4) => v4_kind(v4),
        IpAddr::V6(v6) => v6_kind(v6),
    }
}

fn v4_kind(ip: Ipv4Addr) -> Option<&'static str> {
    let [a, b, c, _] = ip.octets();
    let kind = match (a, b, c) {
        (0, _, _) => "unspecified (this-network)",
        (10, _, _) => "private",
        (100, 64..=127, _) => "shared (carrier-grade NAT)",
        (127, _, _) => "loopback",
        (169, 254, _) => "link-local",
        (172, 16..=31, _) => "private",
        (192, 0, 0) => "IETF protocol",
        (192, 0, 2) | (198, 51, 100) | (203, 0, 113) => "documentation",
        (192, 88, 99) => "6to4 relay",
        (192, 168, _) => "private",
        (198, 18..=19, _) => "benchmarking",
        (224..=239, _, _) => "multicast",
        _ if ip.is_broadcast() => "broadcast",
        (240..=255, _, _) => "reserved",
        _ => return None,
    };
    Some(kind)
}

fn v6_kind(ip: Ipv6Addr) -> Option<&'static str> {
    if let Some(v4) = embedded_v4(ip) {
        return v4_kind(v4);
    }
    let s = ip.segments();
    let kind = match s {
        [0, 0, 0, 0, 0, 0, 0, 0] => "unspecified",
        [0, 0, 0, 0, 0, 0, 0, 1] => "loopback",
        // `::a.b.c.d`, the deprecated IPv4-compatible form: nothing public answers there.
        [0, 0, 0, 0, 0, 0, _, _] => "IPv4-compatible (deprecated)",
        [0x64, 0xff9b, 1, ..] => "local NAT64",
        [0x100, 0, 0, 0, ..] => "discard-only",
        [0x2001, 0, ..] => "Teredo",
        [0x2001, 0xdb8, ..] => "documentation",
        [0x3fff, b, ..] if b < 0x1000 => "documentation",
        _ if s[0] & 0xffc0 == 0xfe80 => "link-local",
        _ if s[0] & 0xffc0 == 0xfec0 => "site-local (deprecated)",
        _ if s[0] & 0xfe00 == 0xfc00 => "unique-local",
        _ if s[0] & 0xff00 == 0xff00 => "multicast",
        // Only 2000::/3 is handed out for the public internet.
        _ if s[0] & 0xe000 != 0x2000 => "reserved",
        _ => return None,
    };
    Some(kind)
}

/// The IPv4 address an IPv6 one stands for: mapped (`::ffff:0:0/96`), NAT64 (`64:ff9b::/96`)
/// or 6to4 (`2002::/16`, the address in bits 16–48).
fn embedded_v4(ip: Ipv6Addr) -> Option<Ipv4Addr> {
    if let Some(v4) = ip.to_ipv4_mapped() {
        return Some(v4);
    }
    let o = ip.octets();
    let s = ip.segments();
    match s {
        [0x64, 0xff9b, 0, 0, 0, 0, _, _] => Some(Ipv4Addr::new(o[12], o[13], o[14], o[15])),
        [0x2002, ..] => Some(Ipv4Addr::new(o[2], o[3], o[4], o[5])),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kind(address: &str) -> Option<&'static str> {
        not_public(address.parse().unwrap())
    }

    #[test]
    fn ipv4_outside_the_public_internet_is_named() {
        let cases = [
            ("0.0.0.0", Some("unspecified (this-network)")),
            ("0.1.2.3", Some("unspecified (this-network)")),
            ("10.0.0.1", Some("private")),
            ("100.64.0.1", Some("shared (carrier-grade NAT)")),
            ("100.127.255.254", Some("shared (carrier-grade NAT)")),
            ("127.0.0.1", Some("loopback")),
            ("127.255.0.9", Some("loopback")),
            ("169.254.169.254", Some("link-local")),
            ("172.16.0.1", Some("private")),
            ("172.31.255.255", Some("private")),
            ("192.168.1.1", Some("private")),
            ("192.0.0.8", Some("IETF protocol")),
            ("192.0.2.1", Some("documentation")),
            ("198.18.0.1", Some("benchmarking")),
            ("224.0.0.251", Some("multicast")),
            ("239.255.255.250", Some("multicast")),
            ("240.0.0.1", Some("reserved")),
            ("255.255.255.255", Some("broadcast")),
        ];
        for (address, expected) in cases {
            assert_eq!(kind(address), expected, "{address}");
        }
    }

    #[test]
    fn public_ipv4_next_to_the_private_ranges_is_public() {
        for address in [
            "1.1.1.1",
            "8.8.8.8",
            "9.255.255.255",
            "11.0.0.1",
            "100.63.255.255",
            "100.128.0.1",
            "126.255.255.255",
            "128.0.0.1",
            "169.253.1.1",
            "172.15.255.255",
            "172.32.0.1",
            "192.167.1.1",
            "192.169.0.1",
            "198.20.0.1",
            "223.255.255.255",
        ] {
            assert_eq!(kind(address), None, "{address}");
        }
    }

    #[test]
    fn ipv6_outside_the_public_internet_is_named() {
        let cases = [
            ("::", Some("unspecified")),
            ("::1", Some("loopback")),
            ("::7f00:1", Some("IPv4-compatible (deprecated)")),
            ("fe80::1", Some("link-local")),
            ("febf::1", Some("link-local")),
            ("fec0::1", Some("site-local (deprecated)")),
            ("fc00::1", Some("unique-local")),
            ("fd12:3456::1", Some("unique-local")),
            ("ff02::1", Some("multicast")),
            ("2001:db8::1", Some("documentation")),
            ("2001::1", Some("Teredo")),
            ("100::1", Some("discard-only")),
            ("64:ff9b:1::1", Some("local NAT64")),
            ("fe00::1", Some("reserved")),
            ("4000::1", Some("reserved")),
            ("3fff:fff::1", Some("documentation")),
        ];
        for (address, expected) in cases {
            assert_eq!(kind(address), expected, "{address}");
        }
        for address in [
            "2606:4700::1111",
            "2a00:1450:4001::200e",
            "2001:4860::8888",
            "3fff:1000::1",
        ] {
            assert_eq!(kind(address), None, "{address}");
        }
    }

    #[test]
    fn ipv6_carrying_ipv4_is_judged_by_the_ipv4_address() {
        let cases = [
            ("::ffff:127.0.0.1", Some("loopback")),
            ("::ffff:10.1.2.3", Some("private")),
            ("::ffff:169.254.169.254", Some("link-local")),
            ("::ffff:8.8.8.8", None),
            ("64:ff9b::192.168.0.1", Some("private")),
            ("64:ff9b::1.1.1.1", None),
            ("2002:7f00:1::1", Some("loopback")),
            ("2002:0808:0808::1", None),
        ];
        for (address, expected) in cases {
            assert_eq!(kind(address), expected, "{address}");
        }
    }
}

//! The one content hash the project names things by: lowercase hex SHA-256.

use sha2::{Digest, Sha256};

/// Lowercase hex SHA-256 of `parts`, fed in order with nothing between them (a caller that
/// needs boundaries puts a separator part between).
pub fn sha256_hex(parts: &[&[u8]]) -> String {
    use std::fmt::Write as _;
    let mut hasher = Sha256::new();
    for part in parts {
        hasher.update(part);
    }
    let mut hex = String::with_capacity(64);
    for byte in hasher.finalize() {
        let _ = write!(hex, "{byte:02x}");
    }
    hex
}

#[cfg(test)]
mod tests {
    use super::sha256_hex;

    #[test]
    fn the_hex_is_the_known_digest_and_parts_are_fed_in_order() {
        assert_eq!(
            sha256_hex(&[b"abc"]),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
        assert_eq!(sha256_hex(&[b"a", b"bc"]), sha256_hex(&[b"abc"]));
    }
}

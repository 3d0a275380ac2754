//! Point ids: Qdrant wants an unsigned integer or a UUID, hindsight ids are arbitrary strings.

use sha2::{Digest, Sha256};

/// Domain separator so point ids never collide with hashes computed for another purpose.
const DOMAIN: &[u8] = b"hindsight/memory-id/v1\0";

/// The Qdrant point id of a memory: a UUID derived from the memory id alone.
///
/// The first 16 bytes of `SHA-256("hindsight/memory-id/v1\0" || id)`, stamped as an RFC 9562
/// version-8 ("custom") UUID, in hyphenated text form. It is deterministic (any process finds the
/// point of an id without a lookup table) and has 122 random bits, so two ids collide with
/// negligible probability; the payload still carries the memory id and every read checks it.
///
/// Only the id is hashed, not `(namespace, id)`: the `Store` contract makes ids unique across the
/// whole store (inserting an existing id into another namespace is a `Conflict`), and hashing the id
/// alone turns that check into a single point lookup. Namespace isolation is enforced by the
/// payload: every read compares the stored namespace with the requested one.
pub fn point_id(memory_id: &str) -> String {
    let mut h = Sha256::new();
    h.update(DOMAIN);
    h.update(memory_id.as_bytes());
    let digest = h.finalize();
    let mut bytes = [0u8; 16];
    bytes.copy_from_slice(&digest[..16]);
    uuid::Builder::from_custom_bytes(bytes)
        .into_uuid()
        .hyphenated()
        .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deterministic_valid_v8_uuid() {
        let a = point_id("ORD-1");
        assert_eq!(a, point_id("ORD-1"), "same id, same point");
        let u = uuid::Uuid::parse_str(&a).expect("a valid UUID");
        assert_eq!(u.get_version_num(), 8, "custom (v8) UUID: {a}");
        assert_eq!(u.get_variant(), uuid::Variant::RFC4122);
        assert_eq!(a.len(), 36);
    }

    #[test]
    fn distinct_ids_give_distinct_points() {
        let ids = ["a", "b", "A", "a ", "", "中文", "ns-a/x", "ns-a\0x"];
        let mut seen = std::collections::BTreeSet::new();
        for id in ids {
            assert!(seen.insert(point_id(id)), "collision for {id:?}");
        }
    }

    #[test]
    fn stable_across_releases() {
        // Changing the derivation orphans every stored point: this pins it.
        let expected = {
            let mut h = Sha256::new();
            h.update(b"hindsight/memory-id/v1\0mem-1");
            let d = h.finalize();
            let mut b = [0u8; 16];
            b.copy_from_slice(&d[..16]);
            b[6] = (b[6] & 0x0f) | 0x80;
            b[8] = (b[8] & 0x3f) | 0x80;
            uuid::Uuid::from_bytes(b).hyphenated().to_string()
        };
        assert_eq!(point_id("mem-1"), expected);
    }
}

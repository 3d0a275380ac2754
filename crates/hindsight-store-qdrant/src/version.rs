//! The server versions this store is tested against.
//!
//! `qdrant-client`'s own compatibility check prints to stdout, which would corrupt the MCP stdio
//! transport, so the client skips it and [`check`] logs through `tracing` instead: a server
//! outside the tested range still works as far as its API allows, with a warning naming both
//! versions.

/// The oldest server minor version (of major 1) the conformance suite runs against in CI
/// (`scripts/qdrant-test-server`, and the image the compose file pins).
pub(crate) const TESTED: (u64, u64) = (1, 18);

/// `(major, minor)` of a version string such as `1.18.3` or `v1.18.3`.
pub(crate) fn major_minor(version: &str) -> Option<(u64, u64)> {
    let mut parts = version.trim().trim_start_matches('v').split('.');
    let major = parts.next()?.parse().ok()?;
    let minor = parts.next()?.parse().ok()?;
    Some((major, minor))
}

/// Whether a server of `version` is in the tested range: major 1, minor at least [`TESTED`]'s.
pub(crate) fn is_tested(version: &str) -> bool {
    major_minor(version).is_some_and(|(major, minor)| major == TESTED.0 && minor >= TESTED.1)
}

/// Logs a warning when the server at `url` reports a version outside the tested range.
pub(crate) fn check(url: &str, server_version: &str) {
    if !is_tested(server_version) {
        tracing::warn!(
            url,
            server_version,
            client_version = "qdrant-client 1.20",
            "Qdrant server version outside the tested range (1.{}+ of major 1)",
            TESTED.1
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_parse_and_the_tested_range_is_major_1_from_minor_18() {
        assert_eq!(major_minor("1.18.3"), Some((1, 18)));
        assert_eq!(major_minor("v1.20.0"), Some((1, 20)));
        assert_eq!(major_minor("garbage"), None);
        assert!(is_tested("1.18.3") && is_tested("1.20.1"));
        assert!(!is_tested("1.17.9") && !is_tested("2.0.0") && !is_tested("dev"));
    }
}

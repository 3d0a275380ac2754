//! The [`WorkingMemory`] cases. Each takes a [`WorkingMemoryFactory`], opens a fresh working
//! memory and panics on the first violation.
//! [`working_memory_conformance_tests!`](crate::working_memory_conformance_tests) runs all of them.
//!
//! TTL cases sleep past short TTLs (tens to hundreds of milliseconds): they check behaviour
//! (expired entries are never returned), not speed, and leave generous margins.

use std::sync::Arc;
use std::time::Duration;

use chrono::Utc;
use hindsight_core::{Namespace, WorkingEntry, WorkingMemory};

use crate::fixture::{WorkingMemoryFactory, ns};

const SHORT_TTL: Duration = Duration::from_millis(100);
/// Sleep well past [`SHORT_TTL`].
const PAST_SHORT_TTL: Duration = Duration::from_millis(400);
const LONG_TTL: Duration = Duration::from_secs(600);

fn ok<T>(what: &str, r: hindsight_core::Result<T>) -> T {
    match r {
        Ok(v) => v,
        Err(e) => panic!("working memory: {what} failed: {:?}: {}", e.kind, e.message),
    }
}

async fn set(
    wm: &dyn WorkingMemory,
    n: &Namespace,
    session: &str,
    key: &str,
    value: &str,
    ttl: Option<Duration>,
) -> WorkingEntry {
    ok(
        &format!("set({n}, {session}, {key})"),
        wm.set(n, session, key, value, ttl).await,
    )
}

async fn get_value(
    wm: &dyn WorkingMemory,
    n: &Namespace,
    session: &str,
    key: &str,
) -> Option<String> {
    ok(
        &format!("get({n}, {session}, {key})"),
        wm.get(n, session, key).await,
    )
    .map(|e| e.value)
}

async fn keys(wm: &dyn WorkingMemory, n: &Namespace, session: &str) -> Vec<(String, String)> {
    ok(
        &format!("get_all({n}, {session})"),
        wm.get_all(n, session).await,
    )
    .into_iter()
    .map(|e| (e.key, e.value))
    .collect()
}

fn kv(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
    pairs
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect()
}

async fn open(factory: &dyn WorkingMemoryFactory) -> Arc<dyn WorkingMemory> {
    factory.open().await
}

/// `set` returns the entry (session, key, value, `expires_at` ≈ now + ttl or `None`), `get`
/// returns the same entry, a missing key is `None`. Values keep arbitrary text.
pub async fn set_get_roundtrip(factory: &dyn WorkingMemoryFactory) {
    let wm = open(factory).await;
    let wm = &*wm;
    let n = ns("wm-a");
    assert_eq!(
        get_value(wm, &n, "s1", "address").await,
        None,
        "missing key"
    );
    let value = "上海市 浦东新区 \"Room 5\"\n{\"json\": true}";
    let entry = set(wm, &n, "s1", "address", value, None).await;
    assert_eq!(
        (
            entry.session_id.as_str(),
            entry.key.as_str(),
            entry.value.as_str(),
            entry.expires_at
        ),
        ("s1", "address", value, None),
        "set result without TTL"
    );
    let got = ok("get", wm.get(&n, "s1", "address").await);
    assert_eq!(got, Some(entry), "get returns what set returned");

    let before = Utc::now();
    let entry = set(wm, &n, "s1", "order", "ORD-77812", Some(LONG_TTL)).await;
    let after = Utc::now();
    let expires = entry
        .expires_at
        .unwrap_or_else(|| panic!("set with a TTL must report expires_at"));
    let ttl = chrono::Duration::from_std(LONG_TTL).unwrap_or_else(|e| panic!("ttl: {e}"));
    let slack = chrono::Duration::seconds(1);
    assert!(
        before + ttl - slack <= expires && expires <= after + ttl + slack,
        "expires_at {expires} should be about now + {LONG_TTL:?} (set between {before} and {after})"
    );
    let got = ok("get", wm.get(&n, "s1", "order").await)
        .unwrap_or_else(|| panic!("entry with a long TTL vanished"));
    assert_eq!(
        (
            got.value.as_str(),
            got.key.as_str(),
            got.session_id.as_str()
        ),
        ("ORD-77812", "order", "s1"),
        "get with TTL"
    );
    let got_expires = got
        .expires_at
        .unwrap_or_else(|| panic!("get must report expires_at of a TTL entry"));
    assert!(
        (got_expires - expires).abs() <= slack,
        "get's expires_at {got_expires} differs from set's {expires}"
    );
}

/// Setting an existing key replaces value and TTL (an overwrite without TTL makes the entry
/// permanent), and leaves one entry for the key.
pub async fn set_overwrites(factory: &dyn WorkingMemoryFactory) {
    let wm = open(factory).await;
    let wm = &*wm;
    let n = ns("wm-a");
    set(wm, &n, "s1", "k", "first", None).await;
    set(wm, &n, "s1", "k", "second", None).await;
    assert_eq!(
        get_value(wm, &n, "s1", "k").await.as_deref(),
        Some("second"),
        "overwrite"
    );
    assert_eq!(
        keys(wm, &n, "s1").await,
        kv(&[("k", "second")]),
        "one entry per key"
    );

    set(wm, &n, "s1", "ttl", "short-lived", Some(SHORT_TTL)).await;
    let entry = set(wm, &n, "s1", "ttl", "now permanent", None).await;
    assert_eq!(
        entry.expires_at, None,
        "overwrite without TTL clears expires_at"
    );
    tokio::time::sleep(PAST_SHORT_TTL).await;
    assert_eq!(
        get_value(wm, &n, "s1", "ttl").await.as_deref(),
        Some("now permanent"),
        "the old TTL must not expire the new value"
    );

    set(wm, &n, "s1", "perm", "forever", None).await;
    set(wm, &n, "s1", "perm", "soon gone", Some(SHORT_TTL)).await;
    tokio::time::sleep(PAST_SHORT_TTL).await;
    assert_eq!(
        get_value(wm, &n, "s1", "perm").await,
        None,
        "an overwrite with a TTL expires"
    );
}

/// Entries past their TTL are never returned by `get` or `get_all`; entries with a longer TTL or
/// none stay.
pub async fn ttl_expiry(factory: &dyn WorkingMemoryFactory) {
    let wm = open(factory).await;
    let wm = &*wm;
    let n = ns("wm-a");
    set(wm, &n, "s1", "short", "v", Some(SHORT_TTL)).await;
    set(wm, &n, "s1", "long", "v", Some(LONG_TTL)).await;
    set(wm, &n, "s1", "none", "v", None).await;
    tokio::time::sleep(PAST_SHORT_TTL).await;
    assert_eq!(
        get_value(wm, &n, "s1", "short").await,
        None,
        "expired entry returned by get"
    );
    assert_eq!(
        get_value(wm, &n, "s1", "long").await.as_deref(),
        Some("v"),
        "long TTL entry"
    );
    assert_eq!(
        get_value(wm, &n, "s1", "none").await.as_deref(),
        Some("v"),
        "entry without TTL"
    );
    assert_eq!(
        keys(wm, &n, "s1").await,
        kv(&[("long", "v"), ("none", "v")]),
        "get_all excludes the expired entry"
    );
    // An expired key can be set again.
    set(wm, &n, "s1", "short", "again", None).await;
    assert_eq!(
        get_value(wm, &n, "s1", "short").await.as_deref(),
        Some("again"),
        "re-set after expiry"
    );
}

/// A TTL under 1 ms, or one past the representable dates, is invalid input (and stores
/// nothing); the longest sane TTL is kept.
pub async fn ttl_out_of_range_is_invalid_input(factory: &dyn WorkingMemoryFactory) {
    let wm = open(factory).await;
    let wm = &*wm;
    let n = ns("wm-a");
    for ttl in [
        Duration::ZERO,
        Duration::from_micros(500),
        Duration::from_secs(10u64.pow(13)),
    ] {
        let err = wm
            .set(&n, "s1", "k", "v", Some(ttl))
            .await
            .expect_err("a TTL out of range");
        assert_eq!(
            err.kind,
            hindsight_core::ErrorKind::InvalidInput,
            "{ttl:?}: {err}"
        );
    }
    assert_eq!(get_value(wm, &n, "s1", "k").await, None, "nothing stored");
    let year = Duration::from_secs(366 * 24 * 3600);
    set(wm, &n, "s1", "k", "v", Some(year)).await;
    assert_eq!(get_value(wm, &n, "s1", "k").await.as_deref(), Some("v"));
}

/// `get_all` returns every live entry of the session ordered by key (not insertion order), and
/// nothing for an unknown session.
pub async fn get_all_ordered_by_key(factory: &dyn WorkingMemoryFactory) {
    let wm = open(factory).await;
    let wm = &*wm;
    let n = ns("wm-a");
    assert!(keys(wm, &n, "nobody").await.is_empty(), "unknown session");
    for (k, v) in [("m", "3"), ("b", "2"), ("z", "4"), ("a", "1")] {
        set(wm, &n, "s1", k, v, None).await;
    }
    set(wm, &n, "s1", "c-expiring", "x", Some(SHORT_TTL)).await;
    set(wm, &n, "s2", "aa", "other session", None).await;
    tokio::time::sleep(PAST_SHORT_TTL).await;
    let all = ok("get_all", wm.get_all(&n, "s1").await);
    assert!(
        all.iter().all(|e| e.session_id == "s1"),
        "get_all returns only the session's entries: {all:?}"
    );
    let got: Vec<_> = all.into_iter().map(|e| (e.key, e.value)).collect();
    assert_eq!(
        got,
        kv(&[("a", "1"), ("b", "2"), ("m", "3"), ("z", "4")]),
        "get_all ordered by key, expired excluded"
    );
}

/// `clear` of a key removes it and returns 1 (0 for a missing key); `clear` of a session removes
/// all its entries and returns how many; other sessions are untouched.
pub async fn clear_key_and_session(factory: &dyn WorkingMemoryFactory) {
    let wm = open(factory).await;
    let wm = &*wm;
    let n = ns("wm-a");
    for k in ["a", "b", "c"] {
        set(wm, &n, "s1", k, "v", None).await;
    }
    set(wm, &n, "s2", "a", "keep", None).await;
    assert_eq!(
        ok("clear key", wm.clear(&n, "s1", Some("b")).await),
        1,
        "clear of one key"
    );
    assert_eq!(
        ok("clear missing key", wm.clear(&n, "s1", Some("b")).await),
        0,
        "clear of a missing key"
    );
    assert_eq!(
        get_value(wm, &n, "s1", "b").await,
        None,
        "cleared key is gone"
    );
    assert_eq!(
        keys(wm, &n, "s1").await,
        kv(&[("a", "v"), ("c", "v")]),
        "other keys stay"
    );
    assert_eq!(
        ok("clear session", wm.clear(&n, "s1", None).await),
        2,
        "clear of a session counts its entries"
    );
    assert!(
        keys(wm, &n, "s1").await.is_empty(),
        "cleared session is empty"
    );
    assert_eq!(
        ok("clear empty session", wm.clear(&n, "s1", None).await),
        0,
        "clear of an empty session"
    );
    assert_eq!(
        keys(wm, &n, "s2").await,
        kv(&[("a", "keep")]),
        "other session untouched"
    );
}

/// The same session id and key in two namespaces, and two sessions in one namespace, are
/// independent for set, get, get_all and clear.
pub async fn namespace_and_session_isolation(factory: &dyn WorkingMemoryFactory) {
    let wm = open(factory).await;
    let wm = &*wm;
    let (a, b) = (ns("wm-a"), ns("wm-b"));
    set(wm, &a, "s1", "k", "a-s1", None).await;
    set(wm, &a, "s2", "k", "a-s2", None).await;
    set(wm, &b, "s1", "k", "b-s1", None).await;
    set(wm, &b, "s1", "only-b", "b", None).await;
    assert_eq!(
        get_value(wm, &a, "s1", "k").await.as_deref(),
        Some("a-s1"),
        "ns a, session s1"
    );
    assert_eq!(
        get_value(wm, &a, "s2", "k").await.as_deref(),
        Some("a-s2"),
        "ns a, session s2"
    );
    assert_eq!(
        get_value(wm, &b, "s1", "k").await.as_deref(),
        Some("b-s1"),
        "ns b, session s1"
    );
    assert_eq!(
        get_value(wm, &a, "s1", "only-b").await,
        None,
        "ns b's key invisible from ns a"
    );
    assert_eq!(
        keys(wm, &a, "s1").await,
        kv(&[("k", "a-s1")]),
        "get_all(a, s1)"
    );
    assert_eq!(
        keys(wm, &b, "s1").await,
        kv(&[("k", "b-s1"), ("only-b", "b")]),
        "get_all(b, s1)"
    );
    assert_eq!(
        ok("clear", wm.clear(&a, "s1", None).await),
        1,
        "clear(a, s1) removes only a's s1 entry"
    );
    assert_eq!(
        ok("clear", wm.clear(&a, "s2", Some("only-b")).await),
        0,
        "clear of another namespace's key"
    );
    assert_eq!(
        get_value(wm, &a, "s2", "k").await.as_deref(),
        Some("a-s2"),
        "other session survives clear"
    );
    assert_eq!(
        keys(wm, &b, "s1").await,
        kv(&[("k", "b-s1"), ("only-b", "b")]),
        "other namespace survives clear"
    );
}

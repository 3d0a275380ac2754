//! In-process HTTP round trips against the axum app: bearer auth (401 before MCP), namespace
//! grants, tool calls with structured results, error mapping, /healthz, and graceful shutdown.
//! Uses the test-only hash embedder: this checks the protocol, not retrieval quality.

use std::sync::Arc;
use std::time::Duration;

use hindsight_core::Store;
use hindsight_embed::{Embedder, HashEmbedder};
use hindsight_engine::{Engine, InProcessWorkingMemory};
use hindsight_mcp::{AuthConfig, HttpAuth, ServerOptions, ServerState, serve_http};
use hindsight_reflect::Reflector;
use hindsight_store_sqlite::SqliteStore;
use serde_json::{Value, json};

const AUTH: &str = r#"
[[token]]
name = "a"
token = "tok-a"
namespaces = ["a"]
write = true

[[token]]
name = "reader"
token = "tok-r"
namespaces = ["a", "b"]

[[token]]
name = "capped"
token = "tok-c"
namespaces = ["c"]
write = true
max_source = "agent"

[[token]]
name = "owner"
token = "tok-o"
namespaces = ["c"]
write = true

[[token]]
name = "outside"
token = "tok-x"
namespaces = ["c"]
write = true
max_source = "external"
"#;

struct Harness {
    url: String,
    base: String,
    http: reqwest::Client,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    task: tokio::task::JoinHandle<Result<(), hindsight_core::Error>>,
    store: Arc<dyn Store>,
}

/// Serves an engine over `store` and `embedder` on 127.0.0.1: the MCP URL, the sender that stops
/// the server, and its task.
async fn serve(
    store: Arc<dyn Store>,
    embedder: Arc<dyn Embedder>,
    auth: HttpAuth,
) -> (
    String,
    tokio::sync::oneshot::Sender<()>,
    tokio::task::JoinHandle<Result<(), hindsight_core::Error>>,
) {
    let state = server_state(store, embedder);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let addr = listener.local_addr().expect("addr");
    let (tx, rx) = tokio::sync::oneshot::channel::<()>();
    let task = tokio::spawn(serve_http(state, listener, auth, &[], async move {
        let _ = rx.await;
    }));
    (format!("http://{addr}/mcp"), tx, task)
}

/// What the server shares: an engine over `store` and `embedder`, rule reflection.
fn server_state(store: Arc<dyn Store>, embedder: Arc<dyn Embedder>) -> Arc<ServerState> {
    let engine = Arc::new(Engine::builder(store, embedder).build().expect("engine"));
    Arc::new(ServerState::new(
        engine,
        Arc::new(InProcessWorkingMemory::new()),
        Reflector::rules(),
        ServerOptions::default(),
    ))
}

async fn start() -> Harness {
    let embedder: Arc<dyn Embedder> = Arc::new(HashEmbedder::new(64).expect("hash embedder"));
    let store: Arc<dyn Store> = Arc::new(
        SqliteStore::open_in_memory(embedder.space())
            .await
            .expect("in-memory store"),
    );
    let auth = HttpAuth::Tokens(Arc::new(AuthConfig::parse(AUTH).expect("auth config")));
    let (url, tx, task) = serve(store.clone(), embedder, auth).await;
    hindsight_embed::tls_provider();
    Harness {
        base: url.trim_end_matches("/mcp").to_owned(),
        url,
        http: reqwest::Client::builder()
            .timeout(Duration::from_secs(30))
            .build()
            .expect("client"),
        stop: Some(tx),
        task,
        store,
    }
}

impl Harness {
    /// The source memory `id` of namespace `ns` is stored with.
    async fn source_of(&self, ns: &str, id: &str) -> hindsight_core::Source {
        self.store
            .get(
                &hindsight_core::Namespace::new(ns),
                &hindsight_core::MemoryId::from(id),
            )
            .await
            .expect("get")
            .expect("stored")
            .source
    }

    async fn rpc(&self, token: Option<&str>, body: Value) -> (u16, Value) {
        let mut req = self
            .http
            .post(&self.url)
            .header("Content-Type", "application/json")
            .header("Accept", "application/json, text/event-stream")
            .json(&body);
        if let Some(t) = token {
            req = req.bearer_auth(t);
        }
        let resp = req.send().await.expect("send");
        let status = resp.status().as_u16();
        let text = resp.text().await.expect("body");
        let v = serde_json::from_str(&text).unwrap_or(Value::String(text));
        (status, v)
    }

    /// A tools/call; returns the JSON-RPC response object.
    async fn call(&self, token: &str, tool: &str, args: Value) -> Value {
        let (status, v) = self
            .rpc(
                Some(token),
                json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call",
                       "params": {"name": tool, "arguments": args}}),
            )
            .await;
        assert_eq!(status, 200, "{v}");
        v
    }

    /// A tools/call that must succeed; returns structuredContent.
    async fn ok(&self, token: &str, tool: &str, args: Value) -> Value {
        let v = self.call(token, tool, args).await;
        let result = &v["result"];
        assert_eq!(result["isError"], json!(false), "{tool}: {v}");
        result["structuredContent"].clone()
    }

    /// A tools/call that must fail with a JSON-RPC error; returns (code, message).
    async fn err(&self, token: &str, tool: &str, args: Value) -> (i64, String) {
        let v = self.call(token, tool, args).await;
        let e = &v["error"];
        assert!(e.is_object(), "{tool}: expected an error, got {v}");
        (
            e["code"].as_i64().expect("code"),
            e["message"].as_str().expect("message").to_owned(),
        )
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http_round_trip_auth_tools_errors_and_shutdown() {
    let mut h = start().await;

    // 401 before any MCP processing
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "test", "version": "0"}}});
    assert_eq!(h.rpc(None, init.clone()).await.0, 401);
    assert_eq!(h.rpc(Some("nope"), init.clone()).await.0, 401);
    // A rejected request's body is never read: the 401 says the connection closes, so a client
    // does not reuse it for its next request.
    let resp = h
        .http
        .post(&h.url)
        .header("Content-Type", "application/json")
        .json(&init)
        .send()
        .await
        .expect("send");
    assert_eq!(resp.status().as_u16(), 401);
    assert_eq!(
        resp.headers()
            .get("connection")
            .and_then(|v| v.to_str().ok()),
        Some("close")
    );
    assert!(
        resp.headers()
            .get("www-authenticate")
            .is_some_and(|v| v.as_bytes().starts_with(b"Bearer"))
    );
    let (status, v) = h.rpc(Some("tok-a"), init).await;
    assert_eq!(status, 200, "{v}");
    assert_eq!(v["result"]["serverInfo"]["name"], "hindsight");

    // tools/list without a handshake (stateless server)
    let (_, v) = h
        .rpc(
            Some("tok-a"),
            json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}),
        )
        .await;
    let names: Vec<&str> = v["result"]["tools"]
        .as_array()
        .expect("tools")
        .iter()
        .map(|t| t["name"].as_str().expect("name"))
        .collect();
    assert_eq!(names.len(), 10, "{names:?}");
    assert!(names.contains(&"reflect_and_store") && names.contains(&"working_memory_clear"));

    // store + search in the token's default namespace
    let stored = h
        .ok(
            "tok-a",
            "memory_store",
            json!({"content": "Deploys are frozen on Fridays.", "tags": ["ops"]}),
        )
        .await;
    assert_eq!(stored["namespace"], "a");
    let id = stored["id"].as_str().expect("id").to_owned();
    let found = h
        .ok(
            "tok-a",
            "memory_search",
            json!({"query": "are deploys frozen on fridays", "explain": true}),
        )
        .await;
    assert_eq!(found["hits"][0]["id"], id.as_str(), "{found}");
    assert!(
        found["hits"][0]["explanation"]["paths"].is_array(),
        "{found}"
    );

    // reader: may read a and b, may not write; token a may not read b
    let r = h
        .ok(
            "tok-r",
            "memory_search",
            json!({"namespace": "a", "query": "deploys fridays"}),
        )
        .await;
    assert_eq!(r["count"], 1);
    let (code, msg) = h
        .err(
            "tok-r",
            "memory_store",
            json!({"namespace": "a", "content": "x"}),
        )
        .await;
    assert_eq!((code, msg.contains("read-only")), (-32001, true), "{msg}");
    let (code, msg) = h
        .err(
            "tok-a",
            "memory_search",
            json!({"namespace": "b", "query": "x"}),
        )
        .await;
    assert_eq!(code, -32001, "{msg}");
    let empty_b = h
        .ok(
            "tok-r",
            "memory_search",
            json!({"namespace": "b", "query": "deploys fridays"}),
        )
        .await;
    assert_eq!(empty_b["count"], 0, "namespace b must not see a's memory");

    // bad input: each reported, server keeps serving, nothing lost
    let v = h.call("tok-a", "memory_store", json!({"tags": []})).await;
    assert_eq!(v["result"]["isError"], json!(true), "{v}");
    assert!(v.to_string().contains("missing field `content`"), "{v}");
    let (code, msg) = h.err("tok-a", "no_such_tool", json!({})).await;
    assert_eq!(code, -32602, "{msg}");
    let (code, msg) = h
        .err(
            "tok-a",
            "memory_store",
            json!({"content": "z".repeat(8001)}),
        )
        .await;
    assert!(
        code == -32602 && msg.contains("exceeds the limit of 8000"),
        "{code} {msg}"
    );
    let (code, _) = h
        .err(
            "tok-a",
            "memory_feedback",
            json!({"id": "missing", "useful": true}),
        )
        .await;
    assert_eq!(code, -32002);
    let (code, msg) = h
        .err(
            "tok-a",
            "memory_search",
            json!({"query": "x", "filters": {"created_after": "soon"}}),
        )
        .await;
    assert!(code == -32602 && msg.contains("created_after"), "{msg}");

    // reflection of an aborted task becomes a warning
    let ep = h
        .ok(
            "tok-a",
            "reflect_and_store",
            json!({
            "goal": "查询订单 ORD-1 的物流状态", "steps": ["调用物流接口", "接口超时"],
            "outcome": "aborted", "entities": {"order_id": "ORD-1"}}),
        )
        .await;
    assert_eq!(
        (ep["kind"].as_str(), ep["task_type"].as_str()),
        (Some("warning"), Some("query")),
        "{ep}"
    );
    assert!(
        ep["lesson"].as_str().expect("lesson").contains("中止"),
        "{ep}"
    );

    // health
    let health: Value = h
        .http
        .get(format!("{}/healthz", h.base))
        .send()
        .await
        .expect("healthz")
        .json()
        .await
        .expect("json");
    assert_eq!(health["status"], "ok");
    assert_eq!(health["memories"], 2, "{health}");

    // graceful shutdown: stop accepting, flush, return Ok
    let _ = h.stop.take().expect("stop").send(());
    tokio::time::timeout(Duration::from_secs(60), &mut h.task)
        .await
        .expect("shutdown finished")
        .expect("join")
        .expect("serve_http ok");
    assert!(
        h.http
            .get(format!("{}/healthz", h.base))
            .send()
            .await
            .is_err()
    );
    assert_eq!(h.store.stats().await.expect("stats").memories, 2);
}

/// `GET /debug/profile` with `token`, as JSON.
async fn read_profile(h: &Harness, token: &str) -> Value {
    h.http
        .get(format!("{}/debug/profile", h.base))
        .bearer_auth(token)
        .send()
        .await
        .expect("send")
        .json()
        .await
        .expect("json")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn search_profile_needs_a_token_counts_searches_and_resets() {
    let h = start().await;
    let profile = |token: Option<&'static str>| {
        let mut req = h.http.get(format!("{}/debug/profile", h.base));
        if let Some(t) = token {
            req = req.bearer_auth(t);
        }
        req.send()
    };
    // Behind the same auth as /mcp.
    assert_eq!(profile(None).await.expect("send").status().as_u16(), 401);
    assert_eq!(
        profile(Some("nope")).await.expect("send").status().as_u16(),
        401
    );

    h.ok(
        "tok-a",
        "memory_store",
        json!({"namespace": "a", "content": "The payment API is rate limited to 60 calls per minute"}),
    )
    .await;
    for q in [
        "payment rate limit",
        "payment rate limit",
        "calls per minute",
    ] {
        h.ok(
            "tok-a",
            "memory_search",
            json!({"namespace": "a", "query": q}),
        )
        .await;
    }
    let v = read_profile(&h, "tok-r").await;
    // Three searches; the repeated query's embedding came from the cache.
    assert_eq!(v["searches"], 3, "{v}");
    assert_eq!(v["cached_embeddings"], 1, "{v}");
    let stages = v["stages"].as_array().expect("stages");
    let names: Vec<&str> = stages.iter().filter_map(|s| s["stage"].as_str()).collect();
    for want in ["embedding", "keyword", "vector", "fetch", "rank", "total"] {
        assert!(names.contains(&want), "{want} missing: {v}");
    }
    let total = stages
        .iter()
        .find(|s| s["stage"] == "total")
        .expect("total");
    assert!(total["p50_ms"].as_f64().expect("p50") > 0.0, "{v}");
    assert!(total["max_ms"].as_f64() >= total["p50_ms"].as_f64(), "{v}");

    let reset = |token: &'static str| {
        h.http
            .delete(format!("{}/debug/profile", h.base))
            .bearer_auth(token)
            .send()
    };
    // Resetting needs write access: the read-only token is refused and nothing is reset.
    assert_eq!(reset("tok-r").await.expect("send").status().as_u16(), 403);
    let v = read_profile(&h, "tok-a").await;
    assert_eq!(v["searches"], 3, "{v}");
    assert_eq!(reset("tok-a").await.expect("send").status().as_u16(), 204);
    let v = read_profile(&h, "tok-a").await;
    assert_eq!(v["searches"], 0, "{v}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn forgotten_and_quarantined_memories_are_not_read_or_changed_by_id() {
    let h = start().await;
    let id_of = |v: &Value| v["id"].as_str().expect("id").to_owned();
    let a = id_of(
        &h.ok(
            "tok-a",
            "memory_store",
            json!({"content": "The lab printer is on floor 3."}),
        )
        .await,
    );
    let b = id_of(
        &h.ok(
            "tok-a",
            "memory_store",
            json!({"content": "Standup moved to 9:30 on Mondays."}),
        )
        .await,
    );
    h.ok(
        "tok-a",
        "memory_forget",
        json!({"id": a, "reason": "moved"}),
    )
    .await;
    let (_, msg) = h
        .err(
            "tok-a",
            "memory_forget",
            json!({"id": a, "reason": "again"}),
        )
        .await;
    assert!(msg.contains("forgotten"), "{msg}");
    let (_, msg) = h
        .err(
            "tok-a",
            "memory_update",
            json!({"id": a, "content": "floor 4"}),
        )
        .await;
    assert!(msg.contains("forgotten"), "{msg}");
    let (_, msg) = h
        .err("tok-a", "memory_feedback", json!({"id": a, "useful": true}))
        .await;
    assert!(msg.contains("forgotten"), "{msg}");
    let (_, msg) = h
        .err("tok-a", "memory_summarize", json!({"ids": [a]}))
        .await;
    assert!(msg.contains("forgotten"), "{msg}");
    // The first reason stays.
    let ns = hindsight_core::Namespace::new("a");
    let m = h
        .store
        .get(&ns, &hindsight_core::MemoryId::from(a.as_str()))
        .await
        .expect("get")
        .expect("kept");
    assert_eq!(m.status_reason.as_deref(), Some("moved"));

    // A quarantined memory is not summarised by id either.
    let quarantine = hindsight_core::StatusChange::unconditional(
        hindsight_core::MemoryId::from(b.as_str()),
        hindsight_core::Status::Quarantined,
    )
    .reason("quarantine: test");
    h.store
        .apply(
            &ns,
            hindsight_core::WriteBatch::statuses(vec![quarantine]),
            hindsight_core::NamespaceLease::in_process(),
        )
        .await
        .expect("quarantine");
    let (_, msg) = h
        .err("tok-a", "memory_summarize", json!({"ids": [b]}))
        .await;
    assert!(msg.contains("quarantined"), "{msg}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_text_field_has_a_size_limit() {
    let h = start().await;
    let long = "x".repeat(8_001);
    let (_, msg) = h
        .err(
            "tok-a",
            "memory_store",
            json!({"content": "ok", "context": long}),
        )
        .await;
    assert!(msg.contains("context"), "{msg}");
    let tags: Vec<String> = (0..65).map(|i| format!("t{i}")).collect();
    let (_, msg) = h
        .err(
            "tok-a",
            "memory_store",
            json!({"content": "ok", "tags": tags}),
        )
        .await;
    assert!(msg.contains("tags"), "{msg}");
    let (_, msg) = h
        .err(
            "tok-a",
            "memory_store",
            json!({"content": "ok", "entities": {"k": "v".repeat(257)}}),
        )
        .await;
    assert!(msg.contains("entities"), "{msg}");
    let (_, msg) = h
        .err(
            "tok-a",
            "reflect_and_store",
            json!({"goal": long, "steps": ["a"], "outcome": "success"}),
        )
        .await;
    assert!(msg.contains("goal"), "{msg}");
    // Every field is checked before the reflection, with room for the server's two tags.
    let tags: Vec<String> = (0..63).map(|i| format!("t{i}")).collect();
    let (_, msg) = h
        .err(
            "tok-a",
            "reflect_and_store",
            json!({"goal": "g", "steps": ["a"], "outcome": "success", "tags": tags}),
        )
        .await;
    assert!(msg.contains("at most 62 tags"), "{msg}");
    let (_, msg) = h
        .err(
            "tok-a",
            "reflect_and_store",
            json!({"goal": "g", "steps": ["a"], "outcome": "success", "context": "c".repeat(9_000)}),
        )
        .await;
    assert!(msg.contains("context"), "{msg}");
    let tags: Vec<String> = (0..62).map(|i| format!("t{i}")).collect();
    h.ok(
        "tok-a",
        "reflect_and_store",
        json!({"goal": "Rotate the keys", "steps": ["rotated"], "outcome": "success", "tags": tags}),
    )
    .await;
    let (_, msg) = h
        .err(
            "tok-a",
            "working_memory_set",
            json!({"session_id": "s".repeat(257), "key": "k", "value": "v"}),
        )
        .await;
    assert!(msg.contains("session_id"), "{msg}");
    // Within the limits the same calls work.
    h.ok(
        "tok-a",
        "memory_store",
        json!({"content": "ok", "context": "x".repeat(8_000), "tags": ["a"]}),
    )
    .await;
    // A trace within the limits whose episode would be longer than a memory is stored cut, and
    // the result says so; a short one is not.
    let ep = h
        .ok(
            "tok-a",
            "reflect_and_store",
            json!({"goal": "g".repeat(7_990), "steps": ["s".repeat(8_000), "t".repeat(8_000)], "outcome": "failure"}),
        )
        .await;
    assert_eq!(ep["truncated"], true, "{ep}");
    let ep = h
        .ok(
            "tok-a",
            "reflect_and_store",
            json!({"goal": "rotate the staging TLS certificate", "steps": ["renewed it"], "outcome": "success"}),
        )
        .await;
    assert_eq!(ep["truncated"], false, "{ep}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_token_cannot_claim_more_trust_than_its_max_source() {
    let h = start().await;
    for (claim, want) in [
        ("user", "agent"),
        ("agent", "agent"),
        ("external", "external"),
    ] {
        let r = h
            .ok(
                "tok-c",
                "memory_store",
                json!({"content": format!("The {claim} says the staging cluster is k8s-stg-{claim}."), "source": claim}),
            )
            .await;
        assert_eq!(r["source"], want, "{claim}: {r}");
        let id = r["id"].as_str().expect("id").to_owned();
        assert_eq!(h.source_of("c", &id).await.as_str(), want, "{claim}");
    }
    // An uncapped token keeps its claim.
    let r = h
        .ok(
            "tok-a",
            "memory_store",
            json!({"content": "I prefer tea to coffee.", "source": "user"}),
        )
        .await;
    assert_eq!(r["source"], "user", "{r}");
}

/// `max_source` also caps what a token's updates and episodes carry: new text written by a
/// capped token into a more trusted memory is stored at the token's trust (other fields keep
/// the memory's), and `reflect_and_store` stores the episode at no more than the cap.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_capped_token_s_updates_and_episodes_carry_its_trust() {
    let h = start().await;
    let id = h
        .ok(
            "tok-o",
            "memory_store",
            json!({"content": "The refund limit is 100 euros.", "source": "user"}),
        )
        .await["id"]
        .as_str()
        .expect("id")
        .to_owned();
    h.ok(
        "tok-c",
        "memory_update",
        json!({"id": id, "importance": 0.9}),
    )
    .await;
    assert_eq!(h.source_of("c", &id).await.as_str(), "user", "no new text");
    let r = h
        .ok(
            "tok-c",
            "memory_update",
            json!({"id": id, "content": "The refund limit is 10000 euros."}),
        )
        .await;
    assert_eq!(r["memory"]["source"], "agent", "{r}");
    assert_eq!(h.source_of("c", &id).await.as_str(), "agent");

    let ep = h
        .ok(
            "tok-x",
            "reflect_and_store",
            json!({"goal": "Rotate the staging certificates", "steps": ["renewed the cert"], "outcome": "success"}),
        )
        .await;
    let id = ep["id"].as_str().expect("id").to_owned();
    assert_eq!(h.source_of("c", &id).await.as_str(), "external", "{ep}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_read_only_search_records_no_access() {
    let h = start().await;
    let id = h
        .ok(
            "tok-a",
            "memory_store",
            json!({"content": "The VPN gateway is vpn-2."}),
        )
        .await["id"]
        .as_str()
        .expect("id")
        .to_owned();
    let count = || async {
        let ns = hindsight_core::Namespace::new("a");
        h.store
            .get(&ns, &hindsight_core::MemoryId::from(id.as_str()))
            .await
            .expect("get")
            .expect("stored")
            .access_count
    };
    let before = count().await;
    for _ in 0..3 {
        h.ok(
            "tok-r",
            "memory_search",
            json!({"query": "vpn gateway", "namespace": "a"}),
        )
        .await;
    }
    assert_eq!(
        count().await,
        before,
        "a reader's searches changed access counts"
    );
    h.ok("tok-a", "memory_search", json!({"query": "vpn gateway"}))
        .await;
    assert_eq!(count().await, before + 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_body_that_is_not_json_rpc_gets_a_parse_error() {
    let h = start().await;
    let post = |body: &'static str| {
        h.http
            .post(&h.url)
            .header("Content-Type", "application/json")
            .header("Accept", "application/json, text/event-stream")
            .bearer_auth("tok-a")
            .body(body)
            .send()
    };
    // As over stdio: not JSON is a parse error, JSON that is not a request an invalid request,
    // each with the request's id when it can be read.
    for (body, code, id) in [
        ("not json", -32700, Value::Null),
        (
            r#"{"jsonrpc":"2.0","id":2,"method":"tools/list","params":{"x":"\ud800"}}"#,
            -32700,
            json!(2),
        ),
        (r#"{"id":4,"method":"ping"}"#, -32600, json!(4)),
        (
            r#"{"jsonrpc":"2.0","id":1.5,"method":"ping"}"#,
            -32600,
            json!(1.5),
        ),
    ] {
        let resp = post(body).await.expect("send");
        assert_eq!(resp.status().as_u16(), 400, "{body}");
        let v: Value = resp.json().await.expect("a JSON-RPC error body");
        assert_eq!(
            (&v["error"]["code"], &v["id"]),
            (&json!(code), &id),
            "{body}: {v}"
        );
    }
    // A body over stdio's line limit is refused unread.
    let huge = format!(
        r#"{{"jsonrpc":"2.0","id":9,"method":"ping","params":{{"x":"{}"}}}}"#,
        "x".repeat(17 << 20)
    );
    let resp = h
        .http
        .post(&h.url)
        .header("Content-Type", "application/json")
        .header("Accept", "application/json, text/event-stream")
        .bearer_auth("tok-a")
        .body(huge)
        .send()
        .await
        .expect("send");
    assert_eq!(resp.status().as_u16(), 413);
    let v: Value = resp.json().await.expect("a JSON-RPC error body");
    assert_eq!(v["error"]["code"], -32600, "{v}");
    // The server goes on serving.
    let (status, _) = h
        .rpc(
            Some("tok-a"),
            json!({"jsonrpc": "2.0", "id": 3, "method": "tools/list"}),
        )
        .await;
    assert_eq!(status, 200);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn malformed_params_are_invalid_params_and_unknown_methods_are_named() {
    let h = start().await;
    for params in [
        json!({"name": "memory_search", "arguments": [1, 2]}),
        json!({"name": "memory_search", "arguments": "x"}),
        json!({"name": null}),
    ] {
        let (status, v) = h
            .rpc(
                Some("tok-a"),
                json!({"jsonrpc": "2.0", "id": 11, "method": "tools/call", "params": params}),
            )
            .await;
        assert_eq!(status, 200, "{v}");
        assert_eq!(v["id"], 11, "{v}");
        assert_eq!(v["error"]["code"], -32602, "{params}: {v}");
        let msg = v["error"]["message"].as_str().expect("message");
        assert!(
            msg.contains("tools/call") && msg.contains("arguments"),
            "{msg}"
        );
    }
    let (_, v) = h
        .rpc(
            Some("tok-a"),
            json!({"jsonrpc": "2.0", "id": 12, "method": "memories/frobnicate", "params": {}}),
        )
        .await;
    assert_eq!(v["error"]["code"], -32601, "{v}");
    assert!(
        v["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("method not found: `memories/frobnicate`")),
        "{v}"
    );
}

/// The hash embedder, except that a text containing `GATED` blocks until the test opens the gate:
/// a write the test knows is in flight.
#[derive(Debug)]
struct GatedEmbedder {
    inner: HashEmbedder,
    entered: std::sync::atomic::AtomicBool,
    open: std::sync::Mutex<bool>,
    opened: std::sync::Condvar,
}

impl GatedEmbedder {
    fn open_gate(&self) {
        *self
            .open
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = true;
        self.opened.notify_all();
    }
}

/// Opens the gate when dropped: a failing assertion must not leave the blocked embedding thread
/// (and with it the test runtime's shutdown) waiting forever.
struct OpenOnDrop(Arc<GatedEmbedder>);

impl Drop for OpenOnDrop {
    fn drop(&mut self) {
        self.0.open_gate();
    }
}

impl Embedder for GatedEmbedder {
    fn space(&self) -> hindsight_core::EmbeddingSpace {
        self.inner.space()
    }
    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, hindsight_embed::EmbedError> {
        if texts.iter().any(|t| t.contains("GATED")) {
            self.entered
                .store(true, std::sync::atomic::Ordering::SeqCst);
            let mut open = self.open.lock().expect("gate lock");
            while !*open {
                open = self.opened.wait(open).expect("gate wait");
            }
        }
        self.inner.embed(texts)
    }
    fn is_test_only(&self) -> bool {
        true
    }
}

/// Shutdown (what SIGTERM triggers in `hindsight serve`) while a write is in flight: new
/// connections are refused, the write completes and is answered, the store is flushed, and the
/// memory is there when the data directory is opened again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shutdown_finishes_an_in_flight_write_and_flushes_it() {
    let dir = tempfile::tempdir().expect("tempdir");
    let gate = Arc::new(GatedEmbedder {
        inner: HashEmbedder::new(64).expect("hash embedder"),
        entered: std::sync::atomic::AtomicBool::new(false),
        open: std::sync::Mutex::new(false),
        opened: std::sync::Condvar::new(),
    });
    let _open_on_drop = OpenOnDrop(gate.clone());
    let space = gate.space();
    let store: Arc<dyn Store> = Arc::new(
        SqliteStore::open(dir.path(), space.clone())
            .await
            .expect("store"),
    );
    let (url, stop, server) = serve(store, gate.clone(), HttpAuth::Disabled).await;
    hindsight_embed::tls_provider();
    let post = |body: Value| {
        let url = url.clone();
        async move {
            reqwest::Client::new()
                .post(&url)
                .header("Content-Type", "application/json")
                .header("Accept", "application/json, text/event-stream")
                .timeout(Duration::from_secs(60))
                .json(&body)
                .send()
                .await
        }
    };
    let in_flight = tokio::spawn(post(
        json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call",
        "params": {"name": "memory_store", "arguments": {
            "content": "GATED: the release train leaves on Thursdays at 14:00", "kind": "semantic"}}}),
    ));
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    while !gate.entered.load(std::sync::atomic::Ordering::SeqCst) {
        assert!(
            tokio::time::Instant::now() < deadline,
            "the write never reached the embedder"
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }

    stop.send(()).expect("server still running");
    // Draining: new connections are refused while the write is still held at the gate.
    let healthz = url.replace("/mcp", "/healthz");
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    loop {
        let probe = reqwest::Client::new()
            .get(&healthz)
            .timeout(Duration::from_secs(5))
            .send()
            .await;
        if probe.is_err() {
            break;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "new connections still accepted 10 s after shutdown began"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    // Held at the gate, the write keeps the server from stopping (given time to stop, it does not).
    let mut server = server;
    assert!(
        tokio::time::timeout(Duration::from_millis(500), &mut server)
            .await
            .is_err(),
        "the server stopped with a write in flight"
    );
    assert!(
        !in_flight.is_finished(),
        "the write finished before the gate opened"
    );

    gate.open_gate();
    let resp = in_flight
        .await
        .expect("request task")
        .expect("the in-flight write was answered");
    assert_eq!(resp.status().as_u16(), 200);
    let v: Value = resp.json().await.expect("json");
    let id = v["result"]["structuredContent"]["id"]
        .as_str()
        .unwrap_or_else(|| panic!("no id in {v}"))
        .to_owned();
    tokio::time::timeout(Duration::from_secs(60), server)
        .await
        .expect("server stopped")
        .expect("server task")
        .expect("clean shutdown");

    // What the write committed survives: a fresh open of the data directory finds it.
    let reopened = SqliteStore::open(dir.path(), space).await.expect("reopen");
    let m = reopened
        .get(
            &hindsight_core::Namespace::default(),
            &hindsight_core::MemoryId::new(&id),
        )
        .await
        .expect("get")
        .expect("the in-flight write is stored");
    assert!(m.content.contains("release train"), "{}", m.content);
}

/// `/mcp` answers the `Host` headers `AllowedHosts` names: loopback names only for a loopback
/// server (rmcp's DNS-rebinding protection), any for one bound to a routable address (reached as
/// `http://hindsight:8080` in docker-compose), or an explicit list.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mcp_answers_the_host_headers_it_allows() {
    use hindsight_mcp::{AllowedHosts, router};
    let embedder: Arc<dyn Embedder> = Arc::new(HashEmbedder::new(64).expect("hash embedder"));
    let store: Arc<dyn Store> = Arc::new(
        SqliteStore::open_in_memory(embedder.space())
            .await
            .expect("in-memory store"),
    );
    let state = server_state(store, embedder);
    let routable: std::net::SocketAddr = "10.1.2.3:8080".parse().expect("addr");
    let loopback: std::net::SocketAddr = "127.0.0.1:8080".parse().expect("addr");
    assert_eq!(AllowedHosts::for_bind(&routable, &[]), AllowedHosts::Any);
    assert_eq!(
        AllowedHosts::for_bind(&loopback, &[]),
        AllowedHosts::Loopback
    );
    let listed = vec!["hindsight:8080".to_owned()];
    assert_eq!(
        AllowedHosts::for_bind(&routable, &listed),
        AllowedHosts::Only(listed.clone())
    );
    hindsight_embed::tls_provider();
    let http = reqwest::Client::new();
    for (hosts, host, want) in [
        (AllowedHosts::Loopback, "hindsight:8080", 403),
        (AllowedHosts::Loopback, "localhost:8080", 200),
        (AllowedHosts::Any, "hindsight:8080", 200),
        (AllowedHosts::Only(listed.clone()), "hindsight:8080", 200),
        (AllowedHosts::Only(listed.clone()), "evil.example", 403),
    ] {
        let app = router(state.clone(), HttpAuth::Disabled, &hosts);
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let addr = listener.local_addr().expect("addr");
        let server = tokio::spawn(async move { axum::serve(listener, app).await });
        let resp = http
            .post(format!("http://{addr}/mcp"))
            .header("Host", host)
            .header("Content-Type", "application/json")
            .header("Accept", "application/json, text/event-stream")
            .body(r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#)
            .send()
            .await
            .expect("send");
        assert_eq!(resp.status().as_u16(), want, "{hosts:?} with Host {host}");
        server.abort();
    }
}

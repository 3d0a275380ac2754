//! The HTTP embedder against a real (tiny) OpenAI-compatible server on 127.0.0.1.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use hindsight_embed::{EmbedError, Embedder, HashEmbedder, HttpConfig, HttpEmbedder};
use serde_json::{Value, json};

/// One parsed request as the server saw it.
#[derive(Clone, Debug)]
struct Seen {
    path: String,
    authorization: Option<String>,
    body: Value,
}

/// What the server answers: status, extra headers, JSON body.
struct Reply {
    status: u16,
    headers: Vec<(&'static str, String)>,
    body: String,
}

type Handler = dyn Fn(usize, &Seen) -> Reply + Send + Sync;

/// A bounded test server: serves until dropped, at most 50 requests and 30 s.
struct Server {
    url: String,
    seen: Arc<Mutex<Vec<Seen>>>,
    stop: Arc<AtomicBool>,
}

impl Drop for Server {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

impl Server {
    fn start(handler: impl Fn(usize, &Seen) -> Reply + Send + Sync + 'static) -> Server {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1:0");
        listener.set_nonblocking(true).expect("nonblocking");
        let url = format!("http://{}/v1", listener.local_addr().expect("addr"));
        let seen = Arc::new(Mutex::new(Vec::new()));
        let stop = Arc::new(AtomicBool::new(false));
        let handler: Arc<Handler> = Arc::new(handler);
        let (seen2, stop2) = (seen.clone(), stop.clone());
        thread::spawn(move || {
            let started = Instant::now();
            let served = AtomicUsize::new(0);
            while !stop2.load(Ordering::Relaxed) && started.elapsed() < Duration::from_secs(30) {
                match listener.accept() {
                    Ok((stream, _)) => {
                        let n = served.fetch_add(1, Ordering::Relaxed);
                        if n >= 50 {
                            break;
                        }
                        serve(stream, n, &*handler, &seen2);
                    }
                    Err(_) => thread::sleep(Duration::from_millis(2)),
                }
            }
        });
        Server { url, seen, stop }
    }

    fn requests(&self) -> Vec<Seen> {
        self.seen.lock().expect("lock").clone()
    }
}

fn serve(stream: TcpStream, n: usize, handler: &Handler, seen: &Mutex<Vec<Seen>>) {
    stream.set_nonblocking(false).expect("blocking");
    stream
        .set_read_timeout(Some(Duration::from_secs(5)))
        .expect("timeout");
    let mut reader = BufReader::new(stream.try_clone().expect("clone"));
    let mut request_line = String::new();
    if reader.read_line(&mut request_line).is_err() {
        return;
    }
    let path = request_line
        .split_whitespace()
        .nth(1)
        .unwrap_or("")
        .to_string();
    let mut content_length = 0usize;
    let mut authorization = None;
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).is_err() || line == "\r\n" || line.is_empty() {
            break;
        }
        if let Some((k, v)) = line.trim_end().split_once(':') {
            match k.to_ascii_lowercase().as_str() {
                "content-length" => content_length = v.trim().parse().unwrap_or(0),
                "authorization" => authorization = Some(v.trim().to_string()),
                _ => {}
            }
        }
    }
    let mut body = vec![0u8; content_length];
    if reader.read_exact(&mut body).is_err() {
        return;
    }
    let req = Seen {
        path,
        authorization,
        body: serde_json::from_slice(&body).unwrap_or(Value::Null),
    };
    seen.lock().expect("lock").push(req.clone());
    let reply = handler(n, &req);
    let reason = match reply.status {
        200 => "OK",
        400 => "Bad Request",
        429 => "Too Many Requests",
        503 => "Service Unavailable",
        _ => "Status",
    };
    let mut head = format!(
        "HTTP/1.1 {} {reason}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n",
        reply.status,
        reply.body.len()
    );
    for (k, v) in &reply.headers {
        head.push_str(&format!("{k}: {v}\r\n"));
    }
    head.push_str("\r\n");
    let mut stream = stream;
    let _ = stream.write_all(head.as_bytes());
    let _ = stream.write_all(reply.body.as_bytes());
    let _ = stream.flush();
}

const DIM: usize = 8;

/// The server's "model": hash embeddings scaled by 3 (so the client must re-normalise).
fn server_vector(text: &str, dim: usize) -> Vec<f32> {
    let e = HashEmbedder::new(dim).expect("dim");
    e.embed_one(text)
        .expect("hash")
        .into_iter()
        .map(|x| x * 3.0)
        .collect()
}

fn expected(text: &str) -> Vec<f32> {
    HashEmbedder::new(DIM)
        .expect("dim")
        .embed_one(text)
        .expect("hash")
}

fn inputs(req: &Seen) -> Vec<String> {
    req.body["input"]
        .as_array()
        .expect("input array")
        .iter()
        .map(|v| v.as_str().expect("string").to_string())
        .collect()
}

/// An OpenAI-style answer for the request, items in the given index order.
fn answer(req: &Seen, dim: usize, reverse: bool) -> Reply {
    let texts = inputs(req);
    let mut data: Vec<Value> = texts
        .iter()
        .enumerate()
        .map(
            |(i, t)| json!({"object": "embedding", "embedding": server_vector(t, dim), "index": i}),
        )
        .collect();
    if reverse {
        data.reverse();
    }
    let body = json!({"object": "list", "data": data, "model": req.body["model"], "usage": {"prompt_tokens": 1, "total_tokens": 1}});
    Reply {
        status: 200,
        headers: vec![],
        body: body.to_string(),
    }
}

fn error_reply(status: u16, retry_after: Option<&str>) -> Reply {
    Reply {
        status,
        headers: retry_after
            .map(|r| vec![("Retry-After", r.to_string())])
            .unwrap_or_default(),
        body: json!({"error": {"message": format!("status {status}")}}).to_string(),
    }
}

fn config(server: &Server) -> HttpConfig {
    let mut c = HttpConfig::new(server.url.clone(), "test-model");
    c.dim = Some(DIM);
    c.initial_backoff = Duration::from_millis(5);
    c.max_backoff = Duration::from_millis(50);
    c.timeout = Duration::from_secs(5);
    c
}

fn assert_close(a: &[f32], b: &[f32]) {
    assert_eq!(a.len(), b.len());
    for (x, y) in a.iter().zip(b) {
        assert!((x - y).abs() < 1e-6, "{a:?} vs {b:?}");
    }
}

#[test]
fn embeds_probes_dimension_and_sends_model_and_key() {
    let server = Server::start(|_, req| answer(req, DIM, false));
    let mut c = config(&server);
    c.dim = None;
    // PATH is always set; its value stands in for a key.
    c.api_key_env = Some("PATH".into());
    let e = HttpEmbedder::new(c).expect("probe succeeds");
    assert_eq!(e.space().dim, DIM);
    assert_eq!(e.space().model, "test-model");
    assert!(!e.is_test_only());
    let v = e.embed(&["alpha beta", "用户喜欢顺丰"]).expect("embed");
    assert_close(&v[0], &expected("alpha beta"));
    assert_close(&v[1], &expected("用户喜欢顺丰"));
    let norm: f32 = v[0].iter().map(|x| x * x).sum::<f32>().sqrt();
    assert!((norm - 1.0).abs() < 1e-5, "re-normalised, norm {norm}");

    let reqs = server.requests();
    assert_eq!(reqs.len(), 2, "probe + one batch");
    assert_eq!(reqs[1].path, "/v1/embeddings");
    assert_eq!(reqs[1].body["model"], "test-model");
    assert_eq!(inputs(&reqs[1]), vec!["alpha beta", "用户喜欢顺丰"]);
    let path = std::env::var("PATH").expect("PATH set");
    assert_eq!(
        reqs[1].authorization.as_deref(),
        Some(format!("Bearer {path}").as_str())
    );
}

#[test]
fn index_order_is_respected() {
    let server = Server::start(|_, req| answer(req, DIM, true));
    let e = HttpEmbedder::new(config(&server)).expect("build");
    let texts = ["first", "second", "third"];
    let v = e.embed(&texts).expect("embed");
    for (t, got) in texts.iter().zip(&v) {
        assert_close(got, &expected(t));
    }
}

#[test]
fn retries_503_and_429_then_succeeds() {
    let server = Server::start(|n, req| match n {
        0 => error_reply(503, None),
        1 => error_reply(429, Some("0")),
        _ => answer(req, DIM, false),
    });
    let e = HttpEmbedder::new(config(&server)).expect("build");
    let v = e
        .embed(&["retry me"])
        .expect("succeeds on the third attempt");
    assert_close(&v[0], &expected("retry me"));
    assert_eq!(server.requests().len(), 3);
}

#[test]
fn gives_up_after_max_retries() {
    let server = Server::start(|_, _| error_reply(500, None));
    let mut c = config(&server);
    c.max_retries = 2;
    let e = HttpEmbedder::new(c).expect("build");
    let err = e.embed(&["x"]).expect_err("always 500");
    let msg = err.to_string();
    assert!(
        msg.contains("500") && msg.contains("gave up after 3 attempts"),
        "{msg}"
    );
    assert_eq!(server.requests().len(), 3);
}

#[test]
fn client_errors_are_not_retried() {
    let server = Server::start(|_, _| error_reply(400, None));
    let e = HttpEmbedder::new(config(&server)).expect("build");
    let err = e.embed(&["x"]).expect_err("400");
    assert!(
        err.to_string().contains("400") && err.to_string().contains("status 400"),
        "{err}"
    );
    assert_eq!(server.requests().len(), 1);
}

#[test]
fn wrong_dimension_is_a_clear_error() {
    let server = Server::start(|_, req| answer(req, 5, false));
    let e = HttpEmbedder::new(config(&server)).expect("build");
    let err = e.embed(&["x"]).expect_err("5 dims instead of 8");
    match &err {
        EmbedError::Dimension { expected, got, .. } => assert_eq!((*expected, *got), (8, 5)),
        other => panic!("expected a dimension error, got {other}"),
    }
    assert!(err.to_string().contains("expected 8, got 5"), "{err}");
    let core: hindsight_core::Error = err.into();
    assert_eq!(core.kind, hindsight_core::ErrorKind::EmbeddingMismatch);
}

#[test]
fn batches_requests() {
    let server = Server::start(|_, req| answer(req, DIM, false));
    let mut c = config(&server);
    c.batch_size = 2;
    let e = HttpEmbedder::new(c).expect("build");
    let texts = ["a", "b", "c", "d", "e"];
    let v = e.embed(&texts).expect("embed");
    assert_eq!(v.len(), 5);
    for (t, got) in texts.iter().zip(&v) {
        assert_close(got, &expected(t));
    }
    let sizes: Vec<usize> = server.requests().iter().map(|r| inputs(r).len()).collect();
    assert_eq!(sizes, vec![2, 2, 1]);
}

#[test]
fn malformed_answers_are_rejected() {
    // Too few items, then a duplicate index, then not JSON.
    let server = Server::start(|n, req| {
        let texts = inputs(req);
        let body = match n {
            0 => json!({"data": [{"embedding": server_vector(&texts[0], DIM), "index": 0}]})
                .to_string(),
            1 => json!({"data": [
                {"embedding": server_vector(&texts[0], DIM), "index": 0},
                {"embedding": server_vector(&texts[1], DIM), "index": 0}
            ]})
            .to_string(),
            _ => "<html>not json</html>".to_string(),
        };
        Reply {
            status: 200,
            headers: vec![],
            body,
        }
    });
    let e = HttpEmbedder::new(config(&server)).expect("build");
    let err = e.embed(&["a", "b"]).expect_err("count");
    assert!(
        err.to_string().contains("sent 2 texts, got 1 embeddings"),
        "{err}"
    );
    let err = e.embed(&["a", "b"]).expect_err("duplicate");
    assert!(err.to_string().contains("index 0 appears twice"), "{err}");
    let err = e.embed(&["a", "b"]).expect_err("not json");
    assert!(
        err.to_string().contains("not an embeddings object"),
        "{err}"
    );
}

#[test]
fn unreachable_server_and_missing_key() {
    // Bind then drop a listener to get a port nobody listens on.
    let port = TcpListener::bind("127.0.0.1:0")
        .expect("bind")
        .local_addr()
        .expect("addr")
        .port();
    let mut c = HttpConfig::new(format!("http://127.0.0.1:{port}/v1"), "m");
    c.dim = Some(4);
    c.max_retries = 1;
    c.initial_backoff = Duration::from_millis(1);
    let e = HttpEmbedder::new(c.clone()).expect("no request at build time when dim is given");
    let err = e.embed(&["x"]).expect_err("connection refused");
    assert!(
        err.to_string().contains("gave up after 2 attempts"),
        "{err}"
    );

    c.api_key_env = Some("HINDSIGHT_TEST_SURELY_UNSET_KEY_VAR".into());
    let err = HttpEmbedder::new(c).expect_err("unset key variable");
    assert!(
        err.to_string()
            .contains("HINDSIGHT_TEST_SURELY_UNSET_KEY_VAR"),
        "{err}"
    );
}

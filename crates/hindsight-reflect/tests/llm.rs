//! The chat client and the reflector against a real HTTP server on 127.0.0.1 that answers with
//! fenced JSON, chatty JSON, broken output, an HTTP error, and too slowly.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::Duration;

use hindsight_core::{Outcome, TaskType};
use hindsight_reflect::{ChatClient, LlmConfig, Method, Recalled, Reflector, TaskTrace};
use serde_json::{Value, json};

/// What the fake endpoint does with the next request.
#[derive(Clone)]
enum Reply {
    /// 200 with an OpenAI-style body whose message content is this text.
    Content(String),
    /// A raw status and body.
    Raw(u16, String),
    /// Sleep this long, then answer.
    Slow(Duration),
}

struct Fake {
    url: String,
    requests: Arc<Mutex<Vec<(String, Value)>>>, // (authorization header, body)
}

fn serve_one(stream: TcpStream, reply: &Reply, requests: &Mutex<Vec<(String, Value)>>) {
    let mut reader = BufReader::new(stream.try_clone().expect("clone stream"));
    let mut len = 0usize;
    let mut auth = String::new();
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).expect("read header") == 0 {
            return;
        }
        let l = line.trim_end();
        if l.is_empty() {
            break;
        }
        let lower = l.to_ascii_lowercase();
        if let Some(v) = lower.strip_prefix("content-length:") {
            len = v.trim().parse().expect("content-length");
        }
        if lower.starts_with("authorization:") {
            auth = l["authorization:".len()..].trim().to_owned();
        }
    }
    let mut body = vec![0u8; len];
    reader.read_exact(&mut body).expect("read body");
    let v: Value = serde_json::from_slice(&body).expect("request body is JSON");
    requests.lock().expect("lock").push((auth, v));
    let (status, text) = match reply {
        Reply::Content(c) => (
            200,
            json!({"choices": [{"message": {"role": "assistant", "content": c}}]}).to_string(),
        ),
        Reply::Raw(s, b) => (*s, b.clone()),
        Reply::Slow(d) => {
            thread::sleep(*d);
            (
                200,
                json!({"choices": [{"message": {"content": "{}"}}]}).to_string(),
            )
        }
    };
    let mut stream = stream;
    let _ = write!(
        stream,
        "HTTP/1.1 {status} X\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{text}",
        text.len()
    );
}

/// Serves the replies in order, one connection each.
fn fake(replies: Vec<Reply>) -> Fake {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1:0");
    let url = format!("http://{}/v1", listener.local_addr().expect("addr"));
    let requests = Arc::new(Mutex::new(Vec::new()));
    let seen = requests.clone();
    thread::spawn(move || {
        for reply in replies {
            let Ok((stream, _)) = listener.accept() else {
                return;
            };
            serve_one(stream, &reply, &seen);
        }
    });
    Fake { url, requests }
}

fn reflector(f: &Fake, timeout_secs: u64) -> Reflector {
    Reflector::with_llm(
        ChatClient::new(LlmConfig {
            base_url: f.url.clone(),
            model: "test-model".into(),
            api_key: Some("sk-test".into()),
            timeout_secs,
            ..LlmConfig::default()
        })
        .expect("client"),
    )
}

fn trace() -> TaskTrace {
    TaskTrace {
        goal: "Fix the nightly export".into(),
        steps: vec![
            "checked the logs".into(),
            "switched to the replica instead of the primary".into(),
            "upload failed: permission denied".into(),
        ],
        outcome: Outcome::Failure,
        entities: BTreeMap::from([("job".to_owned(), "export".to_owned())]),
    }
}

#[test]
fn fenced_and_chatty_json_are_parsed() {
    let f = fake(vec![
        Reply::Content(
            "```json\n{\"task_type\": \"modify\", \"key_decisions\": [\"a\", \"b\", \"c\", \"d\"], \"lesson\": \"Check bucket permissions first.\"}\n```".into(),
        ),
        Reply::Content(
            "Sure! Here is my reflection: {\"task_type\": \"ANALYZE\", \"lesson\": \"Look at {permissions}.\"} Let me know if you need more.".into(),
        ),
    ]);
    let r = reflector(&f, 10);
    let a = r.reflect(&trace());
    assert_eq!(a.method, Method::Llm);
    assert!(!a.reflection_failed, "{:?}", a.error);
    assert_eq!(a.episode.task_type, TaskType::Modify);
    assert_eq!(a.episode.key_decisions, ["a", "b", "c"], "at most three");
    assert_eq!(a.episode.lesson, "Check bucket permissions first.");
    assert_eq!(
        a.episode.outcome,
        Outcome::Failure,
        "outcome stays the caller's"
    );
    assert_eq!(
        a.episode.entities.get("job").map(String::as_str),
        Some("export")
    );
    assert!(
        a.content.starts_with("Check bucket permissions first."),
        "{}",
        a.content
    );

    let b = r.reflect(&trace());
    assert!(!b.reflection_failed, "{:?}", b.error);
    assert_eq!(b.episode.task_type, TaskType::Analyze);
    assert_eq!(b.episode.lesson, "Look at {permissions}.");
    // no key_decisions in the answer: the rule-based ones are kept
    assert_eq!(
        b.episode.key_decisions,
        ["switched to the replica instead of the primary"]
    );

    let reqs = f.requests.lock().expect("lock");
    assert_eq!(reqs.len(), 2);
    let (auth, body) = &reqs[0];
    assert_eq!(auth, "Bearer sk-test");
    assert_eq!(body["model"], "test-model");
    assert!((body["temperature"].as_f64().expect("temperature") - 0.1).abs() < 1e-6);
    assert!(
        body["messages"][1]["content"]
            .as_str()
            .expect("user message")
            .contains("upload failed: permission denied")
    );
}

#[test]
fn broken_answers_keep_the_raw_trace() {
    let f = fake(vec![
        Reply::Content("I think the task went badly, sorry.".into()),
        Reply::Content("{\"task_type\": \"modify\"}".into()),
        Reply::Raw(500, "{\"error\": \"overloaded\"}".into()),
        Reply::Raw(200, "<html>not json</html>".into()),
        Reply::Slow(Duration::from_secs(4)),
    ]);
    let r = reflector(&f, 1);
    let t = trace();
    for want in ["no JSON object", "lesson", "HTTP 500", "not JSON", "failed"] {
        let got = r.reflect(&t);
        assert!(got.reflection_failed, "{want}: {got:?}");
        let err = got.error.clone().expect("error message");
        assert!(err.contains(want), "expected {want:?} in {err:?}");
        assert_eq!(got.content, t.raw_text(), "the raw trace is stored");
        // the episode fields still come from the rules
        assert_eq!(got.episode.task_type, TaskType::Modify);
        assert!(
            got.episode.lesson.contains("permission denied"),
            "{}",
            got.episode.lesson
        );
    }
}

#[test]
fn summaries_use_the_model_and_fall_back_to_extractive() {
    let f = fake(vec![
        Reply::Content(
            "```\nAvoid uploading without checking permissions; exports run on the replica.\n```"
                .into(),
        ),
        Reply::Raw(503, "down".into()),
    ]);
    let r = reflector(&f, 10);
    let items = [
        Recalled {
            id: "m1".into(),
            content: "Exports run on the replica.".into(),
            failure: false,
        },
        Recalled {
            id: "m2".into(),
            content: "Upload failed: permission denied.".into(),
            failure: true,
        },
    ];
    let s = r.summarize(&items, 60);
    assert_eq!(s.method, Method::Llm, "{:?}", s.error);
    assert!(
        s.hint.chars().count() <= 60 && s.hint.starts_with("Avoid uploading"),
        "{}",
        s.hint
    );
    assert!(s.truncated);
    let s = r.summarize(&items, 200);
    assert_eq!(s.method, Method::Extractive);
    assert!(s.error.expect("model error").contains("503"));
    assert_eq!(
        s.hint,
        "Avoid: Upload failed: permission denied. Exports run on the replica."
    );
}

#[test]
fn config_is_validated() {
    let e = ChatClient::new(LlmConfig::default()).expect_err("empty base url");
    assert!(e.to_string().contains("base_url"), "{e}");
    let e = ChatClient::new(LlmConfig {
        base_url: "http://127.0.0.1:1/v1".into(),
        ..LlmConfig::default()
    })
    .expect_err("empty model");
    assert!(e.to_string().contains("model"), "{e}");
}

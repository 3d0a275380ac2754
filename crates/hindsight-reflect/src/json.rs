//! Tolerant JSON extraction from model output: fenced blocks, prose around the object, trailing
//! chatter.

use serde_json::{Map, Value};

/// The first JSON object in `text` that parses, trying (in order) the whole text, the contents of
/// each ```` ``` ```` fence, and every balanced `{...}` span. `None` when there is none.
pub fn extract_json(text: &str) -> Option<Map<String, Value>> {
    let as_object = |s: &str| match serde_json::from_str::<Value>(s.trim()) {
        Ok(Value::Object(m)) => Some(m),
        _ => None,
    };
    if let Some(m) = as_object(text) {
        return Some(m);
    }
    for block in fenced_blocks(text) {
        if let Some(m) = as_object(block) {
            return Some(m);
        }
    }
    for (start, c) in text.char_indices() {
        if c != '{' {
            continue;
        }
        if let Some(end) = balanced_end(&text[start..])
            && let Some(m) = as_object(&text[start..start + end])
        {
            return Some(m);
        }
    }
    None
}

/// Contents of ```` ```lang ... ``` ```` fences (the language tag line is skipped).
fn fenced_blocks(text: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut rest = text;
    while let Some(open) = rest.find("```") {
        let after = &rest[open + 3..];
        let body_start = after.find('\n').map_or(after.len(), |i| i + 1);
        let body = &after[body_start..];
        match body.find("```") {
            Some(close) => {
                out.push(&body[..close]);
                rest = &body[close + 3..];
            }
            None => {
                out.push(body);
                break;
            }
        }
    }
    out
}

/// Byte length of the balanced `{...}` at the start of `s`, honouring strings and escapes.
fn balanced_end(s: &str) -> Option<usize> {
    let mut depth = 0usize;
    let mut in_str = false;
    let mut escaped = false;
    for (i, c) in s.char_indices() {
        if in_str {
            match (escaped, c) {
                (true, _) => escaped = false,
                (false, '\\') => escaped = true,
                (false, '"') => in_str = false,
                _ => {}
            }
            continue;
        }
        match c {
            '"' => in_str = true,
            '{' => depth += 1,
            '}' => {
                depth = depth.checked_sub(1)?;
                if depth == 0 {
                    return Some(i + 1);
                }
            }
            _ => {}
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(text: &str, expect: Option<&str>) {
        let got = extract_json(text).map(|m| Value::Object(m).to_string());
        let want = expect.map(|e| {
            serde_json::from_str::<Value>(e)
                .expect("expected value is JSON")
                .to_string()
        });
        assert_eq!(got, want, "input {text:?}");
    }

    #[test]
    fn extracts_objects_from_model_chatter() {
        check(r#"{"a":1}"#, Some(r#"{"a":1}"#));
        check("```json\n{\"a\": 1}\n```", Some(r#"{"a":1}"#));
        check(
            "Sure! Here is the reflection:\n```\n{\"lesson\": \"x\"}\n```\nHope it helps.",
            Some(r#"{"lesson":"x"}"#),
        );
        check(
            "The answer is {\"lesson\": \"use {braces} and \\\"quotes\\\"\"} as requested.",
            Some(r#"{"lesson":"use {braces} and \"quotes\""}"#),
        );
        // a broken first candidate is skipped for a later valid one
        check(r#"{oops} then {"b":[1,2]}"#, Some(r#"{"b":[1,2]}"#));
        check("no json here", None);
        check(r#"["an", "array"]"#, None);
        check(r#"{"unterminated": "#, None);
    }
}

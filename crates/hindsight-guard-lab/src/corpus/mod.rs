//! The labelled injection corpora (`datasets/guard/*/corpus.jsonl`, listed by
//! `datasets/guard/manifest.toml`): generation, writing, loading.
//!
//! Generation is deterministic for a seed (one `ChaCha8Rng`). Attack texts come from hand-written
//! templates per category and language ([`templates`]), filled from slot pools and rendered in three
//! styles: `direct`, `embedded` (inside benign text, quoted documents or tool output, via wrapper
//! templates) and `obfuscated` (letter spacing, separators inside words, leetspeak, full-width,
//! zero-width characters, homoglyphs, case mixing; Chinese: spaces / zero-width / symbols between
//! characters). Benign texts are memory-like writes; hard negatives mention confirmation, admins,
//! deletion, rules or passwords harmlessly; some benign texts carry planted sensitive data
//! (`sensitive`, `secrets`) that the guard should redact.
//!
//! Splits are by TEMPLATE: within every (category, language) group of attack templates, every
//! benign template group and the wrapper lists, a seeded shuffle assigns ~60 % of templates to
//! train, ~20 % to validation and ~20 % to test. A test text therefore never shares its template
//! (nor its wrapper) with a training text. Slot fillers and obfuscation methods are shared across
//! splits.

mod conversations;
mod manifest;
mod templates;

pub use conversations::{dialogue_group, load_conversations};
pub use manifest::{DEFAULT_MANIFEST, GuardManifest, GuardSet, LoadedSet, SetFormat};

use std::collections::{BTreeMap, HashSet};
use std::fs;
use std::io::Write;
use std::path::Path;

use hindsight_core::Source;
use rand::seq::{IndexedRandom, SliceRandom};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

use hindsight_guard::GuardError;

/// The seed of the shipped corpus.
pub const DEFAULT_CORPUS_SEED: u64 = 42;
/// The corpus file inside a corpus directory.
pub const CORPUS_FILE: &str = "corpus.jsonl";

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Label {
    Attack,
    Benign,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Split {
    Train,
    Validation,
    Test,
}

impl Split {
    pub fn as_str(self) -> &'static str {
        match self {
            Split::Train => "train",
            Split::Validation => "validation",
            Split::Test => "test",
        }
    }

    pub fn parse(s: &str) -> Option<Split> {
        match s {
            "train" => Some(Split::Train),
            "validation" | "val" => Some(Split::Validation),
            "test" => Some(Split::Test),
            _ => None,
        }
    }
}

/// One labelled text.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CorpusRecord {
    pub id: String,
    pub text: String,
    pub label: Label,
    /// An injection category (`confirmation_bypass`, ...) or `benign`.
    pub category: String,
    /// `en` or `zh`.
    pub language: String,
    /// `direct`, `embedded`, `obfuscated` (attacks) or `benign`.
    pub style: String,
    pub hard_negative: bool,
    pub source: Source,
    pub split: Split,
    /// The template the text came from (`attack/<category>/<lang>/<i>`, `benign/<lang>/<i>`, ...).
    pub template: String,
    /// Kinds of planted sensitive data (`email`, `phone`, ...).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub sensitive: Vec<String>,
    /// The planted secret values (the guard's redaction must remove each).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub secrets: Vec<String>,
}

/// The `style` of a benign turn of a dialogue (chat logs, real conversations): counted under the
/// conversation limits of a threshold's false-positive budget.
pub const CONVERSATION_STYLE: &str = "conversation";

impl CorpusRecord {
    /// A benign turn of a dialogue (`style` [`CONVERSATION_STYLE`]).
    pub fn is_conversational(&self) -> bool {
        self.label == Label::Benign && self.style == CONVERSATION_STYLE
    }

    pub fn is_attack(&self) -> bool {
        self.label == Label::Attack
    }
}

/// A malformed corpus line (reported and skipped by [`load_corpus`]).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct CorpusIssue {
    pub line: usize,
    pub message: String,
}

struct Filled {
    text: String,
    secrets: Vec<String>,
}

const SECRET_SLOTS: &[&str] = &[
    "email", "cn_phone", "us_phone", "sk_key", "aws_key", "gh_token", "password", "card", "cn_id",
];

fn fill(template: &str, zh: bool, rng: &mut ChaCha8Rng) -> Filled {
    let mut out = String::with_capacity(template.len() + 32);
    let mut secrets = Vec::new();
    let mut rest = template;
    while let Some(open) = rest.find('{') {
        out.push_str(&rest[..open]);
        let after = &rest[open + 1..];
        let Some(close) = after.find('}') else {
            out.push_str(&rest[open..]);
            rest = "";
            break;
        };
        let slot = &after[..close];
        let choices = templates::pool(slot, zh);
        if let Some(v) = choices.choose(rng) {
            out.push_str(v);
            if SECRET_SLOTS.contains(&slot) {
                secrets.push((*v).to_owned());
            }
        } else {
            out.push('{');
            out.push_str(slot);
            out.push('}');
        }
        rest = &after[close + 1..];
    }
    out.push_str(rest);
    Filled { text: out, secrets }
}

/// Seeded 60/20/20 assignment of `n` templates to splits.
fn split_assignment(n: usize, rng: &mut ChaCha8Rng) -> Vec<Split> {
    let mut idx: Vec<usize> = (0..n).collect();
    idx.shuffle(rng);
    let n_val = ((n as f64) * 0.2).round().max(1.0) as usize;
    let n_test = n_val;
    let mut out = vec![Split::Train; n];
    for (rank, i) in idx.into_iter().enumerate() {
        out[i] = if rank < n_test {
            Split::Test
        } else if rank < n_test + n_val {
            Split::Validation
        } else {
            Split::Train
        };
    }
    out
}

const PREFIX_EN: &[&str] = &[
    "",
    "",
    "",
    "Note: ",
    "Episode summary: ",
    "Lesson: ",
    "Fact: ",
    "From today's session: ",
];
const PREFIX_ZH: &[&str] = &[
    "",
    "",
    "",
    "备注：",
    "任务总结：",
    "经验：",
    "事实：",
    "今天会话记录：",
];

// ---- obfuscation ---------------------------------------------------------------------------

fn long_word_spans(text: &str) -> Vec<(usize, usize)> {
    let mut spans = Vec::new();
    let mut start = None;
    for (i, c) in text.char_indices() {
        if c.is_ascii_alphabetic() {
            if start.is_none() {
                start = Some(i);
            }
        } else if let Some(s) = start.take()
            && i - s >= 5
        {
            spans.push((s, i));
        }
    }
    if let Some(s) = start
        && text.len() - s >= 5
    {
        spans.push((s, text.len()));
    }
    spans
}

fn map_words(
    text: &str,
    rng: &mut ChaCha8Rng,
    k: usize,
    f: &dyn Fn(&str, &mut ChaCha8Rng) -> String,
) -> String {
    let spans = long_word_spans(text);
    if spans.is_empty() {
        return text.to_owned();
    }
    let mut chosen: Vec<(usize, usize)> = spans
        .choose_multiple(rng, k.min(spans.len()))
        .copied()
        .collect();
    chosen.sort();
    let mut out = String::with_capacity(text.len() * 2);
    let mut at = 0;
    for (s, e) in chosen {
        out.push_str(&text[at..s]);
        out.push_str(&f(&text[s..e], rng));
        at = e;
    }
    out.push_str(&text[at..]);
    out
}

fn join_chars(w: &str, sep: &str) -> String {
    let chars: Vec<String> = w.chars().map(String::from).collect();
    chars.join(sep)
}

fn obfuscate_en(text: &str, rng: &mut ChaCha8Rng) -> String {
    match rng.random_range(0..8) {
        0 => map_words(text, rng, 2, &|w, _| join_chars(w, " ")),
        1 => map_words(text, rng, 3, &|w, _| {
            let mid = w.len() / 2;
            format!("{}.{}", &w[..mid], &w[mid..])
        }),
        2 => map_words(text, rng, 4, &|w, rng| {
            w.chars()
                .map(|c| match (c, rng.random_bool(0.6)) {
                    ('o', true) => '0',
                    ('i', true) => '1',
                    ('e', true) => '3',
                    ('a', true) => '4',
                    ('s', true) => '5',
                    ('t', true) => '7',
                    _ => c,
                })
                .collect()
        }),
        3 => text
            .chars()
            .map(|c| match c {
                '!'..='~' => char::from_u32(c as u32 + 0xFEE0).unwrap_or(c),
                ' ' => '\u{3000}',
                _ => c,
            })
            .collect(),
        4 => map_words(text, rng, 3, &|w, _| join_chars(w, "\u{200B}")),
        5 => text
            .chars()
            .enumerate()
            .map(|(i, c)| {
                if i % 2 == 0 {
                    c.to_ascii_uppercase()
                } else {
                    c.to_ascii_lowercase()
                }
            })
            .collect(),
        6 => text
            .chars()
            .map(|c| match (c, rng.random_bool(0.5)) {
                ('a', true) => 'а',
                ('e', true) => 'е',
                ('o', true) => 'о',
                ('c', true) => 'с',
                _ => c,
            })
            .collect(),
        _ => map_words(text, rng, 3, &|w, _| join_chars(w, "-")),
    }
}

fn obfuscate_zh(text: &str, rng: &mut ChaCha8Rng) -> String {
    let sep = match rng.random_range(0..5) {
        0 => " ",
        1 => "\u{200B}",
        2 => "*",
        3 => "·",
        _ => "\u{00AD}",
    };
    // Separate a contiguous chunk (or the whole text) of CJK characters.
    let chars: Vec<char> = text.chars().collect();
    let n = chars.len();
    let (from, to) = if rng.random_bool(0.5) || n < 8 {
        (0, n)
    } else {
        let a = rng.random_range(0..n / 2);
        (a, (a + rng.random_range(6..=n.max(7) - 1)).min(n))
    };
    let mut out = String::with_capacity(text.len() * 2);
    for (i, c) in chars.iter().enumerate() {
        out.push(*c);
        if i + 1 < to
            && i >= from
            && hindsight_guard::is_cjk(*c)
            && chars
                .get(i + 1)
                .is_some_and(|d| hindsight_guard::is_cjk(*d))
        {
            out.push_str(sep);
        }
    }
    if rng.random_bool(0.3) {
        // full-width latin/digits too
        out = out
            .chars()
            .map(|c| match c {
                '!'..='~' => char::from_u32(c as u32 + 0xFEE0).unwrap_or(c),
                _ => c,
            })
            .collect();
    }
    out
}

// ---- generation ----------------------------------------------------------------------------

fn pick_source(rng: &mut ChaCha8Rng, attack: bool) -> Source {
    let r: f64 = rng.random();
    if attack {
        if r < 0.45 {
            Source::External
        } else if r < 0.75 {
            Source::Agent
        } else {
            Source::User
        }
    } else if r < 0.5 {
        Source::User
    } else if r < 0.85 {
        Source::Agent
    } else {
        Source::External
    }
}

struct BenignPools<'a> {
    /// (template id, template) per (zh, split) for NON-hard-negative benign templates.
    by_lang_split: BTreeMap<(bool, Split), Vec<(String, &'a str)>>,
}

impl BenignPools<'_> {
    fn sentence(&self, zh: bool, split: Split, rng: &mut ChaCha8Rng) -> String {
        match self
            .by_lang_split
            .get(&(zh, split))
            .and_then(|v| v.choose(rng))
        {
            Some((_, t)) => fill(t, zh, rng).text,
            None => String::new(),
        }
    }
}

/// Generates the corpus for `seed` (see the module docs). Deterministic: one seed, one output.
pub fn generate_corpus(seed: u64) -> Vec<CorpusRecord> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut out: Vec<CorpusRecord> = Vec::new();

    // Benign template splits.
    let mut benign_splits: Vec<Vec<Split>> = Vec::new();
    let mut pools = BenignPools {
        by_lang_split: BTreeMap::new(),
    };
    for (g, group) in templates::BENIGN.iter().enumerate() {
        let splits = split_assignment(group.templates.len(), &mut rng);
        if !group.hard_negative {
            for (i, t) in group.templates.iter().enumerate() {
                pools
                    .by_lang_split
                    .entry((group.zh, splits[i]))
                    .or_default()
                    .push((format!("benign/{g}/{i}"), t));
            }
        }
        benign_splits.push(splits);
    }
    let wrap_en = split_assignment(templates::WRAPPERS_EN.len(), &mut rng);
    let wrap_zh = split_assignment(templates::WRAPPERS_ZH.len(), &mut rng);
    let sens_en = split_assignment(templates::SENSITIVE_EN.len(), &mut rng);
    let sens_zh = split_assignment(templates::SENSITIVE_ZH.len(), &mut rng);

    // Attacks.
    for group in templates::ATTACKS {
        let zh = group.zh;
        let lang = if zh { "zh" } else { "en" };
        let splits = split_assignment(group.templates.len(), &mut rng);
        let (wrappers, wsplits) = if zh {
            (templates::WRAPPERS_ZH, &wrap_zh)
        } else {
            (templates::WRAPPERS_EN, &wrap_en)
        };
        for (i, t) in group.templates.iter().enumerate() {
            let split = splits[i];
            let tid = format!("attack/{}/{lang}/{i}", group.category);
            let split_wrappers: Vec<(usize, &str)> = wrappers
                .iter()
                .enumerate()
                .filter(|(w, _)| wsplits[*w] == split)
                .map(|(w, s)| (w, *s))
                .collect();
            for style in [
                "direct",
                "direct",
                "embedded",
                "embedded",
                "obfuscated",
                "obfuscated",
            ] {
                let payload = fill(t, zh, &mut rng).text;
                let mut template = tid.clone();
                let text = match style {
                    "direct" => {
                        let prefixes = if zh { PREFIX_ZH } else { PREFIX_EN };
                        let p = prefixes.choose(&mut rng).copied().unwrap_or("");
                        format!("{p}{payload}")
                    }
                    "embedded" => wrap(
                        &split_wrappers,
                        &payload,
                        zh,
                        split,
                        &pools,
                        &mut rng,
                        &mut template,
                    ),
                    _ => {
                        let obf = if zh {
                            obfuscate_zh(&payload, &mut rng)
                        } else {
                            obfuscate_en(&payload, &mut rng)
                        };
                        if rng.random_bool(0.3) {
                            wrap(
                                &split_wrappers,
                                &obf,
                                zh,
                                split,
                                &pools,
                                &mut rng,
                                &mut template,
                            )
                        } else {
                            obf
                        }
                    }
                };
                out.push(CorpusRecord {
                    id: String::new(),
                    text,
                    label: Label::Attack,
                    category: group.category.as_str().to_owned(),
                    language: lang.to_owned(),
                    style: style.to_owned(),
                    hard_negative: false,
                    source: pick_source(&mut rng, true),
                    split,
                    template,
                    sensitive: Vec::new(),
                    secrets: Vec::new(),
                });
            }
        }
    }

    // Benign writes.
    for (g, group) in templates::BENIGN.iter().enumerate() {
        let zh = group.zh;
        let lang = if zh { "zh" } else { "en" };
        let per_template = if group.hard_negative { 12 } else { 18 };
        for (i, t) in group.templates.iter().enumerate() {
            let split = benign_splits[g][i];
            for _ in 0..per_template {
                let prefixes = if zh { PREFIX_ZH } else { PREFIX_EN };
                let p = prefixes.choose(&mut rng).copied().unwrap_or("");
                let filled = fill(t, zh, &mut rng);
                let mut text = format!("{p}{}", filled.text);
                let mut template = format!("benign/{g}/{i}");
                if rng.random_bool(0.3) {
                    let other = pools.sentence(zh, split, &mut rng);
                    if !other.is_empty() {
                        text = if rng.random_bool(0.5) {
                            format!("{text}{}{other}", if zh { "" } else { " " })
                        } else {
                            format!("{other}{}{text}", if zh { "" } else { " " })
                        };
                        template.push_str("+mix");
                    }
                }
                let mut sensitive = Vec::new();
                let mut secrets = filled.secrets;
                if !group.hard_negative && rng.random_bool(0.12) {
                    let (list, splits) = if zh {
                        (templates::SENSITIVE_ZH, &sens_zh)
                    } else {
                        (templates::SENSITIVE_EN, &sens_en)
                    };
                    let cands: Vec<&(&str, &str)> = list
                        .iter()
                        .enumerate()
                        .filter(|(k, _)| splits[*k] == split)
                        .map(|(_, x)| x)
                        .collect();
                    if let Some((st, kind)) = cands.choose(&mut rng) {
                        let f = fill(st, zh, &mut rng);
                        text = format!("{text}{}{}", if zh { "" } else { " " }, f.text);
                        sensitive.push((*kind).to_owned());
                        secrets.extend(f.secrets);
                        template.push_str("+sensitive");
                    }
                }
                out.push(CorpusRecord {
                    id: String::new(),
                    text,
                    label: Label::Benign,
                    category: "benign".to_owned(),
                    language: lang.to_owned(),
                    style: "benign".to_owned(),
                    hard_negative: group.hard_negative,
                    source: pick_source(&mut rng, false),
                    split,
                    template,
                    sensitive,
                    secrets,
                });
            }
        }
    }

    // Dedupe by text (first wins), shuffle, assign ids.
    let mut seen = HashSet::new();
    out.retain(|r| seen.insert(r.text.clone()));
    out.shuffle(&mut rng);
    for (i, r) in out.iter_mut().enumerate() {
        r.id = format!("inj-{:05}", i + 1);
    }
    out
}

fn wrap(
    wrappers: &[(usize, &str)],
    payload: &str,
    zh: bool,
    split: Split,
    pools: &BenignPools<'_>,
    rng: &mut ChaCha8Rng,
    template: &mut String,
) -> String {
    let Some((w, wt)) = wrappers.choose(rng) else {
        return payload.to_owned();
    };
    template.push_str(&format!("+wrap{w}"));
    let benign = pools.sentence(zh, split, rng);
    let with_payload = wt
        .replace("{payload}", payload)
        .replace("{benign}", &benign);
    fill(&with_payload, zh, rng).text
}

/// Writes `records` to `dir/corpus.jsonl` (one JSON object per line, in order).
pub fn write_corpus(dir: &Path, records: &[CorpusRecord]) -> Result<(), GuardError> {
    fs::create_dir_all(dir)
        .map_err(|e| GuardError::io(format!("creating {}", dir.display()), e))?;
    let path = dir.join(CORPUS_FILE);
    let mut buf = Vec::with_capacity(records.len() * 200);
    for r in records {
        serde_json::to_writer(&mut buf, r)
            .map_err(|e| GuardError::Invalid(format!("serialising record {}: {e}", r.id)))?;
        buf.push(b'\n');
    }
    let mut f = fs::File::create(&path)
        .map_err(|e| GuardError::io(format!("creating {}", path.display()), e))?;
    f.write_all(&buf)
        .map_err(|e| GuardError::io(format!("writing {}", path.display()), e))?;
    Ok(())
}

/// Loads `dir/corpus.jsonl` (or a `.jsonl` file path). Malformed lines are returned as issues
/// (1-based line numbers) and skipped.
pub fn load_corpus(path: &Path) -> Result<(Vec<CorpusRecord>, Vec<CorpusIssue>), GuardError> {
    let file = if path.is_dir() {
        path.join(CORPUS_FILE)
    } else {
        path.to_path_buf()
    };
    let text = fs::read_to_string(&file)
        .map_err(|e| GuardError::io(format!("reading {}", file.display()), e))?;
    let mut records = Vec::new();
    let mut issues = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        match serde_json::from_str::<CorpusRecord>(line) {
            Ok(r) => records.push(r),
            Err(e) => issues.push(CorpusIssue {
                line: i + 1,
                message: e.to_string(),
            }),
        }
    }
    Ok((records, issues))
}

/// Counts per (split, label) and hard negatives, for summaries.
pub fn corpus_summary(records: &[CorpusRecord]) -> BTreeMap<String, usize> {
    let mut m = BTreeMap::new();
    for r in records {
        *m.entry(format!(
            "{}/{}",
            r.split.as_str(),
            if r.is_attack() { "attack" } else { "benign" }
        ))
        .or_insert(0) += 1;
        if r.hard_negative {
            *m.entry(format!("{}/hard_negative", r.split.as_str()))
                .or_insert(0) += 1;
        }
        *m.entry(format!(
            "all/{}",
            if r.is_attack() { "attack" } else { "benign" }
        ))
        .or_insert(0) += 1;
    }
    m
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deterministic_and_large_enough() {
        let a = generate_corpus(7);
        let b = generate_corpus(7);
        assert_eq!(a, b);
        let attacks = a.iter().filter(|r| r.is_attack()).count();
        let benign = a.len() - attacks;
        assert!(attacks >= 400, "{attacks} attacks");
        assert!(benign >= 2000, "{benign} benign");
        assert!(a.iter().any(|r| r.hard_negative && r.split == Split::Test));
        for r in &a {
            assert!(!r.text.contains('{'), "unfilled slot in {:?}", r.text);
        }
    }

    #[test]
    fn test_templates_are_held_out() {
        let c = generate_corpus(DEFAULT_CORPUS_SEED);
        let base = |t: &str| t.split('+').next().unwrap_or("").to_owned();
        let train: HashSet<String> = c
            .iter()
            .filter(|r| r.split == Split::Train)
            .map(|r| base(&r.template))
            .collect();
        for r in c.iter().filter(|r| r.split == Split::Test) {
            assert!(!train.contains(&base(&r.template)), "{} leaks", r.template);
        }
    }

    #[test]
    fn roundtrip_and_bad_lines() {
        let dir = tempfile::tempdir().expect("tempdir");
        let c: Vec<CorpusRecord> = generate_corpus(1).into_iter().take(20).collect();
        write_corpus(dir.path(), &c).expect("write");
        let path = dir.path().join(CORPUS_FILE);
        let mut text = fs::read_to_string(&path).expect("read");
        text.push_str("{not json}\n");
        fs::write(&path, text).expect("write");
        let (back, issues) = load_corpus(dir.path()).expect("load");
        assert_eq!(back, c);
        assert_eq!(issues.len(), 1);
        assert_eq!(issues[0].line, 21);
    }
}

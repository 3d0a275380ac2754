//! The deterministic bilingual multi-session chat generator (`conversations-bilingual`).
//!
//! 24 conversations (14 English, 10 Chinese), one namespace each, between two people who know
//! each other well (friends, siblings, a long-distance couple, old colleagues); a few have a third
//! person joining some sessions. Each conversation has 6-9 sessions over 3-8 months of 2024-2025;
//! every turn is one memory (`Name: text`, tag `session_<n>`, `created_at` = session start + one
//! minute per turn), as the LoCoMo importer does.
//!
//! Each person has a life (job, city, pets, relatives, a hobby, 4-8 events; the job, city or hobby
//! may change later). Facts are woven into the dialogue through scripts: statements, questions
//! answered only in the reply, relative dates ("last weekend", "上周末") resolved against the
//! session day, follow-ups that only make sense after the previous turn, callbacks in later
//! sessions, and distractors that reuse a fact's topic words about someone else or another time.
//! Questions (single-hop, temporal, multi-hop, updated) are judged from the turns that carry the
//! facts they need: grade 3 the answer, 2 the question a reply answers (or a supporting callback),
//! 1 a superseded value, 0 a hard distractor.
//!
//! Memory ids are random (`m-` + 6 hex digits) and memories are written shuffled, so neither the
//! id nor the file position says anything about order or content. All randomness comes from one
//! `ChaCha8Rng`; only `Vec`s and `BTree*`s reach the output.

mod dates;
mod en;
mod lex;
mod zh;

use std::collections::{BTreeMap, BTreeSet};

use chrono::{DateTime, Duration, NaiveDate, Timelike, Utc};
use hindsight_core::{MemoryKind, Source};
use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use crate::format::{Dataset, DatasetMeta, MemoryRecord, Qrels, QueryRecord};
use lex::{EVENT_KINDS, FamRel, Kind, Lang, Lex, Mode, Multi, RelKind, Script};

const CONVERSATIONS_EN: usize = 14;
const CONVERSATIONS_ZH: usize = 10;
const MIN_TURNS: usize = 14;
const MAX_TURNS: usize = 30;
/// Planned content turns a session may hold besides greeting, third-person hello and closing.
const CAPACITY: usize = 23;

// Aspects of a script line (see `lex`).
const A_W: u8 = 1;
const A_T: u8 = 2;
const A_D: u8 = 4;
const A_Q: u8 = 8;
const A_R: u8 = 16;
const A_C: u8 = 64;
/// A distractor line about the speaker's own past of the fact's kind.
const A_SELF: u8 = 128;
/// The line is a distractor for its fact.
const A_DIS: u8 = 32;

type Slots = BTreeMap<&'static str, String>;

/// Random source plus the usage counts that keep flavour lines varied within a conversation.
pub(crate) struct Gen {
    rng: ChaCha8Rng,
    uses: BTreeMap<String, u32>,
}

impl Gen {
    fn new(seed: u64) -> Self {
        Gen {
            rng: ChaCha8Rng::seed_from_u64(seed),
            uses: BTreeMap::new(),
        }
    }
    /// Uniform index below `n` (0 when `n <= 1`).
    pub(crate) fn below(&mut self, n: usize) -> usize {
        if n <= 1 {
            0
        } else {
            self.rng.random_range(0..n as u64) as usize
        }
    }
    fn range(&mut self, lo: i64, hi: i64) -> i64 {
        if hi <= lo {
            lo
        } else {
            self.rng.random_range(lo..=hi)
        }
    }
    fn chance(&mut self, p: f64) -> bool {
        self.rng.random_bool(p.clamp(0.0, 1.0))
    }
    fn pick<'a, T>(&mut self, xs: &'a [T]) -> &'a T {
        &xs[self.below(xs.len())]
    }
    fn shuffle<T>(&mut self, xs: &mut [T]) {
        xs.shuffle(&mut self.rng);
    }
    /// An index into a list of `n` options used least so far under `key` (ties broken at random).
    fn varied(&mut self, key: &str, n: usize) -> usize {
        let counts: Vec<u32> = (0..n)
            .map(|i| self.uses.get(&format!("{key}#{i}")).copied().unwrap_or(0))
            .collect();
        let min = counts.iter().copied().min().unwrap_or(0);
        let best: Vec<usize> = (0..n).filter(|i| counts[*i] == min).collect();
        let i = best[self.below(best.len())];
        *self.uses.entry(format!("{key}#{i}")).or_insert(0) += 1;
        i
    }
    /// One of `options` (indices into a list) used least so far under `key`.
    fn varied_among(&mut self, key: &str, options: &[usize]) -> usize {
        let count = |g: &Self, i: usize| g.uses.get(&format!("{key}#{i}")).copied().unwrap_or(0);
        let min = options.iter().map(|i| count(self, *i)).min().unwrap_or(0);
        let best: Vec<usize> = options
            .iter()
            .copied()
            .filter(|i| count(self, *i) == min)
            .collect();
        let i = best[self.below(best.len())];
        *self.uses.entry(format!("{key}#{i}")).or_insert(0) += 1;
        i
    }
    /// A value from `pool` not yet in `used` (recorded there); any value when all are used.
    fn fresh(&mut self, pool: &[&'static str], used: &mut BTreeSet<String>) -> String {
        let free: Vec<&str> = pool
            .iter()
            .copied()
            .filter(|v| !used.contains(*v))
            .collect();
        let v = if free.is_empty() {
            (*self.pick(pool)).to_owned()
        } else {
            free[self.below(free.len())].to_owned()
        };
        used.insert(v.clone());
        v
    }
    /// Index of an entry whose key is not yet in `used` (recorded there).
    fn fresh_index<T>(
        &mut self,
        xs: &[T],
        key: impl Fn(&T) -> &str,
        used: &mut BTreeSet<String>,
    ) -> usize {
        let free: Vec<usize> = (0..xs.len())
            .filter(|i| !used.contains(key(&xs[*i])))
            .collect();
        let i = if free.is_empty() {
            self.below(xs.len())
        } else {
            free[self.below(free.len())]
        };
        used.insert(key(&xs[i]).to_owned());
        i
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Relation {
    Friends,
    Siblings,
    Couple,
    Colleagues,
}

impl Relation {
    fn label(self) -> &'static str {
        match self {
            Relation::Friends => "friends",
            Relation::Siblings => "siblings",
            Relation::Couple => "couple",
            Relation::Colleagues => "colleagues",
        }
    }
}

#[derive(Clone, Debug)]
struct Person {
    name: String,
    female: bool,
    older: bool,
}

#[derive(Clone, Debug)]
struct Fact {
    kind: Kind,
    owner: usize,
    session: usize,
    /// The event's day (the session day for persona facts).
    date: NaiveDate,
    slots: Slots,
    /// Turns carrying the fact, with their aspects.
    turns: Vec<(usize, u8)>,
    /// Turns reusing its topic words about someone or something else.
    distractors: Vec<usize>,
    /// The fact this one supersedes (new job, move, new hobby).
    prev: Option<usize>,
    /// The relative a relative's pet belongs to.
    link: Option<usize>,
}

/// A planned exchange: parsed script lines with the slots to fill them.
#[derive(Clone, Debug)]
struct Seg {
    owner: usize,
    lines: Vec<(char, u8, &'static str)>,
    slots: Slots,
    fact: Option<usize>,
    /// Greeting, third-person hello or closing: spoken by the main pair only.
    frame: bool,
}

#[derive(Clone, Debug)]
struct Turn {
    content: String,
    session: usize,
    at: DateTime<Utc>,
}

struct Conv {
    lex: &'static Lex,
    ns: String,
    relation: Relation,
    people: Vec<Person>,
    third: BTreeSet<usize>,
    starts: Vec<DateTime<Utc>>,
    facts: Vec<Fact>,
    segs: Vec<Vec<Seg>>,
    load: Vec<usize>,
    used: BTreeSet<String>,
    turns: Vec<Turn>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum QType {
    Single,
    Temporal,
    Multi,
    Updated,
}

impl QType {
    fn tag(self) -> &'static str {
        match self {
            QType::Single => "type:single-hop",
            QType::Temporal => "type:temporal",
            QType::Multi => "type:multi-hop",
            QType::Updated => "type:updated",
        }
    }
}

/// How a fact's turns are graded for a question.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Grade {
    What,
    Detail,
    When,
    Old,
    Support,
}

#[derive(Clone, Debug)]
struct Cand {
    ty: QType,
    kind: Kind,
    text: String,
    para: Option<String>,
    judged: BTreeMap<usize, i32>,
    facts: Vec<usize>,
}

#[derive(Clone, Debug)]
struct Query {
    conv: usize,
    text: String,
    tags: Vec<String>,
    judged: BTreeMap<usize, i32>,
}

fn parse(script: Script, extra: u8) -> Vec<(char, u8, &'static str)> {
    script
        .iter()
        .map(|line| {
            let mut parts = line.splitn(3, '|');
            let role = parts.next().and_then(|r| r.chars().next()).unwrap_or('O');
            let aspects = parts.next().unwrap_or("-");
            let text = parts.next().unwrap_or("");
            let mut bits = extra;
            for c in aspects.chars() {
                bits |= match c {
                    'W' => A_W,
                    'T' => A_T,
                    'D' => A_D,
                    'Q' => A_Q,
                    'R' => A_R,
                    'C' => A_C,
                    'S' => A_SELF,
                    _ => 0,
                };
            }
            (role, bits, text)
        })
        .collect()
}

/// Indices of the greeting / closing scripts that fit the local hour ("Morning!" before noon,
/// "Evening" and dinner in the evening, bedtime late).
fn fitting(scripts: &[Script], hour: u32) -> Vec<usize> {
    const MORNING: &[&str] = &["Morning", "早啊"];
    const EVENING: &[&str] = &["Evening", "晚上好"];
    const DINNER: &[&str] = &["dinner", "做饭"];
    const BED: &[&str] = &["bedtime", "asleep", "困了", "睡着", "晚安"];
    let has = |s: Script, words: &[&str]| s.iter().any(|l| words.iter().any(|w| l.contains(w)));
    let ok: Vec<usize> = (0..scripts.len())
        .filter(|i| {
            let s = scripts[*i];
            !(has(s, MORNING) && hour >= 12
                || has(s, EVENING) && hour < 17
                || has(s, DINNER) && !(16..=20).contains(&hour)
                || has(s, BED) && hour < 20)
        })
        .collect();
    if ok.is_empty() {
        (0..scripts.len()).collect()
    } else {
        ok
    }
}

fn capitalize(s: &str) -> String {
    let mut cs = s.chars();
    match cs.next() {
        Some(f) => f.to_uppercase().chain(cs).collect(),
        None => String::new(),
    }
}

/// Fills `{slot}` placeholders: the slots first, then `{slot_c}` (capitalised), then flavour
/// pools. An unknown placeholder is left as is (the tests reject any that reach the output).
fn fill(lex: &Lex, g: &mut Gen, tpl: &str, slots: &Slots, depth: u8) -> String {
    let mut out = String::new();
    let mut rest = tpl;
    while let Some(i) = rest.find('{') {
        out.push_str(&rest[..i]);
        let after = &rest[i + 1..];
        let Some(j) = after.find('}') else {
            out.push_str(&rest[i..]);
            rest = "";
            break;
        };
        out.push_str(&resolve(lex, g, &after[..j], slots, depth));
        rest = &after[j + 1..];
    }
    out.push_str(rest);
    out
}

fn resolve(lex: &Lex, g: &mut Gen, key: &str, slots: &Slots, depth: u8) -> String {
    if depth > 4 {
        return format!("{{{key}}}");
    }
    if let Some(v) = slots.get(key) {
        return if v.contains('{') {
            fill(lex, g, v, slots, depth + 1)
        } else {
            v.clone()
        };
    }
    if let Some(base) = key.strip_suffix("_c") {
        return capitalize(&resolve(lex, g, base, slots, depth));
    }
    if let Some(pool) = lex.pool(key) {
        let i = g.varied(key, pool.len());
        return fill(lex, g, pool[i], slots, depth + 1);
    }
    format!("{{{key}}}")
}

const STOP_WORDS: &[&str] = &[
    "the", "and", "for", "are", "was", "were", "can", "may", "what", "which", "who", "whom",
    "whose", "when", "where", "why", "how", "does", "did", "doing", "done", "this", "that",
    "these", "those", "there", "their", "them", "they", "our", "any", "about", "with", "from",
    "into", "onto", "not", "but", "get", "got", "should", "would", "could", "will", "has", "have",
    "had", "its", "then", "than", "all", "you", "your", "she", "her", "hers", "his", "him", "now",
    "one", "out", "off", "over", "just", "been", "being", "also", "very", "too", "own", "some",
    "such", "only", "after", "before", "while", "each",
];

/// English content words (3+ letters, not stop words) and pairs of adjacent Han characters.
fn terms(text: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for w in text.split(|c: char| !c.is_ascii_alphanumeric()) {
        let w = w.to_ascii_lowercase();
        if w.len() >= 3 && !STOP_WORDS.contains(&w.as_str()) {
            out.insert(w);
        }
    }
    let is_han = |c: char| ('\u{4e00}'..='\u{9fff}').contains(&c);
    let chars: Vec<char> = text.chars().collect();
    for pair in chars.windows(2) {
        if is_han(pair[0]) && is_han(pair[1]) {
            out.insert(pair.iter().collect());
        }
    }
    out
}

fn day_start(d: NaiveDate) -> DateTime<Utc> {
    d.and_hms_opt(0, 0, 0)
        .map(|t| t.and_utc())
        .unwrap_or(DateTime::<Utc>::UNIX_EPOCH)
}

fn ymd(y: i32, m: u32, d: u32) -> NaiveDate {
    NaiveDate::from_ymd_opt(y, m, d).unwrap_or_default()
}

impl Conv {
    fn new(lex: &'static Lex, ns: String, relation: Relation) -> Self {
        Conv {
            lex,
            ns,
            relation,
            people: Vec::new(),
            third: BTreeSet::new(),
            starts: Vec::new(),
            facts: Vec::new(),
            segs: Vec::new(),
            load: Vec::new(),
            used: BTreeSet::new(),
            turns: Vec::new(),
        }
    }

    fn n(&self) -> usize {
        self.starts.len()
    }

    fn zh(&self) -> bool {
        self.lex.lang == Lang::Zh
    }

    fn person(&mut self, g: &mut Gen, female: bool) -> Person {
        let pool = if female {
            self.lex.female
        } else {
            self.lex.male
        };
        let name = g.fresh(pool, &mut self.used);
        Person {
            name,
            female,
            older: false,
        }
    }

    fn minor_name(&mut self, g: &mut Gen, female: bool) -> String {
        let pool = if female {
            self.lex.minor_female
        } else {
            self.lex.minor_male
        };
        g.fresh(pool, &mut self.used)
    }

    fn cast(&mut self, g: &mut Gen, with_third: bool) {
        let f0 = g.chance(0.5);
        let f1 = match self.relation {
            Relation::Couple => {
                if g.chance(0.85) {
                    !f0
                } else {
                    f0
                }
            }
            _ => g.chance(0.5),
        };
        let mut a = self.person(g, f0);
        let mut b = self.person(g, f1);
        a.older = g.chance(0.5);
        b.older = !a.older;
        self.people = vec![a, b];
        if with_third {
            let f = g.chance(0.5);
            let c = self.person(g, f);
            self.people.push(c);
        }
    }

    fn schedule(&mut self, g: &mut Gen) {
        let n = g.range(6, 9) as usize;
        let span = g.range(92, 240);
        let first = ymd(2024, 1, 1);
        let last_possible = ymd(2025, 12, 31) - Duration::days(span);
        let offset = g.range(0, (last_possible - first).num_days());
        let start = first + Duration::days(offset);
        let mut offs: Vec<i64> = Vec::new();
        for _ in 0..500 {
            let mut o: Vec<i64> = (0..n - 2).map(|_| g.range(7, span - 7)).collect();
            o.push(0);
            o.push(span);
            o.sort_unstable();
            if o.windows(2).all(|w| w[1] - w[0] >= 7) {
                offs = o;
                break;
            }
        }
        if offs.is_empty() {
            offs = (0..n as i64).map(|i| i * span / (n as i64 - 1)).collect();
        }
        let (lo, hi) = if self.zh() { (1, 14) } else { (8, 21) };
        self.starts = offs
            .iter()
            .map(|o| {
                day_start(start + Duration::days(*o))
                    + Duration::hours(g.range(lo, hi))
                    + Duration::minutes(g.range(0, 59))
            })
            .collect();
        self.segs = vec![Vec::new(); n];
        self.load = vec![0; n];
        if self.people.len() > 2 {
            let k = g.range(2, 3) as usize;
            let mut ss: Vec<usize> = (1..n).collect();
            g.shuffle(&mut ss);
            self.third = ss.into_iter().take(k).collect();
        }
    }

    /// Slots every fact of `owner` carries.
    fn base_slots(&self, owner: usize) -> Slots {
        let p = &self.people[owner];
        let other = &self.people[1 - owner.min(1)];
        let mut s = Slots::new();
        s.insert("name", p.name.clone());
        s.insert("other", other.name.clone());
        let (she, her, him) = match (self.zh(), p.female) {
            (true, true) => ("她", "她", "她"),
            (true, false) => ("他", "他", "他"),
            (false, true) => ("she", "her", "her"),
            (false, false) => ("he", "his", "him"),
        };
        s.insert("she", she.to_owned());
        s.insert("her", her.to_owned());
        s.insert("him", him.to_owned());
        s
    }

    fn pick_session(
        &self,
        g: &mut Gen,
        lo: usize,
        hi: usize,
        len: usize,
        avoid: &[usize],
    ) -> Option<usize> {
        let free: Vec<usize> = (lo..=hi.min(self.n().saturating_sub(1)))
            .filter(|s| self.load[*s] + len <= CAPACITY && !avoid.contains(s))
            .collect();
        if free.is_empty() {
            return None;
        }
        // Two random choices, the less loaded one wins: facts spread over the sessions.
        let a = free[g.below(free.len())];
        let b = free[g.below(free.len())];
        Some(if self.load[b] < self.load[a] { b } else { a })
    }

    fn is_event(kind: Kind) -> bool {
        !matches!(
            kind,
            Kind::Job | Kind::City | Kind::Pet | Kind::Family | Kind::Hobby | Kind::FamilyPet
        )
    }

    /// Plans a fact: picks a script and a session with room in `lo..=hi`, resolves its date.
    #[allow(clippy::too_many_arguments)]
    fn add_fact(
        &mut self,
        g: &mut Gen,
        kind: Kind,
        owner: usize,
        mut slots: Slots,
        lo: usize,
        hi: usize,
        avoid: &[usize],
    ) -> Option<usize> {
        let n = self.n();
        let scripts = self.lex.scripts_for(kind);
        // Least-used scripts first, so the two people (and repeated kinds) are phrased apart.
        let key = format!("script:{kind:?}");
        let mut order: Vec<usize> = (0..scripts.len()).collect();
        g.shuffle(&mut order);
        order.sort_by_key(|i| g.uses.get(&format!("{key}#{i}")).copied().unwrap_or(0));
        for si in order {
            let script = scripts[si];
            let future = script.iter().any(|l| l.contains("{when_future"));
            let hi2 = if future {
                hi.min(n.saturating_sub(2))
            } else {
                hi
            };
            if lo > hi2 {
                continue;
            }
            let Some(s) = self.pick_session(g, lo, hi2, script.len(), avoid) else {
                continue;
            };
            let day = self.starts[s].date_naive();
            let date = if future {
                let next = self.starts.get(s + 1).map(DateTime::date_naive);
                match dates::future(self.lex.lang, g, day, next) {
                    Some((p, d)) => {
                        slots.insert("when_future", p);
                        d
                    }
                    None => continue,
                }
            } else if Self::is_event(kind) {
                let prev = s.checked_sub(1).map(|p| self.starts[p].date_naive());
                let min_back = slots
                    .get("_min_back")
                    .and_then(|v| v.parse().ok())
                    .unwrap_or(1);
                let (p, d) = dates::past(self.lex.lang, g, day, prev, min_back);
                slots.insert("when", p);
                d
            } else {
                day
            };
            self.load[s] += script.len();
            *g.uses.entry(format!("{key}#{si}")).or_insert(0) += 1;
            let fi = self.facts.len();
            self.facts.push(Fact {
                kind,
                owner,
                session: s,
                date,
                slots: slots.clone(),
                turns: Vec::new(),
                distractors: Vec::new(),
                prev: None,
                link: None,
            });
            self.segs[s].push(Seg {
                owner,
                lines: parse(script, 0),
                slots,
                fact: Some(fi),
                frame: false,
            });
            return Some(fi);
        }
        None
    }

    fn number(&self, n: usize) -> String {
        self.lex.numbers.get(n).copied().unwrap_or("two").to_owned()
    }

    fn pet_slots(&mut self, g: &mut Gen, s: &mut Slots, sp: usize) {
        let lex = self.lex;
        let species = &lex.species[sp];
        s.insert("species", species.name.to_owned());
        s.insert("young", species.young.to_owned());
        let name = g.fresh(lex.value("pet_name"), &mut self.used);
        s.insert("pet", name);
        let female = g.chance(0.5);
        let (he, him, her) = match (self.zh(), female) {
            (true, _) => ("它", "它", "它"),
            (false, true) => ("she", "her", "her"),
            (false, false) => ("he", "him", "his"),
        };
        s.insert("pet_he", he.to_owned());
        s.insert("pet_him", him.to_owned());
        s.insert("pet_her", her.to_owned());
        let breed = if species.breeds.is_empty() {
            None
        } else {
            Some(*g.pick(species.breeds))
        };
        let by = match (self.zh(), breed) {
            (true, Some(b)) => format!("一只{b}"),
            (true, None) => format!("一只{}", species.young),
            (false, Some(b)) => format!("a {b} {}", species.young),
            (false, None) => format!("a {}", species.young),
        };
        s.insert("breed_young", by);
        let mut antics: Vec<&str> = species.antics.to_vec();
        g.shuffle(&mut antics);
        s.insert(
            "antic",
            antics.first().copied().unwrap_or_default().to_owned(),
        );
        s.insert(
            "antic2",
            antics.last().copied().unwrap_or_default().to_owned(),
        );
        let trait_ = *g.pick(lex.value("pet_trait"));
        s.insert("pet_trait", trait_.to_owned());
    }

    /// Plans one main person's life.
    fn plan_person(&mut self, g: &mut Gen, p: usize) {
        let lex = self.lex;
        let n = self.n();
        let early = (n / 2).max(1);
        let mut kinds: Vec<Kind> = EVENT_KINDS.to_vec();
        g.shuffle(&mut kinds);
        kinds.truncate(g.range(4, 8) as usize);
        let has = |k: Kind| kinds.contains(&k);

        // Job.
        let ji = g.fresh_index(lex.jobs, |j| j.title, &mut self.used);
        let job = &lex.jobs[ji];
        let mut s = self.base_slots(p);
        s.insert("job", job.title.to_owned());
        s.insert("a_job", job.a.to_owned());
        s.insert("workplace", job.place.to_owned());
        s.insert("job_detail", job.detail.to_owned());
        self.used.insert(job.place.to_owned());
        let hi = if has(Kind::NewJob) { n - 3 } else { early };
        let job_f = self.add_fact(g, Kind::Job, p, s, 0, hi, &[]);

        // City.
        let city = g.fresh(lex.value("city"), &mut self.used);
        let mut s = self.base_slots(p);
        s.insert("city", city.clone());
        let years = g.range(2, 9) as usize;
        s.insert("years", self.number(years));
        let hi = if has(Kind::Move) { n - 3 } else { early };
        let city_f = self.add_fact(g, Kind::City, p, s, 0, hi, &[]);

        // Hobby.
        let hi_ = g.fresh_index(lex.hobbies, |h| h.name, &mut self.used);
        let hobby = &lex.hobbies[hi_];
        let mut s = self.base_slots(p);
        s.insert("hobby", hobby.name.to_owned());
        s.insert("hobby_detail", hobby.detail.to_owned());
        let hi = if has(Kind::NewHobby) { n - 3 } else { early };
        let hobby_f = self.add_fact(g, Kind::Hobby, p, s, 0, hi, &[]);

        // Pets already there.
        let mut species_used: BTreeSet<usize> = BTreeSet::new();
        let pets = match g.below(8) {
            0 | 1 => 0,
            2..=5 => 1,
            _ => 2,
        };
        for _ in 0..pets {
            let sp = self.fresh_species(g, &mut species_used);
            let mut s = self.base_slots(p);
            self.pet_slots(g, &mut s, sp);
            self.add_fact(g, Kind::Pet, p, s, 0, early + 1, &[]);
        }

        // Relatives.
        let mut family: Vec<usize> = Vec::new();
        let mut rels_used: BTreeSet<&str> = BTreeSet::new();
        for _ in 0..g.range(1, 2) {
            let free: Vec<&FamRel> = self
                .rels()
                .into_iter()
                .filter(|r| !rels_used.contains(r.rel))
                .collect();
            if free.is_empty() {
                break;
            }
            let r = free[g.below(free.len())];
            rels_used.insert(r.rel);
            let mut s = self.base_slots(p);
            s.insert("rel", r.rel.to_owned());
            let name = self.minor_name(g, r.female);
            s.insert("fam", name);
            let (he, him, her, ta) = if r.female {
                ("she", "her", "her", "她")
            } else {
                ("he", "him", "his", "他")
            };
            s.insert("fam_he", he.to_owned());
            s.insert("fam_him", him.to_owned());
            s.insert("fam_her", her.to_owned());
            s.insert("fam_ta", ta.to_owned());
            let pool = if r.kind == RelKind::Elder {
                "fam_news_elder"
            } else {
                "fam_news"
            };
            let news = *g.pick(lex.value(pool));
            s.insert("fam_news", news.to_owned());
            if let Some(f) = self.add_fact(g, Kind::Family, p, s, 0, n - 1, &[]) {
                family.push(f);
            }
        }

        // Events.
        for kind in kinds {
            let mut s = self.base_slots(p);
            let (mut lo, hi, mut prev) = (0, n - 1, None);
            match kind {
                Kind::Trip => {
                    let place = g.fresh(lex.value("place"), &mut self.used);
                    s.insert("place", place);
                    let nights = g.range(2, 6) as usize;
                    s.insert("nights", self.number(nights));
                    s.insert("_min_back", (nights + 1).to_string());
                    s.insert("with_comp", (*g.pick(lex.value("with_comp"))).to_owned());
                }
                Kind::Adopt => {
                    let sp = self.fresh_species(g, &mut species_used);
                    self.pet_slots(g, &mut s, sp);
                }
                Kind::Concert => {
                    let band = g.fresh(lex.value("band"), &mut self.used);
                    s.insert("band", band);
                    s.insert("venue", (*g.pick(lex.value("venue"))).to_owned());
                }
                Kind::Class => {
                    let class = g.fresh(lex.value("class"), &mut self.used);
                    s.insert("class", class);
                    s.insert("class_day", (*g.pick(lex.value("class_day"))).to_owned());
                }
                Kind::Race => {
                    let ri = g.fresh_index(lex.races, |r| r.name, &mut self.used);
                    let race = &lex.races[ri];
                    s.insert("race", race.name.to_owned());
                    s.insert("finish", (*g.pick(race.times)).to_owned());
                }
                Kind::Injury => {
                    let inj = g.pick(lex.injuries);
                    s.insert("said", inj.said.to_owned());
                    s.insert("inj_base", inj.base.to_owned());
                    s.insert("inj_past", inj.past.to_owned());
                    s.insert("inj_ger", inj.ger.to_owned());
                    s.insert("body", inj.body.to_owned());
                    s.insert("cause", (*g.pick(lex.value("cause"))).to_owned());
                }
                Kind::Wedding => {
                    let (said, asked) = *g.pick(lex.wed_whose);
                    let female = g.chance(0.5);
                    let wname = self.minor_name(g, female);
                    if self.zh() {
                        s.insert("whose", format!("我{said}{wname}"));
                        s.insert("whose_q", format!("{asked}{wname}"));
                        let best = if self.people[p].female {
                            "伴娘"
                        } else {
                            "伴郎"
                        };
                        s.insert("best", best.to_owned());
                    } else {
                        s.insert("whose", format!("{said} {wname}'s"));
                        s.insert("whose_q", format!("{asked} {wname}'s"));
                    }
                    s.insert("wname", wname);
                    s.insert("wed_place", (*g.pick(lex.value("wed_place"))).to_owned());
                }
                Kind::Purchase => {
                    let ii = g.fresh_index(lex.items, |i| i.item, &mut self.used);
                    let it = &lex.items[ii];
                    s.insert("item", it.item.to_owned());
                    s.insert("short", it.short.to_owned());
                    let the = if self.zh() {
                        it.short.to_owned()
                    } else {
                        format!("the {}", it.short)
                    };
                    s.insert("item_the", the);
                }
                Kind::Book => {
                    let bi = g.fresh_index(lex.books, |b| b.title, &mut self.used);
                    s.insert("book", lex.books[bi].title.to_owned());
                    s.insert("author", lex.books[bi].author.to_owned());
                }
                Kind::NewJob => {
                    let Some(jf) = job_f else { continue };
                    let j2 = g.fresh_index(lex.jobs, |j| j.title, &mut self.used);
                    let job2 = &lex.jobs[j2];
                    self.used.insert(job2.place.to_owned());
                    s.insert("job2", job2.title.to_owned());
                    s.insert("a_job2", job2.a.to_owned());
                    s.insert("workplace2", job2.place.to_owned());
                    s.insert("old_workplace", job.place.to_owned());
                    s.insert("old_job", job.title.to_owned());
                    lo = self.facts[jf].session + 1;
                    prev = Some(jf);
                }
                Kind::Move => {
                    let Some(cf) = city_f else { continue };
                    let city2 = g.fresh(lex.value("city"), &mut self.used);
                    s.insert("city2", city2);
                    s.insert("city_old", city.clone());
                    lo = self.facts[cf].session + 1;
                    prev = Some(cf);
                }
                Kind::NewHobby => {
                    let Some(hf) = hobby_f else { continue };
                    let h2 = g.fresh_index(lex.hobbies, |h| h.name, &mut self.used);
                    s.insert("hobby", lex.hobbies[h2].name.to_owned());
                    s.insert("hobby_detail", lex.hobbies[h2].detail.to_owned());
                    s.insert("hobby_old", hobby.name.to_owned());
                    lo = self.facts[hf].session + 1;
                    prev = Some(hf);
                }
                _ => {}
            }
            if lo > hi {
                continue;
            }
            // The other person's news of the same kind lands in another session.
            let avoid: Vec<usize> = self
                .facts
                .iter()
                .filter(|f| f.owner != p && f.kind == kind)
                .map(|f| f.session)
                .collect();
            let placed = self
                .add_fact(g, kind, p, s.clone(), lo, hi, &avoid)
                .or_else(|| self.add_fact(g, kind, p, s, lo, hi, &[]));
            if let Some(f) = placed {
                self.facts[f].prev = prev;
            }
        }

        // A relative's pet, named in another session than the relative.
        if let Some(&ff) = family.first()
            && g.chance(0.5)
        {
            let mut s = self.facts[ff].slots.clone();
            let sp = g.below(lex.species.len());
            s.insert("fam_species", lex.species[sp].name.to_owned());
            let pet = g.fresh(lex.value("pet_name"), &mut self.used);
            s.insert("fam_pet", pet);
            let avoid = [self.facts[ff].session];
            if let Some(f) = self.add_fact(g, Kind::FamilyPet, p, s, 0, n - 1, &avoid) {
                self.facts[f].link = Some(ff);
            }
        }
    }

    /// The people someone may name: relatives, or (siblings share their relatives) people
    /// outside the family.
    fn rels(&self) -> Vec<&'static FamRel> {
        let outside = self.relation == Relation::Siblings;
        self.lex
            .fam_rels
            .iter()
            .filter(|r| (r.kind == RelKind::Outside) == outside)
            .collect()
    }

    fn fresh_species(&self, g: &mut Gen, used: &mut BTreeSet<usize>) -> usize {
        let free: Vec<usize> = (0..self.lex.species.len())
            .filter(|i| !used.contains(i))
            .collect();
        // Dogs and cats are the common case.
        let common: Vec<usize> = free.iter().copied().filter(|i| *i < 2).collect();
        let i = if !common.is_empty() && g.chance(0.6) {
            common[g.below(common.len())]
        } else if free.is_empty() {
            g.below(self.lex.species.len())
        } else {
            free[g.below(free.len())]
        };
        used.insert(i);
        i
    }

    /// Extra slots a distractor script asks for (values no fact of the conversation uses).
    fn distractor_slots(&mut self, g: &mut Gen, script: Script, base: &Slots) -> Slots {
        let lex = self.lex;
        let mut s = base.clone();
        let text = script.join(" ");
        let wants = |k: &str| text.contains(&format!("{{{k}}}"));
        if wants("fname") {
            let f = g.chance(0.5);
            let name = self.minor_name(g, f);
            s.insert("fname", name);
        }
        let simple: [(&str, &str); 6] = [
            ("place2", "place"),
            ("band2", "band"),
            ("pet2", "pet_name"),
            ("class2", "class"),
            ("city2x", "city"),
            ("wed_place2", "wed_place"),
        ];
        for (k, pool) in simple {
            if wants(k) {
                let v = g.fresh(lex.value(pool), &mut self.used);
                s.insert(k, v);
            }
        }
        if wants("book2") {
            let i = g.fresh_index(lex.books, |b| b.title, &mut self.used);
            s.insert("book2", lex.books[i].title.to_owned());
        }
        if wants("item2") {
            let i = g.fresh_index(lex.items, |b| b.item, &mut self.used);
            s.insert("item2", lex.items[i].item.to_owned());
        }
        if wants("race2") {
            let i = g.fresh_index(lex.races, |b| b.name, &mut self.used);
            s.insert("race2", lex.races[i].name.to_owned());
        }
        if wants("hobby2") {
            let i = g.fresh_index(lex.hobbies, |b| b.name, &mut self.used);
            s.insert("hobby2", lex.hobbies[i].name.to_owned());
        }
        if wants("workplace2x") || wants("a_job2x") || wants("job2x") {
            let i = g.fresh_index(lex.jobs, |b| b.title, &mut self.used);
            s.insert("workplace2x", lex.jobs[i].place.to_owned());
            s.insert("a_job2x", lex.jobs[i].a.to_owned());
            s.insert("job2x", lex.jobs[i].title.to_owned());
        }
        if wants("rel2") {
            // A relation nobody in the conversation has a named relative for.
            let taken: BTreeSet<String> = self
                .facts
                .iter()
                .filter(|f| f.kind == Kind::Family)
                .filter_map(|f| f.slots.get("rel").cloned())
                .collect();
            let mut others: Vec<&str> = self
                .rels()
                .into_iter()
                .map(|r| r.rel)
                .filter(|r| !taken.contains(*r))
                .collect();
            others.dedup();
            if others.is_empty() {
                others.push(if self.zh() { "表哥" } else { "cousin" });
            }
            s.insert("rel2", (*g.pick(&others)).to_owned());
        }
        if wants("said2") || wants("dad_injury") || wants("cause2") {
            let mine = base.get("said").cloned().unwrap_or_default();
            let others: Vec<usize> = (0..lex.injuries.len())
                .filter(|i| lex.injuries[*i].said != mine)
                .collect();
            let inj = &lex.injuries[others[g.below(others.len())]];
            s.insert("said2", inj.said.to_owned());
            s.insert("dad_injury", inj.past.replace("{her}", "his"));
            let cause = base.get("cause").cloned().unwrap_or_default();
            let causes: Vec<&str> = lex
                .value("cause")
                .iter()
                .copied()
                .filter(|c| *c != cause)
                .collect();
            s.insert("cause2", (*g.pick(&causes)).to_owned());
        }
        if wants("long_ago") {
            s.insert("long_ago", (*g.pick(lex.value("long_ago"))).to_owned());
        }
        if wants("old_gig") {
            s.insert("old_gig", (*g.pick(lex.value("old_gig"))).to_owned());
        }
        s
    }

    /// Distractors (appended to the fact's exchange or on their own in any session) and
    /// callbacks in the sessions that follow.
    fn plan_noise(&mut self, g: &mut Gen) {
        let n = self.n();
        for f in 0..self.facts.len() {
            let kind = self.facts[f].kind;
            let ds = self.lex.distractors_for(kind);
            // A distractor about the listener's own past is only safe when the listener has no
            // fact of this kind (it would make "which race did X run?" ambiguous).
            let listener = 1 - self.facts[f].owner;
            let listener_has = self
                .facts
                .iter()
                .any(|x| x.owner == listener && x.kind == kind);
            let usable: Vec<usize> = (0..ds.len())
                .filter(|i| !(listener_has && parse(ds[*i], 0).iter().any(|l| l.1 & A_SELF != 0)))
                .collect();
            if !usable.is_empty() && g.chance(0.6) {
                let script = ds[g.varied_among(&format!("distractor:{kind:?}"), &usable)];
                let base = self.facts[f].slots.clone();
                let slots = self.distractor_slots(g, script, &base);
                let s = self.facts[f].session;
                let owner = self.facts[f].owner;
                let append = g.chance(0.4) && self.load[s] + script.len() <= CAPACITY;
                if append {
                    if let Some(seg) = self.segs[s].iter_mut().find(|x| x.fact == Some(f)) {
                        seg.lines.extend(parse(script, A_DIS));
                        for (k, v) in slots {
                            seg.slots.entry(k).or_insert(v);
                        }
                        self.load[s] += script.len();
                    }
                } else if let Some(s2) = self.pick_session(g, s, n - 1, script.len(), &[]) {
                    self.load[s2] += script.len();
                    self.segs[s2].push(Seg {
                        owner,
                        lines: parse(script, A_DIS),
                        slots,
                        fact: Some(f),
                        frame: false,
                    });
                }
            }
            let cbs = self.lex.callbacks_for(kind);
            let s = self.facts[f].session;
            if !cbs.is_empty() && s + 1 < n && g.chance(0.5) {
                let script = cbs[g.varied(&format!("callback:{kind:?}"), cbs.len())];
                let hi = (s + 3).min(n - 1);
                if let Some(s2) = self.pick_session(g, s + 1, hi, script.len(), &[]) {
                    self.load[s2] += script.len();
                    self.segs[s2].push(Seg {
                        owner: self.facts[f].owner,
                        lines: parse(script, 0),
                        slots: self.facts[f].slots.clone(),
                        fact: Some(f),
                        frame: false,
                    });
                }
            }
        }
    }

    /// The speakers' local hour at the start of session `s` (UTC for English conversations,
    /// UTC+8 for Chinese ones).
    fn local_hour(&self, s: usize) -> u32 {
        let offset = if self.zh() { 8 } else { 0 };
        (self.starts[s].hour() + offset) % 24
    }

    /// How `from` addresses `to` in a greeting.
    fn nick(&self, g: &mut Gen, from: usize, to: usize) -> String {
        let (a, b) = (&self.people[from.min(1)], &self.people[to.min(1)]);
        if to > 1 || from > 1 {
            return b.name.clone();
        }
        let surname: String = b.name.chars().take(1).collect();
        let opts: Vec<String> = match (self.zh(), self.relation) {
            (false, Relation::Couple) => vec!["babe".into(), "love".into()],
            (false, Relation::Siblings) => {
                vec![if b.female { "sis" } else { "bro" }.into(), b.name.clone()]
            }
            (false, Relation::Friends) => vec![b.name.clone(), "you".into()],
            (false, Relation::Colleagues) => vec![b.name.clone()],
            (true, Relation::Couple) => vec!["宝".into(), "亲爱的".into()],
            (true, Relation::Siblings) => vec![
                match (b.older, b.female) {
                    (true, true) => "姐",
                    (true, false) => "哥",
                    (false, true) => "老妹",
                    (false, false) => "老弟",
                }
                .into(),
            ],
            (true, Relation::Friends) => match (a.female, b.female) {
                (true, true) => vec!["姐妹".into(), "亲爱的".into()],
                (false, false) => vec!["兄弟".into(), "哥们".into()],
                _ => vec![b.name.clone()],
            },
            (true, Relation::Colleagues) => vec![format!("老{surname}")],
        };
        opts[g.below(opts.len())].clone()
    }

    fn render_seg(&self, g: &mut Gen, seg: &Seg, present: &[usize]) -> Vec<(usize, u8, String)> {
        let third = present.len() > 2;
        let other = if seg.owner > 1 {
            g.below(2)
        } else {
            1 - seg.owner
        };
        let mut slots = seg.slots.clone();
        slots.insert("nick", self.nick(g, seg.owner, other));
        let mut out = Vec::new();
        for &(role, aspects, tpl) in &seg.lines {
            let speaker = match role {
                'O' => seg.owner,
                'T' if third => 2,
                'X' if third
                    && !seg.frame
                    && seg.owner < 2
                    && aspects & (A_W | A_T | A_D | A_R) == 0
                    && g.chance(0.25) =>
                {
                    2
                }
                _ => other,
            };
            let text = fill(self.lex, g, tpl, &slots, 0);
            out.push((speaker, aspects, text));
        }
        out
    }

    fn render(&mut self, g: &mut Gen) {
        let lex = self.lex;
        for s in 0..self.n() {
            let present: Vec<usize> = if self.third.contains(&s) {
                vec![0, 1, 2]
            } else {
                vec![0, 1]
            };
            let mut body: Vec<Seg> = std::mem::take(&mut self.segs[s]);
            g.shuffle(&mut body);
            let opener = g.below(2);
            let hour = self.local_hour(s);
            let greetings = fitting(lex.greetings, hour);
            let gi = g.varied_among("greeting", &greetings);
            let mut head = vec![Seg {
                owner: opener,
                lines: parse(lex.greetings[gi], 0),
                slots: self.base_slots(opener),
                fact: None,
                frame: true,
            }];
            if present.len() > 2 {
                let hi = g.varied("third_hello", lex.third_hello.len());
                head.push(Seg {
                    owner: 1 - opener,
                    lines: parse(lex.third_hello[hi], 0),
                    slots: self.base_slots(1 - opener),
                    fact: None,
                    frame: true,
                });
            }
            let closer = g.below(2);
            let closings = fitting(lex.closings, hour);
            let ci = g.varied_among("closing", &closings);
            let tail = Seg {
                owner: closer,
                lines: parse(lex.closings[ci], 0),
                slots: self.base_slots(closer),
                fact: None,
                frame: true,
            };
            let fixed = |b: &[Seg]| -> usize {
                head.iter()
                    .chain(b.iter())
                    .map(|x| x.lines.len())
                    .sum::<usize>()
                    + tail.lines.len()
            };
            let target = (fixed(&body) + g.range(1, 8) as usize).clamp(MIN_TURNS, MAX_TURNS);
            let mut guard = 0;
            while fixed(&body) < target && guard < 100 {
                guard += 1;
                // May overshoot the target by one turn, never the session maximum.
                let room = (target - fixed(&body) + 1).min(MAX_TURNS - fixed(&body));
                let fits: Vec<usize> = (0..lex.small_talk.len())
                    .filter(|i| lex.small_talk[*i].len() <= room)
                    .collect();
                if fits.is_empty() {
                    break;
                }
                let script = lex.small_talk[g.varied_among("small_talk", &fits)];
                let owner = *g.pick(&present);
                let pos = g.below(body.len() + 1);
                body.insert(
                    pos,
                    Seg {
                        owner,
                        lines: parse(script, 0),
                        slots: self.base_slots(owner.min(1)),
                        fact: None,
                        frame: false,
                    },
                );
            }
            let total = fixed(&body);
            let mut bridges = 0;
            let mut lines: Vec<(usize, u8, String, Option<usize>)> = Vec::new();
            let n_head = head.len();
            let segs: Vec<Seg> = head.into_iter().chain(body).chain([tail]).collect();
            for (k, seg) in segs.iter().enumerate() {
                let rendered = self.render_seg(g, seg, &present);
                if let (Some(last), Some(first)) = (lines.last(), rendered.first())
                    && k > n_head
                    && last.0 == first.0
                    && total + bridges < MAX_TURNS
                    && g.chance(0.5)
                {
                    let others: Vec<usize> =
                        present.iter().copied().filter(|p| *p != last.0).collect();
                    let who = *g.pick(&others);
                    let bi = g.varied("backchannel", lex.backchannels.len());
                    lines.push((who, 0, lex.backchannels[bi].to_owned(), None));
                    bridges += 1;
                }
                for (sp, asp, text) in rendered {
                    lines.push((sp, asp, text, seg.fact));
                }
            }
            for (i, (speaker, aspects, text, fact)) in lines.into_iter().enumerate() {
                let idx = self.turns.len();
                let name = &self.people[speaker].name;
                self.turns.push(Turn {
                    content: format!("{name}{}{text}", lex.sep),
                    session: s,
                    at: self.starts[s] + Duration::minutes(i as i64),
                });
                if let Some(f) = fact {
                    if aspects & A_DIS != 0 {
                        self.facts[f].distractors.push(idx);
                    } else if aspects != 0 {
                        self.facts[f].turns.push((idx, aspects));
                    }
                }
            }
        }
    }

    // ---------------------------------------------------------------- questions

    fn grade(&self, f: usize, how: Grade, out: &mut BTreeMap<usize, i32>) {
        let fact = &self.facts[f];
        for &(t, a) in &fact.turns {
            let g = match how {
                Grade::What if a & A_W != 0 => 3,
                Grade::What if a & (A_Q | A_R) != 0 => 2,
                Grade::Detail if a & A_D != 0 => 3,
                Grade::Detail if a & (A_W | A_Q | A_C) != 0 => 2,
                Grade::Detail if a & A_R != 0 => 0,
                Grade::When if a & (A_T | A_W) != 0 => 3,
                Grade::When if a & A_Q != 0 => 2,
                Grade::When if a & A_R != 0 => 0,
                Grade::Old if a & A_W != 0 => 1,
                Grade::Support if a & (A_W | A_T) != 0 => 2,
                _ => continue,
            };
            let e = out.entry(t).or_insert(g);
            *e = (*e).max(g);
        }
        for &t in &fact.distractors {
            out.entry(t).or_insert(0);
        }
    }

    fn has(&self, f: usize, bit: u8) -> bool {
        self.facts[f].turns.iter().any(|(_, a)| a & bit != 0)
    }

    fn alias(&self, g: &mut Gen, owner: usize) -> String {
        let me = &self.people[owner];
        let other = &self.people[1 - owner];
        let labels: Vec<&str> = match (self.zh(), self.relation) {
            (false, Relation::Friends) => vec!["friend", "best friend", "close friend"],
            (false, Relation::Siblings) => {
                if me.female {
                    vec!["sister"]
                } else {
                    vec!["brother"]
                }
            }
            (false, Relation::Couple) => {
                if me.female {
                    vec!["girlfriend", "partner"]
                } else {
                    vec!["boyfriend", "partner"]
                }
            }
            (false, Relation::Colleagues) => {
                vec!["former colleague", "old coworker", "ex-colleague"]
            }
            (true, Relation::Friends) => match (me.female, other.female) {
                (true, true) => vec!["闺蜜", "好朋友"],
                (false, false) => vec!["好哥们", "好兄弟"],
                _ => vec!["好朋友"],
            },
            (true, Relation::Siblings) => vec![match (me.older, me.female) {
                (true, true) => "姐姐",
                (true, false) => "哥哥",
                (false, true) => "妹妹",
                (false, false) => "弟弟",
            }],
            (true, Relation::Couple) => {
                if me.female {
                    vec!["女朋友", "对象"]
                } else {
                    vec!["男朋友", "对象"]
                }
            }
            (true, Relation::Colleagues) => vec!["老同事", "前同事"],
        };
        let label = *g.pick(&labels);
        if self.zh() {
            format!("{}的{label}", other.name)
        } else {
            format!("{}'s {label}", other.name)
        }
    }

    fn para_ok(&self, text: &str, judged: &BTreeMap<usize, i32>) -> bool {
        let q = terms(text);
        judged
            .iter()
            .filter(|(_, g)| **g == 3)
            .all(|(t, _)| terms(&self.turns[*t].content).is_disjoint(&q))
    }

    fn question(&self, g: &mut Gen, pool: &[&str], slots: &Slots) -> Option<String> {
        if pool.is_empty() {
            return None;
        }
        let t = *g.pick(pool);
        let text = fill(self.lex, g, t, slots, 0);
        (!text.contains('{')).then_some(text)
    }

    /// Tries the paraphrase templates in random order; the first that shares no term with the
    /// grade-3 turns wins.
    fn paraphrase(
        &self,
        g: &mut Gen,
        pool: &[&str],
        slots: &Slots,
        judged: &BTreeMap<usize, i32>,
    ) -> Option<String> {
        let mut order: Vec<usize> = (0..pool.len()).collect();
        g.shuffle(&mut order);
        for i in order {
            let text = fill(self.lex, g, pool[i], slots, 0);
            if !text.contains('{') && self.para_ok(&text, judged) {
                return Some(text);
            }
        }
        None
    }

    fn superseded(&self, f: usize) -> bool {
        self.facts.iter().any(|x| x.prev == Some(f))
    }

    fn phrase_slots(&self, g: &mut Gen, f: usize) -> Option<(String, String, String)> {
        let ph = self.lex.phrase(self.facts[f].kind)?;
        let s = &self.facts[f].slots;
        Some((
            fill(self.lex, g, ph.base, s, 0),
            fill(self.lex, g, ph.past, s, 0),
            fill(self.lex, g, ph.ger, s, 0),
        ))
    }

    fn candidates(&self, g: &mut Gen) -> Vec<Cand> {
        let mut out = Vec::new();
        let nf = self.facts.len();
        let pets_of = |p: usize| -> Vec<usize> {
            (0..nf)
                .filter(|f| {
                    self.facts[*f].owner == p
                        && matches!(self.facts[*f].kind, Kind::Pet | Kind::Adopt)
                })
                .collect()
        };
        for f in 0..nf {
            let fact = &self.facts[f];
            let kind = fact.kind;
            let mut slots = fact.slots.clone();
            let alias = self.alias(g, fact.owner);
            slots.insert("alias", alias);
            let single_pet = pets_of(fact.owner).len() == 1;
            // Single-hop: the fact itself.
            if let Some((plain, para)) = self.lex.ask(kind, Mode::What)
                && !self.superseded(f)
            {
                let mut judged = BTreeMap::new();
                self.grade(f, Grade::What, &mut judged);
                if let Some(text) = self.question(g, plain, &slots) {
                    let para = if kind == Kind::Pet && !single_pet {
                        None
                    } else {
                        self.paraphrase(g, para, &slots, &judged)
                    };
                    out.push(Cand {
                        ty: QType::Single,
                        kind,
                        text,
                        para,
                        judged,
                        facts: vec![f],
                    });
                }
            }
            // Single-hop: a detail.
            if let Some((plain, para)) = self.lex.ask(kind, Mode::Detail)
                && self.has(f, A_D)
            {
                let mut judged = BTreeMap::new();
                self.grade(f, Grade::Detail, &mut judged);
                if let Some(text) = self.question(g, plain, &slots) {
                    let para = self.paraphrase(g, para, &slots, &judged);
                    out.push(Cand {
                        ty: QType::Single,
                        kind,
                        text,
                        para,
                        judged,
                        facts: vec![f],
                    });
                }
            }
            // Temporal.
            if self.has(f, A_T)
                && let Some((base, _, _)) = self.phrase_slots(g, f)
            {
                let mut judged = BTreeMap::new();
                self.grade(f, Grade::When, &mut judged);
                let mut s2 = slots.clone();
                s2.insert("base", base);
                if let Some(text) = self.question(g, self.lex.when_plain, &s2) {
                    let para = self
                        .lex
                        .ask(kind, Mode::When)
                        .and_then(|(_, para)| self.paraphrase(g, para, &s2, &judged));
                    out.push(Cand {
                        ty: QType::Temporal,
                        kind,
                        text,
                        para,
                        judged,
                        facts: vec![f],
                    });
                }
            }
            // Updated.
            if let (Some(prev), Some((plain, para))) =
                (fact.prev, self.lex.ask(kind, Mode::Updated))
            {
                let mut judged = BTreeMap::new();
                self.grade(f, Grade::What, &mut judged);
                self.grade(prev, Grade::Old, &mut judged);
                if let Some(text) = self.question(g, plain, &slots) {
                    let para = self.paraphrase(g, para, &slots, &judged);
                    out.push(Cand {
                        ty: QType::Updated,
                        kind,
                        text,
                        para,
                        judged,
                        facts: vec![f, prev],
                    });
                }
            }
        }
        self.multi_candidates(g, &mut out);
        out.retain(|c| c.judged.values().any(|g| *g == 3));
        out
    }

    fn multi_cand(
        &self,
        g: &mut Gen,
        m: Multi,
        slots: &Slots,
        judged: BTreeMap<usize, i32>,
        facts: Vec<usize>,
        out: &mut Vec<Cand>,
    ) {
        if let Some(text) = self.question(g, self.lex.multi(m), slots) {
            out.push(Cand {
                ty: QType::Multi,
                kind: self.facts[facts[0]].kind,
                text,
                para: None,
                judged,
                facts,
            });
        }
    }

    fn multi_candidates(&self, g: &mut Gen, out: &mut Vec<Cand>) {
        let nf = self.facts.len();
        let facts = &self.facts;
        for p in 0..2 {
            let of = |k: Kind| -> Vec<usize> {
                (0..nf)
                    .filter(|f| facts[*f].owner == p && facts[*f].kind == k)
                    .collect()
            };
            let timed: Vec<usize> = (0..nf)
                .filter(|f| {
                    facts[*f].owner == p
                        && self.lex.phrase(facts[*f].kind).is_some()
                        && self.has(*f, A_T)
                })
                .collect();
            // Which came first.
            let mut pairs: Vec<(usize, usize)> = Vec::new();
            for (i, &a) in timed.iter().enumerate() {
                for &b in &timed[i + 1..] {
                    if facts[a].session != facts[b].session
                        && (facts[a].date - facts[b].date).num_days().abs() >= 3
                    {
                        pairs.push((a, b));
                    }
                }
            }
            g.shuffle(&mut pairs);
            for &(a, b) in pairs.iter().take(3) {
                let (a, b) = if g.chance(0.5) { (a, b) } else { (b, a) };
                let mut s = facts[a].slots.clone();
                if let (Some((_, _, ga)), Some((_, _, gb))) =
                    (self.phrase_slots(g, a), self.phrase_slots(g, b))
                {
                    s.insert("ger_a", ga);
                    s.insert("ger_b", gb);
                    let mut j = BTreeMap::new();
                    self.grade(a, Grade::When, &mut j);
                    self.grade(b, Grade::When, &mut j);
                    self.multi_cand(g, Multi::First, &s, j, vec![a, b], out);
                }
            }
            // Where / what job when an event happened.
            for (base_kind, new_kind, m) in [
                (Kind::City, Kind::Move, Multi::CityAt),
                (Kind::Job, Kind::NewJob, Multi::JobAt),
            ] {
                let Some(&base) = of(base_kind).first() else {
                    continue;
                };
                let newer = of(new_kind).first().copied();
                let mut evs: Vec<usize> = timed
                    .iter()
                    .copied()
                    .filter(|e| !matches!(facts[*e].kind, Kind::Move | Kind::NewJob))
                    .collect();
                g.shuffle(&mut evs);
                for e in evs.into_iter().take(2) {
                    let ev = &facts[e];
                    let mut j = BTreeMap::new();
                    match newer {
                        Some(nw) if ev.date >= facts[nw].date && ev.session > facts[nw].session => {
                            self.grade(nw, Grade::What, &mut j);
                        }
                        Some(nw) if ev.date < facts[nw].date && ev.session < facts[nw].session => {
                            if facts[base].session == ev.session {
                                continue;
                            }
                            self.grade(base, Grade::What, &mut j);
                            self.grade(nw, Grade::Support, &mut j);
                        }
                        Some(_) => continue,
                        None => {
                            if facts[base].session == ev.session {
                                continue;
                            }
                            self.grade(base, Grade::What, &mut j);
                        }
                    }
                    self.grade(e, Grade::When, &mut j);
                    let mut s = ev.slots.clone();
                    if let Some((_, past, _)) = self.phrase_slots(g, e) {
                        s.insert("past", past);
                        self.multi_cand(g, m, &s, j, vec![e, base], out);
                    }
                }
            }
            // A relative's pet.
            for fp in of(Kind::FamilyPet) {
                if let Some(fam) = facts[fp].link {
                    let mut j = BTreeMap::new();
                    self.grade(fam, Grade::What, &mut j);
                    self.grade(fp, Grade::What, &mut j);
                    let s = facts[fp].slots.clone();
                    self.multi_cand(g, Multi::FamPet, &s, j, vec![fp, fam], out);
                }
            }
            // The job before the new one; the city moved to after leaving the old job.
            for nj in of(Kind::NewJob) {
                if let Some(old) = facts[nj].prev {
                    let mut j = BTreeMap::new();
                    self.grade(old, Grade::What, &mut j);
                    self.grade(nj, Grade::What, &mut j);
                    let s = facts[nj].slots.clone();
                    self.multi_cand(g, Multi::BeforeJob, &s, j, vec![nj, old], out);
                }
                for mv in of(Kind::Move) {
                    if facts[mv].date > facts[nj].date && facts[mv].session != facts[nj].session {
                        let mut j = BTreeMap::new();
                        self.grade(nj, Grade::When, &mut j);
                        self.grade(mv, Grade::When, &mut j);
                        let s = facts[nj].slots.clone();
                        self.multi_cand(g, Multi::AfterJobMove, &s, j, vec![mv, nj], out);
                    }
                }
            }
            // Pets over several sessions.
            let pets: Vec<usize> = (0..nf)
                .filter(|f| {
                    facts[*f].owner == p && matches!(facts[*f].kind, Kind::Pet | Kind::Adopt)
                })
                .collect();
            for &old in pets.iter().filter(|f| facts[**f].kind == Kind::Pet) {
                for &new in pets.iter().filter(|f| facts[**f].kind == Kind::Adopt) {
                    if facts[old].session < facts[new].session {
                        let mut j = BTreeMap::new();
                        self.grade(old, Grade::What, &mut j);
                        self.grade(new, Grade::When, &mut j);
                        let mut s = facts[old].slots.clone();
                        let (a, b) = (
                            facts[old].slots.get("pet").cloned().unwrap_or_default(),
                            facts[new].slots.get("pet").cloned().unwrap_or_default(),
                        );
                        let (a, b) = if g.chance(0.5) { (a, b) } else { (b, a) };
                        s.insert("pet_a", a);
                        s.insert("pet_b", b);
                        self.multi_cand(g, Multi::PetFirst, &s, j, vec![new, old], out);
                    }
                }
            }
            let sessions: BTreeSet<usize> = pets.iter().map(|f| facts[*f].session).collect();
            if pets.len() >= 2 && sessions.len() >= 2 {
                let mut j = BTreeMap::new();
                for &f in &pets {
                    self.grade(f, Grade::What, &mut j);
                }
                let s = facts[pets[0]].slots.clone();
                self.multi_cand(g, Multi::PetCount, &s, j, pets.clone(), out);
            }
        }
    }

    /// Picks about 19 questions, spread over types, facts and kinds.
    fn select(&self, g: &mut Gen, mut cands: Vec<Cand>) -> Vec<Query> {
        g.shuffle(&mut cands);
        let total = g.range(17, 21) as usize;
        let count = |t: QType| cands.iter().filter(|c| c.ty == t).count();
        let upd = count(QType::Updated).min(3);
        let multi = count(QType::Multi).min(4);
        let temp = count(QType::Temporal).min(5);
        let single = total.saturating_sub(upd + multi + temp);
        let mut taken: Vec<bool> = vec![false; cands.len()];
        let mut fact_use: BTreeMap<usize, usize> = BTreeMap::new();
        let mut picked: Vec<usize> = Vec::new();
        for (ty, quota) in [
            (QType::Updated, upd),
            (QType::Multi, multi),
            (QType::Temporal, temp),
            (QType::Single, single),
        ] {
            let mut got = 0;
            let mut kind_use: BTreeMap<Kind, usize> = BTreeMap::new();
            for pass in 0..3 {
                for i in 0..cands.len() {
                    if got >= quota {
                        break;
                    }
                    let c = &cands[i];
                    if taken[i] || c.ty != ty {
                        continue;
                    }
                    let max_fact = if pass < 2 { 1 } else { 2 };
                    if c.facts
                        .iter()
                        .any(|f| fact_use.get(f).copied().unwrap_or(0) > max_fact)
                        || (pass == 0
                            && c.facts
                                .first()
                                .is_some_and(|f| fact_use.get(f).copied().unwrap_or(0) > 0))
                    {
                        continue;
                    }
                    if pass == 0 && kind_use.get(&c.kind).copied().unwrap_or(0) >= 2 {
                        continue;
                    }
                    taken[i] = true;
                    got += 1;
                    *kind_use.entry(c.kind).or_insert(0) += 1;
                    for f in &c.facts {
                        *fact_use.entry(*f).or_insert(0) += 1;
                    }
                    picked.push(i);
                }
            }
        }
        // Top up from anything left when a type ran short.
        for (i, t) in taken.iter_mut().enumerate() {
            if picked.len() >= total {
                break;
            }
            if !*t {
                *t = true;
                picked.push(i);
            }
        }
        let lang = self.lex.lang.code();
        picked
            .into_iter()
            .map(|i| {
                let c = &cands[i];
                let mut tags = vec![c.ty.tag().to_owned(), format!("lang:{lang}")];
                let text = match &c.para {
                    Some(p) if g.chance(0.55) => {
                        tags.push("variant:paraphrase".to_owned());
                        p.clone()
                    }
                    _ => c.text.clone(),
                };
                Query {
                    conv: 0,
                    text,
                    tags,
                    judged: c.judged.clone(),
                }
            })
            .collect()
    }
}

fn build_conv(
    g: &mut Gen,
    index: usize,
    lang: Lang,
    relation: Relation,
    with_third: bool,
) -> (Conv, Vec<Query>) {
    g.uses.clear();
    let lex: &'static Lex = match lang {
        Lang::En => &en::LEX,
        Lang::Zh => &zh::LEX,
    };
    let mut c = Conv::new(lex, format!("chat-{:02}", index + 1), relation);
    c.cast(g, with_third);
    c.schedule(g);
    c.plan_person(g, 0);
    c.plan_person(g, 1);
    c.plan_noise(g);
    c.render(g);
    let cands = c.candidates(g);
    let mut qs = c.select(g, cands);
    for q in &mut qs {
        q.conv = index;
    }
    (c, qs)
}

/// Generates the `conversations-bilingual` dataset. Same seed, same dataset.
pub fn generate_chat(seed: u64) -> Dataset {
    let mut g = Gen::new(seed);
    let mut langs: Vec<Lang> = [Lang::En; CONVERSATIONS_EN]
        .into_iter()
        .chain([Lang::Zh; CONVERSATIONS_ZH])
        .collect();
    g.shuffle(&mut langs);
    let relations = [
        Relation::Friends,
        Relation::Siblings,
        Relation::Couple,
        Relation::Colleagues,
    ];
    let mut rel_of: Vec<Relation> = Vec::new();
    let mut third_of: Vec<bool> = Vec::new();
    let mut seen: BTreeMap<Lang, usize> = BTreeMap::new();
    let mut thirds: BTreeMap<Lang, Vec<usize>> = BTreeMap::new();
    for (i, lang) in langs.iter().enumerate() {
        let k = seen.entry(*lang).or_insert(0);
        rel_of.push(relations[*k % relations.len()]);
        *k += 1;
        thirds.entry(*lang).or_default().push(i);
        third_of.push(false);
    }
    // Shuffle relations within a language so the pattern is not positional.
    for lang in [Lang::En, Lang::Zh] {
        let idx: Vec<usize> = thirds.get(&lang).cloned().unwrap_or_default();
        let mut rels: Vec<Relation> = idx.iter().map(|i| rel_of[*i]).collect();
        g.shuffle(&mut rels);
        for (i, r) in idx.iter().zip(rels) {
            rel_of[*i] = r;
        }
        let mut pick = idx.clone();
        g.shuffle(&mut pick);
        let k = if lang == Lang::En { 3 } else { 2 };
        for i in pick.into_iter().take(k) {
            third_of[i] = true;
        }
    }

    let mut convs = Vec::new();
    let mut queries: Vec<Query> = Vec::new();
    for (i, lang) in langs.iter().enumerate() {
        let (c, qs) = build_conv(&mut g, i, *lang, rel_of[i], third_of[i]);
        convs.push(c);
        queries.extend(qs);
    }
    finish(g, seed, convs, queries)
}

fn finish(mut g: Gen, seed: u64, convs: Vec<Conv>, mut queries: Vec<Query>) -> Dataset {
    // Memory ids: random, unique, assigned in a shuffled order; written shuffled.
    let mut ids: Vec<Vec<String>> = Vec::new();
    let mut seen: BTreeSet<String> = BTreeSet::new();
    let mut memories = Vec::new();
    let mut lang_counts: BTreeMap<String, u64> = BTreeMap::new();
    let mut per_ns: BTreeMap<String, u64> = BTreeMap::new();
    let mut sessions = 0u64;
    for c in &convs {
        let mut order: Vec<usize> = (0..c.turns.len()).collect();
        g.shuffle(&mut order);
        let mut conv_ids = vec![String::new(); c.turns.len()];
        for &t in &order {
            let id = loop {
                let v = format!("m-{:06x}", g.rng.random_range(0..0x100_0000u32));
                if seen.insert(v.clone()) {
                    break v;
                }
            };
            conv_ids[t] = id.clone();
            let turn = &c.turns[t];
            let mut m = MemoryRecord::new(id, turn.content.clone());
            m.namespace = c.ns.clone();
            m.kind = MemoryKind::Episodic;
            m.source = Source::User;
            m.created_at = turn.at;
            m.tags = vec![format!("session_{}", turn.session + 1)];
            memories.push(m);
        }
        ids.push(conv_ids);
        *lang_counts
            .entry(format!("memories_{}", c.lex.lang.code()))
            .or_insert(0) += c.turns.len() as u64;
        per_ns.insert(c.ns.clone(), c.turns.len() as u64);
        sessions += c.n() as u64;
    }

    g.shuffle(&mut queries);
    let mut out_queries = Vec::new();
    let mut qrels = Qrels::new();
    let mut tag_counts: BTreeMap<String, u64> = BTreeMap::new();
    let mut grades: BTreeMap<String, u64> = BTreeMap::new();
    let mut relations: BTreeMap<String, u64> = BTreeMap::new();
    for c in &convs {
        *relations.entry(c.relation.label().to_owned()).or_insert(0) += 1;
        if c.people.len() > 2 {
            *relations.entry("with_third_person".to_owned()).or_insert(0) += 1;
        }
    }
    for (n, q) in queries.iter().enumerate() {
        let c = &convs[q.conv];
        let id = format!("q{:04}", n + 1);
        for t in &q.tags {
            *tag_counts.entry(t.clone()).or_insert(0) += 1;
        }
        let docs: BTreeMap<String, i32> = q
            .judged
            .iter()
            .map(|(t, r)| (ids[q.conv][*t].clone(), *r))
            .collect();
        for r in docs.values() {
            *grades.entry(format!("rel_{r}")).or_insert(0) += 1;
        }
        qrels.insert(id.clone(), docs);
        let last = c.turns.iter().map(|t| t.at).max().unwrap_or(c.starts[0]);
        out_queries.push(QueryRecord {
            id,
            text: q.text.clone(),
            namespace: c.ns.clone(),
            now: last + Duration::days(1),
            tags: q.tags.clone(),
            filters: None,
        });
    }
    let totals = BTreeMap::from([
        ("conversations".to_owned(), convs.len() as u64),
        ("sessions".to_owned(), sessions),
        ("memories".to_owned(), memories.len() as u64),
        ("queries".to_owned(), out_queries.len() as u64),
        (
            "qrels".to_owned(),
            qrels.values().map(|d| d.len() as u64).sum(),
        ),
    ]);
    for q in &out_queries {
        let k = format!(
            "queries_{}",
            if q.tags.iter().any(|t| t == "lang:zh") {
                "zh"
            } else {
                "en"
            }
        );
        *lang_counts.entry(k).or_insert(0) += 1;
    }
    let first = memories.iter().map(|m| m.created_at).min();
    let last = memories.iter().map(|m| m.created_at).max();
    let span = match (first, last) {
        (Some(a), Some(b)) => format!(
            " from {} to {} (UTC)",
            a.format("%Y-%m-%d"),
            b.format("%Y-%m-%d")
        ),
        _ => String::new(),
    };
    let meta = DatasetMeta {
        name: "conversations-bilingual".to_owned(),
        description: format!(
            "Synthetic multi-session chat logs between people who know each other well: {} \
             conversations ({CONVERSATIONS_EN} English, {CONVERSATIONS_ZH} Chinese), one namespace \
             each, one memory per turn (`Name: text`, tag `session_<n>`, created_at = session start \
             + 1 minute per turn){span}. Questions ask about what the speakers said about their \
             lives (single-hop, temporal, multi-hop, updated facts); relative dates in turns \
             (\"last weekend\", \"上周末\") resolve against the session day (UTC, weeks start on \
             Monday). Graded 0..3: 3 answers, 2 needed context (the question a reply answers, a \
             supporting callback), 1 a superseded value, 0 a judged hard distractor. Memory ids \
             are random and say nothing about order or content.",
            convs.len()
        ),
        languages: vec!["en".to_owned(), "zh".to_owned()],
        licence: "CC0-1.0, generated".to_owned(),
        produced_by: format!("hindsight-dataset chat generator, seed {seed}"),
        counts: BTreeMap::from([
            ("totals".to_owned(), totals),
            ("query_tags".to_owned(), tag_counts),
            ("languages".to_owned(), lang_counts),
            ("memories_per_namespace".to_owned(), per_ns),
            ("judgements_per_grade".to_owned(), grades),
            ("relations".to_owned(), relations),
        ]),
    };
    Dataset {
        meta,
        memories,
        queries: out_queries,
        qrels,
        issues: Vec::new(),
    }
}

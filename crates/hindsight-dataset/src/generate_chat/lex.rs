//! The vocabulary of one language: slot pools, dialogue scripts and question templates.
//!
//! A *script* is a short exchange, one line per turn, written `ROLE|ASPECTS|text`:
//!
//! - `ROLE`: `O` the person the fact belongs to, `X` the person they are talking to (sometimes
//!   the third participant), `T` the third participant when present (else `X`).
//! - `ASPECTS`: which part of the fact the turn carries, used to judge relevance: `W` the answer
//!   itself (what / who / where), `T` the date, `D` a detail (how long, where exactly, the
//!   finishing time, the cause), `Q` the question or setup a reply answers (needed context),
//!   `C` a question only the detail answers (context for `D` questions), `S` (distractors only)
//!   the speaker's own past of the same kind (not used when that speaker has such a fact),
//!   `R` a later callback that names the fact without answering a date or detail, `-` nothing.
//! - `text` holds `{slot}` placeholders: the fact's own slots (`{place}`, `{pet}`, `{when}`, ...),
//!   `{slot_c}` for the same value capitalised, or a flavour pool (`{wow}`, `{oh_no}`, ...).

/// Language of a conversation.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Lang {
    En,
    Zh,
}

impl Lang {
    pub(crate) fn code(self) -> &'static str {
        match self {
            Lang::En => "en",
            Lang::Zh => "zh",
        }
    }
}

/// What a fact is about. Persona facts (`Job`, `City`, `Pet`, `Family`, `Hobby`) are stated
/// without a date; the others are events with a date (possibly left implicit by the script).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Kind {
    Job,
    City,
    Pet,
    Family,
    Hobby,
    Trip,
    Adopt,
    Concert,
    Class,
    Race,
    Injury,
    Wedding,
    Purchase,
    Book,
    NewJob,
    Move,
    NewHobby,
    FamilyPet,
}

/// Events a person may live through (4-8 of them each).
pub(crate) const EVENT_KINDS: &[Kind] = &[
    Kind::Trip,
    Kind::Adopt,
    Kind::Concert,
    Kind::Class,
    Kind::Race,
    Kind::Injury,
    Kind::Wedding,
    Kind::Purchase,
    Kind::Book,
    Kind::NewJob,
    Kind::Move,
    Kind::NewHobby,
];

/// What a single-fact question asks.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Mode {
    /// The fact itself (`W` turns answer).
    What,
    /// A detail of it (`D` turns answer).
    Detail,
    /// Its date (`T` + `W` turns answer).
    When,
    /// The current value of a fact that changed.
    Updated,
}

/// Multi-hop question patterns (two facts stated in different sessions).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Multi {
    /// Which of two events came first.
    First,
    /// City lived in when an event happened.
    CityAt,
    /// Job held when an event happened.
    JobAt,
    /// The name of a relative's pet (relative named in one session, the pet in another).
    FamPet,
    /// The job before the new job.
    BeforeJob,
    /// Which pet came first: one already there, one adopted later.
    PetFirst,
    /// How many pets, counted over several sessions.
    PetCount,
    /// The city moved to after leaving the old job.
    AfterJobMove,
}

pub(crate) type Script = &'static [&'static str];
pub(crate) type Pool = &'static [&'static str];

#[derive(Debug)]
pub(crate) struct Job {
    pub title: &'static str,
    /// With its article ("a nurse"); the title itself in Chinese.
    pub a: &'static str,
    pub place: &'static str,
    /// A first-person remark that fits the job (no final full stop).
    pub detail: &'static str,
}

pub(crate) const fn job(
    title: &'static str,
    a: &'static str,
    place: &'static str,
    detail: &'static str,
) -> Job {
    Job {
        title,
        a,
        place,
        detail,
    }
}

#[derive(Debug)]
pub(crate) struct Species {
    pub name: &'static str,
    pub young: &'static str,
    pub breeds: Pool,
    /// Things this animal does (past tense, no subject): "chewed my slippers to bits".
    pub antics: Pool,
}

pub(crate) const fn species(
    name: &'static str,
    young: &'static str,
    breeds: Pool,
    antics: Pool,
) -> Species {
    Species {
        name,
        young,
        breeds,
        antics,
    }
}

/// Who a named person in someone's life is: a young relative, an older one, or (for sibling
/// conversations, whose relatives are shared) someone outside the family.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum RelKind {
    Young,
    Elder,
    Outside,
}

#[derive(Debug)]
pub(crate) struct FamRel {
    pub rel: &'static str,
    pub female: bool,
    pub kind: RelKind,
}

pub(crate) const fn rel(rel: &'static str, female: bool, kind: RelKind) -> FamRel {
    FamRel { rel, female, kind }
}

#[derive(Debug)]
pub(crate) struct Hobby {
    pub name: &'static str,
    pub detail: &'static str,
}

pub(crate) const fn hobby(name: &'static str, detail: &'static str) -> Hobby {
    Hobby { name, detail }
}

#[derive(Debug)]
pub(crate) struct Race {
    pub name: &'static str,
    pub times: Pool,
}

pub(crate) const fn race(name: &'static str, times: Pool) -> Race {
    Race { name, times }
}

#[derive(Debug)]
pub(crate) struct Injury {
    /// First person, past: "sprained my ankle".
    pub said: &'static str,
    /// Base verb phrase for questions: "sprain {her} ankle".
    pub base: &'static str,
    pub past: &'static str,
    pub ger: &'static str,
    pub body: &'static str,
}

pub(crate) const fn injury(
    said: &'static str,
    base: &'static str,
    past: &'static str,
    ger: &'static str,
    body: &'static str,
) -> Injury {
    Injury {
        said,
        base,
        past,
        ger,
        body,
    }
}

#[derive(Debug)]
pub(crate) struct Item {
    pub item: &'static str,
    pub short: &'static str,
}

pub(crate) const fn item(item: &'static str, short: &'static str) -> Item {
    Item { item, short }
}

#[derive(Debug)]
pub(crate) struct Book {
    pub title: &'static str,
    pub author: &'static str,
}

pub(crate) const fn book(title: &'static str, author: &'static str) -> Book {
    Book { title, author }
}

/// Verb phrases naming an event in questions.
#[derive(Debug)]
pub(crate) struct Phr {
    pub base: &'static str,
    pub past: &'static str,
    pub ger: &'static str,
}

pub(crate) const fn phr(base: &'static str, past: &'static str, ger: &'static str) -> Phr {
    Phr { base, past, ger }
}

/// Question templates for one fact kind and mode: plain ones, and paraphrases written to share
/// no content word with the turns they are answered by (checked when a query is built).
pub(crate) type Ask = (Kind, Mode, Pool, Pool);

/// Everything language-specific.
#[derive(Debug)]
pub(crate) struct Lex {
    pub lang: Lang,
    /// Between the speaker name and the text.
    pub sep: &'static str,
    pub female: Pool,
    pub male: Pool,
    /// Names for relatives and friends mentioned in passing.
    pub minor_female: Pool,
    pub minor_male: Pool,
    pub jobs: &'static [Job],
    pub species: &'static [Species],
    pub fam_rels: &'static [FamRel],
    pub hobbies: &'static [Hobby],
    pub races: &'static [Race],
    pub injuries: &'static [Injury],
    pub items: &'static [Item],
    pub books: &'static [Book],
    /// (how the speaker says it, how a question says it): ("my friend", "{her} friend").
    pub wed_whose: &'static [(&'static str, &'static str)],
    /// Number words, index = value (0..=10).
    pub numbers: Pool,
    /// Values picked once when a fact is created (`city`, `place`, `band`, ...).
    pub values: &'static [(&'static str, Pool)],
    /// Flavour picked afresh each time a template uses it (`wow`, `haha`, `food`, ...).
    pub pools: &'static [(&'static str, Pool)],
    pub scripts: &'static [(Kind, &'static [Script])],
    pub distractors: &'static [(Kind, &'static [Script])],
    pub callbacks: &'static [(Kind, &'static [Script])],
    pub greetings: &'static [Script],
    pub closings: &'static [Script],
    pub third_hello: &'static [Script],
    pub small_talk: &'static [Script],
    pub backchannels: Pool,
    pub phrases: &'static [(Kind, Phr)],
    pub asks: &'static [Ask],
    /// Generic plain templates for `When` questions (`{base}` = the event's verb phrase).
    pub when_plain: Pool,
    pub multi: &'static [(Multi, Pool)],
}

impl Lex {
    pub(crate) fn value(&self, key: &str) -> Pool {
        self.values
            .iter()
            .find(|(k, _)| *k == key)
            .map(|(_, v)| *v)
            .unwrap_or(&[])
    }
    pub(crate) fn pool(&self, key: &str) -> Option<Pool> {
        self.pools.iter().find(|(k, _)| *k == key).map(|(_, v)| *v)
    }
    pub(crate) fn scripts_for(&self, kind: Kind) -> &'static [Script] {
        find_kind(self.scripts, kind)
    }
    pub(crate) fn distractors_for(&self, kind: Kind) -> &'static [Script] {
        find_kind(self.distractors, kind)
    }
    pub(crate) fn callbacks_for(&self, kind: Kind) -> &'static [Script] {
        find_kind(self.callbacks, kind)
    }
    pub(crate) fn phrase(&self, kind: Kind) -> Option<&'static Phr> {
        self.phrases
            .iter()
            .find(|(k, _)| *k == kind)
            .map(|(_, p)| p)
    }
    pub(crate) fn ask(&self, kind: Kind, mode: Mode) -> Option<(Pool, Pool)> {
        self.asks
            .iter()
            .find(|(k, m, _, _)| *k == kind && *m == mode)
            .map(|(_, _, p, q)| (*p, *q))
    }
    pub(crate) fn multi(&self, m: Multi) -> Pool {
        self.multi
            .iter()
            .find(|(k, _)| *k == m)
            .map(|(_, v)| *v)
            .unwrap_or(&[])
    }
}

fn find_kind(table: &'static [(Kind, &'static [Script])], kind: Kind) -> &'static [Script] {
    table
        .iter()
        .find(|(k, _)| *k == kind)
        .map(|(_, s)| *s)
        .unwrap_or(&[])
}

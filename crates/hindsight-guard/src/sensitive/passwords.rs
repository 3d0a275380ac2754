//! Passwords in prose: whether the words after a password word are its value ("the Wi-Fi
//! password is sunshine") or describe it ("the password is required", "密码为6位数字").

#[allow(unused_imports)]
use super::*;

/// The part of `window` after its last password word ("password", "passcode", "密码"), so a
/// rule word earlier in the sentence ("per policy the password ... is X") does not count.
pub(super) fn after_password_word(window: &str) -> &str {
    PASSWORD_WORD
        .find_iter(window)
        .last()
        .map_or(window, |m| &window[m.end()..])
}

/// The value sits between matching quotes (`"x"`, `'x'`, `“x”`, `‘x’`, `「x」`).
pub(super) fn quoted(text: &str, start: usize, end: usize) -> bool {
    matches!(
        (prev_char(text, start), next_char(text, end)),
        (Some('"'), Some('"'))
            | (Some('\''), Some('\''))
            | (Some('“'), Some('”'))
            | (Some('‘'), Some('’'))
            | (Some('「'), Some('」'))
    )
}

/// Lower- and upper-case letters mixed past the first letter ("NJWgZC", "SunFlower"): not a word
/// of prose.
pub(super) fn mixed_case(value: &str) -> bool {
    value.chars().any(|c| c.is_ascii_lowercase())
        && value.chars().skip(1).any(|c| c.is_ascii_uppercase())
}

/// The words between the password word and the value say the value is the password: no rule
/// word ("password length is ..."), no clause break or conjunction ("asked for the password but
/// Tom was busy"), and the password word is not the first half of a compound noun ("password
/// manager is Bitwarden", "password reset is complete").
pub(super) fn names_the_password(text: &str, start: usize) -> bool {
    let gap = after_password_word(window_before(text, start, 40));
    let first = gap
        .trim_start_matches([' ', '-'])
        .split(|c: char| !c.is_ascii_alphabetic())
        .next()
        .unwrap_or_default()
        .to_ascii_lowercase();
    !PASSWORD_RULE_EN.is_match(gap)
        && !gap.contains([',', ';', '，', '；'])
        && !COMPOUND_NOUNS.contains(&first.as_str())
        && !gap.split(|c: char| !c.is_ascii_alphabetic()).any(|w| {
            ["but", "and", "so", "because", "while"]
                .iter()
                .any(|c| w.eq_ignore_ascii_case(c))
        })
}

/// Nouns that make "password X" a thing other than the password ("the password manager is
/// Bitwarden").
pub(super) const COMPOUND_NOUNS: &[&str] = &[
    "manager",
    "managers",
    "reset",
    "resets",
    "hash",
    "hashes",
    "hashing",
    "field",
    "fields",
    "prompt",
    "policy",
    "policies",
    "requirement",
    "requirements",
    "reuse",
    "issue",
    "issues",
    "change",
    "changes",
    "login",
    "hint",
    "hints",
    "strength",
    "length",
    "rotation",
    "expiry",
    "protection",
    "vault",
    "file",
    "files",
    "box",
    "dialog",
    "page",
    "screen",
    "form",
    "recovery",
    "history",
    "rule",
    "rules",
    "generator",
    "list",
    "store",
    "storage",
    "entry",
    "input",
    "update",
    "check",
    "checker",
    "validation",
    "complexity",
    "spraying",
    "attack",
    "attacks",
    "leak",
    "leaks",
    "breach",
    "sharing",
    "sync",
    "database",
    "table",
    "column",
    "flow",
    "feature",
    "setting",
    "settings",
    "option",
    "problem",
    "error",
    "errors",
    "bug",
    "format",
    "encryption",
    "salt",
    "mismatch",
    "expiration",
    "lockout",
    "audit",
    "tool",
];

/// Nothing of the clause follows the value: the end of the text or line, a clause mark (`. , ;
/// ! ? : ) ( – — …`, a dash set off by a space, CJK punctuation) or a conjunction. "password is
/// case sensitive", "password is stored in the vault" and "密码是Vault里取的" continue the
/// clause.
pub(super) fn ends_clause(text: &str, end: usize) -> bool {
    let rest = &text[end..];
    let after = rest.trim_start_matches([' ', '\t']);
    let spaced = after.len() < rest.len();
    match after.chars().next() {
        None
        | Some('\n' | '\r' | '.' | ',' | ';' | '!' | '?' | ':' | ')' | '(' | '–' | '—' | '…') => {
            true
        }
        Some('-') => spaced,
        Some('，' | '。' | '；' | '！' | '？' | '、' | '：' | '）' | '」' | '』' | '”') => {
            true
        }
        Some(_) => {
            let word: String = after
                .chars()
                .take_while(char::is_ascii_alphabetic)
                .collect::<String>()
                .to_ascii_lowercase();
            spaced && matches!(word.as_str(), "and" | "but" | "so" | "then")
        }
    }
}

/// A word that says something about a password rather than being one ("required", "wrong",
/// "expired", "the"): the listed words, and English adjective and participle endings.
pub(super) fn describes_password(value: &str) -> bool {
    let w = value.to_ascii_lowercase();
    DESCRIBING_WORDS.contains(&w.as_str())
        || FUNCTION_WORDS.contains(&w.as_str())
        || [
            "ed", "ing", "able", "ible", "ive", "ous", "ful", "less", "ly", "al",
        ]
        .iter()
        .any(|suffix| w.len() > suffix.len() + 2 && w.ends_with(suffix))
}

/// Words that describe a password in "the password is X" (besides the endings
/// [`describes_password`] checks).
pub(super) const DESCRIBING_WORDS: &[&str] = &[
    "required",
    "mandatory",
    "compulsory",
    "necessary",
    "needed",
    "optional",
    "wrong",
    "right",
    "correct",
    "incorrect",
    "valid",
    "invalid",
    "strong",
    "weak",
    "secure",
    "insecure",
    "safe",
    "unsafe",
    "good",
    "bad",
    "fine",
    "ok",
    "okay",
    "great",
    "terrible",
    "simple",
    "complex",
    "easy",
    "hard",
    "tricky",
    "long",
    "short",
    "enough",
    "new",
    "old",
    "same",
    "different",
    "default",
    "temporary",
    "blank",
    "empty",
    "null",
    "none",
    "nil",
    "missing",
    "unset",
    "gone",
    "lost",
    "public",
    "private",
    "secret",
    "hidden",
    "visible",
    "unique",
    "random",
    "known",
    "unknown",
    "forgotten",
    "stolen",
    "broken",
    "written",
    "given",
    "taken",
    "shown",
    "chosen",
    "frozen",
    "mine",
    "yours",
    "his",
    "hers",
    "ours",
    "theirs",
    "here",
    "there",
    "below",
    "above",
    "attached",
    "enclosed",
    "ready",
    "set",
    "reset",
    "due",
    "sensitive",
    "plaintext",
    "cleartext",
    "lowercase",
    "uppercase",
    "numeric",
    "alphanumeric",
    "generic",
    "basic",
    "automatic",
    "static",
    "dynamic",
    "whatever",
    "unchanged",
    "obvious",
    "too",
    "very",
    "still",
    "now",
    "also",
    "just",
    "only",
    "never",
    "always",
    "already",
    "again",
    "what",
    "which",
    "who",
    "something",
    "anything",
    "nothing",
    "everything",
    "case",
    "current",
    "present",
    "absent",
    "pending",
    "overdue",
    "outdated",
    "expired",
    "weakest",
    "strongest",
    "better",
    "worse",
    "best",
    "worst",
    "shorter",
    "longer",
    "similar",
    "elsewhere",
    "weird",
    "strange",
    "odd",
    "expire",
    "expires",
    "change",
    "rotate",
    "update",
    "match",
    "kept",
    "sent",
    "somewhere",
    "complete",
    "done",
    "common",
    "strict",
    "back",
    "busy",
    "upset",
    "fixed",
];

/// Words that do not stand in a password or a passphrase of plain words: articles,
/// prepositions, pronouns, auxiliaries and conjunctions.
pub(super) const FUNCTION_WORDS: &[&str] = &[
    "the", "a", "an", "in", "on", "at", "to", "of", "for", "with", "by", "from", "into", "onto",
    "about", "as", "and", "or", "but", "nor", "not", "no", "is", "are", "was", "were", "be",
    "been", "being", "it", "its", "this", "that", "these", "those", "my", "your", "our", "their",
    "her", "him", "them", "us", "we", "you", "they", "he", "she", "i", "me", "do", "does", "did",
    "has", "have", "had", "will", "would", "can", "could", "should", "must", "may", "might", "if",
    "when", "than", "then", "so", "such", "via", "under", "over", "after", "before", "every",
    "each", "all", "any", "some", "only", "just", "also", "still", "now",
];

/// Words of a rule about passphrases ("the passphrase is four random words").
pub(super) const PASSPHRASE_RULE_WORDS: &[&str] = &[
    "word",
    "words",
    "character",
    "characters",
    "letter",
    "letters",
    "digit",
    "digits",
    "number",
    "numbers",
    "symbol",
    "symbols",
    "long",
    "random",
    "required",
    "optional",
];

pub(super) static PASSWORD_WORD: LazyLock<Regex> =
    LazyLock::new(|| re(r"(?i:password|passwd|pwd|passcode|passphrase)|密码|口令"));

/// Words of a rule about passwords just before a value ("password length is 16-64").
pub(super) static PASSWORD_RULE_EN: LazyLock<Regex> = LazyLock::new(|| {
    re(r"(?i:length|characters|\bchars\b|\blong\b|minimum|at least|policy|expire|rotation|digits)")
});

/// The shape of a rule about passwords rather than a password: a count with its unit ("6位",
/// "8个字符", "90天") or words of length and frequency.
pub(super) static PASSWORD_RULE: LazyLock<Regex> = LazyLock::new(|| {
    re(r"\d+\s*(位|个字符|个字|字符|天|次|小时|个月|周)|至少|以上|以内|长度|定期|每")
});

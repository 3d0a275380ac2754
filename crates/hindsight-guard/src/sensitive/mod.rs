//! Sensitive-data detection and redaction.
//!
//! Detectors run over lightly normalised text (full-width digits and letters become ASCII,
//! zero-width characters are dropped) and report spans in the ORIGINAL text. Overlapping candidates
//! are resolved by kind priority (api key > password > email > id number > credit card > phone),
//! then by position. Numbers are accepted only when they are not part of a longer digit run, and
//! checked where a checksum exists: the Chinese resident ID (ISO 7064 MOD 11-2, plausible birth
//! date), credit cards (Luhn, issuer prefix 2-6), US SSNs (area/group/serial rules).
//!
//! A password needs an explicit value: `password: x`, `password=x`, `"password": "x"`, `X_PASS=x`,
//! `password is x` or prose such as "the Wi-Fi password at home is x" (x must contain a digit or
//! symbol), `密码是x` or `初始密码 x` (x ASCII, or mixed with Chinese characters when it has a digit
//! and does not describe a rule, as "密码为6位数字" does), the password of a URL
//! (`scheme://user:x@host`), of `mysql -px`, `sshpass -p x`, `redis-cli -a x`, `docker login -p x`,
//! and a `user / x` pair after a login word. "Reset your password via the settings page" has no
//! value and is left alone. Keys include vendor prefixes (OpenAI, Anthropic, Stripe, AWS, GitHub,
//! GitLab, Slack, Google, Hugging Face, SendGrid, npm, Alibaba and Tencent Cloud), webhook URLs
//! (Slack, Discord, Feishu, DingTalk, WeCom), Azure `AccountKey=`, pasted PEM private-key blocks,
//! 16+ character values after `key:`/`token=`/`appkey=`-style labels, and bare 32+ character
//! letter-and-digit tokens after a key word. Placeholders and masks (`${X}`, `<your-password>`,
//! `******`, `sk-XXXX…`, AWS's documented `…EXAMPLE` keys) are not secrets, and `git@host:` or
//! `ssh user@host` is a login, not an e-mail. E-mails spelled out to dodge scrapers ("ann [at]
//! example [dot] com", "kate dot lee at yahoo dot com", "li 艾特 qq 点 com") are found when they end
//! in a common top-level domain. IDs also include Hong Kong and Taiwan IDs (with their check
//! digits), UK National Insurance numbers, SSNs named as such with spaces or none, and passport
//! and driving-licence numbers named as such. Chinese mobiles named as order or shipment numbers
//! ("订单号1881234…") are not phones; cards of lengths other than 15 and 16 digits need a card word
//! just before them. A password of plain letters counts in prose when it is quoted, of mixed
//! case, or ends its clause and is not a word that describes a password ("the Wi-Fi password is
//! sunshine, ask me" is one; "the password is required", "password is case sensitive" are not),
//! and so does a passphrase of three to eight lower-case words ending its clause, provided the
//! words between the password word and the value name it ("the password manager is Bitwarden",
//! "asked for the password but Tom was busy" do not) and, after "password to", a capitalised
//! word is quoted ("changed the password to Netflix" names a service). Not detected: numbers
//! spelled out in words, and unlabelled tokens in command output.
//!
//! Detectors are developed only on `datasets/guard/redaction-dev` (an independent development
//! set) and measured on `datasets/guard/redaction-heldout` and `datasets/guard/redaction-eval`.

use std::fmt;
use std::sync::LazyLock;

use regex::Regex;
use serde::{Deserialize, Serialize};

use crate::normalize::normalize_light;

mod checksums;
mod detectors;
mod passwords;

use checksums::*;
pub use checksums::{cn_id_checksum_ok, luhn_ok};
use detectors::*;
use passwords::*;

/// Kinds of sensitive data the guard redacts.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SensitiveKind {
    ApiKey,
    Password,
    Email,
    IdNumber,
    CreditCard,
    Phone,
}

impl SensitiveKind {
    pub const ALL: &'static [SensitiveKind] = &[
        SensitiveKind::ApiKey,
        SensitiveKind::Password,
        SensitiveKind::Email,
        SensitiveKind::IdNumber,
        SensitiveKind::CreditCard,
        SensitiveKind::Phone,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            SensitiveKind::ApiKey => "api_key",
            SensitiveKind::Password => "password",
            SensitiveKind::Email => "email",
            SensitiveKind::IdNumber => "id_number",
            SensitiveKind::CreditCard => "credit_card",
            SensitiveKind::Phone => "phone",
        }
    }

    pub fn parse(s: &str) -> Option<SensitiveKind> {
        SensitiveKind::ALL.iter().copied().find(|k| k.as_str() == s)
    }

    /// The placeholder that replaces a span of this kind.
    pub fn placeholder(self) -> String {
        format!("[REDACTED:{}]", self.as_str())
    }
}

impl fmt::Display for SensitiveKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One sensitive span, byte offsets into the original text.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SensitiveSpan {
    pub kind: SensitiveKind,
    pub start: usize,
    pub end: usize,
}

fn prev_char(text: &str, at: usize) -> Option<char> {
    text[..at].chars().next_back()
}

fn next_char(text: &str, at: usize) -> Option<char> {
    text[at..].chars().next()
}

fn passes(check: Check, text: &str, start: usize, end: usize, value: &str) -> bool {
    let digit_bounded = || {
        !prev_char(text, start).is_some_and(|c| c.is_ascii_digit())
            && !next_char(text, end).is_some_and(|c| c.is_ascii_digit())
    };
    match check {
        Check::None => true,
        Check::AlnumBounded => {
            !prev_char(text, start).is_some_and(|c| c.is_ascii_alphanumeric())
                && !next_char(text, end).is_some_and(|c| c.is_ascii_alphanumeric())
        }
        Check::DigitBounded => digit_bounded(),
        Check::CnId => {
            digit_bounded()
                && !next_char(text, end).is_some_and(|c| c.is_ascii_alphanumeric())
                && cn_id_checksum_ok(value)
        }
        Check::Ssn => digit_bounded() && ssn_ok(value),
        Check::Luhn => {
            let digits: String = value.chars().filter(char::is_ascii_digit).collect();
            digit_bounded()
                && (13..=19).contains(&digits.len())
                && matches!(digits.as_bytes()[0], b'2'..=b'6')
                && !digits.bytes().all(|b| b == digits.as_bytes()[0])
                && luhn_ok(&digits)
        }
        Check::NamedPhone => {
            passes(Check::PhoneDigits, text, start, end, value) && !DATE_LIKE.is_match(value)
        }
        Check::Landline => {
            let edge = |c: Option<char>| c.is_some_and(|c| c.is_ascii_alphanumeric() || c == '-');
            // "021-20241130" is a batch and a date, not a Shanghai number.
            let dated = value
                .split_once('-')
                .is_some_and(|(_, rest)| COMPACT_DATE.is_match(rest));
            !edge(prev_char(text, start)) && !edge(next_char(text, end)) && !dated
        }
        Check::PhoneDigits => {
            let n = value.chars().filter(char::is_ascii_digit).count();
            digit_bounded() && (8..=15).contains(&n)
        }
        // A path ("the pwd is /workspace/app") is not a password.
        Check::HasDigitOrSymbol => {
            !value.starts_with(['/', '~'])
                && value
                    .chars()
                    .any(|c| c.is_ascii_digit() || (c.is_ascii_punctuation() && c != '.'))
        }
        Check::LettersAndDigits => {
            value.chars().any(|c| c.is_ascii_digit())
                && value.chars().any(|c| c.is_ascii_alphabetic())
        }
        Check::ChineseValue => {
            value.chars().any(|c| c.is_ascii_digit()) && !PASSWORD_RULE.is_match(value)
        }
        Check::HasDigit => value.chars().any(|c| c.is_ascii_digit()),
        Check::NamedCard => {
            passes(Check::Luhn, text, start, end, value)
                && CARD_WORDS.is_match(window_before(text, start, 24))
        }
        Check::Mobile => digit_bounded() && !ORDER_WORDS.is_match(window_before(text, start, 24)),
        Check::HkId => {
            !prev_char(text, start).is_some_and(|c| c.is_ascii_alphanumeric()) && hkid_ok(value)
        }
        // One random letter-and-nine-digit code in ten passes the checksum: named ones only.
        Check::TwId => {
            passes(Check::AlnumBounded, text, start, end, value)
                && twid_ok(value)
                && TW_ID_WORDS.is_match(window_before(text, start, 24))
        }
        Check::LoginPair => {
            let user = text[..start]
                .trim_end()
                .trim_end_matches('/')
                .trim_end()
                .rsplit(char::is_whitespace)
                .next()
                .unwrap_or_default();
            let value = value.trim_end_matches(['.', ',', ';']);
            // "12.5GB / 50GB", "1200 / 3000" are readings, not a login; "admin / 123456" is.
            let reading = (QUANTITY.is_match(user) && QUANTITY.is_match(value))
                || WITH_UNIT.is_match(user)
                || WITH_UNIT.is_match(value);
            passes(Check::ProsePassword, text, start, end, value) && !reading
        }
        Check::NamedNi => {
            passes(Check::AlnumBounded, text, start, end, value)
                && NI_WORDS.is_match(window_before(text, start, 30))
        }
        Check::NamedLandline => {
            passes(Check::Landline, text, start, end, value)
                && PHONE_WORDS.is_match(window_before(text, start, 30))
        }
        Check::NamedSsn => {
            let digits: String = value.chars().filter(char::is_ascii_digit).collect();
            digit_bounded()
                && digits.len() == 9
                && ssn_ok(&format!(
                    "{}-{}-{}",
                    &digits[..3],
                    &digits[3..5],
                    &digits[5..]
                ))
        }
        Check::ProsePassword => {
            let lower = value.to_ascii_lowercase();
            !PASSWORD_RULE_EN.is_match(after_password_word(window_before(text, start, 40)))
                && !value.starts_with(['/', '~', '('])
                && !lower.starts_with("http")
                && !lower.starts_with("www.")
                && value
                    .chars()
                    .any(|c| c.is_ascii_digit() || (c.is_ascii_punctuation() && c != '.'))
        }
        Check::PlainPassword | Check::PasswordTo => {
            if passes(Check::ProsePassword, text, start, end, value) {
                return true;
            }
            let plain = value.chars().all(|c| c.is_ascii_alphabetic());
            let capitalised = value.starts_with(|c: char| c.is_ascii_uppercase());
            plain
                && names_the_password(text, start)
                && (quoted(text, start, end)
                    || mixed_case(value)
                    || (ends_clause(text, end)
                        && !describes_password(value)
                        && !(matches!(check, Check::PasswordTo) && capitalised)))
        }
        Check::Passphrase => {
            let words: Vec<&str> = value.split(' ').collect();
            names_the_password(text, start)
                && (quoted(text, start, end)
                    || (ends_clause(text, end)
                        && !words.first().is_some_and(|w| describes_password(w))))
                && !words
                    .iter()
                    .any(|w| FUNCTION_WORDS.contains(w) || PASSPHRASE_RULE_WORDS.contains(w))
        }
        Check::DocumentNumber => {
            let digits = value.chars().filter(char::is_ascii_digit).count();
            passes(Check::AlnumBounded, text, start, end, value)
                && (digits >= 6 || (digits >= 1 && value.len() >= 8))
                && !COMPACT_DATE.is_match(value)
        }
        Check::SpelledEmail => {
            let lower = value.to_lowercase();
            // A plain " at " reads as prose ("sign up at github.com") unless the address is
            // spelled out with "dot" or 点 as well.
            let bracketed = ["[at]", "(at)", "{at}", "艾特", "[dot]", "(dot)"]
                .iter()
                .any(|a| lower.contains(a));
            let local = value
                .split(|c: char| c.is_whitespace() || matches!(c, '[' | '(' | '{' | '艾'))
                .next()
                .unwrap_or_default()
                .to_ascii_lowercase();
            // With a plain " at ", the address must look like one: a local part with a dot,
            // underscore, plus or digit, or spelled with " dot ", or a webmail domain.
            let (before_at, after_at) = lower.split_once(" at ").unwrap_or((&lower, ""));
            let addressy = before_at.contains(" dot ")
                || before_at
                    .chars()
                    .any(|c| matches!(c, '.' | '_' | '+') || c.is_ascii_digit())
                || WEBMAIL.is_match(after_at);
            (bracketed || addressy) && !EVERYDAY_WORDS.contains(&local.as_str())
        }
    }
}

/// Checks every detector of a kind shares: keys and passwords are not placeholders or masks
/// (`${DB_PASSWORD}`, `<your-password>`, `******`, `sk-XXXXXXXX`, AWS's documented
/// `...EXAMPLE` keys), and an address in a git remote or after `ssh`/`scp` is a login, not an
/// e-mail.
fn plausible(kind: SensitiveKind, text: &str, start: usize, value: &str) -> bool {
    match kind {
        SensitiveKind::ApiKey | SensitiveKind::Password => !is_placeholder(value),
        SensitiveKind::Email => {
            let before = text[..start].trim_end();
            let command = before
                .rsplit(|c: char| c.is_whitespace())
                .next()
                .unwrap_or_default();
            // `user@host:/path` (scp, rsync) is a login; "ann@x.com: she agreed" is an address.
            let mut after = text[start + value.len()..].chars();
            let remote_path =
                after.next() == Some(':') && after.next().is_some_and(|c| !c.is_whitespace());
            !(value.starts_with("git@")
                || remote_path
                || matches!(command, "ssh" | "scp" | "sftp" | "rsync" | "mosh"))
        }
        _ => true,
    }
}

fn is_placeholder(value: &str) -> bool {
    let value = value.trim_matches(['`', '"', '\'', '“', '”', '‘', '’']);
    let lower = value.to_ascii_lowercase();
    let longest_run = value
        .chars()
        .fold((None, 0, 0), |(prev, run, best), c| {
            let run = if Some(c) == prev { run + 1 } else { 1 };
            (Some(c), run, best.max(run))
        })
        .2;
    let has_digit = value.chars().any(|c| c.is_ascii_digit());
    PLACEHOLDER.is_match(value)
        || value
            .chars()
            .all(|c| matches!(c, '*' | '•' | '·' | '#' | '.' | 'x' | 'X'))
        || (longest_run >= 8 && lower.contains("xxxxxxxx"))
        || value.contains("EXAMPLE")
        || lower.contains("placeholder")
        || lower.contains("redacted")
        || (!has_digit && (lower.starts_with("your") || lower == "changeme"))
}

/// Words that name a payment card just before its number.
static CARD_WORDS: LazyLock<Regex> = LazyLock::new(|| {
    re(r"(?i:card|visa|mastercard|amex|diners|discover|jcb|unionpay|\bpan\b)|卡|银联")
});

/// A number just after a word naming it an order, shipment or document number ("order
/// 1881...", "订单号：1881...").
static ORDER_WORDS: LazyLock<Regex> = LazyLock::new(|| {
    re(
        r"(?:(?i:\b(?:order|shipment|parcel|waybill|tracking|invoice|ticket)(?:\s*(?:no\.?|number|id|#))?)|(?:订单|运单|快递|发票|工单)(?:编?号码?)?|单号)\s*[:：#]?\s*(?:(?i:is|was)\s*|为|是)?$",
    )
});

/// A reference to a variable, a template slot or a documentation placeholder: `${DB_PASSWORD}`,
/// `$API_KEY`, `<your-password>`, `{{ secret }}`, `%PASSWORD%`, `[REDACTED]`.
static PLACEHOLDER: LazyLock<Regex> = LazyLock::new(|| {
    re(r"^(?:\$\{[^}]*\}?|\$[A-Z_][A-Z0-9_]*|<[^>]*>?|\{\{.*|%[A-Za-z_]+%|\[[A-Za-z_: ]*\]?)$")
});

/// The up to `chars` characters of `text` before byte `at`.
fn window_before(text: &str, at: usize, chars: usize) -> &str {
    let from = text[..at]
        .char_indices()
        .rev()
        .nth(chars.saturating_sub(1))
        .map_or(0, |(i, _)| i);
    &text[from..at]
}

/// Words that make a number after them a phone number.
static PHONE_WORDS: LazyLock<Regex> = LazyLock::new(|| {
    re(
        r"(?i:phone|\btel\b|\bcall(?:s|ed|ing)?\b|mobile|\bcell|\bnumber is\b|desk|office|landline|\bfax\b|contact|reach|dial|hotline|whatsapp)|电话|手机|座机|号码|联系|致电|拨打",
    )
});

/// Words naming a UK National Insurance number.
static NI_WORDS: LazyLock<Regex> =
    LazyLock::new(|| re(r"(?i:\bNI\b|\bNINO\b|national insurance)|国民保险"));

/// Words naming a Taiwan ID.
static TW_ID_WORDS: LazyLock<Regex> = LazyLock::new(|| {
    re(
        r"(?i:taiwan|\bROC\b|national id|\bid\b)|台湾|台灣|身分证|身份证|身分證|身份證|证号|證號|字号|字號",
    )
});

/// A number ("3000", "12.5", "$1,200").
static QUANTITY: LazyLock<Regex> = LazyLock::new(|| re(r"^[$¥€£]?\d[\d,]*(?:\.\d+)?$"));

/// A number with a unit of measure ("50GB", "230ms", "75%", "3k").
static WITH_UNIT: LazyLock<Regex> = LazyLock::new(|| {
    re(
        r"^[$¥€£]?\d[\d,]*(?:\.\d+)?\s*(?i:[kmgtp]i?b|b|ms|us|µs|ns|s|sec|min|h|%|k|m|x|fps|rpm|qps|rps|mbps|gbps)$",
    )
});

/// Webmail domains, which make "name at gmail dot com" an address.
static WEBMAIL: LazyLock<Regex> = LazyLock::new(|| {
    re(
        r"^(?:gmail|googlemail|yahoo|hotmail|outlook|live|icloud|me|aol|proton(?:mail)?|fastmail|gmx|qq|163|126|sina|sohu|foxmail|yeah)\b",
    )
});

/// Words that start prose, not an e-mail's local part ("reach me at ...").
const EVERYDAY_WORDS: &[&str] = &[
    "me", "us", "him", "her", "them", "you", "it", "home", "work", "least", "most", "all", "once",
    "first", "last", "the", "a", "an", "look", "arrive", "arrived", "meet", "lunch", "noon",
];

/// A date or a time at the start of a value ("2024-11-30", "2024 11 30", "10:00").
static DATE_LIKE: LazyLock<Regex> =
    LazyLock::new(|| re(r"^(?:(?:19|20)\d{2}[\- ./]\d{1,2}[\- ./]\d{1,2}|\d{1,2}:\d{2})"));

/// Eight digits that read as a date (YYYYMMDD).
static COMPACT_DATE: LazyLock<Regex> =
    LazyLock::new(|| re(r"^(?:19|20)\d{2}(?:0[1-9]|1[0-2])(?:0[1-9]|[12]\d|3[01])$"));

/// Finds sensitive spans in `text` (see the module docs). Spans are sorted and non-overlapping.
pub fn find_sensitive(text: &str) -> Vec<SensitiveSpan> {
    let norm = normalize_light(text);
    let t = norm.text.as_str();
    let mut candidates: Vec<(usize, SensitiveSpan)> = Vec::new();
    for det in DETECTORS.iter() {
        let prio = det.kind as usize;
        for caps in det.re.captures_iter(t) {
            let Some(whole) = caps.get(0) else { continue };
            let m = caps.name("v").unwrap_or(whole);
            if !passes(det.check, t, m.start(), m.end(), m.as_str())
                || !plausible(det.kind, t, m.start(), m.as_str())
            {
                continue;
            }
            let (start, end) = norm.original_range(m.start(), m.end());
            if start < end {
                candidates.push((
                    prio,
                    SensitiveSpan {
                        kind: det.kind,
                        start,
                        end,
                    },
                ));
            }
        }
    }
    candidates.sort_by_key(|(p, s)| (*p, s.start, std::cmp::Reverse(s.end)));
    let mut accepted: Vec<SensitiveSpan> = Vec::new();
    for (_, s) in candidates {
        if accepted
            .iter()
            .all(|a| s.end <= a.start || s.start >= a.end)
        {
            accepted.push(s);
        }
    }
    accepted.sort_by_key(|s| (s.start, s.end));
    accepted
}

/// Replaces each span with its `[REDACTED:kind]` placeholder. Spans must be sorted and
/// non-overlapping (as [`find_sensitive`] returns them); others are skipped.
pub fn redact(text: &str, spans: &[SensitiveSpan]) -> String {
    let mut out = String::with_capacity(text.len());
    let mut at = 0;
    for s in spans {
        if s.start < at || s.end > text.len() || s.start > s.end {
            continue;
        }
        out.push_str(&text[at..s.start]);
        out.push_str(&s.kind.placeholder());
        at = s.end;
    }
    out.push_str(&text[at..]);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// `expect`: (kind, exact original substring) of every span.
    fn check(input: &str, expect: &[(SensitiveKind, &str)]) {
        let spans = find_sensitive(input);
        let got: Vec<(SensitiveKind, &str)> = spans
            .iter()
            .map(|s| (s.kind, &input[s.start..s.end]))
            .collect();
        assert_eq!(got, expect, "input {input:?}");
    }

    use SensitiveKind::*;

    #[test]
    fn api_keys_and_tokens() {
        check(
            "my key is sk-proj-abcdefghij0123456789XYZ ok",
            &[(ApiKey, "sk-proj-abcdefghij0123456789XYZ")],
        );
        check("AKIAJ2XQ7RMD4KWB5NPA", &[(ApiKey, "AKIAJ2XQ7RMD4KWB5NPA")]);
        // AWS's documented example key is a sample, not a secret.
        check("AKIAIOSFODNN7EXAMPLE", &[]);
        check(
            "token ghp_abcdefghijklmnopqrstuvwxyz0123456789",
            &[(ApiKey, "ghp_abcdefghijklmnopqrstuvwxyz0123456789")],
        );
        check(
            "Authorization: Bearer abcDEF0123456789xyzXYZ",
            &[(ApiKey, "abcDEF0123456789xyzXYZ")],
        );
        check(
            "api_key=3f9a1c0e7b2d4a6f8e0c1b3d5f7a9c2e",
            &[(ApiKey, "3f9a1c0e7b2d4a6f8e0c1b3d5f7a9c2e")],
        );
        check("the token bucket refills every second", &[]);
        check(
            "billing uses sk_live_51HxAbCdEfGhIjKlMnOp now",
            &[(ApiKey, "sk_live_51HxAbCdEfGhIjKlMnOp")],
        );
        check(
            "token 0123456789abcdef0123456789abcdef",
            &[(ApiKey, "0123456789abcdef0123456789abcdef")],
        );
        check(
            "key file:\n-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEAx7Zq\n-----END RSA PRIVATE KEY-----\nthanks",
            &[(
                ApiKey,
                "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEAx7Zq\n-----END RSA PRIVATE KEY-----",
            )],
        );
        check(
            "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAA",
            &[(
                ApiKey,
                "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAA",
            )],
        );
        let encrypted = "-----BEGIN RSA PRIVATE KEY-----\nProc-Type: 4,ENCRYPTED\nDEK-Info: AES-128-CBC,6B3C\n\nMIIEowIBAAKCAQEAx7Zq\n-----END RSA PRIVATE KEY-----";
        check(encrypted, &[(ApiKey, encrypted)]);
        check(
            "api key 1a2b3c4d-5e6f-4a7b-8c9d-0e1f2a3b4c5d",
            &[(ApiKey, "1a2b3c4d-5e6f-4a7b-8c9d-0e1f2a3b4c5d")],
        );
        // Named, not pasted: nothing to redact.
        check(
            "Paste the -----BEGIN PRIVATE KEY----- block into the vault, not into chat.",
            &[],
        );
        check(
            "The TLS private key /etc/ssl/private/web-01.key is rotated yearly.",
            &[],
        );
        check(
            "Use access token expiry_seconds_3600_default for tests",
            &[],
        );
    }

    #[test]
    fn passwords() {
        check("wifi password: hunter2!", &[(Password, "hunter2!")]);
        check("The password is Tr0ub4dor&3", &[(Password, "Tr0ub4dor&3")]);
        check("邮箱密码是Abc12345，别外传", &[(Password, "Abc12345")]);
        check("Reset your password via the settings page.", &[]);
        check("The password is required for login.", &[]);
        check("密码是要定期更换的", &[]);
        check("passwd is s3cr3t!!", &[(Password, "s3cr3t!!")]);
        check("密码是：猫咪2023", &[(Password, "猫咪2023")]);
        check("The password is incorrect.", &[]);
        check("The password is internationalized", &[]);
        check("The pwd is /workspace/app when tests run.", &[]);
        check("my pwd is Hunter2!", &[(Password, "Hunter2!")]);
        check("密码是：天天向上2023", &[(Password, "天天向上2023")]);
        check(
            "wifi密码是：我爱你一生一次520",
            &[(Password, "我爱你一生一次520")],
        );
        check("支付密码为6位数字", &[]);
        check("密码是8位数字，每90天更换一次", &[]);
    }

    #[test]
    fn passwords_of_plain_words() {
        // A word that ends its clause, or is quoted, or of mixed case, is the password.
        for (text, value) in [
            (
                "The Wi-Fi password is sunshine, ask me if you forget.",
                "sunshine",
            ),
            (
                "Priya's laptop password is literally mustang – all lowercase.",
                "mustang",
            ),
            (
                "The guest network password is correcthorsebattery",
                "correcthorsebattery",
            ),
            ("the NAS password was dragon.", "dragon"),
            ("The password is kitten and the username is ann.", "kitten"),
            (
                "The webinar passcode is NJWgZC share it only with attendees",
                "NJWgZC",
            ),
            ("The password is \"tulips\" with no capitals", "tulips"),
            ("She set her password to sunflower.", "sunflower"),
            (
                "we changed the router password to Tr0ub4dor&3 last night",
                "Tr0ub4dor&3",
            ),
            ("郭倩说自己的备用密码就是“sunshine”，全小写。", "sunshine"),
            ("WiFi密码是 dragonfly", "dragonfly"),
            (
                "The passphrase for the backup key is eleven tundra thunder meadow falcon. Keep it.",
                "eleven tundra thunder meadow falcon",
            ),
        ] {
            check(text, &[(Password, value)]);
        }
        // Words that describe a password, or a clause that goes on, are not one.
        for text in [
            "The password is required.",
            "Your password is incorrect, try again.",
            "The password is case sensitive.",
            "The password is stored in the vault.",
            "The password was reset yesterday.",
            "The password is the same as last time.",
            "The password is too short.",
            "The password was compromised, so we rotated it.",
            "The password is mandatory for admins.",
            "Her password is whatever she wants.",
            "The password is long enough.",
            "The password is weak - change it.",
            "The password is expiring soon.",
            "Password is optional.",
            "The passphrase is four random words.",
            "The passphrase is stored in the team vault.",
            "The passphrase length is twelve words minimum.",
            "We set the password to expire every 90 days.",
            "They changed the password to something stronger.",
            "密码是必填项",
            "The password is unchanged.",
            // Plain words that are not passwords: compound nouns, other clauses, services,
            // descriptions of a passphrase, Chinese words around 是/为.
            "The password manager is Bitwarden.",
            "Our password manager is LastPass.",
            "The password reset is complete.",
            "Password reuse is common.",
            "The password requirement is strict.",
            "The password hash is bcrypt.",
            "She asked for the password but Tom was busy.",
            "Password reset done, but Tom was upset.",
            "The password is similar.",
            "I changed the password to Netflix.",
            "I reset my password to Gmail and Slack.",
            "We set the password to expire.",
            "The passphrase was rotated last week.",
            "The SSH key passphrase was reset last month.",
            "The passphrase is kept offline somewhere safe.",
            "Her passphrase was written down somewhere safe.",
            "密码因为LDAP同步失败了",
            "这个密码作为Token使用",
            "密码不是Admin就是root",
            "数据库密码也是Vault里取的",
            "这个密码应该是Chrome保存的",
            "The password is Anna’s birthday.",
        ] {
            check(text, &[]);
        }
        // Markup around a value is not part of it.
        check("I set my password to `hunter2`.", &[(Password, "hunter2")]);
        check(
            "She changed her password to **tulips2**",
            &[(Password, "tulips2")],
        );
        check("The password is hunter2…", &[(Password, "hunter2")]);
    }

    #[test]
    fn emails_and_phones() {
        check(
            "mail alice.w@example.co.uk now",
            &[(Email, "alice.w@example.co.uk")],
        );
        check("手机13812345678联系", &[(Phone, "13812345678")]);
        check("call +1 415-555-0132 today", &[(Phone, "+1 415-555-0132")]);
        check("call (415) 555-0132", &[(Phone, "(415) 555-0132")]);
        check("order 2024-01-15 shipped", &[]);
        check("id 138123456789012", &[]);
    }

    #[test]
    fn id_numbers_and_cards() {
        // 11010519491231002X is the standard published example with a valid checksum.
        check(
            "身份证11010519491231002X",
            &[(IdNumber, "11010519491231002X")],
        );
        // Named as an ID, a wrong checksum (a typo, or a made-up example) is still redacted;
        // unnamed, an 18-digit number needs the checksum to count as an ID.
        check(
            "身份证110105194912310021",
            &[(IdNumber, "110105194912310021")],
        );
        check("批次110105194912310021", &[]);
        check("SSN 123-45-6789", &[(IdNumber, "123-45-6789")]);
        check("SSN 666-45-6789", &[]);
        check(
            "card 4111 1111 1111 1111 exp",
            &[(CreditCard, "4111 1111 1111 1111")],
        );
        check("card 4111 1111 1111 1112 exp", &[]);
    }

    #[test]
    fn checksums() {
        assert!(cn_id_checksum_ok("11010519491231002X"));
        assert!(!cn_id_checksum_ok("110105194912310020"));
        assert!(luhn_ok("4111111111111111"));
        assert!(luhn_ok("79927398713"));
        assert!(!luhn_ok("79927398710"));
    }

    #[test]
    fn named_ids_landlines_webhooks_and_aws_secrets() {
        let kinds = |t: &str| -> Vec<&'static str> {
            find_sensitive(t).iter().map(|s| s.kind.as_str()).collect()
        };
        // Named ID numbers whatever their checksum; 15-digit ones too.
        assert_eq!(kinds("身份证号 110101199003071234"), ["id_number"]);
        assert_eq!(kinds("证件号码：32010219851212002X，已核验"), ["id_number"]);
        assert_eq!(kinds("national ID 130503670401001"), ["id_number"]);
        // Landlines and bracketed area codes, and named numbers.
        assert_eq!(kinds("前台电话 010-62345678，工作日接听"), ["phone"]);
        assert_eq!(kinds("Call the office on (020) 7946 0958."), ["phone"]);
        assert_eq!(kinds("mobile: 07700 900123"), ["phone"]);
        // Webhooks and AWS secret keys.
        assert_eq!(
            kinds("alerts go to https://hooks.slack.com/services/T0AAAA1/B0BBBB2/abcdefGHIJKLmnop"),
            ["api_key"]
        );
        assert_eq!(
            kinds("aws secret key wJalrXUtnFEMI/K7MDENG/bPxRfiCYzq4TRe8Kd0 for the build user"),
            ["api_key"]
        );
        // Not sensitive: a hotel, a version, an order number, an ordinary secret word.
        assert!(kinds("Booked the hotel 12345678 nights? no: hotel room 1204.").is_empty());
        assert!(kinds("Release 2024-11-30 ships build 0123").is_empty());
        assert!(kinds("The secret ingredient is cardamom.").is_empty());
        // Found by review: invoice and batch numbers, dates after "phone", an ID-like order number.
        for t in [
            "INV-0123-4567890 was paid on Monday.",
            "Batch 021-20241130 passed QA.",
            "Phone: 2024-11-30 14:00 call with the vendor.",
            "电话 2024-11-30 10:00-12:00 回访客户",
            "The valid number 110101199003071234 is a test fixture.",
            "steps (01) 2000-3000 rpm",
        ] {
            assert!(kinds(t).is_empty(), "{t:?}: {:?}", kinds(t));
        }
        assert_eq!(kinds("My phone number is 07700 900123"), ["phone"]);
        assert_eq!(kinds("Tel. 0207 946 0958"), ["phone"]);
        assert_eq!(kinds("telephone 020 7946 0958"), ["phone"]);
    }

    /// Vendor keys, command lines and config passwords of the kinds in the development set
    /// `datasets/guard/redaction-dev` (these strings are written here, not copied from it).
    #[test]
    fn vendor_keys_command_lines_and_config_passwords() {
        check(
            "token in ~/.cache: hf_QmT4rZp8LkW2nVx9cYb3dFg7hJs1aKeUoPi",
            &[(ApiKey, "hf_QmT4rZp8LkW2nVx9cYb3dFg7hJs1aKeUoPi")],
        );
        check(
            "SENDGRID_KEY=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",
            &[(
                ApiKey,
                "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",
            )],
        );
        check(
            "阿里云 AccessKey LTAI5tRz8QmW3xKp9VnB2cDe / Hq7Lm2Nz9Rt4Vw6Yb8Ck1Df3Gj5",
            &[
                (ApiKey, "LTAI5tRz8QmW3xKp9VnB2cDe"),
                (ApiKey, "Hq7Lm2Nz9Rt4Vw6Yb8Ck1Df3Gj5"),
            ],
        );
        check(
            "cs = DefaultEndpointsProtocol=https;AccountName=acme;AccountKey=Zm9vYmFyYmF6cXV4MTIzNDU2Nzg5MGFiY2RlZmdoaWprbG1ub3A=;",
            &[(
                ApiKey,
                "Zm9vYmFyYmF6cXV4MTIzNDU2Nzg5MGFiY2RlZmdoaWprbG1ub3A=",
            )],
        );
        check(
            "通知机器人 https://qyapi.weixin.qq.com/cgi-bin/webhook/send?key=3f2a9c1e-77b4-4d0a-9e21-5c6b8a7d4e10 已配置",
            &[(
                ApiKey,
                "https://qyapi.weixin.qq.com/cgi-bin/webhook/send?key=3f2a9c1e-77b4-4d0a-9e21-5c6b8a7d4e10",
            )],
        );
        check(
            "GET /send?appkey=0f3c9a7e5b1d2c4e6a8b0d1f3e5a7c9b&tpl=7",
            &[(ApiKey, "0f3c9a7e5b1d2c4e6a8b0d1f3e5a7c9b")],
        );
        // Passwords in command lines, URLs, env files and JSON.
        check(
            "mysql -h 10.0.0.5 -uroot -pQz7xWm2Lk9 -e 'SELECT 1'",
            &[(Password, "Qz7xWm2Lk9")],
        );
        check(
            "sshpass -p 'T4r!pL0w' ssh ops@10.2.3.4",
            &[(Password, "T4r!pL0w")],
        );
        check(
            "redis-cli -h cache.internal -a Rk8vN2qZ PING",
            &[(Password, "Rk8vN2qZ")],
        );
        check(
            "postgres://etl:Pw9xK2mQ7z@10.1.2.3:5432/app",
            &[(Password, "Pw9xK2mQ7z")],
        );
        check("SMTP_PASS=Gh5^kL2!qZ", &[(Password, "Gh5^kL2!qZ")]);
        check(
            r#"{"user": "ops", "admin_password": "Vb7@Lq2#Zx"}"#,
            &[(Password, "Vb7@Lq2#Zx")],
        );
        check(
            "The guest Wi-Fi password at the lake house is Pinecone42.",
            &[(Password, "Pinecone42")],
        );
        check(
            "My login for the portal is dana88 / Kettle#19",
            &[(Password, "Kettle#19")],
        );
        check(
            "初始密码 Spring-2931，首次登录后修改",
            &[(Password, "Spring-2931")],
        );
        check("服务器root密码Hx7#pQ2m，别外传", &[(Password, "Hx7#pQ2m")]);
        // Placeholders, masks and references are not passwords or keys.
        for t in [
            "DB_PASSWORD=${DB_PASSWORD}",
            "password: <your-password>",
            "Auth log: user=ann password=****** result=FAIL",
            "example config: sk-xxxxxxxxxxxxxxxxxxxx is a placeholder",
            "token ghp_xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx in the docs",
            "The password reset link is https://example.com/reset/4f2a",
            "Passwords must be 12 characters; the password policy is strict.",
        ] {
            let got = find_sensitive(t);
            assert!(got.is_empty(), "{t:?}: {got:?}");
        }
    }

    #[test]
    fn spelled_emails_documents_and_more_phone_and_card_formats() {
        check(
            "write to ann.lee [at] example [dot] org",
            &[(Email, "ann.lee [at] example [dot] org")],
        );
        check(
            "reach me at kate dot lee at yahoo dot com please",
            &[(Email, "kate dot lee at yahoo dot com")],
        );
        check(
            "商务合作：li_na(at)shop-cn.com",
            &[(Email, "li_na(at)shop-cn.com")],
        );
        check(
            "邮箱 wang88 艾特 qq 点 com",
            &[(Email, "wang88 艾特 qq 点 com")],
        );
        check("We meet at noon at the office.", &[]);
        check("Clone git@github.com:acme/infra.git first", &[]);
        check("then ssh deploy@web-01.acme.io to restart", &[]);
        // Documents named as such.
        check(
            "护照号 E12345678，有效期至2030年",
            &[(IdNumber, "E12345678")],
        );
        check(
            "US passport number 512345678 expires soon",
            &[(IdNumber, "512345678")],
        );
        check("driver's license D1234567 (CA)", &[(IdNumber, "D1234567")]);
        check("SSN 512 34 6789 on file", &[(IdNumber, "512 34 6789")]);
        check(
            "NI number JG 10 37 42 B for payroll",
            &[(IdNumber, "JG 10 37 42 B")],
        );
        check("HKID A123456(3) uploaded", &[(IdNumber, "A123456(3)")]);
        check("HKID A123456(4) uploaded", &[]);
        check("台湾身分证 A123456789", &[(IdNumber, "A123456789")]);
        check("part no. A123456788", &[]);
        check(
            "旧身份证号码是15位：110105491231002",
            &[(IdNumber, "110105491231002")],
        );
        // Phones: spaced and dashed national formats; an order number shaped like a mobile.
        check("call the venue: 020 7946 0958", &[(Phone, "020 7946 0958")]);
        check("Paris desk 01 42 68 53 00", &[(Phone, "01 42 68 53 00")]);
        check("Sydney (02) 9374 4000", &[(Phone, "(02) 9374 4000")]);
        check("订单号18812345678已发货", &[]);
        check("order 15912345678 was split", &[]);
        check("手机13912345678，订单另发", &[(Phone, "13912345678")]);
        // Cards of other lengths only where a card is named.
        check(
            "银联卡 6212 3456 7890 1234 569 扣款",
            &[(CreditCard, "6212 3456 7890 1234 569")],
        );
        check(
            "Diners card 3056 930902 5904 on file",
            &[(CreditCard, "3056 930902 5904")],
        );
        check("shipment 6212345678901234569 left", &[]);
    }

    /// Benign memory text close to the detectors' patterns: none of it holds a secret, and each
    /// line guards against a false redaction.
    #[test]
    fn ordinary_text_near_the_new_patterns_is_left_alone() {
        for t in [
            "We pin numpy as 1.26.4 because 2.0 breaks the pandas build.",
            "Pin requests as 2.31.0 in requirements.txt.",
            "端口改为8443之后 nginx 就正常了。",
            "把 batch size 改为 1024，显存够用。",
            "版本号改成了 1.4.2，记得更新 changelog。",
            "超时时间改为3000ms，重试次数改为5。",
            "Sign up at github.com and fork the repo.",
            "Docs are hosted at readthedocs.io under the project name.",
            "Set a breakpoint at logger.info to see the payload.",
            "The API is live at acme.co since Monday.",
            "Account storage 12.5GB / 50GB used; login page p50 120ms / 340ms p99.",
            "Account balance went from 1200 / 3000 after the refund.",
            "Login latency 85ms / 230ms under load.",
            "hexdump: 00000010  02 00 3e 00 01 00 00 00 40 10 40 00",
            "Lottery numbers were 06 11 23 35 42 this week.",
            "Report 03-2024-0001 was filed by the auditor.",
            "The password policy requires 12+ chars; password length is 16-64.",
            "HP123456A is the printer model in room 4.",
            "SKU B100234567 is out of stock.",
            "The mapping pin is 'v2-3' per the lockfile.",
            "The LED pin is GPIO17 on the Raspberry Pi.",
            "My account on the forum is alice_w / posts about Rust.",
            "Run redis-cli -a $REDIS_PASSWORD ping to check.",
            "git clone git@github.com:acme/infra.git && cd infra",
            "ssh deploy@10.0.0.12 'sudo systemctl restart app'",
            "会议室电话会议号 123 456 789，密码为6位数字。",
            "LED pin: GPIO17",
            "led_pin=GPIO18 in the device tree",
            "Spin: 1200 rpm",
            "Pin: numpy==1.26.4",
            "I looked at stackoverflow dot com for the answer.",
            "scp -r dist/ deploy@web1.acme.io:/srv/app",
            "rsync -avz ./ www@host.example.com:/var/www",
            "订单编号为18812345678，明天发货。",
            "order ID was 13812345678 before the merge",
            "Tracking number is 13812345678 for the parcel.",
            "Winning number: 06 11 23 35 42",
            "Report number 03-2024-0001 is closed.",
            "callback hexdump 01 00 00 00 40",
        ] {
            let got: Vec<(SensitiveKind, &str)> = find_sensitive(t)
                .iter()
                .map(|s| (s.kind, &t[s.start..s.end]))
                .collect();
            assert!(got.is_empty(), "{t:?}: {got:?}");
        }
    }

    /// Secrets the same review wrote that an over-broad placeholder or order-number rule had
    /// let through: each must be redacted.
    #[test]
    fn secrets_that_look_like_placeholders_or_follow_case_words_are_redacted() {
        for (t, secret) in [
            (
                "The root password is $uperMan42 on the bastion.",
                "$uperMan42",
            ),
            ("password: $ecretP4ss", "$ecretP4ss"),
            (
                "DB password is Your-Dog-2024! so rotate it.",
                "Your-Dog-2024!",
            ),
            (
                "The vault passphrase was changeme2024 until Friday.",
                "changeme2024",
            ),
            (
                "Mail ann.lee@gmail.com: she has the contract.",
                "ann.lee@gmail.com",
            ),
            ("Use case: call 13912345678 after 6pm.", "13912345678"),
            ("I prefer 13812345678 for WeChat calls.", "13812345678"),
            ("Refer to 13712345678 for the landlord.", "13712345678"),
            (
                "WiFi: SSID acme-guest, password Acme#Guest2024",
                "Acme#Guest2024",
            ),
            ("银行卡密码是 731946", "731946"),
            ("my pin is 4921", "4921"),
            (
                "kate dot lee at yahoo dot com",
                "kate dot lee at yahoo dot com",
            ),
            // Secrets the rules that keep ordinary text unredacted must still find.
            ("login: admin / 123456", "123456"),
            ("root account: root / 888888", "888888"),
            ("Router login admin / 1234abcd", "1234abcd"),
            ("我的QQ账号 834756123 / qwe123456", "qwe123456"),
            ("PIN for the garage is 4921", "4921"),
            ("The PIN is now 4921", "4921"),
            ("WiFi密码已改为Abc#2024", "Abc#2024"),
            ("密码已经改成了 abc520", "abc520"),
            (
                "Per policy the password for the bastion is Bst!9921q",
                "Bst!9921q",
            ),
            (
                "After rotation the vault password is now Kx9#mP2q",
                "Kx9#mP2q",
            ),
            ("ann at example [dot] com", "ann at example [dot] com"),
            ("kate.lee at gmail.com", "kate.lee at gmail.com"),
            ("我的身份證 A123456789", "A123456789"),
            ("拨打 010-3705-3983 找前台", "010-3705-3983"),
        ] {
            let redacted = redact(t, &find_sensitive(t));
            assert!(!redacted.contains(secret), "{t:?} -> {redacted:?}");
        }
        // Placeholders stay placeholders.
        for t in [
            "password: ${DB_PASSWORD}",
            "password: $DB_PASSWORD",
            "password: <your-password>",
            "password: {{ vault_password }}",
            "password: %PASSWORD%",
            "password: your_password_here",
            "password: changeme",
            "The installer's default password is `changeme`; setup makes you replace it.",
        ] {
            assert!(
                find_sensitive(t).is_empty(),
                "{t:?}: {:?}",
                find_sensitive(t)
            );
        }
    }

    #[test]
    fn full_width_and_zero_width_are_seen_through() {
        let text = "号码１３８１２３４５６７８";
        let spans = find_sensitive(text);
        assert_eq!(spans.len(), 1);
        assert_eq!(
            &text[spans[0].start..spans[0].end],
            "１３８１２３４５６７８"
        );
        // Digits of other scripts are digits: a card or phone number in Arabic-Indic or
        // Devanagari digits is found (and its checksum checked) as in ASCII ones.
        for text in [
            "card \u{664}\u{661}\u{661}\u{661} \u{661}\u{661}\u{661}\u{661} \u{661}\u{661}\u{661}\u{661} \u{661}\u{661}\u{661}\u{661} exp",
            "card \u{96a}\u{967}\u{967}\u{967}\u{967}\u{967}\u{967}\u{967}\u{967}\u{967}\u{967}\u{967}\u{967}\u{967}\u{967}\u{967} exp",
        ] {
            let red = redact(text, &find_sensitive(text));
            assert_eq!(red, "card [REDACTED:credit_card] exp", "{text}");
        }
        let text = "card \u{664}\u{661}\u{661}\u{661} \u{661}\u{661}\u{661}\u{661} \u{661}\u{661}\u{661}\u{661} \u{661}\u{661}\u{661}\u{662} exp";
        assert!(
            find_sensitive(text).is_empty(),
            "a failed Luhn check stays unflagged"
        );
        let text = "key sk-abc\u{200B}defghijklmnop0123";
        let red = redact(text, &find_sensitive(text));
        assert_eq!(red, "key [REDACTED:api_key]");
    }

    #[test]
    fn redaction_offsets() {
        let text = "联系 bob@example.com 或 13912345678。";
        let spans = find_sensitive(text);
        assert_eq!(
            redact(text, &spans),
            "联系 [REDACTED:email] 或 [REDACTED:phone]。"
        );
    }

    fn secret() -> impl Strategy<Value = String> {
        prop_oneof![
            "[a-z]{3,8}\\.[a-z]{2,6}@[a-z]{3,8}\\.(com|org|cn)",
            "1[3-9][0-9]{9}",
            "sk-[A-Za-z0-9]{20,30}",
            "AKIA[0-9A-Z]{16}",
            "ghp_[A-Za-z0-9]{36}",
            Just("4111 1111 1111 1111".to_owned()),
            Just("11010519491231002X".to_owned()),
        ]
    }

    proptest! {
        #[test]
        fn redaction_never_panics(s in "\\PC{0,200}") {
            let spans = find_sensitive(&s);
            let _ = redact(&s, &spans);
            for w in spans.windows(2) {
                prop_assert!(w[0].end <= w[1].start);
            }
        }

        #[test]
        fn redaction_removes_the_secret(pre in "\\PC{0,40}", post in "\\PC{0,40}", sec in secret()) {
            let text = format!("{pre} {sec} {post}");
            let red = redact(&text, &find_sensitive(&text));
            prop_assert!(!red.contains(&sec), "{text:?} -> {red:?}");
        }
    }
}

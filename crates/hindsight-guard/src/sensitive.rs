//! Sensitive-data detection and redaction.
//!
//! Detectors run over lightly normalised text (full-width digits and letters become ASCII,
//! zero-width characters are dropped) and report spans in the ORIGINAL text. Overlapping candidates
//! are resolved by kind priority (api key > password > email > id number > credit card > phone),
//! then by position. Numbers are accepted only when they are not part of a longer digit run, and
//! checked where a checksum exists: the Chinese resident ID (ISO 7064 MOD 11-2, plausible birth
//! date), credit cards (Luhn, issuer prefix 2-6), US SSNs (area/group/serial rules).
//!
//! A password needs an explicit value: `password: x`, `password=x`, `password is x` (x must contain a
//! digit or symbol), `密码是x` (x ASCII, or mixed with Chinese characters when it has a digit and
//! does not describe a rule, as "密码为6位数字" does). "Reset your password via the settings
//! page" has no value and is left alone. Keys also include Stripe-style `sk_live_` keys, pasted
//! PEM private-key blocks, 16+ character values after `key:`/`token=`-style labels, and bare
//! 32+ character letter-and-digit tokens after a key word. Not detected: passphrases of plain
//! words ("password is correcthorsebatterystaple" reads like "password is internationalized"),
//! passport numbers and 15-digit (pre-1999) Chinese IDs, which look like any other long number
//! without context.

use std::fmt;
use std::sync::LazyLock;

use regex::Regex;
use serde::{Deserialize, Serialize};

use crate::normalize::normalize_light;

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

#[derive(Clone, Copy)]
enum Check {
    None,
    /// The char before and after must not be an ASCII letter/digit.
    AlnumBounded,
    /// The char before and after must not be an ASCII digit.
    DigitBounded,
    CnId,
    Luhn,
    Ssn,
    PhoneDigits,
    /// A number named as a phone: 8-15 digits, not a date or time ("Phone: 2024-11-30 14:00").
    NamedPhone,
    /// A landline: bounded by no digit, letter or hyphen ("INV-0123-4567890" is not one).
    Landline,
    /// `password is X`: X must contain a digit or symbol, so "password is required" stays.
    HasDigitOrSymbol,
    /// Both ASCII letters and digits.
    LettersAndDigits,
    /// A Chinese password value: a digit, and none of the words of a rule about passwords
    /// (length in digits or characters, how often it changes).
    ChineseValue,
    /// The value must contain a digit.
    HasDigit,
}

struct Detector {
    kind: SensitiveKind,
    re: Regex,
    check: Check,
}

fn re(p: &str) -> Regex {
    #[allow(clippy::expect_used)]
    Regex::new(p).expect("static sensitive-data pattern compiles")
}

static DETECTORS: LazyLock<Vec<Detector>> = LazyLock::new(|| {
    use Check::*;
    use SensitiveKind::*;
    let d = |kind, p: &str, check| Detector {
        kind,
        re: re(p),
        check,
    };
    vec![
        d(
            ApiKey,
            r"sk-(?:proj-|live-|test-|ant-[a-z0-9]+-)?[A-Za-z0-9_\-]{16,}",
            AlnumBounded,
        ),
        d(
            ApiKey,
            r"(?:sk|rk)_(?:live|test)_[A-Za-z0-9]{16,}",
            AlnumBounded,
        ),
        d(ApiKey, r"(?:AKIA|ASIA)[0-9A-Z]{16}", AlnumBounded),
        // A PEM private key, header to footer (or to the end of the text when cut off).
        d(
            ApiKey,
            r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY-----\s+(?:[A-Za-z][A-Za-z-]*: \S+\s+){0,4}[A-Za-z0-9+/=]{16}(?s:.*?)(?:-----END (?:[A-Z0-9]+ )*PRIVATE KEY-----|$)",
            None,
        ),
        d(
            ApiKey,
            r"gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{30,}",
            AlnumBounded,
        ),
        d(ApiKey, r"xox[abprs]-[A-Za-z0-9\-]{10,}", AlnumBounded),
        // Webhook URLs carry their secret in the path: whoever has one can post.
        d(
            ApiKey,
            r"https?://(?:hooks\.slack\.com/(?:services|workflows|triggers)/[A-Za-z0-9/_\-]{10,}|(?:discord|discordapp)\.com/api/webhooks/\d+/[A-Za-z0-9_\-]{10,})",
            None,
        ),
        // An AWS secret access key (40 characters of base64) named as a secret.
        d(
            ApiKey,
            r"(?i:aws_secret_access_key|secret[_\- ]?access[_\- ]?key|secret[_\- ]?key|secret)[\s\x22':=：]{1,4}(?:(?:is|是|为)\s*)?(?P<v>[A-Za-z0-9/+]{40})",
            AlnumBounded,
        ),
        d(ApiKey, r"AIza[0-9A-Za-z_\-]{35}", AlnumBounded),
        d(
            ApiKey,
            r"eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}",
            AlnumBounded,
        ),
        d(
            ApiKey,
            r"(?i:bearer)\s+(?P<v>[A-Za-z0-9\-._~+/]{16,}=*)",
            None,
        ),
        d(
            ApiKey,
            r#"(?i:api[_\- ]?key|apikey|secret(?:[_\- ]?key)?|access[_\- ]?(?:token|key)|auth[_\- ]?token|client[_\- ]?secret|private[_\- ]?key|token|密钥|令牌)["']?\s*(?:[:=：]|is|是|为)\s*["']?(?P<v>[A-Za-z0-9+/_\-.]{16,}={0,2})"#,
            HasDigit,
        ),
        // A bare 32+ character token after a key word ("token 0123...cdef"): letters and digits
        // only, so paths and snake_case names stay.
        d(
            ApiKey,
            r"(?i:api[_\- ]?key|secret|token|access key)\s+(?P<v>[A-Za-z0-9][A-Za-z0-9-]{31,})",
            LettersAndDigits,
        ),
        d(
            Password,
            r#"(?i:password|passwd|pwd|passcode|passphrase|pass phrase|pin code|wifi key)\s*[:=：]\s*["'“]?(?P<v>[^\s"'”,，。;；]{3,64})"#,
            None,
        ),
        d(
            Password,
            r#"(?i:password|passwd|pwd|passcode|passphrase|pin)\s+(?:is|was|set to|changed to)\s*:?\s*["'“]?(?P<v>[^\s"'”,，。;；]{4,64})"#,
            HasDigitOrSymbol,
        ),
        d(
            Password,
            r#"(?:密码|口令|登录密码|支付密码|(?i:pin)码?)\s*(?:是|为|：|:|=|设置为|设为|改成了?|改为)\s*[：:]?\s*["'“]?(?P<v>[A-Za-z0-9!@#$%^&*_\-.]{3,64})"#,
            None,
        ),
        // A value mixing Chinese characters with digits ("密码是：猫咪2023"), not a rule about
        // passwords ("密码为6位数字").
        d(
            Password,
            r#"(?:密码|口令|登录密码|支付密码)\s*(?:是|为|：|:|=|设置为|设为|改成了?|改为)\s*[：:]?\s*["'“]?(?P<v>[^\s"'”,，。;；！？]{3,32})"#,
            ChineseValue,
        ),
        d(
            Email,
            r"[A-Za-z0-9._%+\-]+@[A-Za-z0-9\-]+(?:\.[A-Za-z0-9\-]+)*\.[A-Za-z]{2,}",
            None,
        ),
        d(
            IdNumber,
            r"[1-9]\d{5}(?:19|20)\d{2}(?:0[1-9]|1[0-2])(?:0[1-9]|[12]\d|3[01])\d{3}[\dXx]",
            CnId,
        ),
        // Named as an ID number, an 18- or 15-digit number is one whatever its checksum.
        d(
            IdNumber,
            r"(?:身份证(?:号码|号|件号)?|居民身份证|证件号码?|(?i:\b(?:national id|id card|id (?:number|no\.?))))\s*(?:[:：]|是|为)?\s*(?P<v>\d{17}[\dXx]|\d{15})",
            DigitBounded,
        ),
        d(IdNumber, r"\d{3}-\d{2}-\d{4}", Ssn),
        d(
            CreditCard,
            r"\d{4}(?:[ \-]?\d{4}){3}|\d{4}[ \-]?\d{6}[ \-]?\d{5}",
            Luhn,
        ),
        d(
            Phone,
            r"(?:\+?86[\- ]?)?1[3-9]\d[\- ]?\d{4}[\- ]?\d{4}",
            DigitBounded,
        ),
        d(
            Phone,
            r"\+\d{1,3}[ \-]?(?:\(\d{1,4}\)[ \-]?)?\d{1,4}(?:[ \-]?\d{2,4}){1,4}",
            PhoneDigits,
        ),
        d(
            Phone,
            r"\(\d{3}\)\s?\d{3}[\-. ]\d{4}|\d{3}[\-.]\d{3}[\-.]\d{4}",
            DigitBounded,
        ),
        // National numbers with a trunk 0: a Chinese landline ("010-62345678") or an area code
        // in brackets ("(020) 7946 0958").
        d(
            Phone,
            r"0\d{2,3}-\d{7,8}|\(0\d{2,4}\)\s?\d{3,4}[\- ]?\d{3,4}",
            Landline,
        ),
        // Named as a phone number.
        d(
            Phone,
            r"(?:\b(?i:phone(?: number)?|telephone|tel\.?|mobile|cell)|电话|手机|座机)(?:号码|号)?\s*(?:[:：]|是|为|(?i:is|number))?\s*(?P<v>\+?\d[\d \-()]{5,18}\d)",
            NamedPhone,
        ),
    ]
});

/// Valid 18-digit Chinese resident ID checksum (ISO 7064 MOD 11-2).
pub fn cn_id_checksum_ok(id: &str) -> bool {
    const W: [u32; 17] = [7, 9, 10, 5, 8, 4, 2, 1, 6, 3, 7, 9, 10, 5, 8, 4, 2];
    const C: [char; 11] = ['1', '0', 'X', '9', '8', '7', '6', '5', '4', '3', '2'];
    let chars: Vec<char> = id.chars().collect();
    if chars.len() != 18 {
        return false;
    }
    let mut sum = 0;
    for (i, w) in W.iter().enumerate() {
        let Some(d) = chars[i].to_digit(10) else {
            return false;
        };
        sum += d * w;
    }
    chars[17].to_ascii_uppercase() == C[(sum % 11) as usize]
}

/// Luhn check over the digits of `s` (other characters ignored).
pub fn luhn_ok(s: &str) -> bool {
    let digits: Vec<u32> = s.chars().filter_map(|c| c.to_digit(10)).collect();
    if digits.len() < 2 {
        return false;
    }
    let mut sum = 0;
    for (i, d) in digits.iter().rev().enumerate() {
        let mut d = *d;
        if i % 2 == 1 {
            d *= 2;
            if d > 9 {
                d -= 9;
            }
        }
        sum += d;
    }
    sum % 10 == 0
}

fn ssn_ok(s: &str) -> bool {
    let parts: Vec<&str> = s.split('-').collect();
    if parts.len() != 3 {
        return false;
    }
    let (a, g, n) = (parts[0], parts[1], parts[2]);
    !(a == "000" || a == "666" || a.starts_with('9') || g == "00" || n == "0000")
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
    }
}

/// A date or a time at the start of a value ("2024-11-30", "2024 11 30", "10:00").
static DATE_LIKE: LazyLock<Regex> =
    LazyLock::new(|| re(r"^(?:(?:19|20)\d{2}[\- ./]\d{1,2}[\- ./]\d{1,2}|\d{1,2}:\d{2})"));

/// Eight digits that read as a date (YYYYMMDD).
static COMPACT_DATE: LazyLock<Regex> =
    LazyLock::new(|| re(r"^(?:19|20)\d{2}(?:0[1-9]|1[0-2])(?:0[1-9]|[12]\d|3[01])$"));

/// The shape of a rule about passwords rather than a password: a count with its unit ("6位",
/// "8个字符", "90天") or words of length and frequency.
static PASSWORD_RULE: LazyLock<Regex> = LazyLock::new(|| {
    re(r"\d+\s*(位|个字符|个字|字符|天|次|小时|个月|周)|至少|以上|以内|长度|定期|每")
});

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
            if !passes(det.check, t, m.start(), m.end(), m.as_str()) {
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
        check("AKIAIOSFODNN7EXAMPLE", &[(ApiKey, "AKIAIOSFODNN7EXAMPLE")]);
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
            kinds("aws secret key wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY for the build user"),
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

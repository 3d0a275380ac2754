//! The detector table: one regex per pattern of a sensitive kind, with the check its match
//! must pass ([`Check`]).

#[allow(unused_imports)]
use super::*;

#[derive(Clone, Copy)]
pub(super) enum Check {
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
    /// A Chinese mobile number, unless the words just before it name an order, shipment or
    /// invoice ("订单号18812345678", "order 15912345678").
    Mobile,
    /// A Hong Kong identity card number `A123456(7)` with a valid check digit.
    HkId,
    /// A Taiwan national ID `A123456789` with a valid check digit.
    TwId,
    /// Nine digits named as an SSN, with spaces, dashes or nothing between the groups.
    NamedSsn,
    /// A password given in prose ("the Wi-Fi password at home is X"): a digit or symbol, and
    /// not a URL or a path.
    ProsePassword,
    /// A password given in prose that may be plain letters ("the Wi-Fi password is sunshine,
    /// ask me"): a [`Check::ProsePassword`] value, or a word that is quoted, of mixed case, or
    /// ends its clause and is not a word that describes a password ("password is required.",
    /// "password is case sensitive", "password is stored in the vault").
    PlainPassword,
    /// "set her password to X": a [`Check::PlainPassword`] value, except that a capitalised
    /// plain word must be quoted ("changed the password to Netflix" names a service).
    PasswordTo,
    /// A passphrase of three to eight lower-case words ending its clause, none of them a
    /// function word or a word of a rule ("the passphrase is four random words"), and not
    /// starting with a word that describes one ("the passphrase was rotated last week").
    Passphrase,
    /// A named document number (passport, licence): 6-18 letters and digits, with at least 6
    /// digits, or at least one digit in a value of 8 or more characters (letter-heavy formats
    /// such as UK driving licences), and not a compact date.
    DocumentNumber,
    /// A Luhn-valid card number of any length 13-19 that the words just before name as a card
    /// ("银行卡号", "Diners card", "pan=").
    NamedCard,
    /// A `user / password` pair: the value has a digit or symbol, and neither side is a
    /// quantity ("12.5GB / 50GB", "85ms / 230ms").
    LoginPair,
    /// A UK National Insurance number with "NI", "NINO" or "National Insurance" just before.
    NamedNi,
    /// A spaced or dashed national number ([`Check::Landline`]) with a phone word just before
    /// ("call", "tel", "desk", "电话"): alone such digit groups are as often hex dumps, lottery
    /// draws or report numbers.
    NamedLandline,
    /// A spelled-out e-mail address ("kate dot lee at example dot com"): the local part is not
    /// an everyday word ("me", "us", "home").
    SpelledEmail,
}

pub(super) struct Detector {
    pub(super) kind: SensitiveKind,
    pub(super) re: Regex,
    pub(super) check: Check,
}

pub(super) fn re(p: &str) -> Regex {
    #[allow(clippy::expect_used)]
    Regex::new(p).expect("static sensitive-data pattern compiles")
}

pub(super) static DETECTORS: LazyLock<Vec<Detector>> = LazyLock::new(|| {
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
        // Vendor prefixes: Hugging Face, Stripe webhook secrets, SendGrid, GitLab, npm, Alibaba
        // Cloud and Tencent Cloud key ids.
        d(
            ApiKey,
            r"hf_[A-Za-z0-9]{30,}|whsec_[A-Za-z0-9+/=]{24,}|SG\.[A-Za-z0-9_\-]{16,}\.[A-Za-z0-9_\-]{16,}|glpat-[A-Za-z0-9_\-]{20,}|npm_[A-Za-z0-9]{30,}|LTAI[A-Za-z0-9]{12,24}|AKID[A-Za-z0-9]{13,40}",
            AlnumBounded,
        ),
        // The secret written after a key id and a slash ("LTAI.../ kWuE...").
        d(
            ApiKey,
            r"(?:LTAI|AKID|AKIA|ASIA)[A-Za-z0-9]{12,40}\s*/\s*(?P<v>[A-Za-z0-9/+]{24,48})",
            AlnumBounded,
        ),
        // An Azure storage account key inside a connection string.
        d(ApiKey, r"AccountKey=(?P<v>[A-Za-z0-9+/]{40,}={0,2})", None),
        // Webhook URLs carry their secret in the path: whoever has one can post.
        d(
            ApiKey,
            r"https?://(?:hooks\.slack\.com/(?:services|workflows|triggers)/[A-Za-z0-9/_\-]{10,}|(?:discord|discordapp)\.com/api/webhooks/\d+/[A-Za-z0-9_\-]{10,}|open\.(?:feishu\.cn|larksuite\.com)/open-apis/bot/v2/hook/[A-Za-z0-9\-]{10,}|oapi\.dingtalk\.com/robot/send\?access_token=[A-Za-z0-9]{16,}|qyapi\.weixin\.qq\.com/cgi-bin/webhook/send\?key=[A-Za-z0-9\-]{16,})",
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
            r#"(?i:api[_\- ]?key|apikey|app[_\- ]?(?:key|secret)|secret(?:[_\- ]?(?:key|id))?|access[_\- ]?(?:token|key)(?:[_\- ]?(?:id|secret))?|auth[_\- ]?token|client[_\- ]?secret|private[_\- ]?key|signing[_\- ]?secret|token|密钥|秘钥|令牌)["']?\s*(?:[:=：]|is|是|为)\s*["']?(?P<v>[A-Za-z0-9+/_\-.]{16,}={0,2})"#,
            HasDigit,
        ),
        // A bare 32+ character token after a key word ("token 0123...cdef"): letters and digits
        // only, so paths and snake_case names stay.
        d(
            ApiKey,
            r"(?i:api[_\- ]?key|secret ?key|secret|token|access ?key)\s+(?P<v>[A-Za-z0-9][A-Za-z0-9-]{31,})",
            LettersAndDigits,
        ),
        d(
            Password,
            r#"(?i:password|passwd|pwd|passcode|passphrase|pass phrase|pin code|wifi key)["']?\s*[:=：]\s*["'“]?(?P<v>[^\s"'”,，。;；]{3,64})"#,
            None,
        ),
        // Environment and config keys that end in PASS ("SMTP_PASS=...", "DB_PASSWD: ...").
        d(
            Password,
            r#"\b[A-Z0-9_]*_PASS(?:WORD|WD)?["']?\s*[:=]\s*["']?(?P<v>[^\s"',;]{3,64})"#,
            None,
        ),
        // Credentials in a URL: scheme://user:PASSWORD@host.
        d(
            Password,
            r"\b[a-z][a-z0-9+.\-]*://[^\s:/@]*:(?P<v>[^\s@/]{3,64})@[A-Za-z0-9.\-\[]",
            None,
        ),
        // Command lines: mysql -pPASS, sshpass -p PASS, redis-cli -a PASS, docker login -p PASS.
        d(
            Password,
            r#"(?:\b(?:mysql|mysqldump|mariadb)\b[^\n]*?\s-p|\bsshpass\s+-p\s*|\bredis-cli\b[^\n]*?\s-a\s+|\bdocker\s+login\b[^\n]*?\s(?:-p|--password)[\s=]+)["']?(?P<v>[^\s"']{3,64})"#,
            None,
        ),
        // A user and password pair after a login word ("my login is anna7 / Tr0ub4dor!").
        d(
            Password,
            r"(?i:login|credentials?|account|账号|账户)\b[^\n/]{0,40}?[A-Za-z0-9_.\-@]+\s+/\s+(?P<v>\S{4,64})",
            LoginPair,
        ),
        // In prose: "the Wi-Fi password at home is X", "password for Ann is X", "password 1234".
        d(
            Password,
            r#"(?i:password|passcode|passphrase|wi-?fi key)\b[^.\n:：=]{0,40}?\s(?:is|was)\s+(?:literally\s+|still\s+|now\s+|just\s+|simply\s+)?["'“‘`*]{0,2}(?P<v>[^\s"'”’`*\[][^\s"'”’`]{2,63}[^\s"'”’.,;:!?)–—`*\]…])"#,
            PlainPassword,
        ),
        // "she set her password to sunflower", "changed the Wi-Fi password to Tr0ub4dor".
        d(
            Password,
            r#"(?i:\b(?:set|changed?|updated?|reset)\b[^.\n]{0,30}?\b(?:password|passcode|passphrase)\s+to\s+)["'“‘`*]{0,2}(?P<v>[^\s"'”’`*\[][^\s"'”’`]{1,62}[^\s"'”’.,;:!?)–—`*\]…])"#,
            PasswordTo,
        ),
        d(
            Password,
            r#"(?i:passphrase|pass phrase)\b[^.\n:：=]{0,40}?\s(?:is|was)\s+["'“‘]?(?P<v>[a-z]+(?: [a-z]+){2,7})"#,
            Passphrase,
        ),
        d(
            Password,
            r"(?i:password|passwd|pwd|passcode)\s+(?P<v>[A-Za-z0-9!@#$%^&*_\-+=~]{4,64})",
            ProsePassword,
        ),
        d(
            Password,
            r#"(?i:password|passwd|pwd|passcode|passphrase)\s+(?:is|was|set to|changed to)\s*:?\s*["'“]?(?P<v>[^\s"'”,，。;；]{3,63}[^\s"'”,，。;；…])"#,
            HasDigitOrSymbol,
        ),
        // A PIN is digits ("my pin is 4921"); "the LED pin is GPIO17" is wiring.
        d(
            Password,
            r"(?i:\bpin\b(?: code| number)?)[^.\n]{0,30}?\s(?:is|was|set to|changed to)\s+(?:now\s+|still\s+)?(?P<v>\d{4,8})",
            DigitBounded,
        ),
        d(
            Password,
            r"(?i:\bpin\b)码?\s*(?:是|为|：|:|=)\s*(?P<v>\d{4,8})",
            DigitBounded,
        ),
        d(
            Password,
            r#"(?:密码|口令|登录密码|支付密码)\s*(?:是|为|：|:|=|设置为|设为|改成了?|改为)\s*[：:]?\s*["'“]?(?P<v>[A-Za-z0-9!@#$%^&*_\-.]{3,64})"#,
            None,
        ),
        // No word between ("初始密码 Welcome-6736", "密码abc12345", "改成了 abc520"): an ASCII
        // value with a digit or symbol.
        d(
            Password,
            r#"(?:密码|口令)(?:[^，。,.\n]{0,6}?(?:改成了?|改为))?\s*["'“]?(?P<v>[A-Za-z0-9!@#$%^&*_\-.~+=]{4,64})"#,
            ProsePassword,
        ),
        // A plain-letter value in Chinese prose ("备用密码就是“sunshine”", "WiFi密码是 dragon"),
        // held to the same words as English prose.
        d(
            Password,
            r#"(?:密码|口令)(?:也|就|还|都|应该|一般|现在)?(?:是|为)\s*["'“‘「]?(?P<v>[A-Za-z]{3,64})"#,
            PlainPassword,
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
        // Written to dodge scrapers: "ann.lee [at] example [dot] com", "bd(at)shop.cn",
        // "kate dot lee at yahoo dot com", "li 艾特 qq 点 com". The address must end in a common
        // top-level domain.
        d(
            Email,
            r"(?i)[a-z0-9._%+\-]+(?:\s+dot\s+[a-z0-9_%+\-]+)*(?:\s*(?:\[at\]|\(at\)|\{at\})\s*|\s+at\s+|\s*艾特\s*)[a-z0-9\-]+(?:(?:\s*(?:\[dot\]|\(dot\))\s*|\s+dot\s+|\s*点\s*|\.)[a-z0-9\-]+)*(?:\s*(?:\[dot\]|\(dot\))\s*|\s+dot\s+|\s*点\s*|\.)(?:com|net|org|edu|gov|io|co|cn|uk|de|fr|jp|kr|sg|hk|tw|au|in|info|biz|me|us|ca)\b",
            SpelledEmail,
        ),
        d(
            IdNumber,
            r"[1-9]\d{5}(?:19|20)\d{2}(?:0[1-9]|1[0-2])(?:0[1-9]|[12]\d|3[01])\d{3}[\dXx]",
            CnId,
        ),
        // Named as an ID number, an 18- or 15-digit number is one whatever its checksum.
        d(
            IdNumber,
            r"(?:身份证(?:号码|号|件号)?|居民身份证|证件号码?|(?i:\b(?:national id|id card|id (?:number|no\.?)|chinese id)))(?:[^\d\n]|\d{1,2}位){0,30}?(?P<v>\d{17}[\dXx]|\d{15})",
            DigitBounded,
        ),
        d(IdNumber, r"\d{3}-\d{2}-\d{4}", Ssn),
        d(
            IdNumber,
            r"(?i:ssn|social security(?: number| no\.?| #)?)[^\d\n]{0,12}?(?P<v>\d{3}[ \-]?\d{2}[ \-]?\d{4})",
            NamedSsn,
        ),
        d(IdNumber, r"[A-Z]{1,2}\d{6}\([0-9A]\)", HkId),
        d(IdNumber, r"[A-Z][12]\d{8}", TwId),
        // UK National Insurance numbers (the letters HMRC allocates).
        d(
            IdNumber,
            r"[A-CEGHJ-PR-TW-Z][A-CEGHJ-NPR-TW-Z] ?\d{2} ?\d{2} ?\d{2} ?[A-D]",
            NamedNi,
        ),
        // Passports, driving licences and ID fields named as such.
        d(
            IdNumber,
            r#"(?:(?i:passport|reisepass|driver'?s? licen[cs]e|driving licen[cs]e|licen[cs]e|id_no|id_number|passport_no)|护照|驾驶证|驾照)(?:\s*\)?\s*(?:(?i:no\.?|number|num\.?|nr\.?|#|is)|号码|号)?){0,2}["']?\s*[:：=]?\s*["'(（]?(?P<v>[A-Z0-9]{6,18})"#,
            DocumentNumber,
        ),
        d(
            CreditCard,
            r"\d{4}(?:[ \-]?\d{4}){3}|\d{4}[ \-]?\d{6}[ \-]?\d{5}",
            Luhn,
        ),
        // Other lengths (13-digit Visa, 14-digit Diners, 19-digit UnionPay) only where the text
        // names a card just before: a bare number of those lengths is more often an order id.
        d(
            CreditCard,
            r"\d{4}(?:[ \-]?\d{4}){3}[ \-]?\d{3}|\d{4}[ \-]\d{6}[ \-]\d{4}|\d{4} \d{4} \d{5}|\d{13,19}",
            NamedCard,
        ),
        d(
            Phone,
            r"(?:\+?86[\- ]?)?1[3-9]\d[\- ]?\d{4}[\- ]?\d{4}",
            Mobile,
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
            r"0\d{2,3}-\d{7,8}|\(0\d{2,4}\)\s?\d{3,4}[\- ]?\d{3,4}|\(0\d\)\s?\d{4} \d{4}",
            Landline,
        ),
        // Spaced national numbers: "020 7946 0958", "010 6234 5678", "0176 30246482",
        // "01 42 68 53 00", and dashed "010-3705-3983".
        d(
            Phone,
            r"0\d{2,3} \d{3,4} \d{4}|0\d{3} \d{6,8}|0\d(?: \d{2}){4}|0\d{1,2}-\d{3,4}-\d{4}",
            NamedLandline,
        ),
        // Named as a phone number.
        d(
            Phone,
            r"(?:\b(?i:phone(?: number)?|telephone|tel\.?|mobile|cell)|电话|手机|座机)(?:号码|号)?\s*(?:[:：]|是|为|(?i:is|number))?\s*(?P<v>\+?\d[\d \-()]{5,18}\d)",
            NamedPhone,
        ),
    ]
});

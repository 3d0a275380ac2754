//! Check digits of the numbers the detectors accept: Chinese resident IDs, credit cards (Luhn),
//! US SSNs, Hong Kong and Taiwan IDs.

#[allow(unused_imports)]
use super::*;

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

pub(super) fn ssn_ok(s: &str) -> bool {
    let parts: Vec<&str> = s.split('-').collect();
    if parts.len() != 3 {
        return false;
    }
    let (a, g, n) = (parts[0], parts[1], parts[2]);
    !(a == "000" || a == "666" || a.starts_with('9') || g == "00" || n == "0000")
}

/// Hong Kong identity card check digit: letters A-Z are 10-35 (a single letter is preceded by
/// a space worth 36), weights 9..2 over the first 8 characters, check = (11 - sum mod 11) mod 11,
/// 10 written `A`.
pub(super) fn hkid_ok(id: &str) -> bool {
    let Some((body, check)) = id.strip_suffix(')').and_then(|s| s.split_once('(')) else {
        return false;
    };
    let mut chars: Vec<u32> = Vec::with_capacity(8);
    let letters = body.chars().take_while(char::is_ascii_uppercase).count();
    if letters == 1 {
        chars.push(36);
    }
    for c in body.chars() {
        match c {
            'A'..='Z' => chars.push(c as u32 - 'A' as u32 + 10),
            '0'..='9' => chars.push(c as u32 - '0' as u32),
            _ => return false,
        }
    }
    if chars.len() != 8 {
        return false;
    }
    let sum: u32 = chars.iter().zip((2..=9).rev()).map(|(v, w)| v * w).sum();
    let expected = (11 - sum % 11) % 11;
    match check {
        "A" => expected == 10,
        d => d.parse::<u32>().is_ok_and(|d| d == expected),
    }
}

/// Taiwan national ID check digit: the letter maps to a two-digit code (A=10, ..., with the
/// official order), weights 1,9,8,...,1 over the 11 digits, sum divisible by 10.
pub(super) fn twid_ok(id: &str) -> bool {
    const LETTERS: &str = "ABCDEFGHJKLMNPQRSTUVXYWZIO";
    let mut chars = id.chars();
    let Some(first) = chars.next() else {
        return false;
    };
    let Some(code) = LETTERS.find(first).map(|i| i as u32 + 10) else {
        return false;
    };
    let digits: Vec<u32> = chars.filter_map(|c| c.to_digit(10)).collect();
    if digits.len() != 9 {
        return false;
    }
    let mut sum = code / 10 + (code % 10) * 9;
    for (d, w) in digits.iter().zip([8, 7, 6, 5, 4, 3, 2, 1, 1]) {
        sum += d * w;
    }
    sum % 10 == 0
}

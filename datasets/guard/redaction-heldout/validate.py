#!/usr/bin/env python3
"""Validate corpus.jsonl and print the counts tables used in README.md.

Python 3.11 stdlib only. Exit status 1 if any check fails.
Usage: python3 validate.py [--markdown]
"""
import json
import re
import sys
from collections import Counter, defaultdict
from pathlib import Path

HERE = Path(__file__).resolve().parent
TYPES = ["api_key", "password", "email", "id_number", "credit_card", "phone"]
LANGS = ["en", "zh"]
LETTERS_ONLY = re.compile(r"^[A-Za-z]+(?: [A-Za-z]+)*$")

CN_W = [7, 9, 10, 5, 8, 4, 2, 1, 6, 3, 7, 9, 10, 5, 8, 4, 2]
CN_M = "10X98765432"


def luhn_ok(d):
    s = 0
    for i, c in enumerate(reversed(d)):
        x = int(c)
        if i % 2 == 1:
            x *= 2
            if x > 9:
                x -= 9
        s += x
    return s % 10 == 0


def cnid_ok(s):
    return (len(s) == 18 and s[:17].isdigit()
            and CN_M[sum(int(a) * b for a, b in zip(s[:17], CN_W)) % 11] == s[17].upper())


EMAIL_RE = re.compile(r"[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}")
DIGITRUN_RE = re.compile(r"\d(?:[ -]?\d){12,18}")
CNID_RE = re.compile(r"(?<![0-9A-Za-z])\d{17}[0-9Xx](?![0-9A-Za-z])")
CNMOB_RE = re.compile(r"(?<!\d)1[3-9]\d{9}(?!\d)")
SSN_RE = re.compile(r"^(\d{3})[- ]?(\d{2})[- ]?(\d{4})$")


def check_value(typ, v):
    if typ == "credit_card":
        if not re.fullmatch(r"\d+(?:[ -]\d+)*", v):
            return "card has unexpected characters"
        d = re.sub(r"\D", "", v)
        if not 13 <= len(d) <= 19:
            return "card length"
        if not luhn_ok(d):
            return "card fails Luhn"
    elif typ == "id_number":
        if re.fullmatch(r"\d{17}[\dXx]", v):
            if not cnid_ok(v):
                return "CN id bad check digit"
        elif re.fullmatch(r"\d{3}([- ])\d{2}\1\d{4}", v):
            a, g, s = SSN_RE.match(v).groups()
            if a in ("000", "666") or a[0] == "9" or g == "00" or s == "0000":
                return "invalid SSN"
    elif typ == "phone":
        n = len(re.sub(r"\D", "", v))
        if not 7 <= n <= 15:
            return "phone digit count"
    elif typ == "email":
        if not any(t in v for t in ("@", "＠", " at ", "[at]", "(at)", "艾特", "#")):
            return "email without an at-marker"
    return None


def main():
    errors = []
    recs = []
    ids = set()
    texts = set()
    with open(HERE / "corpus.jsonl", encoding="utf-8") as f:
        for ln, line in enumerate(f, 1):
            try:
                r = json.loads(line)
            except json.JSONDecodeError as e:
                errors.append(f"line {ln}: bad JSON: {e}")
                continue
            recs.append(r)
            where = f"line {ln} ({r.get('id')})"
            if set(r) != {"id", "language", "text", "secrets", "hard_negative"}:
                errors.append(f"{where}: keys {sorted(r)}")
                continue
            if not re.fullmatch(r"fsec-\d{4}", r["id"]) or r["id"] in ids:
                errors.append(f"{where}: bad or duplicate id")
            ids.add(r["id"])
            if r["language"] not in LANGS:
                errors.append(f"{where}: language")
            t = r["text"]
            if not isinstance(t, str) or not t.strip():
                errors.append(f"{where}: empty text")
                continue
            if t in texts:
                errors.append(f"{where}: duplicate text")
            texts.add(t)
            if r["hard_negative"] is not (len(r["secrets"]) == 0):
                errors.append(f"{where}: hard_negative must be true iff no secrets")
            spans = []
            seen_vals = set()
            for s in r["secrets"]:
                if set(s) != {"type", "value"} or s["type"] not in TYPES:
                    errors.append(f"{where}: bad secret {s}")
                    continue
                v = s["value"]
                if v in seen_vals:
                    errors.append(f"{where}: duplicate value {v!r}")
                seen_vals.add(v)
                if not v or t.count(v) != 1:
                    errors.append(f"{where}: value {v!r} occurs {t.count(v)} times")
                    continue
                if v != v.strip():
                    errors.append(f"{where}: value has outer whitespace {v!r}")
                i = t.index(v)
                spans.append((i, i + len(v)))
                msg = check_value(s["type"], v)
                if msg:
                    errors.append(f"{where}: {msg}: {v!r}")
            for a in range(len(spans)):
                for b in range(a + 1, len(spans)):
                    if spans[a][0] < spans[b][1] and spans[b][0] < spans[a][1]:
                        errors.append(f"{where}: overlapping values")

            def ov(sp):
                return any(sp[0] < b and a < sp[1] for a, b in spans)

            # nothing secret-shaped may be left unlabelled
            for m in EMAIL_RE.finditer(t):
                if not ov(m.span()):
                    errors.append(f"{where}: unlabelled email-like {m.group(0)!r}")
            for m in DIGITRUN_RE.finditer(t):
                d = re.sub(r"\D", "", m.group(0))
                if 13 <= len(d) <= 19 and luhn_ok(d) and not ov(m.span()):
                    errors.append(f"{where}: unlabelled Luhn-valid run {m.group(0)!r}")
            for m in CNID_RE.finditer(t):
                if cnid_ok(m.group(0)) and not ov(m.span()):
                    errors.append(f"{where}: unlabelled valid CN id {m.group(0)!r}")
            for m in CNMOB_RE.finditer(t):
                if not ov(m.span()):
                    errors.append(f"{where}: unlabelled CN mobile {m.group(0)!r}")

    # ---- counts
    texts_by = defaultdict(Counter)   # type -> lang -> texts
    vals_by = Counter()               # type -> values
    pos = Counter()
    neg = Counter()
    multi = Counter()
    pw_letters = 0
    pw_vals = 0
    pw_letters_texts = set()
    for r in recs:
        lang = r["language"]
        if r["hard_negative"]:
            neg[lang] += 1
            continue
        pos[lang] += 1
        types = {s["type"] for s in r["secrets"]}
        if len(types) >= 2:
            multi[lang] += 1
        for ty in types:
            texts_by[ty][lang] += 1
        for s in r["secrets"]:
            vals_by[s["type"]] += 1
            if s["type"] == "password":
                pw_vals += 1
                if LETTERS_ONLY.match(s["value"]):
                    pw_letters += 1
                    pw_letters_texts.add(r["id"])

    shapes = Counter()
    for r in recs:
        for s in r["secrets"]:
            if s["type"] != "password":
                continue
            v = s["value"]
            if re.fullmatch(r"[A-Za-z]+", v):
                shapes["letters only, one token (word, run-together words, pet name, pinyin)"] += 1
            elif LETTERS_ONLY.match(v):
                shapes["letters only, words separated by spaces (passphrase)"] += 1
            elif v.isdigit():
                shapes["digits only (PIN, door/alarm code, passcode, birthday)"] += 1
            else:
                shapes["mixed letters/digits/symbols"] += 1
    email_obf = sum(1 for r in recs for s in r["secrets"] if s["type"] == "email" and "@" not in s["value"])

    md = "--markdown" in sys.argv
    print("| type | texts en | texts zh | texts all | labelled values |")
    print("|---|---:|---:|---:|---:|")
    for ty in TYPES:
        c = texts_by[ty]
        print(f"| {ty} | {c['en']} | {c['zh']} | {c['en'] + c['zh']} | {vals_by[ty]} |")
    print(f"| **all types** | | | | {sum(vals_by.values())} |")
    print()
    print("| language | positives | hard negatives | texts with 2+ types | total |")
    print("|---|---:|---:|---:|---:|")
    for lang in LANGS:
        print(f"| {lang} | {pos[lang]} | {neg[lang]} | {multi[lang]} | {pos[lang] + neg[lang]} |")
    tp, tn = sum(pos.values()), sum(neg.values())
    print(f"| all | {tp} | {tn} | {sum(multi.values())} | {tp + tn} |")
    print()
    print(f"password values: {pw_vals}; made only of ASCII letters (optionally single-space-separated words): "
          f"{pw_letters} values in {len(pw_letters_texts)} texts")
    print()
    print("| password value shape | values |")
    print("|---|---:|")
    for k, n in shapes.most_common():
        print(f"| {k} | {n} |")
    print()
    print(f"email values written without a plain ASCII '@' (obfuscated / full-width): {email_obf}")
    if not md:
        print()
        print(f"records: {len(recs)}; errors: {len(errors)}")
    for e in errors:
        print("ERROR", e, file=sys.stderr)
    sys.exit(1 if errors else 0)


if __name__ == "__main__":
    main()

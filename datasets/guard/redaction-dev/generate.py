#!/usr/bin/env python3
"""Generate datasets/secrets-dev/corpus.jsonl, a labelled DEVELOPMENT set for redaction.

Standard library only; one seeded random.Random, so the output is byte-identical on
every run.  All secret values are invented here at random with a realistic shape;
none is copied from a real key, card or ID.  Run from anywhere:

    python3 datasets/secrets-dev/generate.py
"""
import base64
import datetime
import json
import os
import random
import re
import string
import sys
import time
import uuid

SEED = 20261203
R = random.Random(SEED)
HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "corpus.jsonl")

DIG = string.digits
UP = string.ascii_uppercase
LOW = string.ascii_lowercase
ALNUM = string.ascii_letters + DIG
URLSAFE = ALNUM + "-_"
B64 = ALNUM + "+/"
HEX = "0123456789abcdef"
TYPES = ["api_key", "password", "email", "id_number", "credit_card", "phone"]


def rs(n, alphabet=ALNUM):
    return "".join(R.choice(alphabet) for _ in range(n))


def digits(n):
    return rs(n, DIG)


def pick(seq):
    return R.choice(seq)


# --------------------------------------------------------------------------- checks
def luhn_ok(num):
    total = 0
    for i, ch in enumerate(reversed(num)):
        d = int(ch)
        if i % 2 == 1:
            d *= 2
            if d > 9:
                d -= 9
        total += d
    return total % 10 == 0


def luhn_make(prefix, length):
    body = prefix + digits(length - len(prefix) - 1)
    for c in DIG:
        if luhn_ok(body + c):
            return body + c
    raise AssertionError


def luhn_break(num):
    """Return num unchanged if Luhn-invalid, else with the last digit bumped (invalid)."""
    if luhn_ok(num):
        num = num[:-1] + str((int(num[-1]) + 1) % 10)
    assert not luhn_ok(num)
    return num


ID_W = [7, 9, 10, 5, 8, 4, 2, 1, 6, 3, 7, 9, 10, 5, 8, 4, 2]
ID_CHK = "10X98765432"


def cn_id_check(body17):
    return ID_CHK[sum(int(a) * b for a, b in zip(body17, ID_W)) % 11]


def cn_id_valid(s):
    return len(s) == 18 and s[:17].isdigit() and cn_id_check(s[:17]) == s[17].upper()


def safe_digits(n, prefix=""):
    """A digit string that is not Luhn-valid (when card-length) and not a valid 18-digit ID."""
    while True:
        s = prefix + digits(n - len(prefix))
        if 13 <= n <= 19:
            s = luhn_break(s)
        if n == 18 and cn_id_valid(s):
            continue
        return s


# --------------------------------------------------------------------------- fillers
FIRST = ["alice", "marcus", "priya", "tom", "sofia", "daniel", "hannah", "lucas", "emily", "javier",
         "aisha", "oliver", "mei", "noah", "grace", "ethan", "chloe", "ravi", "laura", "sam", "kate",
         "omar", "nina", "leo", "zoe", "felix", "iris", "jonas", "maya", "victor"]
LAST = ["nguyen", "bell", "raman", "okafor", "rossi", "kim", "weber", "moreau", "carter", "ortega",
        "khan", "grant", "lin", "fischer", "park", "brooks", "martin", "patel", "jensen", "whitfield",
        "schmidt", "dubois", "tanaka", "silva", "nolan", "haddad", "novak", "larsen", "costa", "reyes"]
PINYIN = ["wangfang", "liwei", "zhangmin", "liuyang", "chenjing", "yangfan", "zhaolei", "huangli",
          "zhoujie", "wuting", "xuming", "sunyue", "hubin", "zhulin", "gaoxiang", "linxiao", "heping",
          "guoqian", "machao", "luojuan", "wang_fang", "li.na", "zhang_wei", "chen.hao"]
ZH_NAMES = ["王芳", "李伟", "张敏", "刘洋", "陈静", "杨帆", "赵磊", "黄丽", "周杰", "吴婷", "徐明", "孙悦",
            "胡斌", "朱琳", "高翔", "林晓", "何平", "郭倩", "马超", "罗娟", "宋雨", "郑凯", "谢婉", "韩冰"]
FREE_DOMAINS = ["gmail.com", "outlook.com", "yahoo.com", "hotmail.com", "icloud.com", "proton.me",
                "aol.com", "gmx.de", "yahoo.co.uk", "fastmail.com"]
CN_DOMAINS = ["qq.com", "163.com", "126.com", "sina.com", "foxmail.com", "aliyun.com", "139.com", "sohu.com"]
CORP_DOMAINS = ["northwind-logistics.com", "bluefin.io", "larkspurhealth.org", "tidewaterbank.co.uk",
                "juniper-schools.edu", "crestline-retail.com", "orbitalfoods.net", "halcyon-travel.com",
                "xinghe-tech.cn", "lanjing56.com", "yunfan-edu.cn", "huaxin-med.com.cn", "dingsheng-trade.cn",
                "qinghe-shop.com", "maplecrest.dev", "ferrous-labs.io"]
ONE_DOT = ["gmail.com", "outlook.com", "proton.me", "icloud.com", "bluefin.io", "orbitalfoods.net",
           "maplecrest.dev", "fastmail.com", "yahoo.com", "hotmail.com"]
ONE_DOT_CN = ["qq.com", "163.com", "126.com", "sina.com", "foxmail.com", "xinghe-tech.cn", "yunfan-edu.cn"]
COMPANIES = ["Northwind Logistics", "Bluefin Analytics", "Larkspur Health", "Tidewater Bank",
             "Juniper Schools", "Crestline Retail", "Orbital Foods", "Halcyon Travel", "Ferrous Labs"]
COMPANIES_ZH = ["星河科技", "蓝鲸物流", "云帆教育", "华信医疗", "鼎盛商贸", "青禾电商", "远航旅行社", "晨光制药"]
CITIES = ["Austin", "Seattle", "Denver", "Boston", "Chicago", "Portland", "Toronto", "Manchester",
          "Lyon", "Munich", "Melbourne", "Dublin"]
CITIES_ZH = ["北京", "上海", "广州", "深圳", "杭州", "成都", "武汉", "南京", "西安", "苏州", "重庆", "厦门"]
ROADS_ZH = ["建国路", "世纪大道", "体育西路", "科技园南路", "文三路", "人民南路", "中山北路", "长安街"]
BANKS_ZH = ["招商银行", "工商银行", "建设银行", "农业银行", "中国银行", "交通银行", "浦发银行"]
TEAMS_ZH = ["支付", "订单", "基础架构", "数据平台", "风控", "客服系统"]
DBUSERS = ["app_user", "svc_billing", "postgres", "admin_ro", "etl", "orders_rw", "reporting", "crm_app"]
DBNAMES = ["orders", "crm_prod", "billing", "analytics", "inventory", "hr_core", "lms", "shop"]
ORGS = ["northwind", "bluefin-data", "larkspur", "orbital-foods", "ferrous-labs", "xinghe", "lanjing"]
REPOS = ["api-gateway", "billing-service", "infra", "web-frontend", "etl-jobs", "mobile-app", "docs"]
ROLES = ["deploy-ci", "ReadOnlyAudit", "lambda-exec", "eks-node", "backup-operator"]
WORDS = ["orbit", "lantern", "maple", "quietly", "copper", "violin", "marsh", "eleven", "harbor", "velvet",
         "pepper", "salt", "garden", "thunder", "pickle", "saturn", "meadow", "falcon", "biscuit", "glacier",
         "tundra", "walnut", "ember", "zigzag", "oyster", "canyon", "noodle", "prism", "cobalt", "juniper",
         "radish", "puzzle", "sparrow", "lemon", "anchor", "blanket"]
PW_WORDS = ["sunshine", "dragon", "football", "monkey", "shadow", "princess", "baseball", "superman",
            "pumpkin", "butterfly", "chocolate", "elephant", "rainbow", "cowboy", "mustang", "tigger",
            "penguin", "banana", "whisky", "hockey", "cheese", "kitten", "soccer", "starwars"]
POEM = ["床前明月光", "春眠不觉晓", "白日依山尽", "海上生明月", "千山鸟飞绝", "独在异乡为异客", "桃花潭水深千尺"]


def d_between(y0, y1):
    a = datetime.date(y0, 1, 1).toordinal()
    b = datetime.date(y1, 12, 31).toordinal()
    return datetime.date.fromordinal(R.randint(a, b))


def f_date():
    d = d_between(2024, 2026)
    return d.strftime(pick(["%Y-%m-%d", "%b %d, %Y", "%d %B %Y", "%m/%d/%Y"])).replace(" 0", " ")


def f_date_zh():
    d = d_between(2024, 2026)
    return f"{d.year}年{d.month}月{d.day}日"


def f_dob():
    return d_between(1950, 2004).strftime("%Y-%m-%d")


def f_host():
    return pick([
        f"db-{pick(['prod', 'stg', 'dev'])}-{R.randint(1, 9):02d}.internal",
        "pg-main.svc.cluster.local",
        f"mysql-replica-{R.randint(1, 4)}.internal",
        f"10.{R.randint(0, 40)}.{R.randint(0, 255)}.{R.randint(2, 250)}",
        f"rds-{pick(DBNAMES)}.{rs(10, LOW + DIG)}.us-east-1.rds.amazonaws.com",
        "db-primary.prod.local",
        f"172.{R.randint(16, 31)}.{R.randint(0, 255)}.{R.randint(2, 250)}",
        f"db.staging.{pick(CORP_DOMAINS)}",
    ])


def f_ip():
    return pick([f"10.{R.randint(0, 255)}.{R.randint(0, 255)}.{R.randint(2, 254)}",
                 f"192.168.{R.randint(0, 10)}.{R.randint(2, 254)}",
                 f"172.{R.randint(16, 31)}.{R.randint(0, 255)}.{R.randint(2, 254)}"])


def f_uname():
    f, l = pick(FIRST), pick(LAST)
    return pick([f"{f}.{l}", f"{f[0]}{l}", f"{f}{R.randint(1, 99)}", f"{l}_{f[0]}"])


def f_uuid():
    return str(uuid.UUID(int=R.getrandbits(128), version=4))


def f_version():
    return pick([f"{R.randint(1, 4)}.{R.randint(0, 30)}.{R.randint(0, 20)}",
                 f"v{R.randint(1, 3)}.{R.randint(0, 40)}.{R.randint(0, 12)}",
                 f"{R.randint(1, 9)}.{R.randint(0, 9)}.{R.randint(0, 9)}-rc.{R.randint(1, 4)}"])


def f_iso_ts():
    d = d_between(2024, 2026)
    return f"{d.isoformat()}T{R.randint(0, 23):02d}:{R.randint(0, 59):02d}:{R.randint(0, 59):02d}Z"


def f_isbn():
    while True:
        body = "978" + pick(["7", "0", "1", "3"]) + digits(8)
        s = sum(int(c) * (1 if i % 2 == 0 else 3) for i, c in enumerate(body))
        full = body + str((10 - s % 10) % 10)
        if not luhn_ok(full):
            break
    if R.random() < 0.7:
        return f"{full[:3]}-{full[3]}-{full[4:7]}-{full[7:12]}-{full[12]}"
    return full


def f_uscc():
    """Unified social credit code (GB 32100): letters present, valid own check char."""
    cs = "0123456789ABCDEFGHJKLMNPQRTUWXY"
    w = [1, 3, 9, 27, 19, 26, 16, 17, 20, 29, 25, 13, 8, 24, 10, 30, 28]
    region = pick(["110105", "310115", "440300", "330106", "510107", "320506"])
    body = "91" + region + "MA" + rs(7, cs)
    c = 31 - sum(cs.index(ch) * wt for ch, wt in zip(body, w)) % 31
    return body + cs[0 if c == 31 else c]


def f_masked_key():
    return pick([f"sk-…{rs(4, HEX)}", f"sk-proj-••••••••{rs(4)}", f"AKIA************{rs(4, UP + DIG)}",
                 f"ghp_****************************{rs(4)}", f"sk_live_...{rs(4)}", f"{rs(4, LOW)}…{rs(4, HEX)}"])


def f_masked_card():
    last = digits(4)
    return pick([f"**** **** **** {last}", f"•••• •••• •••• {last}", f"XXXX-XXXX-XXXX-{last}",
                 f"6222 **** **** {last}", f"4{digits(3)} **** **** {last}", f"************{last}"])


def f_room():
    return pick([f"B-{R.randint(1, 20)}{R.randint(1, 30):02d}", f"{R.randint(2, 12)}F-{R.randint(101, 330)}",
                 f"{R.randint(1101, 4820)}", f"A{R.randint(101, 609)}"])


def f_coords():
    lat, lon = R.uniform(-40, 60), R.uniform(-120, 140)
    return pick([f"{lat:.4f}, {lon:.4f}", f"{abs(lat):.4f}° {'N' if lat >= 0 else 'S'}, {abs(lon):.4f}° {'E' if lon >= 0 else 'W'}"])


def f_meeting():
    d = digits(10) if R.random() < 0.4 else pick(["8", "9"]) + digits(10)
    if len(d) == 10:
        return f"{d[:3]} {d[3:6]} {d[6:]}"
    return f"{d[:3]} {d[3:7]} {d[7:]}"


def f_ssh_pub():
    return f"ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAI{rs(43, B64)} {pick(['deploy', 'ops', pick(FIRST)])}@{pick(['bastion-01', 'laptop', 'ci-runner', 'mbp-2023'])}"


def f_order11():
    return pick(["13", "15", "18"]) + digits(9)


def f_waybill18():
    while True:
        if R.random() < 0.5:  # shaped like an ID (region + birth date) but fails the checksum
            s = pick(["110101", "310104", "440305", "510107"]) + d_between(1960, 2000).strftime("%Y%m%d") + digits(4)
        else:
            s = pick(["7", "4", "3", "9"]) + digits(17)
        if not cn_id_valid(s) and not luhn_ok(s):
            return s


def f_order_long():
    n = R.randint(15, 19)
    return safe_digits(n, prefix=pick(["2024", "2025", "2026", ""]) if n >= 16 else "")


FILLERS = {
    "date": f_date, "date_zh": f_date_zh, "dob": f_dob,
    "name": lambda: f"{pick(FIRST).title()} {pick(LAST).title()}",
    "first_t": lambda: pick(FIRST).title(),
    "name_zh": lambda: pick(ZH_NAMES), "team_zh": lambda: pick(TEAMS_ZH),
    "company": lambda: pick(COMPANIES), "company_zh": lambda: pick(COMPANIES_ZH),
    "city": lambda: pick(CITIES), "city_zh": lambda: pick(CITIES_ZH),
    "district_zh": lambda: pick(ROADS_ZH) + f"{R.randint(1, 300)}号" + pick(["", "3栋1单元", "B座1203室", "院内"]),
    "bank": lambda: pick(BANKS_ZH),
    "domain": lambda: pick(CORP_DOMAINS), "domain_cn": lambda: pick(["xinghe-tech.cn", "lanjing56.com", "yunfan-edu.cn", "qinghe-shop.com"]),
    "acct": lambda: pick(["prodbackups", "nwlogs", "bluefinstore", "larkspurarchive"]) + digits(2),
    "dbuser": lambda: pick(DBUSERS), "dbname": lambda: pick(DBNAMES), "host": f_host, "ip": f_ip,
    "uname": f_uname, "rand5": lambda: rs(5, LOW + DIG),
    "ssid": lambda: pick([f"ChinaNet-{rs(4, UP + DIG)}", f"TP-LINK_5G_{rs(4, UP + DIG)}", f"Xiaomi_{rs(4, UP + DIG)}", "CMCC-Home"]),
    "exp": lambda: f"{R.randint(1, 12):02d}/{R.randint(26, 31)}",
    # hard-negative look-alikes
    "n_order11": f_order11, "n_order_long": f_order_long, "n_waybill18": f_waybill18,
    "n_sf": lambda: "SF" + safe_digits(13), "n_yt": lambda: "YT" + safe_digits(13),
    "n_ups": lambda: "1Z" + rs(6, UP + DIG) + digits(10),
    "n_jd_order": lambda: safe_digits(12, "3"),
    "n_invoice": lambda: f"INV-{R.randint(2024, 2026)}-{digits(5)}",
    "n_ticket": lambda: pick([f"SUP-{R.randint(1000, 9999)}", f"#{R.randint(10000, 99999)}",
                              f"CS-{d_between(2024, 2026).strftime('%Y%m%d')}-{digits(4)}", f"ZD#{R.randint(100000, 999999)}"]),
    "n_ticket_zh": lambda: "GD" + d_between(2024, 2026).strftime("%Y%m%d") + digits(4),
    "n_case": lambda: "0" + digits(7), "n_inc": lambda: f"INC-{R.randint(1000, 99999)}",
    "n_uuid": f_uuid, "n_gitsha": lambda: rs(40, HEX), "n_gitsha_short": lambda: rs(7, HEX),
    "n_sha256": lambda: rs(64, HEX), "n_md5": lambda: rs(32, HEX),
    "n_image_digest": lambda: f"{pick(['ghcr.io/northwind/api', 'registry.example.internal/shop/web', 'docker.io/library/postgres'])}@sha256:{rs(64, HEX)}",
    "n_sshfp": lambda: "SHA256:" + rs(43, B64), "n_ssh_pub": f_ssh_pub,
    "n_stripe_ch": lambda: "ch_3" + rs(23), "n_stripe_cus": lambda: "cus_" + rs(14),
    "n_stripe_pi": lambda: "pi_3" + rs(23), "n_stripe_pm": lambda: "pm_1" + rs(23),
    "n_aws_acct": lambda: str(R.randint(1, 9)) + digits(11), "n_role": lambda: pick(ROLES),
    "n_vpc": lambda: "vpc-0" + rs(16, HEX),
    "n_version": f_version, "n_iso_ts": f_iso_ts,
    "n_epoch_ms": lambda: luhn_break(str(R.randint(1_700_000_000_000, 1_790_000_000_000))),
    "n_epoch": lambda: str(R.randint(1_700_000_000, 1_790_000_000)),
    "n_isbn": f_isbn, "n_ip": lambda: pick([f_ip(), f"{R.randint(20, 220)}.{R.randint(0, 255)}.{R.randint(0, 255)}.{R.randint(1, 254)}"]),
    "n_port": lambda: str(pick([5432, 6379, 8080, 8443, 9200, 27017, 3306, R.randint(10000, 40000)])),
    "n_mac": lambda: ":".join(rs(2, HEX) for _ in range(6)).upper() if R.random() < 0.5 else "-".join(rs(2, HEX) for _ in range(6)),
    "n_room": f_room, "n_coords": f_coords, "n_masked_card": f_masked_card, "n_masked_key": f_masked_key,
    "n_masked_phone_cn": lambda: pick(["138", "139", "186", "159", "177"]) + "****" + digits(4),
    "n_masked_phone_us": lambda: f"(***) ***-{digits(4)}",
    "n_uscc": f_uscc, "n_color": lambda: "#" + rs(6, HEX), "n_percent": lambda: f"{R.randint(1, 60)}.{R.randint(0, 9)}%",
    "n_price": lambda: pick([f"${R.randint(10, 9999):,}.{digits(2)}", f"€{R.randint(5, 999)},{digits(2)}", f"£{R.randint(5, 2000)}.{digits(2)}"]),
    "n_price_cny": lambda: pick([f"¥{R.randint(10, 9999):,}.00", f"{R.randint(9, 8999)}元", f"￥{R.randint(10, 999)}.{digits(2)}"]),
    "n_meeting": f_meeting,
    "n_meeting_tx": lambda: (lambda d: pick([f"{d[:3]} {d[3:6]} {d[6:]}", f"{d[:3]}-{d[3:6]}-{d[6:]}"]))(str(R.randint(1, 9)) + digits(8)),
    "n_ext": lambda: str(R.randint(100, 8999)), "n_4d": lambda: digits(4), "n_small": lambda: str(R.randint(2, 500)),
    "n_month": lambda: str(R.randint(1, 12)), "n_pr": lambda: str(R.randint(100, 9999)),
    "n_build": lambda: pick([f"#{R.randint(1000, 9999)}", f"{R.randint(2024, 2026)}.{R.randint(1, 12)}.{R.randint(1, 9)}-rc{R.randint(1, 3)}"]),
    "n_org": lambda: pick(ORGS), "n_repo": lambda: pick(REPOS),
    "n_prompt": lambda: pick(["deploy@web-03", "ubuntu@ip-10-0-3-17", "root@bastion", "ops@build-agent-2"]),
    "n_mention": lambda: pick(FIRST) + pick(["", "-dev", "_ops", str(R.randint(1, 99))]),
    "n_student_id": lambda: str(R.randint(2020, 2025)) + digits(6),
    "n_class": lambda: pick(["计算机2班", "高二(3)班", "会计1班", "临床医学5班"]),
    "n_reg": lambda: "GH" + digits(10), "n_contract": lambda: f"HT-{R.randint(2024, 2026)}-{digits(4)}",
    "n_fapiao": lambda: digits(8),
    "n_container": lambda: rs(12, HEX), "n_gpgid": lambda: rs(16, "0123456789ABCDEF"),
    "n_lot": lambda: rs(2, UP) + digits(4), "n_emp": lambda: "E" + digits(5),
    "n_flight": lambda: pick(["CA", "MU", "CZ", "BA", "LH", "UA", "SQ"]) + str(R.randint(100, 9899)),
    "n_gate": lambda: pick("ABCDE") + str(R.randint(1, 60)), "n_pnr": lambda: rs(6, "ABCDEFGHJKLMNPQRSTUVWXYZ23456789"),
    "n_lab": lambda: "LAB-" + digits(8), "n_zip": lambda: pick(["100020", "200120", "510620", "518057", "310012", "610041"]),
    "n_masked_id": lambda: pick(CN_REGIONS) + "********" + digits(3) + pick("0123456789X"),
    "n_grafana": lambda: rs(9, ALNUM), "n_p95": lambda: str(R.randint(120, 900)), "n_fapiao_code": lambda: "0" + digits(11),
}

# --------------------------------------------------------------------------- secret generators
def jwt():
    def b64u(obj):
        raw = json.dumps(obj, separators=(",", ":")).encode()
        return base64.urlsafe_b64encode(raw).decode().rstrip("=")
    iat = R.randint(1_700_000_000, 1_780_000_000)
    head = b64u({"alg": pick(["HS256", "RS256"]), "typ": "JWT"})
    body = b64u({"sub": f"usr_{rs(10, LOW + DIG)}", "iat": iat, "exp": iat + pick([900, 3600, 86400]),
                 "scope": pick(["orders:read", "admin", "read write", "billing:*"])})
    return f"{head}.{body}.{rs(43, URLSAFE)}"


def azure_key():
    return base64.b64encode(bytes(R.getrandbits(8) for _ in range(64))).decode()


def b64_token():
    return base64.b64encode(bytes(R.getrandbits(8) for _ in range(32))).decode()


AWS_ID = UP + "234567"
API_GENS = {
    "k_openai": lambda: "sk-" + (rs(48) if R.random() < 0.5 else rs(20) + "T3BlbkFJ" + rs(20)),
    "k_openai_proj": lambda: "sk-proj-" + rs(R.randint(100, 156), URLSAFE),
    "k_anthropic": lambda: "sk-ant-api03-" + rs(93, URLSAFE) + "AA",
    "k_stripe_live": lambda: "sk_live_" + (rs(24) if R.random() < 0.5 else "51" + rs(97)),
    "k_stripe_test": lambda: "sk_test_" + (rs(24) if R.random() < 0.5 else "51" + rs(97)),
    "k_stripe_rk": lambda: "rk_live_" + (rs(24) if R.random() < 0.5 else "51" + rs(97)),
    "k_ghp": lambda: "ghp_" + rs(36), "k_gho": lambda: "gho_" + rs(36), "k_ghs": lambda: "ghs_" + rs(36),
    "k_ghpat": lambda: "github_pat_11" + rs(20, UP + DIG) + "_" + rs(59),
    "k_glpat": lambda: "glpat-" + rs(20, URLSAFE),
    "k_xoxb": lambda: f"xoxb-{digits(pick([11, 12]))}-{digits(13)}-{rs(24)}",
    "k_xoxp": lambda: f"xoxp-{digits(12)}-{digits(12)}-{digits(13)}-{rs(32, HEX)}",
    "k_akia": lambda: "AKIA" + rs(16, AWS_ID), "k_asia": lambda: "ASIA" + rs(16, AWS_ID),
    "k_aws_secret": lambda: rs(40, B64),
    "k_google": lambda: "AIzaSy" + rs(33, URLSAFE),
    "k_hf": lambda: "hf_" + rs(34, string.ascii_letters),
    "k_sendgrid": lambda: "SG." + rs(22, URLSAFE) + "." + rs(43, URLSAFE),
    "k_npm": lambda: "npm_" + rs(36),
    "k_twilio_sk": lambda: "SK" + rs(32, HEX),
    "k_azure": azure_key,
    "k_ali_id": lambda: "LTAI5t" + rs(18), "k_ali_secret": lambda: rs(30),
    "k_tc_id": lambda: "AKID" + rs(32), "k_tc_secret": lambda: rs(32),
    "k_hex32": lambda: rs(32, HEX), "k_hex40": lambda: rs(40, HEX), "k_hex64": lambda: rs(64, HEX),
    "k_opaque32": lambda: rs(32), "k_opaque40": lambda: rs(40, URLSAFE), "k_b64": b64_token,
    "k_sk_hex32": lambda: "sk-" + rs(32, HEX),
    "k_zhipu": lambda: rs(32, HEX) + "." + rs(16),
    "k_qiniu": lambda: rs(40, URLSAFE),
    "k_jwt": jwt,
    "k_whsec": lambda: "whsec_" + rs(32),
    "k_mailgun": lambda: "key-" + rs(32, HEX),
    "k_vault": lambda: "hvs." + rs(24),
    "k_slack_hook": lambda: f"https://hooks.slack.com/services/T{rs(8, UP + DIG)}/B{rs(10, UP + DIG)}/{rs(24)}",
    "k_discord_hook": lambda: f"https://discord.com/api/webhooks/1{digits(18)}/{rs(68, URLSAFE)}",
    "k_feishu_hook": lambda: "https://open.feishu.cn/open-apis/bot/v2/hook/" + f_uuid(),
    "k_dingtalk_hook": lambda: "https://oapi.dingtalk.com/robot/send?access_token=" + rs(64, HEX),
    "k_wecom_hook": lambda: "https://qyapi.weixin.qq.com/cgi-bin/webhook/send?key=" + f_uuid(),
}

PW_SYM = "!@#$%^&*_-+=?.~"


def pw_complex():
    n = R.randint(10, 18)
    chars = [pick(UP), pick(LOW), pick(DIG), pick(PW_SYM)] + [pick(ALNUM + PW_SYM) for _ in range(n - 4)]
    R.shuffle(chars)
    return pick(string.ascii_letters) + "".join(chars)


def pw_from(alphabet, lo=10, hi=16):
    n = R.randint(lo, hi)
    chars = [pick(UP), pick(LOW), pick(DIG)] + [pick(alphabet) for _ in range(n - 3)]
    R.shuffle(chars)
    return pick(string.ascii_letters) + "".join(chars)


def pw_word():
    return pick(PW_WORDS)


def pw_wordnum():
    return (pick(PW_WORDS).title() + pick(["", "@", "#", "_", "."]) + str(pick([R.randint(1, 99), R.randint(1970, 2025), R.randint(100, 9999)]))
            + pick(["", "!", "?", "$", "*"]))


def pw_quote():
    w1, w2, w3 = pick(WORDS), pick(WORDS), pick(WORDS)
    return pick([f"{w1.title()}'s\"{w2}\"{R.randint(10, 99)}!",
                 f"{w1} & {w2}'s #{R.randint(1, 99)}",
                 f"{w1.title()} {w2} {w3}?{R.randint(1, 9)}"])


def pw_wifi():
    return pick([f"{pick(WORDS)}-{pick(WORDS)}-{R.randint(10, 9999)}", pw_wordnum(), rs(R.randint(8, 12), LOW + DIG),
                 f"{pick(WORDS).title()}{pick(WORDS).title()}{R.randint(1, 99)}"])


def pw_pinyin():
    p = ctx_pinyin() or pick([x for x in PINYIN if "." not in x])
    if R.random() < 0.3:
        p = p.title()
    return p + pick([str(R.randint(1970, 2005)), f"{R.randint(1, 12):02d}{R.randint(1, 28):02d}", "520", "1314",
                     f"@{R.randint(1970, 2005)}", f"_{digits(3)}", f"@{digits(6)}", "!" + digits(4)])


def pw_temp():
    return pick([f"Welcome-{digits(4)}", f"Temp#{R.randint(2024, 2026)}{rs(2, LOW)}",
                 f"Start{pick(['Jan', 'Mar', 'Jun', 'Sep', 'Nov'])}{R.randint(10, 31)}!", f"Chg{rs(3, UP)}{digits(3)}$"])


PW_GENS = {
    "pw_complex": pw_complex,
    "pw_url": lambda: pw_from(ALNUM + "-_.~!*$"),
    "pw_shell": lambda: pw_from(ALNUM + "_.%+=@^"),
    "pw_word": pw_word, "pw_wordnum": pw_wordnum,
    "pw_digits": lambda: digits(R.randint(6, 8)),
    "pin4": lambda: digits(4), "pin6": lambda: digits(6),
    "pw_phrase": lambda: " ".join(pick(WORDS) for _ in range(R.randint(4, 5))),
    "pw_phrase_dash": lambda: "-".join(pick(WORDS) for _ in range(R.randint(3, 4))) + pick(["", "-" + str(R.randint(1, 99))]),
    "pw_quote": pw_quote, "pw_wifi": pw_wifi, "pw_pinyin": pw_pinyin, "pw_temp": pw_temp,
    "pw_zoom": lambda: rs(6, ALNUM) if R.random() < 0.6 else digits(6),
    "pw_hex32": lambda: rs(32, HEX),
    "pw_phrase_zh": lambda: pick(POEM) + pick(["", "@", "#"]) + digits(R.randint(2, 4)),
    "pw_any": lambda: pick([pw_complex, pw_wordnum, lambda: pw_from(ALNUM + "_.@#%+=", 8, 14),
                            lambda: pick(WORDS) + pick(["-", "_", ""]) + pick(WORDS) + str(R.randint(1, 999)),
                            lambda: rs(R.randint(16, 24), ALNUM)])(),
    "pin_combo": lambda: f"{R.randint(1, 39)}-{R.randint(1, 39)}-{R.randint(1, 39)}",
}


ZH_PINYIN = {"王芳": "wangfang", "李伟": "liwei", "张敏": "zhangmin", "刘洋": "liuyang", "陈静": "chenjing",
             "杨帆": "yangfan", "赵磊": "zhaolei", "黄丽": "huangli", "周杰": "zhoujie", "吴婷": "wuting",
             "徐明": "xuming", "孙悦": "sunyue", "胡斌": "hubin", "朱琳": "zhulin", "高翔": "gaoxiang",
             "林晓": "linxiao", "何平": "heping", "郭倩": "guoqian", "马超": "machao", "罗娟": "luojuan",
             "宋雨": "songyu", "郑凯": "zhengkai", "谢婉": "xiewan", "韩冰": "hanbing"}
CTX = {}  # filler values of the text being rendered, so emails can follow the person's name


def ctx_pinyin():
    if "name_zh" in CTX and R.random() < 0.9:
        return ZH_PINYIN[CTX["name_zh"]]
    return None


def email_local(cn=False):
    if not cn and ("name" in CTX or "first_t" in CTX) and R.random() < 0.9:
        if "name" in CTX:
            f, l = CTX["name"].lower().split()
        else:
            f, l = CTX["first_t"].lower(), pick(LAST)
        return pick([f"{f}.{l}", f"{f}_{l}", f"{f}{l}", f"{f[0]}.{l}", f"{f[0]}{l}{digits(2)}", f"{f}.{l}+{pick(['news', 'shop'])}"])
    if cn or ctx_pinyin():
        p = ctx_pinyin() or pick(PINYIN)
        return pick([p, p + digits(R.randint(2, 4)), p + str(R.randint(1975, 2005))])
    f, l = pick(FIRST), pick(LAST)
    return pick([f"{f}.{l}", f"{f}_{l}", f"{f}{l}", f"{f[0]}.{l}", f"{f}{digits(R.randint(2, 4))}",
                 f"{f}.{l}+{pick(['news', 'shop', 'work'])}", f"{l}.{f}", f"{f[0]}{l}{digits(2)}"])


def email():
    has_en_name = "name" in CTX or "first_t" in CTX
    if "name_zh" in CTX or (not has_en_name and R.random() < 0.25):
        return email_local(cn=True) + "@" + pick(CN_DOMAINS + CORP_DOMAINS[8:])
    return email_local() + "@" + pick(FREE_DOMAINS + CORP_DOMAINS)


def split1(dom):
    a, b = dom.split(".", 1)
    return a, b


EMAIL_GENS = {
    "email": email,
    "email_qq": lambda: (str(R.randint(10000, 3999999999)) if R.random() < 0.5 else email_local(cn=True)) + "@qq.com",
    "email_163": lambda: email_local(cn=True) + "@" + pick(["163.com", "126.com", "yeah.net"]),
    "email_obf_dot": lambda: (lambda d: f"{pick(FIRST)} dot {pick(LAST)} at {d[0]} dot {d[1]}")(split1(pick(ONE_DOT))),
    "email_obf_bracket": lambda: (lambda d: f"{email_local()} [at] {d[0]} [dot] {d[1]}")(split1(pick(ONE_DOT))),
    "email_obf_paren": lambda: f"{pick(['legal', 'bd', 'press', 'hr', pick(FIRST), pick(PINYIN)])}(at){pick(CORP_DOMAINS)}",
    "email_obf_caps": lambda: (lambda d: f"{email_local()} AT {d[0]} DOT {d[1]}")(split1(pick(ONE_DOT))),
    "email_obf_zh": lambda: (lambda d: f"{email_local(cn=True)} 艾特 {d[0]} 点 {d[1]}")(split1(pick(ONE_DOT_CN))),
    "email_obf_zh2": lambda: (lambda d: pick([f"{email_local(cn=True)}[at]{d[0]}.{d[1]}", f"{email_local(cn=True)} at {d[0]} dot {d[1]}"]))(split1(pick(ONE_DOT_CN))),
    "email_fullwidth": lambda: f"{pick([email_local(), email_local(cn=True), 'service', 'kefu'])}＠{pick(CORP_DOMAINS + CN_DOMAINS)}",
}

# ---- identity numbers
CN_REGIONS = ["110101", "110105", "110108", "120104", "310101", "310104", "310115", "320102", "320106", "330106",
              "330102", "340104", "350203", "370202", "420106", "430104", "440106", "440305", "440304", "500103",
              "510107", "610113", "210102", "230103", "410105", "450103", "530102", "360102", "130102", "140105"]
INVALID_IDS = set()  # 18-digit IDs deliberately given a wrong check digit (still labelled)


def cn_body17():
    return pick(CN_REGIONS) + d_between(1955, 2006).strftime("%Y%m%d") + f"{R.randint(1, 999):03d}"


def cn_id():
    b = cn_body17()
    return b + cn_id_check(b)


def cn_id_x():
    while True:
        b = cn_body17()
        if cn_id_check(b) == "X":
            return b + "X"


def cn_id_bad():
    b = cn_body17()
    good = cn_id_check(b)
    v = b + pick([c for c in "0123456789" if c != good])
    INVALID_IDS.add(v)
    return v


def cn_id15():
    return pick(CN_REGIONS) + d_between(1940, 1984).strftime("%y%m%d") + f"{R.randint(1, 999):03d}"


def ssn_parts():
    a = R.randint(1, 899)
    while a == 666:
        a = R.randint(1, 899)
    return f"{a:03d}", f"{R.randint(1, 99):02d}", f"{R.randint(1, 9999):04d}"


def hkid():
    letter = pick(UP)
    ds = digits(6)
    s = 9 * 36 + 8 * (ord(letter) - 55) + sum((7 - i) * int(d) for i, d in enumerate(ds))
    c = (11 - s % 11) % 11
    return f"{letter}{ds}({'A' if c == 10 else c})"


TW_CODES = dict(A=10, B=11, C=12, D=13, E=14, F=15, G=16, H=17, I=34, J=18, K=19, L=20, M=21, N=22, O=35,
                P=23, Q=24, R=25, S=26, T=27, U=28, V=29, W=32, X=30, Y=31, Z=33)


def twid():
    letter = pick("ABCDEFGHJKLMNPQRSTUVXYWZ")
    d = [pick([1, 2])] + [R.randint(0, 9) for _ in range(7)]
    n = TW_CODES[letter]
    s = n // 10 + (n % 10) * 9 + sum(x * w for x, w in zip(d, [8, 7, 6, 5, 4, 3, 2, 1]))
    return letter + "".join(map(str, d)) + str((10 - s % 10) % 10)


def nino():
    bad = {"BG", "GB", "NK", "KN", "TN", "NT", "ZZ"}
    while True:
        p = pick("ABCEGHJKLMNOPRSTWXYZ") + pick("ABCEGHJKLMNPRSTWXYZ")
        if p not in bad:
            break
    d = digits(6)
    return pick([f"{p}{d}{pick('ABCD')}", f"{p} {d[:2]} {d[2:4]} {d[4:]} {pick('ABCD')}"])


def dl_uk():
    sur = (pick(LAST).upper() + "99999")[:5]
    dob = d_between(1955, 2003)
    month = dob.month + (50 if R.random() < 0.5 else 0)
    return f"{sur}{str(dob.year)[2]}{month:02d}{dob.day:02d}{str(dob.year)[3]}{pick(UP)}{pick(UP + '9')}9{rs(2, UP)}"


ID_GENS = {
    "cn_id": cn_id, "cn_id_x": cn_id_x, "cn_id_bad": cn_id_bad, "cn_id15": cn_id15,
    "ssn_dash": lambda: "-".join(ssn_parts()), "ssn_space": lambda: " ".join(ssn_parts()),
    "ssn_plain": lambda: "".join(ssn_parts()),
    "pp_us": lambda: digits(9) if R.random() < 0.5 else pick("ACEFGH") + digits(8),
    "pp_uk": lambda: str(R.randint(1, 9)) + digits(8),
    "pp_cn": lambda: "E" + (digits(8) if R.random() < 0.5 else pick("ABCDEFGHJKLMNPQRSTUVWXYZ") + digits(7)),
    "pp_cn_g": lambda: "G" + digits(8),
    "pp_de": lambda: pick("CFGHJK") + rs(8, "CFGHJKLMNPRTVWXYZ0123456789"),
    "pp_jp": lambda: pick(["TK", "TR", "TZ", "MZ", "ME", "MU", "TH", "RZ"]) + digits(7),
    "hkid": hkid, "twid": twid, "nino": nino,
    "dl_ca": lambda: pick(UP) + digits(7), "dl_uk": dl_uk, "dl_ny": lambda: digits(9),
}

# ---- payment cards
UP_BINS = ["622202", "622208", "621700", "622848", "621483", "622588", "621226", "622700", "623058", "621661", "622262", "625911"]


def card_number(brand):
    if brand == "visa":
        return luhn_make("4", 13 if R.random() < 0.08 else 16)
    if brand == "mc":
        return luhn_make(str(R.randint(51, 55)), 16)
    if brand == "mc2":
        return luhn_make(str(R.randint(2221, 2720)), 16)
    if brand == "amex":
        return luhn_make(pick(["34", "37"]), 15)
    if brand == "discover":
        return luhn_make(pick(["6011", "65", str(R.randint(644, 649))]), 16)
    if brand == "jcb":
        return luhn_make(str(R.randint(3528, 3589)), 16)
    if brand == "diners":
        return luhn_make(pick(["36", "38", "300", "301", "302", "303", "304", "305"]), 14)
    if brand == "up16":
        return luhn_make(pick(UP_BINS), 16)
    if brand == "up19":
        return luhn_make(pick(UP_BINS), 19)
    raise KeyError(brand)


def card_fmt(num, style=None):
    style = style or pick(["plain", "space", "space", "dash"])
    if style == "plain":
        return num
    sizes = {13: [4, 4, 5], 14: [4, 6, 4], 15: [4, 6, 5], 16: [4, 4, 4, 4], 19: [4, 4, 4, 4, 3]}[len(num)]
    out, i = [], 0
    for s in sizes:
        out.append(num[i:i + s])
        i += s
    return (" " if style == "space" else "-").join(out)


BRANDS = ["visa", "visa", "visa", "mc", "mc", "mc2", "amex", "discover", "jcb", "diners", "up16", "up19"]
CC_GENS = {
    "cc_visa": lambda: card_fmt(card_number("visa")), "cc_mc": lambda: card_fmt(card_number("mc")),
    "cc_mc2": lambda: card_fmt(card_number("mc2")), "cc_amex": lambda: card_fmt(card_number("amex")),
    "cc_amex_grp": lambda: card_fmt(card_number("amex"), pick(["space", "dash"])),
    "cc_discover": lambda: card_fmt(card_number("discover")), "cc_jcb": lambda: card_fmt(card_number("jcb")),
    "cc_diners": lambda: card_fmt(card_number("diners")), "cc_up16": lambda: card_fmt(card_number("up16")),
    "cc_up16_spaced": lambda: card_fmt(card_number("up16"), "space"),
    "cc_up19": lambda: card_fmt(card_number("up19"), pick(["plain", "space"])),
    "cc_up19_plain": lambda: card_number("up19"),
    "cc_plain": lambda: card_number(pick(BRANDS)),
    "cc_any": lambda: card_fmt(card_number(pick(BRANDS))),
    "cc_any_plain": lambda: card_number(pick(BRANDS)),
}

# ---- phones
CN_MOBILE = ["130", "131", "132", "133", "134", "135", "136", "137", "138", "139", "147", "150", "151", "152",
             "153", "155", "156", "157", "158", "159", "166", "173", "175", "176", "177", "178", "180", "181",
             "182", "183", "184", "185", "186", "187", "188", "189", "191", "195", "198", "199"]


def ph_cn(styles=None):
    d = pick(CN_MOBILE) + digits(8)
    a, b, c = d[:3], d[3:7], d[7:]
    forms = {"plain": d, "space": f"{a} {b} {c}", "dash": f"{a}-{b}-{c}", "p86sp": f"+86 {a} {b} {c}",
             "p86": f"+86 {d}", "p86dash": f"+86-{a}-{b}-{c}", "paren": f"(+86){d}", "0086": f"0086 {d}",
             "p86tight": f"+86{d}", "paren_sp": f"(+86) {a} {b} {c}"}
    return forms[pick(styles or ["plain", "plain", "space", "dash", "p86sp", "p86", "p86dash", "paren", "0086"])]


CN_AREAS = [("010", 8), ("021", 8), ("020", 8), ("022", 8), ("023", 8), ("027", 8), ("025", 8), ("028", 8),
            ("029", 8), ("0755", 8), ("0571", 8), ("0512", 8), ("0592", 7), ("0731", 8), ("0532", 8)]


def ph_cn_land(area=None):
    code, n = area or pick(CN_AREAS)
    local = str(R.randint(2, 8)) + digits(n - 1)
    style = pick(["dash", "dash", "dash", "paren", "space", "intl"])
    if style == "dash":
        return f"{code}-{local}"
    if style == "paren":
        return f"({code}){local}"
    if style == "space":
        return f"{code} {local[:-4]} {local[-4:]}"
    return f"+86 {code[1:]} {local[:-4]} {local[-4:]}"


US_AREAS = ["212", "415", "312", "617", "206", "512", "303", "713", "646", "408", "510", "718", "202", "305",
            "404", "702", "919", "503", "214", "602", "615", "720", "773", "858"]


def us_parts():
    ex = R.randint(201, 989)
    while ex == 555 or ex % 100 == 11:
        ex = R.randint(201, 989)
    return pick(US_AREAS), str(ex), digits(4)


def ph_us():
    a, e, l = us_parts()
    return pick([f"({a}) {e}-{l}", f"{a}-{e}-{l}", f"{a}.{e}.{l}", f"+1 {a} {e} {l}", f"+1-{a}-{e}-{l}",
                 f"+1 ({a}) {e}-{l}", f"1-{a}-{e}-{l}"])


def ph_uk_mobile():
    d = "7" + str(R.randint(4, 9)) + digits(8)
    return pick([f"+44 {d[:4]} {d[4:]}", f"0{d[:4]} {d[4:]}", f"+44 (0){d[:4]} {d[4:]}"])


def g2(n):
    return " ".join(digits(2) for _ in range(n))


PH_INTL = {
    "ph_uk": lambda: pick([f"+44 20 7{digits(3)} {digits(4)}", f"020 8{digits(3)} {digits(4)}",
                           f"+44 161 {R.randint(200, 999)} {digits(4)}", f"0131 {R.randint(200, 999)} {digits(4)}", ph_uk_mobile()]),
    "ph_de": lambda: pick([f"+49 30 {R.randint(2, 9)}{digits(7)}", f"+49 89 {R.randint(2, 9)}{digits(6)}",
                           f"+49 151 {digits(8)}", f"+49 (0)171 {digits(7)}", f"0176 {digits(8)}", f"030 {R.randint(2, 9)}{digits(7)}"]),
    "ph_fr": lambda: pick([f"+33 1 {g2(4)}", f"+33 6 {g2(4)}", f"06 {g2(4)}", f"01 {g2(4)}", f"+33 (0)7 {g2(4)}"]),
    "ph_jp": lambda: pick([f"+81 3-{digits(4)}-{digits(4)}", f"03-{digits(4)}-{digits(4)}", f"090-{digits(4)}-{digits(4)}",
                           f"080-{digits(4)}-{digits(4)}", f"+81 90-{digits(4)}-{digits(4)}", f"06-{digits(4)}-{digits(4)}"]),
    "ph_kr": lambda: pick([f"+82 10-{digits(4)}-{digits(4)}", f"010-{digits(4)}-{digits(4)}", f"02-{digits(3)}-{digits(4)}",
                           f"+82 2-{digits(4)}-{digits(4)}"]),
    "ph_sg": lambda: pick([f"+65 {pick('689')}{digits(3)} {digits(4)}", f"+65-9{digits(3)}-{digits(4)}"]),
    "ph_hk": lambda: pick([f"+852 {pick('5679')}{digits(3)} {digits(4)}", f"+852-2{digits(3)}-{digits(4)}", f"(852) 9{digits(3)} {digits(4)}"]),
    "ph_tw": lambda: pick([f"+886 9{digits(2)} {digits(3)} {digits(3)}", f"09{digits(2)}-{digits(3)}-{digits(3)}",
                           f"(02) 2{digits(3)}-{digits(4)}", f"+886 2 2{digits(3)} {digits(4)}"]),
    "ph_au": lambda: pick([f"+61 4{digits(2)} {digits(3)} {digits(3)}", f"04{digits(2)} {digits(3)} {digits(3)}",
                           f"(02) 9{digits(3)} {digits(4)}", f"+61 3 9{digits(3)} {digits(4)}"]),
    "ph_in": lambda: pick([f"+91 {pick('6789')}{digits(4)} {digits(5)}", f"+91-{pick('6789')}{digits(9)}"]),
    "ph_br": lambda: pick([f"+55 11 9{digits(4)}-{digits(4)}", f"(21) 9{digits(4)}-{digits(4)}", f"+55 (11) 3{digits(3)}-{digits(4)}"]),
}

EN_DIGITS = ["zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine"]
ZH_DIGITS = "零一二三四五六七八九"


def ph_spelled_en():
    a, e, l = us_parts()
    oh = R.random() < 0.4

    def sp(g):
        return " ".join(("oh" if (c == "0" and oh) else EN_DIGITS[int(c)]) for c in g)
    return pick([", ", " - ", " … "]).join(sp(g) for g in (a, e, l))


def ph_spelled_zh():
    d = pick(CN_MOBILE) + digits(8)
    yao = R.random() < 0.5
    sp = "".join(("幺" if (c == "1" and yao) else ZH_DIGITS[int(c)]) for c in d)
    return pick([f"{sp[:3]} {sp[3:7]} {sp[7:]}", sp, f"{sp[:3]}-{sp[3:7]}-{sp[7:]}"])


PH_GENS = {
    "ph_cn": ph_cn, "ph_cn_plain": lambda: ph_cn(["plain"]), "ph_cn_dash": lambda: ph_cn(["dash", "space"]),
    "ph_cn_intl": lambda: ph_cn(["p86sp", "p86", "p86dash", "paren", "0086", "p86tight", "paren_sp"]),
    "ph_cn_0086": lambda: ph_cn(["0086"]), "ph_cn_p86dash": lambda: ph_cn(["p86dash"]),
    "ph_us_dot": lambda: ".".join(us_parts()),
    "ph_us_1800": lambda: f"1-800-{R.randint(201, 989)}-{digits(4)}",
    "ph_cn_land": ph_cn_land, "ph_cn_land_bj": lambda: ph_cn_land(("010", 8)),
    "ph_cn_land_sz": lambda: ph_cn_land(("0755", 8)),
    "ph_us": ph_us, "ph_us_e164": lambda: "+1" + "".join(us_parts()),
    "ph_us_tollfree": lambda: (lambda tf, e, l: pick([f"1-{tf}-{e}-{l}", f"({tf}) {e}-{l}", f"{tf}-{e}-{l}"]))(
        pick(["800", "888", "877", "866", "855", "844", "833"]), str(R.randint(201, 989)), digits(4)),
    "ph_uk_mobile": ph_uk_mobile,
    "ph_intl": lambda: PH_INTL[pick(sorted(PH_INTL))](),
    "ph_spelled_en": ph_spelled_en, "ph_spelled_zh": ph_spelled_zh,
}
PH_GENS.update(PH_INTL)

SECRET_GENS = {}
for _typ, _gens in (("api_key", API_GENS), ("password", PW_GENS), ("email", EMAIL_GENS),
                    ("id_number", ID_GENS), ("credit_card", CC_GENS), ("phone", PH_GENS)):
    for _k, _g in _gens.items():
        assert _k not in SECRET_GENS and _k not in FILLERS
        SECRET_GENS[_k] = (_typ, _g)

# --------------------------------------------------------------------------- templates
# Fields are written ⟦field⟧; a suffix "__2" asks for a second, independent value.
T = {}
T[("api_key", "en")] = [
    "Deploy note ⟦date⟧: rotated the OpenAI key for the support bot. New value is ⟦k_openai⟧ and the old one was revoked in the dashboard.",
    ".env for the summarizer service:\nOPENAI_API_KEY=⟦k_openai_proj⟧\nMODEL=gpt-4o-mini\nMAX_TOKENS=1024",
    "⟦name⟧ pasted an Anthropic key into the chat by mistake (⟦k_anthropic⟧). Advised them to revoke it in the console and create a new one.",
    "Billing worker config (config/billing.yaml):\n```yaml\nstripe:\n  secret_key: ⟦k_stripe_live⟧\n  webhook_tolerance: 300\n```",
    "For the staging checkout tests use `⟦k_stripe_test⟧`; never point them at live mode.",
    "The reporting job only needs read access, so ⟦first_t⟧ created a restricted key for it: ⟦k_stripe_rk⟧",
    "$ git remote set-url origin https://⟦k_ghp⟧@github.com/⟦n_org⟧/⟦n_repo⟧.git\n$ git push origin main",
    "CI step \"publish\" failed. The debug dump of the environment showed GH_TOKEN=⟦k_gho⟧ with scopes repo, workflow.",
    "Installation token for the release bot (expires in 1 hour): ⟦k_ghs⟧",
    "⟦name⟧ asked me to remember the fine-grained PAT for the docs repo: ⟦k_ghpat⟧ (read-only, expires ⟦date⟧).",
    "[[runners]]\n  name = \"build-⟦n_small⟧\"\n  url = \"https://gitlab.⟦domain⟧/\"\n  token = \"⟦k_glpat⟧\"\n  executor = \"docker\"",
    "The #incidents bot is authenticated with ⟦k_xoxb⟧. The old user token ⟦k_xoxp⟧ is still in the repo and must be removed.",
    "~/.aws/credentials\n[default]\naws_access_key_id = ⟦k_akia⟧\naws_secret_access_key = ⟦k_aws_secret⟧\nregion = us-east-1",
    "Output of `aws sts assume-role` (trimmed): \"AccessKeyId\": \"⟦k_asia⟧\", \"SecretAccessKey\": \"⟦k_aws_secret⟧\", \"Expiration\": \"⟦n_iso_ts⟧\"",
    "The map widget broke after the referrer change. index.html loads https://maps.googleapis.com/maps/api/js?key=⟦k_google⟧&callback=initMap",
    "Transactional emails bounce with 401. Current setting: SENDGRID_API_KEY='⟦k_sendgrid⟧'",
    "~/.npmrc on the build agent:\n//registry.npmjs.org/:_authToken=⟦k_npm⟧\nalways-auth=true",
    "The Twilio SMS sender uses API key ⟦k_twilio_sk⟧ with secret ⟦k_opaque32⟧.",
    "Azure blob backups failing. appsettings.json has \"StorageConnection\": \"DefaultEndpointsProtocol=https;AccountName=⟦acct⟧;AccountKey=⟦k_azure⟧;EndpointSuffix=core.windows.net\"",
    "Release announcements go out through this webhook: ⟦k_slack_hook⟧",
    "Moderation bot alert hook: ⟦k_discord_hook⟧ (posts to #mod-log).",
    "curl -s -H \"Authorization: Bearer ⟦k_jwt⟧\" https://api.⟦domain⟧/v2/orders?limit=50",
    "Tool output:\n< HTTP/1.1 401 Unauthorized\n< x-request-id: ⟦n_uuid⟧\nThe request carried Authorization: Bearer ⟦k_opaque40⟧",
    "Weather API quota exceeded. Calls look like GET https://api.⟦domain⟧/v1/forecast?city=⟦city⟧&api_key=⟦k_hex32⟧",
    "Webhook signing secret for the ⟦company⟧ integration: ⟦k_whsec⟧",
    "$ env | grep -i token\nVAULT_TOKEN=⟦k_vault⟧\nTERM_PROGRAM=iTerm.app",
    "Output of `cat /run/secrets/session_signing`:\n⟦k_b64⟧",
]
T[("api_key", "zh")] = [
    "阿里云 OSS 上传脚本用的 AccessKey ID 是 ⟦k_ali_id⟧，AccessKey Secret：⟦k_ali_secret⟧，下周要轮换。",
    "腾讯云 COS 配置：SecretId=⟦k_tc_id⟧，SecretKey=⟦k_tc_secret⟧，地域 ap-guangzhou。",
    "钉钉告警机器人 Webhook：⟦k_dingtalk_hook⟧ ，“⟦team_zh⟧值班群”在用。",
    "飞书群机器人地址 ⟦k_feishu_hook⟧ 已经配到 Alertmanager 里了。",
    "企业微信群机器人：⟦k_wecom_hook⟧（发版通知用，别外传）",
    "通义千问的 DASHSCOPE_API_KEY=⟦k_sk_hex32⟧ 写在服务器的 /etc/profile.d/llm.sh 里。",
    "DeepSeek 的密钥：⟦k_sk_hex32⟧，⟦name_zh⟧说这个月额度够用。",
    "⟦name_zh⟧把 GitHub 令牌 ⟦k_ghp⟧ 发到了群里，已提醒立即撤销。",
    "小程序后台的 AppSecret 是 ⟦k_hex32⟧，AppID 在 project.config.json 里。",
    "接口鉴权失败，日志里的请求头是 Authorization: Bearer ⟦k_jwt⟧ ，token 已经过期两小时。",
    "微信支付 APIv3 秘钥：⟦k_opaque32⟧（商户平台 → API安全 里设置的）",
    "排查时解码了 k8s 的 Secret：\n```\n$ kubectl get secret api-cred -o jsonpath='{.data.token}' | base64 -d\n⟦k_hex40⟧\n```",
    "运维记录 ⟦date_zh⟧：七牛云 AccessKey ⟦k_qiniu⟧ / SecretKey ⟦k_qiniu__2⟧ 已在控制台停用。",
    "Hugging Face 访问令牌 ⟦k_hf⟧ 放在训练机的 ~/.cache/huggingface/token 里。",
    "对象存储同步任务报 AccessDenied，.env 里 AWS_ACCESS_KEY_ID=⟦k_akia⟧ AWS_SECRET_ACCESS_KEY=⟦k_aws_secret⟧，可能是策略没放开。",
    "短信网关调用示例：GET https://gw.⟦domain_cn⟧/v1/sms/send?appkey=⟦k_hex32⟧&tpl=1024 ，别把这个链接贴到工单里。",
    "智谱的 API Key 是 ⟦k_zhipu⟧，放在 config.ini 的 [llm] 段下。",
    "海外收款用的 Stripe 密钥是 ⟦k_stripe_live⟧ ，只能在支付服务里读取。",
]
T[("password", "en")] = [
    "⟦name⟧ said the Wi-Fi password at home is ⟦pw_wifi⟧; noting it for when I set up the printer.",
    "Prod DB URL from the incident channel: postgres://⟦dbuser⟧:⟦pw_url⟧@⟦host⟧:5432/⟦dbname⟧?sslmode=require",
    "mysql -h ⟦ip⟧ -uroot -p⟦pw_shell⟧ -e \"SHOW PROCESSLIST;\"",
    "sshpass -p '⟦pw_complex⟧' ssh deploy@⟦host⟧ 'sudo systemctl restart worker'",
    "jdbc:sqlserver://⟦host⟧:1433;databaseName=⟦dbname⟧;user=⟦dbuser⟧;password=⟦pw_complex⟧;encrypt=true",
    ".env\nDB_HOST=⟦host⟧\nDB_USER=⟦dbuser⟧\nDB_PASSWORD=⟦pw_any⟧\nDB_NAME=⟦dbname⟧",
    "```yaml\nspring:\n  datasource:\n    url: jdbc:mysql://⟦host⟧:3306/⟦dbname⟧\n    username: ⟦dbuser⟧\n    password: ⟦pw_any⟧\n```",
    "{\"smtp\": {\"host\": \"smtp.⟦domain⟧\", \"port\": 587, \"user\": \"⟦uname⟧\", \"password\": \"⟦pw_complex⟧\"}}",
    "The passphrase for the backup GPG key is ⟦pw_phrase⟧. ⟦name⟧ wants it handy for the restore drill.",
    "My login for the school portal is ⟦uname⟧ / ⟦pw_wordnum⟧",
    "Reminder for ⟦first_t⟧: the garage keypad PIN is ⟦pin4⟧.",
    "The user insisted I remember their debit card PIN: ⟦pin4⟧. (Told them storing it is risky.)",
    "⟦first_t⟧'s laptop password is literally ⟦pw_word⟧ – all lowercase, no numbers.",
    "Router admin page http://192.168.0.1 – user admin, password ⟦pw_digits⟧",
    "Shell history excerpt:\n  512  cd /srv/app\n  513  export PGPASSWORD='⟦pw_complex⟧'\n  514  psql -h ⟦host⟧ -U ⟦dbuser⟧ ⟦dbname⟧",
    "docker-compose.yml\nservices:\n  db:\n    image: postgres:16\n    environment:\n      POSTGRES_USER: ⟦dbuser⟧\n      POSTGRES_PASSWORD: \"⟦pw_any⟧\"",
    "apiVersion: v1\nkind: Secret\nmetadata:\n  name: redis-auth\ntype: Opaque\nstringData:\n  password: ⟦pw_any⟧",
    "[database]\nhost = ⟦host⟧\nport = 5432\nuser = ⟦dbuser⟧\npassword = ⟦pw_any⟧",
    "redis-cli -h ⟦host⟧ -a ⟦pw_shell⟧ INFO replication",
    "Customer wrote in: I cannot log in even though I type my password exactly as ⟦pw_quote⟧ – please help.",
    "The VPN passcode is ⟦pw_phrase_dash⟧ until the end of the quarter.",
    "Driver={ODBC Driver 18 for SQL Server};Server=⟦host⟧;Database=⟦dbname⟧;Uid=⟦dbuser⟧;Pwd=⟦pw_complex⟧;",
    "HR onboarding note: the temporary password for ⟦name⟧ is ⟦pw_temp⟧ and must be changed at first login.",
    "The webinar passcode is ⟦pw_zoom⟧ – share it only with registered attendees.",
    "mongodb+srv://⟦dbuser⟧:⟦pw_url⟧@cluster0.⟦rand5⟧.mongodb.net/?retryWrites=true&w=majority",
    "docker login registry.⟦domain⟧ -u ci-bot -p ⟦pw_shell⟧",
]
T[("password", "zh")] = [
    "⟦name_zh⟧的邮箱密码是⟦pw_pinyin⟧，让我记一下，方便下次帮忙登录查快递。",
    "家里的WiFi：名称 ⟦ssid⟧，密码：⟦pw_digits⟧，客人来了直接告诉他们。",
    "数据库连接命令：mysql -h⟦ip⟧ -u⟦dbuser⟧ -p⟦pw_shell⟧ ⟦dbname⟧",
    "用户坚持让我记住银行卡取款密码 ⟦pin6⟧（已提示风险）。",
    "application.yml 片段：\n```\nspring:\n  redis:\n    host: ⟦host⟧\n    password: ⟦pw_complex⟧\n```\n这是生产环境的配置。",
    "堡垒机账号 ⟦uname⟧ / ⟦pw_wordnum⟧，⟦date_zh⟧之前有效。",
    "门禁密码是⟦pin4⟧#，进门后按铃。",
    "⟦name_zh⟧说自己的备用密码就是“⟦pw_word⟧”，全小写。",
    "Nacos 里这条配置要改：spring.datasource.password=⟦pw_any⟧",
    "运维交接：Jenkins 管理员 admin，初始密码 ⟦pw_hex32⟧（在 /var/jenkins_home/secrets/initialAdminPassword 里）。",
    "学生系统默认密码是身份证后六位，不过⟦name_zh⟧已经改成了 ⟦pw_pinyin⟧。",
    "缓存的连接串是 redis://:⟦pw_url⟧@⟦host⟧:6379/0 ，别提交到仓库。",
    "加密压缩包的解压密码：⟦pw_phrase_zh⟧",
    "客户来电说网银登录密码 ⟦pw_wordnum⟧ 输错三次被锁了，已引导去柜台解锁。",
    "crontab 里有这么一行：sshpass -p ⟦pw_shell⟧ scp backup.tar.gz root@⟦host⟧:/data/",
    ".env 文件内容：\nMYSQL_ROOT_PASSWORD=⟦pw_any⟧\nMYSQL_DATABASE=⟦dbname⟧\n（这是⟦name_zh⟧本地的配置）",
    "我的 Apple ID 密码是 ⟦pw_complex⟧，你帮我记着。",
]
T[("email", "en")] = [
    "⟦name⟧'s work email is ⟦email⟧; no personal address on file.",
    "The customer asked us to send the refund receipt to ⟦email⟧ instead of the address on the order.",
    "Reach me at ⟦email_obf_dot⟧ (spelled out so scrapers skip it).",
    "Contact for the booth: ⟦email_obf_bracket⟧",
    "Legal notices should go to ⟦email_obf_paren⟧",
    "<a href=\"mailto:⟦email⟧\">Email support</a>",
    "git log shows \"Author: ⟦name⟧ <⟦email⟧>\" on the offending commit.",
    "From: ⟦email⟧\nTo: ⟦email__2⟧\nSubject: Invoice ⟦n_invoice⟧ overdue",
    "CSV row: ⟦n_small⟧,\"⟦name⟧\",⟦email⟧,⟦city⟧,active",
    "⟦first_t⟧ prefers to be contacted at ⟦email⟧ after 6pm.",
    "Please add ⟦email⟧ to the on-call distribution list.",
    "Bounce report: delivery to ⟦email⟧ failed (550 5.1.1 mailbox unavailable).",
    "{\"user_id\": ⟦n_small⟧, \"email\": \"⟦email⟧\", \"plan\": \"pro\"}",
    "New lead from the webinar form – ⟦email⟧, interested in the enterprise tier.",
    "The parent's email for the field-trip form is ⟦email_obf_caps⟧.",
    "Forwarding rule: anything from ⟦email⟧ goes to the Finance folder.",
    "A password reset link was sent to ⟦email⟧ but the user says it never arrived.",
    "Applicant: ⟦name⟧ | ⟦email⟧ | Data Analyst | phone screen scheduled",
    "The patient portal account is linked to ⟦email⟧; prefers email reminders over SMS.",
    "[ERROR] smtp: 553 5.7.1 sender address <⟦email⟧> rejected",
    "cc ⟦email⟧ on anything related to the audit.",
    "For press inquiries write to ⟦email_fullwidth⟧.",
    "Her new address is ⟦email⟧ – the old one bounces.",
    "mailto:⟦email⟧?subject=Booking%20change",
]
T[("email", "zh")] = [
    "⟦name_zh⟧的邮箱：⟦email_qq⟧，以后报价单都发这里。",
    "客户要求把电子发票发到 ⟦email⟧，不要寄纸质的。",
    "联系方式：⟦email_obf_zh⟧（为了防爬虫故意写成这样）",
    "投诉建议请发邮件至⟦email_fullwidth⟧",
    "简历投递邮箱 ⟦email⟧，请在标题注明岗位名称。",
    "家长邮箱是⟦email_163⟧，成绩单每月发一次。",
    "【工单 ⟦n_ticket_zh⟧】用户反馈收不到验证码邮件，注册邮箱为 ⟦email⟧。",
    "git config user.email \"⟦email⟧\"  这是⟦name_zh⟧在公司电脑上的配置。",
    "商务合作请联系：⟦email_obf_paren⟧",
    "患者邮箱 ⟦email⟧，复诊提醒改为邮件通知。",
    "离职交接：原负责人的邮箱 ⟦email⟧ 月底停用。",
    "{\"姓名\": \"⟦name_zh⟧\", \"邮箱\": \"⟦email⟧\", \"部门\": \"财务部\"}",
    "他说邮箱是 ⟦email_obf_zh2⟧ ，我复述了一遍确认无误。",
    "退款结果会发送到您预留的邮箱⟦email⟧，请注意查收。",
    "报名确认请点 mailto:⟦email⟧?subject=报名确认",
    "⟦name_zh⟧换了新邮箱 ⟦email_qq⟧，以前那个不用了。",
]
T[("id_number", "en")] = [
    "⟦name⟧'s SSN is ⟦ssn_dash⟧ – needed for the W-9.",
    "Tax prep notes: social security no. ⟦ssn_space⟧, filing jointly.",
    "Background check request – SSN ⟦ssn_plain⟧ (entered without dashes by the applicant).",
    "Passport number ⟦pp_us⟧ (USA), expires ⟦date⟧. Needed for the Tokyo booking.",
    "UK passport no. ⟦pp_uk⟧ for ⟦name⟧.",
    "Visa application: the applicant holds PRC passport ⟦pp_cn⟧.",
    "German passport (Reisepass) number: ⟦pp_de⟧",
    "The guest checking in on ⟦date⟧ presented Japanese passport ⟦pp_jp⟧.",
    "HKID ⟦hkid⟧ on the account-opening form.",
    "Taiwan national ID ⟦twid⟧ provided for the insurance claim.",
    "National Insurance number: ⟦nino⟧ (payroll setup for the new hire).",
    "Driver's license ⟦dl_ca⟧ (California), exp ⟦date⟧.",
    "UK driving licence number ⟦dl_uk⟧ was used for the car rental.",
    "Chinese resident ID for the hotel registration: ⟦cn_id⟧",
    "Employee record: name=⟦name⟧ ssn=⟦ssn_dash⟧ dept=Logistics",
    "{\"customer\": \"⟦name⟧\", \"id_type\": \"passport\", \"id_no\": \"⟦pp_us⟧\"}",
    "The patient's SSN on the intake form is ⟦ssn_dash⟧; insurance verification pending.",
    "Old 15-digit Chinese ID from the archived records: ⟦cn_id15⟧",
    "NY driver license # ⟦dl_ny⟧ verified at pickup.",
    "Reminder: ⟦first_t⟧'s passport is ⟦pp_uk⟧; renew before ⟦date⟧.",
    "ID check failed: ⟦cn_id_bad⟧, given as his Chinese ID card number, has a wrong check digit.",
    "| name | SSN |\n|---|---|\n| ⟦name⟧ | ⟦ssn_dash⟧ |",
    "KYC upload: Hong Kong identity card ⟦hkid⟧, proof of address pending.",
    "Her Chinese ID card number ends in X: ⟦cn_id_x⟧",
]
T[("id_number", "zh")] = [
    "⟦name_zh⟧的身份证号：⟦cn_id⟧，订机票用。",
    "身份证号码 ⟦cn_id_x⟧（最后一位是X，不是乘号）",
    "客户实名信息：姓名 ⟦name_zh⟧，证件号 ⟦cn_id⟧，已核验。",
    "护照号 ⟦pp_cn⟧，有效期至⟦date_zh⟧。",
    "老身份证是15位的：⟦cn_id15⟧，需要去派出所升位。",
    "香港身份证 ⟦hkid⟧，开户资料已上传。",
    "台湾身分证字号 ⟦twid⟧，⟦name_zh⟧报名时填的。",
    "员工入职登记表：\n姓名：⟦name_zh⟧\n身份证：⟦cn_id⟧\n部门：研发中心",
    "患者⟦name_zh⟧，身份证⟦cn_id⟧，医保卡已绑定。",
    "{\"name\":\"⟦name_zh⟧\",\"idCard\":\"⟦cn_id⟧\",\"mobileVerified\":true} ← 实名认证接口的返回",
    "他的驾驶证号就是身份证号 ⟦cn_id⟧。",
    "签证材料：因私护照 ⟦pp_cn_g⟧，持照人⟦name_zh⟧。",
    "证件号码⟦cn_id_bad⟧（系统提示校验位不对，需要客户重新确认身份证号）",
    "租房合同乙方身份证号：⟦cn_id_x⟧",
    "美国客户的 SSN：⟦ssn_dash⟧，报税时要用。",
    "酒店入住登记，外籍客人护照号 ⟦pp_de⟧（德国）。",
]
T[("credit_card", "en")] = [
    "Card on file for ⟦name⟧: ⟦cc_visa⟧, exp ⟦exp⟧.",
    "The customer read out her Mastercard number ⟦cc_mc⟧ in chat; asked her not to share it here.",
    "Amex ⟦cc_amex_grp⟧ is the corporate card for travel bookings.",
    "payment failed: card_number=⟦cc_plain⟧ cvv=*** reason=insufficient_funds",
    "Discover card ⟦cc_discover⟧ expires next month; remind ⟦first_t⟧ to update autopay.",
    "{\"card\": \"⟦cc_any_plain⟧\", \"exp_month\": ⟦n_month⟧, \"exp_year\": 2028}",
    "Reservation guaranteed with JCB ⟦cc_jcb⟧.",
    "An old Diners Club card ⟦cc_diners⟧ is still linked to the expense account.",
    "UnionPay card ⟦cc_up16⟧ was used for the Shanghai supplier payment.",
    "2025-02-11T10:14:07Z POST /checkout pan=⟦cc_plain⟧ status=declined",
    "Here's my card so you can book it: ⟦cc_any⟧",
    "Billing profile updated – the new card ⟦cc_mc2⟧ replaces the expired one.",
    "Please charge ⟦cc_visa⟧ for the annual renewal.",
    "The fraud team flagged ⟦cc_any⟧ after three declined attempts from different IPs.",
    "CSV import line: ⟦name⟧,⟦cc_any_plain⟧,⟦exp⟧,⟦city⟧",
    "My debit card number is ⟦cc_visa⟧ (the blue one).",
    "Gift order paid with ⟦cc_any⟧ – the customer wants a copy of the receipt.",
    "Saved in the notes app: \"visa ⟦cc_visa⟧ ⟦exp⟧\"",
    "The vendor wants the card number for the deposit: ⟦cc_mc⟧. Sent it through the secure form instead.",
    "The hotel folio shows card ⟦cc_amex⟧ charged twice.",
    "Subscription checkout autofill: name ⟦name⟧, number ⟦cc_discover⟧, exp ⟦exp⟧.",
    "Replay from the payments sandbox:\n  source: card\n  number: ⟦cc_plain⟧\n  funding: credit\n  country: US",
    "The Diners card ⟦cc_diners⟧ is my dad's – use it only for the pharmacy.",
    "Could you store my Mastercard, ⟦cc_mc2⟧, for the school fees?",
]
T[("credit_card", "zh")] = [
    "⟦name_zh⟧的信用卡号：⟦cc_any⟧，每月8号还款。",
    "银行卡号 ⟦cc_up19⟧，开户行：⟦bank⟧⟦city_zh⟧分行。",
    "客户说卡号是⟦cc_up16_spaced⟧，请核对后原路退款。",
    "支付失败日志：card_no=⟦cc_plain⟧ 原因：余额不足",
    "帮我记一下，招行信用卡 ⟦cc_mc⟧，有效期 ⟦exp⟧。",
    "报销用的公务卡：⟦cc_visa⟧",
    "工资卡⟦cc_up19_plain⟧，财务要求下周前提交。",
    "出差订酒店用的运通卡 ⟦cc_amex_grp⟧。",
    "{\"持卡人\": \"⟦name_zh⟧\", \"卡号\": \"⟦cc_any_plain⟧\"} 是绑卡接口的请求体。",
    "用户在聊天里直接发了：⟦cc_any⟧ 这是我的卡 帮我绑一下",
    "JCB 卡 ⟦cc_jcb⟧ 是去日本旅游时办的。",
    "退款请打到这张卡：⟦cc_up16⟧，户名⟦name_zh⟧。",
    "信用卡⟦cc_mc2⟧被盗刷了，已经挂失。",
    "备忘：万事达卡号⟦cc_mc⟧，别告诉别人。",
    "家长缴学费用的银联卡：⟦cc_up19⟧，扣款日是每学期开学前一周。",
    "订单备注里客户留了卡号 ⟦cc_any⟧ ，要求货到后再扣款。",
]
T[("phone", "en")] = [
    "Call ⟦name⟧ at ⟦ph_us⟧ if the delivery is late.",
    "Support line: ⟦ph_us_1800⟧ (24/7); billing questions go to ⟦ph_us_tollfree⟧.",
    "London office reception: ⟦ph_uk⟧",
    "Berlin contact ⟦name⟧, mobile ⟦ph_de⟧.",
    "Paris hotel front desk: ⟦ph_fr⟧",
    "Tokyo vendor, tel. ⟦ph_jp⟧",
    "The Seoul team lead's number is ⟦ph_kr⟧.",
    "Singapore courier: ⟦ph_sg⟧ (WhatsApp only).",
    "HK client ⟦name⟧ – ⟦ph_hk⟧",
    "Taipei supplier phone ⟦ph_tw⟧",
    "Sydney clinic: ⟦ph_au⟧",
    "Bangalore contractor: ⟦ph_in⟧",
    "São Paulo distributor on WhatsApp: ⟦ph_br⟧",
    "⟦first_t⟧ read the callback number out as ⟦ph_spelled_en⟧.",
    "<a href=\"tel:⟦ph_us_e164⟧\">Call us</a>",
    "BEGIN:VCARD\nVERSION:3.0\nFN:⟦name⟧\nTEL;TYPE=cell:⟦ph_us⟧\nEND:VCARD",
    "Emergency contact (mother): ⟦ph_us⟧",
    "Shanghai partner's mobile: ⟦ph_cn_intl⟧",
    "Text me at ⟦ph_us⟧ when you're outside.",
    "{\"name\": \"⟦name⟧\", \"phone\": \"⟦ph_intl⟧\"}",
    "The pharmacy called back from ⟦ph_us_dot⟧ about the refill.",
    "Escalation: page the DBA on ⟦ph_uk_mobile⟧.",
    "Beijing office landline ⟦ph_cn_land_bj⟧ ext. ⟦n_ext⟧",
    "Missed call from ⟦ph_intl⟧ – probably the overseas supplier.",
]
T[("phone", "zh")] = [
    "⟦name_zh⟧的手机号：⟦ph_cn⟧",
    "快递员电话⟦ph_cn_plain⟧，说下午三点前送到。",
    "联系人：⟦name_zh⟧，电话：⟦ph_cn_land⟧",
    "客服热线 ⟦ph_cn_land⟧ 转 ⟦n_ext⟧，工作日 9:00-18:00。",
    "有事打我电话 ⟦ph_cn_dash⟧ ，微信同号。",
    "紧急联系人（父亲）：⟦ph_cn_p86dash⟧",
    "{\"收货人\":\"⟦name_zh⟧\",\"手机\":\"⟦ph_cn_plain⟧\",\"地址\":\"⟦city_zh⟧市⟦district_zh⟧\"}",
    "病人家属电话 ⟦ph_cn_intl⟧，术后请通知。",
    "老师，我的新号码是⟦ph_spelled_zh⟧，麻烦更新一下通讯录。",
    "香港合作方⟦name_zh⟧：⟦ph_hk⟧",
    "深圳办公室座机 ⟦ph_cn_land_sz⟧，前台转接。",
    "短信发送失败：目标号码 ⟦ph_cn_plain⟧ 已停机。",
    "日本那边的联系电话是 ⟦ph_jp⟧ 。",
    "房东电话：⟦ph_cn_0086⟧，月底前要联系他续租。",
    "回访记录：⟦date_zh⟧ 拨打 ⟦ph_cn⟧ 无人接听。",
    "新加坡分公司⟦name_zh⟧的号码 ⟦ph_sg⟧。",
]
T[("multi", "en")] = [
    "New customer profile – ⟦name⟧, ⟦email⟧, ⟦ph_us⟧. Prefers email.",
    "Onboarding checklist for ⟦name⟧: SSN ⟦ssn_dash⟧, payroll card ⟦cc_visa⟧, personal email ⟦email⟧.",
    ".env\nDATABASE_URL=postgres://⟦dbuser⟧:⟦pw_url⟧@⟦host⟧:5432/⟦dbname⟧\nSTRIPE_SECRET_KEY=⟦k_stripe_live⟧\nSUPPORT_EMAIL=⟦email⟧",
    "Travel booking: passenger ⟦name⟧, passport ⟦pp_us⟧, mobile ⟦ph_us⟧, paid with ⟦cc_amex_grp⟧.",
    "Incident ⟦n_inc⟧: a contractor committed config.json with \"api_key\": \"⟦k_openai⟧\" and \"admin_password\": \"⟦pw_any⟧\". Both rotated.",
    "Chat log:\nuser: my login is ⟦email⟧ and the password is ⟦pw_wordnum⟧, why does it fail?\nagent: please never share your password here.",
    "Patient ⟦name⟧, DOB ⟦dob⟧, SSN ⟦ssn_dash⟧, phone ⟦ph_us⟧.",
    "Tenant application: ⟦name⟧, UK passport ⟦pp_uk⟧, NI ⟦nino⟧, tel ⟦ph_uk⟧, ⟦email⟧.",
    "Alerts post to ⟦k_slack_hook⟧; the on-call phone is ⟦ph_us⟧.",
    "Order help: card ⟦cc_mc⟧ was charged twice, reach me at ⟦email_obf_dot⟧.",
    "docker-compose env:\n      - SMTP_USER=⟦email⟧\n      - SMTP_PASS=⟦pw_any⟧\n      - SENDGRID_KEY=⟦k_sendgrid⟧",
    "Hotel check-in: ⟦name⟧, Japanese passport ⟦pp_jp⟧, card ⟦cc_jcb⟧.",
    "Offsite Wi-Fi password is ⟦pw_wifi⟧; if it drops, call the venue at ⟦ph_uk⟧.",
    "Payroll fix: ⟦name⟧ (SSN ⟦ssn_space⟧) – new debit card ⟦cc_visa⟧.",
    "Secrets leaked in the CI log: GH_TOKEN=⟦k_ghp⟧ NPM_TOKEN=⟦k_npm⟧ DEPLOY_PASSWORD=⟦pw_shell⟧",
    "Rental agreement: driver ⟦name⟧, licence ⟦dl_ca⟧, card ⟦cc_any⟧, contact ⟦ph_us⟧.",
]
T[("multi", "zh")] = [
    "⟦name_zh⟧，身份证 ⟦cn_id⟧，手机 ⟦ph_cn⟧，已完成实名认证。",
    "收货信息：⟦name_zh⟧ ⟦ph_cn_plain⟧，发票邮箱 ⟦email_qq⟧。",
    "服务器交接：root 密码 ⟦pw_complex⟧，阿里云 AccessKey ⟦k_ali_id⟧ / ⟦k_ali_secret⟧。",
    "会员资料：手机号⟦ph_cn⟧，银行卡号⟦cc_up19⟧，身份证⟦cn_id_x⟧。",
    "用户在客服对话里说：我邮箱是⟦email_obf_zh⟧，密码⟦pw_pinyin⟧，帮我看看为什么登不上。",
    "下面是 config.yaml 里的敏感项，上线前必须迁到配置中心：\nwechat:\n  app_secret: ⟦k_hex32⟧\nmysql:\n  password: ⟦pw_complex⟧\nnotify:\n  dingtalk: ⟦k_dingtalk_hook⟧",
    "员工⟦name_zh⟧：护照 ⟦pp_cn⟧，信用卡 ⟦cc_visa⟧，用于差旅预订。",
    "家长联系方式：⟦ph_cn_dash⟧，邮箱⟦email_163⟧。",
    "报错截图里露出了 Bearer ⟦k_jwt⟧ 和调用人的手机号 ⟦ph_cn_plain⟧。",
    "患者⟦name_zh⟧，身份证号⟦cn_id⟧，医保绑定的银行卡⟦cc_up16⟧，联系电话⟦ph_cn_land⟧。",
    "新同事账号开通：邮箱 ⟦email⟧，初始密码 ⟦pw_temp⟧，手机 ⟦ph_cn⟧。",
    "发票抬头已更新，付款卡 ⟦cc_up16_spaced⟧，对账邮箱 ⟦email⟧。",
]
T[("neg", "en")] = [
    "Order ⟦n_order11⟧ has been split into two parcels; the second ships Friday.",
    "Refund processed for order ⟦n_order_long⟧, amount ⟦n_price⟧.",
    "Tracking: UPS ⟦n_ups⟧, estimated delivery ⟦date⟧.",
    "Invoice ⟦n_invoice⟧ is due on ⟦date⟧; total ⟦n_price⟧.",
    "Ticket ⟦n_ticket⟧: the user forgot their password and asked how to reset it. Sent the reset link from the help center.",
    "Request id ⟦n_uuid⟧ timed out after 30s on /v1/orders.",
    "Fixed in commit ⟦n_gitsha⟧ (merged to main by ⟦first_t⟧).",
    "Deployment pinned to ⟦n_image_digest⟧.",
    "Host key fingerprint is ⟦n_sshfp⟧ (ED25519). Verify it before connecting.",
    "Add this public key to authorized_keys on the bastion: ⟦n_ssh_pub⟧",
    "Stripe webhook: charge ⟦n_stripe_ch⟧ for customer ⟦n_stripe_cus⟧ succeeded (payment_intent ⟦n_stripe_pi⟧, payment_method ⟦n_stripe_pm⟧).",
    "Role arn:aws:iam::⟦n_aws_acct⟧:role/⟦n_role⟧ lives in account ⟦n_aws_acct⟧, the shared-services account.",
    "Upgraded the runtime from ⟦n_version⟧ to ⟦n_version__2⟧; no breaking changes.",
    "The backup finished in 14 minutes; its log lines carry epoch-millisecond stamps such as ⟦n_epoch_ms⟧.",
    "The course textbook's ISBN is ⟦n_isbn⟧; the library has 3 copies.",
    "Service listens on ⟦n_ip⟧:⟦n_port⟧; health check at /healthz.",
    "Printer MAC address ⟦n_mac⟧ is reserved in DHCP.",
    "Standup moved to room ⟦n_room⟧.",
    "Drop-off coordinates: ⟦n_coords⟧.",
    "Card on file: ⟦n_masked_card⟧. The customer wants to replace it before renewal.",
    "Key in use: ⟦n_masked_key⟧ (only the last 4 characters are shown). Rotation due next month.",
    "DB_PASSWORD=${DB_PASSWORD}\nAPI_KEY=$API_KEY\n# real values are injected by the secrets manager at runtime",
    "Set your own key first, e.g. `export OPENAI_API_KEY=sk-XXXXXXXXXXXXXXXXXXXXXXXX` – the value shown is a placeholder.",
    "config.example.yaml:\ndatabase:\n  host: localhost\n  password: <your-password>\napi:\n  key: your_api_key_here",
    "The default admin password in the installer template is `changeme`; it is only a placeholder and setup forces you to replace it.",
    "Before running the eval script, export OPENAI_API_KEY and ANTHROPIC_API_KEY in your shell (values are not stored in this note).",
    "Password policy: at least 12 characters, one uppercase letter, one digit and one symbol; rotate every 90 days.",
    "Clone with git@github.com:⟦n_org⟧/⟦n_repo⟧.git and run `make setup`.",
    "⟦n_prompt⟧:~$ sudo systemctl status nginx\n● nginx.service - A high performance web server\n   Active: active (running) since ⟦n_iso_ts⟧",
    "Thanks @⟦n_mention⟧ for the review! Merging after CI.",
    "Run `npm i -D @types/node @types/express @babel/core` and restart the TS server.",
    "Reminder for the Java interns: add @Override on toString() and use @Autowired sparingly.",
    "The user asked how to change the email address and phone number on their account; pointed them to Settings > Profile.",
    "HR reminder: upload a scan of your passport or SSN card to the HR portal by Friday – never send them by email.",
    "Brand colours: primary ⟦n_color⟧, accent ⟦n_color__2⟧.",
    "Q3 conversion up ⟦n_percent⟧; revenue ⟦n_price⟧.",
    "Join the Zoom: meeting ID ⟦n_meeting⟧, no passcode needed for internal staff.",
    "Auth log: user=⟦n_mention⟧ password=****** result=FAIL attempts=3",
    "Stored secrets show as [REDACTED] in the UI and the API returns <REDACTED> for them too.",
    "SHA-256 of the release tarball: ⟦n_sha256⟧",
    "MD5 checksum ⟦n_md5⟧ matches the vendor's published value.",
    "Customer phone on file: ⟦n_masked_phone_us⟧; they want SMS notifications turned off.",
    "The parcel with waybill ⟦n_waybill18⟧ is stuck at the sorting center.",
    "Case ⟦n_case⟧ escalated to tier 2; SLA breach in 4h.",
    "Build ⟦n_build⟧ passed; artifact size 48.2 MB.",
    "Helm chart secret (the real value comes from Vault):\napiVersion: v1\nkind: Secret\nmetadata:\n  name: db-cred\nstringData:\n  password: \"{{ .Values.db.password }}\"",
    "For HR questions call extension ⟦n_ext⟧; the main switchboard number is on the intranet.",
    "Environment: Ubuntu 22.04.4 LTS, kernel 6.5.0-41-generic, Python 3.11.9, Node 20.12.2.",
    "Bug: the email validation regex rejected addresses with a plus sign. Fixed in PR #⟦n_pr⟧.",
    "The SSN field should display as ***-**-⟦n_4d⟧ in the admin view.",
    "Payment reference ⟦n_order_long⟧ does not match any invoice in the ledger.",
    "The AWS docs use AKIAIOSFODNN7EXAMPLE as a sample access key id; copy the format, not the value.",
    "The tokens in the sample are fake: ghp_xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx and xoxb-XXXXXXXXXXXX-XXXXXXXXXXXXX-xxxxxxxxxxxxxxxxxxxxxxxx.",
    "Shipment ⟦n_order11⟧ (our order numbers are 11 digits) left the Chengdu warehouse.",
    "Reminder: never paste API keys, passwords or card numbers into tickets; use the vault link instead.",
    "Customer ⟦n_stripe_cus⟧ switched to annual billing; invoice ⟦n_invoice⟧ was voided.",
    "Conference room booking: ⟦n_room⟧, ⟦date⟧ 14:00–15:30, capacity 12.",
    "The rate limit is ⟦n_small⟧ requests per minute per key; the key itself lives in the vault.",
    "Tracking number ⟦n_sf⟧ (SF Express) for the replacement part.",
    "AWS account ⟦n_aws_acct⟧, region eu-west-1, VPC ⟦n_vpc⟧.",
    "The cron job last ran at ⟦n_epoch⟧ (unix seconds).",
    "Your verification code will arrive by SMS; we never ask for your PIN or password over the phone.",
    "The customer says order ⟦n_order11⟧ never arrived; reshipping today with signature required.",
    "Room ⟦n_room⟧: the Wi-Fi password is printed on the card at reception, so guests should ask there.",
    "The JWT was rejected because `exp` was in the past; the client now refreshes tokens 60s before expiry.",
    "Image tag ⟦n_version⟧ promoted to production; the digest is unchanged from staging.",
    "Bug ⟦n_ticket⟧: the phone number field rejects a leading '+'. Reproduces with any international number.",
    "Latency p95 is ⟦n_p95⟧ ms and the error rate is ⟦n_percent⟧ since the deploy.",
    "Container ⟦n_container⟧ restarted 3 times (OOMKilled); raised the memory limit to 1Gi.",
    "Release artifacts are signed with GPG key ID ⟦n_gpgid⟧; the public key is on the keyserver.",
    "Uploaded the scan to s3://intake-bucket/uploads/⟦n_uuid⟧.pdf and deleted the local copy.",
    "Vaccine lot ⟦n_lot⟧, expiry ⟦date⟧ – not affected by the recall.",
    "Employee ⟦n_emp⟧ completed the security awareness training on ⟦date⟧.",
    "Flight ⟦n_flight⟧ departs at 07:45 from gate ⟦n_gate⟧; booking reference ⟦n_pnr⟧.",
    "KMS key arn:aws:kms:eu-west-1:⟦n_aws_acct⟧:key/⟦n_uuid⟧ is scheduled for deletion in 30 days.",
    "The vendor left the tax ID field blank on the W-9; asked them to fill it in and resend.",
    "Student ⟦n_student_id⟧ scored 87/100 on the midterm; parent-teacher meeting on ⟦date⟧.",
    "Bed ⟦n_room⟧: lab order ⟦n_lab⟧ (CBC, lipid panel) collected at 06:30.",
    "Marketplace order ⟦n_order_long⟧ was cancelled by the buyer before shipping.",
    "Waybill ⟦n_waybill18⟧ was handed to the last-mile courier this morning.",
    "Grafana dashboard uid ⟦n_grafana⟧ shows the spike started at ⟦n_iso_ts⟧.",
    "We rotated every API key after the incident; new values were distributed through the vault only.",
    "If you lose your phone, call the IT desk from any office line and ask for extension ⟦n_ext⟧.",
    "The form asks for an email address, a phone number and the last four digits of the card – nothing else.",
    "Commit ⟦n_gitsha_short⟧ bumped the version to ⟦n_version⟧ and updated the changelog.",
    "Sandbox payment ⟦n_stripe_pi⟧ failed with card_declined; no real card was involved.",
]
T[("neg", "zh")] = [
    "订单号⟦n_order11⟧，客户要求改到周六配送。",
    "顺丰运单号 ⟦n_sf⟧ 已签收。",
    "运单号：⟦n_waybill18⟧，目前在⟦city_zh⟧转运中心。",
    "订单编号 ⟦n_order_long⟧ 申请退款 ⟦n_price_cny⟧。",
    "统一社会信用代码：⟦n_uscc⟧，开票时请填写。",
    "用户说：我忘记密码了，怎么重置？——已发送重置链接到其预留邮箱。",
    "密码规则：至少8位，需同时包含大小写字母和数字，90天必须更换一次。",
    "收件人手机号已脱敏：⟦n_masked_phone_cn⟧",
    "银行卡尾号⟦n_4d⟧，页面显示为 ⟦n_masked_card⟧。",
    "配置模板里写的是 password: ${MYSQL_PASSWORD}，实际值由 K8s Secret 注入。",
    "请把 <your-api-key> 替换成你自己的密钥，不要提交到仓库。",
    "发票代码 ⟦n_fapiao_code⟧，发票号码 ⟦n_fapiao⟧，开票日期 ⟦date_zh⟧，金额 ⟦n_price_cny⟧。",
    "腾讯会议号：⟦n_meeting_tx⟧，无需入会密码。",
    "服务器 IP ⟦n_ip⟧，端口 ⟦n_port⟧，只能内网访问。",
    "线上镜像已回滚到 ⟦n_image_digest⟧。",
    "提交 ⟦n_gitsha⟧ 修复了登录页的样式问题。",
    "请求 ID：⟦n_uuid⟧，网关返回 504。",
    "行政部分机号 ⟦n_ext⟧，有问题可以直接打。",
    "身份证号请勿在群里发送，需要时走加密通道上传。",
    "工单 ⟦n_ticket_zh⟧：用户说收不到验证码短信，已让其检查手机是否欠费。",
    "商品价格 ⟦n_price_cny⟧，折扣 ⟦n_percent⟧，库存 ⟦n_small⟧ 件。",
    "上课地点 ⟦n_room⟧，周三下午第二节。",
    "教材 ISBN ⟦n_isbn⟧，《数据结构》第三版。",
    "仓库的定位坐标是 ⟦n_coords⟧，导航时直接粘贴即可。",
    "API Key 在控制台只显示为 ⟦n_masked_key⟧，完整值只在创建时展示一次。",
    "日志里的敏感字段已经打码：password=******，token=[REDACTED]。",
    "运行脚本前先 export DASHSCOPE_API_KEY（值不要写在笔记里）。",
    "@⟦name_zh⟧ 麻烦看一下这个 PR，@types/node 的版本需要升级。",
    "学号 ⟦n_student_id⟧，⟦n_class⟧，期中成绩已录入。",
    "京东订单 ⟦n_jd_order⟧ 已出库，预计明天送达。",
    "日志里的时间戳 ⟦n_epoch_ms⟧ 是毫秒级的，换算成日期前要先除以 1000。",
    "MAC 地址为 ⟦n_mac⟧ 的设备已加入白名单。",
    "服务器公钥指纹 ⟦n_sshfp⟧，首次连接前请核对。",
    "AWS 账号 ⟦n_aws_acct⟧ 下的角色 arn:aws:iam::⟦n_aws_acct⟧:role/⟦n_role⟧ 需要加 S3 读权限。",
    "医保结算单号 ⟦n_waybill18⟧，报销材料已提交。",
    "挂号单号 ⟦n_reg⟧，就诊时间 ⟦date_zh⟧ 上午。",
    "手机号格式校验规则：以1开头的11位数字，第二位为3到9。",
    "默认密码 changeme 只是占位符，部署脚本会强制要求修改。",
    "版本 ⟦n_version⟧ 已发布，修复了邮箱验证的 bug。",
    "订单 ⟦n_order11⟧ 的收件手机号已隐藏为 ⟦n_masked_phone_cn⟧。",
    "颜色规范：主色 ⟦n_color⟧，辅助色 ⟦n_color__2⟧。",
    "用户问怎么修改绑定的手机号和邮箱，已告知在“账户设置”里操作。",
    "本次迭代的提交 ⟦n_gitsha_short⟧ 引入了内存泄漏，已回滚。",
    "合同编号 ⟦n_contract⟧，甲方⟦company_zh⟧。",
    "退款流水号 ⟦n_order_long⟧，预计3个工作日到账。",
    "示例配置里的 sk-xxxxxxxxxxxxxxxx 只是占位符，请替换成你自己的 key。",
    "SHA256 校验值：⟦n_sha256⟧，与官网一致。",
    "快递单号 ⟦n_yt⟧ 显示已到驿站。",
    "公司税号（统一社会信用代码）⟦n_uscc⟧，请核对后开票。",
    "菜鸟运单 ⟦n_waybill18⟧ 已交给末端快递员，预计傍晚送达。",
    "航班 ⟦n_flight⟧ 在 ⟦n_gate⟧ 登机口，订座记录编号 ⟦n_pnr⟧。",
    "员工工号 ⟦n_emp⟧，已完成本季度信息安全培训。",
    "拼多多订单 ⟦n_order_long⟧ 已被买家取消，无需发货。",
    "Pod 重启了 3 次，容器 ID ⟦n_container⟧，原因是 OOMKilled。",
    "温馨提示：请不要在聊天里发送银行卡号或密码，客服不会向您索要验证码。",
    "邮编 ⟦n_zip⟧，收件地址 ⟦city_zh⟧市⟦district_zh⟧。",
    "会员卡号显示为 ⟦n_masked_card⟧，当前积分 ⟦n_small⟧。",
    "导出报表时身份证号字段会自动脱敏为 ⟦n_masked_id⟧ 这样的格式。",
    "接口延迟 P95 为 ⟦n_p95⟧ 毫秒，错误率 ⟦n_percent⟧，已恢复正常。",
]

# How many texts to draw from each template list.
PLAN = []
for _typ in TYPES:
    PLAN += [((_typ, "en"), len(T[(_typ, "en")])), ((_typ, "zh"), len(T[(_typ, "zh")]))]
PLAN += [(("multi", "en"), 24), (("multi", "zh"), 16), (("neg", "en"), len(T[("neg", "en")])), (("neg", "zh"), len(T[("neg", "zh")]))]

# --------------------------------------------------------------------------- rendering & checks
FIELD_RE = re.compile(r"⟦([a-z0-9_]+)⟧")
DIGIT_RUN = re.compile(r"(?<!\d)\d{13,19}(?!\d)")
GROUPED_RUN = re.compile(r"(?<![\d-])\d{2,6}(?:[ -]\d{2,6}){2,5}(?![\d-])")
ID_RUN = re.compile(r"(?<![0-9A-Za-z])\d{17}[\dXx](?![0-9A-Za-z])")
EMAIL_RE = re.compile(r"[\w.+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)+")
SHELL_USERS = {"root", "deploy", "git", "ubuntu", "admin", "ec2-user", "ops"}
CJK = re.compile(r"[\u4e00-\u9fff]")


def lookalike_problems(text, allow_email):
    """Unlabelled material that would need a label: Luhn-valid card-length runs, valid IDs, emails."""
    probs = []
    for m in DIGIT_RUN.finditer(text):
        if luhn_ok(m.group()):
            probs.append(("luhn", m.group()))
    for m in GROUPED_RUN.finditer(text):
        d = re.sub(r"\D", "", m.group())
        if 13 <= len(d) <= 19 and luhn_ok(d):
            probs.append(("luhn-grouped", m.group()))
    for m in ID_RUN.finditer(text):
        if cn_id_valid(m.group().upper()):
            probs.append(("cn-id", m.group()))
    if not allow_email:
        for m in EMAIL_RE.finditer(text):
            if m.group().split("@")[0] not in SHELL_USERS:
                probs.append(("email", m.group()))
    return probs


def render(tpl, is_neg):
    for _ in range(500):
        cache, secrets = {}, []
        for f in FIELD_RE.findall(tpl):
            base = f.split("__")[0]
            if base not in SECRET_GENS and f not in cache:
                cache[f] = FILLERS[base]()
        CTX.clear()
        CTX.update(cache)

        def sub(m):
            f = m.group(1)
            if f in cache:
                return cache[f]
            base = f.split("__")[0]
            if base in SECRET_GENS:
                assert not is_neg, f"secret field {f} in negative template"
                typ, gen = SECRET_GENS[base]
                v = gen()
                secrets.append((typ, v, base))
            else:
                v = FILLERS[base]()
            cache[f] = v
            return v

        text = FIELD_RE.sub(sub, tpl)
        if any(text.count(v) != 1 for _, v, _ in secrets):
            continue
        residual = text
        for _, v, _ in secrets:
            residual = residual.replace(v, "\x00")
        if lookalike_problems(residual, allow_email=is_neg):
            continue
        ordered = sorted(secrets, key=lambda s: text.index(s[1]))
        return text, [{"type": t, "value": v} for t, v, _ in ordered], [k for _, _, k in ordered]
    raise RuntimeError("could not render template: " + tpl)


def cycle_pick(templates, n):
    out, pool = [], []
    while len(out) < n:
        if not pool:
            pool = list(templates)
            R.shuffle(pool)
        out.append(pool.pop())
    return out


def card_digits(v):
    return re.sub(r"[ -]", "", v)


def main():
    t0 = time.perf_counter()
    jobs = []
    for key, n in PLAN:
        lang = key[1]
        for tpl in cycle_pick(T[key], n):
            jobs.append((lang, key[0], tpl))
    R.shuffle(jobs)

    records, kinds = [], {}
    for i, (lang, group, tpl) in enumerate(jobs, 1):
        is_neg = group == "neg"
        text, secrets, gens = render(tpl, is_neg)
        records.append({"id": f"dev-{i:04d}", "language": lang, "text": text, "secrets": secrets,
                        "hard_negative": not secrets})
        for g in gens:
            kinds[g] = kinds.get(g, 0) + 1

    # ---------------- assertions
    ids = [r["id"] for r in records]
    assert len(ids) == len(set(ids))
    for r in records:
        text = r["text"]
        assert r["hard_negative"] == (len(r["secrets"]) == 0)
        assert r["language"] in ("en", "zh")
        assert "⟦" not in text and "⟧" not in text and "\x00" not in text, text
        if r["language"] == "zh":
            assert len(CJK.findall(text)) >= 6, text
        for s in r["secrets"]:
            assert s["type"] in TYPES
            assert s["value"] and text.count(s["value"]) == 1, (r["id"], s)
            if s["type"] == "credit_card":
                d = card_digits(s["value"])
                assert d.isdigit() and 13 <= len(d) <= 19 and luhn_ok(d), s
            if s["type"] == "id_number" and re.fullmatch(r"\d{17}[\dX]", s["value"]):
                assert cn_id_valid(s["value"]) != (s["value"] in INVALID_IDS), s
        if r["hard_negative"]:
            assert not lookalike_problems(text, allow_email=True), (r["id"], text)
            for m in DIGIT_RUN.finditer(text):
                assert not luhn_ok(m.group())
            for m in ID_RUN.finditer(text):
                assert not cn_id_valid(m.group().upper())
    assert 1 <= len(INVALID_IDS) <= 6

    with open(OUT, "w", encoding="utf-8", newline="\n") as fh:
        for r in records:
            fh.write(json.dumps(r, ensure_ascii=False) + "\n")
    elapsed = time.perf_counter() - t0

    # ---------------- statistics (pasted into README.md)
    pos = [r for r in records if not r["hard_negative"]]
    neg = [r for r in records if r["hard_negative"]]
    n_secrets = sum(len(r["secrets"]) for r in records)
    print(f"wrote {os.path.relpath(OUT)}: {len(records)} texts, {n_secrets} secrets in {elapsed:.3f}s")
    print()
    print("| | en | zh | total |")
    print("|---|---:|---:|---:|")
    for label, rows in (("positive texts", pos), ("hard negatives", neg), ("all texts", records)):
        en = sum(r["language"] == "en" for r in rows)
        print(f"| {label} | {en} | {len(rows) - en} | {len(rows)} |")
    multi = [r for r in pos if len({s['type'] for s in r['secrets']}) >= 2]
    en = sum(r["language"] == "en" for r in multi)
    print(f"| texts with >= 2 types | {en} | {len(multi) - en} | {len(multi)} |")
    print()
    print("| type | texts en | texts zh | texts total | secrets en | secrets zh | secrets total |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for typ in TYPES:
        te = sum(1 for r in pos if r["language"] == "en" and any(s["type"] == typ for s in r["secrets"]))
        tz = sum(1 for r in pos if r["language"] == "zh" and any(s["type"] == typ for s in r["secrets"]))
        se = sum(1 for r in pos if r["language"] == "en" for s in r["secrets"] if s["type"] == typ)
        sz = sum(1 for r in pos if r["language"] == "zh" for s in r["secrets"] if s["type"] == typ)
        print(f"| {typ} | {te} | {tz} | {te + tz} | {se} | {sz} | {se + sz} |")
        assert te + tz >= 45, typ
    print(f"| **all** | | | {len(pos)} | | | {n_secrets} |")
    print()
    print("secret generators used:", ", ".join(f"{k}={v}" for k, v in sorted(kinds.items())))
    print(f"Chinese IDs with a deliberately wrong check digit: {len(INVALID_IDS)}")


if __name__ == "__main__":
    sys.exit(main())

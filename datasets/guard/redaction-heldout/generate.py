#!/usr/bin/env python3
"""Generator for the `secrets-fresh` held-out evaluation set.

Python 3.11, standard library only. Deterministic: every secret value is drawn
from a seeded random.Random, so re-running reproduces corpus.jsonl exactly.

Templates are hand-written. A placeholder `{kind}` (or `{kind:N}` for a second
independent value of the same kind) is replaced by a freshly generated value.
Kinds that map to a secret type are recorded as labels; look-alike kinds
(prefixed `n_`) are filled in but never labelled. Any other `{...}` text in a
template (JSON, shell, templating syntax) is left untouched.
"""
import base64
import json
import random
import re
import string
import uuid
from pathlib import Path

SEED = 20250611
R = random.Random(SEED)
HERE = Path(__file__).resolve().parent

UP = string.ascii_uppercase
LO = string.ascii_lowercase
DG = string.digits
AN = UP + LO + DG
HEX = "0123456789abcdef"
URLSAFE = AN + "-_"


def rs(n, chars=AN):
    return "".join(R.choice(chars) for _ in range(n))


# --------------------------------------------------------------------------
# checksums
# --------------------------------------------------------------------------
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


def luhn_complete(prefix, length):
    body = prefix + rs(length - len(prefix) - 1, DG)
    for c in DG:
        if luhn_ok(body + c):
            return body + c
    raise AssertionError


CN_W = [7, 9, 10, 5, 8, 4, 2, 1, 6, 3, 7, 9, 10, 5, 8, 4, 2]
CN_M = "10X98765432"


def cnid_check(s17):
    return CN_M[sum(int(a) * b for a, b in zip(s17, CN_W)) % 11]


def cnid_ok(s):
    return len(s) == 18 and s[:17].isdigit() and cnid_check(s[:17]) == s[17].upper()


# --------------------------------------------------------------------------
# password values
# --------------------------------------------------------------------------
NOUNS = """sunflower marmalade pumpkin lighthouse blueberry cinnamon pineapple thunder
meadow avalanche butterfly chocolate dragonfly firefly lavender moonlight nectarine
orchard pancake rainbow snowflake tangerine waterfall zucchini bluebird starfish
honeybee raspberry tortoise peppermint sailboat seashell cornflower marigold hedgehog
penguin cupcake gingerbread buttercup treehouse campfire lemonade popcorn sparrow
willow juniper granite pebble canyon glacier falcon walrus biscotti cardamom
dandelion horseradish kingfisher lemongrass mandolin nightingale periwinkle
quicksand rosemary saxophone tambourine umbrella vanilla wildflower yardstick
artichoke backpack cobblestone driftwood eggplant flamingo grapefruit harmonica
iceberg jackrabbit keyboard ladybug mistletoe notebook octopus parsnip""".split()
SHORT = """blue green red gold moon sun star tree lake rock fish bird frog bear wolf
fox owl cat dog sky rain snow leaf rose mint salt pine oak river stone cloud
tiger apple mango lemon peach plum honey sugar cookie pizza coffee taco""".split()
PETS = """Biscuit Mochi Pepper Waffles Luna Bailey Ziggy Noodle Pickles Muffin Oreo
Rocky Daisy Coco Ginger Peanut Sushi Tofu Clementine Barkley Winston Toffee Pretzel
Nugget Bruno Maisie Chewie Pippin Ollie Juniper""".split()
PINYIN = """woaini woaijia xiaobao baobei tiantian pingan xingfu kuaile taiyang yueliang
xiaoxiong dahuang wangcai xiaohei huanhuan lele doudou niuniu pipi maomao qiuqiu
xiaoyu mingming jiajia anan xiaomi dabai chenchen""".split()
ZH_SURN = """zhang wang li liu chen yang zhao huang zhou wu xu sun hu zhu gao lin he guo ma luo""".split()
ZH_GIVEN = """wei fang na min jing li qiang lei jun yang yong yan jie tao ming chao xiu xia hui ping gang hua""".split()


def pw_word():
    return R.choice(NOUNS)


def pw_2w():
    a, b = R.sample(SHORT + NOUNS[:30], 2)
    return a + b


def pw_3w():
    return "".join(R.sample(SHORT, 3))


def pw_camel():
    k = R.choice([2, 2, 3])
    return "".join(w.capitalize() for w in R.sample(SHORT + NOUNS[:20], k))


def pw_phrase():
    k = R.choice([3, 4, 4, 5])
    words = R.sample(SHORT + NOUNS, k)
    if R.random() < 0.3:
        words[0] = words[0].capitalize()
    return " ".join(words)


def pw_pet():
    p = R.choice(PETS)
    return p.lower() if R.random() < 0.4 else p


def pw_pinyin():
    k = R.choice([1, 2, 2])
    return "".join(R.sample(PINYIN, k))


def pw_zhmix():
    base = R.choice([R.choice(ZH_SURN) + R.choice(ZH_GIVEN), R.choice(PINYIN)])
    tail = R.choice([str(R.randint(1965, 2005)), "520", "1314", str(R.randint(10, 99)),
                     f"{R.randint(1, 12):02d}{R.randint(1, 28):02d}"])
    return base + tail


SYM = "!*-_.+=?&^~"


def pw_mixed():
    while True:
        n = R.randint(12, 16)
        s = "".join(R.choice(AN + SYM) for _ in range(n))
        if (any(c in UP for c in s) and any(c in LO for c in s)
                and any(c in DG for c in s) and any(c in SYM for c in s)):
            return s


LEET = {"a": "4", "e": "3", "i": "1", "o": "0", "s": "$"}


def pw_wd():
    w = R.choice(NOUNS + SHORT)
    style = R.randint(0, 4)
    if style == 0:
        return w.capitalize() + str(R.randint(2015, 2025)) + R.choice("!?#*")
    if style == 1:
        return w + R.choice("#@!_") + str(R.randint(10, 99))
    if style == 2:
        leet = "".join(LEET.get(c, c) if R.random() < 0.6 else c for c in w)
        return leet.capitalize() + R.choice("&!%") + str(R.randint(1, 9))
    if style == 3:
        return w.capitalize() + "@" + str(R.randint(1970, 1999))
    return R.choice(PETS) + str(R.randint(1, 9)) + R.choice(SHORT).capitalize() + "!"


def pw_rand():
    return rs(R.randint(16, 24))


def pw_dice():
    return "-".join(R.sample(SHORT + NOUNS, 3)) + "-" + str(R.randint(10, 99))


def pw_wifi():
    style = R.randint(0, 2)
    if style == 0:
        return rs(10, "ABCDEFGHJKLMNPQRSTUVWXYZ23456789")
    if style == 1:
        return rs(8, "abcdefghjkmnpqrstuvwxyz23456789")
    return R.choice(NOUNS).capitalize() + str(R.randint(1000, 9999))


def pw_pin4():
    return rs(4, DG)


def pw_pin6():
    return rs(6, DG)


def pw_birth():
    return f"{R.randint(1955, 1975)}{R.randint(1, 12):02d}{R.randint(1, 28):02d}"


def pw_digits():
    return rs(R.choice([6, 8]), DG)


# --------------------------------------------------------------------------
# api keys / tokens / webhooks
# --------------------------------------------------------------------------
def b64u(b):
    return base64.urlsafe_b64encode(b).rstrip(b"=").decode()


def k_openai():
    if R.random() < 0.5:
        return "sk-" + rs(20) + "T3BlbkFJ" + rs(20)
    return "sk-proj-" + rs(64, URLSAFE)


def k_anthropic():
    return "sk-ant-api03-" + rs(93, URLSAFE) + "AA"


def k_aws():
    return "AKIA" + rs(16, UP + "234567")


def k_awssec():
    return rs(40, AN + "/+")


def k_ghp():
    return "ghp_" + rs(36)


def k_ghfine():
    return "github_pat_" + rs(22) + "_" + rs(59)


def k_gitlab():
    return "glpat-" + rs(20, URLSAFE)


def k_stripe():
    return "sk_live_" + rs(R.choice([24, 34]))


def k_stripe_rk():
    return "rk_live_" + rs(24)


def k_slack_bot():
    return f"xoxb-{rs(12, DG)}-{rs(13, DG)}-{rs(24)}"


def k_slack_hook():
    return f"https://hooks.slack.com/services/T{rs(8, UP + DG)}/B{rs(10, UP + DG)}/{rs(24)}"


def k_discord_hook():
    return f"https://discord.com/api/webhooks/{R.randint(10**17, 10**19 - 1)}/{rs(68, URLSAFE)}"


def k_google():
    return "AIza" + rs(35, URLSAFE)


def k_jwt():
    alg = R.choice(["HS256", "HS256", "HS512"])
    head = b64u(json.dumps({"alg": alg, "typ": "JWT"}, separators=(",", ":")).encode())
    iat = R.randint(1_700_000_000, 1_760_000_000)
    payload = {"sub": "usr_" + rs(10, LO + DG), "role": R.choice(["admin", "agent", "viewer", "svc"]),
               "iat": iat, "exp": iat + R.choice([900, 3600, 86400])}
    body = b64u(json.dumps(payload, separators=(",", ":")).encode())
    sig = b64u(R.randbytes(32 if alg == "HS256" else 64))
    return f"{head}.{body}.{sig}"


def k_bearer():
    return rs(R.choice([32, 40, 48]), AN + "-_" if R.random() < 0.3 else AN)


def k_sendgrid():
    return "SG." + rs(22, URLSAFE) + "." + rs(43, URLSAFE)


def k_twilio():
    return "SK" + rs(32, HEX)


def k_npm():
    return "npm_" + rs(36)


def k_hf():
    return "hf_" + rs(34, UP + LO)


def k_telegram():
    return f"{R.randint(10**8, 10**10 - 1)}:AA{rs(33, URLSAFE)}"


def k_dingtalk():
    return "https://oapi.dingtalk.com/robot/send?access_token=" + rs(64, HEX)


def k_feishu():
    return "https://open.feishu.cn/open-apis/bot/v2/hook/" + str(uuid.UUID(int=R.getrandbits(128), version=4))


def k_wecom():
    return "https://qyapi.weixin.qq.com/cgi-bin/webhook/send?key=" + str(uuid.UUID(int=R.getrandbits(128), version=4))


def k_aliyun():
    return "LTAI5t" + rs(18)


def k_aliyun_sec():
    return rs(30)


def k_tencent():
    return "AKID" + rs(32)


def k_mailgun():
    return "key-" + rs(32, HEX)


def k_hex32():
    return rs(32, HEX)


def k_alnum32():
    return rs(32)


# --------------------------------------------------------------------------
# emails
# --------------------------------------------------------------------------
FIRST = """james emily michael sarah david olivia daniel sophia kevin rachel priya carlos
aisha lucas hannah mei jun omar elena tomas grace nina felix ruth marco leila ivan""".split()
LAST = """carter nguyen patel okafor schmidt rossi kim garcia murphy fischer tanaka lopez
brennan haddad novak silva walsh moreau bauer lindqvist adeyemi kowalski ortega""".split()
PERSONAL = ["gmail.com", "outlook.com", "yahoo.com", "icloud.com", "hotmail.com", "proton.me", "fastmail.com"]
WORK = ["brightwave-logistics.com", "northpeak.io", "harborlight.org", "quillstack.dev",
        "meridianhealth.net", "tidewater-realty.com", "copperleaf.co", "lumenpay.com",
        "oakridge-elementary.org", "sablecreek.ai"]
CN_MAIL = ["163.com", "126.com", "qq.com", "sina.com", "foxmail.com", "139.com"]
CN_WORK = ["huaxin-tech.cn", "chenguang-edu.com", "lanhai.com.cn", "jinqiao-logistics.cn", "yunfan.net.cn"]


def local_en():
    f, l = R.choice(FIRST), R.choice(LAST)
    return R.choice([f"{f}.{l}", f"{f}{l}", f"{f[0]}.{l}", f"{f}_{l}{R.randint(1, 99)}",
                     f"{f}{R.randint(80, 99)}", f"{l}.{f}"])


def local_zh():
    s, g = R.choice(ZH_SURN), R.choice(ZH_GIVEN)
    return R.choice([f"{s}{g}", f"{s}.{g}", f"{s}{g}{R.randint(1980, 2005)}", f"{g}{s}{R.randint(1, 999)}"])


def em():
    return f"{local_en()}@{R.choice(PERSONAL)}"


def em_work():
    f, l = R.choice(FIRST), R.choice(LAST)
    loc = R.choice([f"{f}.{l}", f"{f[0]}{l}", f, "billing", "ap", "ops-escalations", "frontdesk"])
    return f"{loc}@{R.choice(WORK)}"


def em_qq():
    if R.random() < 0.6:
        return f"{R.randint(10**6, 10**10 - 1)}@qq.com"
    return f"{local_zh()}@qq.com"


def em_163():
    return f"{local_zh()}@{R.choice(CN_MAIL)}"


def em_work_cn():
    return f"{local_zh()}@{R.choice(CN_WORK)}"


def em_obf_at():
    dom = R.choice(PERSONAL + WORK)
    name, tld = dom.rsplit(".", 1)
    return f"{local_en()} at {name.replace('.', ' dot ')} dot {tld}"


def em_obf_br():
    dom = R.choice(PERSONAL + WORK)
    name, tld = dom.rsplit(".", 1)
    return f"{local_en()} [at] {name} [dot] {tld}"


def em_obf_paren():
    return f"{local_en()}(at){R.choice(PERSONAL + WORK)}"


def em_zh_obf():
    dom = R.choice(CN_MAIL)
    name, tld = dom.split(".")
    if R.random() < 0.5:
        return f"{local_zh()}艾特{name}点{tld}"
    return f"{local_zh()} 艾特 {name} 点 {tld}"


def em_fw():
    return f"{local_zh()}＠{R.choice(CN_MAIL + CN_WORK)}"


def em_hash():
    return f"{local_zh()}#{R.choice(CN_MAIL)}"


# --------------------------------------------------------------------------
# identity numbers
# --------------------------------------------------------------------------
AREAS = ["110101", "110105", "310104", "310115", "440305", "440106", "330106", "510107", "420106",
         "320102", "370202", "610113", "430104", "350203", "210106", "500103", "120101", "410105",
         "340104", "530102"]


def _cnid(force_x):
    while True:
        y, m, d = R.randint(1956, 2008), R.randint(1, 12), R.randint(1, 28)
        s17 = R.choice(AREAS) + f"{y:04d}{m:02d}{d:02d}" + f"{R.randint(0, 999):03d}"
        c = cnid_check(s17)
        if force_x and c != "X":
            continue
        return s17 + c


def cnid():
    return _cnid(False)


def cnid_x():
    return _cnid(True)


def _ssn():
    while True:
        a = R.randint(1, 899)
        if a == 666:
            continue
        return f"{a:03d}", f"{R.randint(1, 99):02d}", f"{R.randint(1, 9999):04d}"


def ssn():
    return "-".join(_ssn())


def ssn_plain():
    return "".join(_ssn())


def ssn_space():
    return " ".join(_ssn())


def pp_us():
    return R.choice([str(R.randint(5, 6)) + rs(8, DG), R.choice("ABC") + rs(8, DG)])


def pp_uk():
    return str(R.randint(1, 9)) + rs(8, DG)


def pp_cn():
    if R.random() < 0.5:
        return "E" + rs(8, DG)
    return "E" + R.choice("ABCDEFGHJKLMNPQRSTUVWXYZ") + rs(7, DG)


def pp_de():
    return "C" + rs(8, "CFGHJKLMNPRTVWXYZ0123456789")


def pp_in():
    return R.choice("JKLMNPRSTUVWZ") + rs(7, DG)


def pp_ca():
    return rs(2, UP) + rs(6, DG)


def pp_jp():
    return R.choice(["TK", "TR", "TZ", "MU"]) + rs(7, DG)


# --------------------------------------------------------------------------
# cards
# --------------------------------------------------------------------------
def groups(d, gs, sep=" "):
    out, i = [], 0
    for g in gs:
        out.append(d[i:i + g])
        i += g
    return sep.join(out)


MC = ["51", "52", "53", "54", "55", "2223", "2391", "2604", "2710"]
UNION = ["622202", "621700", "622848", "622588", "621483", "625807", "620522", "622908"]


def _c(prefixes, n):
    return luhn_complete(R.choice(prefixes), n)


def cc_visa():
    return _c(["4"], 16)


def cc_visa_g():
    return groups(_c(["4"], 16), [4, 4, 4, 4])


def cc_visa_dash():
    return groups(_c(["4"], 16), [4, 4, 4, 4], "-")


def cc_visa13():
    return _c(["4"], 13)


def cc_mc():
    return _c(MC, 16)


def cc_mc_g():
    return groups(_c(MC, 16), [4, 4, 4, 4])


def cc_amex_g():
    return groups(_c(["34", "37"], 15), [4, 6, 5])


def cc_disc():
    return groups(_c(["6011", "65"], 16), [4, 4, 4, 4])


def cc_jcb():
    return groups(_c(["3528", "3540", "3566", "3589"], 16), [4, 4, 4, 4])


def cc_diners_g():
    return groups(_c(["36", "38"], 14), [4, 6, 4])


def cc_dash():
    return groups(_c(["4"] + MC, 16), [4, 4, 4, 4], "-")


def cc_up():
    return _c(UNION, 16)


def cc_up_g():
    return groups(_c(UNION, 16), [4, 4, 4, 4])


def cc_up19():
    return _c(UNION, 19)


def cc_up19_g():
    return groups(_c(UNION, 19), [4, 4, 4, 4, 3])


# --------------------------------------------------------------------------
# phones
# --------------------------------------------------------------------------
CN_MOB = ["130", "131", "132", "133", "135", "136", "137", "138", "139", "150", "151", "152", "153",
          "155", "156", "157", "158", "159", "166", "176", "177", "178", "180", "181", "182", "183",
          "185", "186", "187", "188", "189", "191", "195", "198", "199"]


def _cnm():
    return R.choice(CN_MOB) + rs(8, DG)


def ph_cn():
    return _cnm()


def ph_cn_sp():
    m = _cnm()
    return f"{m[:3]} {m[3:7]} {m[7:]}"


def ph_cn_dash():
    m = _cnm()
    return f"{m[:3]}-{m[3:7]}-{m[7:]}"


def ph_cn_intl():
    m = _cnm()
    return R.choice([f"+86 {m[:3]} {m[3:7]} {m[7:]}", f"+86-{m}", f"+86{m}", f"(+86) {m}"])


def ph_cn_land():
    area = R.choice(["010", "021", "020", "0755", "0571", "025", "028", "027", "022", "023", "0512"])
    local = str(R.randint(2, 8)) + rs(7, DG)
    style = R.randint(0, 3)
    if style == 0:
        return f"{area}-{local}"
    if style == 1:
        return f"({area}) {local[:4]} {local[4:]}"
    if style == 2:
        return f"{area}-{local[:4]} {local[4:]}"
    return f"+86 {area[1:]} {local[:4]} {local[4:]}"


US_AREA = ["212", "415", "312", "617", "206", "512", "303", "404", "718", "646", "213", "702",
           "503", "919", "773", "614", "480", "305", "347", "510"]


def _us():
    a = R.choice(US_AREA)
    while True:
        ex = str(R.randint(2, 9)) + rs(2, DG)
        if ex[1:] != "11" and ex != "555":
            break
    return a, ex, rs(4, DG)


def ph_us():
    return "-".join(_us())


def ph_us_paren():
    a, e, l = _us()
    return f"({a}) {e}-{l}"


def ph_us_intl():
    a, e, l = _us()
    return R.choice([f"+1 {a} {e} {l}", f"+1-{a}-{e}-{l}", f"+1 ({a}) {e}-{l}"])


def ph_us_dot():
    return ".".join(_us())


def ph_uk():
    if R.random() < 0.5:
        return f"+44 7{rs(3, DG)} {rs(6, DG)}"
    return f"07{rs(3, DG)} {rs(6, DG)}"


def ph_de():
    return R.choice([f"+49 15{R.randint(1, 9)} {rs(8, DG)}", f"+49 30 {rs(8, DG)}", f"+49 89 {rs(7, DG)}"])


def ph_jp():
    return R.choice([f"+81 90-{rs(4, DG)}-{rs(4, DG)}", f"080-{rs(4, DG)}-{rs(4, DG)}", f"+81 75-{rs(3, DG)}-{rs(4, DG)}"])


def ph_in():
    return f"+91 {R.choice('6789')}{rs(4, DG)} {rs(5, DG)}"


def ph_hk():
    return f"+852 {R.choice('569')}{rs(3, DG)} {rs(4, DG)}"


def ph_fr():
    return "+33 " + R.choice("67") + " " + " ".join(rs(2, DG) for _ in range(4))


def ph_au():
    return f"+61 4{rs(2, DG)} {rs(3, DG)} {rs(3, DG)}"


def ph_sg():
    return f"+65 {R.choice('89')}{rs(3, DG)} {rs(4, DG)}"


def ph_tw():
    return f"+886 9{rs(2, DG)} {rs(3, DG)} {rs(3, DG)}"


# --------------------------------------------------------------------------
# look-alikes for hard negatives (never labelled)
# --------------------------------------------------------------------------
def n_uuid():
    return str(uuid.UUID(int=R.getrandbits(128), version=4))


def n_git():
    return rs(40, HEX)


def n_git7():
    return rs(7, HEX)


def n_git12():
    return rs(12, HEX)


def n_sha256():
    return rs(64, HEX)


def n_md5():
    return rs(32, HEX)


def n_order():
    return str(R.randint(10**8, 10**9 - 1))


def _bad_digits(n, prefix):
    while True:
        d = prefix + rs(n - len(prefix), DG)
        if luhn_ok(d):
            continue
        if n == 18 and cnid_ok(d):
            continue
        return d


def n_order_cn():
    return _bad_digits(R.choice([18, 19]), "2024" + f"{R.randint(1, 12):02d}")


def n_serial():
    return _bad_digits(22, "4200")


def n_track_ups():
    return "1Z" + rs(6, UP + DG) + rs(2, DG) + rs(8, DG)


def n_track_sf():
    return "SF" + rs(13, DG)


def n_track_yt():
    return "YT" + rs(13, DG)


def n_track_fedex():
    return str(R.randint(2, 7)) + rs(11, DG)


def n_ip():
    return f"10.{R.randint(0, 255)}.{R.randint(0, 255)}.{R.randint(1, 254)}"


def n_ts():
    return f"2024-{R.randint(1, 12):02d}-{R.randint(1, 28):02d}T{R.randint(0, 23):02d}:{R.randint(0, 59):02d}:{R.randint(0, 59):02d}Z"


def n_epoch():
    return str(R.randint(1_700_000_000, 1_760_000_000))


def n_sshpub():
    blob = b"\x00\x00\x00\x0bssh-ed25519\x00\x00\x00\x20" + R.randbytes(32)
    return "ssh-ed25519 " + base64.b64encode(blob).decode()


def n_fpr():
    h = rs(40, "0123456789ABCDEF")
    return " ".join(h[i:i + 4] for i in range(0, 40, 4))


def n_invoice():
    return f"INV-2024-{R.randint(0, 99999):05d}"


def n_invoice_cn():
    return rs(8, DG)


def n_acct():
    return rs(12, DG)


def n_credit_code():
    chars = "0123456789ABCDEFGHJKLMNPQRTUWXY"
    return "91" + R.choice(AREAS) + rs(9, chars) + R.choice(chars)


def n_ticket():
    return f"{R.choice(['OPS', 'SUP', 'INC', 'HR'])}-{R.randint(100, 99999)}"


def n_last4():
    return rs(4, DG)


def n_zoom():
    return f"{R.choice('89')}{rs(2, DG)} {rs(4, DG)} {rs(4, DG)}"


def n_mac():
    return ":".join(rs(2, "0123456789ABCDEF") for _ in range(6))


def n_student():
    return "2021" + rs(6, DG)


def n_price():
    return f"{R.randint(1, 9)},{R.randint(100, 999)}.{R.choice(['00', '50', '99'])}"


# --------------------------------------------------------------------------
GEN = {}
TYPE_OF = {}
for _name, _fn in list(globals().items()):
    if not callable(_fn) or _name in ("cnid_check", "cnid_ok"):
        continue
    for _prefix, _typ in (("pw_", "password"), ("k_", "api_key"), ("em", "email"), ("cnid", "id_number"),
                          ("ssn", "id_number"), ("pp_", "id_number"), ("cc_", "credit_card"),
                          ("ph_", "phone"), ("n_", None)):
        if _name.startswith(_prefix):
            GEN[_name] = _fn
            TYPE_OF[_name] = _typ
            break

# --------------------------------------------------------------------------
# templates
# --------------------------------------------------------------------------
POS = [
    # ---------------- password, English ----------------
    ("en", "Grandma's wifi password is {pw_word}, all lowercase. She wrote it on a card stuck to the fridge."),
    ("en", "Note for the cabin trip: guest network is PineHollow-Guest and the key is {pw_2w}."),
    ("en", "User mentioned her Netflix password is {pw_pet} (same as her dog's name) and asked me to remember it for the new TV."),
    ("en", "Login for the NAS is admin / {pw_3w}"),
    ("en", "Tom set his work laptop password to {pw_camel} after IT reset it this morning."),
    ("en", "Backup passphrase for the family photo archive: \"{pw_phrase}\". Without it the archive can't be decrypted."),
    ("en", "Door code for the rental on Elm St is {pw_pin4}; check-in after 3pm, keys in the lockbox."),
    ("en", "Her banking app PIN is {pw_pin6}. She asked me to remind her if she forgets it again."),
    ("en", "staging .env\nDB_HOST=staging-db.internal\nDB_USER=app\nDB_PASSWORD={pw_rand}\nDB_NAME=orders"),
    ("en", "config/database.yml\nproduction:\n  adapter: postgresql\n  username: billing\n  password: {pw_mixed}\n  host: 10.0.4.12"),
    ("en", "Connection string the nightly report job uses: postgres://reporter:{pw_rand}@analytics-db.prod.internal:5432/warehouse"),
    ("en", "Ran `mysql -h 127.0.0.1 -u root -p{pw_mixed} inventory` from the jump host and it connected fine."),
    ("en", "Called the customer back; the verbal passcode on the account is {pw_word} and it matched, so I unlocked the account."),
    ("en", "wpa_supplicant.conf on the kitchen Pi:\nnetwork={\n    ssid=\"Hendersons\"\n    psk=\"{pw_2w}\"\n}"),
    ("en", "Incident 2231: Jenkins admin password was changed to {pw_wd} by Priya during the outage."),
    ("en", "The password for the shared Disney+ account is {pw_3w}. Don't change it, the grandparents use it too."),
    ("en", "Alarm disarm code is {pw_pin4}. The panel is next to the garage door, you have 30 seconds."),
    ("en", "redis.conf on cache-02 has `requirepass {pw_rand}` - move it to the secrets manager."),
    ("en", "For the office VPN use username jlee and password {pw_dice}."),
    ("en", "Set the router admin password to {pw_word} for now; the installer will change it on Thursday."),
    ("en", "The kids' Minecraft server password is {pw_word}."),
    ("en", "{\"service\": \"smtp-relay\", \"user\": \"notifications\", \"password\": \"{pw_mixed}\", \"port\": 587}"),
    ("en", "docker-compose.yml\n  db:\n    image: postgres:16\n    environment:\n      POSTGRES_USER: app\n      POSTGRES_PASSWORD: {pw_word}"),
    ("en", "Sam asked me to keep his password manager passphrase in case he gets locked out: {pw_phrase}"),
    ("en", "~/.pgpass on the ETL box:\nwarehouse.internal:5432:analytics:etl_user:{pw_rand}"),
    ("en", "Wi-Fi at the studio: network Casa_Rivera, password {pw_2w}"),
    ("en", "She changed her email password to {pw_camel} yesterday and asked me to note it down."),
    ("en", "git remote set-url origin https://deploy-bot:{pw_rand}@git.internal.acme-corp.net/ops/infra.git"),
    ("en", "HR portal temporary password for new hire Marcus: {pw_wd} (must be changed at first login)."),
    ("en", ".netrc\nmachine ftp.vendor-files.net login acme password {pw_word}"),
    ("en", "He admits he uses {pw_pet} as the password for pretty much everything, including the home router."),
    ("en", "[database]\nhost = 10.2.0.8\nuser = ledger\npassword = {pw_dice}\n"),
    ("en", "sshpass -p '{pw_mixed}' ssh -l ops bastion-1 'sudo systemctl restart nginx'"),
    ("en", "Reminder: the password for the church office printer is {pw_word}."),
    ("en", "Zoom passcode for the Monday standup is {pw_pin6}."),
    ("en", "Passphrase for the signing key on the build box is {pw_phrase} (spaces included)."),
    ("en", "The password to the WiFi at Dad's is {pw_3w}, no spaces, all lowercase."),
    ("en", "Customer wrote in chat: \"my password is {pw_camel}, can you just log in and fix it?\" Advised never to share it and forced a reset."),
    ("en", "KEYCLOAK_ADMIN=admin\nKEYCLOAK_ADMIN_PASSWORD={pw_word}"),
    ("en", "The ansible-vault password is '{pw_phrase}', spaces and all."),
    ("en", "Broker URL in the celery config: amqp://worker:{pw_word}@mq.local:5672/"),
    ("en", "backup.sh was run with --password={pw_rand} on the command line, so it is in shell history; rotate it."),
    ("en", "The alarm company's verbal password for the office is {pw_word}; they ask for it when the alarm trips."),
    ("en", "The Wi-Fi key for the guest SSID is {pw_wifi}."),
    ("en", "Her laptop login is just {pw_word}, no capitals, no numbers."),
    ("en", "Tell the dog sitter: front door code {pw_pin4}, wifi password {pw_pet}"),
    ("en", "He said the passphrase is {pw_phrase} and that it has to be typed exactly with the spaces."),
    # ---------------- password + other, English ----------------
    ("en", "Account recovery info for Aunt Rosa: login {em}, password {pw_pet}."),
    ("en", "Vendor portal creds - user: {em_work} / pass: {pw_wd}"),
    ("en", "User's phone is {ph_us} and the account PIN she set on the phone line is {pw_pin4}."),
    ("en", "SMTP settings: host smtp.mailprovider.net, user {em_work}, password {pw_rand}, port 465"),
    ("en", "Streaming login for the living-room TV: {em}, password {pw_2w}"),
    # ---------------- api_key, English ----------------
    ("en", "Set OPENAI_API_KEY={k_openai} in the worker env before running the eval script."),
    ("en", "Stripe live secret key for the shop backend: {k_stripe}"),
    ("en", "AWS creds leaked in the CI log:\nAWS_ACCESS_KEY_ID={k_aws}\nAWS_SECRET_ACCESS_KEY={k_awssec}\nRevoked both at 09:40."),
    ("en", "GitHub token for the release bot is {k_ghp}; expires in 90 days."),
    ("en", "curl -s -H \"Authorization: Bearer {k_bearer}\" https://api.partner-billing.com/v2/invoices?status=open"),
    ("en", "Alerts for the payments service post to {k_slack_hook}"),
    ("en", "Discord webhook for #deploys: {k_discord_hook}"),
    ("en", "Session token from the failing request: {k_jwt}"),
    ("en", "Maps key baked into the mobile app build: {k_google}"),
    ("en", "SENDGRID_API_KEY={k_sendgrid}"),
    ("en", "Twilio API key {k_twilio} belongs to the SMS reminders project."),
    ("en", "npm publish only worked after adding //registry.npmjs.org/:_authToken={k_npm} to .npmrc"),
    ("en", "Hugging Face token for pulling the gated model: {k_hf}"),
    ("en", "Telegram bot token for the family reminder bot: {k_telegram}"),
    ("en", "values.yaml\nslack:\n  botToken: {k_slack_bot}\n  channel: \"#oncall\""),
    ("en", "GitLab personal access token {k_gitlab} has api scope, owner is the platform team."),
    ("en", "Datadog API key for the staging agents is {k_hex32}."),
    ("en", "Notebook cell 3: client = anthropic.Anthropic(api_key=\"{k_anthropic}\")"),
    ("en", "Mailgun sending key: {k_mailgun}"),
    ("en", "The reporting job uses the restricted Stripe key {k_stripe_rk}."),
    ("en", "Fine-grained PAT for the docs repo: {k_ghfine}"),
    ("en", "Vendor requests need the header x-api-key: {k_alnum32}"),
    ("en", "Incident note: token {k_ghp} was pushed to a public gist and revoked at 14:05 UTC."),
    ("en", "kubectl --server=https://10.0.0.1:6443 --token={k_jwt} get pods -n payments"),
    ("en", "llm:\n  provider: openai\n  api_key: {k_openai}  # TODO move to env"),
    # ---------------- api_key + other, English ----------------
    ("en", "Owner of access key {k_aws} is {em_work}; ask them before rotating."),
    ("en", "Jira automation posts to {k_slack_hook}; escalation contact is {ph_us}."),
    # ---------------- email, English ----------------
    ("en", "Customer prefers to be contacted at {em} rather than by phone."),
    ("en", "Send the signed lease to {em_work} by Friday."),
    ("en", "New billing contact for the Northpeak account: {em_work}"),
    ("en", "His personal address is {em_obf_at} - he spells it out so scrapers don't grab it."),
    ("en", "contact me: {em_obf_br}"),
    ("en", "Reach the landlord at {em_obf_paren} about the boiler."),
    ("en", "User's Apple ID is {em}."),
    ("en", "Forward the invoice PDF to {em} and cc {em:2}."),
    ("en", "git config --global user.email \"{em_work}\""),
    ("en", "Alerts were still going to {em_work}, who left in March; updated the routing rule."),
    ("en", "Kid's teacher is Ms. Alvarez, {em}"),
    ("en", "From: {em}\nSubject: refund request for order 88412\nBody: item arrived damaged."),
    ("en", "The dentist's office email is {em_work}, they want the insurance card scanned."),
    ("en", "Escalations go to the shared mailbox {em_work}, monitored 24/7."),
    # ---------------- id_number, English ----------------
    ("en", "Employee SSN from the W-4: {ssn}"),
    ("en", "Caller gave full SSN {ssn} to verify - reminder: policy is last four only."),
    ("en", "Passport number {pp_us}, expires April 2031, for the visa application."),
    ("en", "UK passport no. {pp_uk}, needed for the conference registration."),
    ("en", "Dad's social security number is {ssn_plain}."),
    ("en", "Reisepass (German passport) number {pp_de} for the rental car."),
    ("en", "Indian passport {pp_in} issued in Mumbai; visa appointment on the 14th."),
    ("en", "Canadian passport number: {pp_ca}"),
    ("en", "Tax prep notes: spouse SSN {ssn}."),
    ("en", "Chinese colleague's passport number is {pp_cn}, for the hotel booking in Osaka."),
    ("en", "PRC resident ID on the contractor form: {cnid}"),
    ("en", "SSN {ssn_space} (from the scanned card)"),
    ("en", "US passport {pp_us} - keep a copy in the travel folder."),
    ("en", "Passport: {pp_uk} (British), DOB 1987-03-02, needed for the visa letter."),
    ("en", "Background check form lists SSN {ssn}."),
    ("en", "Japanese passport {pp_jp} for the visitor badge at the Osaka plant."),
    # ---------------- credit_card, English ----------------
    ("en", "Card on file: {cc_visa_g}, exp 08/27."),
    ("en", "Customer read out card number {cc_mc_g} to pay the overdue balance; payment went through."),
    ("en", "Amex {cc_amex_g} is the one to use for the team offsite booking."),
    ("en", "payment log: card={cc_visa} amount=49.00 currency=USD status=declined"),
    ("en", "Use the Discover card {cc_disc} for groceries this month."),
    ("en", "JCB card {cc_jcb} was used for the Tokyo hotel deposit."),
    ("en", "Diners Club card number {cc_diners_g} from the old expense report."),
    ("en", "Her corporate card number is {cc_dash}."),
    ("en", "old visa {cc_visa13} - probably expired."),
    ("en", "ticket dump: cc_number: {cc_mc} | name: R. Okafor"),
    ("en", "Pay the plumber with the Mastercard {cc_mc_g}, not the debit card."),
    ("en", "The UnionPay card for the Shanghai trip is {cc_up_g}."),
    ("en", "Recurring donation card: {cc_visa_g}"),
    ("en", "Replace the card on the Spotify family plan with {cc_mc}."),
    ("en", "Customer's Visa {cc_visa_dash} was charged for the annual plan."),
    # ---------------- phone, English ----------------
    ("en", "Customer callback number: {ph_us_paren}"),
    ("en", "Plumber's cell is {ph_us}, available after 5."),
    ("en", "On-call phone for this week: {ph_us_intl}"),
    ("en", "Grandpa's new number is {ph_us_dot}."),
    ("en", "London office contact: {ph_uk}"),
    ("en", "Supplier in Munich, call {ph_de} (ask for Jonas)."),
    ("en", "Hotel in Kyoto said to call {ph_jp} if the flight is late."),
    ("en", "Driver's WhatsApp: {ph_in}"),
    ("en", "HK vendor number {ph_hk}"),
    ("en", "Paris apartment host: {ph_fr}"),
    ("en", "Sydney team lead's mobile is {ph_au}."),
    ("en", "Courier in Singapore can be reached on {ph_sg}."),
    ("en", "Chinese supplier's mobile: {ph_cn_intl}"),
    ("en", "Taiwan office: {ph_tw}"),
    # ---------------- two types, English ----------------
    ("en", "Customer Jane Whitfield, {em}, {ph_us_paren}, wants the delivery moved to Saturday."),
    ("en", "Billing update: card {cc_visa_g}; receipts to {em}."),
    ("en", "HR note: new hire SSN {ssn}, emergency contact phone {ph_us}."),
    ("en", "Booking for Mr. Tanaka: passport {pp_jp}, mobile {ph_jp}."),
    ("en", "Refund to card {cc_amex_g}; customer can be reached at {ph_us_dot}."),
    ("en", "Contractor onboarding: {em_work}, SSN {ssn}."),
    ("en", "Vendor contact: Lena Fischer, {ph_de}, {em_work}"),
    ("en", "Payroll: payout goes to card {cc_mc_g}; confirm with {em_work}."),
    ("en", "Expense flagged: card {cc_visa_g} charged twice; cardholder phone {ph_us}."),

    # ---------------- password, Chinese ----------------
    ("zh", "家里的WiFi密码：{pw_pinyin}，路由器在电视柜下面。"),
    ("zh", "用户说他的QQ密码是{pw_wd}，让我帮他记一下。"),
    ("zh", "NAS 登录账号 admin，密码 {pw_2w}。"),
    ("zh", "门锁密码是{pw_pin6}，快递放门口就行。"),
    ("zh", "老妈手机的锁屏密码是{pw_birth}，就是她的生日。"),
    ("zh", "测试环境数据库：\nhost: 10.10.2.15\nuser: root\npassword: {pw_mixed}"),
    ("zh", "公司打印机的管理密码是 {pw_word}。"),
    ("zh", "孩子平板的家长控制密码：{pw_pin4}"),
    ("zh", "她把支付宝登录密码设成了{pw_pinyin}，我提醒她太简单了。"),
    ("zh", "Redis 连接串：redis://:{pw_rand}@10.0.8.21:6379/0"),
    ("zh", "宽带拨号密码是{pw_digits}，账号写在光猫背面。"),
    ("zh", "执行了 mysql -uroot -p{pw_mixed} -h 192.168.1.50 ，连接成功。"),
    ("zh", "新员工入职临时密码：{pw_wd}，首次登录后必须修改。"),
    ("zh", "客户来电，核实身份时报的查询密码是{pw_pin6}，已核对无误。"),
    ("zh", "VPN 账号 zhangwei，口令 {pw_dice}"),
    ("zh", "小区门禁密码是{pw_pin4}，物业说每月换一次。"),
    ("zh", "家里路由器后台：用户名 admin，密码 {pw_pinyin}"),
    ("zh", "他所有账号都用同一个密码：{pw_zhmix}"),
    ("zh", ".env 文件里写着 MYSQL_PASSWORD={pw_rand}，已经提醒开发别提交到仓库。"),
    ("zh", "Wi-Fi 名称 ChinaNet-8F2A，密码 {pw_wifi}。"),
    ("zh", "老板说财务系统的密码是{pw_word}，全小写。"),
    ("zh", "配置片段：\n[mail]\nsmtp_user = notice\nsmtp_pass = {pw_mixed}"),
    ("zh", "她让我在备忘录里记下小红书的密码：{pw_camel}"),
    ("zh", "git clone https://ci-bot:{pw_rand}@gitlab.huaxin-tech.cn/infra/deploy.git 这条命令里带了密码，已让同事改掉。"),
    ("zh", "这个压缩包的解压密码是{pw_2w}。"),
    ("zh", "用户设置的口令短语是“{pw_phrase}”，用于找回账号。"),
    ("zh", "密码：{pw_3w}（全部小写，没有空格）"),
    ("zh", "她的 iCloud 密码就是家里猫的名字：{pw_pet}，后面什么都没加。"),
    ("zh", "application.yml：\nspring:\n  datasource:\n    username: app\n    password: {pw_word}"),
    ("zh", "路由器 WPA2 密钥：{pw_wifi}"),
    ("zh", "同事把 Grafana 的密码改成了 {pw_2w}，说这样好记。"),
    ("zh", "爷爷说家里WiFi密码是{pw_pinyin}，全是拼音。"),
    ("zh", "客户说网银登录密码是{pw_camel}，已提醒他不要在电话里透露密码并建议修改。"),
    # ---------------- two types, Chinese ----------------
    ("zh", "邮箱 {em_qq}，密码 {pw_zhmix}，是她以前的网易云账号。"),
    ("zh", "账号：{ph_cn}，登录密码：{pw_wd}"),
    ("zh", "入职登记：姓名 李娜，身份证号 {cnid}，手机 {ph_cn}"),
    ("zh", "客户王先生，手机 {ph_cn_sp}，邮箱 {em_163}，要求下周上门安装。"),
    ("zh", "退款信息：卡号 {cc_up19_g}，持卡人电话 {ph_cn}。"),
    ("zh", "办理签证：护照号 {pp_cn}，联系邮箱 {em_qq}。"),
    ("zh", "房东的身份证 {cnid}，收租的银行卡 {cc_up19}。"),
    ("zh", "阿里云 AccessKey ID：{k_aliyun}\nAccessKey Secret：{k_aliyun_sec}"),
    ("zh", "告警联系人 {ph_cn}，通知机器人 {k_dingtalk}"),
    ("zh", "快递收件人电话 {ph_cn_dash}，备用联系电话 {ph_cn_land}"),
    ("zh", "工作邮箱 {em_work_cn}，公司座机 {ph_cn_land}"),
    ("zh", "信用卡 {cc_mc_g}，还款提醒发到 {em_163}"),
    ("zh", "酒店入住登记：身份证 {cnid}，联系电话 {ph_cn_sp}"),
    # ---------------- api_key, Chinese ----------------
    ("zh", "钉钉告警机器人地址：{k_dingtalk}"),
    ("zh", "飞书群机器人 webhook：{k_feishu}，只用于发构建通知。"),
    ("zh", "企业微信机器人：{k_wecom}"),
    ("zh", "腾讯云 SecretId：{k_tencent}"),
    ("zh", "OpenAI 的 key 是 {k_openai}，别发到群里。"),
    ("zh", "GitHub 令牌 {k_ghp} 已经过期，需要重新生成。"),
    ("zh", "接口鉴权用的 token：{k_bearer}"),
    ("zh", "前端代码里发现硬编码的 JWT：{k_jwt}，已通知负责人。"),
    ("zh", "Stripe 密钥 {k_stripe} 已在后台吊销。"),
    ("zh", "HF_TOKEN={k_hf} 写在 .bashrc 里了，记得删掉。"),
    ("zh", "百度地图 AK：{k_alnum32}"),
    ("zh", "Anthropic 的密钥 {k_anthropic} 只给评测脚本用。"),
    # ---------------- email, Chinese ----------------
    ("zh", "客户邮箱：{em_qq}"),
    ("zh", "请把报价单发到 {em_163}。"),
    ("zh", "她的邮箱是{em_zh_obf}，怕被爬虫抓所以写成这样。"),
    ("zh", "联系邮箱 {em_fw}"),
    ("zh", "HR 的邮箱：{em_work_cn}"),
    ("zh", "退款申请人邮箱 {em_163}，订单已经处理完。"),
    ("zh", "工作邮箱改成了 {em_work_cn}，旧邮箱不再使用。"),
    ("zh", "投稿邮箱：{em_hash}（#换成@）"),
    ("zh", "用户的 Apple ID 是 {em}。"),
    ("zh", "简历请发 {em_zh_obf}"),
    # ---------------- id_number, Chinese ----------------
    ("zh", "身份证号：{cnid}"),
    ("zh", "客户身份证号码 {cnid}，已完成实名核验。"),
    ("zh", "租房合同上房客的身份证是 {cnid_x}。"),
    ("zh", "护照号 {pp_cn}，签证材料里要用。"),
    ("zh", "孩子身份证号是{cnid}，报名时要填。"),
    ("zh", "爸的身份证{cnid}，帮他预约挂号用。"),
    ("zh", "订机票用的护照号码：{pp_cn}"),
    ("zh", "员工信息表：张伟 {cnid} 财务部"),
    ("zh", "保险理赔需要被保险人身份证号 {cnid_x}"),
    ("zh", "美国同事的 SSN 是 {ssn}，报税用。"),
    ("zh", "学生医保登记，身份证号码{cnid}"),
    ("zh", "外籍员工护照号：{pp_us}（美国护照）"),
    # ---------------- credit_card, Chinese ----------------
    ("zh", "银行卡号：{cc_up19}"),
    ("zh", "信用卡 {cc_up_g} 每月5号还款。"),
    ("zh", "客户的卡号是{cc_visa}，已经原路退款。"),
    ("zh", "工资卡 {cc_up19_g}，开户行招商银行深圳分行。"),
    ("zh", "万事达卡号 {cc_mc_g}，出国用。"),
    ("zh", "妈妈的储蓄卡 {cc_up}，密码她自己记着。"),
    ("zh", "支付日志：card_no={cc_up} amount=199.00 status=SUCCESS"),
    ("zh", "帮客户登记的信用卡：{cc_amex_g}（运通）"),
    ("zh", "淘宝绑定的信用卡 {cc_visa_g}"),
    ("zh", "房租从这张卡扣：{cc_up19_g}"),
    # ---------------- phone, Chinese ----------------
    ("zh", "客户手机号：{ph_cn}"),
    ("zh", "装修师傅电话 {ph_cn_sp}，下午两点后联系。"),
    ("zh", "前台座机：{ph_cn_land}"),
    ("zh", "紧急联系人：妈妈 {ph_cn_intl}"),
    ("zh", "新加坡的合作方电话：{ph_sg}"),
    ("zh", "美国客户的电话 {ph_us}，注意时差。"),
    ("zh", "香港分公司联系电话 {ph_hk}"),
    ("zh", "孩子班主任手机{ph_cn_dash}"),
    ("zh", "日本酒店的电话：{ph_jp}"),
]

NEG = [
    # ---------------- talking about passwords, English ----------------
    ("en", "The password is required for all admin accounts; SSO doesn't cover the legacy console."),
    ("en", "Reminder for the user: the password is case-sensitive, so check caps lock."),
    ("en", "Signup failed: password is too short (minimum 12 characters)."),
    ("en", "Login error shown in the app: 'Your password is incorrect. 2 attempts remaining.'"),
    ("en", "The password was reset yesterday by the help desk after the lockout."),
    ("en", "The database password is stored in the vault under prod/billing; never paste it in tickets."),
    ("en", "User asked about the wifi; the password is the same as last time, nothing changed."),
    ("en", "She said the password is on the sticker under the router."),
    ("en", "Password expired on the VPN account; the user will reset it through the self-service portal."),
    ("en", "Password is fine now - the problem was a trailing space in the username."),
    ("en", "Policy: passwords must be at least 14 characters and cannot reuse any of the last 5."),
    ("en", "Customer can't remember the password and no longer has access to the recovery mailbox; escalated to identity verification."),
    ("en", "The password field is optional when SSO is enabled."),
    ("en", "Rotated the service account password; the new one is in the team vault, item 'svc-backup'."),
    ("en", "The password is managed by IT, don't change it yourself."),
    ("en", "The strength meter shows 'weak' for any password under 10 characters."),
    ("en", "The Wi-Fi password is printed on the back of the modem."),
    ("en", "He typed the password wrong three times and the account locked for 15 minutes."),
    ("en", "auth debug: user=mchen password=******** result=ok latency=41ms"),
    ("en", "DB_PASSWORD=${DB_PASSWORD} - compose reads it from the host environment."),
    ("en", "Replace <your-password> with the password from the onboarding letter before running the installer."),
    ("en", "db_password: \"{{ vault_db_password }}\"  # filled in by ansible at deploy time"),
    ("en", "The door code changed last week; ask Maria for the new one."),
    ("en", "PIN must be 4 to 6 digits and can't be sequential."),
    ("en", "The password is weak; I suggested a passphrase instead."),
    ("en", "The Wi-Fi password is still the default one from the ISP; she never changed it."),
    ("en", "Password is empty in the sample config on purpose; the installer prompts for it."),
    ("en", "The password is correct but 2FA keeps failing because the phone clock is off."),
    ("en", "SMTP_PASSWORD=\n(left blank in .env.example, fill it locally)"),
    ("en", "No password needed for the guest network, it's open with a captive portal."),
    ("en", "The admin password is the same on all three printers - flagged to IT as a risk."),
    ("en", "The request failed with 500 because the JSON body had \"password\": null."),
    ("en", "passwd: all authentication tokens updated successfully."),
    ("en", "MYSQL_ROOT_PASSWORD_FILE=/run/secrets/mysql_root"),
    ("en", "Password: see 1Password, vault 'Family', entry 'Router'."),
    ("en", "password = None  # set at runtime from the secrets manager"),
    ("en", "The passphrase is long and random, which is why nobody remembers it; it lives in the safe deposit box."),
    ("en", "Grandpa keeps asking what his password is; told him we'd sit down together on Sunday to reset it."),
    ("en", "The PIN for the new debit card arrives by post separately."),
    ("en", "Password is hidden in the router app; tap the eye icon to reveal it."),
    # ---------------- look-alikes, English ----------------
    ("en", "Order #{n_order} shipped via UPS, tracking {n_track_ups}."),
    ("en", "Request id {n_uuid} failed with 502 at {n_ts}."),
    ("en", "Deployed commit {n_git} to prod; rollback target is {n_git7}."),
    ("en", "Upgraded the agent from v2.14.3 to v2.15.0; no config changes needed."),
    ("en", "Card ending in ****{n_last4} was declined; customer will update it in the portal."),
    ("en", "Server {n_ip} is the primary; {n_ip:2} is the replica."),
    ("en", "Added the deploy key: {n_sshpub} deploy-ci"),
    ("en", "sha256 of the release tarball: {n_sha256}"),
    ("en", "Image pinned to registry.internal/api@sha256:{n_sha256}"),
    ("en", "Invoice {n_invoice} total ${n_price}, due 2024-07-15."),
    ("en", "CI assumes role arn:aws:iam::{n_acct}:role/ci-deploy"),
    ("en", "The API key lives in the vault; set it through the OPENAI_API_KEY env var, don't hardcode it."),
    ("en", "Example request: curl -H \"Authorization: Bearer <token>\" https://api.example.net/v1/me"),
    ("en", "export STRIPE_SECRET_KEY=sk_live_xxxxxxxxxxxxxxxxxxxxxxxx   # placeholder, real one is in CI secrets"),
    ("en", "Token shows up masked in the logs as ghp_****************************Xq1F."),
    ("en", "Release signing key fingerprint: {n_fpr}"),
    ("en", "Customer's phone number on file ends in {n_last4}; asked them to confirm the full number by SMS."),
    ("en", "The SSN field must be formatted as XXX-XX-XXXX."),
    ("en", "Flight UA 857 departs 11:05; confirmation code K7XQ2P, seat 34C."),
    ("en", "Zoom meeting ID for the all-hands: {n_zoom}"),
    ("en", "The email field is required and must be unique per tenant."),
    ("en", "Container {n_git12} exited with code 137 (OOMKilled) at {n_ts}."),
    ("en", "MAC address {n_mac} belongs to the old printer on the 3rd floor."),
    ("en", "FedEx tracking number {n_track_fedex}, delivery expected Thursday."),
    ("en", "Employee ID E-204817 starts Monday; badge will be ready at reception."),
    ("en", "OAuth client_id (public, shipped in the SPA): {n_uuid}"),
    ("en", "Bearer tokens expire after 3600 seconds; refresh tokens after 30 days."),
    ("en", "ssh ubuntu@{n_ip} -i ~/.ssh/deploy_ed25519 worked after fixing the security group."),
    ("en", "Passport photos must be 2x2 inches with a white background."),
    ("en", "Checksum mismatch: expected {n_md5}, got {n_md5:2}."),
    ("en", "Unix time {n_epoch} - convert to local time before showing it to the user."),
    ("en", "The phone number format should be E.164, e.g. +<country code><subscriber number>."),

    # ---------------- talking about passwords, Chinese ----------------
    ("zh", "密码是必填项，不能为空。"),
    ("zh", "登录提示：密码错误，请重新输入。"),
    ("zh", "系统要求密码为6位数字。"),
    ("zh", "用户反馈密码已过期，已引导他通过短信重置。"),
    ("zh", "密码是大小写敏感的，提醒客户检查大写锁定。"),
    ("zh", "WiFi密码贴在路由器背面了。"),
    ("zh", "密码和上次一样，没有改。"),
    ("zh", "数据库密码存放在密钥管理服务里，不要写进代码。"),
    ("zh", "初始密码为身份证后六位，首次登录需修改。"),
    ("zh", "密码长度不能少于8位，必须同时包含字母和数字。"),
    ("zh", "忘记密码的话可以点登录页的“找回密码”。"),
    ("zh", "她说密码是对的，但一直登不上，后来发现是账号被冻结了。"),
    ("zh", "password: ${MYSQL_PASSWORD}  # 从环境变量读取"),
    ("zh", "门锁密码上周改了，新密码问物业。"),
    ("zh", "支付密码连续输错三次，账户已锁定24小时。"),
    ("zh", "密码已经重置，新的会通过短信单独发给用户本人。"),
    ("zh", "日志里的密码已经脱敏成 ****** 了。"),
    ("zh", "管理员密码由IT统一设置，员工不能自行修改。"),
    ("zh", "这个WiFi不需要密码，连上之后网页认证就行。"),
    ("zh", "密码强度：弱。建议使用更长的密码。"),
    ("zh", "奶奶又忘了手机密码，周末回去帮她重新设一个。"),
    ("zh", "密码是默认的，安装完记得改。"),
    ("zh", "取款密码和查询密码不是同一个。"),
    # ---------------- look-alikes, Chinese ----------------
    ("zh", "订单号 {n_order_cn} 已发货，顺丰单号 {n_track_sf}。"),
    ("zh", "客户手机号 138****{n_last4}，已脱敏处理。"),
    ("zh", "尾号 {n_last4} 的银行卡扣款失败，已提醒客户更换支付方式。"),
    ("zh", "身份证号码请填写18位，最后一位可能是X。"),
    ("zh", "版本从 3.2.1 升级到 3.3.0，修复了登录问题。"),
    ("zh", "服务器 IP {n_ip}，SSH 端口 22。"),
    ("zh", "请求ID {n_uuid}，时间 {n_ts}。"),
    ("zh", "提交 {n_git} 引入了这个 bug，已经回滚。"),
    ("zh", "发票号码 {n_invoice_cn}，金额 ¥{n_price}。"),
    ("zh", "快递单号 {n_track_yt}，预计周四送达。"),
    ("zh", "工号 A20417，部门 财务部，工位 5F-032。"),
    ("zh", "API Key 放在配置中心了，变量名 OPENAI_API_KEY，代码里不要写死。"),
    ("zh", "token 已打码：sk-****************9f2c"),
    ("zh", "邮箱格式不正确，请重新输入。"),
    ("zh", "身份证号已脱敏：110101********{n_last4}"),
    ("zh", "航班 CA1832 明早 08:30 起飞，座位 32K。"),
    ("zh", "文件 MD5：{n_md5}"),
    ("zh", "容器 {n_git12} 内存占用 1.2GB，已重启。"),
    ("zh", "退款 ¥{n_price} 已原路返回，交易流水号 {n_serial}。"),
    ("zh", "供应商统一社会信用代码 {n_credit_code}，已录入系统。"),
    ("zh", "验证码已发送，请在5分钟内输入。"),
    ("zh", "学号 {n_student}，三年级二班。"),
    ("zh", "部署公钥：{n_sshpub} deploy"),
    ("zh", "时间戳 {n_epoch} 需要转换成北京时间再显示。"),
    ("zh", "手机号必须是11位，座机需要带区号。"),
]

# --------------------------------------------------------------------------
# rendering and self-checks
# --------------------------------------------------------------------------
PH = re.compile(r"\{([a-z][a-z0-9_]*)(?::(\d+))?\}")
EMAIL_RE = re.compile(r"[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}")
DIGITRUN_RE = re.compile(r"\d(?:[ -]?\d){12,18}")
CNID_RE = re.compile(r"(?<![0-9A-Za-z])\d{17}[0-9Xx](?![0-9A-Za-z])")
CNMOB_RE = re.compile(r"(?<!\d)1[3-9]\d{9}(?!\d)")


def overlaps(span, spans):
    return any(span[0] < b and a < span[1] for a, b in spans)


def problems(text, secrets):
    out = []
    spans = []
    for s in secrets:
        v = s["value"]
        if not v or text.count(v) != 1:
            out.append(f"value not exactly once: {v!r}")
            continue
        i = text.index(v)
        spans.append((i, i + len(v)))
    for m in EMAIL_RE.finditer(text):
        if not overlaps(m.span(), spans):
            out.append(f"unlabelled email-like {m.group(0)!r}")
    for m in DIGITRUN_RE.finditer(text):
        d = re.sub(r"\D", "", m.group(0))
        if 13 <= len(d) <= 19 and luhn_ok(d) and not overlaps(m.span(), spans):
            out.append(f"unlabelled luhn-valid run {m.group(0)!r}")
    for m in CNID_RE.finditer(text):
        if cnid_ok(m.group(0)) and not overlaps(m.span(), spans):
            out.append(f"unlabelled valid CN id {m.group(0)!r}")
    for m in CNMOB_RE.finditer(text):
        if not overlaps(m.span(), spans):
            out.append(f"unlabelled CN mobile {m.group(0)!r}")
    return out


USED = set()  # every secret value is unique across the corpus


def render(tpl, negative):
    for _ in range(500):
        cache = {}
        secrets = []

        def rep(m):
            kind = m.group(1)
            if kind not in GEN:
                return m.group(0)
            key = (kind, m.group(2))
            if key not in cache:
                cache[key] = GEN[kind]()
                typ = TYPE_OF[kind]
                if typ is not None:
                    secrets.append({"type": typ, "value": cache[key]})
            return cache[key]

        text = PH.sub(rep, tpl)
        if negative and secrets:
            raise ValueError(f"negative template has secret placeholders: {tpl!r}")
        if not negative and not secrets:
            raise ValueError(f"positive template has no secret placeholders: {tpl!r}")
        vals = [s["value"] for s in secrets]
        if len(set(vals)) != len(vals) or any(v in USED for v in vals):
            continue
        if problems(text, secrets):
            continue
        USED.update(vals)
        return text, secrets
    raise RuntimeError(f"could not render {tpl!r}: {problems(text, secrets)}")


def main():
    items = []
    for lang, tpl in POS:
        text, secrets = render(tpl, False)
        items.append({"language": lang, "text": text, "secrets": secrets, "hard_negative": False})
    for lang, tpl in NEG:
        text, secrets = render(tpl, True)
        items.append({"language": lang, "text": text, "secrets": [], "hard_negative": True})
    R.shuffle(items)
    with open(HERE / "corpus.jsonl", "w", encoding="utf-8") as f:
        for i, it in enumerate(items, 1):
            rec = {"id": f"fsec-{i:04d}", **it}
            f.write(json.dumps(rec, ensure_ascii=False) + "\n")
    print(f"wrote {len(items)} records ({len(POS)} positive, {len(NEG)} hard negative)")


if __name__ == "__main__":
    main()

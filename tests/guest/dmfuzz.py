#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Hostile-input fuzzer for the ssdprio target, talking to device-mapper
through its ioctls directly (a dmsetup exec per case costs ~100 ms under
TCG; thousands of cases would take many minutes).

  dmfuzz.py --live NAME --origin DEV --cache DEV --spare-origin DEV
            --spare-cache DEV --config engine/config.c --tables N
            --messages N --seed S [--check-cmd CMD]

Tables are loaded into the inactive slot of an empty device (a create) or
of the live device NAME (a reload); messages go to NAME. For each case:
  - refused: the kernel log got a line naming the cause (not dm's
    "Unknown error"), and nothing changed: NAME's table line is the same,
    no inactive table was left behind;
  - accepted: the line is valid by the key table of engine/config.c
    (every value in range, the right count), and `table` prints what was
    asked (a value equal to the default is not printed);
  - a few accepted ones are resumed (a real create or reload);
  - no BUG/WARNING/Oops line in the kernel log (stops at once).
--check-cmd runs every 500 cases and at the end (the data check).
Prints a summary; exit 1 if any case broke a rule (the first 30 are
described), 0 otherwise.
"""
import argparse
import errno
import fcntl
import os
import random
import re
import struct
import subprocess
import sys
import time

# --- device-mapper ioctls (include/uapi/linux/dm-ioctl.h) ---------------------------
DM_HDR = struct.Struct("=3IIIIiIIIQ128s129s7s")  # struct dm_ioctl, 312 bytes
SPEC = struct.Struct("=QQiI16s")  # struct dm_target_spec, 40 bytes
assert DM_HDR.size == 312 and SPEC.size == 40
(DM_VERSION, DM_REMOVE_ALL, DM_LIST_DEVICES, DM_DEV_CREATE, DM_DEV_REMOVE,
 DM_DEV_RENAME, DM_DEV_SUSPEND, DM_DEV_STATUS, DM_DEV_WAIT, DM_TABLE_LOAD,
 DM_TABLE_CLEAR, DM_TABLE_DEPS, DM_TABLE_STATUS, DM_LIST_VERSIONS,
 DM_TARGET_MSG) = range(15)
F_SUSPEND = 1 << 1
F_STATUS_TABLE = 1 << 4
F_ACTIVE_PRESENT = 1 << 5
F_INACTIVE_PRESENT = 1 << 6
F_BUFFER_FULL = 1 << 8
F_QUERY_INACTIVE = 1 << 12
F_DATA_OUT = 1 << 16
BUFSZ = 64 * 1024


def ioc(nr):
    return (3 << 30) | (DM_HDR.size << 16) | (0xFD << 8) | nr


class DM:
    def __init__(self):
        self.fd = os.open("/dev/mapper/control", os.O_RDWR)

    def call(self, nr, name, flags=0, payload=b""):
        buf = bytearray(BUFSZ)
        DM_HDR.pack_into(buf, 0, 4, 0, 0, BUFSZ, DM_HDR.size, 0, 0, flags, 0, 0, 0,
                         name.encode()[:127], b"", b"")
        buf[DM_HDR.size:DM_HDR.size + len(payload)] = payload
        try:
            fcntl.ioctl(self.fd, ioc(nr), buf, True)
        except OSError as e:
            return e.errno, buf
        return 0, buf

    @staticmethod
    def hdr(buf):
        f = DM_HDR.unpack_from(buf, 0)
        return dict(data_size=f[3], data_start=f[4], target_count=f[5], flags=f[7])

    def create(self, name):
        return self.call(DM_DEV_CREATE, name)[0]

    def remove(self, name):
        return self.call(DM_DEV_REMOVE, name)[0]

    def load(self, name, length, params, ttype="ssdprio", start=0):
        p = params.encode("utf-8", "surrogateescape") + b"\0"
        p += b"\0" * (-(SPEC.size + len(p)) % 8)
        spec = SPEC.pack(start, length, 0, SPEC.size + len(p), ttype.encode()[:15])
        hdr_fix = bytearray(spec + p)
        e, buf = self.call_targets(name, hdr_fix, 1)
        return e

    def call_targets(self, name, payload, count):
        buf = bytearray(BUFSZ)
        DM_HDR.pack_into(buf, 0, 4, 0, 0, BUFSZ, DM_HDR.size, count, 0, 0, 0, 0, 0,
                         name.encode()[:127], b"", b"")
        buf[DM_HDR.size:DM_HDR.size + len(payload)] = payload
        try:
            fcntl.ioctl(self.fd, ioc(DM_TABLE_LOAD), buf, True)
        except OSError as e:
            return e.errno, buf
        return 0, buf

    def clear(self, name):
        return self.call(DM_TABLE_CLEAR, name)[0]

    def resume(self, name):
        return self.call(DM_DEV_SUSPEND, name, 0)[0]

    def flags(self, name):
        e, buf = self.call(DM_DEV_STATUS, name)
        if e:
            return None
        return self.hdr(buf)["flags"]

    def table(self, name, inactive=False, status=False):
        fl = 0 if status else F_STATUS_TABLE
        if inactive:
            fl |= F_QUERY_INACTIVE
        e, buf = self.call(DM_TABLE_STATUS, name, fl)
        if e:
            return None
        h = self.hdr(buf)
        if h["target_count"] == 0:
            return ""
        out = []
        off = h["data_start"]
        for _ in range(h["target_count"]):
            st, ln, _s, nxt, tt = SPEC.unpack_from(buf, off)
            s = buf[off + SPEC.size:buf.index(b"\0", off + SPEC.size)].decode("utf-8", "replace")
            out.append("%d %d %s %s" % (st, ln, tt.rstrip(b"\0").decode(), s))
            off = h["data_start"] + nxt
        return "\n".join(out)

    def message(self, name, msg):
        m = struct.pack("=Q", 0) + msg.encode("utf-8", "surrogateescape") + b"\0"
        e, buf = self.call(DM_TARGET_MSG, name, 0, m)
        return e


# --- kernel log ----------------------------------------------------------------------
SPLAT = re.compile(r"(^|[^A-Za-z_])BUG([^A-Za-z_]|$)|WARNING|Oops|general protection|"
                   r"hung_task|INFO: task .* blocked|lockdep|KASAN|UBSAN|Call Trace|Kernel panic")


class Kmsg:
    def __init__(self):
        self.fd = os.open("/dev/kmsg", os.O_RDONLY | os.O_NONBLOCK)
        os.lseek(self.fd, 0, os.SEEK_END)

    def read(self):
        lines = []
        while True:
            try:
                rec = os.read(self.fd, 8192)
            except BlockingIOError:
                break
            except OSError as e:
                if e.errno == errno.EPIPE:  # overwritten records: go on
                    continue
                raise
            txt = rec.decode("utf-8", "replace")
            head, _, body = txt.partition(";")
            lines.append(body.split("\n")[0])
        return lines


# --- the key table, from engine/config.c ----------------------------------------------
def parse_keys(path):
    src = open(path).read()
    consts = {"HOUR_MS": 3600 * 1000}
    enums = {}
    m = re.search(r"ssdp_write_policy_names\[\]\s*=\s*\{(.*?)\};", src, re.S)
    names = re.findall(r"\[(SSDP_WP_\w+)\]\s*=\s*\"(\w+)\"", m.group(1))
    for i, (c, n) in enumerate(names):
        consts[c] = i
    enums["ssdp_write_policy_names"] = [n for _, n in names]
    keys = {}
    body = re.search(r"ssdp_keys\[\]\s*=\s*\{(.*?)\n\};", src, re.S).group(1)
    for m in re.finditer(r"\{\s*\"(\w+)\",\s*CFG_OFF\(\w+\),\s*(SSDP_KEY_\w+),\s*([\w| ]+),"
                         r"\s*([^,]+),\s*([^,]+),\s*([^,]+),\s*(\w+)\s*\}", body):
        name, typ, scope, lo, hi, dflt, nm = m.groups()

        def ev(x):
            x = x.strip()
            for c, v in consts.items():
                x = re.sub(r"\b%s\b" % c, str(v), x)
            x = re.sub(r"(\d+)U\b", r"\1", x)
            return int(eval(x, {"__builtins__": {}}))
        # scope: SSDP_CFG_CTR alone = table only; BOTH = table and message
        keys[name] = dict(type=typ.replace("SSDP_KEY_", "").lower(),
                          msg=scope.strip() != "SSDP_CFG_CTR",
                          lo=ev(lo), hi=ev(hi), default=ev(dflt),
                          names=enums.get(nm))
    if len(keys) < 15:
        raise SystemExit("dmfuzz: parsed only %d keys from %s" % (len(keys), path))
    return keys


def u32_ok(v):
    return re.fullmatch(r"[0-9]+", v) is not None and int(v) <= 0xFFFFFFFF


def value_ok(k, v):
    """The normalised value, or None if the key's parser must refuse it."""
    t = k["type"]
    if t == "bool":
        return {"on": 1, "off": 0}.get(v)
    if t == "enum":
        return k["names"].index(v) if v in k["names"] else None
    if not u32_ok(v):
        return None
    n = int(v)
    if n < k["lo"] or n > k["hi"]:
        return None
    if t == "pow2" and n & (n - 1):
        return None
    return n


def show(k, n):
    if k["type"] == "bool":
        return "on" if n else "off"
    if k["type"] == "enum":
        return k["names"][n]
    return str(n)


BAD_NUMS = ["", "-1", "-0", "+1", "+0", "0x10", "0X1", "1e3", "1.5", "07", "00000000000000000001",
            "4294967295", "4294967296", "4294967297", "18446744073709551615",
            "18446744073709551616", "-2147483648", "2147483648", "9" * 40, "-" + "9" * 40,
            "1_000", "1,0", "½", "１", "NaN", "inf", "abc", "on", "off", "true", "ON", "\\", "\\\\",
            "'1'", '"1"', "%s", "%n%n", "$(reboot)", "1\\ 2", "\x7f", "\x01", "é" * 50, "a" * 300]


def values_for(rnd, k):
    c = []
    if k["type"] in ("u32", "pow2"):
        lo, hi = k["lo"], k["hi"]
        c += [str(lo), str(hi), str(k["default"]), str(rnd.randint(lo, hi)),
              str(hi + 1), str(lo - 1), str(hi * 2), str(1 << rnd.randint(0, 40)),
              str(rnd.randint(0, 1 << 64))]
        if k["type"] == "pow2":
            c += [str(1 << rnd.randint(0, 12)), str(3), str(hi - 1)]
    elif k["type"] == "bool":
        c += ["on", "off", "On", "OFF", "1", "0", "yes", "no", "onn", "of"]
    else:
        c += list(k["names"]) + [n.upper() for n in k["names"]] + [n[:-1] for n in k["names"]] + [
            "writeback\\", "write", "back"]
    c += BAD_NUMS
    v = rnd.choice(c)
    return v


def token(rnd):
    kind = rnd.randrange(8)
    if kind == 0:
        return str(rnd.randint(-(1 << 70), 1 << 70))
    if kind == 1:
        return "".join(rnd.choice("abcdefghijklmnopqrstuvwxyz_") for _ in range(rnd.randint(1, 30)))
    if kind == 2:
        return "".join(chr(rnd.randint(33, 126)) for _ in range(rnd.randint(1, 20)))
    if kind == 3:
        return rnd.choice(BAD_NUMS) or "x"
    if kind == 4:
        return "".join(chr(rnd.randint(0xA0, 0x2FFF)) for _ in range(rnd.randint(1, 8)))
    if kind == 5:
        return rnd.choice(["format", "flush_dirty", "reset_stats", "idle_cgroup",
                           "idle_cgroup_clear", "origin_id", "cache", "block_size"])
    if kind == 6:
        return "%016x%016x" % (rnd.getrandbits(64), rnd.getrandbits(64))
    return rnd.choice(["/dev/null", "/", "..", "/sys/fs/cgroup", "/nonexistent", "/dev/mapper/control"])


def esc(t):
    """Escape a token for dm's argument splitter (whitespace and backslash)."""
    return re.sub(r"([\s\\])", r"\\\1", t) if t else t


def parse_features(toks):
    """Kernel-equivalent split of a printed feature list: {key: value}."""
    d = {}
    cg = []
    if not toks:
        return d, cg
    n = int(toks[0])
    rest = toks[1:]
    i = 0
    while i < len(rest):
        if rest[i] == "format":
            i += 1
            continue
        if rest[i] == "idle_cgroup":
            cg.append(rest[i + 1])
        else:
            d[rest[i]] = rest[i + 1]
        i += 2
    if n != len(rest):
        raise ValueError("count %d for %d args" % (n, len(rest)))
    return d, cg


class Fuzz:
    def __init__(self, a):
        self.a = a
        self.rnd = random.Random(a.seed)
        self.dm = DM()
        self.kmsg = Kmsg()
        self.keys = parse_keys(a.config)
        self.problems = []
        self.notes = []
        self.stats = dict(tables=0, tables_refused=0, tables_resumed=0, messages=0,
                          messages_refused=0, reloads=0)
        self.live_len = int(self.dm.table(a.live).split()[1])
        self.spare_len = int(subprocess.check_output(["blockdev", "--getsz", a.spare_origin]))
        self.fz = "fz%d" % os.getpid()
        e = self.dm.create(self.fz)
        if e:
            raise SystemExit("dmfuzz: cannot create %s: %s" % (self.fz, os.strerror(e)))

    def problem(self, what):
        self.problems.append(what)
        if len(self.problems) <= 30:
            print("PROBLEM: " + what, file=sys.stderr, flush=True)

    def klog(self):
        lines = self.kmsg.read()
        for ln in lines:
            if SPLAT.search(ln):
                print("kernel: " + ln, file=sys.stderr)
                self.problem("kernel splat: " + ln)
                self.finish(abort=True)
        return lines

    def late_message(self):
        """A line longer than printk's limit (992 bytes) is cut, loses its
        newline and stays unfinished (invisible) until the next record:
        log one, and look again. Counted: the cause reaches the log late."""
        with open("/dev/kmsg", "w") as f:
            f.write("<6>dmfuzz: mark\n")
        named = [ln for ln in self.klog() if "device-mapper" in ln]
        if named:
            self.notes.append("refusal logged only when the next kernel line came (a line of "
                              "over 992 bytes, cut by printk): %s..." % named[0][:80])
            self.stats["late_messages"] = self.stats.get("late_messages", 0) + 1
        return named

    # --- tables ----------------------------------------------------------------------
    def gen_features(self, live):
        rnd = self.rnd
        toks = []
        if rnd.random() < 0.3:
            # a valid line now and then, so that accepting is tested too;
            # for the live device with its geometry, else it is refused
            for k in rnd.sample(sorted(self.keys), rnd.randint(0, 6)):
                kk = self.keys[k]
                if live and k in ("block_size", "set_size", "cache"):
                    continue
                if kk["type"] == "bool":
                    v = rnd.choice(["on", "off"])
                elif kk["type"] == "enum":
                    v = rnd.choice(kk["names"])
                elif kk["type"] == "pow2":
                    v = str(1 << rnd.randint(kk["lo"].bit_length() - 1, kk["hi"].bit_length() - 1))
                else:
                    v = str(rnd.choice([kk["lo"], kk["hi"], kk["default"], rnd.randint(kk["lo"], kk["hi"])]))
                toks += [k, v]
            return toks
        n = rnd.choice([0, 1, 1, 2, 2, 3, 5, 8])
        for _ in range(n):
            r = rnd.random()
            if r < 0.08:
                toks.append("format")
            elif r < 0.12:
                toks += ["origin_id", rnd.choice([token(rnd), "0" * 32, "%032x" % rnd.getrandbits(128),
                                                  "g" * 32, "%031x" % 5, "%033x" % 5])]
            elif r < 0.16:
                toks += ["idle_cgroup", rnd.choice(["/", "/nonexistent", "", "x", "/../..", "a" * 500])]
            elif r < 0.85:
                k = rnd.choice(list(self.keys))
                toks += [k, values_for(rnd, self.keys[k])]
            elif r < 0.92:
                toks.append(token(rnd))
            else:
                toks.append(rnd.choice(list(self.keys)))  # a key without its value
        if rnd.random() < 0.05:  # very many args
            k = rnd.choice(list(self.keys))
            toks += [k, str(self.keys[k]["default"])] * rnd.randint(20, 200)
        return toks

    def gen_table(self, live):
        rnd = self.rnd
        o, c = (self.a.origin, self.a.cache) if live else (self.a.spare_origin, self.a.spare_cache)
        length = self.live_len if live else self.spare_len
        feats = self.gen_features(live)
        if live and rnd.random() < 0.7:
            feats = ["set_size", str(self.a.live_set_size)] + feats
        if not live and rnd.random() < 0.5 and "format" not in feats:
            feats.append("format")
        count = str(len(feats))
        r = rnd.random()
        if r < 0.08:
            count = rnd.choice(["-1", str(len(feats) + 1), str(max(0, len(feats) - 1)), "4294967296",
                                str((1 << 32) + len(feats)), "0x%x" % len(feats), "+%d" % len(feats),
                                "", token(rnd), "65", "18446744073709551616"])
        devs = [o, c]
        r = rnd.random()
        if r < 0.05:
            devs = [c, o]
        elif r < 0.08:
            devs = [o, o]
        elif r < 0.12:
            devs[rnd.randrange(2)] = rnd.choice(["/dev/nonexistent", "254:999", "0:0", "7:255", token(rnd),
                                                 "/dev/null", "/dev/mapper/control"])
        elif r < 0.14:
            devs = devs[:rnd.randrange(2)]
        # the devices of the live device, for a create: refused (in use)
        elif r < 0.17 and not live:
            devs = [self.a.origin, self.a.cache]
        r = rnd.random()
        if r < 0.04:
            length = rnd.choice([0, length + 8, length * 2, (1 << 63), (1 << 64) - 1, 1])
        args = devs + ([count] if count != "" else []) + feats
        if rnd.random() < 0.03:
            args = [token(rnd) for _ in range(rnd.randint(0, 10))]
        return length, args

    def oracle_table(self, args, length, live):
        """The {key: value} a table must print if accepted, or a reason it is invalid."""
        if len(args) < 2:
            return None, "fewer than two devices"
        if len(args) == 2:
            return {}, []
        feats = args[3:]
        if not re.fullmatch(r"[0-9]+", args[2]):
            return None, "count %r not a number" % args[2]
        n = int(args[2])
        if n != len(feats):
            if n % (1 << 32) == len(feats) or n % (1 << 64) % (1 << 32) == len(feats):
                # dm core's dm_read_arg (sscanf %u) truncates: shared by
                # every target, noted, not ours to judge
                self.notes.append("count %s read as %d" % (args[2], len(feats)))
                n = len(feats)
            else:
                return None, "count %s for %d args" % (args[2], len(feats))
        if n > 64:
            return None, "more than 64 feature args"
        want = {}
        cg = []
        i = 0
        while i < len(feats):
            k = feats[i]
            if k == "format":
                i += 1
                continue
            if i + 1 >= len(feats):
                return None, "key %s without a value" % k
            v = feats[i + 1]
            i += 2
            if k == "idle_cgroup":
                cg.append(v)
                continue
            if k == "origin_id":
                if not re.fullmatch(r"[0-9a-fA-F]{32}", v) or int(v, 16) == 0:
                    return None, "bad origin_id %r" % v
                want["origin_id"] = v.lower()
                continue
            if k not in self.keys:
                return None, "unknown key %r" % k
            nv = value_ok(self.keys[k], v)
            if nv is None:
                return None, "bad value %r for %s" % (v, k)
            want[k] = nv
        return want, cg

    def check_printed(self, line, want, cg, what):
        toks = line.split()[3:]
        try:
            printed, pcg = parse_features(toks[2:])
        except (ValueError, IndexError) as e:
            self.problem("%s: printed table does not parse (%s): %s" % (what, e, line))
            return
        for k, v in printed.items():
            if k == "origin_id":
                continue
            if k not in self.keys:
                self.problem("%s: printed an unknown key %s: %s" % (what, k, line))
                continue
            if value_ok(self.keys[k], v) is None:
                self.problem("%s: printed an invalid value %s %s: %s" % (what, k, v, line))
        for k, nv in want.items():
            if k == "origin_id":
                got = printed.get(k)
                if got is not None and got.lower() != nv:
                    self.problem("%s: origin_id %s printed as %s" % (what, nv, got))
                continue
            kk = self.keys[k]
            if nv == kk["default"]:
                if k in printed:
                    self.problem("%s: default %s %s printed: %s" % (what, k, printed[k], line))
            elif printed.get(k) != show(kk, nv):
                self.problem("%s: asked %s %s, printed %s: %s" % (what, k, show(kk, nv), printed.get(k), line))

    def one_table(self, i):
        rnd = self.rnd
        live = rnd.random() < 0.5
        name = self.a.live if live else self.fz
        length, args = self.gen_table(live)
        args = [t for t in args if t]  # dm's splitter drops empty tokens
        params = " ".join(esc(t) for t in args)
        before = self.dm.table(self.a.live)
        self.klog()
        e = self.dm.load(name, length, params)
        logs = self.klog()
        what = "table %d (%s of %s) '%s' len %d" % (i, "reload" if live else "create", name,
                                                     params[:300], length)
        self.stats["tables"] += 1
        want, why = self.oracle_table(args, length, live)
        if e:
            self.stats["tables_refused"] += 1
            named = [ln for ln in logs if "device-mapper" in ln] or self.late_message()
            if not named:
                self.problem("%s: refused (%s) without a kernel message" % (what, os.strerror(e)))
            elif all("Unknown error" in ln for ln in named):
                self.problem("%s: refused with no cause: %s" % (what, named))
            fl = self.dm.flags(name)
            if fl is not None and fl & F_INACTIVE_PRESENT:
                self.problem("%s: refused but an inactive table was left" % what)
                self.dm.clear(name)
        else:
            if want is None:
                self.problem("%s: accepted, but it is invalid: %s" % (what, why))
            line = self.dm.table(name, inactive=True)
            if not line:
                self.problem("%s: accepted but no inactive table" % what)
            elif want is not None:
                self.check_printed(line, want, why, what)
            if rnd.random() < 0.1 and self.stats["tables_resumed"] < self.a.max_resumes:
                self.resume_accepted(name, live, line, what, before)
            else:
                self.dm.clear(name)
                self.klog()
        after = self.dm.table(self.a.live)
        if after != before and not (e == 0 and live and self.last_resumed == name):
            self.problem("%s: the live table changed: '%s' -> '%s'" % (what, before, after))
        self.last_resumed = None

    last_resumed = None

    def resume_accepted(self, name, live, line, what, before):
        """Make an accepted table live; for the live device only if it keeps
        caching (a reload to `cache off` would hide its dirty blocks).  A
        live resume that fails leaves the device suspended on the new table
        (dm's rule: a failed preresume keeps it live); an admin then loads
        the table from before and resumes, and so does this, which must
        bring the device back with its data."""
        toks = line.split() if line else []
        if live and ("cache" in toks and "off" in toks):
            self.dm.clear(name)
            return
        e = self.dm.resume(name)
        self.klog()
        self.stats["tables_resumed"] += 1
        self.last_resumed = name
        if e:
            # a resume may fail (load of a foreign cache at first resume...)
            # but must leave a working device behind
            print("note: resume of accepted %s failed: %s" % (what, os.strerror(e)), file=sys.stderr)
            if live:
                self.restore_live(before, what)
        if live:
            self.stats["reloads"] += 1
            st = self.dm.table(name, status=True)
            if st is None:
                self.problem("%s: no status after the reload" % what)
        else:
            # back to an empty device for the next creates
            self.dm.remove(self.fz)
            self.klog()
            e2 = self.dm.create(self.fz)
            if e2:
                self.problem("recreating %s failed: %s" % (self.fz, os.strerror(e2)))

    def restore_live(self, before, what):
        try:
            _st, ln, tt, params = before.split(" ", 3)
            ln = int(ln)
        except (AttributeError, ValueError):
            self.problem("%s: no table from before to restore: %r" % (what, before))
            self.finish(abort=True)
        self.klog()
        e = self.dm.load(self.a.live, ln, params, ttype=tt)
        if not e:
            e = self.dm.resume(self.a.live)
        logs = self.klog()
        if e:
            self.problem("%s: restoring the table from before failed (%s): %s" % (what, os.strerror(e), logs))
            # I/O to a suspended device waits forever: stop here
            self.finish(abort=True)
        if self.dm.table(self.a.live) != before:
            self.problem("%s: the restored table differs: '%s' -> '%s'"
                         % (what, before, self.dm.table(self.a.live)))

    # --- messages --------------------------------------------------------------------
    def gen_message(self):
        rnd = self.rnd
        r = rnd.random()
        keys = list(self.keys)
        if r < 0.55:
            k = rnd.choice(keys)
            return [k, values_for(rnd, self.keys[k])]
        if r < 0.62:
            return [rnd.choice(keys)]
        if r < 0.67:
            k = rnd.choice(keys)
            return [k, values_for(rnd, self.keys[k]), token(rnd)]
        if r < 0.72:
            return [rnd.choice(["flush_dirty", "reset_stats", "idle_cgroup_clear"])] + (
                [token(rnd)] if rnd.random() < 0.5 else [])
        if r < 0.77:
            return ["idle_cgroup", rnd.choice(["/", "/nonexistent", "x", "/..", "a" * 400, token(rnd)])]
        if r < 0.8:
            return ["origin_id", "%032x" % rnd.getrandbits(128)]
        if r < 0.85:
            return [token(rnd) for _ in range(rnd.randint(50, 400))]
        if r < 0.87:
            return ["a" * rnd.randint(1000, 8000)]
        return [token(rnd) for _ in range(rnd.randint(1, 4))]

    def oracle_message(self, words):
        if not words:
            return None, "empty"
        if len(words) == 1 and words[0] in ("flush_dirty", "reset_stats", "idle_cgroup_clear"):
            return "nochange" if words[0] != "idle_cgroup_clear" else "cgclear", None
        if len(words) == 2 and words[0] == "idle_cgroup":
            return "cgadd", None
        if len(words) != 2:
            return None, "%d words" % len(words)
        k, v = words
        if k not in self.keys:
            return None, "unknown key %r" % k
        if not self.keys[k]["msg"]:
            return None, "table-only key %s" % k
        nv = value_ok(self.keys[k], v)
        if nv is None:
            return None, "bad value %r for %s" % (v, k)
        return (k, nv), None

    def one_message(self, i):
        words = [w for w in self.gen_message() if w]
        if words and words[0].startswith("@"):
            words[0] = "x" + words[0]  # dm core's own messages are not ours to fuzz
        msg = " ".join(esc(w) for w in words)
        if not msg.strip():
            words = []
        before = self.dm.table(self.a.live)
        self.klog()
        e = self.dm.message(self.a.live, msg)
        logs = self.klog()
        after = self.dm.table(self.a.live)
        what = "message %d '%s'" % (i, msg[:300])
        self.stats["messages"] += 1
        want, why = self.oracle_message(words)
        if e:
            self.stats["messages_refused"] += 1
            named = [ln for ln in logs if "device-mapper" in ln] or self.late_message()
            if not named:
                self.problem("%s (%d bytes): refused (%s) without a kernel message"
                             % (what, len(msg), os.strerror(e)))
            if after != before:
                self.problem("%s: refused but the table changed: '%s' -> '%s'" % (what, before, after))
            return
        if want is None:
            self.problem("%s: accepted, but it is invalid: %s" % (what, why))
            return
        if want == "nochange":
            if after != before:
                self.problem("%s: the table changed: '%s' -> '%s'" % (what, before, after))
            return
        if want in ("cgadd", "cgclear"):
            return
        k, nv = want
        bt = before.split()[3:]
        at = after.split()[3:]
        try:
            bf, bcg = parse_features(bt[2:])
            af, acg = parse_features(at[2:])
        except (ValueError, IndexError) as ex:
            self.problem("%s: table does not parse (%s): %s" % (what, ex, after))
            return
        exp = dict(bf)
        kk = self.keys[k]
        if nv == kk["default"]:
            exp.pop(k, None)
        else:
            exp[k] = show(kk, nv)
        if af != exp or bt[:2] != at[:2] or sorted(bcg) != sorted(acg):
            self.problem("%s: table '%s' -> '%s', expected features %s" % (what, before, after, exp))

    # --- run -----------------------------------------------------------------------
    def data_check(self, when):
        if not self.a.check_cmd:
            return
        fl = self.dm.flags(self.a.live)
        if fl is None or fl & F_SUSPEND:
            self.problem("data check %s: the live device is %s" % (when, "gone" if fl is None else "suspended"))
            return
        r = subprocess.run(self.a.check_cmd, shell=True)
        if r.returncode:
            self.problem("data check %s failed (status %d)" % (when, r.returncode))

    def run(self):
        nt, nm = self.a.tables, self.a.messages
        order = ["t"] * nt + ["m"] * nm
        self.rnd.shuffle(order)
        t0 = time.monotonic()
        for i, kind in enumerate(order, 1):
            if kind == "t":
                self.one_table(i)
            else:
                self.one_message(i)
            if i % 500 == 0:
                print("[%d/%d] %.0fs %s, %d problems" % (i, len(order), time.monotonic() - t0,
                                                         self.stats, len(self.problems)),
                      file=sys.stderr, flush=True)
                self.data_check("after %d cases" % i)
        self.finish()

    def finish(self, abort=False):
        fl = self.dm.flags(self.a.live)
        if fl is not None and fl & F_INACTIVE_PRESENT:
            self.dm.clear(self.a.live)
        self.dm.remove(self.fz)
        self.klog() if not abort else None
        if not abort:
            self.data_check("at the end")
        for n in sorted(set(self.notes)):
            print("note: " + n, flush=True)
        print("summary: %s, %d problems" % (self.stats, len(self.problems)), flush=True)
        sys.exit(1 if self.problems else 0)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--live", required=True)
    p.add_argument("--origin", required=True)
    p.add_argument("--cache", required=True)
    p.add_argument("--spare-origin", required=True)
    p.add_argument("--spare-cache", required=True)
    p.add_argument("--config", required=True)
    p.add_argument("--tables", type=int, default=1000)
    p.add_argument("--messages", type=int, default=1000)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--max-resumes", type=int, default=30)
    p.add_argument("--live-set-size", type=int, default=256)
    p.add_argument("--check-cmd", default="")
    a = p.parse_args()
    Fuzz(a).run()


if __name__ == "__main__":
    main()

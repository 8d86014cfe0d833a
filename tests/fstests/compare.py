#!/usr/bin/env python3
"""Compare fstests results of the bare devices with those on ssdprio.

usage: compare.py [--expect LIST] [--asked LIST] RESULTS_DIR FS... -- CONFIG...

RESULTS_DIR/FS-CONFIG/result.xml is the xunit report of fstests' ./check
(-R xunit). Prints a line per test that did not pass in every config, the
time each run took and counts; exits 1 if a test that passed on "bare"
failed on another config, or if a run's report is missing.

--expect LIST: a file of "FS TEST..." lines (tests/fstests/check-tests), the
tests known to pass on the bare disk: each must pass in every config run
(failed, not run or missing: exit 1). For runs without the bare baseline.

--asked LIST: the same format, the tests the run was asked for (a slice of
the quick group): one with no result in a config run means the run stopped
before it (a killed or timed-out guest writes a report of what it got
through): exit 1.
"""
import os
import sys
import xml.etree.ElementTree as ET


def load(path):
    """{test: (status, message)}, status pass|fail|notrun."""
    res = {}
    root = ET.parse(path).getroot()
    for tc in root.iter("testcase"):
        name = tc.get("name")
        status, msg = "pass", ""
        for child in tc:
            if child.tag == "skipped":
                status, msg = "notrun", child.get("message") or ""
            elif child.tag in ("failure", "error"):
                status, msg = "fail", child.get("message") or ""
        res[name] = (status, msg.strip().replace("\n", " "))
    return res


def load_expect(path):
    """{fs: [test, ...]} from "FS TEST..." lines; "#" starts a comment."""
    exp = {}
    with open(path) as f:
        for line in f:
            words = line.split("#", 1)[0].split()
            if words:
                exp.setdefault(words[0], []).extend(words[1:])
    return exp


def main():
    args = sys.argv[1:]
    expect = None
    asked = {}
    while args[:1] in (["--expect"], ["--asked"]) and len(args) > 1:
        if args[0] == "--expect":
            expect = load_expect(args[1])
        else:
            asked = load_expect(args[1])
        args = args[2:]
    if len(args) < 3 or "--" not in args:
        print(__doc__, file=sys.stderr)
        return 2
    base = args[0]
    cut = args.index("--")
    fss, configs = args[1:cut], args[cut + 1:]
    bad = 0
    missing = []
    regressions = 0
    unreached = 0
    exp_pass = exp_fail = 0
    for fs in fss:
        runs = {}
        for cfg in configs:
            d = os.path.join(base, f"{fs}-{cfg}")
            xml = os.path.join(d, "result.xml")
            if not os.path.exists(xml):
                print(f"{fs} {cfg}: no result.xml in {d} (did the run finish?)")
                missing.append(f"{fs}-{cfg}")
                bad = 1
                continue
            secs = ""
            try:
                with open(os.path.join(d, "seconds")) as f:
                    secs = f.read().strip() + " s"
            except OSError:
                pass
            runs[cfg] = load(xml)
            r = runs[cfg]
            counts = {s: sum(1 for v in r.values() if v[0] == s) for s in ("pass", "fail", "notrun")}
            print(f"{fs} {cfg}: {len(r)} tests, {counts['pass']} passed, {counts['fail']} failed, "
                  f"{counts['notrun']} not run ({secs})")
        names = sorted(set().union(*[set(r) for r in runs.values()])) if runs else []
        for name in names:
            row = {cfg: runs[cfg].get(name, ("-", "")) for cfg in runs}
            if all(v[0] == "pass" for v in row.values()):
                continue
            cells = "  ".join(f"{cfg}={v[0]}" for cfg, v in row.items())
            why = next((v[1] for v in row.values() if v[1]), "")
            regress = ("bare" in row and row["bare"][0] == "pass" and
                       any(v[0] == "fail" for c, v in row.items() if c != "bare"))
            mark = "REGRESSION " if regress else ""
            print(f"  {mark}{fs} {name}: {cells}{'  (' + why[:150] + ')' if why else ''}")
            if regress:
                regressions += 1
                bad = 1
        for name in asked.get(fs, []):
            for cfg, r in runs.items():
                if name not in r:
                    print(f"  NOT-REACHED {fs} {name}: {cfg}")
                    unreached += 1
                    bad = 1
        for name in (expect or {}).get(fs, []):
            for cfg in configs:
                st = runs.get(cfg, {}).get(name, ("missing", ""))
                if st[0] == "pass":
                    exp_pass += 1
                    continue
                exp_fail += 1
                print(f"  EXPECTED-PASS {fs} {name}: {cfg}={st[0]}"
                      f"{'  (' + st[1][:150] + ')' if st[1] else ''}")
                bad = 1
    if unreached:
        print(f"compare: {unreached} test run(s) asked for have no result: "
              "the run stopped before them; nothing is said about them")
    if expect is not None:
        print("compare: " + ("a test expected to pass did not" if bad
                             else "every test expected to pass passed"))
        print(f"fstests: {exp_pass} passed, {exp_fail} failed")
        return bad
    if regressions:
        print(f"compare: {regressions} test(s) that pass on the bare device fail on ssdprio")
    if missing:
        print("compare: no results for " + ", ".join(missing) +
              ": nothing can be said about those runs")
    if not bad and "bare" not in configs:
        print("compare: no bare baseline in this run: what failed above is not "
              "compared (run those tests with --configs bare)")
    elif not bad:
        print("compare: no test that passes on the bare device fails on ssdprio")
    return bad


if __name__ == "__main__":
    sys.exit(main())

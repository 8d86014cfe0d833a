#!/usr/bin/env python3
"""bench/report.py RAW_DIR RESULTS_DIR [scenario...]

Reads the guest's raw JSON lines (RAW_DIR/<scenario>.jsonl, RAW_DIR/meta.json),
computes medians and ratios, writes RESULTS_DIR/<scenario>.json and rewrites
RESULTS_DIR/README.md (one section per scenario that has results).
"""
import json
import os
import statistics
import sys

TCG_NOTE = ("QEMU TCG emulation: the SSD floor is ~1 ms per synchronous 4 KiB I/O "
            "and the SSD/HDD contrast is ~7x, not ~70x as on real hardware. "
            "Compare ratios, not absolute figures.")


def load(raw, scen):
    path = os.path.join(raw, scen + ".jsonl")
    if not os.path.exists(path):
        return None
    rows = []
    with open(path) as f:
        for line in f:
            line = line.strip()
            if line:
                rows.append(json.loads(line))
    return rows


def med(xs):
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else None


def fmt(x, nd=2):
    if x is None:
        return "-"
    if isinstance(x, float):
        return f"{x:.{nd}f}"
    return str(x)


def skipped(rows):
    return {r["config"]: r["skipped"] for r in rows if "skipped" in r}


# ---- scenario: cache ---------------------------------------------------------
CACHE_WL = ["w3g", "r3g", "wrand", "rrand"]


def cache(rows):
    runs = [r for r in rows if "seconds" in r]
    configs = list(dict.fromkeys(r["config"] for r in runs))
    res = {"configs": {}, "skipped": skipped(rows)}
    for c in configs:
        res["configs"][c] = {}
        for w in CACHE_WL:
            secs = [r["seconds"] for r in runs if r["config"] == c and r["workload"] == w]
            res["configs"][c][w] = {"runs": secs, "median_s": med(secs)}
    for c in configs:
        for w in CACHE_WL:
            m = res["configs"][c][w]["median_s"]
            for ref in ("raw_ssd", "raw_hdd"):
                r = res["configs"].get(ref, {}).get(w, {}).get("median_s")
                res["configs"][c][w]["x_" + ref] = (m / r) if m and r else None
    md = ["| config | " + " | ".join(CACHE_WL) + " |", "|---" * (len(CACHE_WL) + 1) + "|"]
    for c in configs:
        cells = []
        for w in CACHE_WL:
            d = res["configs"][c][w]
            cells.append(f"{fmt(d['median_s'], 3)} s ({fmt(d['x_raw_ssd'])}x SSD, "
                         f"{fmt(d['x_raw_hdd'])}x HDD)")
        md.append(f"| {c} | " + " | ".join(cells) + " |")
    return res, md


# ---- scenario: contention ----------------------------------------------------
def contention(rows):
    runs = [r for r in rows if "alone_mbps" in r]
    configs = list(dict.fromkeys(r["config"] for r in runs))
    pats = list(dict.fromkeys(r["workload"] for r in runs))
    res = {"configs": {}, "skipped": skipped(rows)}
    for c in configs:
        res["configs"][c] = {}
        for p in pats:
            rs = [r for r in runs if r["config"] == c and r["workload"] == p]
            if not rs:
                continue
            alone = med([r["alone_mbps"] for r in rs])
            with_ = med([r["with_mbps"] for r in rs])
            res["configs"][c][p] = {
                "runs": rs,
                "alone_mbps": alone, "with_idle_mbps": with_,
                "ratio": (with_ / alone) if alone else None,
                "ratio_runs": [r["with_mbps"] / r["alone_mbps"] if r["alone_mbps"] else None for r in rs],
                "idle_mbps": med([r["idle_mbps"] for r in rs]),
            }
    md = ["| config | pattern | normal alone MB/s | normal with idle MB/s | with/alone | idle reader MB/s |",
          "|---|---|---|---|---|---|"]
    for c in configs:
        for p in pats:
            d = res["configs"][c].get(p)
            if d:
                md.append(f"| {c} | {p} | {fmt(d['alone_mbps'])} | {fmt(d['with_idle_mbps'])} | "
                          f"{fmt(100 * d['ratio'] if d['ratio'] is not None else None, 1)}% | "
                          f"{fmt(d['idle_mbps'])} |")
    return res, md


# ---- scenario: timeline ------------------------------------------------------
def timeline(rows):
    runs = [r for r in rows if "idle_series" in r]
    res = {"configs": {}, "skipped": skipped(rows)}
    md = ["| config | normal MB/s (mean while running) | idle MB/s while normal runs | "
          "idle MB/s after normal + batch_mode_delay | idle reaches 80% of its final rate after normal ends (s) |",
          "|---|---|---|---|---|"]
    for r in runs:
        c = r["config"]
        n0 = r["normal_start"]
        n1 = n0 + r["normal_seconds"]
        bmd = r["batch_mode_delay_s"]
        idle = r["idle_series"]
        normal = r["normal_series"]
        during = [v for t, v in idle if n0 + 1 < t <= n1]
        after = [v for t, v in idle if t > n1 + bmd + 1]
        nmean = statistics.mean([v for t, v in normal]) if normal else None
        final = statistics.mean(after) if after else None
        reach = None
        if final:
            for t, v in idle:
                if t > n1 and v >= 0.8 * final:
                    reach = t - n1
                    break
        d = {"normal_mbps": nmean,
             "idle_during_mbps": statistics.mean(during) if during else None,
             "idle_after_mbps": final, "idle_ramp_s": reach, "run": r}
        res["configs"][c] = d
        md.append(f"| {c} | {fmt(nmean)} | {fmt(d['idle_during_mbps'])} | {fmt(final)} | {fmt(reach, 1)} |")
    return res, md


HANDLERS = {"cache": cache, "contention": contention, "timeline": timeline}
TITLES = {
    "cache": "Cache (dm-ssd paper table 3): time per workload, median; ratio to raw SSD / raw HDD",
    "contention": "Contention (deadline paper fig. 10/11): normal job alone vs with an `ionice -c3` sequential reader, medians",
    "timeline": "Timeline (deadline paper fig. 15): normal and idle sequential readers, per second",
}
PLOTS = {"cache": "cache.png", "contention": "contention.png", "timeline": "timeline.png"}


def main():
    raw, out = sys.argv[1], sys.argv[2]
    wanted = sys.argv[3:]
    os.makedirs(out, exist_ok=True)
    meta = {}
    mp = os.path.join(raw, "meta.json")
    if os.path.exists(mp):
        with open(mp) as f:
            meta = json.load(f)
    for scen in wanted:
        rows = load(raw, scen)
        if rows is None:
            # Requested but not measured (guest killed or timed out): say so
            # rather than leave an older run's figures next to this run's.
            print(f"report: no raw results for {scen}", file=sys.stderr)
            rows = [{"scenario": scen, "failed": True}]
        failed = any(r.get("failed") for r in rows)
        h = HANDLERS.get(scen)
        if h:
            res, md = h(rows)
        else:
            res, md = {"skipped": skipped(rows)}, []
        res.update({"scenario": scen, "meta": meta, "failed": failed, "note": TCG_NOTE})
        with open(os.path.join(out, scen + ".json"), "w") as f:
            json.dump(res, f, indent=1)
        with open(os.path.join(out, scen + ".md"), "w") as f:
            f.write("\n".join(md) + "\n")
        if md:
            print(f"\n## {scen}\n" + "\n".join(md))
    write_readme(out, meta)


def write_readme(out, meta):
    lines = ["# dm-ssdprio bench: latest results", "",
             "Written by `bench/run` (see docs/bench.md). Each scenario's section comes from its last run.", "",
             f"> {TCG_NOTE}", ""]
    for scen in ["cache", "contention", "timeline", "sweep", "cachefull", "evict", "memory"]:
        jp = os.path.join(out, scen + ".json")
        if not os.path.exists(jp):
            continue
        with open(jp) as f:
            res = json.load(f)
        m = res.get("meta", {})
        lines.append(f"## {scen}")
        lines.append("")
        lines.append(TITLES.get(scen, scen))
        lines.append("")
        lines.append(f"Kernel {m.get('kernel', '?')}, {m.get('date', '?')}, "
                     f"{'QUICK smoke run, ' if m.get('quick') else ''}{m.get('reps', '?')} repetition(s) "
                     f"(medians), guest {m.get('cpus', '?')} CPUs / {m.get('mem_mb', '?')} MiB under QEMU TCG, {m.get('fio', '')}.")
        model = m.get("model", {})
        if model:
            lines.append("")
            for k in ("hdd", "ssd", "sched_hdd"):
                if k in model:
                    lines.append(f"- {k}: {model[k]}")
        lines.append("")
        lines.append(f"*{TCG_NOTE}*")
        lines.append("")
        mdp = os.path.join(out, scen + ".md")
        if os.path.exists(mdp):
            with open(mdp) as f:
                lines.append(f.read().rstrip())
        if res.get("failed"):
            lines.append("\n**This scenario failed or did not finish in the guest (see bench/run's output); "
                         "the figures above, if any, are partial.**")
        for c, why in res.get("skipped", {}).items():
            lines.append(f"\n- skipped {c}: {why}")
        if scen in PLOTS and os.path.exists(os.path.join(out, PLOTS[scen])):
            lines.append(f"\n![{scen}]({PLOTS[scen]})")
        lines.append("")
    with open(os.path.join(out, "README.md"), "w") as f:
        f.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()

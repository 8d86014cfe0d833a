#!/usr/bin/env python3
"""bench/report.py RAW_DIR RESULTS_DIR [scenario...]

Reads the guest's raw JSON lines (RAW_DIR/<scenario>.jsonl, RAW_DIR/meta.json,
RAW_DIR/host.json, artifacts in RAW_DIR/files/), computes medians, ratios and
the issue's goals, writes RESULTS_DIR/<scenario>.json and <scenario>.md and
rewrites RESULTS_DIR/README.md (one section per scenario that has results).
Plain python3, no third-party modules.
"""
import json
import os
import statistics
import sys

TCG_NOTE = ("QEMU TCG emulation: the SSD floor is ~1 ms per synchronous 4 KiB I/O "
            "and the SSD/HDD contrast is ~7x, not ~70x as on real hardware. "
            "Compare ratios, not absolute figures.")
SCEN_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "scenarios")


def header(scen, key):
    """A "# key: value" header line of bench/scenarios/<scen>.sh (the registry)."""
    try:
        with open(os.path.join(SCEN_DIR, scen + ".sh")) as f:
            for line in f:
                if line.startswith(f"# {key}:"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return None


def ordered():
    names = [f[:-3] for f in os.listdir(SCEN_DIR) if f.endswith(".sh")]
    return sorted(names, key=lambda n: (int(header(n, "order") or 999), n))


# A scenario's report: the function named after it; with a second parameter
# it is also given the raw results directory.
HANDLERS = {}


def scenario(fn):
    HANDLERS[fn.__name__] = fn
    return fn


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


def mean(xs):
    xs = [x for x in xs if x is not None]
    return statistics.mean(xs) if xs else None


def fmt(x, nd=2):
    if x is None:
        return "-"
    if isinstance(x, float):
        return f"{x:.{nd}f}"
    return str(x)


def pct(x, nd=1):
    return "-" if x is None else f"{100 * x:.{nd}f}%"


def ratio(a, b):
    return (a / b) if (a is not None and b) else None


def verdict(ok):
    return "-" if ok is None else ("met" if ok else "**not met**")


def skipped(rows):
    return {r["config"]: r["skipped"] for r in rows if "skipped" in r}


# ---- fio bandwidth series ----------------------------------------------------
# A series is [[unix_s, MB/s], ...] from a fio bw log written with
# log_avg_msec=W: each entry is the mean over the W before its time stamp.
# Windows without a completion may be missing: they count as zero.

def series_window(series, avg_s):
    """(start, end) of the job that logged series: from its first window's
    start to its last entry."""
    if not series:
        return None
    return series[0][0] - avg_s, series[-1][0]


def series_mean(series, t0, t1, avg_s):
    """Mean MB/s of a series over [t0, t1]."""
    if t1 <= t0:
        return None
    total = 0.0
    prev = None
    for t, v in series:
        a = t - avg_s if prev is None else max(prev, t - avg_s)
        prev = t
        lo, hi = max(a, t0), min(t, t1)
        if hi > lo:
            total += v * (hi - lo)
    return total / (t1 - t0)


# ---- scenario: cache ---------------------------------------------------------
CACHE_WL = ["w3g", "r3g", "wrand", "rrand"]
PEERS = ["dmcache", "writecache", "bcache"]
STATUS_KEYS = ["write_hits", "write_misses", "bypassed", "read_hits", "read_misses", "limbo_sets", "meta_commits",
               "promotions", "seq_skipped", "dirty_blocks", "free_sets", "total_sets", "evict_state",
               "blocks_written_back", "sets_evicted"]


@scenario
def cache(rows):
    runs = [r for r in rows if "seconds" in r]
    configs = list(dict.fromkeys(r["config"] for r in runs))
    res = {"configs": {}, "skipped": skipped(rows)}
    for c in configs:
        res["configs"][c] = {}
        for w in CACHE_WL:
            rs = [r for r in runs if r["config"] == c and r["workload"] == w]
            secs = [r["seconds"] for r in rs]
            d = {"runs": secs, "median_s": med(secs)}
            st = [r["status"] for r in rs if "status" in r]
            if st:
                # Status after this workload (fresh devices for each
                # workload), each repetition.
                d["status_after"] = [{k: s.get(k) for k in STATUS_KEYS} for s in st]
            res["configs"][c][w] = d
    for c in configs:
        for w in CACHE_WL:
            m = res["configs"][c][w]["median_s"]
            for ref in ("raw_ssd", "raw_hdd"):
                r = res["configs"].get(ref, {}).get(w, {}).get("median_s")
                res["configs"][c][w]["x_" + ref] = ratio(m, r)
    md = ["| config | " + " | ".join(CACHE_WL) + " |", "|---" * (len(CACHE_WL) + 1) + "|"]
    for c in configs:
        cells = []
        for w in CACHE_WL:
            d = res["configs"][c][w]
            cells.append(f"{fmt(d['median_s'], 3)} s ({fmt(d['x_raw_ssd'])}x SSD, "
                         f"{fmt(d['x_raw_hdd'])}x HDD)")
        md.append(f"| {c} | " + " | ".join(cells) + " |")

    sp = res["configs"].get("ssdprio")
    goals = {}
    if sp:
        goals["wrand <= 1.2x raw SSD"] = (sp["wrand"]["x_raw_ssd"],
                                          None if sp["wrand"]["x_raw_ssd"] is None
                                          else sp["wrand"]["x_raw_ssd"] <= 1.2)
        for w in ("r3g", "rrand"):
            x = sp[w]["x_raw_hdd"]
            goals[f"{w} <= 1.05x raw HDD"] = (x, None if x is None else x <= 1.05)
        for w in CACHE_WL:
            peers = [res["configs"][p][w]["median_s"] for p in PEERS
                     if p in res["configs"] and res["configs"][p][w]["median_s"]]
            best = min(peers) if peers else None
            x = ratio(sp[w]["median_s"], best)
            goals[f"{w} at least as fast as the best peer"] = (x, None if x is None else x <= 1.0)
        # Run-to-run spread, to read the verdicts by: ratios within it are ties.
        spread = {}
        for w in CACHE_WL:
            rr = [x for x in sp[w]["runs"] if x]
            if len(rr) > 1 and med(rr):
                spread[w] = (max(rr) - min(rr)) / med(rr)
        res["ssdprio_spread"] = spread
        md += ["", "Goals (the cache scenario, the dm-ssd paper's table 3), ssdprio:", "",
               "| goal | ssdprio | verdict |", "|---|---|---|"]
        for g, (x, ok) in goals.items():
            unit = "x the best peer" if "peer" in g else ("x SSD" if "SSD" in g else "x HDD")
            md.append(f"| {g} | {fmt(x)}{unit} | {verdict(ok)} |")
        if spread:
            md.append("\nRun-to-run spread of ssdprio's times ((max - min) / median): " +
                      ", ".join(f"{w} {100 * v:.0f}%" for w, v in spread.items()) +
                      ". Ratios closer to 1 than that are ties.")
        res["goals"] = {g: {"value": x, "met": ok} for g, (x, ok) in goals.items()}
        st = sp["wrand"].get("status_after")
        if st:
            md += ["", "ssdprio's counters after each workload (repetition 1; fresh devices per workload):", "",
                   "| after | " + " | ".join(STATUS_KEYS) + " |", "|---" * (len(STATUS_KEYS) + 1) + "|"]
            for w in CACHE_WL:
                s = (sp[w].get("status_after") or [{}])[0]
                md.append(f"| {w} | " + " | ".join(fmt(s.get(k)) for k in STATUS_KEYS) + " |")
    return res, md


# ---- scenario: contention ----------------------------------------------------
PATTERNS = ["seqread", "seqwrite", "randread", "randwrite"]


def contention_run(r):
    """Per-run figures from the two bandwidth logs (0.5 s windows)."""
    avg = 0.5
    win = series_window(r.get("normal_series"), avg)
    out = {"alone_mbps": r["alone_mbps"], "with_mbps": r["with_mbps"],
           "ratio": ratio(r["with_mbps"], r["alone_mbps"])}
    idle = r.get("idle_series") or []
    if win:
        n0, n1 = win
        out["idle_during_mbps"] = series_mean(idle, n0, n1, avg)
        if r.get("tail_s", 1) > 1 and idle:
            end = idle[-1][0]
            # Final rate: the idle job alone in batch mode (last 2 s, the
            # very last partial window left out).
            final = series_mean(idle, end - 2.5, end - avg, avg)
            out["idle_final_mbps"] = final
            out["idle_resume_s"] = None
            if final:
                for t, v in idle:
                    if t > n1 + avg and v >= 0.5 * final:
                        out["idle_resume_s"] = round(t - n1, 2)
                        break
    else:
        out["idle_during_mbps"] = r.get("idle_mbps")
    return out


@scenario
def contention(rows):
    runs = [r for r in rows if "alone_mbps" in r]
    configs = list(dict.fromkeys(r["config"] for r in runs))
    pats = [p for p in PATTERNS if any(r["workload"] == p for r in runs)]
    res = {"configs": {}, "skipped": skipped(rows)}
    notes = []
    for c in configs:
        res["configs"][c] = {}
        for p in pats:
            rs = [r for r in runs if r["config"] == c and r["workload"] == p]
            if not rs:
                continue
            per = [contention_run(r) for r in rs]
            alone = med([x["alone_mbps"] for x in per])
            with_ = med([x["with_mbps"] for x in per])
            tails = [x for x in per if "idle_final_mbps" in x]
            d = {
                "runs": rs,
                "per_run": per,
                "alone_mbps": alone, "with_idle_mbps": with_,
                "ratio": ratio(with_, alone),
                "ratio_runs": [x["ratio"] for x in per],
                "ratio_median_of_runs": med([x["ratio"] for x in per]),
                "idle_mbps": med([x["idle_during_mbps"] for x in per]),
                "idle_final_mbps": tails[0]["idle_final_mbps"] if tails else None,
                "idle_resume_s": tails[0]["idle_resume_s"] if tails else None,
            }
            if c in ("hdd_ssdprio_sched", "hdd_ssdprio", "ssd_ssdprio_sched"):
                need = 0.99 if c.startswith("ssd") else 0.95
                d["goal"] = need
                d["goal_met"] = None if d["ratio"] is None else d["ratio"] >= need
            res["configs"][c][p] = d
            cached = rs[0].get("cached")
            if cached and (c, cached) not in notes:
                notes.append((c, cached))
    md = ["| config | pattern | normal alone MB/s | normal with idle MB/s | with/alone (median of runs) | "
          "idle reader MB/s while normal runs | idle after normal ends: resumes after s / MB/s | goal |",
          "|---|---|---|---|---|---|---|---|"]
    for c in configs:
        for p in pats:
            d = res["configs"][c].get(p)
            if not d:
                continue
            goal = "-"
            if "goal" in d:
                goal = f">= {int(100 * d['goal'])}%: {verdict(d['goal_met'])}"
            tail = "-"
            if d["idle_final_mbps"] is not None:
                tail = f"{fmt(d['idle_resume_s'], 1)} s / {fmt(d['idle_final_mbps'])}"
            md.append(f"| {c} | {p} | {fmt(d['alone_mbps'])} | {fmt(d['with_idle_mbps'])} | "
                      f"{pct(d['ratio'])} ({pct(d['ratio_median_of_runs'])}) | {fmt(d['idle_mbps'])} | "
                      f"{tail} | {goal} |")
    for c, n in notes:
        md.append(f"\n- {c}: {n}")
    md.append("\n- with/alone is the ratio of the medians (in brackets: the median of the per-run ratios). "
              "Idle after normal ends: from the repetition whose idle reader ran on for batch_mode_delay + 3 s "
              "after the normal job: seconds from the normal job's end until the idle reader is back at half "
              "its final rate, and that final rate (alone on the device).")
    return res, md


# ---- scenario: timeline ------------------------------------------------------
@scenario
def timeline(rows):
    runs = [r for r in rows if "idle_series" in r]
    res = {"configs": {}, "skipped": skipped(rows)}
    md = ["| config | normal MB/s (mean while running) | idle MB/s while normal runs | "
          "idle MB/s once alone (after batch_mode_delay) | idle at 80% of that, s after normal ends | "
          "goal: idle near zero / full within batch_mode_delay + 1 s |",
          "|---|---|---|---|---|---|"]
    for r in runs:
        c = r["config"]
        idle, normal = r["idle_series"], r["normal_series"]
        if not idle or not normal:
            continue
        avg = r.get("log_avg_ms", 1000) / 1000.0
        t0 = idle[0][0] - avg
        n0, n1 = series_window(normal, avg)
        bmd = r["batch_mode_delay_s"]
        nmean = series_mean(normal, n0, n1, avg)
        during = series_mean(idle, n0 + avg, n1, avg)
        end = idle[-1][0]
        final = series_mean(idle, n1 + bmd + 1, end - avg, avg)
        reach = None
        if final:
            for t, v in idle:
                if t > n1 and v >= 0.8 * final:
                    reach = round(t - n1, 2)
                    break
        near_zero = None if during is None or not final else during <= 0.05 * final
        # reach is a window's end: the window lies wholly within bmd + 1 s
        # when it ends by then (plus one window for 1 s logs, whose ends
        # fall up to a second after the ramp).
        in_time = None if final is None else (
            reach is not None and reach <= bmd + 1 + (avg if avg >= 1 else 0))
        d = {"normal_mbps": nmean, "idle_during_mbps": during, "idle_after_mbps": final,
             "idle_ramp_s": reach, "goal_idle_near_zero": near_zero,
             "goal_full_within_bmd_plus_1s": in_time,
             "plot": {"normal": [[round(t - t0, 2), v] for t, v in normal],
                      "idle": [[round(t - t0, 2), v] for t, v in idle],
                      "normal_start": round(n0 - t0, 2), "normal_end": round(n1 - t0, 2),
                      "batch_mode_delay_s": bmd,
                      "idle_dispatch_interval_ms": r["idle_dispatch_interval_ms"]},
             "status": r.get("status")}
        res["configs"][c] = d
        goal = "-" if not c.startswith("hdd_ssdprio") else f"{verdict(near_zero)} / {verdict(in_time)}"
        md.append(f"| {c} | {fmt(nmean)} | {fmt(during)} | {fmt(final)} | {fmt(reach, 1)} | {goal} |")
    md.append("\n- One run per configuration (a time series; 250 ms averages from fio's bandwidth log). "
              "'Near zero' = below 5% of the idle reader's rate once alone; 'full within' = a window "
              "at >= 80% of that rate ends at most batch_mode_delay + 1 s after the normal job.")
    return res, md


# ---- scenario: sweep ---------------------------------------------------------
@scenario
def sweep(rows):
    res = {"configs": {}, "skipped": skipped(rows)}
    base = [r for r in rows if r.get("config") == "baseline"]
    runs = [r for r in rows if r.get("config") == "ssdprio" and "interval_ms" in r]
    bl = {"normal_iops": med([r["normal_iops"] for r in base]),
          "normal_lat_mean_ms": med([r["normal_lat_mean_ms"] for r in base]),
          "normal_lat_p99_ms": med([r["normal_lat_p99_ms"] for r in base])}
    res["baseline"] = bl
    pts = []
    for ms in sorted({r["interval_ms"] for r in runs}):
        rs = [r for r in runs if r["interval_ms"] == ms]
        idle = []
        for r in rs:
            win = series_window(r.get("normal_series"), 0.5)
            idle.append(series_mean(r.get("idle_series") or [], *win, 0.5) if win else None)
        p = {"interval_ms": ms, "idle_mbps_runs": idle, "idle_mbps": med(idle),
             "idle_bios": med([r["idle_bios"] for r in rs]),
             "normal_iops": med([r["normal_iops"] for r in rs]),
             "normal_lat_mean_ms": med([r["normal_lat_mean_ms"] for r in rs]),
             "normal_lat_p99_ms": med([r["normal_lat_p99_ms"] for r in rs])}
        p["normal_iops_vs_alone"] = ratio(p["normal_iops"], bl["normal_iops"])
        pts.append(p)
    res["points"] = pts
    res["configs"] = {"ssdprio": {"points": len(pts)}} if pts else {}
    md = ["| idle_dispatch_interval ms | idle MB/s during normal load | idle bios dispatched | "
          "normal IOPS (vs alone) | normal mean / p99 latency ms |", "|---|---|---|---|---|"]
    md.append(f"| (normal alone) | - | - | {fmt(bl['normal_iops'], 1)} | "
              f"{fmt(bl['normal_lat_mean_ms'])} / {fmt(bl['normal_lat_p99_ms'])} |")
    for p in pts:
        md.append(f"| {p['interval_ms']} | {fmt(p['idle_mbps'], 3)} | {fmt(p['idle_bios'])} | "
                  f"{fmt(p['normal_iops'], 1)} ({pct(p['normal_iops_vs_alone'])}) | "
                  f"{fmt(p['normal_lat_mean_ms'])} / {fmt(p['normal_lat_p99_ms'])} |")
    md.append("\n- Normal load: 4 KiB random reads, queue depth 1, 20 ms think time after each; idle: an "
              "`ionice -c3` 128 KiB sequential reader. ssdprio `cache off`, other knobs default "
              "(idle_grace 10 ms). Medians over the repetitions; idle MB/s from its bandwidth log over the "
              "normal job's time window; idle bios = `idle_dispatched` growth during the normal job "
              "(includes fio's start-up).")
    return res, md


# ---- scenario: think ---------------------------------------------------------
THINK_KEPT, THINK_P99 = 0.97, 1.10


def think_share_goal(think_ms):
    """The idle share the goals ask for at a think time (None: no goal)."""
    return 0.8 if think_ms >= 50 else 0.5 if think_ms >= 20 else None


def think_run(r, svc_ms, idle_alone):
    """One measurement's figures: kept, idle share, p99 ratio."""
    avg = 0.5
    win = series_window(r.get("normal_series"), avg)
    idle = series_mean(r.get("idle_series") or [], *win, avg) if win else None
    used = r["with_iops"] * svc_ms / 1000 if svc_ms else None
    unused = None if used is None else max(0.0, 1 - used)
    # Below 5% unused (think 0) the share is noise over almost nothing.
    share = (idle / (idle_alone * unused)) if (idle is not None and idle_alone and unused and unused >= 0.05) \
        else None
    met = ratio(r.get("normal_met_idle"), r.get("with_ios")) if r.get("with_ios") else None
    return {"rep": r["rep"], "kept": ratio(r["with_iops"], r["alone_iops"]),
            "p99_ratio": ratio(r["with_p99_ms"], r["alone_p99_ms"]),
            "idle_mbps": idle, "idle_alone_mbps": idle_alone, "svc_ms": svc_ms,
            "unused": unused, "idle_share": share,
            "alone_iops": r["alone_iops"], "with_iops": r["with_iops"],
            "alone_p99_ms": r["alone_p99_ms"], "with_p99_ms": r["with_p99_ms"],
            "idle_injected": r.get("idle_injected"), "idle_dispatched": r.get("idle_dispatched"),
            "normal_met_idle": r.get("normal_met_idle"), "met_share": met,
            "rate_iops": r.get("rate_iops")}


@scenario
def think(rows):
    res = {"configs": {}, "skipped": skipped(rows),
           "goals": {"kept": THINK_KEPT, "p99_ratio": THINK_P99, "idle_share": {"20": 0.5, "50": 0.8}}}
    runs = [r for r in rows if "alone_iops" in r]
    ialone = [r for r in rows if "idle_alone_mbps" in r]
    configs = list(dict.fromkeys(r["config"] for r in runs))
    thinks = list(dict.fromkeys(r["workload"] for r in runs))
    md = ["| config | think | kept (runs) | normal p99 beside / alone (runs) | idle MB/s beside (alone) | "
          "device time unused | idle share (runs) | normal bios meeting idle / idle_injected / idle_dispatched |",
          "|---|---|---|---|---|---|---|---|"]
    verdicts = []
    for c in configs:
        rc = [r for r in runs if r["config"] == c]
        svc = {r["rep"]: r["alone_mean_ms"] for r in rc if r["workload"] == "0"}
        ia = {r["rep"]: r["idle_alone_mbps"] for r in ialone if r["config"] == c}
        svc_med, ia_med = med(list(svc.values())), med(list(ia.values()))
        res["configs"][c] = {}
        ok = {"kept": True, "p99": True, "share": True}
        for t in thinks:
            rs = [r for r in rc if r["workload"] == t]
            if not rs:
                continue
            per = [think_run(r, svc.get(r["rep"], svc_med), ia.get(r["rep"], ia_med)) for r in rs]
            think_ms = rs[0]["think_ms"]
            d = {"think_ms": think_ms, "process": rs[0]["process"], "runs": rs, "per_run": per}
            for k in ("kept", "p99_ratio", "idle_mbps", "idle_alone_mbps", "unused", "idle_share",
                      "met_share", "idle_injected", "idle_dispatched", "normal_met_idle", "rate_iops"):
                d[k] = med([x[k] for x in per])
            d["kept_met"] = None if d["kept"] is None else d["kept"] >= THINK_KEPT
            d["p99_met"] = None if d["p99_ratio"] is None else d["p99_ratio"] <= THINK_P99
            need = think_share_goal(think_ms)
            d["share_goal"] = need
            d["share_met"] = None if need is None else (d["idle_share"] is not None and d["idle_share"] >= need)
            for k, m in (("kept", "kept_met"), ("p99", "p99_met"), ("share", "share_met")):
                if d[m] is False:
                    ok[k] = False
            res["configs"][c][t] = d

            def runs_of(k, nd=2):
                return " ".join(fmt(x[k], nd) for x in per)
            label = f"{think_ms} ms" + (f" exp ({fmt(d['rate_iops'], 0)} IOPS)" if d["process"] == "poisson" else "")
            share = f"{fmt(d['idle_share'])} ({runs_of('idle_share')})"
            if need is not None:
                share += f" {'' if d['share_met'] else '**'}>= {need}{'' if d['share_met'] else '**'}"
            inj = "-"
            if "_ssdprio" in c:
                inj = (f"{pct(d['met_share'])} / {fmt(d['idle_injected'], 0)} / "
                       f"{fmt(d['idle_dispatched'], 0)}")
            md.append(f"| {c} | {label} | {fmt(d['kept'])} ({runs_of('kept')}) | "
                      f"{fmt(d['p99_ratio'])} ({runs_of('p99_ratio')}) | "
                      f"{fmt(d['idle_mbps'])} ({fmt(d['idle_alone_mbps'])}) | {pct(d['unused'], 0)} | "
                      f"{share} | {inj} |")
        res["configs"][c]["goals"] = ok
        verdicts.append(f"| {c} | {verdict(ok['kept'])} | {verdict(ok['p99'])} | {verdict(ok['share'])} |")
    md += ["", "Goals (medians of the repetitions; every think time):", "",
           f"| config | kept >= {THINK_KEPT} | p99 <= {THINK_P99}x alone | "
           "idle share >= 0.5 at think >= 20 ms, >= 0.8 at 50 ms |", "|---|---|---|---|"] + verdicts
    md.append("\n- Normal job: 4 KiB random reads, psync, queue depth 1, fixed think time after each read "
              "(exp: Poisson arrivals at the IOPS the fixed job of that think time reached alone). Idle job: "
              "an `ionice -c3` 128 KiB sequential reader, libaio, queue depth 4, beside it on the same device model. "
              "kept = normal IOPS beside the reader / alone (same fio run). idle share = the reader's MB/s "
              "over the normal job's window / (its MB/s alone x the device time the normal job leaves unused); "
              "device time used = normal IOPS beside x its mean completion latency alone at think 0 (same "
              "config and repetition). Unused below 5% (think 0): no share. Medians first, then every "
              "repetition's value in order. Normal bios meeting idle = growth of `normal_met_idle` / the "
              "normal job's reads; idle_injected, idle_dispatched = their growth (ssdprio only; counters read just "
              "before and after the normal job of the pair, medians).")
    return res, md

# ---- scenario: cachefull -----------------------------------------------------
@scenario
def cachefull(rows):
    runs = [r for r in rows if "series" in r]
    res = {"configs": {}, "skipped": skipped(rows)}
    configs = list(dict.fromkeys(r["config"] for r in runs))
    pats = list(dict.fromkeys(r["workload"] for r in runs))
    for c in configs:
        res["configs"][c] = {}
        for p in pats:
            rs = [r for r in runs if r["config"] == c and r["workload"] == p]
            if not rs:
                continue
            series = []
            for r in rs:
                s = r["series"]
                t0 = s[0][0] - 1.0 if s else 0
                series.append([[round(t - t0, 2), v] for t, v in s])
            per_s = [med([v for _, v in s]) for s in series]
            d = {"mbps_runs": [r["write_mbps"] for r in rs], "mbps": med([r["write_mbps"] for r in rs]),
                 "per_second_median_mbps": med(per_s), "series": series}
            st = [r.get("status") for r in rs if r.get("status")]
            if st:
                d["status_after"] = [{k: s.get(k) for k in STATUS_KEYS} for s in st]
                d["status_full"] = [{k: r["status_full"].get(k) for k in STATUS_KEYS}
                                    for r in rs if r.get("status_full")]
            res["configs"][c][p] = d
    md = ["| pattern | raw HDD MB/s | ssdprio MB/s (cache full of dirty data) | ssdprio / raw HDD | goal >= 0.95x |",
          "|---|---|---|---|---|"]
    goals = {}
    for p in pats:
        h = res["configs"].get("raw_hdd", {}).get(p, {}).get("mbps")
        s = res["configs"].get("ssdprio", {}).get(p, {}).get("mbps")
        x = ratio(s, h)
        ok = None if x is None else x >= 0.95
        goals[p] = {"value": x, "met": ok}
        md.append(f"| {p} | {fmt(h)} | {fmt(s)} | {fmt(x)} | {verdict(ok)} |")
    res["goals"] = goals
    sp = res["configs"].get("ssdprio", {})
    for p in pats:
        sa = (sp.get(p, {}).get("status_after") or [None])[0]
        sf = (sp.get(p, {}).get("status_full") or [None])[0]
        if sa and sf:
            md.append(f"\n- ssdprio {p}: after the fill free_sets {sf.get('free_sets')}/{sf.get('total_sets')}, "
                      f"dirty_blocks {sf.get('dirty_blocks')}; after the sustained run bypassed "
                      f"{sa.get('bypassed')}, write_hits {sa.get('write_hits')}, write_misses "
                      f"{sa.get('write_misses')}, evict_state {sa.get('evict_state')}, "
                      f"blocks_written_back {sa.get('blocks_written_back')}.")
    md.append("\n- seq: 1 MiB writes, libaio queue depth 4; rand: 4 KiB writes, psync. Medians of the "
              "repetitions' mean MB/s; the plot shows each second of the first repetition.")
    return res, md


# ---- scenario: evict ---------------------------------------------------------
def read_clat(path):
    """fio clat log (per I/O, log_unix_epoch): [(unix_s, ms), ...]."""
    out = []
    with open(path) as f:
        for line in f:
            p = line.split(",")
            if len(p) >= 2:
                out.append((int(p[0]) / 1000.0, int(p[1]) / 1e6))
    return out


def p99(xs):
    if not xs:
        return None
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(0.99 * len(xs)))]


def read_status_log(path, config):
    """Per-sample dict: t, dirty (blocks), written_back (ssdprio)."""
    out = []
    with open(path) as f:
        for line in f:
            p = line.split()
            if len(p) < 5:
                continue
            t = float(p[0])
            f_ = p[1:]  # start len target ...
            d = {"t": t}
            if config == "dmcache" and len(f_) > 13:
                # <md bs> <used/total md> <bs> <used/total> <rh> <rm> <wh> <wm> <demote> <promote> <dirty>
                d["dirty"] = int(f_[13]) * 8  # 32 KiB blocks -> 4 KiB units
                d["used"] = int(f_[6].split("/")[0]) * 8
                d["promotions"] = int(f_[12])
                d["demotions"] = int(f_[11])
            else:
                kv = dict(zip(f_[3::2], f_[4::2]))
                for k, name in (("dirty_blocks", "dirty"), ("blocks_written_back", "written_back"),
                                ("valid_blocks", "used"), ("bypassed", "bypassed")):
                    if k in kv:
                        d[name] = int(kv[k])
            out.append(d)
    return out


@scenario
def evict(rows, raw):
    runs = [r for r in rows if "clat_log" in r]
    res = {"configs": {}, "skipped": skipped(rows)}
    md = ["| config | IOPS | mean latency ms | p99 latency ms (whole run) | median of per-second p99 ms | "
          "worst per-second p99 ms | blocks written back (4 KiB) |", "|---|---|---|---|---|---|---|"]
    for r in runs:
        c = r["config"]
        try:
            lat = read_clat(os.path.join(raw, r["clat_log"]))
            st = read_status_log(os.path.join(raw, r["status_log"]), c)
        except OSError as e:
            res["configs"][c] = {"error": str(e)}
            continue
        if not lat:
            continue
        t0 = lat[0][0]
        buckets = {}
        for t, v in lat:
            buckets.setdefault(int(t - t0), []).append(v)
        per_s = [[s, p99(v), len(v)] for s, v in sorted(buckets.items())]
        stat = [{**{k: v for k, v in d.items() if k != "t"}, "s": round(d["t"] - t0, 2)} for d in st]
        wb = None
        if stat and "written_back" in stat[-1]:
            wb = stat[-1]["written_back"]
        d = {"iops": r["iops"], "lat_mean_ms": r["lat_mean_ms"], "lat_p99_ms": r["lat_p99_ms"],
             "p99_per_second": per_s, "status": stat,
             "median_per_second_p99_ms": med([x[1] for x in per_s if x[2] >= 10]),
             "worst_per_second_p99_ms": max([x[1] for x in per_s if x[2] >= 10], default=None),
             "written_back_blocks": wb,
             "workload": {"runtime_s": r["runtime_s"], "burst_ios": r["burst_ios"], "think_s": r["think_s"]}}
        res["configs"][c] = d
        md.append(f"| {c} | {fmt(r['iops'], 1)} | {fmt(r['lat_mean_ms'])} | {fmt(r['lat_p99_ms'])} | "
                  f"{fmt(d['median_per_second_p99_ms'])} | {fmt(d['worst_per_second_p99_ms'])} | {fmt(wb)} |")
    if runs:
        r = runs[0]
        md.append(f"\n- Workload: 4 KiB random, 50% reads, queue depth 1, over 3x the cache; bursts of "
                  f"{r['burst_ios']} I/Os separated by {r['think_s']} s of quiet, {r['runtime_s']} s. "
                  "One run per system (a time series); per-second p99 over seconds with >= 10 I/Os.")
    return res, md


# ---- scenario: memory --------------------------------------------------------
# Published RAM per cached 4 KiB block.
PUBLISHED = {"EnhanceIO (set-associative)": 4, "dm-cache smq": 25, "flashcache": 24}


@scenario
def memory(rows):
    runs = [r for r in rows if "kmem_filled_kib" in r]
    res = {"configs": {}, "skipped": skipped(rows), "published_bytes_per_4k_block": PUBLISHED}
    sizes = sorted({r["cache_mb"] for r in runs})

    def slope(c):
        rs = sorted([r for r in runs if r["config"] == c], key=lambda r: r["cache_mb"])
        if len(rs) < 2 or rs[-1]["cache_blocks_4k"] == rs[0]["cache_blocks_4k"]:
            return None
        return ((rs[-1]["kmem_filled_kib"] - rs[0]["kmem_filled_kib"]) * 1024 /
                (rs[-1]["cache_blocks_4k"] - rs[0]["cache_blocks_4k"]))

    raw_slope = slope("raw")
    md = ["| system | bytes per 4 KiB cache block (own report, largest cache) | kernel memory growth, "
          "create + fill, KiB per cache size | slope: bytes per 4 KiB cache block (coarse, minus plain null_blk) |",
          "|---|---|---|---|"]
    for c in dict.fromkeys(r["config"] for r in runs):
        rs = sorted([r for r in runs if r["config"] == c], key=lambda r: r["cache_mb"])
        sl = slope(c)
        d = {"runs": rs, "slope_bytes_per_block": (sl - raw_slope) if (sl is not None and raw_slope is not None)
             else sl}
        own = "-"
        st = rs[-1].get("status")
        if st and st.get("metadata_bytes") is not None:
            cap = st["total_sets"] * st["set_blocks"] * st["block_sectors"] * 512 // 4096
            d.update({"metadata_bytes": st["metadata_bytes"], "valid_blocks": st["valid_blocks"],
                      "capacity_blocks_4k": cap,
                      "bytes_per_block": st["metadata_bytes"] / cap if cap else None,
                      "bytes_per_valid_block": (st["metadata_bytes"] / st["valid_blocks"]
                                                if st["valid_blocks"] else None),
                      "set_blocks": st["set_blocks"]})
            d["goal_met"] = d["bytes_per_block"] is not None and d["bytes_per_block"] <= 1.0
            own = (f"{fmt(d['bytes_per_block'], 3)} ({st['metadata_bytes']} B for {cap} blocks in "
                   f"{st['total_sets']} sets of {st['set_blocks']}; goal <= 1: {verdict(d['goal_met'])})")
        res["configs"][c] = d
        growth = ", ".join(f"{r['cache_mb']} MiB: +{r['kmem_filled_kib']}" for r in rs)
        md.append(f"| {c} | {own} | {growth} | {'(reference)' if c == 'raw' else fmt(d['slope_bytes_per_block'], 1)} |")
    for k, v in PUBLISHED.items():
        md.append(f"| {k} (published) | {v} | | |")
    if runs:
        md.append(f"\n- Cache sizes {' and '.join(str(x) for x in sizes)} MiB. Kernel memory = Slab + VmallocUsed + "
                  "Percpu of /proc/meminfo, after creating the cache and writing its size sequentially and then "
                  "4 KiB randomly; it includes fixed costs (bio sets, mempools, workqueues: hundreds of KiB for "
                  "ssdprio) and each system's metadata buffers (dm-cache's dm-bufio, bcache's btree nodes), and "
                  "noise of tens of KiB: only the slope between the two sizes estimates a per-block cost, within "
                  "a few bytes. ssdprio's own figure is exact (status `metadata_bytes`).")
    return res, md

# ---- scenario: database -------------------------------------------------------
# pgbench's per-transaction log (-l): "client_id transaction_no time script_no
# time_epoch time_us ...", time = latency in us (or "failed"/"skipped"), the
# epoch pair = completion time.

def read_pgbench_log(path):
    """[(completion unix s, latency ms)] of the transactions that completed."""
    out = []
    if not os.path.exists(path):
        return out
    with open(path) as f:
        for line in f:
            x = line.split()
            if len(x) >= 6 and x[2].isdigit():
                out.append((int(x[4]) + int(x[5]) / 1e6, int(x[2]) / 1000.0))
    out.sort()
    return out


def tx_stats(tx, t0, t1):
    """TPS, mean and p99 latency (ms) of the transactions completed in [t0, t1]."""
    if t1 is None or t0 is None or t1 <= t0:
        return None
    lat = [l for t, l in tx if t0 <= t < t1]
    return {"tps": len(lat) / (t1 - t0), "n": len(lat), "seconds": round(t1 - t0, 2),
            "lat_mean_ms": mean(lat), "lat_p99_ms": p99(lat)}


def tx_start(tx):
    """When the first transaction began (pgbench's -T counts from there, after
    its connections, which take seconds under TCG)."""
    return min(t - l / 1000.0 for t, l in tx) if tx else None


def per_second(tx, t0, t1):
    n = max(int(t1 - t0 + 0.999), 0)
    counts = [0] * n
    for t, _ in tx:
        i = int(t - t0)
        if 0 <= i < n:
            counts[i] += 1
    return [[i + 1, c] for i, c in enumerate(counts)]


@scenario
def database(rows, raw):
    res = {"configs": {}, "skipped": skipped(rows)}
    configs = list(dict.fromkeys(r["config"] for r in rows if "workload" in r))
    md = ["| config | TPS alone | TPS beside the backup | ratio | p99 ms alone | p99 ms beside | p99 ratio | "
          "mean ms alone / beside | backup s beside pgbench (alone) | backup finished | "
          "control, no backup: TPS / p99 ratio | goal: TPS >= 99%, p99 <= 110%, backup finishes |",
          "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for c in configs:
        rs = [r for r in rows if r.get("config") == c]
        runs = [r for r in rs if r.get("workload") == "run"]
        balone = [r for r in rs if r.get("workload") == "backup_alone"]
        a_st, b_st, plot = [], [], {}
        for r in runs:
            tx = read_pgbench_log(os.path.join(raw, r["log"]))
            t0 = tx_start(tx)
            if t0 is None:
                continue
            t_end = t0 + r["warm_s"] + 2 * r["run_s"]
            bs, be = r["backup_start"], r["backup_end"]
            # Alone: the run_s before the backup starts (after warm_s of
            # warm-up); beside: while the backup runs, up to pgbench's end.
            a = tx_stats(tx, bs - r["run_s"], bs)
            b = tx_stats(tx, bs, min(be, t_end))
            if b:
                b.update({"backup_s": be - bs, "backup_rc": r["backup_rc"], "backup_bytes": r["backup_bytes"],
                          "pgbench_tps": r.get("tps")})
            a_st.append(a)
            b_st.append(b)
            if r["rep"] == 1:
                plot = {"tps": per_second(tx, t0, t_end), "backup_start_s": round(bs - t0, 2),
                        "backup_end_s": round(be - t0, 2), "alone_start_s": round(bs - r["run_s"] - t0, 2),
                        "end_s": round(t_end - t0, 2)}
        bal = [r["end"] - r["start"] for r in balone if r.get("rc") == 0]
        # The control: the same windows with no backup (what the database's
        # own checkpoints and a warming cache do to "beside").
        c_ratio = []
        for r in (r for r in rs if r.get("workload") == "control"):
            tx = read_pgbench_log(os.path.join(raw, r["log"]))
            t0 = tx_start(tx)
            if t0 is None:
                continue
            mk = r["mark"]
            a = tx_stats(tx, mk - r["run_s"], mk)
            b = tx_stats(tx, mk, t0 + r["warm_s"] + 2 * r["run_s"])
            if a and b:
                c_ratio.append({"tps_ratio": ratio(b["tps"], a["tps"]),
                                "p99_ratio": ratio(b["lat_p99_ms"], a["lat_p99_ms"]),
                                "alone": a, "beside": b})

        def m(sts, k):
            return med([s[k] for s in sts if s])
        d = {"tps_alone": m(a_st, "tps"), "tps_beside": m(b_st, "tps"),
             "p99_alone_ms": m(a_st, "lat_p99_ms"), "p99_beside_ms": m(b_st, "lat_p99_ms"),
             "mean_alone_ms": m(a_st, "lat_mean_ms"), "mean_beside_ms": m(b_st, "lat_mean_ms"),
             "backup_beside_s": m(b_st, "backup_s"), "backup_alone_s": med(bal),
             "backup_finished": bool(b_st) and all(s and s["backup_rc"] == 0 for s in b_st),
             "beside_window_s": m(b_st, "seconds"), "runs_alone": a_st, "runs_beside": b_st, "plot": plot,
             "control_tps_ratio": med([x["tps_ratio"] for x in c_ratio if x["tps_ratio"] is not None]),
             "control_p99_ratio": med([x["p99_ratio"] for x in c_ratio if x["p99_ratio"] is not None]),
             "control_runs": c_ratio}
        d["tps_ratio"] = ratio(d["tps_beside"], d["tps_alone"])
        d["p99_ratio"] = ratio(d["p99_beside_ms"], d["p99_alone_ms"])
        done = [r for r in rs if r.get("workload") == "done"]
        if done and done[0].get("status"):
            d["status"] = done[0]["status"]
        goal = None
        if c.startswith("hdd_ssdprio") and d["tps_ratio"] is not None and d["p99_ratio"] is not None:
            goal = d["tps_ratio"] >= 0.99 and d["p99_ratio"] <= 1.10 and d["backup_finished"]
        d["goal_met"] = goal
        res["configs"][c] = d
        md.append(f"| {c} | {fmt(d['tps_alone'], 2)} | {fmt(d['tps_beside'], 2)} | {pct(d['tps_ratio'])} | "
                  f"{fmt(d['p99_alone_ms'], 0)} | {fmt(d['p99_beside_ms'], 0)} | {pct(d['p99_ratio'], 0)} | "
                  f"{fmt(d['mean_alone_ms'], 0)} / {fmt(d['mean_beside_ms'], 0)} | {fmt(d['backup_beside_s'], 1)}"
                  f"{' (' + fmt(d['backup_alone_s'], 1) + ')' if d['backup_alone_s'] is not None else ''} | "
                  f"{'yes' if d['backup_finished'] else '**no**'} | "
                  f"{pct(d['control_tps_ratio'])} / {pct(d['control_p99_ratio'], 0)} | {verdict(goal)} |")
    md.append("\n- PostgreSQL 15, pgbench TPC-B-like, 4 clients; one pgbench run per repetition: warm-up, "
              "then 'alone' (the run_s before the backup starts), then 'beside' (while the `ionice -c3` "
              "backup, tar of the data directory + fsync on the same file system, runs, up to pgbench's "
              "end). Figures from pgbench's per-transaction log; ratios of medians over repetitions. "
              "Control: a second pgbench run per repetition, the same windows, no backup (its ratios are "
              "medians of per-run ratios): how far 'beside' moves from 'alone' without the backup. "
              "Goal verdicts only for ssdprio configurations; the others are anchors.")
    return res, md

# ---- scenario: coalesce -------------------------------------------------------
@scenario
def coalesce(rows):
    runs = [r for r in rows if "seconds" in r]
    res = {"modes": {}, "skipped": skipped(rows)}
    md = ["| mode | config | dirty blocks | seconds to clean | vs writeback_gap 0 | origin writes | "
          "dirty blocks per write | clean blocks bridged |",
          "|---|---|---|---|---|---|---|---|"]
    for m in dict.fromkeys(r["workload"] for r in runs):
        res["modes"][m] = {}
        base = None
        for c in dict.fromkeys(r["config"] for r in runs if r["workload"] == m):
            rs = [r for r in runs if r["workload"] == m and r["config"] == c]
            d = {"runs": rs, "dirty": med([r["dirty"] for r in rs]), "seconds": med([r["seconds"] for r in rs]),
                 "writes": med([r["writes"] for r in rs]), "bridged": med([r["bridged"] for r in rs]),
                 "blocks_per_write": med([ratio(r["written_back"], r["writes"]) for r in rs])}
            if c == "gap0":
                base = d["seconds"]
            d["vs_gap0"] = ratio(d["seconds"], base)
            res["modes"][m][c] = d
            md.append(f"| {m} | {c} | {fmt(d['dirty'], 0)} | {fmt(d['seconds'], 1)} | {fmt(d['vs_gap0'], 2)} | "
                      f"{fmt(d['writes'], 0)} | {fmt(d['blocks_per_write'], 1)} | {fmt(d['bridged'], 0)} |")
    md.append("\n- Seconds from `dirty_target 0` until nothing is dirty (cleaning after `evict_wait` of quiet); "
              "origin writes and blocks bridged from the status counters; medians over repetitions. "
              "quiet: the defaults (batch mode after 5 s of quiet); paced: never batch mode, one idle origin "
              "write per `idle_dispatch_interval`.")
    return res, md

# ---- scenario: steady ---------------------------------------------------------
@scenario
def steady(rows):
    runs = [r for r in rows if "iops" in r]
    configs = list(dict.fromkeys(r["config"] for r in runs))
    mixes = list(dict.fromkeys(r["workload"] for r in runs))
    res = {"mixes": {}, "skipped": skipped(rows)}
    md = ["| mix (dist:param:read%) | config | IOPS | vs best | read hit ratio | block-LRU ideal | "
          "hit / ideal | frame-map model (block / tag victim) | p99 ms | bypassed | SSD blocks valid |",
          "|---|---|---|---|---|---|---|---|---|---|---|"]
    for m in mixes:
        res["mixes"][m] = {}
        for c in configs:
            rs = [r for r in runs if r["config"] == c and r["workload"] == m]
            if not rs:
                continue
            ideal = med([(r.get("lru_ideal") or {}).get("read_hit_ratio") for r in rs
                         if (r.get("lru_ideal") or {}).get("read_hit_ratio") is not None])
            d = {"runs": rs, "iops": med([r["iops"] for r in rs]),
                 "read_hit_ratio": med([r["read_hit_ratio"] for r in rs if r.get("read_hit_ratio") is not None]),
                 "lru_ideal": ideal,
                 "lat_p99_ms": med([r["lat_p99_ms"] for r in rs]),
                 "bypassed_share": med([r["bypassed_share"] for r in rs if r.get("bypassed_share") is not None]),
                 "valid_share": med([r["valid_share"] for r in rs if r.get("valid_share") is not None]),
                 "frame_model": med([(r.get("frame_model") or {}).get("read_hit_ratio") for r in rs
                                     if (r.get("frame_model") or {}).get("read_hit_ratio") is not None]),
                 "frame_model_tag_victim": med([(r.get("frame_model") or {}).get("read_hit_ratio_tag_victim")
                                                for r in rs if (r.get("frame_model") or {})
                                                .get("read_hit_ratio_tag_victim") is not None])}
            d["hit_vs_ideal"] = ratio(d["read_hit_ratio"], ideal)
            res["mixes"][m][c] = d
        best = max([d["iops"] for d in res["mixes"][m].values() if d["iops"] is not None], default=None)
        for c, d in res["mixes"][m].items():
            d["vs_best"] = ratio(d["iops"], best)
            model = fmt(d["frame_model"])
            if d["frame_model_tag_victim"] is not None:
                model += " / " + fmt(d["frame_model_tag_victim"])
            md.append(f"| {m} | {c} | {fmt(d['iops'], 0)} | {fmt(d['vs_best'])} | {fmt(d['read_hit_ratio'])} | "
                      f"{fmt(d['lru_ideal'])} | {fmt(d['hit_vs_ideal'])} | {model} | {fmt(d['lat_p99_ms'], 1)} | "
                      f"{pct(d['bypassed_share'])} | {pct(d['valid_share'])} |")
    md.append("\n- Medians over repetitions. Goals (cache engine v2): IOPS at least the best peer's, hit ratio "
              "within 10% of the block-LRU ideal, bypassed under 5% of bios, RAM at most 1 byte per 4 KiB block. "
              "bypassed, SSD blocks valid and the frame-map model (the hit ratio of ssdprio's placement replayed over "
              "the same trace with instant cleaning at 20% dirty, bench/sim/frame_sim.py: what the structure "
              "allows, replacing the least recently used block of two, and with the engine's choice, the block "
              "of the least recently used origin set): ssdprio only. QEMU TCG: ratios, not absolute figures.")
    return res, md


# ---- scenario: bursts ---------------------------------------------------------
def read_dirty_log(path):
    """sample_status lines "unix_time dirty cap": [(t, dirty_share), ...]."""
    out = []
    with open(path) as f:
        for line in f:
            p = line.split()
            if len(p) == 3 and int(p[2]) > 0:
                out.append((float(p[0]), int(p[1]) / int(p[2])))
    return out


@scenario
def bursts(rows, raw):
    res = {"configs": {}, "skipped": skipped(rows)}
    md = ["| config | burst times s (median per burst) | later / first, worst of every run | writes around "
          "the cache per burst (median) | light: dirty share, median of last third | light: dirty share, max | "
          "light p99 ms |",
          "|---|---|---|---|---|---|---|"]
    every = []
    configs = list(dict.fromkeys(r["config"] for r in rows if "skipped" not in r))
    for c in configs:
        br = [r for r in rows if r.get("config") == c and r.get("workload") == "bursts"]
        lr = [r for r in rows if r.get("config") == c and r.get("workload") == "light"]
        d = {}
        if br:
            n = min(len(r["burst_s"]) for r in br)
            times = [med([r["burst_s"][i] for r in br]) for i in range(n)]
            d["burst_s"] = times
            d["later_vs_first"] = [ratio(t, times[0]) for t in times[1:]]
            d["runs_s"] = [r["burst_s"] for r in br]
            # The goal holds for every burst of every run, each against its own run's first.
            d["worst_later_vs_first"] = max([t / r[0] for r in d["runs_s"] for t in r[1:] if r[0]],
                                            default=None)
            every += [f"- {c} run {i + 1}: " + " / ".join(fmt(t, 1) for t in r) + " s"
                      for i, r in enumerate(d["runs_s"])]
            d["workload"] = {k: br[0][k] for k in ("cache_mb", "burst_mb", "gap_s", "hdd_mb", "burst_ios")
                             if k in br[0]}
            for k in ("burst_around", "burst_lockouts"):
                runs = [r[k] for r in br if r.get(k)]
                if runs:
                    n = min(len(x) for x in runs)
                    d[k] = [med([x[i] for x in runs]) for i in range(n)]
                    d[k + "_runs"] = runs
            try:
                st = read_dirty_log(os.path.join(raw, br[0]["status_log"]))
                d["bursts_dirty"] = [[round(t - st[0][0], 1), round(v, 4)] for t, v in st] if st else []
            except OSError:
                pass
        if lr:
            tails, maxes, series = [], [], None
            for r in lr:
                try:
                    st = read_dirty_log(os.path.join(raw, r["status_log"]))
                except OSError:
                    continue
                if not st:
                    continue
                tails.append(med([v for _, v in st[len(st) * 2 // 3:]]))
                maxes.append(max(v for _, v in st))
                if series is None:
                    series = [[round(t - st[0][0], 1), round(v, 4)] for t, v in st]
            d["light_dirty_tail"] = med(tails)
            d["light_dirty_max"] = med(maxes)
            d["light_dirty"] = series or []
            d["light_p99_ms"] = med([r["lat_p99_ms"] for r in lr])
            d["light_workload"] = {k: lr[0][k] for k in ("light_iops", "light_s")}
        res["configs"][c] = d
        md.append(f"| {c} | {' / '.join(fmt(t, 1) for t in d.get('burst_s', []))} | "
                  f"{fmt(d.get('worst_later_vs_first'))} | "
                  f"{' / '.join(fmt(x, 0) for x in d['burst_around']) if 'burst_around' in d else '-'} | "
                  f"{pct(d.get('light_dirty_tail'))} | "
                  f"{pct(d.get('light_dirty_max'))} | {fmt(d.get('light_p99_ms'), 1)} |")
    w = next((d["workload"] for d in res["configs"].values() if "workload" in d), None)
    lw = next((d["light_workload"] for d in res["configs"].values() if "light_workload" in d), None)
    if w:
        md.append(f"\n- Bursts: {w.get('burst_ios', '')} 4 KiB random writes, queue depth 1, each burst in a fresh "
                  f"{w['burst_mb']} MiB region (cache {w['cache_mb']} MiB, origin {w.get('hdd_mb', '?')} MiB), "
                  f"{w['gap_s']} s of quiet between bursts. Goal: every later burst of every run at most 1.2x "
                  "its run's first. Writes around the cache: ssdprio's `bypassed` over the burst (writes a "
                  "frame refused, gone to the origin at HDD speed).")
        md.append("- Every run, burst times:")
        md += ["  " + e for e in every]
    if lw:
        md.append(f"- Light: 4 KiB random writes at {lw['light_iops']} IOPS over 4x the cache for "
                  f"{lw['light_s']} s (never a second of quiet). Dirty share: ssdprio dirty_blocks, bcache "
                  "dirty_data, dm-writecache blocks not free (it keeps no clean copies). Medians over "
                  "repetitions; QEMU TCG: ratios, not absolute figures.")
    return res, md


# ---- scenario: shift ----------------------------------------------------------
@scenario
def shift(rows, raw):
    res = {"configs": {}, "skipped": skipped(rows)}
    md = ["| config | read hit ratio before the shift | seconds to 90% of it after the shift |",
          "|---|---|---|"]
    configs = list(dict.fromkeys(r["config"] for r in rows if "hits_log" in r))
    for c in configs:
        befores, recov, series = [], [], None
        for r in [r for r in rows if r.get("config") == c and "hits_log" in r]:
            try:
                with open(os.path.join(raw, r["hits_log"])) as f:
                    pts = [tuple(float(x) for x in ln.split()) for ln in f if len(ln.split()) == 3]
            except OSError:
                continue
            # Per-second ratio from consecutive samples.
            per = []
            for (t0, h0, m0), (t1, h1, m1) in zip(pts, pts[1:]):
                n = (h1 - h0) + (m1 - m0)
                if n > 0:
                    per.append((t1 - r["shift_t"], (h1 - h0) / n))
            pre = [v for t, v in per if -r["phase_s"] / 3 <= t < 0]
            if not pre:
                continue
            base = sum(pre) / len(pre)
            befores.append(base)
            post = [(t, v) for t, v in per if t >= 0]
            rec = None
            for i in range(len(post) - 2):
                if sum(v for _, v in post[i:i + 3]) / 3 >= 0.9 * base:
                    rec = post[i + 2][0]
                    break
            recov.append(rec if rec is not None else float("inf"))
            if series is None:
                series = [[round(t, 1), round(v, 3)] for t, v in per]
        d = {"hit_before": med(befores), "series": series or []}
        fin = [x for x in recov if x != float("inf")]
        d["recovery_s"] = med(recov) if len(fin) == len(recov) and recov else None
        d["not_recovered_runs"] = len(recov) - len(fin)
        res["configs"][c] = d
        rs = fmt(d["recovery_s"], 1) if d["recovery_s"] is not None else \
            f"not within the phase in {d['not_recovered_runs']} of {len(recov)} runs"
        md.append(f"| {c} | {fmt(d['hit_before'])} | {rs} |")
    r = next((r for r in rows if "phase_s" in r), None)
    if r:
        md.append(f"\n- 4 KiB random, 70% reads, zipf 1.1, queue depth 1, over {r['origin_mb']} MiB "
                  f"({r['origin_mb'] // r['cache_mb']}x the {r['cache_mb']} MiB cache) for {r['phase_s']} s, "
                  "then over the next disjoint region. Medians over repetitions; QEMU TCG.")
    return res, md


# ---- scenario: cpu ------------------------------------------------------------
CPU_WL = ["readhit", "writehit", "newwrite", "readmiss"]
CPU_WL_NAMES = {"readhit": "read hits", "writehit": "write hits", "newwrite": "new-block writes",
                "readmiss": "read misses"}
# ssdprio's counters whose growth per I/O shows work beside the I/O itself.
CPU_KEYS = ["meta_commits", "meta_block_writes", "promotions", "promotions_skipped", "blocks_written_back",
            "writeback_writes", "bypassed", "deferred", "lockouts", "valid_blocks", "dirty_blocks"]


def cpu_run(r):
    """Per-run hit share (each system's own counters) and ssdprio's counter growth per I/O."""
    out = {"hit_share": None, "per_io": {}}
    n = r.get("fio_ios")
    rd = r["workload"].startswith("read")
    b, a = r.get("status_before"), r.get("status_after")
    if b and a:
        def d(k):
            return (a[k] - b[k]) if isinstance(a.get(k), (int, float)) and isinstance(b.get(k), (int, float)) \
                else None
        h, m = (d("read_hits"), d("read_misses")) if rd else (d("write_hits"), d("write_misses"))
        out["hit_share"] = ratio(h, (h or 0) + (m or 0)) if h is not None else None
        out["per_io"] = {k: ratio(d(k), n) if d(k) is not None else None for k in CPU_KEYS}
    hb, ha = r.get("hits_before"), r.get("hits_after")
    if hb and ha:
        dd = [y - x for x, y in zip(hb, ha)]
        h, m = (dd[0], dd[1]) if rd else (dd[2], dd[3])
        out["hit_share"] = ratio(h, h + m)
    return out


@scenario
def cpu(rows):
    runs = [r for r in rows if "cpu_us_per_io" in r]
    configs = list(dict.fromkeys(r["config"] for r in runs))
    wls = [w for w in CPU_WL if any(r["workload"] == w for r in runs)]
    jobs = sorted({r["jobs"] for r in runs})
    res = {"configs": {}, "skipped": skipped(rows), "reference": "linear"}
    for c in configs:
        res["configs"][c] = {}
        for w in wls:
            for j in jobs:
                rs = sorted([r for r in runs if r["config"] == c and r["workload"] == w and r["jobs"] == j],
                            key=lambda r: r["rep"])
                if not rs:
                    continue
                per = [cpu_run(r) for r in rs]
                d = {"runs": rs, "reps": [r["rep"] for r in rs],
                     "iops_runs": [r["iops"] for r in rs], "cpu_us_runs": [r["cpu_us_per_io"] for r in rs],
                     "iops": med([r["iops"] for r in rs]), "cpu_us_per_io": med([r["cpu_us_per_io"] for r in rs]),
                     # A run not used (its window saw a stall or its end) is
                     # left out of fio's figures too.
                     "fio_cpu_us_per_io": med([r.get("fio_cpu_us_per_io") for r in rs if r["iops"] is not None]),
                     "fio_iops": med([r.get("fio_iops") for r in rs if r["iops"] is not None]),
                     "cpu_util": med([r.get("cpu_util") for r in rs]),
                     "hit_share": med([x["hit_share"] for x in per]),
                     "hit_share_runs": [x["hit_share"] for x in per]}
                if any(x["per_io"] for x in per):
                    d["per_io"] = {k: med([x["per_io"].get(k) for x in per]) for k in CPU_KEYS}
                    d["per_io_runs"] = [x["per_io"] for x in per]
                res["configs"][c][f"{w}_{j}"] = d
    ref = res["configs"].get("linear", {})
    for c in configs:
        for key, d in res["configs"][c].items():
            rd = ref.get(key, {})
            d["iops_x_linear"] = ratio(d["iops"], rd.get("iops"))
            d["cpu_x_linear"] = ratio(d["cpu_us_per_io"], rd.get("cpu_us_per_io"))
            # The same repetition's runs side by side: the spread to read the medians by.
            by_rep = {r["rep"]: r for r in rd.get("runs", [])}
            d["iops_x_linear_runs"] = [ratio(r["iops"], by_rep.get(r["rep"], {}).get("iops")) for r in d["runs"]]
            d["cpu_x_linear_runs"] = [ratio(r["cpu_us_per_io"], by_rep.get(r["rep"], {}).get("cpu_us_per_io"))
                                      for r in d["runs"]]

    md = ["Medians over repetitions; x dm-linear: the median's ratio to dm-linear's median (IOPS: higher is better; "
          "CPU: lower is better).", "",
          "| case | jobs | config | IOPS | x dm-linear | CPU us per I/O | x dm-linear | fio's own CPU us per I/O | "
          "guest CPUs busy | hit share |",
          "|---|---|---|---|---|---|---|---|---|---|"]
    for w in wls:
        for j in jobs:
            for c in configs:
                d = res["configs"][c].get(f"{w}_{j}")
                if not d:
                    continue
                md.append(f"| {CPU_WL_NAMES[w]} | {j} | {c} | {fmt(d['iops'], 0)} | {fmt(d['iops_x_linear'])} | "
                          f"{fmt(d['cpu_us_per_io'], 1)} | {fmt(d['cpu_x_linear'])} | "
                          f"{fmt(d['fio_cpu_us_per_io'], 1)} | {pct(d['cpu_util'], 0)} | {pct(d['hit_share'], 1)} |")

    sp = res["configs"].get("ssdprio", {})
    wc = res["configs"].get("writecache", {})
    goals = {}
    for j in jobs:
        js = f"{j} job" + ("s" if j > 1 else "")
        for w, need in (("readhit", 0.90), ("writehit", 0.85)):
            d = sp.get(f"{w}_{j}")
            if d:
                x = d["iops_x_linear"]
                goals[f"{CPU_WL_NAMES[w]}, {js}: IOPS >= {need:.2f}x dm-linear"] = (
                    x, "x dm-linear", None if x is None else x >= need, d["iops_x_linear_runs"])
        for w in ("readhit", "writehit"):
            d, p = sp.get(f"{w}_{j}"), wc.get(f"{w}_{j}")
            if d and p:
                x = ratio(d["iops"], p["iops"])
                by_rep = {r["rep"]: r["iops"] for r in p["runs"]}
                goals[f"{CPU_WL_NAMES[w]}, {js}: IOPS >= dm-writecache"] = (
                    x, "x dm-writecache", None if x is None else x >= 1.0,
                    [ratio(r["iops"], by_rep.get(r["rep"])) for r in d["runs"]])
        for w in ("newwrite", "readmiss"):
            d = sp.get(f"{w}_{j}")
            if d:
                x = d["cpu_x_linear"]
                goals[f"{CPU_WL_NAMES[w]}, {js}: CPU per I/O <= 1.5x dm-linear"] = (
                    x, "x dm-linear", None if x is None else x <= 1.5, d["cpu_x_linear_runs"])
    res["goals"] = {g: {"value": x, "met": ok, "per_repetition": pr} for g, (x, _, ok, pr) in goals.items()}
    if goals:
        md += ["", "Goals, ssdprio (ratio of the medians; per repetition: the same repetition's runs side by side):", "",
               "| goal | ssdprio | per repetition | verdict |", "|---|---|---|---|"]
        for g, (x, unit, ok, pr) in goals.items():
            md.append(f"| {g} | {fmt(x)}{unit} | {' / '.join(fmt(v) for v in pr)} | {verdict(ok)} |")

    if any("per_io" in d for d in sp.values()):
        md += ["", "ssdprio's status counters, growth per I/O (median over repetitions; status read before and "
               "after each fio run, divided by its I/Os; valid_blocks 1.00 = every I/O a new block in the cache):",
               "", "| case | jobs | " + " | ".join(CPU_KEYS) + " |", "|---" * (len(CPU_KEYS) + 2) + "|"]
        for w in wls:
            for j in jobs:
                d = sp.get(f"{w}_{j}")
                if d and "per_io" in d:
                    md.append(f"| {CPU_WL_NAMES[w]} | {j} | " +
                              " | ".join(fmt(d["per_io"][k], 4) for k in CPU_KEYS) + " |")

    md += ["", "Every run (repetitions in order): IOPS; CPU us per I/O; hit share.", "",
           "| case | jobs | config | IOPS | CPU us per I/O | hit share |", "|---|---|---|---|---|---|"]
    for w in wls:
        for j in jobs:
            for c in configs:
                d = res["configs"][c].get(f"{w}_{j}")
                if d:
                    md.append(f"| {CPU_WL_NAMES[w]} | {j} | {c} | {' / '.join(fmt(v, 0) for v in d['iops_runs'])} | "
                              f"{' / '.join(fmt(v, 1) for v in d['cpu_us_runs'])} | "
                              f"{' / '.join(pct(v, 1) for v in d['hit_share_runs'])} |")
    unused = [r for r in runs if r.get("iops") is None]
    if unused:
        md.append(f"\nRuns not used ({len(unused)} of {len(runs)}: the window saw the run's end, a stall at its start "
                  "or after its last I/O): " + ", ".join(f"{r['config']} {CPU_WL_NAMES[r['workload']]} {r['jobs']} "
                                                         f"job(s) rep {r['rep']}" for r in unused) + ".")
    r0 = runs[0] if runs else None
    if r0:
        md.append("\n- Both legs zero-latency memory null_blk (no device time): IOPS and CPU time are the CPU cost of "
                  "the stack alone. fio 4 KiB random, libaio, queue depth 16 per job, each job on its own slice. "
                  "CPU us per I/O: busy time of every guest CPU (/proc/stat, irq and softirq included, workers "
                  "included) over a fixed window from shortly after the first completions, ending before the run "
                  "does, divided by the I/Os the measured device completed in it; IOPS over the same window. "
                  "fio's own CPU: its threads' usr + sys over the whole run (without the stack's workers and "
                  "interrupts taken outside them, and with its own start).")
        md.append("- One fresh stack per repetition. Hit cases: a working set written once, then time-based runs "
                  "over it. Then read misses and new-block writes: one pass each over a region of its own that "
                  "nobody wrote or read, capped in time before the region runs out; the working set and the first "
                  "new-block run stay under ssdprio's dirty_target (10%). Hit share: each system's own counters (ssdprio: reads served from the SSD; "
                  "writes to mapped sets, so a new block in a mapped set counts too; dm-cache: its hits and misses, "
                  "per 32 KiB block; dm-writecache: its read hits and write hits; none for bcache and dm-linear). "
                  "dm-writecache never promotes a read miss; dm-cache's smq promotes only blocks it finds hot.")
        md.append("- QEMU TCG: the guest's CPU time is emulated and its absolute figures mean nothing for real "
                  "hardware; the ratios to dm-linear in the same boot are the figures to read.")
    return res, md


def main():
    raw, out = sys.argv[1], sys.argv[2]
    wanted = sys.argv[3:]
    os.makedirs(out, exist_ok=True)
    meta = {}
    mp = os.path.join(raw, "meta.json")
    if os.path.exists(mp):
        with open(mp) as f:
            meta.update(json.load(f))
    host = host_info(raw)
    if host:
        meta["host"] = host
        meta["module"] = host.get("module_rev", "?")
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
            res, md = h(rows, raw) if h.__code__.co_argcount == 2 else h(rows)
        else:
            res, md = {"skipped": skipped(rows)}, []
        res.update({"scenario": scen, "meta": meta, "failed": failed, "note": TCG_NOTE})
        with open(os.path.join(out, scen + ".json"), "w") as f:
            json.dump(res, f, indent=1)
        with open(os.path.join(out, scen + ".md"), "w") as f:
            f.write("\n".join(md) + "\n")
        if md:
            print(f"\n## {scen}\n" + "\n".join(md))
    write_readme(out)


def host_info(raw):
    """bench/run's host.json plus the load samples of hostload.log."""
    h = {}
    p = os.path.join(raw, "host.json")
    if os.path.exists(p):
        with open(p) as f:
            h.update(json.load(f))
    p = os.path.join(raw, "hostload.log")
    samples = []
    if os.path.exists(p):
        with open(p) as f:
            for line in f:
                x = line.split()
                if len(x) == 3:
                    samples.append((int(x[0]), float(x[1]), int(x[2])))
    if samples:
        loads = [s[1] for s in samples]
        qs = [s[2] for s in samples]
        h.update({"samples": len(samples), "wall_s": samples[-1][0] - samples[0][0],
                  "load_min": min(loads), "load_max": max(loads), "load_median": med(loads),
                  "other_qemu_min": min(qs), "other_qemu_max": max(qs), "other_qemu_median": med(qs)})
    return h


def host_line(h):
    if not h:
        return None
    return (f"Host during the run: {h.get('cpus', '?')} CPUs; other QEMU guests running: "
            f"{h.get('other_qemu_min', '?')}..{h.get('other_qemu_max', '?')} (median "
            f"{h.get('other_qemu_median', '?')}); 1-min load average {h.get('load_min', '?')}.."
            f"{h.get('load_max', '?')} (median {h.get('load_median', '?')}); "
            f"{h.get('samples', 0)} samples, {h.get('wall_s', '?')} s wall.")


def write_readme(out):
    lines = ["# dm-ssdprio bench: latest results", "",
             "Written by `bench/run` (see docs/bench.md). Each scenario's section comes from its last run.", "",
             f"> {TCG_NOTE}", ""]
    for scen in ordered():
        jp = os.path.join(out, scen + ".json")
        if not os.path.exists(jp):
            continue
        with open(jp) as f:
            res = json.load(f)
        m = res.get("meta", {})
        lines.append(f"## {scen}")
        lines.append("")
        lines.append(header(scen, "title") or scen)
        lines.append("")
        lines.append(f"Kernel {m.get('kernel', '?')}, module {m.get('module', '?')}, {m.get('date', '?')}, "
                     f"{'QUICK smoke run, ' if m.get('quick') else ''}{m.get('reps', '?')} repetition(s) "
                     f"(medians), guest {m.get('cpus', '?')} CPUs / {m.get('mem_mb', '?')} MiB under QEMU TCG, "
                     f"{m.get('fio', '')}.")
        hl = host_line(m.get("host"))
        if hl:
            lines += ["", hl]
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
        if os.path.exists(os.path.join(out, scen + ".png")):
            lines.append(f"\n![{scen}]({scen}.png)")
        lines.append("")
    with open(os.path.join(out, "README.md"), "w") as f:
        f.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""tools/perf/perf.py on made-up rows: `merge` pools the launches of one measurement (the
collectives' rows too) and recomputes every figure from the pool; `compare` says which rows of
two (or three) runs agree and which are slower; `plot`'s summary of tmashmem beside NVSHMEM.
Standard library only (no GPU, no matplotlib)."""
import csv
import os
import random
import subprocess
import sys
import tempfile
import unittest

PERF = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tools", "perf")
FIELDS = ("runtime,test,op,pes,sms,threads,bytes,iters,reps,time_us_min,time_us_median,"
          "time_us_max,gbps_min,gbps_median,gbps_max,mops_median,ref_op,ref_gbps,ratio_to_ref,"
          "ceiling_d2d_gbps,ceiling_peer_gbps,bytes_moved,check,time_us_samples").split(",")


def row(op, sms, size, samples, ref="", check="ok", iters=10, msgs=1, test="bw", d2d=2000.0):
    s = sorted(samples)
    med = s[len(s) // 2] if len(s) % 2 else 0.5 * (s[len(s) // 2 - 1] + s[len(s) // 2])
    per_iter = size * msgs
    return {"runtime": "tmashmem", "test": test, "op": op, "pes": "2", "sms": str(sms),
            "threads": "0" if sms == 0 else "1024", "bytes": str(size), "iters": str(iters),
            "reps": str(len(s)), "time_us_min": "%.4f" % s[0], "time_us_median": "%.4f" % med,
            "time_us_max": "%.4f" % s[-1], "gbps_min": "%.3f" % (per_iter / (s[-1] * 1e3)),
            "gbps_median": "%.3f" % (per_iter / (med * 1e3)),
            "gbps_max": "%.3f" % (per_iter / (s[0] * 1e3)), "mops_median": "%.4f" % (msgs / med),
            "ref_op": ref, "ref_gbps": "0.000", "ratio_to_ref": "0.0000",
            "ceiling_d2d_gbps": "%.3f" % d2d, "ceiling_peer_gbps": "0.000",
            "bytes_moved": "%.0f" % (per_iter * iters), "check": check,
            "time_us_samples": ";".join("%.4f" % x for x in samples)}


def write(path, rows):
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=FIELDS, lineterminator="\n")
        w.writeheader()
        w.writerows(rows)


def read(path):
    with open(path, newline="") as f:
        return {(r["op"], r["sms"], r["bytes"]): r for r in csv.DictReader(f)}


def run(command, *args, check=True):
    return subprocess.run([sys.executable, os.path.join(PERF, "perf.py"), command] + list(args),
                          check=check, capture_output=True, text=True)


# Fresh data every run; TMASHMEM_TEST_SEED=N replays one.
SEED = int(os.environ.get("TMASHMEM_TEST_SEED", random.SystemRandom().randrange(1 << 32)))


class MergeTest(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp()
        self.rng = random.Random(SEED)

    def times(self, lo, hi, n):  # as the CSV holds them (4 decimals)
        return [round(self.rng.uniform(lo, hi), 4) for _ in range(n)]

    def path(self, name):
        return os.path.join(self.dir, name)

    def test_pools_samples_and_recomputes_figures(self):
        size = 1 << 20
        launches = [self.times(1.0, 2.0, 5) for _ in range(3)]
        ce = [self.times(2.0, 3.0, 5) for _ in range(3)]
        raw = []
        for i in range(3):
            raw.append(row("memcpy_put", 0, size, ce[i], d2d=1000.0 * (i + 1)))
            raw.append(row("smcopy_put", 132, size, launches[i], ref="memcpy_put",
                           check="FAIL(3 bad)" if i == 1 else "ok"))
        write(self.path("raw.csv"), raw)
        run("merge", self.path("raw.csv"), "--out", self.path("merged.csv"))
        m = read(self.path("merged.csv"))
        self.assertEqual(len(m), 2)
        sm = m[("smcopy_put", "132", str(size))]
        pool = sorted(x for l in launches for x in l)
        self.assertEqual(sm["reps"], "15")
        self.assertAlmostEqual(float(sm["time_us_min"]), pool[0], places=3)
        self.assertAlmostEqual(float(sm["time_us_median"]), pool[7], places=3)
        self.assertAlmostEqual(float(sm["time_us_max"]), pool[-1], places=3)
        self.assertAlmostEqual(float(sm["gbps_median"]), size / (pool[7] * 1e3), delta=0.01)
        self.assertAlmostEqual(float(sm["gbps_min"]), size / (pool[-1] * 1e3), delta=0.01)
        self.assertEqual(len(sm["time_us_samples"].split(";")), 15)
        self.assertEqual(sm["check"], "FAIL(3 bad)")  # a failure in any launch stays
        ce_pool = sorted(x for l in ce for x in l)
        ce_gbps = size / (ce_pool[7] * 1e3)
        self.assertAlmostEqual(float(sm["ref_gbps"]), ce_gbps, delta=0.01)
        self.assertAlmostEqual(float(sm["ratio_to_ref"]), (size / (pool[7] * 1e3)) / ce_gbps,
                               delta=1e-3)
        self.assertEqual(m[("memcpy_put", "0", str(size))]["ceiling_d2d_gbps"], "2000.000")

    def test_message_rows_keep_messages_per_iteration(self):
        a = self.times(0.5, 0.6, 4)
        b = self.times(0.5, 0.6, 4)
        msgs = 132 * 1024
        write(self.path("raw.csv"), [row("put", 132, 8, a, test="msg_rate", msgs=msgs),
                                     row("put", 132, 8, b, test="msg_rate", msgs=msgs)])
        run("merge", self.path("raw.csv"), "--out", self.path("merged.csv"))
        r = read(self.path("merged.csv"))[("put", "132", "8")]
        med = sorted(a + b)
        med = 0.5 * (med[3] + med[4])
        self.assertAlmostEqual(float(r["mops_median"]), msgs / med, delta=1e-2 * msgs / med)
        self.assertAlmostEqual(float(r["gbps_median"]), 8 * msgs / (med * 1e3), delta=0.01)

    def test_reference_at_the_same_sm_count_first(self):
        # p's reference is raw_st at the same SM count; a raw_st row at 0 SMs must not be
        # taken (bandwidth rows fall back to the copy engine's, at 0 SMs).
        fast, slow = self.times(0.5, 0.6, 4), self.times(5.0, 6.0, 4)
        p = self.times(0.7, 0.8, 4)
        write(self.path("raw.csv"), [row("raw_st", 0, 8, slow, test="msg_rate"),
                                     row("raw_st", 132, 8, fast, test="msg_rate"),
                                     row("p", 132, 8, p, ref="raw_st", test="msg_rate")])
        run("merge", self.path("raw.csv"), "--out", self.path("merged.csv"))
        m = read(self.path("merged.csv"))
        self.assertEqual(m[("p", "132", "8")]["ref_gbps"],
                         m[("raw_st", "132", "8")]["gbps_median"])

    def test_rows_without_bytes_keep_their_rate(self):
        a, b = self.times(2.0, 2.2, 5), self.times(2.0, 2.2, 5)
        write(self.path("raw.csv"), [row("barrier_all", 1, 0, a, test="barrier"),
                                     row("barrier_all", 1, 0, b, test="barrier")])
        run("merge", self.path("raw.csv"), "--out", self.path("merged.csv"))
        r = read(self.path("merged.csv"))[("barrier_all", "1", "0")]
        med = sorted(a + b)
        med = 0.5 * (med[4] + med[5])
        self.assertAlmostEqual(float(r["time_us_median"]), med, places=3)
        self.assertAlmostEqual(float(r["mops_median"]), 1.0 / med, delta=1e-3)

    def test_launches_that_disagree_are_refused(self):
        write(self.path("raw.csv"), [row("put", 132, 8, self.times(1, 2, 3), iters=10),
                                     row("put", 132, 8, self.times(1, 2, 3), iters=20)])
        done = run("merge", self.path("raw.csv"), "--out", self.path("merged.csv"),
                   check=False)
        self.assertNotEqual(done.returncode, 0)
        self.assertIn("disagree", done.stderr)


class CompareTest(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp()

    def run_folder(self, name, rows):
        os.makedirs(os.path.join(self.dir, name))
        write(os.path.join(self.dir, name, "perf_tmashmem.csv"), rows)
        return os.path.join(self.dir, name)

    def test_overlapping_and_disjoint_spreads(self):
        t = (1.0, 1.1, 1.2)
        a = self.run_folder("a", [row("smcopy_put", 132, 4096, list(t)), row("tile_put", 132, 4096, list(t))])
        b = self.run_folder("b", [row("smcopy_put", 132, 4096, [1.15, 1.2, 1.3]),
                                  row("tile_put", 132, 4096, [x * 1.5 for x in t])])
        out = run("compare", a, b).stdout
        self.assertIn("spreads overlap for 1 of 2 rows", out)
        self.assertIn("tile_put", out.split("do not overlap")[1])
        self.assertIn("B slower beyond A's spread in 1 rows", out)  # 1.5x the time: slower

    def test_three_runs_name_the_rows_slower_in_both(self):
        t = [1.0, 1.1, 1.2]
        rec = self.run_folder("rec", [row("tile_put", 132, 4096, t), row("block_put", 132, 4096, t),
                                      row("pingpong", 1, 8, t, test="pingpong")])
        # tile_put slower in both passes, block_put in one only, the ping-pong faster in both.
        one = self.run_folder("one", [row("tile_put", 132, 4096, [x * 2 for x in t]),
                                      row("block_put", 132, 4096, [x * 2 for x in t]),
                                      row("pingpong", 1, 8, [x / 2 for x in t], test="pingpong")])
        two = self.run_folder("two", [row("tile_put", 132, 4096, [x * 2 for x in t]),
                                      row("block_put", 132, 4096, t),
                                      row("pingpong", 1, 8, [x / 2 for x in t], test="pingpong")])
        out = run("compare", rec, one, two).stdout
        both = out.split("in both")[1]
        self.assertIn(": 1 rows", both)
        self.assertIn("tile_put", both)
        self.assertNotIn("block_put", both)
        self.assertEqual(out.count("rows in common"), 3)

    def test_relative_to_the_plain_copy(self):
        t = [1.0, 1.1, 1.2]
        rec = self.run_folder("rec", [row("smcopy_put", 132, 4096, t), row("tile_put", 132, 4096, t),
                                      row("block_put", 132, 4096, t)])
        # The whole run 1.5x slower (a slower machine start): tile_put and block_put keep their
        # ratio to the plain copy; block_put alone 1.5x slower on top of that is flagged.
        slow = [x * 1.5 for x in t]
        new = self.run_folder("new", [row("smcopy_put", 132, 4096, slow), row("tile_put", 132, 4096, slow),
                                      row("block_put", 132, 4096, [x * 1.5 for x in slow])])
        out = run("compare", rec, new).stdout.split("relative to the same run's plain SM copy")[1]
        self.assertIn(": 1 of 2 bandwidth rows slower", out)
        self.assertIn("block_put", out)
        self.assertNotIn("tile_put", out)

    def test_files_and_globs_as_a_run(self):
        a = self.run_folder("a", [row("tile_put", 132, 4096, [1.0, 1.1])])
        os.rename(os.path.join(a, "perf_tmashmem.csv"), os.path.join(a, "suite_tmashmem.csv"))
        with open(os.path.join(a, "suite_init.csv"), "w") as f:  # other columns: passed over
            f.write("runtime,pes,bytes\ntmashmem,2,1024\n")
        b = self.run_folder("b", [row("tile_put", 132, 4096, [1.0, 1.1])])
        out = run("compare", os.path.join(a, "suite_*.csv") + "," + os.path.join(a, "none.csv"), b).stdout
        self.assertIn("1 rows in common", out)


class CollTest(unittest.TestCase):
    """coll rows as tmashmem-perf / perf_nvshmem write them (test coll, sms 0, threads 0,
    -n 20 calls per sample, -r 1, check n/a, runtime tmashmem / nccl / *-graph)."""

    def launches(self, d, rng):
        paths, times = [], []
        for launch in range(3):
            t = round(rng.uniform(5, 500), 4)
            times.append(t)
            rows = []
            for rt in ("tmashmem", "nccl", "tmashmem-graph"):
                r = row("allreduce", 0, 1 << 28, [t], check="n/a", iters=20, test="coll")
                r["runtime"] = rt
                rows.append(r)
            paths.append(os.path.join(d, "perf_tmashmem.l%d.launches.csv" % launch))
            write(paths[-1], rows)
        return paths, times

    def test_rows_merge_over_launches_per_runtime(self):
        d = tempfile.mkdtemp()
        paths, times = self.launches(d, random.Random(SEED))
        run("merge", *paths, "--out", os.path.join(d, "merged.csv"))
        with open(os.path.join(d, "merged.csv"), newline="") as f:
            m = {r["runtime"]: r for r in csv.DictReader(f)}
        self.assertEqual(sorted(m), ["nccl", "tmashmem", "tmashmem-graph"])
        big, pool = m["tmashmem"], sorted(times)
        self.assertEqual((big["test"], big["op"], big["pes"], big["reps"], big["check"]),
                         ("coll", "allreduce", "2", "3", "n/a"))
        self.assertAlmostEqual(float(big["time_us_median"]), pool[1], places=3)
        self.assertAlmostEqual(float(big["gbps_median"]), (1 << 28) / (pool[1] * 1e3), delta=0.01)
        self.assertAlmostEqual(float(big["gbps_min"]), (1 << 28) / (pool[2] * 1e3), delta=0.01)

    def test_rows_meet_the_recorded_coll_rows(self):
        d = tempfile.mkdtemp()
        rows = []
        for rt, op in (("tmashmem", "allreduce"), ("tmashmem", "alltoall"), ("nvshmem", "allreduce")):
            r = row(op, 0, 4096, [6.5], check="n/a", iters=20, test="coll")
            r["runtime"] = rt
            rows.append(r)
        write(os.path.join(d, "perf_tmashmem.csv"), rows)
        record = os.path.join(PERF, "..", "..", "docs", "perf", "coll_np2.csv")
        out = run("compare", record, d).stdout
        self.assertIn("3 rows in common", out)


class SummaryTest(unittest.TestCase):
    """perf.py plot's summary.txt (tmashmem / NVSHMEM per row, failed checks), which needs no
    matplotlib: plot_rows and summary called directly."""

    def test_ratios_variants_and_failed_checks(self):
        sys.path.insert(0, PERF)
        import perf  # noqa: E402
        rng = random.Random(SEED)
        d = tempfile.mkdtemp()
        t_us, n_us = round(rng.uniform(1, 9), 3), round(rng.uniform(1, 9), 3)
        bw_tm, bw_nv = row("block_put", 16, 1 << 20, [t_us]), row("block_put", 16, 1 << 20, [n_us])
        bw_nv["runtime"] = "nvshmem"
        ping_tm = row("signal_relaxed", 1, 8, [t_us], test="pingpong")
        ping_nv = row("signal", 1, 8, [n_us], test="pingpong")
        ping_nv["runtime"] = "nvshmem"
        bad = row("tile_put", 16, 1 << 20, [1.0], check="3 wrong")
        lone = row("tile_get", 16, 1 << 20, [1.0])  # no NVSHMEM row: not in the ratios
        write(os.path.join(d, "perf_tmashmem.csv"), [bw_tm, ping_tm, bad, lone])
        write(os.path.join(d, "perf_nvshmem.csv"), [bw_nv, ping_nv])
        rows = perf.plot_rows([os.path.join(d, "perf_tmashmem.csv"), os.path.join(d, "perf_nvshmem.csv")])
        perf.summary(rows, d)
        with open(os.path.join(d, "summary.txt")) as f:
            text = f.read()
        bw_line = next(l for l in text.splitlines() if "block_put" in l)
        # GB/s for bandwidth rows: tmashmem's rate over NVSHMEM's = NVSHMEM's time over ours.
        self.assertIn("= %.3f (nvshmem block_put)" % (float(bw_tm["gbps_median"]) /
                                                     float(bw_nv["gbps_median"])), bw_line)
        ping_line = next(l for l in text.splitlines() if "signal_relaxed" in l)
        self.assertIn("= %.3f (nvshmem signal)" % (t_us / n_us), ping_line)  # time for latencies
        self.assertNotIn("tile_get", text)
        self.assertIn("FAILED destination check: tmashmem bw tile_put np2 16 SMs 1048576 B: 3 wrong",
                      text)
        self.assertNotIn("every checked destination OK", text)


if __name__ == "__main__":
    print("test seed: TMASHMEM_TEST_SEED=%d" % SEED)
    result = unittest.main(exit=False, verbosity=2).result
    failed = len(result.failures) + len(result.errors)
    print("%d passed, %d failed, %d skipped" %
          (result.testsRun - failed - len(result.skipped), failed, len(result.skipped)))
    sys.exit(1 if failed or not result.testsRun else 0)

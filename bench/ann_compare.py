#!/usr/bin/env python3
"""hnswlib vs usearch on the same real vectors (a cross-check of `hindsight-lab load recall`).

Reads the MiniLM vectors of a pre-filled data directory (`hindsight --data DIR load prefill`) and
builds the same HNSW (M=32, ef_construction=256) with hnswlib (the library inside Chroma, via the
`chroma-hnswlib` wheel) and with usearch (the library hindsight uses). Two query sets:

- `held-out`: 500 stored vectors left out of the index (queries that look like documents);
- `query-log`: up to 1000 vectors from hindsight's embedding disk cache that are not stored
  memories, i.e. the query texts the eval and load harness embedded (the real query distribution).

Ground truth is the exact inner product. Prints recall@10 (by key and within 1e-3 of the 10th
score) and single-threaded p50 latency per `ef`.

    python3 -m venv /tmp/ann && /tmp/ann/bin/pip install chroma-hnswlib usearch numpy
    /tmp/ann/bin/python bench/ann_compare.py /tmp/hs-load-100000

Run `hindsight-lab load run --recall-data DIR` (or the eval) first so the cache holds query vectors.

    /tmp/ann/bin/python bench/ann_compare.py --raw DATA.f32 QUERIES.f32

measures the same on raw little-endian f32 files of 384-d rows, as written by the vector bench
(`HINDSIGHT_BENCH_DUMP=DIR cargo bench --bench vector`): the synthetic clustered vectors the issue's
hnswlib reference (0.16 ms p50 at 100k) was stated for. `bench/vs-hnswlib` runs both sides.
Python adds its call overhead to each timed query; the `batch` column is the mean of one
single-threaded batch call per ef (no per-query overhead), for a fairer comparison.
"""
import os
import sqlite3
import sys
import time

import hnswlib
import numpy as np
import usearch.index as ui

K, M, EFC, EFS = 10, 32, 256, [64, 128, 256, 512, 1024]


def stored_vectors(data_dir):
    con = sqlite3.connect(f"file:{os.path.join(data_dir, 'hindsight.db')}?mode=ro", uri=True)
    rows = con.execute("SELECT vector FROM memories WHERE vector IS NOT NULL ORDER BY rowid")
    return np.stack([np.frombuffer(r[0], dtype="<f4") for r in rows]).astype(np.float32)


def cached_vectors(dim):
    home = os.environ.get("HINDSIGHT_HOME") or os.path.expanduser("~/.cache/hindsight")
    path = os.path.join(home, "cache", "embeddings", f"all-MiniLM-L6-v2-{dim}.vecs")
    raw = open(path, "rb").read()
    rec = 32 + dim * 4  # sha256(text) ++ dim x f32 (little-endian)
    n = len(raw) // rec
    return np.frombuffer(raw[: n * rec], dtype=np.uint8).reshape(n, rec)[:, 32:].copy().view("<f4")


def measure(name, search, queries, truth, scores, kth, batch=None, efs=EFS):
    for ef in efs:
        times, found = [], []
        for q in queries:
            t = time.perf_counter()
            found.append(search(q, ef))
            times.append(time.perf_counter() - t)
        hit = np.mean([len(set(f) & set(t)) / K for f, t in zip(found, truth)])
        tol = np.mean([np.sum(s[list(f)[:K]] >= k - 1e-3) / K for f, s, k in zip(found, scores, kth)])
        line = f"  {name:8} ef={ef:5}: recall {hit:.4f}  tolerant {tol:.4f}  p50 {np.median(times) * 1e3:.3f} ms"
        if batch is not None:
            t = time.perf_counter()
            batch(queries, ef)
            line += f"  batch mean {(time.perf_counter() - t) / len(queries) * 1e3:.3f} ms"
        print(line)


def run(label, base, queries, efs=EFS):
    print(f"{label}: {len(base)} vectors, {len(queries)} queries")
    scores = queries @ base.T
    truth = np.argsort(-scores, axis=1)[:, :K]
    kth = np.take_along_axis(scores, truth, 1)[:, -1]
    print(f"  mean top-1 similarity {scores.max(1).mean():.3f}, mean 10th {kth.mean():.3f}")
    # The exact-scan reference: one query at a time through BLAS (numpy's sgemv) plus a top-10
    # selection, what issue 7 compares the store's exact scan with.
    times = []
    for q in queries[:200]:
        t = time.perf_counter()
        s = base @ q
        top = np.argpartition(-s, K)[:K]
        top[np.argsort(-s[top])]
        times.append(time.perf_counter() - t)
    times.sort()
    print(
        f"  BLAS exact scan (numpy {np.__version__}, one query at a time): "
        f"p50 {np.median(times) * 1e3:.3f} ms  p99 {times[int(0.99 * len(times)) - 1] * 1e3:.3f} ms"
    )
    n, d = base.shape
    t = time.time()
    h = hnswlib.Index(space="ip", dim=d)
    h.init_index(max_elements=n, M=M, ef_construction=EFC, random_seed=1)
    h.set_num_threads(2)
    h.add_items(base, np.arange(n))
    h.set_num_threads(1)
    print(f"  hnswlib build {time.time() - t:.1f} s")

    def h_search(q, ef):
        h.set_ef(ef)
        return h.knn_query(q, k=K)[0][0]

    def h_batch(qs, ef):
        h.set_ef(ef)
        h.knn_query(qs, k=K, num_threads=1)

    measure("hnswlib", h_search, queries, truth, scores, kth, h_batch, efs)
    t = time.time()
    u = ui.Index(ndim=d, metric="ip", dtype="f32", connectivity=M, expansion_add=EFC)
    u.add(np.arange(n), base, threads=2)
    print(f"  usearch build {time.time() - t:.1f} s")

    def u_search(q, ef):
        u.expansion_search = ef
        return np.array(u.search(q, K, threads=1).keys)

    def u_batch(qs, ef):
        u.expansion_search = ef
        u.search(qs, K, threads=1)

    measure("usearch", u_search, queries, truth, scores, kth, u_batch, efs)


def raw_rows(path, dim=384):
    return np.fromfile(path, dtype="<f4").reshape(-1, dim)


def main():
    if len(sys.argv) == 4 and sys.argv[1] == "--raw":
        run("raw", raw_rows(sys.argv[2]), raw_rows(sys.argv[3]), efs=[16, 32, 48, 64, 96, 128, 256])
        return
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    x = stored_vectors(sys.argv[1])
    rng = np.random.default_rng(7)
    perm = rng.permutation(len(x))
    run("held-out", x[perm[500:]], x[perm[:500]])
    stored = {v.tobytes() for v in x}
    extra = np.array([v for v in cached_vectors(x.shape[1]) if v.tobytes() not in stored])
    if len(extra) == 0:
        print("query-log: no query vectors in the embedding cache; run the eval or a load run first")
        return
    run("query-log", x, extra[rng.permutation(len(extra))[:1000]])


if __name__ == "__main__":
    main()

"""Teaching corpus build and parse times, grammar 2 against grammar 1 in the same process (ratios only):

    python bench/teaching_corpus.py

Prints each build's seconds, the ratio, and the mean parse time per sentence of each grammar's test split
(`align`, which the app calls on every sentence a student types) with its ratio.
"""

from __future__ import annotations

import time

from transformer.data.corpora.teaching import TEACHING_SIZES, align, build_teaching_corpus


def main() -> None:
    seconds, corpora = {}, {}
    for grammar in (1, 2):
        start = time.perf_counter()
        corpora[grammar] = build_teaching_corpus(0, grammar)
        seconds[grammar] = time.perf_counter() - start
        pairs = sum(TEACHING_SIZES[grammar].values())
        print(f"grammar {grammar}: built {pairs} pairs in {seconds[grammar]:.1f} s")
    per_pair = {g: seconds[g] / sum(TEACHING_SIZES[g].values()) for g in (1, 2)}
    print(f"build time ratio grammar 2 / grammar 1: {seconds[2] / seconds[1]:.2f} "
          f"(per pair: {per_pair[2] / per_pair[1]:.2f})")
    parse = {}
    for grammar, corpus in corpora.items():
        start = time.perf_counter()
        for p in corpus.test:
            align(p.src)
        parse[grammar] = (time.perf_counter() - start) / len(corpus.test)
        print(f"grammar {grammar} test split: {1000 * parse[grammar]:.2f} ms per align")
    print(f"align time ratio (grammar 2's sentences / grammar 1's): {parse[2] / parse[1]:.2f}")


if __name__ == "__main__":
    main()

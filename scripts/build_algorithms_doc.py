#!/usr/bin/env python3
"""Assembles docs/algorithms.md from docs/algorithms/*.md (one page per scheme).

The pages live in python/xrc/docs/algorithms/ so that they ship inside the
package (`xrc doc NAME`); docs/algorithms is a link to that directory."""

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
ORDER = ["xrc", "xrc2", "newreno", "cubic", "illinois", "veno", "vegas", "bbr", "bbr3", "copa", "abc", "pbe", "natcp",
         "nacubic", "roccet", "oracle", "oracle-rate", "external"]
REFS = {
    "xrc": "Kheirkhah et al., ICC 2022",
    "xrc2": "xrc with an air-aware bottleneck rule and a queue-keeping window and pacing",
    "newreno": "RFC 5681/6582, Linux tcp_cong.c",
    "cubic": "RFC 9438, Linux tcp_cubic.c (+ HyStart, Ericsson LTE options)",
    "illinois": "Liu, Başar, Srikant 2008; Linux tcp_illinois.c", "veno": "Fu & Liew 2003; Linux tcp_veno.c",
    "vegas": "Brakmo et al. 1994; Linux tcp_vegas.c", "bbr": "Cardwell et al. 2016; Linux tcp_bbr.c (v1)",
    "bbr3": "draft-ietf-ccwg-bbr; google/bbr v3 tcp_bbr.c", "copa": "Arun & Balakrishnan, NSDI 2018; genericCC",
    "abc": "Goyal et al., NSDI 2020; authors' tcp_abc.c", "pbe": "Xie, Yi, Jamieson, SIGCOMM 2020",
    "natcp": "Abbasloo et al.; authors' natcp code", "nacubic": "same, CUBIC capped",
    "roccet": "Prause & Akselrod, arXiv 2510.25281; tcp_roccet.c patch",
    "oracle": "the physical limit: the bottleneck's future delivery opportunities (a trace, or a shadow of the cell)",
    "oracle-rate": "the rate oracle of the paper's Fig. 1 (present capacity, zero delay; not a bound)",
    "external": "driven from outside: the rate or window a caller sets (the Gymnasium environment, xrc.gym)",
}


def assemble() -> str:
    """docs/algorithms.md as the pages make it."""
    d = ROOT / "docs" / "algorithms"
    parts = ["# Congestion controls", "",
             "Every scheme is one module under `crates/xrc-core/src/transport/cc/` behind",
             "the `CongestionControl` trait (shaped like Linux's `tcp_congestion_ops`), picked",
             'in a scenario with `cc = "<name>"` and configured with a `[flows.<name>]` or',
             "`[cc.<name>]` table. This file is assembled from `docs/algorithms/*.md`",
             "(`python3 scripts/build_algorithms_doc.py`).", "", "| scheme | reference |", "|---|---|"]
    parts += [f"| [`{n}`](#{n}) | {REFS[n]} |" for n in ORDER] + [""]
    for n in ORDER:
        lines = (d / f"{n}.md").read_text().splitlines()
        head = "#" + lines[0] + f' <a id="{n}"></a>'
        body = ["#" + ln if ln.startswith("#") else ln for ln in lines[1:]]
        # A page's link to another page (`](natcp.md)`) is read from docs/.
        body = [re.sub(r"\]\(([a-z0-9-]+\.md)\)", r"](algorithms/\1)", ln) for ln in body]
        parts += [head, *body, ""]
    return "\n".join(parts) + "\n"


def main() -> None:
    (ROOT / "docs" / "algorithms.md").write_text(assemble())


if __name__ == "__main__":
    main()

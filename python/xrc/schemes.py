"""The scheme registry: names, display labels and plot colours, in one place
for every plot and report."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Scheme:
    name: str
    label: str
    color: str


SCHEMES: dict[str, Scheme] = {s.name: s for s in [
    Scheme("xrc", "XRC", "#d62728"),
    Scheme("xrc2", "XRC2 (air-aware, paced, pulsing)", "#ff9896"),
    Scheme("cubic", "CUBIC", "#1f77b4"),
    Scheme("newreno", "NewReno", "#2ca02c"),
    Scheme("illinois", "Illinois", "#9467bd"),
    Scheme("veno", "Veno", "#8c564b"),
    Scheme("vegas", "Vegas", "#e377c2"),
    Scheme("bbr", "BBR", "#ff7f0e"),
    Scheme("bbr3", "BBRv3", "#ffbb78"),
    Scheme("copa", "Copa", "#17becf"),
    Scheme("abc", "ABC", "#bcbd22"),
    Scheme("pbe", "PBE-CC", "#7f7f7f"),
    Scheme("natcp", "NATCP", "#393b79"),
    Scheme("nacubic", "NACubic", "#637939"),
    Scheme("roccet", "ROCCET", "#843c39"),
    Scheme("oracle", "Oracle", "#000000"),
    Scheme("oracle-rate", "Rate oracle", "#555555"),
    Scheme("external", "Driven from outside", "#aec7e8"),
]}

#: Schemes that need a caller stepping the simulator (``xrc.gym``): the
#: studies that run every scheme leave them out.
DRIVEN = frozenset({"external"})

_FALLBACK = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b"]


def label_of(name: str) -> str:
    s = SCHEMES.get(name)
    return s.label if s else name


def color_of(name: str, index: int = 0) -> str:
    s = SCHEMES.get(name)
    return s.color if s else _FALLBACK[index % len(_FALLBACK)]

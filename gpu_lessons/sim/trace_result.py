"""What ``trace`` returns: counts named after Nsight Compute metrics, per array and per instruction."""

from __future__ import annotations

from dataclasses import dataclass, field

import pandas as pd

from .warp_request import select_request

# (space, op) -> Nsight Compute metric names for the counts the tracer reproduces.
GLOBAL_METRICS = {
    op: {
        "instructions": f"smsp__inst_executed_op_global_{op}.sum",
        "requests": f"l1tex__t_requests_pipe_lsu_mem_global_op_{op}.sum",
        "sectors": f"l1tex__t_sectors_pipe_lsu_mem_global_op_{op}.sum",
    }
    for op in ("ld", "st")
}
SHARED_METRICS = {
    op: {
        "instructions": f"smsp__inst_executed_op_shared_{op}.sum",
        "wavefronts": f"l1tex__data_pipe_lsu_wavefronts_mem_shared_op_{op}.sum",
        "bank_conflicts": f"l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_{op}.sum",
    }
    for op in ("ld", "st")
}
METRICS = [
    name for table in (GLOBAL_METRICS, SHARED_METRICS) for op in table.values() for name in op.values()
]

SUMMARY_KEYS = ["space", "op"]


def _ratio(numerator: pd.Series, denominator: pd.Series) -> pd.Series:
    return (numerator.astype("Float64") / denominator.where(denominator > 0)).round(2)


def totals_from(by_instruction: pd.DataFrame) -> dict[str, int]:
    """Sum the per-instruction counts into the Nsight Compute metrics (absent ones are 0)."""
    totals = dict.fromkeys(METRICS, 0)
    for (space, op), rows in by_instruction.groupby(SUMMARY_KEYS):
        if space == "global":
            names = GLOBAL_METRICS[op]
            totals[names["instructions"]] = int(rows["instructions"].sum())
            totals[names["requests"]] = int(rows["instructions"].sum())
            totals[names["sectors"]] = int(rows["sectors"].sum())
        else:
            names = SHARED_METRICS[op]
            totals[names["instructions"]] = int(rows["instructions"].sum())
            totals[names["wavefronts"]] = int(rows["wavefronts"].sum())
            totals[names["bank_conflicts"]] = int(rows["bank_conflicts"].sum())
    return totals


def group_counts(by_instruction: pd.DataFrame, keys: list[str]) -> pd.DataFrame:
    """Add up instructions, threads, sectors, wavefronts and conflicts over ``keys``."""
    counted = ["instructions", "threads", "sectors", "wavefronts", "bank_conflicts"]
    if by_instruction.empty:
        return pd.DataFrame(columns=[*keys, *counted, "sectors_per_request", "wavefronts_per_request"])
    table = by_instruction.groupby(keys, sort=False, dropna=False)[counted].sum(min_count=1).reset_index()
    table["sectors_per_request"] = _ratio(table["sectors"], table["instructions"])
    table["wavefronts_per_request"] = _ratio(table["wavefronts"], table["instructions"])
    return table


@dataclass
class MemoryTrace:
    """Memory traffic of one simulated launch, counted per warp-level instruction.

    ``totals``: Nsight Compute metric name -> count. ``by_instruction``: one row per memory
    instruction in the source (file:line and the subscript expression) and array; ``by_array``:
    the same summed per array, space (global/shared) and op (ld/st). ``summary``: per space and op.
    """

    kernel: str
    grid: tuple
    block: tuple
    by_instruction: pd.DataFrame
    totals: dict = field(default_factory=dict)
    accesses: pd.DataFrame | None = field(default=None, repr=False)  # one row per thread access
    sites: pd.DataFrame | None = field(default=None, repr=False)  # instruction ids -> source
    wgmma: pd.DataFrame | None = field(default=None, repr=False)  # one row per warpgroup wgmma

    def __post_init__(self):
        if not self.totals:
            self.totals = totals_from(self.by_instruction)

    @property
    def by_array(self) -> pd.DataFrame:
        return group_counts(self.by_instruction, ["kernel", "array", "space", "op"])

    @property
    def summary(self) -> pd.DataFrame:
        table = group_counts(self.by_instruction, SUMMARY_KEYS)
        return table.sort_values(SUMMARY_KEYS, ignore_index=True)

    def request(self, source: str | None = None, array: str | None = None, op: str | None = None,
                warp: int = 0, k: int = 0) -> pd.DataFrame:
        """One warp's request, a row per lane: address, sector and line (global) or word and
        bank (shared). Pick the instruction by a piece of its ``source`` text (``"x[i * stride]"``),
        its ``array`` name and/or ``op`` ('ld'/'st'); ``k`` is which execution of it by ``warp``.
        The request's sectors or wavefronts and bank conflicts are in the table's ``attrs``."""
        if self.accesses is None or self.sites is None:
            raise ValueError("this MemoryTrace was built without its accesses (use trace())")
        return select_request(self.accesses, self.sites, self.kernel, source, array, op, warp, k)

    def __getitem__(self, metric: str) -> int:
        return self.totals[metric]

    def sectors_per_request(self, op: str = "ld") -> float:
        names = GLOBAL_METRICS[op]
        requests = self.totals[names["requests"]]
        return self.totals[names["sectors"]] / requests if requests else float("nan")

    def wavefronts_per_request(self, op: str = "ld") -> float:
        names = SHARED_METRICS[op]
        requests = self.totals[names["instructions"]]
        return self.totals[names["wavefronts"]] / requests if requests else float("nan")

    @property
    def title(self) -> str:
        def dims(d):
            return "(" + ", ".join(str(v) for v in d) + ")"

        return f"{self.kernel}[{dims(self.grid)}, {dims(self.block)}] memory traffic (simulated)"

    def _instruction_view(self) -> pd.DataFrame:
        view = self.by_instruction.drop(columns=["kernel", "function"], errors="ignore")
        return view.astype(object).where(view.notna(), "")

    def __repr__(self) -> str:
        lines = [self.title]
        for (space, op), row in self.summary.set_index(SUMMARY_KEYS).iterrows():
            if space == "global":
                lines.append(
                    f"  global {op}: {row['instructions']:,} requests, {row['sectors']:,} sectors "
                    f"({row['sectors_per_request']} sectors/request)"
                )
            else:
                lines.append(
                    f"  shared {op}: {row['instructions']:,} requests, {row['wavefronts']:,} wavefronts "
                    f"({row['wavefronts_per_request']}/request), {row['bank_conflicts']:,} bank conflicts"
                )
        if self.by_instruction.empty:
            lines.append("  no global or shared memory accesses")
        else:
            lines.append(self._instruction_view().to_string(index=False))
        return "\n".join(lines)

    def _repr_html_(self) -> str:
        totals = pd.DataFrame({"metric": list(self.totals), "value": list(self.totals.values())})
        return (
            f"<p><b>{self.title}</b></p>"
            + self._instruction_view().to_html(index=False)
            + "<details><summary>Nsight Compute metrics</summary>"
            + totals.to_html(index=False)
            + "</details>"
        )

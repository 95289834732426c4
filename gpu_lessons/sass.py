"""Reading SASS (the GPU's machine code) for the lessons: instruction mix of a kernel and of its
hot loop, from the text that ``kernel.inspect_sass()`` (nvdisasm) returns.

The hot loop is the innermost backward branch around the most FFMAs; its share of FFMA says how
much of the issue bandwidth goes to arithmetic (the rest: loads, address arithmetic, branches).
"""

from __future__ import annotations

import re
from collections import Counter

_LINE = re.compile(r"/\*([0-9a-f]{4,})\*/\s+(@!?U?P\w+\s+)?([A-Z][A-Z0-9_.]*)([^;]*);")
_TARGET = re.compile(r"`?\(?\.L_x_(\d+)\)?")
_LABEL = re.compile(r"^\s*\.L_x_(\d+):")
MEMORY_PREFIXES = ("LDG", "STG", "LDS", "STS", "LDL", "STL", "BAR")


def instructions(sass: str) -> list[tuple[int, str, str]]:
    """(address, opcode, operands) of every instruction but NOP; labels resolve branch targets."""
    out, labels, pending = [], {}, []
    for line in sass.splitlines():
        label = _LABEL.match(line)
        if label:
            pending.append(label.group(1))
            continue
        m = _LINE.search(line)
        if not m or m.group(3) == "NOP":
            continue
        address = int(m.group(1), 16)
        for name in pending:
            labels[name] = address
        pending = []
        out.append((address, m.group(3), m.group(4)))
    return [(a, op, _resolve(op, rest, labels)) for a, op, rest in out]


def _resolve(op: str, rest: str, labels: dict) -> str:
    if op.startswith("BRA"):
        t = _TARGET.search(rest)
        if t and t.group(1) in labels:
            return f"->{labels[t.group(1)]}"
    return rest.strip()


def mix(sass: str) -> Counter:
    return Counter(op for _, op, _ in instructions(sass))


def hot_loop(sass: str) -> list[tuple[int, str, str]]:
    """The instructions of the innermost loop holding the most FFMAs (empty when there is none)."""
    code = instructions(sass)
    best, best_key = [], (0, 0)
    for i, (address, op, rest) in enumerate(code):
        if op.startswith("BRA") and rest.startswith("->") and int(rest[2:]) <= address:
            target = int(rest[2:])
            body = [x for x in code[: i + 1] if x[0] >= target]
            key = (sum(x[1] == "FFMA" for x in body), -len(body))
            if key > best_key:
                best, best_key = body, key
    return best


def summary(sass: str) -> dict:
    """Counts the lessons show: FFMA share (whole kernel, hot loop), memory instructions, spills."""
    ops = mix(sass)
    loop = Counter(op for _, op, _ in hot_loop(sass))
    total, loop_total = sum(ops.values()), sum(loop.values())
    return {
        "instructions": total, "ffma": ops["FFMA"],
        "ffma_share": ops["FFMA"] / total if total else 0.0,
        "loop_instructions": loop_total, "loop_ffma": loop["FFMA"],
        "loop_ffma_share": loop["FFMA"] / loop_total if loop_total else 0.0,
        "memory": {op: n for op, n in sorted(ops.items()) if op.startswith(MEMORY_PREFIXES)},
        "loop_memory": {op: n for op, n in sorted(loop.items()) if op.startswith(MEMORY_PREFIXES)},
        "spill_ops": sum(n for op, n in ops.items() if op.startswith(("LDL", "STL"))),
        "top": ops.most_common(10),
    }


def lines(sass: str, pattern: str = r"\b(LDG|STG|LDS|STS|LDL|STL|BAR)\b", most: int = 40) -> list[str]:
    """The first ``most`` instructions matching ``pattern``, address and text, for an excerpt."""
    found = []
    for line in sass.splitlines():
        m = _LINE.search(line)
        if m and m.group(3) != "NOP" and re.search(pattern, m.group(3)):
            found.append(f"/*{m.group(1)}*/ {(m.group(2) or '')}{m.group(3)}{m.group(4)}".strip())
            if len(found) == most:
                break
    return found


def evidence(sass: str, pattern: str | None = None, most: int = 40) -> dict:
    """A kernel's SASS as a recording keeps it: the opcode counts, the summary, an excerpt."""
    kept = {"counts": dict(sorted(mix(sass).items())), "summary": summary(sass)}
    if pattern is not None:
        kept["lines"] = lines(sass, pattern, most)
    return kept

#!/usr/bin/python3
"""render_tables.py - the documents' Markdown tables, rendered from the measurements in docs/results/.

docs/results/tables.json describes each table: which CSV rows it takes (sources: file and filter),
its rows and columns, and the template of a cell. In a document a table lives between two markers,

    <!-- table:NAME -->
    ...the rendered table and the line(s) naming the commands, machines and loads it comes from...
    <!-- /table:NAME -->

and the same NAME may appear in several documents.

  tools/render_tables.py                rewrite every marked region of every Markdown file
  tools/render_tables.py --check        change nothing; exit 1 and print a diff where a region
                                        differs from its rendering (or names no table)
  tools/render_tables.py --print NAME   print one table
  tools/render_tables.py --list         the tables and the documents that use them

Python 3 standard library only. The CSV columns and the spec format: docs/results/README.md.
"""
import csv
import difflib
import json
import os
import re
import subprocess
import sys

TOP = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RESULTS = os.path.join(TOP, "docs", "results")
SPEC = os.path.join(RESULTS, "tables.json")
MARK = re.compile(r"^<!-- table:([A-Za-z0-9_.-]+) -->$")


def human(b):
    """bytes as the documents write them: 8 B, 64 KiB, 1 MiB"""
    b = int(b)
    for unit, m in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if b >= m and b % m == 0:
            return f"{b // m} {unit}"
    return f"{b} B"


def num(x):
    try:
        return float(x)
    except (TypeError, ValueError):
        return None


def load_csv(name, cache={}):
    if name not in cache:
        path = os.path.join(RESULTS, name)
        with open(path, newline="") as f:
            cache[name] = list(csv.DictReader(line for line in f if not line.startswith("#")))
    return cache[name]


def matches(row, where):
    """where: {column: value}: "x" equal; ["x", "y"] one of; "<N", "<=N", ">N", ">=N" numeric;
    "!=" not empty, "!=x" not x; and size_in: [lo, hi] - the row's sizes (bytes..bytes_max) lie
    within lo..hi"""
    for key, want in where.items():
        if key == "size_in":
            lo, hi = num(row["bytes"]), num(row.get("bytes_max") or row["bytes"])
            if lo is None or hi is None or lo < want[0] or hi > want[1]:
                return False
            continue
        have = row.get(key, "")
        if isinstance(want, list):
            if have not in [str(w) for w in want]:
                return False
            continue
        want = str(want)
        m = re.match(r"^(<=|>=|<|>|!=)(.*)$", want)
        if not m:
            if have != want:
                return False
            continue
        op, val = m.groups()
        if op == "!=":
            if have == val:
                return False
            continue
        a, b = num(have), num(val)
        if a is None or b is None or not {"<": a < b, "<=": a <= b, ">": a > b, ">=": a >= b}[op]:
            return False
    return True


def fmt_ratio(x):
    """a ratio, bold below 1 (braid slower)"""
    return f"**{x}**" if num(x) is not None and num(x) < 1 else x


def fmt_us(x):
    """a time to about three significant digits"""
    if x is None:
        return ""
    return f"{x:.0f}" if x >= 100 else f"{x:.1f}" if x >= 10 else f"{x:.2f}"


def fields(row):
    """a row's columns plus the derived fields a template may use"""
    f = dict(row)
    b, bm = row.get("bytes", ""), row.get("bytes_max", "")
    f["size"] = "" if b == "" else human(b) + (f" - {human(bm)}" if bm else "")
    r, rm = row.get("ratio", ""), row.get("ratio_max", "")
    f["ratios"] = "" if r == "" else fmt_ratio(r) + (f"-{rm}" if rm else "")
    bu, pu = num(row.get("braid_us")), num(row.get("peer_us"))
    f["b_us"], f["p_us"] = fmt_us(bu), fmt_us(pu)
    f["ratio_inv"] = f"{bu / pu:.2f}" if bu is not None and pu else ""
    c, form = row.get("collective", ""), row.get("form", "")
    f["call"] = {"nonblocking": "i" + c, "persistent": c + "_init"}.get(form, c)
    f["braid_ms"] = f"{bu / 1000:.1f}" if bu is not None else ""
    f["peer_ms"] = f"{pu / 1000:.1f}" if pu is not None else ""
    f["diff_ms"] = f"{(bu - pu) / 1000:+.1f}" if bu is not None and pu is not None else ""
    return f


def fill(templates, row):
    """the first template whose fields are all non-empty in the row"""
    if isinstance(templates, str):
        templates = [templates]
    f = fields(row)
    for t in templates:
        names = re.findall(r"{(\w+)}", t)
        for n in names:
            if n not in f:
                raise KeyError(f"template {t!r}: no field {n!r}")
        if all(f[n] != "" for n in names):
            return t.format(**f)
    return "-"


def span(rows):
    """the range of the rows' ratios (ratio..ratio_max of each)"""
    lo = [num(r["ratio"]) for r in rows if num(r.get("ratio")) is not None]
    hi = [num(r.get("ratio_max") or r["ratio"]) for r in rows if num(r.get("ratio")) is not None]
    if not lo:
        return "-"
    a, b = min(lo), max(hi)
    text = f"{a:.2f}" if a == b else f"{a:.2f}-{b:.2f}"
    return f"**{a:.2f}**" + text[4:] if a < 1 else text


def sort_key(spec, fields_, row, seen):
    key = []
    order = spec.get("order", {})
    for name in fields_:
        v = row.get(name, "")
        if name in order:
            lst = [str(x) for x in order[name]]
            if v in lst:
                key.append((0, lst.index(v), ""))
            elif "*" in lst:     # the rest, alphabetically, where the list has "*"
                key.append((0, lst.index("*"), v))
            else:
                key.append((1, seen[(name, v)], ""))
        elif name in ("bytes", "np") and num(v) is not None:
            key.append((0, num(v), ""))
        else:
            key.append((1, seen[(name, v)], ""))
    return key


def caption(used):
    """the commands, machines and loads of the rows a table used: one line each, commands that
    differ in one word merged"""
    groups = {}
    for r in used:
        k = (r.get("machine", ""), r.get("command", ""), r.get("load_before", ""),
             r.get("load_after", ""), r.get("reps", ""))
        groups.setdefault(k, []).append(r.get("note", ""))
    machines = sorted({k[0] for k in groups})
    merged = []   # [meta without command, [commands], notes]
    for (mach, cmd, lb, la, reps), notes in groups.items():
        words = cmd.split(" ")
        for m in merged:
            if m[0] != (mach, lb, la, reps) or len(m[1][0].split(" ")) != len(words):
                continue
            diff = [i for i, (a, b) in enumerate(zip(m[1][0].split(" "), words)) if a != b]
            if len(diff) == 1 and (m[3] is None or m[3] == diff[0]):
                m[1].append(cmd)
                m[2] += notes
                m[3] = diff[0]
                break
        else:
            merged.append([(mach, lb, la, reps), [cmd], list(notes), None])
    lines = []
    for (mach, lb, la, reps), cmds, notes, pos in merged:
        text = f"`{cmds[0]}`"
        if len(cmds) > 1:
            text += ", likewise " + ", ".join(f"`{os.path.basename(c.split(' ')[pos])}`" for c in cmds[1:])
        how = [f"load {lb} → {la}" if lb and la else f"load {lb}" if lb else "load not recorded"]
        if reps:
            how.append(f"{reps} repetitions")
        if len(set(notes)) == 1 and notes[0]:
            how.append(notes[0])
        if len(machines) > 1:
            how.append(mach)
        lines.append(f"{text} ({', '.join(how)})")
    head = f"Measured on the {machines[0]} with" if len(machines) == 1 else "Measured with"
    if len(lines) == 1:
        return [f"{head} {lines[0]}."]
    return [f"{head}:"] + [f"* {line}" for line in lines]


def render(name, spec):
    rows = []
    for src in spec["sources"]:
        rows += [r for r in load_csv(src["file"]) if matches(r, src.get("where", {}))]
    rspec = spec["rows"]
    rows = [r for r in rows if matches(r, rspec.get("only", {}))]
    by = rspec["by"] if isinstance(rspec["by"], list) else [rspec["by"]]
    seen = {}
    for r in rows:
        for n in by:
            seen.setdefault((n, r.get(n, "")), len(seen))
    cols = spec["columns"]
    if isinstance(cols, dict):   # one column per value of a field
        pivot, f = cols, cols["by"]
        pseen = {}
        for r in rows:
            pseen.setdefault((f, r.get(f, "")), len(pseen))
        vals = []
        for r in sorted(rows, key=lambda r: sort_key(pivot, [f], r, pseen)):
            if r.get(f, "") not in vals:
                vals.append(r.get(f, ""))
        lab = pivot.get("labels", {})
        cols = [{"label": lab.get(v, human(v) if f == "bytes" else v), "where": {f: v},
                 **{k: pivot[k] for k in ("one", "many", "align") if k in pivot}} for v in vals]
    keys = []
    for r in sorted(rows, key=lambda r: sort_key(rspec, by, r, seen)):
        k = tuple(r.get(n, "") for n in by)
        if k not in keys:
            keys.append(k)
    labels = rspec.get("labels", {})
    out = ["| " + " | ".join([rspec.get("header", " / ".join(by))] + [c["label"] for c in cols]) + " |",
           "| " + " | ".join(["---"] + [c.get("align", "---") for c in cols]) + " |"]
    used = []
    for k in keys:
        mine = [r for r in rows if tuple(r.get(n, "") for n in by) == k]
        kd = dict(zip(by, k))
        if "label" in rspec:
            label = fill(rspec["label"], {**mine[0], **kd})
        else:
            label = " ".join(human(v) if n == "bytes" and v != "" else v for n, v in kd.items())
        label = labels.get(label, label)
        cells = []
        for c in cols:
            got = [r for r in mine if matches(r, c.get("where", {}))]
            used += got
            if not got:
                cells.append(c.get("empty", "-"))
            elif len(got) == 1 and not got[0].get("bytes_max") or c.get("many") == "first":
                cells.append(fill(c.get("one", "{ratios}"), got[0]))
            else:
                cells.append(span(got))
        out.append("| " + " | ".join([label] + cells) + " |")
    if spec.get("caption", True):
        out += [""] + caption(used)
    return out


def documents():
    try:
        names = subprocess.run(["git", "-C", TOP, "ls-files", "*.md"], capture_output=True,
                               text=True, check=True).stdout.split()
    except (OSError, subprocess.CalledProcessError):
        names = []
        for d, sub, files in os.walk(TOP):
            sub[:] = [s for s in sub if not s.startswith((".", "build"))]
            names += [os.path.relpath(os.path.join(d, f), TOP) for f in files if f.endswith(".md")]
    return sorted(n for n in names if os.path.exists(os.path.join(TOP, n)))


def regions(text):
    """(name, start line, end line) of each marked region; lines are 0-based, start is the opening
    marker, end the closing one"""
    lines, found, i = text.split("\n"), [], 0
    while i < len(lines):
        m = MARK.match(lines[i])
        if m:
            end = next((j for j in range(i + 1, len(lines)) if lines[j] == f"<!-- /table:{m.group(1)} -->"), None)
            if end is None:
                raise ValueError(f"line {i + 1}: <!-- table:{m.group(1)} --> has no closing marker")
            found.append((m.group(1), i, end))
            i = end
        i += 1
    return found


def main(argv):
    specs = json.load(open(SPEC))
    if len(argv) == 2 and argv[0] == "--print":
        print("\n".join(render(argv[1], specs[argv[1]])))
        return 0
    check = argv == ["--check"]
    if argv not in ([], ["--check"], ["--list"]):
        print(__doc__.strip(), file=sys.stderr)
        return 2
    status, where = 0, {}
    for doc in documents():
        path = os.path.join(TOP, doc)
        text = open(path).read()
        try:
            regs = regions(text)
        except ValueError as e:
            print(f"{doc}: {e}")
            status = 1
            continue
        if not regs:
            continue
        lines = text.split("\n")
        new = list(lines)
        for name, start, end in reversed(regs):
            where.setdefault(name, []).append(doc)
            if name not in specs:
                print(f"{doc}:{start + 1}: no table {name} in docs/results/tables.json")
                status = 1
                continue
            new[start + 1:end] = render(name, specs[name])
        if new != lines:
            if check:
                sys.stdout.writelines(difflib.unified_diff([l + "\n" for l in lines], [l + "\n" for l in new],
                                                           f"a/{doc}", f"b/{doc} (rendered)"))
                status = 1
            else:
                open(path, "w").write("\n".join(new))
                print(f"render_tables: rewrote {doc}")
    if argv == ["--list"]:
        for name in specs:
            print(f"{name}: {', '.join(where.get(name, ['(unused)']))}")
    return status


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
